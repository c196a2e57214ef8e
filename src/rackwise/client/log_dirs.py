"""What ``kafka-log-dirs.sh --describe`` asks a cluster and makes of its answers (Kafka's
``LogDirsCommand`` over its admin client): the live brokers, each queried broker's
DescribeLogDirs answer, and the report ``rackwise log-dirs`` prints.

Goals
    The same requests and the same report, in the same order, as Kafka's tool: a script
    written against ``kafka-log-dirs.sh`` reads ``rackwise log-dirs`` unchanged.

Constraints
    * The cluster is asked as Kafka's admin client asks it: DescribeCluster (the live
      brokers) to the first bootstrap server that answers, then DescribeLogDirs (all topics)
      to each broker queried, at the highest version both sides speak (1-4); the topics asked
      for are filtered here, as the tool filters them.
    * Lists come in the order Kafka's tool prints them: its brokers, directories and
      partitions are Java ``HashMap`` entries, so they are ordered as those maps iterate
      (:func:`rackwise.common.java.java_hashmap_order`), and the broker lists of the progress
      and error lines as a ``HashSet`` of integers.
    * A directory's ``error`` is the class of the exception Kafka's admin client makes of its
      error code (``org.apache.kafka.common.errors.KafkaStorageException`` for an offline one).
    * A request that fails raises :class:`LogDirsError`, one line naming the request.

Worked example
    Brokers 1, 2 and 3 live and ``--broker-list 3,1``: :func:`brokers_to_query` gives
    ``[1, 3]``, :func:`broker_set` prints them ``1,3``, and :func:`describe_brokers` asks each
    for its directories and returns broker 1's first.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import os
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any, Final, TypeVar

from rackwise.common.error_codes import NONE
from rackwise.common.errors import RackwiseError
from rackwise.common.java import java_hashmap_order, java_string_hash, topic_partition_hash
from rackwise.common.types import TopicPartition
from rackwise.formats.log_dirs import (
    BrokerLogDirs,
    LogDirDescription,
    LogDirsReport,
    ReplicaSize,
)
from rackwise.net import KafkaConnection, NetworkException
from rackwise.protocol import ApiKey, ProtocolError, error_name

CLIENT_ID: Final = "log-dirs-tool"
"""The client id Kafka's tool sends."""
DESCRIBE_LOG_DIRS: Final = 35
MIN_DESCRIBE_LOG_DIRS_VERSION: Final = 1
"""Kafka 4 refuses DescribeLogDirs v0."""
MAX_DESCRIBE_LOG_DIRS_VERSION: Final = 5
"""v5 adds each directory's cordoned state (KIP-1066); before it, the broker's
``cordoned.log.dirs`` (DescribeConfigs) tells it."""
CORDONED_LOG_DIRS: Final = "cordoned.log.dirs"
BROKER_RESOURCE: Final = 4
NO_VERSIONS: Final = (0, -1)
"""The version range of an API a peer does not list (empty)."""
BROKER_ENDPOINT_TYPE: Final = 1
"""DescribeCluster's ``endpoint_type`` asking for brokers."""
TIMEOUT_S: Final = 30.0
ERROR_CLASSES: Final = {
    56: "org.apache.kafka.common.errors.KafkaStorageException",
    57: "org.apache.kafka.common.errors.LogDirNotFoundException",
}
"""The exception class Kafka's admin client makes of a log directory's error code."""
UNKNOWN_ERROR_CLASS: Final = "org.apache.kafka.common.errors.UnknownServerException"
INITIAL_CAPACITY: Final = 16
"""The table size of a ``HashMap`` made without a capacity."""

K = TypeVar("K", bound=Hashable)


class LogDirsError(RackwiseError):
    """A DescribeCluster or DescribeLogDirs the cluster refused or did not answer."""


# ---- Java's orders -----------------------------------------------------------------------------


def _hash_order(
    keys: Iterable[K], hash_code: Callable[[K], int], *, initial: int = INITIAL_CAPACITY
) -> list[K]:
    """The order a ``HashMap`` (or ``HashSet``) created with capacity ``initial`` iterates
    ``keys`` put in order (a bucket Java would make a tree keeps its insertion order)."""
    return java_hashmap_order(list(keys), hash_code, exact=False, initial=initial)


def broker_set(ids: Iterable[int]) -> str:
    """A set of broker ids as Kafka's tool prints it: comma-separated, ``HashSet`` order."""
    return ",".join(str(i) for i in _hash_order(ids, lambda i: i))


def missing_brokers(brokers: Sequence[int], cluster: Mapping[int, object]) -> list[int]:
    """The brokers of ``--broker-list`` that are not live, each once, in the order given."""
    return [b for b in dict.fromkeys(brokers) if b not in cluster]


def brokers_to_query(brokers: Sequence[int], cluster: Mapping[int, object]) -> list[int]:
    """The brokers asked (those given, else every live one) in the tool's ``HashSet`` order."""
    return _hash_order(list(brokers) or list(cluster), lambda i: i)


# ---- answers to the report ---------------------------------------------------------------------


def _directory(
    result: Any, topics: frozenset[str], cordoned: frozenset[str] | None = None
) -> LogDirDescription:
    """One DescribeLogDirs result as the tool shows it: its partitions (of ``topics`` when
    given) in ``HashMap`` order, its error as an exception class name."""
    replicas = [
        ReplicaSize(
            str(topic.name),
            int(p.partition_index),
            int(p.partition_size),
            int(p.offset_lag),
            bool(p.is_future_key),
        )
        for topic in result.topics
        for p in topic.partitions
        if not topics or str(topic.name) in topics
    ]
    ordered = _hash_order(
        replicas, lambda r: topic_partition_hash(TopicPartition(r.topic, r.partition))
    )
    code = int(result.error_code)
    error = None if code == NONE else ERROR_CLASSES.get(code, UNKNOWN_ERROR_CLASS)
    flag = getattr(result, "is_cordoned", None)  # v5 (KIP-1066)
    if flag is None and cordoned is not None:
        flag = "*" in cordoned or os.path.abspath(str(result.log_dir)) in cordoned
    return LogDirDescription(
        str(result.log_dir), error, tuple(ordered), None if flag is None else bool(flag)
    )


def broker_log_dirs(
    broker_id: int, response: Any, topics: frozenset[str], cordoned: frozenset[str] | None = None
) -> BrokerLogDirs:
    """A broker's DescribeLogDirs answer as the tool shows it (directories in the order of
    the admin client's ``HashMap``, sized for them); ``cordoned`` the broker's
    ``cordoned.log.dirs`` (absolute paths, or ``*``) where its answer does not say."""
    results = list(response.results)
    paths = _hash_order([str(r.log_dir) for r in results], java_string_hash, initial=len(results))
    by_path = {str(r.log_dir): r for r in results}
    return BrokerLogDirs(broker_id, tuple(_directory(by_path[p], topics, cordoned) for p in paths))


def kip113_document(broker: BrokerLogDirs) -> str:
    """One broker's directories as KIP-113's tool output (one line of JSON)."""
    document = {
        "version": 1,
        "log_dirs": [
            {
                "is_live": d.is_live,
                "path": d.path,
                "partitions": [
                    {
                        "topic": r.topic,
                        "partition": r.partition,
                        "size": r.size_bytes,
                        "is_temporary": r.is_future,
                    }
                    for r in d.replicas
                ],
            }
            for d in broker.log_dirs
        ],
    }
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False)


# ---- the cluster -------------------------------------------------------------------------------


_SETTINGS: contextvars.ContextVar[tuple[str, float]] = contextvars.ContextVar(
    "log_dirs_client", default=(CLIENT_ID, TIMEOUT_S)
)


def use_client_settings(client_id: str, timeout_s: float) -> None:
    """The client id and the timeout of the connections made from here on in this context
    (``--command-config``'s ``client.id`` and ``request.timeout.ms``)."""
    _SETTINGS.set((client_id, timeout_s))


async def _connect(host: str, port: int) -> KafkaConnection:
    client_id, timeout_s = _SETTINGS.get()
    connection = await KafkaConnection.connect(
        host, port, timeout_s=timeout_s, client_id=client_id, request_timeout_s=timeout_s
    )
    try:
        await connection.negotiate_versions(timeout_s=timeout_s)
    except BaseException:
        await connection.close()
        raise
    return connection


async def live_brokers(addresses: Sequence[tuple[str, int]]) -> dict[int, tuple[str, int]]:
    """The cluster's live brokers and their addresses, from the first bootstrap server that
    answers DescribeCluster."""
    failure: Exception | None = None
    for host, port in addresses:
        try:
            connection = await _connect(host, port)
        except (NetworkException, ProtocolError) as e:
            failure = e
            continue
        try:
            response = await connection.request(
                ApiKey.DESCRIBE_CLUSTER,
                include_cluster_authorized_operations=False,
                endpoint_type=BROKER_ENDPOINT_TYPE,
                include_fenced_brokers=False,
            )
        finally:
            await connection.close()
        code = int(response.error_code)
        if code != NONE:
            raise LogDirsError(f"DescribeCluster failed: {error_name(code)}")
        return {int(b.broker_id): (str(b.host), int(b.port)) for b in response.brokers}
    raise LogDirsError(f"no bootstrap server answered: {failure}")


def _log_dirs_version(connection: KafkaConnection) -> int:
    low, high = connection.api_versions.get(DESCRIBE_LOG_DIRS, NO_VERSIONS)
    version = min(high, MAX_DESCRIBE_LOG_DIRS_VERSION)
    if version < max(low, MIN_DESCRIBE_LOG_DIRS_VERSION):
        raise LogDirsError(
            f"{connection.address[0]}:{connection.address[1]} does not support DescribeLogDirs"
        )
    return version


async def _cordoned(connection: KafkaConnection, broker_id: int) -> frozenset[str] | None:
    """The broker's ``cordoned.log.dirs`` as absolute paths (None where it does not say)."""
    response = await connection.request(
        ApiKey.DESCRIBE_CONFIGS,
        resources=[{"resource_type": BROKER_RESOURCE, "resource_name": str(broker_id),
                    "configuration_keys": [CORDONED_LOG_DIRS]}],
        include_synonyms=False, include_documentation=False,
    )  # fmt: skip
    for result in response.results:
        if int(result.error_code) != NONE:
            return None
        for entry in result.configs:
            if str(entry.name) == CORDONED_LOG_DIRS:
                names = [n.strip() for n in str(entry.value or "").split(",") if n.strip()]
                return frozenset(n if n == "*" else os.path.abspath(n) for n in names)
    return None


async def describe_broker(address: tuple[str, int], broker_id: int | None = None) -> Any:
    """A broker's answer to DescribeLogDirs for every topic; with ``broker_id``, before v5,
    (answer, its ``cordoned.log.dirs``)."""
    connection = await _connect(*address)
    cordoned = None
    try:
        version = _log_dirs_version(connection)
        response = await connection.request(DESCRIBE_LOG_DIRS, version=version, topics=None)
        if broker_id is not None and version < 5:
            cordoned = await _cordoned(connection, broker_id)
    finally:
        await connection.close()
    code = int(getattr(response, "error_code", NONE))
    if code != NONE:
        raise LogDirsError(
            f"DescribeLogDirs failed on {address[0]}:{address[1]}: {error_name(code)}"
        )
    return response if broker_id is None else (response, cordoned)


async def describe_brokers(
    cluster: Mapping[int, tuple[str, int]], queried: Sequence[int], topics: frozenset[str]
) -> LogDirsReport:
    """The directories of the ``queried`` brokers (of ``topics`` when given), asked all at
    once, in the order of the tool's ``allDescriptions()`` map."""
    try:
        answers = await asyncio.gather(*(describe_broker(cluster[b], b) for b in queried))
    except (NetworkException, ProtocolError) as e:
        raise LogDirsError(f"DescribeLogDirs failed: {e}") from None
    described = dict(zip(queried, answers, strict=True))
    # allDescriptions() is a HashMap sized for the brokers queried.
    ordered = _hash_order(queried, lambda i: i, initial=len(queried))
    return LogDirsReport(
        tuple(broker_log_dirs(b, described[b][0], topics, described[b][1]) for b in ordered)
    )
