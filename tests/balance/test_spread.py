"""The planner's spread checks agree with ``rackwise.topology.spread_violations``."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rackwise.balance._spread import spread_ok, violations_by_level, water
from rackwise.balance._tree import build_tree, flat_racks
from rackwise.topology import RackTree, spread_violations


@st.composite
def trees_and_rows(draw: st.DrawFn) -> tuple[list[str | None], list[list[int]], list[int]]:
    levels = draw(st.integers(1, 3))
    fan = [draw(st.integers(1, 3)) for _ in range(levels)]
    num = draw(st.integers(1, 10))
    racks: list[str | None] = []
    for _ in range(num):
        if draw(st.integers(0, 8)) == 0:
            racks.append(None)
        else:
            racks.append(
                "".join(f"/l{i}n{draw(st.integers(0, fan[i] - 1))}" for i in range(levels))
            )
    rows = []
    for _ in range(draw(st.integers(1, 12))):
        rf = draw(st.integers(1, min(num, 5)))
        rows.append(list(draw(st.permutations(range(num)))[:rf]))
    excluded = draw(st.lists(st.integers(0, num - 1), unique=True, max_size=2))
    return racks, rows, excluded


def _matrix(rows: list[list[int]]) -> np.ndarray:
    width = max(len(r) for r in rows)
    out = np.full((len(rows), width), -1, np.int64)
    for i, row in enumerate(rows):
        out[i, : len(row)] = row
    return out


@settings(max_examples=300, deadline=None)
@given(trees_and_rows())
def test_vectorised_check_matches_reference(case: tuple) -> None:
    racks, rows, _ = case
    ids = np.arange(len(racks), dtype=np.int64) * 10 + 3
    tree = build_tree(ids, racks, np.ones(len(racks), np.bool_), flat=False)
    bad, per_level = violations_by_level(tree, _matrix(rows))
    reference = spread_violations(tree.rack_tree, [[int(ids[b]) for b in r] for r in rows])
    assert set(np.flatnonzero(bad).tolist()) == {v.partition for v in reference}
    by_level: dict[int, set[int]] = {}
    for v in reference:
        by_level.setdefault(v.level, set()).add(v.partition)
    assert per_level == {level: len(parts) for level, parts in by_level.items()}


@settings(max_examples=300, deadline=None)
@given(trees_and_rows())
def test_row_check_matches_reference_with_exclusions(case: tuple) -> None:
    racks, rows, excluded = case
    ids = np.arange(len(racks), dtype=np.int64) * 10 + 3
    everyone = np.ones(len(racks), np.bool_)
    tree = build_tree(ids, racks, everyone, flat=False)
    members = [b for b in range(len(racks)) if b not in excluded]
    smaller = RackTree.build([(int(ids[b]), racks[b], False) for b in members])
    for row in rows:
        if any(b in excluded for b in row):
            continue
        expected = not spread_violations(smaller, [[int(ids[b]) for b in row]])
        assert spread_ok(tree, row, excluded) == expected


def test_flat_racks_keep_only_leaf_racks() -> None:
    assert flat_racks(["/dc1/r1", "dc2", None, "/dc1/r1"]) == ["/dc1|r1", "/dc2", None, "/dc1|r1"]
    # Two paths that flatten to the same name stay distinct.
    assert flat_racks(["/a|b", "/a/b"]) == ["/a|b", "/a|b#2"]


@given(st.lists(st.integers(0, 5), min_size=1, max_size=6), st.data())
def test_water_levels_are_the_even_spreads(caps: list[int], data: st.DataObject) -> None:
    caps = sorted(caps)
    count = data.draw(st.integers(0, sum(caps)))
    level, extra = water(caps, count)
    base = [min(c, level) for c in caps]
    room = [c for c in caps if c > level]
    assert sum(base) + extra == count
    assert 0 <= extra <= len(room)
    if room:
        assert extra < len(room)  # a full extra round would raise the level
    # Every child either full, or at level / level + 1: the spread rule's even vectors.
    assert all(b in (c, level) for b, c in zip(base, caps, strict=True))


def test_water_worked_examples() -> None:
    assert water((2, 2, 2), 4) == (1, 1)  # (2, 1, 1)
    assert water((1, 5), 4) == (3, 0)  # (1, 3): the small child is full
    assert water((0, 3), 2) == (2, 0)
