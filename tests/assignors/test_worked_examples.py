"""The worked examples of the assignor modules' documentation, run."""

from __future__ import annotations

from rackwise.assignors import GroupSpec, Member, PartitionInfo, create_assignor
from rackwise.assignors.sticky import CooperativeStickyPartitionAssignor
from rackwise.common import TopicPartition


def _t(*partitions: int) -> tuple[TopicPartition, ...]:
    return tuple(TopicPartition("t", p) for p in partitions)


def _names(assignment: dict[str, list[TopicPartition]]) -> dict[str, list[str]]:
    return {m: [str(tp) for tp in parts] for m, parts in assignment.items()}


def _plain(count: int) -> list[PartitionInfo]:
    return [PartitionInfo(("x",)) for _ in range(count)]


def test_range_example() -> None:
    racks = [PartitionInfo((r,)) for r in "abab"]
    members = (Member("c0", ("t",), rack="a"), Member("c1", ("t",), rack="b"))
    assert _names(create_assignor("range").assign(GroupSpec({"t": racks}, members))) == {
        "c0": ["t-0", "t-2"],
        "c1": ["t-1", "t-3"],
    }
    no_racks = tuple(Member(m.member_id, m.topics) for m in members)
    assert _names(create_assignor("range").assign(GroupSpec({"t": racks}, no_racks))) == {
        "c0": ["t-0", "t-1"],
        "c1": ["t-2", "t-3"],
    }
    both = tuple(Member(m.member_id, ("t", "u"), rack=m.rack) for m in members)
    assignment = create_assignor("range").assign(GroupSpec({"t": racks, "u": racks}, both))
    assert _names(assignment) == {
        "c0": ["t-0", "t-2", "u-0", "u-2"],
        "c1": ["t-1", "t-3", "u-1", "u-3"],
    }


def test_sticky_example() -> None:
    group = GroupSpec(
        {"t": _plain(3)},
        (Member("c1", ("t",), _t(0, 1, 2), generation=1), Member("c2", ("t",), generation=1)),
    )
    assert _names(create_assignor("sticky").assign(group)) == {"c1": ["t-0", "t-1"], "c2": ["t-2"]}
    outcome = CooperativeStickyPartitionAssignor().assign_with_outcome(group)
    assert _names(outcome.assignment) == {"c1": ["t-0", "t-1"], "c2": []}
    assert outcome.withheld == {TopicPartition("t", 2): "c2"}


def test_constrained_builder_example() -> None:
    group = GroupSpec(
        {"t": _plain(6)},
        (
            Member("c1", ("t",), _t(0, 1, 2), generation=1),
            Member("c2", ("t",), _t(3), generation=1),
            Member("c3", ("t",), generation=1),
        ),
    )
    assert _names(create_assignor("sticky").assign(group)) == {
        "c1": ["t-0", "t-1"],
        "c2": ["t-3", "t-2"],
        "c3": ["t-4", "t-5"],
    }
    outcome = CooperativeStickyPartitionAssignor().assign_with_outcome(group)
    assert outcome.withheld == {TopicPartition("t", 2): "c2"}


def test_general_builder_example() -> None:
    group = GroupSpec(
        {"t": _plain(2), "u": _plain(2)}, (Member("c1", ("t",)), Member("c2", ("t", "u")))
    )
    assert _names(create_assignor("sticky").assign(group)) == {
        "c1": ["t-0", "t-1"],
        "c2": ["u-0", "u-1"],
    }
