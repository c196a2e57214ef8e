"""The leader-rack-aware assignors on small groups worked out by hand."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from rackwise.assignors import GroupSpec, Member, PartitionInfo, create_assignor
from rackwise.assignors import properties as props
from rackwise.assignors.racks import leader_rack_changes, partition_racks
from rackwise.common import TopicPartition


def _group(racks: Sequence[Sequence[str | None]], *, prefer: bool = False) -> GroupSpec:
    partitions = [PartitionInfo(tuple(r), has_leader=bool(r)) for r in racks]
    members = (Member("ca", ("t",), rack="a"), Member("cb", ("t",), rack="b"))
    return GroupSpec({"t": partitions}, members, prefer_rack_aware_logic=prefer)


def _names(assignment: dict[str, list[TopicPartition]]) -> dict[str, list[str]]:
    return {m: [str(tp) for tp in parts] for m, parts in assignment.items()}


# Every partition has replicas in both racks, but leaders alternate b, a, b, a.
ALTERNATING = [["b", "a"], ["a", "b"], ["b", "a"], ["a", "b"]]


def test_kip_881_range_sees_no_reason_for_racks_here() -> None:
    # Every partition is on both racks, so KIP-881 keeps plain ranges: two leaders cross racks.
    group = _group(ALTERNATING)
    assignment = create_assignor("range").assign(group)
    assert _names(assignment) == {"ca": ["t-0", "t-1"], "cb": ["t-2", "t-3"]}
    assert props.rack_mismatch_count(group, assignment, leader_only=True) == 2


def test_leader_rack_aware_range_follows_the_leaders() -> None:
    # Leader racks {b}, {a}, {b}, {a}: ca takes the a-led t-1 and t-3, cb the b-led ones.
    group = _group(ALTERNATING)
    assignment = create_assignor("leader-rack-aware-range").assign(group)
    assert _names(assignment) == {"ca": ["t-1", "t-3"], "cb": ["t-0", "t-2"]}
    assert props.rack_mismatch_count(group, assignment, leader_only=True) == 0


def test_leader_rack_aware_cooperative_sticky_follows_the_leaders() -> None:
    # Round robin over [ca, cb] by rack: t-0 (b) -> cb, t-1 (a) -> ca, t-2 (b) -> cb (full),
    # t-3 (a) -> ca (full).
    assignment = create_assignor("leader-rack-aware-cooperative-sticky").assign(_group(ALTERNATING))
    assert _names(assignment) == {"ca": ["t-1", "t-3"], "cb": ["t-0", "t-2"]}


@pytest.mark.parametrize("prefer", [False, True])
@pytest.mark.parametrize(
    "name", ["leader-rack-aware-range", "leader-rack-aware-cooperative-sticky"]
)
def test_balance_comes_before_the_leaders_rack(name: str, prefer: bool) -> None:
    # All four leaders are in rack a; cb must still get two partitions, led from rack a.
    group = _group([["a", "b"]] * 4, prefer=prefer)
    assignment = create_assignor(name).assign(group)
    assert sorted(len(parts) for parts in assignment.values()) == [2, 2]
    assert props.rack_mismatch_count(group, assignment, leader_only=True) == 2


def test_a_partition_without_a_leader_has_no_rack_range() -> None:
    # Racks {a}, {}, {b}, {a}; shares of 2. Rack pass: ca takes t-0, t-3; cb takes t-2.
    # Last pass: cb takes the leaderless t-1.
    group = _group([["a"], [], ["b"], ["a"]])
    assignment = create_assignor("leader-rack-aware-range").assign(group)
    assert _names(assignment) == {"ca": ["t-0", "t-3"], "cb": ["t-1", "t-2"]}


def test_a_partition_without_a_leader_has_no_rack_cooperative_sticky() -> None:
    # Sorted by matching members, t-1 (none) comes first and is left for the last round;
    # t-0 -> ca, t-2 -> cb, t-3 -> ca (full); then t-1 -> cb.
    group = _group([["a"], [], ["b"], ["a"]])
    assignment = create_assignor("leader-rack-aware-cooperative-sticky").assign(group)
    assert _names(assignment) == {"ca": ["t-0", "t-3"], "cb": ["t-2", "t-1"]}


def test_a_leader_broker_without_a_rack_gives_no_leader_rack() -> None:
    info = PartitionInfo((None, "a"))
    assert partition_racks(info, leader_only=True) == frozenset()
    assert partition_racks(info, leader_only=False) == {"a"}
    assert partition_racks(PartitionInfo(("a", "b"), has_leader=False), leader_only=True) == set()


def test_leader_rack_changes_name_the_partitions_whose_leader_moved() -> None:
    before = {"t": [PartitionInfo(("a", "b")), PartitionInfo(("b", "a"))], "u": []}
    after = {
        "t": [PartitionInfo(("b", "a")), PartitionInfo(("b", "c")), PartitionInfo(("a",))],
        "v": [PartitionInfo(("a",))],
    }
    assert leader_rack_changes(before, after) == [TopicPartition("t", 0)]
    leaderless = {"t": [PartitionInfo(("a", "b"), has_leader=False), PartitionInfo(("b", "a"))]}
    assert leader_rack_changes(before, leaderless) == [TopicPartition("t", 0)]
    assert leader_rack_changes(before, before) == []
