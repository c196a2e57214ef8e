"""Random groups whose answers Kafka's own classes gave (``kafka_random_cases.jsonl``).

Kafka's ``RangeAssignor``, ``StickyAssignor``, ``CooperativeStickyAssignor`` and their base
classes at commit 1eb7644349cb were compiled (with stubs for the client classes they do not
call) and given each group through ``assignPartitions``: the partitions of the subscribed topics
in a ``HashMap``, the members in a ``HashMap`` filled in the listed order, each a version-3
subscription (owned partitions, generation, rack; for ``sticky`` the owned partitions and
generation are what its user data carries). For the leader-rack-aware assignors Kafka was given
each partition with its leader as its only replica, which is what pull request 17571 changes.
The ``multi-round-*`` groups come from a first sticky round with members leaving, joining,
changing subscriptions and reporting older generations.

``kafka`` is Kafka's answer: member lists in Kafka's order and ``partitions_transferring_ownership``
(``null`` after the general builder), or ``error`` where Kafka threw. Where Kafka's answer is
valid, rackwise's is the same to the list order; where it is not, rackwise's is valid.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rackwise.assignors import Assignment, GroupSpec, create_assignor, group_from_json
from rackwise.assignors import properties as props
from rackwise.assignors.group_json import parse_topic_partition
from rackwise.assignors.sticky import _AbstractStickyPartitionAssignor

CASES = [
    json.loads(line)
    for line in (Path(__file__).parent / "kafka_random_cases.jsonl").read_text().splitlines()
]


def _kafka_answer_is_valid(case: dict[str, Any]) -> bool:
    group = group_from_json(case)
    answer = {
        member: [parse_topic_partition(tp, member) for tp in parts]
        for member, parts in case["kafka"]["assignment"].items()
    }
    return props.valid(group, answer)


ANSWERED = [c for c in CASES if "error" not in c["kafka"] and _kafka_answer_is_valid(c)]
INVALID_IN_KAFKA = [c for c in CASES if "error" not in c["kafka"] and c not in ANSWERED]
FAILED_IN_KAFKA = [c for c in CASES if "error" in c["kafka"]]


@pytest.mark.parametrize("case", ANSWERED, ids=[c["id"] for c in ANSWERED])
def test_same_answer_as_kafka(case: dict[str, Any]) -> None:
    group = group_from_json(case)
    assignor = create_assignor(case["assignor"])
    kafka = case["kafka"]
    if isinstance(assignor, _AbstractStickyPartitionAssignor):
        outcome = assignor.assign_with_outcome(group)
        assignment = outcome.assignment
        moved = outcome.partitions_transferring_ownership
        mine = None if moved is None else {str(tp): m for tp, m in moved.items()}
        assert mine == kafka["partitions_transferring_ownership"]
    else:
        assignment = assignor.assign(group)
    assert {m: [str(tp) for tp in parts] for m, parts in assignment.items()} == kafka["assignment"]


@pytest.mark.parametrize("case", INVALID_IN_KAFKA, ids=[c["id"] for c in INVALID_IN_KAFKA])
def test_where_kafkas_answer_is_invalid_ours_is_valid(case: dict[str, Any]) -> None:
    """Kafka gave a member partitions of a topic it does not read (see
    :mod:`rackwise.assignors.sticky`); rackwise's second run does not."""
    group = group_from_json(case)
    assignment = _check_valid_and_balanced(group, case["assignor"])
    assert {m: [str(tp) for tp in parts] for m, parts in assignment.items()} != case["kafka"][
        "assignment"
    ]


def _check_valid_and_balanced(group: GroupSpec, name: str) -> Assignment:
    """Valid, and balanced before a cooperative assignor withholds partitions changing owner."""
    assignor = create_assignor(name)
    if not isinstance(assignor, _AbstractStickyPartitionAssignor):
        assignment = assignor.assign(group)
        assert props.valid(group, assignment)
        assert props.kafka_balance(assignment)
        return assignment
    outcome = assignor.assign_with_outcome(group)
    assert props.valid(group, outcome.assignment)
    if assignor.cooperative:
        assert props.cooperative_no_partition_revoked_and_added_in_same_round(
            group, outcome.assignment
        )
    before_withholding = {m: list(parts) for m, parts in outcome.assignment.items()}
    for tp, member in outcome.withheld.items():
        before_withholding[member].append(tp)
    assert props.kafka_balance(before_withholding)
    return outcome.assignment


@pytest.mark.parametrize("case", FAILED_IN_KAFKA, ids=[c["id"] for c in FAILED_IN_KAFKA])
def test_where_kafka_fails_the_answer_is_still_valid(case: dict[str, Any]) -> None:
    """Kafka's general builder dereferences the previous owner of a partition even when that
    member was set aside (it holds everything it can and nothing movable) and throws
    ``NullPointerException``; rackwise skips that move and goes on."""
    assert case["kafka"]["error"] == "java.lang.NullPointerException"
    _check_valid_and_balanced(group_from_json(case), case["assignor"])


def test_the_cases_cover_every_assignor_and_both_builders() -> None:
    assert {c["assignor"] for c in CASES} == {
        "range",
        "sticky",
        "cooperative-sticky",
        "leader-rack-aware-range",
        "leader-rack-aware-cooperative-sticky",
    }
    sticky = [c for c in ANSWERED if "partitions_transferring_ownership" in c["kafka"]]
    assert any(c["kafka"]["partitions_transferring_ownership"] is None for c in sticky)
    assert any(c["kafka"]["partitions_transferring_ownership"] for c in sticky)
    assert FAILED_IN_KAFKA
    assert INVALID_IN_KAFKA
    assert len(ANSWERED) >= 9 * len(CASES) // 10
