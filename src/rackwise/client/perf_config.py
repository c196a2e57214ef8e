"""The client settings of ``rackwise producer-perf-test`` and ``consumer-perf-test``: the Java
client's configuration keys, as Kafka's tools take them, turned into librdkafka's.

Goals
    A command line written for Kafka's ``kafka-producer-perf-test.sh`` or
    ``kafka-consumer-perf-test.sh`` (``--producer-props acks=1 linger.ms=10 batch.size=65536``,
    ``--consumer.config consumer.properties``) runs unchanged on confluent-kafka (librdkafka),
    with the meaning the Java client gives it; a key that would not mean the same is refused
    in one line naming it, never passed on to do something else or nothing.

Constraints
    * Only the Java client's names are accepted: a librdkafka-only name is as unknown here as
      it is to Kafka's tool.
    * Where the two clients' defaults differ in a way a benchmark notices, the Java client's
      default is set: the producer's ``batch.size`` (16384), ``buffer.memory`` (32 MiB),
      ``delivery.timeout.ms`` (120000), ``max.in.flight.requests.per.connection`` (5) and
      ``enable.idempotence`` (true unless ``acks``, ``retries`` or
      ``max.in.flight.requests.per.connection`` rule it out and it was not set, as
      ``ProducerConfig`` decides). The consumer keeps librdkafka's ``enable.auto.commit``
      (true, as the Java consumer's), so a second run with the same ``--group`` resumes where
      the first one committed, as against Kafka.
    * Transactions are refused (``transactional.id``): the brokers have no transaction
      coordinator.
    * Keys the tool decides itself are accepted and dropped: the serializers and
      deserializers (records are bytes), and the consumer's ``max.poll.records`` is the batch
      size of each ``consume()`` call.
    * ``partition.assignment.strategy`` takes the Java class names of the assignors librdkafka
      also has (``RangeAssignor``, ``RoundRobinAssignor``, ``CooperativeStickyAssignor``, with
      or without their package) and gives librdkafka its names for them (``range``,
      ``roundrobin``, ``cooperative-sticky``); another class (the eager ``StickyAssignor``, a
      plug-in) is refused, naming it.

Algorithm
    :func:`parse_props_args` reads ``--producer-props`` as Kafka's ``readProps`` does (each
    argument split at ``=`` into exactly two pieces). Each accepted key maps to one librdkafka
    key through :data:`PRODUCER_KEYS` / :data:`CONSUMER_KEYS` (mostly the same name:
    librdkafka knows many Java names as aliases); ``buffer.memory`` is converted from bytes to
    KiB, and ``compression.<codec>.level`` becomes ``compression.level`` for the chosen codec.

Worked example
    ``acks=1 linger.ms=20 max.request.size=2097152 bootstrap.servers=h:9092`` gives librdkafka
    ``acks=1``, ``linger.ms=20``, ``message.max.bytes=2097152``,
    ``bootstrap.servers=h:9092``, ``client.id=perf-producer-client`` and the Java defaults
    above, with ``enable.idempotence=false`` because ``acks`` is not ``all``.
    ``max.block.ms=1000`` is refused: librdkafka has no such setting.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Final

from rackwise.client.librdkafka_security import (
    SECURITY_KEYS,
    SecurityConfigError,
    librdkafka_security,
)
from rackwise.common import RackwiseError
from rackwise.common import error_codes as codes
from rackwise.common.config_values import parse_int_config

BOOTSTRAP_SERVERS: Final = "bootstrap.servers"
CLIENT_ID: Final = "client.id"
TRANSACTIONAL_ID: Final = "transactional.id"
ACKS: Final = "acks"
RETRIES: Final = "retries"
MAX_IN_FLIGHT: Final = "max.in.flight.requests.per.connection"
ENABLE_IDEMPOTENCE: Final = "enable.idempotence"
COMPRESSION_TYPE: Final = "compression.type"
BUFFER_MEMORY: Final = "buffer.memory"
MAX_POLL_RECORDS: Final = "max.poll.records"

DEFAULT_PRODUCER_CLIENT_ID: Final = "perf-producer-client"
DEFAULT_CONSUMER_CLIENT_ID: Final = "perf-consumer-client"
DEFAULT_MAX_POLL_RECORDS: Final = 500
"""The Java consumer's ``max.poll.records``: records handed over per poll."""
MAX_IDEMPOTENT_IN_FLIGHT: Final = 5
"""The most requests in flight per connection an idempotent Java producer allows."""

_SAME: Final = (
    # Keys both clients know under the Java name (librdkafka's own or an alias of it).
    "bootstrap.servers",
    "client.id",
    "client.dns.lookup",
    "client.rack",
    "connections.max.idle.ms",
    "metadata.max.age.ms",
    "reconnect.backoff.ms",
    "reconnect.backoff.max.ms",
    "retry.backoff.ms",
    "retry.backoff.max.ms",
    "security.protocol",
    "socket.connection.setup.timeout.ms",
)
PRODUCER_KEYS: Final = MappingProxyType(
    {key: key for key in _SAME}
    | {
        key: key
        for key in (
            "acks",
            "batch.size",
            "compression.type",
            "delivery.timeout.ms",
            "enable.idempotence",
            "linger.ms",
            "max.in.flight.requests.per.connection",
            "request.timeout.ms",
            "retries",
            "transaction.timeout.ms",
        )
    }
    | {
        "max.request.size": "message.max.bytes",
        "send.buffer.bytes": "socket.send.buffer.bytes",
        "receive.buffer.bytes": "socket.receive.buffer.bytes",
        "buffer.memory": "queue.buffering.max.kbytes",
    }
)
"""Java producer key -> librdkafka key."""
CONSUMER_KEYS: Final = MappingProxyType(
    {key: key for key in _SAME}
    | {
        key: key
        for key in (
            "allow.auto.create.topics",
            "auto.commit.interval.ms",
            "auto.offset.reset",
            "check.crcs",
            "enable.auto.commit",
            "fetch.max.bytes",
            "fetch.min.bytes",
            "group.id",
            "heartbeat.interval.ms",
            "isolation.level",
            "max.partition.fetch.bytes",
            "max.poll.interval.ms",
            "session.timeout.ms",
        )
    }
    | {
        "fetch.max.wait.ms": "fetch.wait.max.ms",
        "send.buffer.bytes": "socket.send.buffer.bytes",
        "receive.buffer.bytes": "socket.receive.buffer.bytes",
        "request.timeout.ms": "socket.timeout.ms",
    }
)
"""Java consumer key -> librdkafka key."""
COMPRESSION_LEVEL_KEYS: Final = MappingProxyType(
    {
        "compression.gzip.level": "gzip",
        "compression.lz4.level": "lz4",
        "compression.zstd.level": "zstd",
    }
)
"""The Java producer's per-codec levels (KIP-390) -> the codec they apply to."""
PRODUCER_DROPPED: Final = frozenset({"key.serializer", "value.serializer"})
ASSIGNMENT_STRATEGY: Final = "partition.assignment.strategy"
CONSUMER_DROPPED: Final = frozenset(
    {"key.deserializer", "value.deserializer", ASSIGNMENT_STRATEGY, MAX_POLL_RECORDS}
)
JAVA_ASSIGNORS: Final = MappingProxyType(
    {
        "org.apache.kafka.clients.consumer.RangeAssignor": "range",
        "org.apache.kafka.clients.consumer.RoundRobinAssignor": "roundrobin",
        "org.apache.kafka.clients.consumer.CooperativeStickyAssignor": "cooperative-sticky",
    }
)
"""The Java consumer's assignors that librdkafka also has, by class name -> librdkafka name."""
JAVA_PRODUCER_DEFAULTS: Final = MappingProxyType(
    {
        "batch.size": "16384",
        "queue.buffering.max.kbytes": "32768",
        "delivery.timeout.ms": "120000",
        "max.in.flight.requests.per.connection": str(MAX_IDEMPOTENT_IN_FLIGHT),
    }
)
"""The Java producer's defaults where librdkafka's differ (librdkafka names)."""


class ArgumentParserException(RackwiseError, ValueError):
    """A command line the tool refuses after parsing it (argparse4j's
    ``ArgumentParserException`` in Kafka's tools); the message is Kafka's where Kafka has one.
    """

    error_code = codes.INVALID_REQUEST


class ClientConfigException(RackwiseError, ValueError):
    """A client setting that is unknown, unsupported or missing (the Java client's
    ``ConfigException``); the message names the key."""

    error_code = codes.INVALID_CONFIG


def parse_props_args(args: Sequence[str]) -> dict[str, str]:
    """``--producer-props`` as Kafka's ``readProps`` reads it: each ``KEY=VALUE`` splits at
    every ``=`` (trailing empty pieces dropped, as Java's ``String.split``) into exactly two
    pieces, else ``Invalid property: ARG``."""
    props: dict[str, str] = {}
    for arg in args:
        pieces = arg.split("=")
        while pieces and not pieces[-1]:
            pieces.pop()
        if len(pieces) != 2:
            raise ArgumentParserException(f"Invalid property: {arg}")
        props[pieces[0]] = pieces[1]
    return props


def refuse_transactions(
    props: Mapping[str, str], transactional_id: str | None, transaction_duration_ms: int | None
) -> None:
    """Refuse a transactional producer, asked for by ``--transactional-id``,
    ``transactional.id`` or ``--transaction-duration-ms``, as Kafka's tool turns
    transactions on."""
    asked = [
        f"{flag} {value}"
        for flag, value in (
            ("--transactional-id", transactional_id),
            (TRANSACTIONAL_ID, props.get(TRANSACTIONAL_ID)),
            ("--transaction-duration-ms", transaction_duration_ms),
        )
        if value is not None
    ]
    if asked:
        raise ArgumentParserException(
            f"Transactions are not supported ({asked[0]}): rackwise brokers have no "
            "transaction coordinator; run without --transactional-id, "
            "--transaction-duration-ms and transactional.id"
        )


def librdkafka_producer_config(java: Mapping[str, str]) -> dict[str, str]:
    """The librdkafka settings of the Java producer settings ``java`` (module docstring)."""
    _refuse_unknown(
        "producer",
        java,
        PRODUCER_KEYS,
        PRODUCER_DROPPED | set(COMPRESSION_LEVEL_KEYS) | SECURITY_KEYS,
    )
    _require_bootstrap(java)
    config = dict(JAVA_PRODUCER_DEFAULTS) | _security(java)
    for key, value in java.items():
        if key in PRODUCER_KEYS:
            config[PRODUCER_KEYS[key]] = value
    if BUFFER_MEMORY in java:
        config[PRODUCER_KEYS[BUFFER_MEMORY]] = str(_kib(java[BUFFER_MEMORY]))
    codec = java.get(COMPRESSION_TYPE, "none").strip()
    for key, level_codec in COMPRESSION_LEVEL_KEYS.items():
        if key in java and level_codec == codec:
            config["compression.level"] = java[key]
    config.setdefault(CLIENT_ID, DEFAULT_PRODUCER_CLIENT_ID)
    conflict = _idempotence_conflict(java)
    if ENABLE_IDEMPOTENCE not in java:
        config[ENABLE_IDEMPOTENCE] = "false" if conflict else "true"
    elif conflict and java[ENABLE_IDEMPOTENCE].strip().lower() == "true":
        raise ClientConfigException(conflict)
    return config


def _assignors(text: str) -> str:
    """librdkafka's ``partition.assignment.strategy`` for the Java consumer's list of class
    names (short names, as the Java client's simple class names, are taken too)."""
    by_simple_name = {name.rsplit(".", 1)[1]: value for name, value in JAVA_ASSIGNORS.items()}
    chosen = []
    for item in (part.strip() for part in text.split(",")):
        found = JAVA_ASSIGNORS.get(item) or by_simple_name.get(item)
        if found is None:
            raise ClientConfigException(
                f"Invalid value {item} for configuration {ASSIGNMENT_STRATEGY}: librdkafka has "
                f"no such assignor (it has {', '.join(JAVA_ASSIGNORS)})"
            )
        chosen.append(found)
    return ",".join(chosen)


def librdkafka_consumer_config(java: Mapping[str, str]) -> tuple[dict[str, str], int]:
    """The librdkafka settings of the Java consumer settings ``java``, and the number of
    records to take per ``consume()`` call (``max.poll.records``)."""
    _refuse_unknown("consumer", java, CONSUMER_KEYS, CONSUMER_DROPPED | SECURITY_KEYS)
    _require_bootstrap(java)
    config = {CONSUMER_KEYS[key]: value for key, value in java.items() if key in CONSUMER_KEYS}
    config |= _security(java)
    config.setdefault(CLIENT_ID, DEFAULT_CONSUMER_CLIENT_ID)
    if ASSIGNMENT_STRATEGY in java:
        config[ASSIGNMENT_STRATEGY] = _assignors(java[ASSIGNMENT_STRATEGY])
    text = java.get(MAX_POLL_RECORDS, str(DEFAULT_MAX_POLL_RECORDS)).strip()
    if not text.isdigit() or int(text) < 1:
        raise ClientConfigException(
            f"Invalid value {text} for configuration {MAX_POLL_RECORDS}: Value must be at least 1"
        )
    return config, int(text)


def _security(java: Mapping[str, str]) -> dict[str, str]:
    """The security keys in librdkafka's terms (:mod:`rackwise.client.librdkafka_security`)."""
    try:
        return librdkafka_security(java)
    except SecurityConfigError as e:
        raise ClientConfigException(str(e)) from None


def _refuse_unknown(
    kind: str, java: Mapping[str, str], known: Mapping[str, str], dropped: set[str] | frozenset[str]
) -> None:
    unknown = [key for key in java if key not in known and key not in dropped]
    if unknown:
        noun = "configuration" if len(unknown) == 1 else "configurations"
        raise ClientConfigException(
            f"Unknown {kind} {noun} {', '.join(unknown)}: not among the Java {kind} keys "
            "this tool maps to librdkafka"
        )


def _require_bootstrap(java: Mapping[str, str]) -> None:
    if not java.get(BOOTSTRAP_SERVERS, "").strip():
        raise ClientConfigException(
            f'Missing required configuration "{BOOTSTRAP_SERVERS}" which has no default value.'
        )


def _kib(text: str) -> int:
    """``buffer.memory`` bytes as librdkafka's KiB (rounded up; at least 1)."""
    value = parse_int_config(
        BUFFER_MEMORY,
        text,
        minimum=0,
        type_name="LONG",
        error=ClientConfigException,
        show_parsed=True,
    )
    return max(1, math.ceil(value / 1024))


_ALL_ACKS: Final = re.compile(r"^\s*(all|-1)\s*$", re.IGNORECASE)


def _idempotence_conflict(java: Mapping[str, str]) -> str | None:
    """Why the Java producer cannot be idempotent with these settings (its message for an
    explicit ``enable.idempotence=true``), or None: it needs ``retries`` other than 0,
    ``acks=all`` and at most 5 requests in flight (``ProducerConfig``)."""
    if java.get(RETRIES, "").strip() == "0":
        return f"Must set {RETRIES} to non-zero when using the idempotent producer."
    if ACKS in java and not _ALL_ACKS.match(java[ACKS]):
        return (
            f"Must set {ACKS} to all in order to use the idempotent producer. Otherwise we "
            "cannot guarantee idempotence."
        )
    in_flight = java.get(MAX_IN_FLIGHT, "").strip()
    if in_flight.isdigit() and int(in_flight) > MAX_IDEMPOTENT_IN_FLIGHT:
        return f"Must set {MAX_IN_FLIGHT} to at most 5 to use the idempotent producer."
    return None
