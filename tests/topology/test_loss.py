"""Protection against losing a data centre: :func:`protectable` and
:func:`smallest_protecting_rf` against a brute force over every placement of small trees,
and golden cases."""

from __future__ import annotations

from itertools import product

from hypothesis import given, settings
from hypothesis import strategies as st

from rackwise.topology.loss import (
    is_protected,
    loss_tree,
    protectable,
    smallest_protecting_rf,
)

trees = st.lists(st.lists(st.integers(1, 3), min_size=1, max_size=3), min_size=1, max_size=4)


def _placements(tree: list[list[int]], rf: int) -> list[dict[tuple[str, str], int]]:
    """Every way to put ``rf`` replicas, one per broker, as counts per (top, domain)."""
    keys = [(f"t{t}", f"t{t}d{d}") for t, top in enumerate(tree) for d in range(len(top))]
    caps = [c for top in tree for c in top]
    out = []
    for counts in product(*(range(c + 1) for c in caps)):
        if sum(counts) == rf:
            out.append(dict(zip(keys, counts, strict=True)))
    return out


def _brute(tree: list[list[int]], rf: int, m: int, k: int) -> bool:
    return any(is_protected(c, m, k) for c in _placements(tree, rf))


@settings(max_examples=150, deadline=None)
@given(trees, st.integers(1, 10), st.integers(1, 3), st.integers(1, 4))
def test_protectable_is_what_some_placement_achieves(
    tree: list[list[int]], rf: int, m: int, k: int
) -> None:
    assert protectable(rf, tree, m, k) == _brute(tree, rf, m, k)


@settings(max_examples=60, deadline=None)
@given(trees, st.integers(1, 3), st.integers(1, 4))
def test_the_smallest_protecting_factor_is_the_first_that_brute_force_finds(
    tree: list[list[int]], m: int, k: int
) -> None:
    brokers = sum(sum(top) for top in tree)
    found = next((rf for rf in range(1, brokers + 1) if _brute(tree, rf, m, k)), None)
    assert smallest_protecting_rf(tree, m, k) == found


def test_three_data_centres_protect_rf_three_and_two_protect_nothing() -> None:
    assert protectable(3, [[4], [4], [4]], 2, 2)
    assert not protectable(2, [[4], [4], [4]], 2, 2)
    assert smallest_protecting_rf([[4], [4], [4]], 2, 2) == 3
    assert smallest_protecting_rf([[4], [4]], 2, 2) is None
    assert smallest_protecting_rf([[4], [4]], 2, 1) == 4  # two in each data centre


def test_racks_as_domains_inside_data_centres() -> None:
    # Two data centres of two racks, min.insync.racks=2 at level 2: two racks must survive.
    tree = loss_tree(
        [(1, "/dc1/a"), (2, "/dc1/b"), (3, "/dc2/a"), (4, "/dc2/b"), (5, None)], level=2
    )
    assert tree == [[1, 1], [1, 1], [1]]  # /dc1, /dc2, then the rackless broker 5
    assert protectable(3, tree, 2, 2)  # one replica in each top-level domain
    two = tree[:2]
    assert not protectable(3, two, 2, 2)  # one data centre holds two: losing it leaves one
    assert smallest_protecting_rf(two, 2, 2) == 4


def test_a_placement_is_judged_per_lost_data_centre() -> None:
    counts = {("/dc1", "/dc1"): 2, ("/dc2", "/dc2"): 1, ("/dc3", "/dc3"): 1}
    assert is_protected(counts, 2, 2)
    assert not is_protected(counts, 3, 2)  # losing /dc1 leaves 2
    assert not is_protected({("/dc1", "/dc1"): 2, ("/dc2", "/dc2"): 2}, 2, 2)
