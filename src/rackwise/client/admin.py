"""The admin client of the command line: kafka-python's ``KafkaAdminClient`` (3.x) with its
answers turned into frozen values and its failures into one :class:`AdminError` each, plus
CreateReplicaPlacement (KIP-879), which kafka-python does not know.

Goals
    ``rackwise topics`` and ``rackwise placement`` speak to a cluster through a real third-party
    Kafka client, as ``kafka-topics.sh`` speaks through Kafka's own ``Admin``: what works
    against rackwise works against Kafka and the other way round.

Constraints
    * kafka-python raises its own exceptions with long messages (the whole request and response
      printed). Batch calls here are made with ``raise_errors=False`` and the per-topic error
      code and message read from the response, so an error reads as the broker worded it
      (``Topic 'orders' already exists.``) and names Kafka's error (``TOPIC_ALREADY_EXISTS``).
    * CreateReplicaPlacement's request and response classes are kafka-python ``ApiMessage``
      classes loaded from rackwise's own message-spec JSON (``rackwise/protocol/schemas``), so
      the bytes on the wire are the ones the protocol layer defines and golden-tests, and
      kafka-python negotiates the version from the broker's ApiVersions as for any other API.
      Sending it uses the admin client's connection manager (``_manager.send``): kafka-python
      has no public call for an API it does not know.
    * Metadata gives no eligible leader replicas (KIP-966); a partition's ELR and last known
      ELR are therefore empty, as Kafka's admin client reports them from a Metadata response.

Usage::

    with Admin("127.0.0.1:9092") as admin:
        admin.create_topic("orders", num_partitions=6, replication_factor=3)
        [topic] = admin.describe_topics(["orders"])
        placed = admin.create_replica_placement(6, 3)  # [(0, (1, 2, 3)), ...]
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import kafka.errors as kafka_errors
from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType
from kafka.protocol.api_message import ApiMessage

from rackwise.client.bootstrap import (
    BootstrapUnreachable,
    bootstrap_addresses_of,
    check_bootstrap_reachable,
)
from rackwise.common import RackwiseError
from rackwise.common.error_codes import (
    NONE,
    NOT_CONTROLLER,
    UNKNOWN_SERVER_ERROR,
    UNSUPPORTED_VERSION,
)
from rackwise.net.sasl_client import default_login
from rackwise.net.tls import client_tls

SCHEMAS_PACKAGE: Final = "rackwise.protocol.schemas"
"""Where rackwise's own message specs live (CreateReplicaPlacement*.json)."""

CREATE_REPLICA_PLACEMENT_API_KEY: Final = 1000
"""rackwise's api key for KIP-879's CreateReplicaPlacement (see rackwise.protocol.apis)."""

DEFAULT_TIMEOUT_MS: Final = 30_000
"""How long to wait for a broker at start and for each request, in milliseconds."""

READ_ATTEMPTS: Final = 4
"""How many times a read that timed out is asked: a node per paused broker, and one more."""

NO_LEADER: Final = -1
"""The leader id of a partition that has none, on the wire."""

BROKER_DEFAULT: Final = -1
"""A partition count or replication factor that leaves it to the broker's default
(``num.partitions``, ``default.replication.factor``), as in CreateTopics v4+."""


class CreateReplicaPlacementRequest(ApiMessage, load_json=SCHEMAS_PACKAGE):  # type: ignore[misc,call-arg]
    """KIP-879's request, api key 1000, from rackwise's schema."""


class CreateReplicaPlacementResponse(ApiMessage, load_json=SCHEMAS_PACKAGE):  # type: ignore[misc,call-arg]
    """KIP-879's response plus rackwise's tagged ErrorCode, ErrorMessage, ThrottleTimeMs."""


class AdminError(RackwiseError):
    """A request the cluster refused or could not answer. ``code`` is Kafka's error code (-1
    when no broker answered) and ``name`` Kafka's name for it (``TOPIC_ALREADY_EXISTS``)."""

    def __init__(
        self, message: str, *, code: int = UNKNOWN_SERVER_ERROR, name: str = "UNKNOWN_SERVER_ERROR"
    ):
        super().__init__(message)
        self.code = code
        self.name = name


@dataclass(frozen=True, slots=True)
class BrokerDescription:
    """A broker as the cluster describes it; ``rack`` is None when it has none."""

    id: int
    host: str
    port: int
    rack: str | None
    is_fenced: bool = False


@dataclass(frozen=True, slots=True)
class PartitionDescription:
    """One partition: ``leader`` None when it has none; replicas, ISR and ELRs as broker ids."""

    partition: int
    leader: int | None
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()
    offline_replicas: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class TopicDescription:
    """A topic and its partitions, sorted by partition; ``topic_id`` None when unknown."""

    name: str
    topic_id: uuid.UUID | None
    is_internal: bool
    partitions: tuple[PartitionDescription, ...]

    @property
    def replication_factor(self) -> int:
        """The replica count of the first partition, as ``kafka-topics --describe`` shows it."""
        return len(self.partitions[0].replicas) if self.partitions else 0


def error_for(code: int, message: str | None, subject: str = "") -> AdminError:
    """The error for Kafka error ``code``: the broker's message if it sent one, otherwise
    kafka-python's description of the code, prefixed with ``subject``."""
    error_class = kafka_errors.for_code(code)
    name = str(getattr(error_class, "message", "UNKNOWN_SERVER_ERROR"))
    text = message or str(getattr(error_class, "description", "")) or name
    if not message and subject:
        text = f"{subject}: {text}"
    if not message:
        text = f"{text} ({name})"
    return AdminError(text, code=code, name=name)


def _check(results: Iterable[Any], name_of: str = "name") -> None:
    """Raise the first error of a batch response's per-item results."""
    for result in results:
        code = int(result.error_code)
        if code != NONE:
            raise error_for(code, getattr(result, "error_message", None), getattr(result, name_of))


def partition_from_metadata(partition: Mapping[str, Any]) -> PartitionDescription:
    """A partition of a Metadata response (kafka-python's ``to_dict`` form)."""
    leader = int(partition["leader_id"])
    return PartitionDescription(
        partition=int(partition["partition_index"]),
        leader=None if leader == NO_LEADER else leader,
        replicas=tuple(int(r) for r in partition["replica_nodes"]),
        isr=tuple(int(r) for r in partition["isr_nodes"]),
        offline_replicas=tuple(int(r) for r in partition.get("offline_replicas") or ()),
    )


def topic_from_metadata(topic: Mapping[str, Any]) -> TopicDescription:
    """A topic of a Metadata response (kafka-python's ``to_dict`` form)."""
    code = int(topic.get("error_code", NONE))
    if code != NONE:
        raise error_for(code, None, f"topic {topic['name']!r}")
    topic_id = topic.get("topic_id")
    if topic_id is not None and not isinstance(topic_id, uuid.UUID):
        topic_id = uuid.UUID(str(topic_id))
    if topic_id is not None and topic_id.int == 0:
        topic_id = None
    partitions = sorted(
        (partition_from_metadata(p) for p in topic["partitions"]), key=lambda p: p.partition
    )
    return TopicDescription(
        str(topic["name"]), topic_id, bool(topic.get("is_internal", False)), tuple(partitions)
    )


def broker_from_cluster(broker: Mapping[str, Any]) -> BrokerDescription:
    """A broker of a DescribeCluster (or Metadata) response in ``to_dict`` form."""
    broker_id = broker["broker_id"] if "broker_id" in broker else broker["node_id"]
    return BrokerDescription(
        int(broker_id),
        str(broker["host"]),
        int(broker["port"]),
        broker.get("rack"),
        bool(broker.get("is_fenced", False)),
    )


def placement_request(
    num_partitions: int,
    replication_factor: int,
    *,
    force_simple_placement: bool = False,
    broker_ids: Sequence[int] = (),
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
) -> Any:
    """A CreateReplicaPlacement request (KIP-879); no broker ids means every usable broker."""
    return CreateReplicaPlacementRequest(
        num_partitions=num_partitions,
        replication_factor=replication_factor,
        force_simple_placement=force_simple_placement,
        node_id=list(broker_ids),
        timeout_ms=timeout_ms,
    )


def placement_from_response(response: Any) -> list[tuple[int, tuple[int, ...]]]:
    """The partitions and replicas of a CreateReplicaPlacement response, by partition, or the
    error it carries."""
    code = int(response.error_code)
    if code != NONE:
        raise error_for(code, response.error_message, "CreateReplicaPlacement")
    return sorted(
        (int(p.partition_id), tuple(int(r) for r in p.replicas)) for p in response.replica_placement
    )


def kafka_python_security() -> dict[str, Any]:
    """kafka-python's settings for what ``--command-config`` set: TLS with its context, SASL
    with its mechanism and credentials."""
    tls, login = client_tls(), default_login()
    settings: dict[str, Any] = {}
    if tls is not None:
        settings = {"security_protocol": "SSL", "ssl_context": tls}
    if login is not None:
        settings["security_protocol"] = "SASL_SSL" if tls is not None else "SASL_PLAINTEXT"
        settings["sasl_mechanism"] = login.mechanism
        settings["sasl_plain_username"] = login.username
        settings["sasl_plain_password"] = login.password
    return settings


class Admin:
    """A connection to a cluster through kafka-python's ``KafkaAdminClient`` (see the module)."""

    def __init__(
        self,
        bootstrap_servers: str,
        *,
        timeout_ms: int = DEFAULT_TIMEOUT_MS,
        client_id: str = "rackwise-admin",
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.timeout_ms = timeout_ms
        try:  # kafka-python would retry a refused bootstrap server until the timeout
            check_bootstrap_reachable(bootstrap_addresses_of(bootstrap_servers), timeout_ms / 1000)
        except ValueError:
            pass  # not host:port; kafka-python refuses it in its own words
        except BootstrapUnreachable as e:
            raise AdminError(str(e), name="NETWORK_EXCEPTION") from None
        secured = kafka_python_security()
        try:
            self._client = KafkaAdminClient(
                bootstrap_servers=bootstrap_servers,
                client_id=client_id,
                request_timeout_ms=timeout_ms,
                bootstrap_timeout_ms=timeout_ms,
                **secured,
            )
        except kafka_errors.KafkaError as e:
            raise AdminError(
                f"no broker answered at {bootstrap_servers} within {timeout_ms} ms "
                f"({type(e).__name__})",
                name=type(e).__name__,
            ) from None

    def __enter__(self) -> Admin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._client.close()

    def _call(self, what: str, call: Any, *args: Any, **kwargs: Any) -> Any:
        """Run one kafka-python call; its exceptions become an :class:`AdminError`."""
        try:
            return call(*args, **kwargs)
        except kafka_errors.KafkaError as e:
            code = int(getattr(e, "errno", UNKNOWN_SERVER_ERROR))
            name = str(getattr(e, "message", type(e).__name__))
            detail = str(getattr(e, "description", "")) or type(e).__name__
            raise AdminError(f"{what} failed: {detail} ({name})", code=code, name=name) from None
        except RuntimeError as e:
            # kafka-python gives up on a write with a bare RuntimeError once the brokers keep
            # answering NOT_CONTROLLER (``Failed to find active controller id!``).
            raise AdminError(
                f"{what} failed: {e} (is the controller running?)",
                code=NOT_CONTROLLER,
                name="NOT_CONTROLLER",
            ) from None

    def _read(self, what: str, call: Any, *args: Any, **kwargs: Any) -> Any:
        """:meth:`_call` for a request that changes nothing, asked again when it timed out,
        up to :data:`READ_ATTEMPTS` times within the admin's timeout: a paused broker still
        accepts connections, so the node chosen may never answer, and kafka-python, having
        dropped that connection and backing off from it, asks another the next time (Kafka's
        admin client retries such calls on another node until its API timeout)."""
        deadline = time.monotonic() + self.timeout_ms / 1000
        for _ in range(READ_ATTEMPTS - 1):
            try:
                return call(*args, **kwargs)
            except (kafka_errors.RequestTimedOutError, kafka_errors.KafkaTimeoutError):
                if time.monotonic() >= deadline:
                    break
        return self._call(what, call, *args, **kwargs)

    # -- the cluster -------------------------------------------------------------------------

    def brokers(self) -> list[BrokerDescription]:
        """Every registered broker, fenced ones included (DescribeCluster), by id."""
        cluster = self._read("DescribeCluster", self._client.describe_cluster)
        return sorted((broker_from_cluster(b) for b in cluster["brokers"]), key=lambda b: b.id)

    # -- topics ------------------------------------------------------------------------------

    def list_topics(self) -> list[str]:
        """Every topic's name, sorted."""
        return sorted(self._read("Metadata", self._client.list_topics))

    def describe_topics(self, names: Sequence[str] | None = None) -> list[TopicDescription]:
        """The named topics (all of them for None), in the order of the names or by name."""
        topics = self._read(
            "Metadata", self._client.describe_topics, None if names is None else list(names)
        )
        described = [topic_from_metadata(t) for t in topics]
        if names is None:
            return sorted(described, key=lambda t: t.name)
        by_name = {t.name: t for t in described}
        return [by_name[name] for name in names if name in by_name]

    def topic_configs(self, names: Sequence[str]) -> dict[str, dict[str, str]]:
        """Each topic's configs that differ from the defaults, as ``--describe`` prints them."""
        if not names:
            return {}
        resources = [ConfigResource(ConfigResourceType.TOPIC, name) for name in names]
        found = self._read(
            "DescribeConfigs", self._client.describe_configs, resources, config_filter="modified"
        )
        topics = found.get("topic", {})
        return {
            name: {key: str(entry.get("value")) for key, entry in topics.get(name, {}).items()}
            for name in names
        }

    def effective_int_configs(
        self, names: Sequence[str], keys: Sequence[str]
    ) -> dict[str, dict[str, int]]:
        """Each topic's integer ``keys`` in effect, default or not (1 where one is unset), in
        one DescribeConfigs."""
        if not names:
            return {}
        resources = [ConfigResource(ConfigResourceType.TOPIC, name) for name in names]
        found = self._read(
            "DescribeConfigs", self._client.describe_configs, resources, config_filter="all"
        )
        topics = found.get("topic", {})
        return {
            name: {key: int(topics.get(name, {}).get(key, {}).get("value") or 1) for key in keys}
            for name in names
        }

    def create_topic(
        self,
        name: str,
        *,
        num_partitions: int = BROKER_DEFAULT,
        replication_factor: int = BROKER_DEFAULT,
        assignments: Mapping[int, Sequence[int]] | None = None,
        configs: Mapping[str, str] | None = None,
        validate_only: bool = False,
    ) -> None:
        """Create one topic: a count and a replication factor (-1: the broker's default), or
        explicit replica assignments by partition (with both left at :data:`BROKER_DEFAULT`)."""
        spec: dict[str, Any] = {
            "num_partitions": num_partitions,
            "replication_factor": replication_factor,
            "assignments": {p: list(r) for p, r in (assignments or {}).items()},
            "configs": dict(configs or {}),
        }
        response = self._call(
            "CreateTopics",
            self._client.create_topics,
            {name: spec},
            timeout_ms=self.timeout_ms,
            validate_only=validate_only,
            raise_errors=False,
        )
        for topic in response["topics"]:
            code = int(topic["error_code"])
            if code != NONE:
                raise error_for(code, topic.get("error_message"), f"topic {topic['name']!r}")

    def create_partitions(
        self, name: str, count: int, assignments: Sequence[Sequence[int]] | None = None
    ) -> None:
        """Grow a topic to ``count`` partitions; ``assignments`` gives the new ones' replicas."""
        spec: Any = count
        if assignments is not None:
            spec = {"count": count, "assignments": [list(a) for a in assignments]}
        response = self._call(
            "CreatePartitions",
            self._client.create_partitions,
            {name: spec},
            timeout_ms=self.timeout_ms,
            raise_errors=False,
        )
        _check(response.results)

    def delete_topics(self, names: Sequence[str]) -> None:
        """Delete the named topics."""
        response = self._call(
            "DeleteTopics",
            self._client.delete_topics,
            list(names),
            timeout_ms=self.timeout_ms,
            raise_errors=False,
        )
        for topic in response["topics"]:
            code = int(topic["error_code"])
            if code != NONE:
                raise error_for(code, topic.get("error_message"), f"topic {topic['name']!r}")

    # -- KIP-879 -----------------------------------------------------------------------------

    def create_replica_placement(
        self,
        num_partitions: int,
        replication_factor: int,
        *,
        force_simple_placement: bool = False,
        broker_ids: Sequence[int] = (),
    ) -> list[tuple[int, tuple[int, ...]]]:
        """Ask the cluster's placer where replicas would go (nothing is created)."""
        request = placement_request(
            num_partitions,
            replication_factor,
            force_simple_placement=force_simple_placement,
            broker_ids=broker_ids,
            timeout_ms=self.timeout_ms,
        )
        manager = self._client._manager

        async def send() -> Any:
            return await manager.send(request)

        try:
            response = manager.run(send)
        except kafka_errors.IncompatibleBrokerVersion:
            raise AdminError(
                f"the broker at {self.bootstrap_servers} does not support CreateReplicaPlacement "
                f"(api key {CREATE_REPLICA_PLACEMENT_API_KEY})",
                code=UNSUPPORTED_VERSION,
                name="UNSUPPORTED_VERSION",
            ) from None
        except kafka_errors.KafkaError as e:
            raise AdminError(
                f"CreateReplicaPlacement failed: {type(e).__name__}: {e}", name=type(e).__name__
            ) from None
        return placement_from_response(response)
