"""``rackwise log-dirs --describe``: where each replica lives on each broker and how big it is,
printed exactly as Kafka's ``kafka-log-dirs.sh --describe`` prints it (Kafka's
``LogDirsCommand``), or with ``--format kip113`` as KIP-113 specified the tool's output.

Goals
    A script written against ``kafka-log-dirs.sh`` reads this command's output unchanged: the
    two progress lines, then one line of JSON (:func:`rackwise.formats.log_dirs.format_log_dirs`,
    whose members come in Kafka's order), and on an unknown broker Kafka's error on stderr
    with exit status 1.

Constraints
    * The cluster is asked as Kafka's admin client asks it: DescribeCluster (the live
      brokers) to the first bootstrap server that answers, then DescribeLogDirs (all topics)
      to each broker queried, at the highest version both sides speak (1-4); ``--topic-list``
      filters the answers here, as the tool does.
    * Lists come in the order Kafka's tool prints them: its brokers, directories and
      partitions are Java ``HashMap`` entries, so they are ordered as those maps iterate
      (:func:`java_hash_order`), and the broker lists of the progress and error lines as a
      ``HashSet`` of integers.
    * A directory's ``error`` is the class of the exception Kafka's admin client makes of its
      error code (``org.apache.kafka.common.errors.KafkaStorageException`` for an offline one).
    * ``--format kip113`` prints the progress lines, then one KIP-113 document per broker
      queried (``{"version":1,"log_dirs":[{"is_live":..,"path":..,"partitions":[{"topic":..,
      "partition":..,"size":..,"is_temporary":..}]}]}``), one line each, in the same order.

Worked example
    ``rackwise log-dirs --describe --bootstrap-server 127.0.0.1:9092 --broker-list 1,4`` on a
    cluster of brokers 1, 2 and 3 prints to stderr ``ERROR: The given brokers do not exist
    from --broker-list: 4. Current existent brokers: 1,2,3`` and exits 1; without
    ``--broker-list`` it prints ``Querying brokers for log directories information``,
    ``Received log directory information from brokers 1,2,3`` and the JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any, Final, TypeVar

from rackwise.cli.errors import CommandError
from rackwise.common.java import java_string_hash
from rackwise.formats.log_dirs import (
    QUERYING_LINE,
    RECEIVED_PREFIX,
    BrokerLogDirs,
    LogDirDescription,
    LogDirsReport,
    ReplicaSize,
    format_log_dirs,
)
from rackwise.net import KafkaConnection, NetworkException
from rackwise.protocol import ApiKey, ProtocolError, error_name

CLIENT_ID: Final = "log-dirs-tool"
"""The client id Kafka's tool sends."""
DESCRIBE_LOG_DIRS: Final = 35
MIN_DESCRIBE_LOG_DIRS_VERSION: Final = 1
"""Kafka 4 refuses DescribeLogDirs v0."""
MAX_DESCRIBE_LOG_DIRS_VERSION: Final = 4
NO_VERSIONS: Final = (0, -1)
"""The version range of an API a peer does not list (empty)."""
BROKER_ENDPOINT_TYPE: Final = 1
"""DescribeCluster's ``endpoint_type`` asking for brokers."""
NONE: Final = 0
KAFKA_FORMAT: Final = "kafka"
KIP113_FORMAT: Final = "kip113"
TIMEOUT_S: Final = 30.0
ERROR_CLASSES: Final = {
    56: "org.apache.kafka.common.errors.KafkaStorageException",
    57: "org.apache.kafka.common.errors.LogDirNotFoundException",
}
"""The exception class Kafka's admin client makes of a log directory's error code."""
UNKNOWN_ERROR_CLASS: Final = "org.apache.kafka.common.errors.UnknownServerException"
_INITIAL_CAPACITY: Final = 16

K = TypeVar("K", bound=Hashable)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--describe",
        action="store_true",
        help="describe the log directories of the brokers (required)",
    )
    parser.add_argument(
        "--bootstrap-server",
        required=True,
        metavar="HOST:PORT",
        help="the server(s) to use for bootstrapping",
    )
    parser.add_argument(
        "--broker-list",
        default="",
        metavar="IDS",
        help='the brokers to query, "0,1,2" (default: every broker of the cluster)',
    )
    parser.add_argument(
        "--topic-list",
        default="",
        metavar="TOPICS",
        help='the topics to show, "t1,t2" (default: every topic)',
    )
    parser.add_argument(
        "--format",
        choices=[KAFKA_FORMAT, KIP113_FORMAT],
        default=KAFKA_FORMAT,
        help="kafka (default: kafka-log-dirs.sh's JSON) or kip113 (one document per broker)",
    )
    parser.set_defaults(run=run)


def _split(text: str) -> list[str]:
    return [part for part in text.split(",") if part]


def run(args: argparse.Namespace) -> int:
    if not args.describe:
        raise CommandError('Missing required argument "[describe]"')
    try:
        brokers = [int(part) for part in _split(args.broker_list)]
    except ValueError:
        raise CommandError(f"--broker-list takes broker ids: {args.broker_list}") from None
    topics = frozenset(_split(args.topic_list))
    return asyncio.run(
        describe(args.bootstrap_server, brokers, topics, args.format, sys.stdout, sys.stderr)
    )


# ---- Java's orders -----------------------------------------------------------------------------


def _final_capacity(count: int, initial: int) -> int:
    capacity = initial
    while count > capacity * 3 // 4:
        capacity *= 2
    return capacity


def java_hash_order(
    keys: Iterable[K], hash_code: Callable[[K], int], *, initial: int = _INITIAL_CAPACITY
) -> list[K]:
    """The order a ``java.util.HashMap`` (or ``HashSet``) created with capacity ``initial``
    iterates ``keys`` put in order: by bucket of its final table, each bucket in insertion
    order (buckets too full to stay lists, nine entries or more, are not modelled)."""
    distinct = list(dict.fromkeys(keys))
    capacity = _final_capacity(len(distinct), max(initial, 1))

    def bucket(key: K) -> int:
        h = hash_code(key) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(distinct, key=bucket)


def _table_size_for(count: int) -> int:
    """Java's ``HashMap.tableSizeFor``: the power of two at least ``count``."""
    size = 1
    while size < count:
        size *= 2
    return size


def topic_partition_hash(topic: str, partition: int) -> int:
    """``TopicPartition.hashCode()`` as a signed 32-bit int."""
    h = (31 * (31 + partition) + java_string_hash(topic)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def broker_set(ids: Iterable[int]) -> str:
    """A set of broker ids as Kafka's tool prints it: comma-separated, ``HashSet`` order."""
    return ",".join(str(i) for i in java_hash_order(ids, lambda i: i))


# ---- answers to the report ---------------------------------------------------------------------


def _directory(result: Any, topics: frozenset[str]) -> LogDirDescription:
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
    ordered = java_hash_order(replicas, lambda r: topic_partition_hash(r.topic, r.partition))
    code = int(result.error_code)
    error = None if code == NONE else ERROR_CLASSES.get(code, UNKNOWN_ERROR_CLASS)
    return LogDirDescription(str(result.log_dir), error, tuple(ordered))


def broker_log_dirs(broker_id: int, response: Any, topics: frozenset[str]) -> BrokerLogDirs:
    """A broker's DescribeLogDirs answer as the tool shows it (directories in the order of
    the admin client's ``HashMap``, sized for them)."""
    results = list(response.results)
    paths = java_hash_order(
        [str(r.log_dir) for r in results],
        java_string_hash,
        initial=_table_size_for(len(results)),
    )
    by_path = {str(r.log_dir): r for r in results}
    return BrokerLogDirs(broker_id, tuple(_directory(by_path[p], topics) for p in paths))


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


def _addresses(bootstrap: str) -> list[tuple[str, int]]:
    out = []
    for item in _split(bootstrap):
        host, _, port = item.strip().rpartition(":")
        if not host or not port.isdigit():
            raise CommandError(f"--bootstrap-server takes HOST:PORT[,HOST:PORT...]: {item}")
        out.append((host.strip("[]"), int(port)))
    if not out:
        raise CommandError("--bootstrap-server takes HOST:PORT[,HOST:PORT...]")
    return out


async def _connect(host: str, port: int) -> KafkaConnection:
    connection = await KafkaConnection.connect(
        host, port, timeout_s=TIMEOUT_S, client_id=CLIENT_ID, request_timeout_s=TIMEOUT_S
    )
    try:
        await connection.negotiate_versions(timeout_s=TIMEOUT_S)
    except BaseException:
        await connection.close()
        raise
    return connection


async def live_brokers(bootstrap: str) -> dict[int, tuple[str, int]]:
    """The cluster's live brokers and their addresses, from the first bootstrap server that
    answers DescribeCluster."""
    failure: Exception | None = None
    for host, port in _addresses(bootstrap):
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
            raise CommandError(f"DescribeCluster failed: {error_name(code)}")
        return {int(b.broker_id): (str(b.host), int(b.port)) for b in response.brokers}
    raise CommandError(f"no bootstrap server answered: {failure}")


def _log_dirs_version(connection: KafkaConnection) -> int:
    low, high = connection.api_versions.get(DESCRIBE_LOG_DIRS, NO_VERSIONS)
    version = min(high, MAX_DESCRIBE_LOG_DIRS_VERSION)
    if version < max(low, MIN_DESCRIBE_LOG_DIRS_VERSION):
        raise CommandError(
            f"{connection.address[0]}:{connection.address[1]} does not support DescribeLogDirs"
        )
    return version


async def describe_broker(address: tuple[str, int]) -> Any:
    """A broker's answer to DescribeLogDirs for every topic."""
    connection = await _connect(*address)
    try:
        response = await connection.request(
            DESCRIBE_LOG_DIRS, version=_log_dirs_version(connection), topics=None
        )
    finally:
        await connection.close()
    code = int(getattr(response, "error_code", NONE))
    if code != NONE:
        raise CommandError(
            f"DescribeLogDirs failed on {address[0]}:{address[1]}: {error_name(code)}"
        )
    return response


async def describe(
    bootstrap: str,
    brokers: Sequence[int],
    topics: frozenset[str],
    output_format: str,
    out: Any,
    err: Any,
) -> int:
    """The command: ``out`` gets the progress lines and the JSON, ``err`` the error for an
    unknown broker; the exit status."""
    cluster = await live_brokers(bootstrap)
    missing = [b for b in dict.fromkeys(brokers) if b not in cluster]
    if missing:
        print(
            f"ERROR: The given brokers do not exist from --broker-list: {broker_set(missing)}. "
            f"Current existent brokers: {broker_set(cluster)}",
            file=err,
        )
        return 1
    queried = java_hash_order(list(brokers) or list(cluster), lambda i: i)
    print(QUERYING_LINE, file=out, flush=True)
    try:
        answers = await asyncio.gather(*(describe_broker(cluster[b]) for b in queried))
    except (NetworkException, ProtocolError) as e:
        raise CommandError(f"DescribeLogDirs failed: {e}") from None
    described = dict(zip(queried, answers, strict=True))
    # allDescriptions() is a HashMap sized for the brokers queried.
    ordered = java_hash_order(queried, lambda i: i, initial=_table_size_for(len(queried)))
    report = LogDirsReport(tuple(broker_log_dirs(b, described[b], topics) for b in ordered))
    print(RECEIVED_PREFIX + broker_set(queried), file=out)
    if output_format == KIP113_FORMAT:
        for broker in report.brokers:
            print(kip113_document(broker), file=out)
    else:
        print(format_log_dirs(report), file=out)
    return 0
