"""min.insync.racks against assignments and leaders.preference in the controller's elections:
refusals naming the domains, elections and preferred-leader balancing by preference."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackwise.common.error_codes import INVALID_CONFIG, INVALID_REPLICA_ASSIGNMENT
from rackwise.controller import Controller, CreatableTopic, ManualClock
from rackwise.controller.elections import ElectionType
from rackwise.controller.errors import SUCCESS
from rackwise.controller.messages import (
    AlterableConfig,
    AlterConfigOp,
    CreatePartitionsTopic,
    CreateReplicaPlacementRequest,
    ReassignablePartition,
    ReassignableTopic,
)
from rackwise.image import ConfigResource
from rackwise.records.constants import TOPIC_RESOURCE
from rackwise.topology import parse_leaders_preference
from tests.controller.helpers import check_invariants, heartbeat, new_controller, partitions
from tests.controller.helpers import start_brokers as start
from tests.controller.test_preferred_leaders import _rejoin

RACKS = {1: "/dc1/a", 2: "/dc1/b", 3: "/dc2/a", 4: "/dc2/b"}


def _controller(racks: dict[int, str | None] = RACKS, **changes: Any) -> Controller:
    controller = new_controller(**changes)
    start(controller, racks)
    return controller


def _create(controller: Controller, **topic: Any) -> Any:
    (result,) = controller.create_topics([CreatableTopic("t", **topic)])
    return result.error


def test_create_topics_refuses_an_assignment_in_too_few_domains() -> None:
    controller = _controller()
    error = _create(
        controller, assignments={0: (1, 3), 1: (1, 2)}, configs={"min.insync.racks": "2"}
    )
    assert error.error_code == INVALID_REPLICA_ASSIGNMENT
    assert error.message == (
        "Partition 1 of t has replicas [1, 2] in 1 failure domain(s) at level 1 (/dc1), "
        "fewer than min.insync.racks=2"
    )
    assert controller.image.topic("t") is None


def test_create_topics_refuses_a_config_the_cluster_cannot_meet() -> None:
    controller = _controller({1: "/dc1/a", 2: "/dc1/b", 3: "/dc1/c"})
    error = _create(controller, num_partitions=2, replication_factor=3,
                    configs={"min.insync.racks": "2"})  # fmt: skip
    assert error.error_code == INVALID_CONFIG
    assert "in 1 failure domain(s) at level 1 (/dc1), fewer than min.insync.racks=2" in (
        error.message
    )
    # At level 2 the three racks are three domains.
    configs = {"min.insync.racks": "3", "min.insync.racks.level": "2"}
    assert (
        _create(controller, num_partitions=2, replication_factor=3, configs=configs).error_code == 0
    )


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("min.insync.racks", "0", "Value must be at least 1"),
        ("min.insync.racks", "two", "Not a number of type INT"),
        ("min.insync.racks.level", "-1", "Value must be at least 1"),
        ("leaders.preference", "rack:/dc1", "Expected 'none', 'racks:<path>,...'"),
        ("leaders.preference", "racks:/dc1//a", "bad rack path '/dc1//a'"),
    ],
)
def test_bad_values_are_refused_in_kafkas_words(key: str, value: str, reason: str) -> None:
    error = _create(_controller(), num_partitions=1, replication_factor=2, configs={key: value})
    assert error.error_code == INVALID_CONFIG
    assert error.message.startswith(f"Invalid value {value} for configuration {key}: {reason}")


def test_create_partitions_and_reassignments_keep_the_domains() -> None:
    controller = _controller(replica_placer="multi-level")  # spreads over the data centres
    assert (
        _create(controller, assignments={0: (1, 3)}, configs={"min.insync.racks": "2"}).error_code
        == 0
    )
    (added,) = controller.create_partitions([CreatePartitionsTopic("t", 2, ((2, 1),))])
    assert added.error.error_code == INVALID_REPLICA_ASSIGNMENT
    assert "(/dc1)" in added.error.message
    (placed,) = controller.create_partitions([CreatePartitionsTopic("t", 3)])
    assert placed.error.error_code == 0
    for p in partitions(controller.image, "t"):
        assert {RACKS[b][:4] for b in p.replicas} == {"/dc1", "/dc2"}
    (result,) = controller.alter_partition_reassignments(
        [
            ReassignableTopic(
                "t", (ReassignablePartition(0, (3, 4)), ReassignablePartition(1, (2, 4)))
            )
        ]
    )
    codes = [a.error.error_code for a in result.partitions]
    assert codes == [INVALID_REPLICA_ASSIGNMENT, 0]
    assert "(/dc2)" in result.partitions[0].error.message


def _pinned(preference: str, **changes: Any) -> Controller:
    """t-0 on [3, 1, 2, 4] (its first replica in dc2), pinned to ``preference``."""
    controller = _controller(**changes)
    configs = {"leaders.preference": preference}
    assert _create(controller, assignments={0: (3, 1, 2, 4)}, configs=configs).error_code == 0
    return controller


def test_a_new_partition_is_led_in_the_preferred_domain_and_fails_over_by_preference() -> None:
    controller = _pinned("ordered_racks:/dc1,/dc2")
    assert partitions(controller.image, "t")[0].leader == 1
    assert heartbeat(controller, 1, want_fence=True).is_fenced
    assert partitions(controller.image, "t")[0].leader == 2  # the other dc1 ISR member
    assert heartbeat(controller, 2, want_fence=True).is_fenced
    assert partitions(controller.image, "t")[0].leader == 3  # none left in dc1: dc2
    check_invariants(controller.image)


def test_balancing_brings_leadership_back_to_the_preferred_domain() -> None:
    clock = ManualClock(0)
    controller = _pinned("racks:/dc1", clock=clock, leader_imbalance_check_interval_s=1)
    for broker in (1, 2):
        assert heartbeat(controller, broker, want_fence=True).is_fenced
    assert partitions(controller.image, "t")[0].leader == 3
    # Out of its preference but no replica of dc1 in sync: balanced as it can be.
    assert controller.maybe_balance_partition_leaders(clock() + 10_000) == 0
    for broker in (2, 1):
        assert not heartbeat(controller, broker).is_fenced
    _rejoin(controller, 0)
    clock.advance(1_000)
    assert controller.maybe_balance_partition_leaders() == 1
    assert partitions(controller.image, "t")[0].leader == 1  # first dc1 replica in sync
    assert controller.next_balance_time_ms() is None


def test_elect_leaders_and_a_preference_changed_later() -> None:
    controller = _controller()
    assert _create(controller, assignments={0: (3, 1, 2, 4)}).error_code == 0
    assert partitions(controller.image, "t")[0].leader == 3  # Kafka's first replica
    assert controller.next_balance_time_ms() is None
    change = AlterableConfig("leaders.preference", AlterConfigOp.SET, "racks:/dc1/b")
    (result,) = controller.incremental_alter_configs(
        {ConfigResource(TOPIC_RESOURCE, "t"): [change]}
    )
    assert result.error.error_code == 0
    assert controller.next_balance_time_ms() is not None  # now imbalanced
    ((_, answers),) = controller.elect_leaders(ElectionType.PREFERRED, {"t": [0]})
    assert answers == [(0, 0, None)]
    assert partitions(controller.image, "t")[0].leader == 2
    ((_, again),) = controller.elect_leaders(ElectionType.PREFERRED, {"t": [0]})
    assert again[0][1] == 84  # ELECTION_NOT_NEEDED


def test_alter_configs_refuses_a_rule_the_assignment_cannot_meet() -> None:
    controller = _controller()
    assert _create(controller, assignments={0: (1, 3), 1: (1, 2)}).error_code == 0
    topic = ConfigResource(TOPIC_RESOURCE, "t")
    change = AlterableConfig("min.insync.racks", AlterConfigOp.SET, "2")
    (refused,) = controller.incremental_alter_configs({topic: [change]})
    assert refused.error.error_code == INVALID_CONFIG
    assert refused.error.message == (
        "Partition 1 of t has replicas [1, 2] in 1 failure domain(s) at level 1 (/dc1), "
        "fewer than min.insync.racks=2"
    )
    level = AlterableConfig("min.insync.racks.level", AlterConfigOp.SET, "2")
    (accepted,) = controller.incremental_alter_configs({topic: [change, level]})
    assert accepted.error.error_code == 0  # two racks apart at level 2


def test_create_replica_placement_is_held_to_the_default_rule() -> None:
    controller = _controller(
        {1: "/dc1/a", 2: "/dc1/b", 3: "/dc2/a"},
        static={"min.insync.racks": "2"},
        replica_placer="multi-level",
    )
    two_dcs = controller.create_replica_placement(CreateReplicaPlacementRequest(2, 2))
    assert two_dcs.error.error_code == 0, two_dcs.error
    pinned = CreateReplicaPlacementRequest(1, 2, node_ids=(1, 2))
    refused = controller.create_replica_placement(pinned)
    assert refused.error.error_code == INVALID_CONFIG
    assert refused.error.message == (
        "Partition 0 of the placement has replicas [1, 2] in 1 failure domain(s) at level 1 "
        "(/dc1), fewer than min.insync.racks=2"
    )


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.sampled_from(["/dc1/a", "/dc1/b", "/dc2/a", "/dc3/a"]), min_size=3, max_size=5),
    st.sampled_from(["racks:/dc1", "ordered_racks:/dc1,/dc2", "ordered_racks:/dc3/a,/dc1"]),
    st.data(),
)
def test_after_failures_and_a_balance_run_leaders_are_where_the_preference_says(
    racks: list[str], value: str, data: st.DataObject
) -> None:
    brokers = {b + 1: rack for b, rack in enumerate(racks)}
    clock = ManualClock(0)
    controller = _controller(brokers, clock=clock, leader_imbalance_check_interval_s=1)
    rf = data.draw(st.integers(2, 3))
    rows = {p: tuple(data.draw(st.permutations(sorted(brokers)))[:rf]) for p in range(3)}
    assert _create(controller, assignments=rows, configs={"leaders.preference": value}) == SUCCESS
    preference = parse_leaders_preference(value)
    for broker in data.draw(st.lists(st.sampled_from(sorted(brokers)), max_size=4)):
        fenced = controller.image.brokers[broker].fenced
        heartbeat(controller, broker, want_fence=not fenced)
        if fenced:
            for p in rows:
                _rejoin(controller, p)
        clock.advance(1_000)
        controller.maybe_balance_partition_leaders()
        for p in partitions(controller.image, "t"):
            if p.leader < 0:
                continue
            in_sync = [r for r in preference.order(p.replicas, brokers.get) if r in p.isr]
            assert p.leader == in_sync[0], (p.replicas, p.isr, p.leader)
        check_invariants(controller.image)
