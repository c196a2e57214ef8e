"""Large groups: 100,000 partitions over 100 consumers and 10,000 over 1,000, in seconds.

The time limits are generous (the machine is shared); the point is that no step is quadratic,
which would take minutes here. Each answer is also checked for validity and balance.
"""

from __future__ import annotations

import functools
import random
import time
from dataclasses import replace

import pytest

from rackwise.assignors import Assignment, GroupSpec, Member, PartitionInfo, create_assignor
from rackwise.assignors import properties as props

RACKS = ("a", "b", "c")
LIMIT_S = 20.0


@functools.cache
def _group(partitions: int, consumers: int, topics: int, *, uniform: bool, seed: int) -> GroupSpec:
    rnd = random.Random(seed)
    per_topic = partitions // topics
    layout = {
        f"topic-{t}": [PartitionInfo(tuple(rnd.sample(RACKS, 2))) for _ in range(per_topic)]
        for t in range(topics)
    }
    names = list(layout)
    members = tuple(
        Member(
            f"consumer-{c:05d}",
            tuple(names) if uniform else tuple(rnd.sample(names, max(1, topics // 2))),
            rack=RACKS[c % len(RACKS)],
        )
        for c in range(consumers)
    )
    return GroupSpec(layout, members, prefer_rack_aware_logic=False)


def _timed(name: str, group: GroupSpec) -> Assignment:
    start = time.perf_counter()
    assignment = create_assignor(name).assign(group)
    elapsed = time.perf_counter() - start
    assert elapsed < LIMIT_S, f"{name} took {elapsed:.1f} s"
    return assignment


@pytest.mark.slow
@pytest.mark.parametrize(
    ("partitions", "consumers", "topics"), [(100_000, 100, 100), (10_000, 1_000, 10)]
)
@pytest.mark.parametrize(
    "name",
    [
        "range",
        "sticky",
        "cooperative-sticky",
        "leader-rack-aware-range",
        "leader-rack-aware-cooperative-sticky",
    ],
)
def test_one_subscription(name: str, partitions: int, consumers: int, topics: int) -> None:
    group = _group(partitions, consumers, topics, uniform=True, seed=1)
    assignment = create_assignor(name).assign(group)
    assert props.valid(group, assignment)
    assert props.complete(group, assignment)
    assert props.fully_balanced(assignment)
    # The next round: one member leaves, the rest report what they own.
    members = tuple(
        replace(m, owned=tuple(assignment[m.member_id]), generation=1) for m in group.members[1:]
    )
    _timed(name, replace(group, members=members))


@pytest.mark.slow
def test_different_subscriptions_take_the_general_path_in_seconds() -> None:
    group = _group(10_000, 1_000, 10, uniform=False, seed=2)
    first = _timed("cooperative-sticky", group)
    assert props.kafka_balance(first)
    # The group doubles: every old member keeps what it had; the new ones must be filled.
    old = [replace(m, owned=tuple(first[m.member_id]), generation=1) for m in group.members]
    new = [Member(f"new-{i:05d}", m.topics, rack=m.rack) for i, m in enumerate(group.members)]
    doubled = replace(group, members=tuple(old + new))
    second = _timed("sticky", doubled)
    assert props.valid(doubled, second)
    assert props.kafka_balance(second)
