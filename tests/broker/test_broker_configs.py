"""DescribeConfigs of a broker resource: every key, with its value, source, type, and whether
it is read-only or secret, as Kafka's broker answers it."""

from __future__ import annotations

from typing import Any

import pytest

from rackwise.broker.describe_configs import LISTED_KEYS, describe_configs
from rackwise.controller.broker_configschema import BROKER_CONFIGS
from rackwise.node.data_config import DataPathConfig
from rackwise.records import ConfigRecord
from tests.broker.test_broker_apis import INFO, entries_of, image_of, through_the_wire

THROTTLE = "replica.alter.log.dirs.io.max.bytes.per.second"
DYNAMIC_BROKER, DYNAMIC_DEFAULT, STATIC, DEFAULT = 2, 3, 4, 5
LONG, LIST, PASSWORD, UNKNOWN = 5, 7, 9, 0


def describe(name: str, *records: ConfigRecord, version: int = 4, synonyms: bool = True) -> Any:
    response = through_the_wire(
        describe_configs,
        32,
        version,
        {
            "resources": [{"resource_type": 4, "resource_name": name, "configuration_keys": None}],
            "include_synonyms": synonyms,
        },
        image_of(*records),
    )
    (result,) = response.results
    assert int(result.error_code) == 0
    return entries_of(result)


def broker(name: str, key: str, value: str | None) -> ConfigRecord:
    return ConfigRecord(resource_type=4, resource_name=name, name=key, value=value)


def test_a_broker_lists_every_key_kafka_defines_not_only_its_properties() -> None:
    entries = describe("1")
    assert set(entries) == LISTED_KEYS  # INFO's properties are all Kafka keys
    assert len(entries) > 280
    dirs = entries["log.dirs"]
    assert (dirs.value, dirs.config_source, dirs.read_only, dirs.config_type) == (
        None,
        DEFAULT,
        True,
        LIST,
    )
    rebalance = entries["auto.leader.rebalance.enable"]
    assert (rebalance.value, rebalance.config_source, rebalance.config_type) == ("true", 5, 1)
    assert entries["message.max.bytes"].read_only is False
    assert entries["node.id"].value == "1" and entries["broker.id"].value == "1"
    assert entries["broker.id"].config_source == STATIC  # populated from node.id
    assert "unstable.api.versions.enable" not in entries  # internal


def test_the_throttle_is_listed_once_set_and_is_not_read_only() -> None:
    assert THROTTLE not in describe("1")
    entries = describe("1", broker("", THROTTLE, "10485760"), broker("1", THROTTLE, "100"))
    throttle = entries[THROTTLE]
    assert (throttle.value, throttle.config_source, throttle.read_only, throttle.config_type) == (
        "100",
        DYNAMIC_BROKER,
        False,
        LONG,
    )
    assert [(s.value, s.source) for s in throttle.synonyms] == [
        ("100", DYNAMIC_BROKER),
        ("10485760", DYNAMIC_DEFAULT),
    ]


def test_sources_follow_the_layers_with_kafkas_synonym_chains() -> None:
    entries = describe("1", broker("", "log.retention.ms", "5000"))
    ms = entries["log.retention.ms"]
    assert (ms.value, ms.config_source) == ("5000", DYNAMIC_DEFAULT)
    assert [(s.name, s.source) for s in ms.synonyms] == [
        ("log.retention.ms", DYNAMIC_DEFAULT),
        ("log.retention.hours", STATIC),
        ("log.retention.ms", DEFAULT),
        ("log.retention.minutes", DEFAULT),
        ("log.retention.hours", DEFAULT),
    ]
    # The static hours are hidden by the dynamic ms: the broker holds the default, and the
    # chain from the key's own first entry says STATIC, as Kafka's does.
    hours = entries["log.retention.hours"]
    assert (hours.value, hours.config_source, hours.read_only) == ("168", STATIC, True)
    compression = entries["compression.type"]
    assert (compression.value, compression.config_source) == ("lz4", STATIC)
    assert [(s.name, s.value, s.source) for s in compression.synonyms] == [
        ("compression.type", "lz4", STATIC),
        ("compression.type", "producer", DEFAULT),
    ]


def test_no_synonyms_unless_asked() -> None:
    entries = describe("1", broker("", "log.retention.ms", "5000"), synonyms=False, version=1)
    assert entries["log.retention.ms"].synonyms == ()


def test_secrets_and_keys_of_unknown_type_are_hidden() -> None:
    entries = describe(
        "1",
        broker("1", "listener.name.external.ssl.keystore.password", "s3cret"),
        broker("1", "my.plugin.setting", "visible?"),
    )
    password = entries["ssl.keystore.password"]
    assert (password.value, password.is_sensitive, password.config_type) == (None, True, PASSWORD)
    assert [s.value for s in password.synonyms] == [None, None]
    prefixed = entries["listener.name.external.ssl.keystore.password"]
    assert (prefixed.value, prefixed.is_sensitive, prefixed.read_only) == (None, True, True)
    assert prefixed.config_source == DYNAMIC_BROKER
    custom = entries["my.plugin.setting"]
    assert (custom.value, custom.is_sensitive, custom.config_type) == (None, True, UNKNOWN)


def test_the_cluster_default_lists_only_what_is_set_there() -> None:
    entries = describe(
        "",
        broker("", THROTTLE, " 7 "),
        broker("", "log.dirs", "/ignored"),
        broker("1", "log.retention.ms", "1"),
    )
    assert list(entries) == [THROTTLE]
    throttle = entries[THROTTLE]
    assert (throttle.value, throttle.config_source) == (" 7 ", DYNAMIC_DEFAULT)
    assert [s.source for s in throttle.synonyms] == [DYNAMIC_DEFAULT]


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_every_version_answers_the_broker(version: int) -> None:
    entries = describe("1", version=version)
    assert entries["log.segment.delete.delay.ms"].value == "60000"
    assert BROKER_CONFIGS["log.segment.delete.delay.ms"].default == "60000"
    assert INFO.static_config["compression.type"] == entries["compression.type"].value


def test_the_group_consumer_keys_show_the_defaults_the_coordinator_applies() -> None:
    applied = DataPathConfig.from_properties({})
    entries = describe("1")
    for key, value in (
        ("group.consumer.assignors", ",".join(applied.group_consumer_assignors)),
        ("group.consumer.heartbeat.interval.ms", str(applied.group_consumer_heartbeat_interval_ms)),
        ("group.consumer.session.timeout.ms", str(applied.group_consumer_session_timeout_ms)),
        ("group.consumer.max.size", str(applied.group_consumer_max_size)),
        (
            "group.consumer.leader.rack.change.delay.ms",
            str(applied.group_consumer_leader_rack_change_delay_ms),
        ),
    ):
        entry = entries[key]
        assert (entry.value, entry.config_source, entry.read_only) == (value, DEFAULT, True), key
    assignors = entries["group.consumer.assignors"]
    assert assignors.config_type == LIST
    # Kafka 4's default names its built-in assignors, uniform then range; rackwise's follow
    assert assignors.value.split(",")[:2] == ["uniform", "range"]
    assert entries["group.consumer.heartbeat.interval.ms"].value == "5000"
    assert entries["group.consumer.session.timeout.ms"].value == "45000"
    assert entries["group.consumer.max.size"].value == "2147483647"
