"""The repair keeps as many replicas as any even spread can, and builds an even spread."""

from __future__ import annotations

from itertools import combinations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rackwise.balance._repair import PartitionRepair
from rackwise.balance._spread import spread_ok
from rackwise.balance._tree import build_tree


@st.composite
def cases(draw: st.DrawFn) -> tuple:
    levels = draw(st.integers(1, 3))
    fan = [draw(st.integers(1, 3)) for _ in range(levels)]
    num = draw(st.integers(1, 9))
    racks = [
        None
        if draw(st.integers(0, 8)) == 0
        else "".join(f"/l{i}n{draw(st.integers(0, fan[i] - 1))}" for i in range(levels))
        for _ in range(num)
    ]
    excluded = draw(st.lists(st.integers(0, num - 1), unique=True, max_size=2))
    allowed = [b for b in range(num) if b not in excluded]
    rf = draw(st.integers(1, max(1, len(allowed))))
    holders = draw(st.lists(st.sampled_from(allowed), unique=True, max_size=rf)) if allowed else []
    sizes = {b: draw(st.integers(0, 50)) for b in holders}
    return racks, excluded, rf, sizes


def _best_by_brute_force(tree, allowed, rf, sizes, excluded) -> tuple[int, int]:
    best = (-1, -1)
    for target in combinations(allowed, rf):
        if spread_ok(tree, target, excluded):
            kept = [b for b in target if b in sizes]
            best = max(best, (len(kept), sum(sizes[b] for b in kept)))
    return best


@settings(max_examples=250, deadline=None)
@given(cases())
def test_keeps_the_most_any_even_spread_can(case: tuple) -> None:
    racks, excluded, rf, sizes = case
    num = len(racks)
    tree = build_tree(np.arange(num, dtype=np.int64) + 1, racks, np.ones(num, np.bool_), flat=False)
    allowed = [b for b in range(num) if b not in excluded]
    if len(allowed) < rf:
        return
    repair = PartitionRepair(tree, dict(sizes), excluded)
    assert repair.best(0, rf)[:2] == _best_by_brute_force(tree, allowed, rf, sizes, excluded)
    room = [0.0] * tree.num_nodes
    kept, new = repair.build(rf, room)
    target = kept + new
    assert len(target) == rf
    assert len(set(target)) == rf
    assert set(kept) <= set(sizes)
    assert not set(new) & set(sizes)
    assert not set(target) & set(excluded)
    assert spread_ok(tree, target, excluded)
    assert (len(kept), sum(sizes[b] for b in kept)) == repair.best(0, rf)[:2]
    kept_only, _ = PartitionRepair(tree, dict(sizes), excluded).build(rf, None)
    assert sorted(kept_only) == sorted(kept)


def test_a_tie_keeps_the_replica_on_the_broker_with_more_room() -> None:
    tree = build_tree(np.array([1, 2, 3]), ["/a", "/a", "/b"], np.ones(3, np.bool_), flat=False)
    room = [0.0] * tree.num_nodes
    room[int(tree.leaf[1])] = 5.0  # broker 2 is the less loaded
    kept, _ = PartitionRepair(tree, {0: 10, 1: 10}, (), room).build(2, None)
    assert kept == [1]


def test_worked_example_from_the_docstring() -> None:
    # Racks /a (brokers 1, 2) and /b (3, 4), RF 2, replicas on 1 and 2 of equal size.
    tree = build_tree(
        np.array([1, 2, 3, 4]), ["/a", "/a", "/b", "/b"], np.ones(4, np.bool_), flat=False
    )
    repair = PartitionRepair(tree, {0: 10, 1: 10})
    room = [0.0] * tree.num_nodes
    room[int(tree.leaf[3])] = 1.0  # broker 4 has more room than broker 3
    kept, new = repair.build(2, room)
    assert (kept, new) == ([0], [3])  # keep broker 1, place on broker 4


def test_keeps_the_larger_replica_when_one_must_go() -> None:
    tree = build_tree(np.array([1, 2, 3]), ["/a", "/a", "/b"], np.ones(3, np.bool_), flat=False)
    kept, new = PartitionRepair(tree, {0: 10, 1: 30}).build(2, [0.0] * tree.num_nodes)
    assert (kept, new) == ([1], [2])
