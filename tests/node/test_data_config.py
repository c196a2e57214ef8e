"""The broker's data-path keys: Kafka's names and defaults, bad values refused naming the key,
and each topic's log settings from its overrides, the broker's synonyms and the defaults."""

from __future__ import annotations

import uuid

import pytest

from rackwise.image import MetadataDelta, MetadataImage, replay
from rackwise.node.config import NodeConfig
from rackwise.node.data_config import DataConfigException, DataPathConfig, TopicSettingsSource
from rackwise.node.dynamic_config import DynamicBrokerConfig
from rackwise.node.properties_file import ConfigException
from rackwise.records.metadata import ConfigRecord, TopicRecord


def test_kafka_defaults() -> None:
    config = DataPathConfig.from_properties({})
    assert config.replica_lag_time_max_ms == 30_000
    assert config.replica_fetch_max_bytes == 1_048_576
    assert config.replica_fetch_wait_max_ms == 500
    assert config.num_replica_fetchers == 1
    assert config.auto_create_topics_enable is True
    assert config.replica_selector_class == "org.apache.kafka.common.replica.LeaderSelector"


def test_bad_values_name_the_key() -> None:
    with pytest.raises(
        DataConfigException, match=r"num\.replica\.fetchers: Value must be at least 1"
    ):
        DataPathConfig.from_properties({"num.replica.fetchers": "0"})
    with pytest.raises(DataConfigException, match=r"replica\.lag\.time\.max\.ms: Not a number"):
        DataPathConfig.from_properties({"replica.lag.time.max.ms": "soon"})
    with pytest.raises(DataConfigException, match=r"auto\.create\.topics\.enable"):
        DataPathConfig.from_properties({"auto.create.topics.enable": "maybe"})
    with pytest.raises(DataConfigException, match=r"replica\.selector\.class"):
        DataPathConfig.from_properties({"replica.selector.class": "closest"})


def broker_props(**extra: str) -> dict[str, str]:
    props = {
        "node.id": "1",
        "process.roles": "broker",
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "controller.listener.names": "CONTROLLER",
        "controller.quorum.bootstrap.servers": "127.0.0.1:9093",
        "log.dirs": "/tmp/rackwise-test-data",
    }
    props.update(extra)
    return props


def test_a_broker_accepts_the_keys_and_refuses_bad_values_at_load() -> None:
    config = NodeConfig.from_properties(
        broker_props(**{"replica.selector.class": "multi-level", "log.segment.bytes": "1048576"})
    )
    assert config.properties["replica.selector.class"] == "multi-level"
    with pytest.raises(ConfigException, match=r"replica\.fetch\.wait\.max\.ms"):
        NodeConfig.from_properties(broker_props(**{"replica.fetch.wait.max.ms": "-5"}))


def test_topic_settings_layer_overrides_on_broker_synonyms_on_defaults() -> None:
    topic_id = uuid.uuid4()
    delta = MetadataDelta(MetadataImage())
    delta.replay(TopicRecord(name="orders", topic_id=topic_id))
    delta.replay(
        ConfigRecord(resource_type=2, resource_name="orders", name="retention.ms", value="60000")
    )
    delta.replay(
        ConfigRecord(resource_type=2, resource_name="orders", name="min.insync.replicas", value="2")
    )
    image = delta.apply()
    source = TopicSettingsSource(1, {"log.segment.bytes": "1048576", "log.retention.hours": "1"})
    orders = source(image, "orders")
    assert orders.log_config.segment_bytes == 1_048_576
    assert orders.log_config.retention_ms == 60_000
    assert orders.min_insync_replicas == 2
    other = source(image, "other")
    assert other.log_config.retention_ms == 3_600_000
    assert other.min_insync_replicas == 1
    assert TopicSettingsSource(1, {})(image, "other").log_config.segment_bytes == 1_073_741_824


def test_the_movers_values_follow_the_dynamic_configuration() -> None:
    throttle = "replica.alter.log.dirs.io.max.bytes.per.second"
    static = DataPathConfig.from_properties({"file.delete.delay.ms": "5"})
    assert (static.replica_alter_log_dirs_io_max_bytes_per_second, static.file_delete_delay_ms) == (
        2**63 - 1,
        5,
    )
    assert (
        DataPathConfig.from_properties(
            {"log.segment.delete.delay.ms": "7", "file.delete.delay.ms": "5"}
        ).file_delete_delay_ms
        == 7
    )
    image = replay(
        [
            ConfigRecord(resource_type=4, resource_name="", name=throttle, value="1048576"),
            ConfigRecord(
                resource_type=4, resource_name="", name="log.segment.delete.delay.ms", value="9"
            ),
        ]
    )
    live = static.with_dynamic(DynamicBrokerConfig(1, {"file.delete.delay.ms": "5"}, lambda: image))
    assert (live.replica_alter_log_dirs_io_max_bytes_per_second, live.file_delete_delay_ms) == (
        1_048_576,
        9,
    )
    assert live.replica_lag_time_max_ms == static.replica_lag_time_max_ms


def test_the_consumer_group_keys() -> None:
    config = DataPathConfig.from_properties({})
    assert (
        config.group_consumer_heartbeat_interval_ms,
        config.group_consumer_session_timeout_ms,
    ) == (
        5000,
        45000,
    )
    assert config.group_consumer_assignors[:2] == ("uniform", "range")
    kafka_names = DataPathConfig.from_properties(
        {
            "group.consumer.assignors": (
                "org.apache.kafka.coordinator.group.assignor.RangeAssignor, rack-aware-uniform"
            )
        }
    )
    assert kafka_names.group_consumer_assignors == ("range", "rack-aware-uniform")
    with pytest.raises(
        DataConfigException, match=r"group\.consumer\.assignors: unknown assignor 'sticky'"
    ):
        DataPathConfig.from_properties({"group.consumer.assignors": "uniform,sticky"})
