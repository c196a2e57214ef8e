"""A broker's live configuration: the layers of its image and its properties, and the
callbacks told of each change."""

from __future__ import annotations

import logging

import pytest

from rackwise.image import MetadataImage, replay
from rackwise.node.dynamic_config import DynamicBrokerConfig, static_layer
from rackwise.records import ConfigRecord

THROTTLE = "replica.alter.log.dirs.io.max.bytes.per.second"
NO_THROTTLE = 2**63 - 1


def record(name: str, key: str, value: str | None) -> ConfigRecord:
    return ConfigRecord(resource_type=4, resource_name=name, name=key, value=value)


class Images:
    """A broker's metadata image that the test moves on, one record at a time."""

    def __init__(self) -> None:
        self.records: list[ConfigRecord] = []
        self.image: MetadataImage = replay([])

    def apply(self, *records: ConfigRecord) -> None:
        self.records.extend(records)
        self.image = replay(self.records)

    def __call__(self) -> MetadataImage:
        return self.image


def test_the_most_specific_layer_wins_and_a_delete_brings_the_next_back() -> None:
    images = Images()
    config = DynamicBrokerConfig(1, {"node.id": "1"}, images)
    assert config.replica_alter_log_dirs_io_max_bytes_per_second == NO_THROTTLE
    images.apply(record("", THROTTLE, "10485760"))
    assert config.replica_alter_log_dirs_io_max_bytes_per_second == 10485760
    images.apply(record("1", THROTTLE, "52428800"), record("2", THROTTLE, "1"))
    assert config.replica_alter_log_dirs_io_max_bytes_per_second == 52428800
    images.apply(record("1", THROTTLE, None))
    assert config.replica_alter_log_dirs_io_max_bytes_per_second == 10485760
    images.apply(record("", THROTTLE, None))
    assert config.replica_alter_log_dirs_io_max_bytes_per_second == NO_THROTTLE


def test_static_properties_sit_under_the_dynamic_values() -> None:
    images = Images()
    config = DynamicBrokerConfig(1, {THROTTLE: " 1000 ", "log.retention.hours": "1"}, images)
    assert config.replica_alter_log_dirs_io_max_bytes_per_second == 1000
    assert config.value("log.retention.hours") == "1"
    images.apply(record("", "log.retention.ms", "5000"))
    # A dynamic log.retention.ms hides the static hours, which fall back to the default.
    assert (config.value("log.retention.ms"), config.value("log.retention.hours")) == (
        "5000",
        "168",
    )
    assert config.value("log.roll.ms") is None


def test_values_kafka_would_ignore_are_ignored() -> None:
    images = Images()
    config = DynamicBrokerConfig(1, {}, images)
    images.apply(record("1", THROTTLE, "fast"), record("", "log.dirs", "/elsewhere"))
    assert config.replica_alter_log_dirs_io_max_bytes_per_second == NO_THROTTLE
    assert config.value("log.dirs") is None


def test_file_delete_delay_is_the_brokers_segment_delete_delay() -> None:
    images = Images()
    assert DynamicBrokerConfig(1, {}, images).file_delete_delay_ms == 60_000
    assert DynamicBrokerConfig(1, {"file.delete.delay.ms": "5"}, images).file_delete_delay_ms == 5
    config = DynamicBrokerConfig(1, {"log.segment.delete.delay.ms": "7"}, images)
    assert config.file_delete_delay_ms == 7
    images.apply(record("", "log.segment.delete.delay.ms", "9"))
    assert config.file_delete_delay_ms == 9


def test_callbacks_hear_of_each_change_once() -> None:
    images = Images()
    config = DynamicBrokerConfig(1, {}, images)
    heard: list[frozenset[str]] = []
    unsubscribe = config.on_change(heard.append)
    assert config.refresh() == frozenset()
    images.apply(record("", THROTTLE, "100"), record("", "log.retention.ms", "1"))
    assert config.refresh() == {THROTTLE, "log.retention.ms"}
    assert config.refresh() == frozenset()
    images.apply(record("1", THROTTLE, "100"))  # same value, more specific: no change
    config.refresh()
    images.apply(record("1", THROTTLE, "200"))
    config.refresh()
    unsubscribe()
    images.apply(record("1", THROTTLE, None))
    assert config.refresh() == {THROTTLE}
    assert heard == [{THROTTLE, "log.retention.ms"}, {THROTTLE}]


def test_a_failing_callback_does_not_stop_the_others(caplog: pytest.LogCaptureFixture) -> None:
    images = Images()
    config = DynamicBrokerConfig(1, {}, images)
    heard: list[frozenset[str]] = []

    def broken(_keys: frozenset[str]) -> None:
        raise RuntimeError("boom")

    config.on_change(broken)
    config.on_change(heard.append)
    images.apply(record("", THROTTLE, "1"))
    with caplog.at_level(logging.ERROR, logger="rackwise.node.dynamic_config"):
        config.refresh()
    assert heard == [{THROTTLE}]
    assert "a dynamic configuration callback failed" in caplog.text


def test_layers_are_computed_once_per_image() -> None:
    images = Images()
    config = DynamicBrokerConfig(1, {}, images)
    first = config.layers()
    assert config.layers() is first
    images.apply(record("", THROTTLE, "1"))
    assert config.layers() is not first


def test_node_id_and_broker_id_stand_for_each_other() -> None:
    assert static_layer({"node.id": "3"})["broker.id"] == "3"
    assert static_layer({"broker.id": "4"})["node.id"] == "4"
    assert static_layer({"node.id": "3", "broker.id": "3"}) == {"node.id": "3", "broker.id": "3"}
