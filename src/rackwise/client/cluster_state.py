"""A running cluster read whole through Kafka's admin APIs: its brokers and racks, every
partition's replicas, leader and ISR, every log directory with its capacity and the replicas in
it, the topics' ``min.insync.replicas``, throttle and rule configs, and the reassignments in
flight,
as one frozen :class:`ClusterSnapshot`.

Goals
    One read that ``rackwise pipeline`` and the rebalance executor plan from, against a rackwise
    cluster or an Apache Kafka 4.x one alike: only standard requests, each at the highest
    version both sides speak.

Constraints
    * The requests, in order: DescribeCluster (fenced brokers too, from v2) to the first
      bootstrap server that answers; then at once Metadata (every topic, v1 or later),
      ListPartitionReassignments, and DescribeLogDirs (every topic, v1-4) to each unfenced
      broker; then one DescribeConfigs for every topic (the keys of :data:`TOPIC_CONFIG_KEYS`).
      All go through :class:`~rackwise.client.connections.Connections`, closed at the end.
    * A broker that holds replicas but that DescribeCluster does not list (a Kafka before 4.0
      leaves out fenced brokers) is kept as a fenced broker without an address or a rack.
    * A log directory answered with an error (KAFKA_STORAGE_ERROR for a failed disk) is kept,
      with its code and no replicas: it is part of the cluster's state, not a failed read.
      A topic that Metadata or DescribeConfigs answers UNKNOWN_TOPIC_OR_PARTITION (deleted
      while the cluster was read), or that Metadata answers LEADER_NOT_AVAILABLE without
      partitions (being created), is left out.
    * Anything else that fails raises :class:`ClusterStateError`, one line naming the
      cluster (its bootstrap servers), the request and why; a cluster none of whose bootstrap
      servers accepts a connection says so at once instead of waiting out ``timeout_ms``.
    * ``config`` holds admin client properties (``--command-config``): ``client.id`` and
      ``request.timeout.ms`` are used, ``bootstrap.servers`` is ignored (the argument wins) and
      ``security.protocol`` may only be PLAINTEXT; a key no command serves
      (:data:`rackwise.client.command_config.KEYS`) is refused by name.

Worked example
    ``read_cluster("127.0.0.1:9092")`` against brokers 1-3 with topic ``t`` (one partition on
    brokers 1 and 2, both in sync) gives ``snapshot.brokers[1].rack == "/dc1/r1"``,
    ``snapshot.partitions[TopicPartition("t", 0)].replicas == (1, 2)``, its ``isr == (1, 2)``,
    ``min_insync == 1`` (the default), and ``log_dir == {1: "/data/1/data-1", 2: ...}`` with
    each replica's ``size_bytes``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from rackwise.client import command_config
from rackwise.client.bootstrap import bootstrap_addresses_of
from rackwise.client.connections import Connections
from rackwise.client.groups import GroupsError, Node
from rackwise.common.error_codes import LEADER_NOT_AVAILABLE, NONE, UNKNOWN_TOPIC_OR_PARTITION
from rackwise.common.errors import RackwiseError
from rackwise.common.types import TopicPartition
from rackwise.protocol import ApiKey, error_name

CLIENT_ID: Final = "rackwise-cluster-state"
DEFAULT_TIMEOUT_MS: Final = 30_000
MIN_INSYNC_KEY: Final = "min.insync.replicas"
LEADER_THROTTLED_KEY: Final = "leader.replication.throttled.replicas"
FOLLOWER_THROTTLED_KEY: Final = "follower.replication.throttled.replicas"
RULE_KEYS: Final = ("min.insync.racks", "min.insync.racks.level", "leaders.preference")
"""The topic rules the audit judges a domain's loss by (a Kafka without them answers none)."""
TOPIC_CONFIG_KEYS: Final = (
    MIN_INSYNC_KEY,
    LEADER_THROTTLED_KEY,
    FOLLOWER_THROTTLED_KEY,
    *RULE_KEYS,
)
"""The topic configs read for every topic."""
DEFAULT_MIN_INSYNC: Final = 1
"""Kafka's default ``min.insync.replicas``, for a topic whose config does not say."""
SERVED_CONFIG_KEYS: Final = command_config.KEYS
"""The client properties accepted (those every command serves); ``client.id`` and
``request.timeout.ms`` are used."""
BROKER_ENDPOINTS: Final = 1
"""DescribeCluster's ``endpoint_type`` of brokers."""
TOPIC_RESOURCE: Final = 2
"""DescribeConfigs' resource type of a topic."""
MIN_LOG_DIRS_VERSION, MAX_LOG_DIRS_VERSION = 1, 4
"""Kafka 4 refuses DescribeLogDirs v0; v4 adds the volume's total and usable bytes."""
PASSING: Final = (UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE)
"""Metadata's errors of a topic going or coming while the cluster is read: left out."""


class ClusterStateError(RackwiseError):
    """A cluster that could not be read: one line naming it, the request and why."""


@dataclass(frozen=True, slots=True)
class BrokerState:
    """A broker as DescribeCluster gives it (``fenced`` from v2; False before)."""

    id: int
    host: str
    port: int
    rack: str | None
    fenced: bool = False


@dataclass(frozen=True, slots=True)
class LogDirState:
    """A log directory as DescribeLogDirs gives it: ``error`` is Kafka's code (NONE for a live
    directory), the volume's bytes None where the version or the broker does not say."""

    path: str
    error: int
    total_bytes: int | None
    usable_bytes: int | None

    @property
    def is_live(self) -> bool:
        return self.error == NONE


@dataclass(frozen=True, slots=True)
class PartitionState:
    """A partition: Metadata's replicas (in order), leader (None: none), leader epoch, ISR and
    offline replicas; its topic's ``min.insync.replicas``; and, per broker holding a current
    copy, the copy's size and directory (a broker missing from them reported none). The
    brokers building a future copy (a move between directories) are in ``future_log_dir``."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    leader: int | None
    leader_epoch: int
    isr: tuple[int, ...]
    offline: tuple[int, ...]
    min_insync: int
    size_bytes: Mapping[int, int] = field(default_factory=dict)
    log_dir: Mapping[int, str] = field(default_factory=dict)
    future_log_dir: Mapping[int, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ReassignmentState:
    """A reassignment in flight, as ListPartitionReassignments gives it."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]

    @property
    def target(self) -> tuple[int, ...]:
        """The replicas once the move is done (``replicas`` without ``removing``)."""
        return tuple(b for b in self.replicas if b not in self.removing)


@dataclass(frozen=True, slots=True)
class ClusterSnapshot:
    """One read of a whole cluster (see the module docstring)."""

    bootstrap: str
    cluster_id: str
    controller_id: int | None
    brokers: Mapping[int, BrokerState]
    partitions: Mapping[TopicPartition, PartitionState]
    log_dirs: Mapping[int, tuple[LogDirState, ...]]
    reassignments: Mapping[TopicPartition, ReassignmentState]
    topic_configs: Mapping[str, Mapping[str, str]]


# ---- the options -------------------------------------------------------------------------------


def _options(bootstrap: str, config: Mapping[str, str], timeout_ms: int) -> tuple[str, float]:
    """The client id and the request timeout (seconds) ``config`` gives; what it may not hold
    refused by name."""
    refused = sorted(k for k in config if k not in SERVED_CONFIG_KEYS)
    protocol = config.get("security.protocol", "PLAINTEXT").strip().upper()
    if protocol != "PLAINTEXT":
        refused.insert(0, f"security.protocol={protocol}")
    if refused:
        raise ClusterStateError(
            f"cluster {bootstrap}: client config not served: {', '.join(refused)} (rackwise "
            f"connects over PLAINTEXT and reads only {', '.join(sorted(SERVED_CONFIG_KEYS))})"
        )
    text = config.get("request.timeout.ms", str(timeout_ms)).strip()
    if not text.isdigit() or int(text) == 0:
        raise ClusterStateError(
            f"cluster {bootstrap}: request.timeout.ms must be a positive number of ms: {text}"
        )
    return config.get("client.id", CLIENT_ID), min(int(text), timeout_ms) / 1000


def addresses_of(bootstrap: str) -> list[tuple[str, int]]:
    """``host:port[,host:port...]`` as addresses, each checked."""
    entries = [e.strip() for e in bootstrap.split(",") if e.strip()]
    for entry in entries:
        host, sep, port = entry.split("://")[-1].rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ClusterStateError(f"bootstrap server {entry!r}: expected HOST:PORT")
    if not entries:
        raise ClusterStateError(f"bootstrap servers {bootstrap!r}: expected HOST:PORT")
    return bootstrap_addresses_of(bootstrap)


# ---- the reads ---------------------------------------------------------------------------------


class _Reader:
    """The requests of one read, each failure named with the cluster and the request."""

    def __init__(self, bootstrap: str, connections: Connections) -> None:
        self.bootstrap = bootstrap
        self.connections = connections

    def fail(self, what: str, why: str) -> ClusterStateError:
        return ClusterStateError(f"cluster {self.bootstrap}: {what} failed: {why}")

    async def send(
        self, what: str, node: Node | None, api_key: int, values: Mapping[str, Any], **versions: int
    ) -> Any:
        try:
            response = await self.connections.send(node, api_key, values, **versions)
        except GroupsError as e:
            raise self.fail(what, str(e)) from None
        code = int(getattr(response, "error_code", NONE))
        if code != NONE:
            message = getattr(response, "error_message", None)
            raise self.fail(what, f"{error_name(code)}{': ' + message if message else ''}")
        return response

    async def brokers(self) -> tuple[str, int | None, dict[int, BrokerState]]:
        values = {"include_cluster_authorized_operations": False,
                  "endpoint_type": BROKER_ENDPOINTS, "include_fenced_brokers": True}  # fmt: skip
        response = await self.send("DescribeCluster", None, ApiKey.DESCRIBE_CLUSTER, values)
        brokers = {
            int(b.broker_id): BrokerState(
                int(b.broker_id),
                str(b.host),
                int(b.port),
                None if b.rack is None else str(b.rack),
                bool(getattr(b, "is_fenced", False)),
            )
            for b in response.brokers
        }
        controller = int(response.controller_id)
        return str(response.cluster_id), (None if controller < 0 else controller), brokers

    async def metadata(self) -> Any:
        values = {"topics": None, "allow_auto_topic_creation": False,
                  "include_cluster_authorized_operations": False,
                  "include_topic_authorized_operations": False}  # fmt: skip
        response = await self.send("Metadata", None, ApiKey.METADATA, values, min_version=1)
        for topic in response.topics:
            code = int(topic.error_code)
            if code not in (NONE, *PASSING) and not topic.partitions:
                raise self.fail("Metadata", f"topic {topic.name}: {error_name(code)}")
        return response

    async def reassignments(self) -> dict[TopicPartition, ReassignmentState]:
        values = {"timeout": 30_000, "topics": None}
        what = "ListPartitionReassignments"
        response = await self.send(what, None, ApiKey.LIST_PARTITION_REASSIGNMENTS, values)
        return {
            TopicPartition(str(t.name), int(p.partition_index)): ReassignmentState(
                tuple(int(b) for b in p.replicas),
                tuple(int(b) for b in p.adding_replicas),
                tuple(int(b) for b in p.removing_replicas),
            )
            for t in response.topics
            for p in t.partitions
        }

    async def log_dirs(self, broker: BrokerState) -> Any:
        node = Node(broker.id, broker.host, broker.port)
        what = f"DescribeLogDirs on broker {broker.id} ({broker.host}:{broker.port})"
        return await self.send(
            what,
            node,
            ApiKey.DESCRIBE_LOG_DIRS,
            {"topics": None},
            min_version=MIN_LOG_DIRS_VERSION,
            max_version=MAX_LOG_DIRS_VERSION,
        )

    async def topic_configs(self, topics: list[str]) -> dict[str, dict[str, str]]:
        if not topics:
            return {}
        keys = list(TOPIC_CONFIG_KEYS)
        resources = [{"resource_type": TOPIC_RESOURCE, "resource_name": name,
                      "configuration_keys": keys} for name in topics]  # fmt: skip
        values = {"resources": resources, "include_synonyms": False,
                  "include_documentation": False}  # fmt: skip
        response = await self.send(
            "DescribeConfigs", None, ApiKey.DESCRIBE_CONFIGS, values, min_version=1
        )
        configs: dict[str, dict[str, str]] = {}
        for result in response.results:
            code = int(result.error_code)
            if code == UNKNOWN_TOPIC_OR_PARTITION:
                continue
            if code != NONE:
                name = result.resource_name
                raise self.fail("DescribeConfigs", f"topic {name}: {error_name(code)}")
            configs[str(result.resource_name)] = {
                str(c.name): str(c.value) for c in result.configs if c.value is not None
            }
        return configs


def _bytes(value: Any) -> int | None:
    return None if value is None or int(value) < 0 else int(value)


@dataclass
class _Copies:
    """What the DescribeLogDirs answers say of each partition's copies."""

    size: dict[TopicPartition, dict[int, int]] = field(default_factory=dict)
    current: dict[TopicPartition, dict[int, str]] = field(default_factory=dict)
    future: dict[TopicPartition, dict[int, str]] = field(default_factory=dict)


def _directories(answers: Mapping[int, Any], copies: _Copies) -> dict[int, tuple[LogDirState, ...]]:
    """Each broker's directories; ``copies`` learns the replicas in them."""
    log_dirs: dict[int, tuple[LogDirState, ...]] = {}
    for broker, response in answers.items():
        states = []
        for result in response.results:
            path = str(result.log_dir)
            states.append(
                LogDirState(
                    path,
                    int(result.error_code),
                    _bytes(getattr(result, "total_bytes", None)),
                    _bytes(getattr(result, "usable_bytes", None)),
                )
            )
            for topic in result.topics:
                for p in topic.partitions:
                    tp = TopicPartition(str(topic.name), int(p.partition_index))
                    if bool(p.is_future_key):
                        copies.future.setdefault(tp, {})[broker] = path
                    else:
                        copies.current.setdefault(tp, {})[broker] = path
                        copies.size.setdefault(tp, {})[broker] = int(p.partition_size)
        log_dirs[broker] = tuple(states)
    return log_dirs


def _partitions(
    metadata: Any, configs: Mapping[str, Mapping[str, str]], copies: _Copies
) -> dict[TopicPartition, PartitionState]:
    partitions: dict[TopicPartition, PartitionState] = {}
    for topic in metadata.topics:
        name = str(topic.name)
        if name not in configs:  # deleted while the cluster was read
            continue
        min_insync = _min_insync(configs[name])
        for p in topic.partitions:
            tp = TopicPartition(name, int(p.partition_index))
            leader = int(p.leader_id)
            partitions[tp] = PartitionState(
                name,
                tp.partition,
                tuple(int(b) for b in p.replica_nodes),
                None if leader < 0 else leader,
                int(getattr(p, "leader_epoch", -1)),
                tuple(int(b) for b in p.isr_nodes),
                tuple(int(b) for b in getattr(p, "offline_replicas", ())),
                min_insync,
                copies.size.get(tp, {}),
                copies.current.get(tp, {}),
                copies.future.get(tp, {}),
            )
    return dict(sorted(partitions.items()))


def _min_insync(config: Mapping[str, str]) -> int:
    value = config.get(MIN_INSYNC_KEY, "")
    return int(value) if value.strip().isdigit() else DEFAULT_MIN_INSYNC


async def read_cluster_async(
    bootstrap_servers: str,
    config: Mapping[str, str] | None = None,
    *,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
) -> ClusterSnapshot:
    """The cluster behind ``bootstrap_servers`` (see the module docstring), read within
    ``timeout_ms``."""
    addresses = addresses_of(bootstrap_servers)
    client_id, request_timeout_s = _options(bootstrap_servers, config or {}, timeout_ms)
    connections = Connections(addresses, timeout_s=request_timeout_s, client_id=client_id)
    reader = _Reader(bootstrap_servers, connections)
    try:
        async with asyncio.timeout(timeout_ms / 1000):
            return await _read(reader)
    except TimeoutError:
        raise reader.fail("reading the cluster", f"not done within {timeout_ms} ms") from None
    finally:
        await connections.close()


async def _all(*calls: Coroutine[Any, Any, Any]) -> list[Any]:
    """The answers of ``calls`` run at once; when one fails the others are cancelled (and
    waited for) before its error goes on, so that no request is left running."""
    tasks = [asyncio.ensure_future(call) for call in calls]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


async def _read(reader: _Reader) -> ClusterSnapshot:
    cluster_id, controller, brokers = await reader.brokers()
    live = [b for b in brokers.values() if not b.fenced]
    metadata, reassignments, *answers = await _all(
        reader.metadata(), reader.reassignments(), *(reader.log_dirs(b) for b in live)
    )
    names = sorted(
        str(t.name) for t in metadata.topics if int(t.error_code) != UNKNOWN_TOPIC_OR_PARTITION
    )
    configs = await reader.topic_configs(names)
    copies = _Copies()
    log_dirs = _directories({b.id: a for b, a in zip(live, answers, strict=True)}, copies)
    for topic in metadata.topics:
        for p in topic.partitions:
            for b in (*p.replica_nodes, *p.isr_nodes):
                if int(b) not in brokers:  # not listed: fenced, to a Kafka before 4.0
                    brokers[int(b)] = BrokerState(int(b), "", -1, None, fenced=True)
    return ClusterSnapshot(
        bootstrap=reader.bootstrap,
        cluster_id=cluster_id,
        controller_id=controller,
        brokers=dict(sorted(brokers.items())),
        partitions=_partitions(metadata, configs, copies),
        log_dirs=dict(sorted(log_dirs.items())),
        reassignments=dict(sorted(reassignments.items())),
        topic_configs=configs,
    )


def read_cluster(
    bootstrap_servers: str,
    config: Mapping[str, str] | None = None,
    *,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
) -> ClusterSnapshot:
    """:func:`read_cluster_async` on a loop of its own (not from inside a running loop)."""
    return asyncio.run(read_cluster_async(bootstrap_servers, config, timeout_ms=timeout_ms))
