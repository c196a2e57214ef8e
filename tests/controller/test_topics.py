"""CreateTopics, CreatePartitions and DeleteTopics: records, replay, and Kafka's errors."""

from __future__ import annotations

import random
import uuid
from typing import Any

import pytest

from rackwise.common import JavaRandom
from rackwise.controller import (
    USE_DEFAULT,
    ApiError,
    Controller,
    CreatableTopic,
    CreatePartitionsTopic,
    PolicyViolationException,
    TopicDeletionDisabledException,
    TopicPolicyRequest,
)
from rackwise.controller.messages import ConfigSource
from rackwise.image import ConfigResource
from rackwise.placement import BrokerInfo, ClusterView, PlacementSpec, create_placer
from rackwise.records import ConfigRecord, PartitionRecord, TopicRecord
from rackwise.records.constants import TOPIC_RESOURCE
from tests.controller.helpers import (
    check_invariants,
    heartbeat,
    log_dir,
    new_controller,
    partitions,
    registration,
    start_brokers,
)


def _ready(brokers: Any = (1, 2, 3), **config: Any) -> Controller:
    controller = new_controller(**config)
    start_brokers(controller, brokers)
    return controller


def _errors(results: list[Any]) -> dict[str, tuple[int, str | None]]:
    return {r.name: (r.error.error_code, r.error.message) for r in results}


def _records_after(controller: Controller, offset: int) -> list[Any]:
    return [r for b in controller.log.read_from(offset) for r in b.records]


# ---- CreateTopics ---------------------------------------------------------------------------


def test_create_topic_writes_topic_then_configs_then_partitions() -> None:
    controller = _ready()
    start = controller.end_offset
    (result,) = controller.create_topics(
        [CreatableTopic("orders", 3, 2, configs={"retention.ms": "1000"})]
    )
    assert result.error.is_success
    assert (result.num_partitions, result.replication_factor) == (3, 2)
    records = _records_after(controller, start)
    assert records[0] == TopicRecord(name="orders", topic_id=result.topic_id)
    assert records[1] == ConfigRecord(
        resource_type=TOPIC_RESOURCE, resource_name="orders", name="retention.ms", value="1000"
    )
    assert [type(r) for r in records[2:]] == [PartitionRecord] * 3
    topic = controller.image.topic("orders")
    assert topic is not None and topic.topic_id == result.topic_id
    for p in partitions(controller.image, "orders"):
        assert len(p.replicas) == 2 and p.isr == p.replicas and p.leader == p.replicas[0]
        assert (p.leader_epoch, p.partition_epoch) == (0, 0)
        assert p.directories == tuple(log_dir(b) for b in p.replicas)
    assert controller.image.topic_configs("orders") == {"retention.ms": "1000"}
    configs = {c.name: c for c in result.configs}
    assert configs["retention.ms"].value == "1000"
    assert configs["retention.ms"].source == ConfigSource.TOPIC_CONFIG
    assert configs["cleanup.policy"].source == ConfigSource.DEFAULT_CONFIG


def test_placement_goes_through_the_configured_placer() -> None:
    controller = _ready((1, 2, 3, 4), replica_placer="rack-unaware", seed=11)
    (result,) = controller.create_topics([CreatableTopic("t", 6, 3)])
    assert result.error.is_success
    # The same placer with the same draws: the controller seeds it with 48 bits of its source.
    placer = create_placer("rack-unaware", random=JavaRandom(random.Random(11).getrandbits(48)))
    view = ClusterView([BrokerInfo(b) for b in (1, 2, 3, 4)])
    expected = placer.place(PlacementSpec(6, 3, topic="t"), view)
    assert [list(p.replicas) for p in partitions(controller.image, "t")] == expected


def test_defaults_come_from_the_config() -> None:
    controller = _ready(num_partitions=4, default_replication_factor=2)
    (result,) = controller.create_topics([CreatableTopic("t")])
    assert (result.num_partitions, result.replication_factor) == (4, 2)


def test_validate_only_writes_nothing() -> None:
    controller = _ready()
    before = controller.end_offset
    (result,) = controller.create_topics([CreatableTopic("t", 2, 2)], validate_only=True)
    assert result.error.is_success and result.num_partitions == 2
    assert controller.end_offset == before and controller.image.topic("t") is None


def test_one_error_per_topic_with_kafkas_codes_and_messages() -> None:
    controller = _ready()
    controller.create_topics([CreatableTopic("taken", 1, 1), CreatableTopic("a.b", 1, 1)])
    topics = [
        CreatableTopic("ok", 1, 1),
        CreatableTopic("taken", 1, 1),
        CreatableTopic("", 1, 1),
        CreatableTopic("..", 1, 1),
        CreatableTopic("x" * 250, 1, 1),
        CreatableTopic("sp ace", 1, 1),
        CreatableTopic("a_b", 1, 1),
        CreatableTopic("dup", 1, 1),
        CreatableTopic("dup", 2, 1),
        CreatableTopic("__cluster_metadata", 1, 1),
        CreatableTopic("zero-partitions", 0, 1),
        CreatableTopic("zero-rf", 1, 0),
        CreatableTopic("rf-too-big", 1, 4),
        CreatableTopic("null-config", 1, 1, configs={"retention.ms": None}),
        CreatableTopic("bad-config", 1, 1, configs={"retention.ms": "soon"}),
        CreatableTopic("unknown-config", 1, 1, configs={"colour": "blue"}),
    ]
    errors = _errors(controller.create_topics(topics))
    long_name = "x" * 250
    assert errors == {
        "ok": (0, None),
        "taken": (36, "Topic 'taken' already exists."),
        "": (17, "Topic name is invalid: the empty string is not allowed"),
        "..": (17, "Topic name is invalid: '..' is not allowed"),
        long_name: (
            17,
            f"Topic name is invalid: the length of '{long_name}' is longer than the max "
            "allowed length 249",
        ),
        "sp ace": (
            17,
            "Topic name is invalid: 'sp ace' contains one or more characters other than "
            "ASCII alphanumerics, '.', '_' and '-'",
        ),
        "a_b": (17, "Topic 'a_b' collides with existing topic: a.b"),
        "dup": (42, "Duplicate topic name."),
        "__cluster_metadata": (42, "Creation of internal topic __cluster_metadata is prohibited."),
        "zero-partitions": (37, "Number of partitions was set to an invalid non-positive value."),
        "zero-rf": (
            38,
            "Replication factor must be larger than 0, or -1 to use the default value.",
        ),
        "rf-too-big": (
            38,
            "Unable to replicate the partition 4 time(s): The target replication factor of 4 "
            "cannot be reached because only 3 broker(s) are registered.",
        ),
        "null-config": (40, "Null value not supported for topic configs: retention.ms"),
        "bad-config": (
            40,
            "Invalid value soon for configuration retention.ms: Not a number of type LONG",
        ),
        "unknown-config": (40, "Unknown topic config name: colour"),
    }
    assert set(controller.image.topics_by_name) == {"taken", "a.b", "ok"}


def test_a_249_character_name_is_fine() -> None:
    controller = _ready()
    (result,) = controller.create_topics([CreatableTopic("y" * 249, 1, 1)])
    assert result.error.is_success


def test_manual_assignments_and_their_errors() -> None:
    controller = _ready((1, 2, 3, 4))
    good = CreatableTopic("manual", assignments={0: (3, 1), 1: (1, 4)})
    cases = {
        "rf-set": CreatableTopic("rf-set", USE_DEFAULT, 2, assignments={0: (1, 2)}),
        "count-set": CreatableTopic("count-set", 1, USE_DEFAULT, assignments={0: (1, 2)}),
        "unknown": CreatableTopic("unknown", assignments={0: (1, 9)}),
        "twice": CreatableTopic("twice", assignments={0: (2, 2)}),
        "empty": CreatableTopic("empty", assignments={0: ()}),
        "uneven": CreatableTopic("uneven", assignments={0: (1, 2), 1: (3,)}),
        "gap": CreatableTopic("gap", assignments={0: (1, 2), 2: (2, 3)}),
    }
    errors = _errors(controller.create_topics([good, *cases.values()]))
    assert errors == {
        "manual": (0, None),
        "rf-set": (
            42,
            "A manual partition assignment was specified, but replication factor was not set "
            "to -1.",
        ),
        "count-set": (
            42,
            "A manual partition assignment was specified, but numPartitions was not set to -1.",
        ),
        "unknown": (
            39,
            "The manual partition assignment includes broker 9, but no such broker is registered.",
        ),
        "twice": (39, "The manual partition assignment includes the broker 2 more than once."),
        "empty": (39, "The manual partition assignment includes an empty replica list."),
        "uneven": (
            39,
            "The manual partition assignment includes a partition with 1 replica(s), but this "
            "is not consistent with previous partitions, which have 2 replica(s).",
        ),
        "gap": (39, "partitions should be a consecutive 0-based integer sequence"),
    }
    assert [p.replicas for p in partitions(controller.image, "manual")] == [(3, 1), (1, 4)]


def test_fenced_brokers_get_no_replica_unless_needed() -> None:
    controller = new_controller(seed=3)
    start_brokers(controller, {1: "/a", 2: "/a"})
    controller.register_broker(registration(3, "/b"))  # registered, still fenced
    controller.create_topics([CreatableTopic("two", 12, 2)])
    assert all(3 not in p.replicas for p in partitions(controller.image, "two"))
    controller.create_topics([CreatableTopic("three", 6, 3)])
    for p in partitions(controller.image, "three"):
        assert 3 in p.replicas and p.leader != 3 and 3 not in p.isr
    check_invariants(controller.image)
    controller.create_topics([CreatableTopic("pinned", assignments={0: (3, 1)})])
    (p,) = partitions(controller.image, "pinned")
    assert (p.replicas, p.isr, p.leader) == ((3, 1), (1,), 1)
    errors = _errors(
        controller.create_topics([CreatableTopic("all-fenced", assignments={0: (3,)})])
    )
    assert errors["all-fenced"] == (
        39,
        "All brokers specified in the manual partition assignment for partition 0 are fenced "
        "or in controlled shutdown.",
    )


def test_no_unfenced_broker_at_all() -> None:
    controller = new_controller()
    controller.register_broker(registration(1))
    errors = _errors(controller.create_topics([CreatableTopic("t", 1, 1)]))
    assert errors["t"] == (
        38,
        "Unable to replicate the partition 1 time(s): All brokers are currently fenced.",
    )


def test_multi_level_placer_spreads_over_data_centres() -> None:
    racks = {b: f"/dc{b % 3}/r{b % 2}" for b in range(12)}
    controller = new_controller(replica_placer="multi-level")
    start_brokers(controller, racks)
    controller.create_topics([CreatableTopic("spread", 12, 3)])
    for p in partitions(controller.image, "spread"):
        assert len({racks[b].split("/")[1] for b in p.replicas}) == 3


def test_create_topic_policy_refuses_with_policy_violation() -> None:
    seen: list[TopicPolicyRequest] = []

    class NoSmallTopics:
        def validate(self, request: TopicPolicyRequest) -> None:
            seen.append(request)
            if request.num_partitions is not None and request.num_partitions < 3:
                raise PolicyViolationException(f"{request.topic} needs 3 partitions")

    controller = _ready(create_topic_policy=NoSmallTopics())
    errors = _errors(
        controller.create_topics([CreatableTopic("small", 2, 1), CreatableTopic("big", 3, 1)])
    )
    assert errors == {"small": (44, "small needs 3 partitions"), "big": (0, None)}
    assert seen[0] == TopicPolicyRequest("small", 2, 1, None, {})


def test_a_request_of_too_many_records_is_refused_whole() -> None:
    controller = _ready()
    before = controller.end_offset
    with pytest.raises(PolicyViolationException, match="excessively large batch"):
        controller.create_topics([CreatableTopic("huge", 10_000, 1)])
    assert controller.end_offset == before and controller.image.topic("huge") is None


# ---- CreatePartitions -----------------------------------------------------------------------


def test_create_partitions_continues_the_topic() -> None:
    controller = _ready((1, 2, 3, 4), replica_placer="rack-unaware")
    controller.create_topics([CreatableTopic("t", 2, 3)])
    (result,) = controller.create_partitions([CreatePartitionsTopic("t", 5)])
    assert result.error.is_success
    added = partitions(controller.image, "t")
    assert [p.partition_id for p in added] == [0, 1, 2, 3, 4]
    assert all(len(p.replicas) == 3 and p.isr == p.replicas for p in added)
    (manual,) = controller.create_partitions([CreatePartitionsTopic("t", 6, ((4, 1, 2),))])
    assert manual.error.is_success
    assert partitions(controller.image, "t")[5].replicas == (4, 1, 2)


def test_create_partitions_errors() -> None:
    controller = _ready()
    controller.create_topics([CreatableTopic("t", 2, 2)])
    requests = [
        CreatePartitionsTopic("missing", 3),
        CreatePartitionsTopic("t", 2),
        CreatePartitionsTopic("t", 1),
    ]
    results = [controller.create_partitions([r])[0].error for r in requests]
    assert results == [
        ApiError(3, "This server does not host this topic-partition."),
        ApiError(37, "Topic already has 2 partition(s)."),
        ApiError(37, "The topic t currently has 2 partition(s); 1 would not be an increase."),
    ]
    (short,) = controller.create_partitions([CreatePartitionsTopic("t", 4, ((1, 2),))])
    assert short.error == ApiError(
        39, "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified."
    )
    (uneven,) = controller.create_partitions([CreatePartitionsTopic("t", 3, ((1, 2, 3),))])
    assert uneven.error.error_code == 39 and "which have 2 replica(s)" in str(uneven.error.message)
    dup = controller.create_partitions(
        [CreatePartitionsTopic("t", 3), CreatePartitionsTopic("t", 4)]
    )
    assert [r.error for r in dup] == [ApiError(42, "Duplicate topic name.")]
    (checked,) = controller.create_partitions([CreatePartitionsTopic("t", 3)], validate_only=True)
    assert checked.error.is_success and len(partitions(controller.image, "t")) == 2


# ---- DeleteTopics ---------------------------------------------------------------------------


def test_delete_topics_by_name_and_id() -> None:
    controller = _ready()
    made = controller.create_topics(
        [CreatableTopic(n, 1, 1, configs={"retention.ms": "5"}) for n in ("a", "b", "c")]
    )
    ids = {r.name: r.topic_id for r in made}
    results = controller.delete_topics(names=["a", "nope"], topic_ids=[ids["b"], uuid.UUID(int=77)])
    by_key = {(r.name, r.topic_id): r.error for r in results}
    assert by_key == {
        ("a", ids["a"]): ApiError(),
        ("b", ids["b"]): ApiError(),
        ("nope", uuid.UUID(int=0)): ApiError(3, "This server does not host this topic-partition."),
        (None, uuid.UUID(int=77)): ApiError(100, "This server does not host this topic ID."),
    }
    assert set(controller.image.topics_by_name) == {"c"}
    assert ConfigResource(TOPIC_RESOURCE, "a") not in controller.image.configs


def test_delete_topics_duplicates_and_name_id_clash() -> None:
    controller = _ready()
    (made,) = controller.create_topics([CreatableTopic("a", 1, 1)])
    results = controller.delete_topics(names=["x", "x", "a"], topic_ids=[made.topic_id])
    errors = sorted((str(r.name), r.error.error_code, r.error.message) for r in results)
    assert errors == [
        ("a", 42, "The provided topic name maps to an ID that was already supplied."),
        ("x", 42, "Duplicate topic name."),
    ]
    assert controller.image.topic("a") is not None


def test_topic_deletion_can_be_disabled() -> None:
    controller = _ready(delete_topic_enable=False)
    with pytest.raises(TopicDeletionDisabledException) as caught:
        controller.delete_topics(names=["a"])
    assert caught.value.error_code == 73


def test_deleted_partitions_leave_the_index() -> None:
    controller = _ready()
    controller.create_topics([CreatableTopic("gone", assignments={0: (1, 2)})])
    index = controller.state.partition_index
    assert index.partitions_with_isr(1)
    controller.delete_topics(names=["gone"])
    assert index.partitions_with_isr(1) == [] and index.leaderless_partitions() == []
    heartbeat(controller, 1, want_fence=True)  # nothing left to change
    assert controller.image.brokers[1].fenced
