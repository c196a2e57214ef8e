"""The admin calls of a reassignment, on rackwise's own client transport
(:class:`~rackwise.client.connections.Connections`): start and cancel reassignments, list
those in flight, set and clear replication throttles, move replicas between log directories
and find where they are. ``rackwise reassign`` and the executor of ``rackwise rebalance`` both
call these.

Goals
    The same requests Kafka's admin client sends for ``kafka-reassign-partitions.sh``, so they
    work against a rackwise cluster and an Apache Kafka one alike: AlterPartitionReassignments
    and ListPartitionReassignments to any broker (which forwards them to the controller),
    IncrementalAlterConfigs for the throttles (a broker's resource to that broker),
    AlterReplicaLogDirs and DescribeLogDirs to the broker holding the replica.

Constraints
    * A partition's failure is a :class:`ReassignError` with Kafka's error code and the
      broker's message (or Kafka's default one), in the map of results; a failure of the whole
      request (a refused connection, an error code for the request) raises it.
    * :func:`alter_replica_log_dirs` retries the replicas a broker answers REPLICA_NOT_AVAILABLE
      for (the replica has not reached the broker yet) every 100 ms until ``timeout_ms``, as
      KIP-113's tool does; any other error stops it.
    * :func:`throttle_configs` is pure (:mod:`rackwise.client.reassign_text`).

Worked example
    ``await alter_reassignments(connections, {TopicPartition("foo", 0): [1, 2, 4]})`` starts a
    move of ``foo-0`` and returns ``{}``; ``await list_reassignments(connections)`` then gives
    ``{foo-0: PartitionReassignment(replicas=(1, 2, 3, 4), adding=(4,), removing=(3,))}``
    until it is done, and ``{TopicPartition("foo", 0): None}`` cancels it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from rackwise.client.connections import Connections
from rackwise.client.group_values import GroupsError, Node
from rackwise.client.reassign_text import (
    BROKER_THROTTLES,
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
    LOG_DIR_RATE,
    TOPIC_THROTTLES,
    Replica,
    ThrottleConfigs,
    throttle_configs,
)
from rackwise.client.reassign_text import OngoingReassignment as PartitionReassignment
from rackwise.common import RackwiseError, TopicPartition
from rackwise.common.error_codes import (
    KAFKA_STORAGE_ERROR,
    NONE,
    REPLICA_NOT_AVAILABLE,
    UNKNOWN_SERVER_ERROR,
    UNKNOWN_TOPIC_OR_PARTITION,
)
from rackwise.common.error_table import describe
from rackwise.protocol import ApiKey, error_name

__all__ = [
    "Broker",
    "LogDirMoveError",
    "PartitionReassignment",
    "ReassignError",
    "ReplicaLogDir",
    "ThrottleConfigs",
    "alter_reassignments",
    "alter_replica_log_dirs",
    "brokers",
    "clear_throttles",
    "describe_replica_log_dirs",
    "list_reassignments",
    "set_throttles",
    "throttle_configs",
    "topic_replicas",
]

DEFAULT_TIMEOUT_MS: Final = 60_000
"""The reassignment requests' own ``timeout_ms``, as Kafka's admin client sends it."""
RETRY_BACKOFF_S: Final = 0.1
"""Between two rounds of AlterReplicaLogDirs, as Kafka's tool waits."""
TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4
SET, DELETE = 0, 1


class ReassignError(RackwiseError):
    """An error the cluster answered (or a failure to reach it): ``code`` is Kafka's error
    code, ``name`` Kafka's name for it, ``str()`` the message Kafka's exception carries and
    ``java_text`` the exception as Kafka prints it."""

    def __init__(self, code: int, message: str | None = None) -> None:
        known = describe(code) or describe(UNKNOWN_SERVER_ERROR)
        assert known is not None
        text = message or known.message or error_name(code)
        super().__init__(text)
        self.code = code
        self.name = error_name(code)
        self.java_text = f"org.apache.kafka.common.errors.{known.exception}: {text}"


class LogDirMoveError(ReassignError):
    """A broker refused to move a replica between its directories (an error other than
    REPLICA_NOT_AVAILABLE): ``Failed to alter dir for foo-0-1``."""


def _failure(error: GroupsError) -> ReassignError:
    return ReassignError(error.code, str(error))


async def _send(
    connections: Connections, node: Node | None, api_key: int, values: Mapping[str, Any]
) -> Any:
    try:
        return await connections.send(node, api_key, values)
    except GroupsError as e:
        raise _failure(e) from None


def _check(response: Any) -> None:
    code = int(getattr(response, "error_code", NONE))
    if code != NONE:
        raise ReassignError(code, getattr(response, "error_message", None))


@dataclass(frozen=True, slots=True)
class Broker:
    """A live broker as DescribeCluster gives it."""

    id: int
    host: str
    port: int
    rack: str | None


async def brokers(connections: Connections) -> list[Broker]:
    """The live brokers, in the order DescribeCluster lists them."""
    values = {"include_cluster_authorized_operations": False, "endpoint_type": 1,
              "include_fenced_brokers": False}  # fmt: skip
    response = await _send(connections, None, ApiKey.DESCRIBE_CLUSTER, values)
    _check(response)
    return [Broker(int(b.broker_id), str(b.host), int(b.port), b.rack) for b in response.brokers]


async def _node(connections: Connections, broker_id: int, known: list[Broker]) -> Node:
    if not known:
        known.extend(await brokers(connections))
    for b in known:
        if b.id == broker_id:
            return Node(b.id, b.host, b.port)
    raise ReassignError(
        7, f"Timed out waiting for a node assignment: broker {broker_id} is not in the cluster"
    )


# ---- reassignments -----------------------------------------------------------------------------


async def alter_reassignments(
    connections: Connections, targets: Mapping[TopicPartition, Sequence[int] | None]
) -> dict[TopicPartition, ReassignError]:
    """Start (a replica list) or cancel (None) the reassignment of each partition in one
    AlterPartitionReassignments; the partitions that failed, with their errors."""
    topics: dict[str, list[dict[str, Any]]] = {}
    for tp, replicas in targets.items():
        entry = {"partition_index": tp.partition,
                 "replicas": None if replicas is None else list(replicas)}  # fmt: skip
        topics.setdefault(tp.topic, []).append(entry)
    if not topics:
        return {}
    values = {
        "timeout_ms": DEFAULT_TIMEOUT_MS,
        "allow_replication_factor_change": True,
        "topics": [{"name": name, "partitions": parts} for name, parts in topics.items()],
    }
    response = await _send(connections, None, ApiKey.ALTER_PARTITION_REASSIGNMENTS, values)
    _check(response)
    errors: dict[TopicPartition, ReassignError] = {}
    answered = set()
    for topic in response.responses:
        for p in topic.partitions:
            tp = TopicPartition(str(topic.name), int(p.partition_index))
            answered.add(tp)
            if int(p.error_code) != NONE:
                errors[tp] = ReassignError(int(p.error_code), p.error_message)
    for tp in targets:
        if tp not in answered:
            errors[tp] = ReassignError(UNKNOWN_SERVER_ERROR, f"No response for {tp}")
    return errors


async def list_reassignments(
    connections: Connections, partitions: Iterable[TopicPartition] | None = None
) -> dict[TopicPartition, PartitionReassignment]:
    """The reassignments in flight (of ``partitions`` only, when given)."""
    topics = None
    if partitions is not None:
        by_topic: dict[str, list[int]] = {}
        for tp in partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        if not by_topic:
            return {}
        topics = [{"name": t, "partition_indexes": p} for t, p in by_topic.items()]
    values = {"timeout_ms": DEFAULT_TIMEOUT_MS, "topics": topics}
    response = await _send(connections, None, ApiKey.LIST_PARTITION_REASSIGNMENTS, values)
    _check(response)
    return {
        TopicPartition(str(t.name), int(p.partition_index)): PartitionReassignment(
            tuple(int(r) for r in p.replicas),
            tuple(int(r) for r in p.adding_replicas),
            tuple(int(r) for r in p.removing_replicas),
        )
        for t in response.topics
        for p in t.partitions
    }


async def topic_replicas(
    connections: Connections, topics: Iterable[str]
) -> dict[TopicPartition, tuple[int, ...]]:
    """Each partition's replicas (Metadata), for topics that exist; a topic the cluster lacks
    raises UNKNOWN_TOPIC_OR_PARTITION ``Topic t not found.``, as Kafka's tool words it."""
    names = list(dict.fromkeys(topics))
    if not names:
        return {}
    values = {
        "topics": [{"name": t, "topic_id": None} for t in names],
        "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": False,
        "include_topic_authorized_operations": False,
    }
    response = await _send(connections, None, ApiKey.METADATA, values)
    found: dict[TopicPartition, tuple[int, ...]] = {}
    for topic in response.topics:
        code = int(topic.error_code)
        if code == UNKNOWN_TOPIC_OR_PARTITION:
            raise ReassignError(code, f"Topic {topic.name} not found.")
        if code != NONE:
            raise ReassignError(code)
        for p in topic.partitions:
            found[TopicPartition(str(topic.name), int(p.partition_index))] = tuple(
                int(r) for r in p.replica_nodes
            )
    return found


# ---- throttles ---------------------------------------------------------------------------------


async def _alter_configs(
    connections: Connections, resources: Sequence[tuple[int, str, Mapping[str, str | None]]]
) -> None:
    """One IncrementalAlterConfigs per broker resource (sent to that broker), one for all the
    topic resources; a value of None deletes the key."""
    known: list[Broker] = []
    groups: dict[int | None, list[dict[str, Any]]] = {}
    for resource_type, name, configs in resources:
        ops = [
            {"name": k, "config_operation": DELETE if v is None else SET, "value": v}
            for k, v in configs.items()
        ]
        broker = int(name) if resource_type == BROKER_RESOURCE else None
        groups.setdefault(broker, []).append(
            {"resource_type": resource_type, "resource_name": name, "configs": ops}
        )
    for broker, group in groups.items():
        node = None if broker is None else await _node(connections, broker, known)
        values = {"resources": group, "validate_only": False}
        response = await _send(connections, node, ApiKey.INCREMENTAL_ALTER_CONFIGS, values)
        for result in response.responses:
            if int(result.error_code) != NONE:
                raise ReassignError(int(result.error_code), result.error_message)


async def set_throttles(
    connections: Connections,
    throttles: ThrottleConfigs | None = None,
    *,
    rate: int = -1,
    log_dir_rate: int = -1,
    log_dir_brokers: Iterable[int] = (),
) -> None:
    """Set the throttled-replica lists on the topics and ``rate`` (B/s) as the leader and
    follower rates on ``throttles.brokers`` (when ``throttles`` is given and ``rate`` >= 0),
    and ``log_dir_rate`` on ``log_dir_brokers`` (when >= 0), as ``--execute`` sets them."""
    if throttles is not None and rate >= 0:
        topics = sorted(set(throttles.leader) | set(throttles.follower))
        await _alter_configs(
            connections,
            [
                (TOPIC_RESOURCE, t, _topic_lists(throttles, t))
                for t in topics
                if _topic_lists(throttles, t)
            ],
        )
        value = str(rate)
        await _alter_configs(
            connections,
            [
                (BROKER_RESOURCE, str(b), {LEADER_RATE: value, FOLLOWER_RATE: value})
                for b in sorted(throttles.brokers)
            ],
        )
    if log_dir_rate >= 0:
        await _alter_configs(
            connections,
            [
                (BROKER_RESOURCE, str(b), {LOG_DIR_RATE: str(log_dir_rate)})
                for b in sorted(set(log_dir_brokers))
            ],
        )


def _topic_lists(throttles: ThrottleConfigs, topic: str) -> dict[str, str | None]:
    lists: dict[str, str | None] = {}
    if topic in throttles.leader:
        lists[LEADER_REPLICAS] = throttles.leader[topic]
    if topic in throttles.follower:
        lists[FOLLOWER_REPLICAS] = throttles.follower[topic]
    return lists


async def clear_throttles(
    connections: Connections, topics: Iterable[str], brokers: Iterable[int]
) -> None:
    """Delete the three throttle rates on each broker, then the two throttled-replica lists on
    each topic (a key that is not set is no error)."""
    await _alter_configs(
        connections,
        [(BROKER_RESOURCE, str(b), dict.fromkeys(BROKER_THROTTLES)) for b in brokers],
    )
    await _alter_configs(
        connections, [(TOPIC_RESOURCE, t, dict.fromkeys(TOPIC_THROTTLES)) for t in topics]
    )


# ---- log directories ---------------------------------------------------------------------------


async def _alter_log_dirs_once(
    connections: Connections, moves: Mapping[Replica, str], known: list[Broker]
) -> set[Replica]:
    """One AlterReplicaLogDirs per broker; the replicas it accepted. REPLICA_NOT_AVAILABLE is
    left for a later round, any other error raises."""
    by_broker: dict[int, dict[str, dict[str, list[int]]]] = {}
    for replica, path in moves.items():
        dirs = by_broker.setdefault(replica.broker, {})
        dirs.setdefault(path, {}).setdefault(replica.topic, []).append(replica.partition)
    accepted: set[Replica] = set()
    for broker, dirs in by_broker.items():
        values = {
            "dirs": [
                {"path": path, "topics": [{"name": t, "partitions": p} for t, p in topics.items()]}
                for path, topics in dirs.items()
            ]
        }
        node = await _node(connections, broker, known)
        response = await _send(connections, node, ApiKey.ALTER_REPLICA_LOG_DIRS, values)
        for topic in response.results:
            for p in topic.partitions:
                replica = Replica.of(str(topic.topic_name), int(p.partition_index), broker)
                code = int(p.error_code)
                if code == NONE:
                    accepted.add(replica)
                elif code != REPLICA_NOT_AVAILABLE:
                    raise LogDirMoveError(code, f"Failed to alter dir for {replica}")
    return accepted


async def alter_replica_log_dirs(
    connections: Connections,
    moves: Mapping[Replica, str],
    timeout_ms: int,
    *,
    on_started: Any = None,
) -> set[Replica]:
    """Ask each replica's broker to move it to its directory, retrying the replicas answered
    REPLICA_NOT_AVAILABLE every 100 ms until ``timeout_ms`` has passed; the replicas still
    pending then (empty when every move started). ``on_started(replicas)`` is called with each
    round's accepted replicas."""
    pending = dict(moves)
    known: list[Broker] = []
    deadline = time.monotonic() + timeout_ms / 1000
    while pending:
        accepted = await _alter_log_dirs_once(connections, pending, known)
        if accepted and on_started is not None:
            on_started({r: pending[r] for r in accepted})
        for replica in accepted:
            pending.pop(replica, None)
        if not pending or time.monotonic() >= deadline:
            break
        await asyncio.sleep(RETRY_BACKOFF_S)
    return set(pending)


@dataclass(frozen=True, slots=True)
class ReplicaLogDir:
    """Where a replica is on its broker (Kafka's ``ReplicaLogDirInfo``): its directory, and
    the directory of its future replica while it moves (None when none)."""

    current: str | None
    future: str | None


async def describe_replica_log_dirs(
    connections: Connections, replicas: Iterable[Replica]
) -> dict[Replica, ReplicaLogDir]:
    """Each replica's directories, from a DescribeLogDirs of its partitions to its broker; an
    offline directory says nothing (its replicas are then in no directory)."""
    by_broker: dict[int, dict[str, list[int]]] = {}
    for r in replicas:
        by_broker.setdefault(r.broker, {}).setdefault(r.topic, []).append(r.partition)
    known: list[Broker] = []
    found: dict[Replica, ReplicaLogDir] = {}
    for broker, topics in by_broker.items():
        node = await _node(connections, broker, known)
        values = {"topics": [{"topic": t, "partitions": p} for t, p in topics.items()]}
        response = await _send(connections, node, ApiKey.DESCRIBE_LOG_DIRS, values)
        _check(response)
        current: dict[tuple[str, int], str] = {}
        future: dict[tuple[str, int], str] = {}
        for result in response.results:
            code = int(result.error_code)
            if code == KAFKA_STORAGE_ERROR:
                continue
            if code != NONE:
                raise ReassignError(code, f"{error_name(code)} for log directory {result.log_dir}")
            for topic in result.topics:
                for p in topic.partitions:
                    key = (str(topic.name), int(p.partition_index))
                    (future if p.is_future_key else current)[key] = str(result.log_dir)
        for t, parts in topics.items():
            for p in parts:
                found[Replica.of(t, p, broker)] = ReplicaLogDir(
                    current.get((t, p)), future.get((t, p))
                )
    return found
