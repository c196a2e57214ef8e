"""The incremental balance test of the general sticky builder against a literal reading of
Kafka's ``isBalanced``, over random assignments and random moves."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rackwise.assignors._balance_check import BalanceTracker


def kafka_is_balanced(
    current: dict[str, list[int]],
    topic_of: list[int],
    member_topics: dict[str, list[int]],
    partitions_of: dict[int, list[int]],
) -> bool:
    """Kafka's ``isBalanced``, statement by statement."""

    def max_size(member: str) -> int:
        return sum(len(partitions_of[t]) for t in member_topics[member])

    ordered = sorted(current, key=lambda m: (len(current[m]), m))
    if len(current[ordered[0]]) >= len(current[ordered[-1]]) - 1:
        return True
    holder = {p: m for m, parts in current.items() for p in parts}
    for member in ordered:
        size = len(current[member])
        if size == max_size(member):
            continue
        for t in member_topics[member]:
            for p in partitions_of[t]:
                if p not in current[member] and size + 1 < len(current[holder[p]]):
                    return False
    return True


@st.composite
def states(draw: st.DrawFn) -> tuple[dict[str, list[int]], list[int], dict[str, list[int]]]:
    num_topics = draw(st.integers(1, 4))
    sizes = draw(st.lists(st.integers(1, 8), min_size=num_topics, max_size=num_topics))
    topic_of = [t for t, n in enumerate(sizes) for _ in range(n)]
    members = [f"m{i}" for i in range(draw(st.integers(2, 6)))]
    member_topics = {
        m: sorted(draw(st.sets(st.integers(0, num_topics - 1), min_size=1))) for m in members
    }
    current: dict[str, list[int]] = {m: [] for m in members}
    for p, t in enumerate(topic_of):
        takers = [m for m in members if t in member_topics[m]]
        if takers:
            current[draw(st.sampled_from(takers))].append(p)
        else:
            member_topics[members[0]].append(t)
            current[members[0]].append(p)
    return current, topic_of, member_topics


@settings(max_examples=300, deadline=None)
@given(states(), st.data())
def test_tracker_agrees_with_kafka_through_moves(
    state: tuple[dict[str, list[int]], list[int], dict[str, list[int]]], data: st.DataObject
) -> None:
    current, topic_of, member_topics = state
    partitions_of: dict[int, list[int]] = {}
    for p, t in enumerate(topic_of):
        partitions_of.setdefault(t, []).append(p)

    def max_size(member: str) -> int:
        return sum(len(partitions_of[t]) for t in member_topics[member])

    tracker = BalanceTracker(current, topic_of, member_topics, max_size)
    for _ in range(data.draw(st.integers(0, 12))):
        ordered = sorted(current, key=lambda m: (len(current[m]), m))
        expected = kafka_is_balanced(current, topic_of, member_topics, partitions_of)
        assert tracker.balanced(ordered[0], ordered[-1]) == expected
        p = data.draw(st.sampled_from(range(len(topic_of))))
        old = next(m for m, parts in current.items() if p in parts)
        takers = [m for m in current if topic_of[p] in member_topics[m] and m != old]
        if not takers:
            continue
        new = data.draw(st.sampled_from(takers))
        current[old].remove(p)
        current[new].append(p)
        tracker.moved(p, old, new)


def test_a_small_member_that_cannot_take_the_large_members_topic_is_balanced() -> None:
    # m0 holds all 4 partitions of t0 (only it subscribes); m1 holds 1 of t1, all it can.
    current = {"m0": [0, 1, 2, 3], "m1": [4]}
    topic_of = [0, 0, 0, 0, 1]
    topics = {"m0": [0], "m1": [1]}
    tracker = BalanceTracker(current, topic_of, topics, lambda m: len(current[m]))
    assert tracker.balanced("m1", "m0")


def test_a_small_member_that_could_take_more_is_not_balanced() -> None:
    current = {"m0": [0, 1, 2, 3], "m1": []}
    topic_of = [0, 0, 0, 0]
    topics = {"m0": [0], "m1": [0]}
    tracker = BalanceTracker(current, topic_of, topics, lambda m: 4)
    assert not tracker.balanced("m1", "m0")
    for p in (0, 1):
        current["m0"].remove(p)
        current["m1"].append(p)
        tracker.moved(p, "m0", "m1")
    assert tracker.balanced("m0", "m1")
