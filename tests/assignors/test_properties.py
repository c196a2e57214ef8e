"""The property checkers, each on an assignment that has the property and one that lacks it."""

from __future__ import annotations

from rackwise.assignors import GroupSpec, Member, PartitionInfo
from rackwise.assignors import properties as props
from rackwise.common import TopicPartition

T0, T1, T2 = (TopicPartition("t", p) for p in range(3))
U0 = TopicPartition("u", 0)

GROUP = GroupSpec(
    {
        "t": [PartitionInfo(("a", "b")), PartitionInfo(("b",)), PartitionInfo(())],
        "u": [PartitionInfo(("a",))],
    },
    (
        Member("c1", ("t", "u"), owned=(T0, T1), rack="a"),
        Member("c2", ("t",), owned=(T2,), rack="b"),
    ),
)


def test_valid() -> None:
    assert props.valid(GROUP, {"c1": [T0, U0], "c2": [T1, T2]})
    assert not props.valid(GROUP, {"c1": [T0], "c2": [U0]})  # c2 does not read u
    assert not props.valid(GROUP, {"c1": [T0], "c2": [T0]})  # twice
    assert not props.valid(GROUP, {"c1": [TopicPartition("t", 3)], "c2": []})  # no such partition


def test_complete() -> None:
    assert props.complete(GROUP, {"c1": [T0, U0], "c2": [T1, T2]})
    assert not props.complete(GROUP, {"c1": [T0, U0], "c2": [T1]})


def test_fully_balanced() -> None:
    assert props.fully_balanced({"c1": [T0, U0], "c2": [T1]})
    assert not props.fully_balanced({"c1": [T0, U0, T1], "c2": []})
    assert props.fully_balanced({})


def test_kafka_balance() -> None:
    # Kafka's check compares the topics members were given, not those they read: a member with
    # nothing shares no topic with anyone, so sizes 3 and 0 pass; sizes 3 and 1 sharing t fail.
    assert props.kafka_balance({"c1": [T0, T1, T2], "c2": []})
    assert not props.kafka_balance({"c1": [T0, T1, U0], "c2": [T2], "c3": []})
    assert props.kafka_balance({"c1": [T0, T1, T2], "c2": [U0]})
    assert props.kafka_balance({"c1": [T0, T1, T2], "c2": [], "c3": [U0]})


def test_cooperative_no_partition_revoked_and_added_in_same_round() -> None:
    # c1 gives up T1 and nobody takes it this round: fine. c2 taking it at once: not fine.
    assert props.cooperative_no_partition_revoked_and_added_in_same_round(
        GROUP, {"c1": [T0, U0], "c2": [T2]}
    )
    assert not props.cooperative_no_partition_revoked_and_added_in_same_round(
        GROUP, {"c1": [T0, U0], "c2": [T1, T2]}
    )


def test_kafka_is_sticky() -> None:
    assert props.kafka_is_sticky([(T0, "c1", "c2"), (T1, "c1", "c2"), (U0, "c2", "c1")])
    assert not props.kafka_is_sticky([(T0, "c1", "c2"), (T1, "c2", "c1")])
    assert props.kafka_is_sticky([])


def test_no_partition_assigned_twice() -> None:
    assert props.no_partition_assigned_twice({"c1": [T0], "c2": [T1]})
    assert not props.no_partition_assigned_twice({"c1": [T0, T0], "c2": []})


def test_rack_mismatch_count() -> None:
    # c1 (a): T0 on a, b -> local; T1 on b -> not; leader of T0 is a.
    # c2 (b): T2 has no replicas -> not local; U0 leader a -> not local.
    assignment = {"c1": [T0, T1], "c2": [T2, U0]}
    assert props.rack_mismatch_count(GROUP, assignment) == 3
    assert props.rack_mismatch_count(GROUP, {"c1": [T0], "c2": [T1]}) == 0
    assert props.rack_mismatch_count(GROUP, {"c1": [], "c2": [T0]}, leader_only=True) == 1
    assert props.rack_mismatch_count(GROUP, {"c1": [], "c2": [T0]}) == 0


def test_sizes_between() -> None:
    assert props.sizes_between({"c1": [T0], "c2": [T1, T2]}, 1, 2)
    assert not props.sizes_between({"c1": [], "c2": [T1, T2]}, 1, 2)


def test_the_named_checks_are_the_functions() -> None:
    group = GroupSpec(
        GROUP.partitions,
        (Member("c1", ("t", "u"), owned=(T0, U0)), Member("c2", ("t",), owned=(T1,))),
    )
    assignment = {"c1": [T0, U0], "c2": [T1, T2]}
    assert set(props.PROPERTIES) == {
        "valid",
        "complete",
        "fully_balanced",
        "kafka_balance",
        "cooperative_no_partition_revoked_and_added_in_same_round",
        "kafka_isSticky",
        "no_partition_assigned_twice",
    }
    assert all(check(group, assignment, None) for check in props.PROPERTIES.values())
    assert not props.PROPERTIES["cooperative_no_partition_revoked_and_added_in_same_round"](
        group, {"c1": [T1, U0], "c2": [T0, T2]}, None
    )
