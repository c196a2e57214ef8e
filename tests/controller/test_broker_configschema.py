"""The broker key table and Kafka's checks of a dynamic broker change."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rackwise.common.errors import InvalidConfigurationException, InvalidRequestException
from rackwise.controller.broker_configschema import (
    BROKER_CONFIGS,
    UpdateMode,
    broker_key,
    broker_synonyms,
    check_dynamic_change,
    is_list_key,
    is_sensitive,
    merge_layers,
    parse_value,
    usable_dynamic_layer,
)
from rackwise.controller.config import (
    AUTO_LEADER_REBALANCE_ENABLE,
    CONTROLLER_QUORUM_VOTERS,
    DEFAULT_REPLICATION_FACTOR,
    DELETE_TOPIC_ENABLE,
    ELR_ENABLED,
    LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS,
    NUM_PARTITIONS,
)
from rackwise.controller.configschema import TOPIC_CONFIGS
from rackwise.net.limits import MAX_CONNECTIONS_PER_IP, QUEUED_MAX_REQUEST_BYTES
from rackwise.node import config as node_config
from rackwise.node.data_config import DATA_PATH_KEYS

THROTTLE = "replica.alter.log.dirs.io.max.bytes.per.second"
KEY = re.compile(r"[a-z]+(\.[a-z]+)+")


def test_the_table_holds_every_broker_key_rackwise_reads() -> None:
    node_keys = {
        value
        for name, value in vars(node_config).items()
        if name.isupper() and isinstance(value, str) and KEY.fullmatch(value)
    }
    used = {
        *DATA_PATH_KEYS,
        *node_keys,
        AUTO_LEADER_REBALANCE_ENABLE,
        CONTROLLER_QUORUM_VOTERS,
        DEFAULT_REPLICATION_FACTOR,
        DELETE_TOPIC_ENABLE,
        ELR_ENABLED,
        LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS,
        NUM_PARTITIONS,
        MAX_CONNECTIONS_PER_IP,
        QUEUED_MAX_REQUEST_BYTES,
        "broker.replica.placer",
    }
    assert sorted(used - set(BROKER_CONFIGS)) == []
    assert len(BROKER_CONFIGS) > 300
    # Every topic key's broker-level synonym is a broker key.
    synonyms = {s for key in TOPIC_CONFIGS.values() for s, _ in key.synonyms}
    assert sorted(synonyms - set(BROKER_CONFIGS)) == []


@pytest.mark.parametrize(
    ("name", "kind", "default", "mode"),
    [
        (THROTTLE, "LONG", str(2**63 - 1), UpdateMode.CLUSTER_WIDE),
        ("num.replica.alter.log.dirs.threads", "INT", None, UpdateMode.READ_ONLY),
        ("log.segment.delete.delay.ms", "LONG", "60000", UpdateMode.CLUSTER_WIDE),
        ("log.dirs", "LIST", None, UpdateMode.READ_ONLY),
        ("log.retention.hours", "INT", "168", UpdateMode.READ_ONLY),
        ("log.retention.ms", "LONG", None, UpdateMode.CLUSTER_WIDE),
        ("ssl.keystore.password", "PASSWORD", None, UpdateMode.PER_BROKER),
        ("max.connections", "INT", str(2**31 - 1), UpdateMode.CLUSTER_WIDE),
        ("message.max.bytes", "INT", "1048588", UpdateMode.CLUSTER_WIDE),
        ("num.io.threads", "INT", "8", UpdateMode.CLUSTER_WIDE),
        (
            "listener.security.protocol.map",
            "STRING",
            "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT",
            UpdateMode.PER_BROKER,
        ),
        (
            "metric.reporters",
            "LIST",
            "org.apache.kafka.common.metrics.JmxReporter",
            UpdateMode.CLUSTER_WIDE,
        ),
    ],
)
def test_keys_have_kafkas_type_default_and_update_mode(
    name: str, kind: str, default: str | None, mode: UpdateMode
) -> None:
    key = BROKER_CONFIGS[name]
    assert (key.type, key.default, key.mode) == (kind, default, mode)


def test_flags_of_special_keys() -> None:
    assert BROKER_CONFIGS[THROTTLE].is_dynamic_only
    assert BROKER_CONFIGS["unstable.api.versions.enable"].is_internal
    assert not BROKER_CONFIGS["node.id"].has_default
    assert BROKER_CONFIGS["broker.replica.placer"].is_rackwise
    assert "zookeeper.connect" not in BROKER_CONFIGS
    assert "log.message.format.version" not in BROKER_CONFIGS


@pytest.mark.parametrize(
    ("props", "per_broker", "message"),
    [
        ({"log.dirs": "/x"}, True, "Cannot update these configs dynamically: Set(log.dirs)"),
        (
            {"log.dirs": "/x", "node.id": "2"},
            False,
            "Cannot update these configs dynamically: Set(log.dirs, node.id)",
        ),
        (
            {THROTTLE: "-1"},
            True,
            f"Invalid value -1 for configuration {THROTTLE}: Value must be at least 0",
        ),
        (
            {THROTTLE: "fast"},
            False,
            f"Invalid value fast for configuration {THROTTLE}: Not a number of type LONG",
        ),
        (
            {"num.io.threads": "2147483648"},
            False,
            "Invalid value 2147483648 for configuration num.io.threads: Not a number of type INT",
        ),
        (
            {"log.cleaner.min.cleanable.ratio": "1.5"},
            False,
            "Invalid value 1.5 for configuration log.cleaner.min.cleanable.ratio: "
            "Value must be no more than 1",
        ),
        (
            {"log.cleanup.policy": "compact,shred"},
            False,
            "Invalid value compact,shred for configuration log.cleanup.policy: "
            "String must be one of: compact, delete",
        ),
        (
            {"log.preallocate": "yes"},
            False,
            "Invalid value yes for configuration log.preallocate: "
            "Expected value to be either true or false",
        ),
        (
            {"ssl.keystore.password": "x"},
            True,
            "These security configs can be dynamically updated only per-listener using the "
            "listener prefix: Set(ssl.keystore.password)",
        ),
        (
            {"sasl.enabled.mechanisms": "PLAIN"},
            False,
            "Cannot update these configs at default cluster level, broker id must be "
            "specified: Set(sasl.enabled.mechanisms)",
        ),
        (
            {"listener.name.external.ssl.keystore.location": "/k"},
            False,
            "Cannot update these configs at default cluster level, broker id must be "
            "specified: Set(listener.name.external.ssl.keystore.location)",
        ),
        (
            {"broker.replica.placer": "multi-level"},
            True,
            "Cannot update these configs dynamically: Set(broker.replica.placer)",
        ),
    ],
)
def test_refused_changes_carry_kafkas_message(
    props: dict[str, str], per_broker: bool, message: str
) -> None:
    with pytest.raises(InvalidRequestException) as caught:
        check_dynamic_change(props, per_broker)
    assert caught.value.error_code == 42
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("props", "per_broker"),
    [
        ({THROTTLE: "10485760"}, True),
        ({THROTTLE: "0"}, False),
        ({"log.retention.ms": "1000", "log.cleanup.policy": "compact, delete"}, False),
        ({"listener.name.external.ssl.keystore.location": "/k"}, True),
        ({"listener.name.external.max.connections": "10"}, False),
        ({"my.own.plugin.key": "anything"}, False),
        ({}, False),
    ],
)
def test_accepted_changes(props: dict[str, str], per_broker: bool) -> None:
    check_dynamic_change(props, per_broker)


@given(st.integers(min_value=0, max_value=2**63 - 1), st.text(alphabet=" \t", max_size=2))
def test_a_long_in_range_parses_to_itself(number: int, pad: str) -> None:
    assert parse_value(THROTTLE, f"{pad}{number}{pad}") == str(number)


@given(st.integers().filter(lambda n: n < 0 or n >= 2**63))
def test_a_long_out_of_range_is_refused(number: int) -> None:
    with pytest.raises(InvalidConfigurationException):
        parse_value(THROTTLE, str(number))


def test_values_are_normalised_as_kafka_parses_them() -> None:
    assert parse_value("log.cleanup.policy", " compact , delete ") == "compact,delete"
    assert parse_value("auto.create.topics.enable", "TRUE") == "true"
    assert parse_value("log.cleaner.io.buffer.load.factor", "0.75") == "0.75"
    assert parse_value("no.such.key", " kept ") == " kept "


def test_synonyms_and_listener_overrides() -> None:
    assert broker_synonyms("log.retention.hours", match_listener_override=False) == [
        "log.retention.ms",
        "log.retention.minutes",
        "log.retention.hours",
    ]
    assert broker_synonyms("log.flush.interval.ms", match_listener_override=False) == [
        "log.flush.interval.ms",
        "log.flush.scheduler.interval.ms",
    ]
    assert broker_synonyms(
        "listener.name.ext.plain.sasl.jaas.config", match_listener_override=True
    ) == ["listener.name.ext.plain.sasl.jaas.config", "sasl.jaas.config"]
    key = broker_key("listener.name.ext.ssl.keystore.password")
    assert key is not None and key.name == "ssl.keystore.password"
    assert is_sensitive("listener.name.ext.ssl.keystore.password")
    assert is_sensitive("my.own.plugin.key")
    assert not is_sensitive("log.dirs")


def test_a_higher_layer_hides_the_synonyms_below() -> None:
    merged = merge_layers(
        {"log.retention.hours": "1", "log.roll.ms": "5"},
        {"log.retention.ms": "5000"},
        {"log.roll.hours": "2"},
    )
    assert merged == {"log.retention.ms": "5000", "log.roll.hours": "2"}


def test_stored_values_kafka_would_not_apply_are_left_out() -> None:
    stored = {
        THROTTLE: "100",
        "log.dirs": "/x",
        "num.io.threads": "zero",
        "sasl.enabled.mechanisms": "PLAIN",
        "ssl.keystore.password": "x",
        "my.own.plugin.key": "v",
    }
    assert usable_dynamic_layer(stored, per_broker=False) == {
        THROTTLE: "100",
        "my.own.plugin.key": "v",
    }
    assert usable_dynamic_layer(stored, per_broker=True) == {
        THROTTLE: "100",
        "sasl.enabled.mechanisms": "PLAIN",
        "my.own.plugin.key": "v",
    }


def test_only_list_keys_take_append_and_subtract() -> None:
    assert is_list_key("metric.reporters")
    assert not is_list_key(THROTTLE)
    with pytest.raises(InvalidConfigurationException, match="Unknown config name: nope"):
        is_list_key("nope")
