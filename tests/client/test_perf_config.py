"""The Java client's keys as the perf tools take them, turned into librdkafka's: the mapping,
the Java defaults that are kept, the refusals, and librdkafka itself accepting every mapped
key for the right kind of client."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer

from rackwise.client.perf_config import (
    CONSUMER_DROPPED,
    CONSUMER_KEYS,
    PRODUCER_DROPPED,
    PRODUCER_KEYS,
    ArgumentParserException,
    ClientConfigException,
    librdkafka_consumer_config,
    librdkafka_producer_config,
    parse_props_args,
    refuse_transactions,
)

UNREACHABLE = "127.0.0.1:1"
BOOTSTRAP = {"bootstrap.servers": UNREACHABLE}

# A valid value for every Java key the tools map (a new key needs one here).
PRODUCER_SAMPLES = {
    "bootstrap.servers": UNREACHABLE,
    "client.id": "perf",
    "client.dns.lookup": "use_all_dns_ips",
    "client.rack": "/dc1/r1",
    "connections.max.idle.ms": "540000",
    "metadata.max.age.ms": "300000",
    "reconnect.backoff.ms": "50",
    "reconnect.backoff.max.ms": "1000",
    "retry.backoff.ms": "100",
    "retry.backoff.max.ms": "1000",
    "security.protocol": "PLAINTEXT",
    "socket.connection.setup.timeout.ms": "10000",
    "acks": "all",
    "batch.size": "65536",
    "compression.type": "lz4",
    "delivery.timeout.ms": "120000",
    "enable.idempotence": "true",
    "linger.ms": "10",
    "max.in.flight.requests.per.connection": "5",
    "request.timeout.ms": "30000",
    "retries": "2147483647",
    "transaction.timeout.ms": "60000",
    "max.request.size": "1048576",
    "send.buffer.bytes": "131072",
    "receive.buffer.bytes": "32768",
    "buffer.memory": "33554432",
}
CONSUMER_SAMPLES = {
    "bootstrap.servers": UNREACHABLE,
    "client.id": "perf",
    "client.dns.lookup": "use_all_dns_ips",
    "client.rack": "/dc1/r1",
    "connections.max.idle.ms": "540000",
    "metadata.max.age.ms": "300000",
    "reconnect.backoff.ms": "50",
    "reconnect.backoff.max.ms": "1000",
    "retry.backoff.ms": "100",
    "retry.backoff.max.ms": "1000",
    "security.protocol": "PLAINTEXT",
    "socket.connection.setup.timeout.ms": "10000",
    "allow.auto.create.topics": "false",
    "auto.commit.interval.ms": "5000",
    "auto.offset.reset": "earliest",
    "check.crcs": "false",
    "enable.auto.commit": "true",
    "fetch.max.bytes": "52428800",
    "fetch.min.bytes": "1",
    "group.id": "perf-consumer-1",
    "heartbeat.interval.ms": "3000",
    "isolation.level": "read_uncommitted",
    "max.partition.fetch.bytes": "1048576",
    "max.poll.interval.ms": "300000",
    "session.timeout.ms": "45000",
    "fetch.max.wait.ms": "500",
    "send.buffer.bytes": "131072",
    "receive.buffer.bytes": "65536",
    "request.timeout.ms": "30000",
}


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture
def librdkafka_log() -> Iterator[tuple[logging.Logger, _Collect]]:
    logger = logging.getLogger("tests.client.librdkafka")
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    handler = _Collect()
    logger.addHandler(handler)
    try:
        yield logger, handler
    finally:
        logger.removeHandler(handler)


def _config_warnings(handler: _Collect) -> list[str]:
    return [m for m in handler.messages if m.startswith("CONFWARN")]


def test_props_arguments_split_as_kafkas_read_props() -> None:
    assert parse_props_args(["acks=1", "linger.ms=5", "acks=all"]) == {
        "acks": "all",
        "linger.ms": "5",
    }
    assert parse_props_args(["=x"]) == {"": "x"}
    for bad in ("acks", "acks=", "a=b=c", "==", "a==b"):
        with pytest.raises(ArgumentParserException, match=f"^Invalid property: {bad}$"):
            parse_props_args([bad])


def test_the_worked_example_of_the_producer_mapping() -> None:
    config = librdkafka_producer_config(
        {
            "acks": "1",
            "linger.ms": "20",
            "max.request.size": "2097152",
            "bootstrap.servers": "h:9092",
            "key.serializer": "org.apache.kafka.common.serialization.ByteArraySerializer",
        }
    )
    assert config == {
        "acks": "1",
        "linger.ms": "20",
        "message.max.bytes": "2097152",
        "bootstrap.servers": "h:9092",
        "client.id": "perf-producer-client",
        "batch.size": "16384",
        "queue.buffering.max.kbytes": "32768",
        "delivery.timeout.ms": "120000",
        "max.in.flight.requests.per.connection": "5",
        "enable.idempotence": "false",
    }


def test_idempotence_is_on_unless_the_settings_rule_it_out_as_in_java() -> None:
    def idempotence(**java: str) -> str:
        return librdkafka_producer_config(BOOTSTRAP | java)["enable.idempotence"]

    assert idempotence() == "true"
    assert idempotence(acks="all") == "true"
    assert idempotence(acks="-1") == "true"
    assert idempotence(acks="0") == "false"
    assert idempotence(retries="0") == "false"
    assert idempotence(**{"max.in.flight.requests.per.connection": "6"}) == "false"
    assert idempotence(**{"enable.idempotence": "false"}) == "false"


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        (
            {"acks": "1"},
            "Must set acks to all in order to use the idempotent producer. Otherwise we "
            "cannot guarantee idempotence.",
        ),
        ({"retries": "0"}, "Must set retries to non-zero when using the idempotent producer."),
        (
            {"max.in.flight.requests.per.connection": "10"},
            "Must set max.in.flight.requests.per.connection to at most 5 to use the idempotent "
            "producer.",
        ),
    ],
)
def test_explicit_idempotence_against_its_conditions_is_javas_error(
    setting: dict[str, str], message: str
) -> None:
    with pytest.raises(ClientConfigException) as raised:
        librdkafka_producer_config(BOOTSTRAP | {"enable.idempotence": "true"} | setting)
    assert str(raised.value) == message


def test_buffer_memory_becomes_kib_rounded_up() -> None:
    def kib(value: str) -> str:
        config = librdkafka_producer_config(BOOTSTRAP | {"buffer.memory": value})
        return config["queue.buffering.max.kbytes"]

    assert kib("33554432") == "32768"
    assert kib("1025") == "2"
    assert kib("0") == "1"
    with pytest.raises(ClientConfigException, match=r"Not a number of type LONG"):
        kib("lots")


def test_only_the_chosen_codecs_level_is_kept() -> None:
    levels = {"compression.zstd.level": "7", "compression.gzip.level": "3"}
    zstd = librdkafka_producer_config(BOOTSTRAP | levels | {"compression.type": "zstd"})
    assert zstd["compression.level"] == "7"
    none = librdkafka_producer_config(BOOTSTRAP | levels)
    assert "compression.level" not in none


def test_unknown_keys_are_refused_in_one_line_naming_each() -> None:
    with pytest.raises(ClientConfigException) as one:
        librdkafka_producer_config(BOOTSTRAP | {"max.block.ms": "10"})
    assert str(one.value) == (
        "Unknown producer configuration max.block.ms: not among the Java producer keys this "
        "tool maps to librdkafka"
    )
    with pytest.raises(ClientConfigException) as two:
        librdkafka_producer_config(BOOTSTRAP | {"queue.buffering.max.messages": "1", "x": "y"})
    assert "configurations queue.buffering.max.messages, x:" in str(two.value)
    assert "\n" not in str(two.value)
    with pytest.raises(ClientConfigException, match=r"Unknown consumer configuration linger.ms"):
        librdkafka_consumer_config(BOOTSTRAP | {"linger.ms": "5"})


def test_a_missing_bootstrap_is_the_java_clients_error() -> None:
    with pytest.raises(ClientConfigException) as raised:
        librdkafka_producer_config({"acks": "all"})
    assert str(raised.value) == (
        'Missing required configuration "bootstrap.servers" which has no default value.'
    )
    with pytest.raises(ClientConfigException, match=r"bootstrap.servers"):
        librdkafka_consumer_config({"group.id": "g"})


@pytest.mark.parametrize(
    ("props", "transactional_id", "duration_ms", "named"),
    [
        ({}, "tx-1", None, "--transactional-id tx-1"),
        ({"transactional.id": "tx-2"}, None, None, "transactional.id tx-2"),
        ({}, None, 3000, "--transaction-duration-ms 3000"),
    ],
)
def test_every_way_to_ask_for_transactions_is_refused(
    props: dict[str, str], transactional_id: str | None, duration_ms: int | None, named: str
) -> None:
    with pytest.raises(ArgumentParserException) as raised:
        refuse_transactions(props, transactional_id, duration_ms)
    assert str(raised.value).startswith(f"Transactions are not supported ({named}): ")
    refuse_transactions({"acks": "all"}, None, None)  # no transactions: nothing to refuse


def test_the_consumer_mapping() -> None:
    config, batch = librdkafka_consumer_config(
        BOOTSTRAP
        | {
            "group.id": "g",
            "fetch.max.wait.ms": "100",
            "request.timeout.ms": "20000",
            "max.poll.records": "1000",
            "value.deserializer": "x",
            "partition.assignment.strategy": (
                "org.apache.kafka.clients.consumer.CooperativeStickyAssignor, RangeAssignor"
            ),
        }
    )
    assert config == {
        "bootstrap.servers": UNREACHABLE,
        "group.id": "g",
        "fetch.wait.max.ms": "100",
        "socket.timeout.ms": "20000",
        "client.id": "perf-consumer-client",
        "partition.assignment.strategy": "cooperative-sticky,range",
    }
    assert batch == 1000
    # auto-commit is librdkafka's default, true, as the Java consumer's
    kept, default_batch = librdkafka_consumer_config(BOOTSTRAP | {"enable.auto.commit": "false"})
    assert kept["enable.auto.commit"] == "false"
    assert default_batch == 500
    eager = "org.apache.kafka.clients.consumer.StickyAssignor"
    with pytest.raises(ClientConfigException, match=rf"Invalid value {eager} for configuration"):
        librdkafka_consumer_config(BOOTSTRAP | {"partition.assignment.strategy": eager})
    with pytest.raises(ClientConfigException, match=r"max.poll.records: Value must be at least"):
        librdkafka_consumer_config(BOOTSTRAP | {"max.poll.records": "0"})


def test_the_samples_cover_every_mapped_key() -> None:
    assert set(PRODUCER_SAMPLES) == set(PRODUCER_KEYS)
    assert set(CONSUMER_SAMPLES) == set(CONSUMER_KEYS)
    assert not (PRODUCER_DROPPED & set(PRODUCER_KEYS))
    assert not (CONSUMER_DROPPED & set(CONSUMER_KEYS))


def test_librdkafka_takes_every_mapped_producer_key_as_a_producer_setting(
    librdkafka_log: tuple[logging.Logger, _Collect],
) -> None:
    logger, handler = librdkafka_log
    config = librdkafka_producer_config(PRODUCER_SAMPLES | {"compression.lz4.level": "3"})
    producer = Producer(dict(config, logger=logger, log_level=4))
    producer.poll(0.2)
    producer.flush(0)
    assert _config_warnings(handler) == []
    # the check can fail: a consumer key given to a producer is warned about
    control = Producer(dict(config, logger=logger, log_level=4, **{"fetch.wait.max.ms": "5"}))
    control.poll(0.2)
    assert any("is a consumer property" in m for m in _config_warnings(handler))


def test_librdkafka_takes_every_mapped_consumer_key_as_a_consumer_setting(
    librdkafka_log: tuple[logging.Logger, _Collect],
) -> None:
    logger, handler = librdkafka_log
    config, _ = librdkafka_consumer_config(CONSUMER_SAMPLES)
    consumer = Consumer(dict(config, logger=logger, log_level=4))
    try:
        consumer.poll(0.2)
        assert _config_warnings(handler) == []
    finally:
        consumer.close()
    control = Consumer(dict(config, logger=logger, log_level=4, **{"linger.ms": "5"}))
    try:
        control.poll(0.2)
        # librdkafka names linger.ms by its own name, queue.buffering.max.ms
        assert any("is a producer property" in m for m in _config_warnings(handler))
    finally:
        control.close()


def test_the_java_security_keys_become_librdkafkas() -> None:
    from rackwise.client.librdkafka_security import SecurityConfigError, librdkafka_security

    java = {
        "security.protocol": "sasl_ssl",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule "
        'required username="admin" password="p";',
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": "/c/ca.pem",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": "/c/admin.pem",
        "ssl.key.password": "k",
        "ssl.endpoint.identification.algorithm": "",
    }
    assert librdkafka_security(java) == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "admin",
        "sasl.password": "p",
        "ssl.ca.location": "/c/ca.pem",
        "ssl.key.location": "/c/admin.pem",
        "ssl.certificate.location": "/c/admin.pem",
        "ssl.key.password": "k",
        "ssl.endpoint.identification.algorithm": "none",
    }
    with pytest.raises(SecurityConfigError, match=r"^ssl.truststore.type=JKS: librdkafka reads"):
        librdkafka_security({"ssl.truststore.location": "/c/t.jks"})
    with pytest.raises(SecurityConfigError, match="has no username and password"):
        librdkafka_security({"sasl.jaas.config": "x.PlainLoginModule required;"})
