"""Every consumer-assignor case taken from Kafka's own code (and from the tests of apache/kafka
pull request 17571), through ``create_assignor`` and ``group_from_json``.

Each case is checked as its ``expected`` says: the assignment compared as ``compare`` says, every
listed property, and every test-specific key. Where Kafka's exact output (``java_reference``) or
facts derived from it (``derived``) are recorded, they are checked too.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from rackwise.assignors import Assignment, GroupSpec, create_assignor, group_from_json
from rackwise.assignors import properties as props
from rackwise.assignors.group_json import parse_topic_partition
from rackwise.assignors.sticky import StickyOutcome, _AbstractStickyPartitionAssignor
from rackwise.common import TopicPartition

CASES = [
    json.loads(line)
    for line in (Path(__file__).parent / "kafka_assignor.jsonl").read_text().splitlines()
]


def _run(case: dict[str, Any]) -> tuple[GroupSpec, Assignment, StickyOutcome | None]:
    group = group_from_json(case)
    assignor = create_assignor(case["assignor"])
    if isinstance(assignor, _AbstractStickyPartitionAssignor):
        outcome = assignor.assign_with_outcome(group)
        return group, outcome.assignment, outcome
    return group, assignor.assign(group), None


def _names(assignment: Mapping[str, Sequence[TopicPartition]]) -> dict[str, list[str]]:
    return {member: [str(tp) for tp in parts] for member, parts in assignment.items()}


def _tps(values: Sequence[object]) -> set[TopicPartition]:
    return {parse_topic_partition(v, "expected") for v in values}


def _check_compare(expected: dict[str, Any], actual: dict[str, list[str]]) -> None:
    wanted: dict[str, list[str]] = expected["assignment"]
    compare = expected["compare"]
    if compare == "exact_lists":
        assert {m: actual.get(m) for m in wanted} == wanted
    elif compare == "as_sets":
        assert {m: set(actual.get(m, ())) for m in wanted} == {m: set(v) for m, v in wanted.items()}
    elif compare == "exact_map_as_sets":
        assert {m: set(v) for m, v in actual.items()} == {m: set(v) for m, v in wanted.items()}
    else:
        raise AssertionError(f"unknown compare {compare!r}")


def _transferring(outcome: StickyOutcome | None) -> dict[str, str] | None:
    assert outcome is not None, "only the sticky assignors track partitions changing owner"
    moved = outcome.partitions_transferring_ownership
    return None if moved is None else {str(tp): member for tp, member in moved.items()}


Check = Callable[[Any, GroupSpec, Assignment, "StickyOutcome | None"], None]


def _rack_mismatch(want: int, group: GroupSpec, a: Assignment, _: object) -> None:
    assert props.rack_mismatch_count(group, a) == want


def _transfers(want: dict[str, str] | None, _: GroupSpec, __: Assignment, o: Any) -> None:
    assert _transferring(o) == want


def _transfer_count(want: int, _: GroupSpec, __: Assignment, o: Any) -> None:
    assert len(_transferring(o) or {}) == want


def _contains_previous(want: dict[str, list[str]], _: GroupSpec, a: Assignment, __: object) -> None:
    for member, previous in want.items():
        assert _tps(previous) <= set(a[member]), member


def _subset_of_previous(
    want: dict[str, list[str]], _: GroupSpec, a: Assignment, __: object
) -> None:
    for member, previous in want.items():
        assert set(a[member]) <= _tps(previous), member


def _per_topic_counts(want: dict[str, int], _: GroupSpec, a: Assignment, __: object) -> None:
    for member, parts in a.items():
        for topic, count in want.items():
            assert sum(tp.topic == topic for tp in parts) == count, (member, topic)


def _size_range(want: list[int], _: GroupSpec, a: Assignment, __: object) -> None:
    assert props.sizes_between(a, want[0], want[1])


def _at_most(want: int, _: GroupSpec, a: Assignment, __: object) -> None:
    assert props.sizes_between(a, 0, want)


def _exactly(want: int, _: GroupSpec, a: Assignment, __: object) -> None:
    assert props.sizes_between(a, want, want)


def _total(want: int, _: GroupSpec, a: Assignment, __: object) -> None:
    assert sum(map(len, a.values())) == want


KEY_CHECKS: dict[str, Check] = {
    "rack_mismatch_count": _rack_mismatch,
    "partitions_transferring_ownership": _transfers,
    "partitions_transferring_ownership_size": _transfer_count,
    "contains_previous": _contains_previous,
    "subset_of_previous": _subset_of_previous,
    "per_topic_count_each_member": _per_topic_counts,
    "partitions_per_member_range": _size_range,
    "max_partitions_per_member": _at_most,
    "exact_partitions_per_member": _exactly,
    "total_assigned": _total,
}
IGNORED_KEYS = {"assignment", "compare", "properties", "note"}


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_golden_case(case: dict[str, Any]) -> None:
    group, assignment, outcome = _run(case)
    expected = case["expected"]
    assert set(assignment) == {m.member_id for m in group.members}
    if "assignment" in expected:
        _check_compare(expected, _names(assignment))
    for name in expected.get("properties", []):
        assert props.PROPERTIES[name](group, assignment, outcome), name
    unknown = set(expected) - IGNORED_KEYS - set(KEY_CHECKS)
    assert not unknown, f"expected keys this test does not know: {unknown}"
    for key, check in KEY_CHECKS.items():
        if key in expected:
            check(expected[key], group, assignment, outcome)


JAVA_CASES = [c for c in CASES if "java_reference" in c]


@pytest.mark.parametrize("case", JAVA_CASES, ids=[c["id"] for c in JAVA_CASES])
def test_java_reference(case: dict[str, Any]) -> None:
    """Kafka's exact output, list order included (its Java hash iteration orders included)."""
    _, assignment, outcome = _run(case)
    reference = case["java_reference"]
    assert _names(assignment) == reference["assignment"]
    if isinstance(reference["partitions_transferring_ownership"], dict | None):
        assert _transferring(outcome) == reference["partitions_transferring_ownership"]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_derived_facts(case: dict[str, Any]) -> None:
    group, assignment, outcome = _run(case)
    derived = case["derived"]
    assert props.valid(group, assignment) == derived["valid"]
    assert props.complete(group, assignment) == derived["complete"]
    assert props.fully_balanced(assignment) == derived["fully_balanced"]
    assert props.rack_mismatch_count(group, assignment) == derived["replica_rack_mismatch_count"]
    leader = props.rack_mismatch_count(group, assignment, leader_only=True)
    assert leader == derived["leader_rack_mismatch_count"]
    if outcome is not None:
        assert outcome.rack_aware == derived["rack_aware_path_used"]


def test_every_assignor_and_compare_kind_is_covered() -> None:
    assert {c["assignor"] for c in CASES} == {
        "range",
        "cooperative-sticky",
        "leader-rack-aware-range",
        "leader-rack-aware-cooperative-sticky",
    }
    kinds = {c["expected"].get("compare") for c in CASES}
    assert kinds == {"as_sets", "exact_lists", "exact_map_as_sets", None}
