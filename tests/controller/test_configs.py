"""Topic and broker configurations: ConfigRecords, their checks, and DescribeConfigs."""

from __future__ import annotations

from typing import Any

from rackwise.controller import (
    AlterableConfig,
    AlterConfigOp,
    ApiError,
    ConfigSource,
    CreatableTopic,
)
from rackwise.image import ConfigResource
from rackwise.records import ConfigRecord
from rackwise.records.constants import BROKER_RESOURCE, TOPIC_RESOURCE
from tests.controller.helpers import (
    CONTROLLER_ID,
    heartbeat,
    new_controller,
    partitions,
    start_brokers,
)

TOPIC = ConfigResource(TOPIC_RESOURCE, "t")
CLUSTER = ConfigResource(BROKER_RESOURCE, "")
BROKER_1 = ConfigResource(BROKER_RESOURCE, "1")


def _controller(**config: Any) -> Any:
    controller = new_controller(**config)
    start_brokers(controller, [1, 2])
    controller.create_topics([CreatableTopic("t", 1, 1, configs={"cleanup.policy": "delete"})])
    return controller


def _set(name: str, value: str | None, op: AlterConfigOp = AlterConfigOp.SET) -> AlterableConfig:
    return AlterableConfig(name, op, value)


def _values(controller: Any, resource: ConfigResource) -> dict[str, tuple[str | None, int]]:
    (result,) = controller.describe_configs({resource: None})
    assert result.error.is_success, result.error
    return {e.name: (e.value, e.source) for e in result.entries}


def test_incremental_alter_writes_config_records_and_replays() -> None:
    controller = _controller()
    start = controller.end_offset
    results = controller.incremental_alter_configs(
        {
            TOPIC: [
                _set("retention.ms", "60000"),
                _set("cleanup.policy", "compact", AlterConfigOp.APPEND),
                _set("min.insync.replicas", "2"),
                _set("min.insync.replicas", None, AlterConfigOp.DELETE),  # nets to nothing
            ]
        }
    )
    assert [r.error for r in results] == [ApiError()]
    records = [r for b in controller.log.read_from(start) for r in b.records]
    assert records == [
        ConfigRecord(
            resource_type=2, resource_name="t", name="cleanup.policy", value="delete,compact"
        ),
        ConfigRecord(resource_type=2, resource_name="t", name="retention.ms", value="60000"),
    ]
    assert controller.image.topic_configs("t") == {
        "cleanup.policy": "delete,compact",
        "retention.ms": "60000",
    }
    controller.incremental_alter_configs(
        {TOPIC: [_set("cleanup.policy", "delete", AlterConfigOp.SUBTRACT)]}
    )
    assert controller.image.topic_configs("t")["cleanup.policy"] == "compact"


def test_unchanged_topic_values_write_nothing_but_broker_values_always_do() -> None:
    controller = _controller()
    start = controller.end_offset
    controller.incremental_alter_configs({TOPIC: [_set("cleanup.policy", "delete")]})
    assert controller.end_offset == start
    controller.incremental_alter_configs({CLUSTER: [_set("log.retention.hours", "1")]})
    controller.incremental_alter_configs({CLUSTER: [_set("log.retention.hours", "1")]})
    assert controller.end_offset == start + 2


def test_errors_per_resource_with_kafkas_messages() -> None:
    controller = _controller()
    changes = {
        TOPIC: [_set("retention.ms", "-5")],
        ConfigResource(TOPIC_RESOURCE, "missing"): [_set("retention.ms", "5")],
        ConfigResource(TOPIC_RESOURCE, ""): [_set("retention.ms", "5")],
        ConfigResource(TOPIC_RESOURCE, "ok-but-bad-op"): [
            _set("retention.ms", "5", AlterConfigOp.APPEND)
        ],
        ConfigResource(BROKER_RESOURCE, "x"): [_set("a", "b")],
        ConfigResource(BROKER_RESOURCE, "-1"): [_set("a", "b")],
        ConfigResource(BROKER_RESOURCE, "9"): [_set("a", "b")],
        ConfigResource(8, "1"): [_set("a", "b")],
    }
    results = controller.incremental_alter_configs(changes)
    assert [(r.resource.name, r.error.error_code, r.error.message) for r in results] == [
        ("t", 40, "Invalid value -5 for configuration retention.ms: Value must be at least -1"),
        ("missing", 3, "The topic 'missing' does not exist."),
        ("", 42, "Default topic resources are not allowed."),
        ("ok-but-bad-op", 40, "Can't APPEND to key retention.ms because its type is not LIST."),
        ("x", 42, "Unable to parse broker name as a base 10 number."),
        ("-1", 42, "Invalid negative broker ID."),
        ("9", 102, "No node with id 9 found."),
        ("1", 42, "Unknown resource type 8"),
    ]
    assert controller.image.topic_configs("t") == {"cleanup.policy": "delete"}


def test_describe_topic_resolves_override_dynamic_static_default() -> None:
    controller = _controller(static={"log.retention.hours": "2", "log.segment.bytes": "4096"})
    controller.incremental_alter_configs({CLUSTER: [_set("log.segment.bytes", "8192")]})
    values = _values(controller, TOPIC)
    assert values["cleanup.policy"] == ("delete", ConfigSource.TOPIC_CONFIG)
    assert values["segment.bytes"] == ("8192", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
    assert values["retention.ms"] == ("7200000", ConfigSource.STATIC_BROKER_CONFIG)
    assert values["min.insync.replicas"] == ("1", ConfigSource.DEFAULT_CONFIG)
    (only,) = controller.describe_configs({TOPIC: ["retention.ms", "nonsense"]})
    assert [e.name for e in only.entries] == ["retention.ms"]
    (missing,) = controller.describe_configs({ConfigResource(TOPIC_RESOURCE, "nope"): None})
    assert missing.error == ApiError(3, "The topic 'nope' does not exist.")


def test_describe_broker_layers_and_hides_secrets() -> None:
    controller = _controller(static={"broker.rack": "/r1", "ssl.key.password": "hunter2"})
    controller.incremental_alter_configs(
        {CLUSTER: [_set("log.cleaner.threads", "2")], BROKER_1: [_set("log.cleaner.threads", "4")]}
    )
    assert _values(controller, BROKER_1) == {
        "log.cleaner.threads": ("4", ConfigSource.DYNAMIC_BROKER_CONFIG)
    }
    assert _values(controller, CLUSTER) == {
        "log.cleaner.threads": ("2", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
    }
    own = _values(controller, ConfigResource(BROKER_RESOURCE, str(CONTROLLER_ID)))
    assert own["broker.rack"] == ("/r1", ConfigSource.STATIC_BROKER_CONFIG)
    assert own["ssl.key.password"] == (None, ConfigSource.STATIC_BROKER_CONFIG)


def test_legacy_alter_configs_replaces_the_whole_set() -> None:
    controller = _controller()
    results = controller.alter_configs({TOPIC: {"retention.ms": "10"}})
    assert [r.error for r in results] == [ApiError()]
    assert controller.image.topic_configs("t") == {"retention.ms": "10"}


def test_min_insync_replicas_decides_when_fenced_brokers_enter_the_elr() -> None:
    controller = _controller()
    controller.create_topics([CreatableTopic("r3", assignments={0: (1, 2)})])
    controller.incremental_alter_configs(
        {ConfigResource(TOPIC_RESOURCE, "r3"): [_set("min.insync.replicas", "2")]}
    )
    heartbeat(controller, 1, want_fence=True)
    (p,) = partitions(controller.image, "r3")
    assert (p.isr, p.eligible_leader_replicas, p.leader) == ((2,), (1,), 2)


def test_unclean_leader_election_takes_an_out_of_sync_replica() -> None:
    controller = _controller(elr_enabled=False)
    controller.create_topics([CreatableTopic("u", assignments={0: (1, 2)})])
    heartbeat(controller, 1, want_fence=True)  # 1 leaves the ISR, 2 leads
    heartbeat(controller, 1)  # back, but not in sync
    controller.incremental_alter_configs(
        {ConfigResource(TOPIC_RESOURCE, "u"): [_set("unclean.leader.election.enable", "true")]}
    )
    heartbeat(controller, 2, want_fence=True)  # the last in-sync replica goes
    (p,) = partitions(controller.image, "u")
    assert (p.leader, p.isr, p.leader_recovery_state) == (1, (1,), 1)


def test_append_and_subtract_on_broker_keys_need_a_list() -> None:
    controller = _controller()
    results = controller.incremental_alter_configs(
        {
            BROKER_1: [_set("metric.reporters", "a.B", AlterConfigOp.APPEND)],
            CLUSTER: [
                _set("replica.alter.log.dirs.io.max.bytes.per.second", "5", AlterConfigOp.APPEND)
            ],
        }
    )
    assert [r.error for r in results] == [
        ApiError(),
        ApiError(
            40,
            "Can't APPEND to key replica.alter.log.dirs.io.max.bytes.per.second because its "
            "type is not LIST.",
        ),
    ]
    # APPEND starts from the key's default when the resource does not set it.
    assert controller.image.configs[BROKER_1]["metric.reporters"] == (
        "org.apache.kafka.common.metrics.JmxReporter,a.B"
    )
    controller.incremental_alter_configs(
        {
            BROKER_1: [
                _set(
                    "metric.reporters",
                    "org.apache.kafka.common.metrics.JmxReporter",
                    AlterConfigOp.SUBTRACT,
                )
            ]
        }
    )
    assert controller.image.configs[BROKER_1]["metric.reporters"] == "a.B"


def test_legacy_alter_configs_replaces_a_brokers_whole_set() -> None:
    controller = _controller()
    throttle = "replica.alter.log.dirs.io.max.bytes.per.second"
    controller.incremental_alter_configs({BROKER_1: [_set(throttle, "1"), _set("x.y", "2")]})
    results = controller.alter_configs({BROKER_1: {throttle: "3"}})
    assert [r.error for r in results] == [ApiError()]
    assert dict(controller.image.configs[BROKER_1]) == {throttle: "3"}


def test_throttled_replica_lists_are_checked_as_kafka_checks_them() -> None:
    controller = _controller()
    key = "leader.replication.throttled.replicas"
    for good in ("*", "0:1,1:2", " 0:1 , 1:2 ", "0:1,", ""):
        (result,) = controller.incremental_alter_configs({TOPIC: [_set(key, good)]})
        assert result.error.error_code == 0, (good, result.error.message)
    reason = (
        " must be the literal '*' or a list of replicas in the following format: "
        "[partitionId]:[brokerId],[partitionId]:[brokerId],..."
    )
    for bad, shown in (("0:1,x", "[0:1, x]"), ("0", "[0]"), ("*,0:1", "[*, 0:1]")):
        follower = "follower.replication.throttled.replicas"
        (result,) = controller.incremental_alter_configs({TOPIC: [_set(follower, bad)]})
        assert (result.error.error_code, result.error.message) == (
            40,
            f"Invalid value {shown} for configuration {follower}: {follower}{reason}",
        )
    assert controller.image.topic_configs("t")[key] == ""
