"""The data-centre tier of rack paths, on groups worked out by hand."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from rackwise.assignors import GroupSpec, Member, PartitionInfo, create_assignor
from rackwise.assignors.racks import data_centre, data_centres
from rackwise.common import TopicPartition

# One replica each, alternating data centres; no consumer shares an exact rack with them.
ALTERNATING_DCS = [("/dc1/r1",), ("/dc2/r3",), ("/dc1/r2",), ("/dc2/r4",)]


def _names(assignment: dict[str, list[TopicPartition]]) -> dict[str, list[str]]:
    return {m: [str(tp) for tp in parts] for m, parts in assignment.items()}


def _group(
    racks: Sequence[tuple[str, ...]],
    consumer_racks: tuple[str | None, ...] = ("/dc1/r9", "/dc2/r8"),
    topics: tuple[tuple[str, ...], ...] = (("t",), ("t",)),
    extra: dict[str, list[PartitionInfo]] | None = None,
) -> GroupSpec:
    members = tuple(Member(f"c{i}", topics[i], rack=rack) for i, rack in enumerate(consumer_racks))
    return GroupSpec({"t": [PartitionInfo(r) for r in racks], **(extra or {})}, members)


@pytest.mark.parametrize(
    ("rack", "centre"),
    [
        ("/dc1/r2", "dc1"),
        ("/eu/az-b/rack-7/host-3", "eu"),
        ("/r1", None),
        ("r1", None),
        ("rack-a", None),
        ("/dc1//r2", None),
        ("/", None),
        (None, None),
    ],
)
def test_data_centre_of_a_rack(rack: str | None, centre: str | None) -> None:
    assert data_centre(rack) == centre


def test_data_centres_of_several_racks() -> None:
    assert data_centres(["/dc1/r1", "/dc1/r2", "/dc2/x", "plain"]) == {"dc1", "dc2"}


@pytest.mark.parametrize("name", ["range", "leader-rack-aware-range"])
def test_range_prefers_the_same_data_centre(name: str) -> None:
    # No exact rack in common, so Kafka would give c0 t-0, t-1. The data-centre pass gives c0
    # the dc1 partitions and c1 the dc2 ones.
    assignment = create_assignor(name).assign(_group(ALTERNATING_DCS))
    assert _names(assignment) == {"c0": ["t-0", "t-2"], "c1": ["t-1", "t-3"]}


@pytest.mark.parametrize(
    "name", ["cooperative-sticky", "sticky", "leader-rack-aware-cooperative-sticky"]
)
def test_the_constrained_sticky_path_prefers_the_same_data_centre(name: str) -> None:
    # Round robin over [c0, c1] by data centre: t-0 -> c0, t-1 -> c1, t-2 -> c0, t-3 -> c1.
    assignment = create_assignor(name).assign(_group(ALTERNATING_DCS))
    assert _names(assignment) == {"c0": ["t-0", "t-2"], "c1": ["t-1", "t-3"]}


def test_the_general_sticky_path_prefers_the_same_data_centre() -> None:
    # c0 also reads u (one partition in dc1). Topic u (one member) goes first: u-0 -> c0. Then
    # each t partition to the least loaded member in its data centre: t-0 -> c0, t-1 -> c1,
    # t-2 -> c0, t-3 -> c1. Without data centres c0 would get u-0, t-1, t-3.
    group = _group(
        ALTERNATING_DCS,
        topics=(("t", "u"), ("t",)),
        extra={"u": [PartitionInfo(("/dc1/r5",))]},
    )
    assignment = create_assignor("sticky").assign(group)
    assert _names(assignment) == {"c0": ["u-0", "t-0", "t-2"], "c1": ["t-1", "t-3"]}


@pytest.mark.parametrize("name", ["range", "cooperative-sticky"])
def test_an_exact_rack_beats_the_data_centre(name: str) -> None:
    group = _group([("/dc1/r2",), ("/dc1/r1",)], consumer_racks=("/dc1/r1", "/dc1/r2"))
    assignment = create_assignor(name).assign(group)
    assert _names(assignment) == {"c0": ["t-1"], "c1": ["t-0"]}


@pytest.mark.parametrize("name", ["range", "cooperative-sticky"])
def test_plain_racks_have_no_data_centre_tier(name: str) -> None:
    # The same layout with plain names: nothing in common, so Kafka's plain answer.
    plain = [("dc1-r1",), ("dc2-r3",), ("dc1-r2",), ("dc2-r4",)]
    assignment = create_assignor(name).assign(_group(plain, consumer_racks=("dc1-r9", "dc2-r8")))
    expected = {"range": ["t-0", "t-1"], "cooperative-sticky": ["t-0", "t-2"]}[name]
    assert _names(assignment)["c0"] == expected


@pytest.mark.parametrize("name", ["range", "cooperative-sticky"])
def test_a_consumer_without_a_data_centre_takes_only_what_is_left(name: str) -> None:
    # c1 has no data centre: the data-centre pass gives c0 both dc1 partitions, c1 the rest.
    group = _group(ALTERNATING_DCS, consumer_racks=("/dc1/r9", None))
    assignment = create_assignor(name).assign(group)
    assert sorted(str(tp) for tp in assignment["c0"]) == ["t-0", "t-2"]
