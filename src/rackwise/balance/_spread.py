"""Spread, as ``rackwise.topology.spread`` defines it, checked for every partition at once.

A partition is badly spread at node n (with two or more children) when some child of n holds two
more of its replicas than another child that still has a broker free for it. The vectorised
check works level by level on the partition matrix: for each replica, how many replicas of the
same partition share its node at this level (its child's count) and how many distinct children
the partition uses under the parent, so that "a child with no replica" is seen without listing
the children. Memory is a few (partitions x RF x RF) boolean arrays per level.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from rackwise.balance._tree import PlanTree
from rackwise.balance.model import BoolArray, IntArray

_BIG = 1 << 30


def violations_by_level(tree: PlanTree, matrix: IntArray) -> tuple[BoolArray, dict[int, int]]:
    """For a matrix of broker indices (``-1`` pad; brokers outside the tree ignored): which
    partitions are badly spread anywhere, and how many are badly spread at each level (the depth
    of the node whose children are unevenly used; 0 is the root).

    Only a partition with two replicas under one child can be badly spread at that child's
    parent, so each level first finds those rows with a few column comparisons and runs the
    full check on them alone."""
    num_p, width = matrix.shape
    bad = np.zeros(num_p, np.bool_)
    per_level: dict[int, int] = {}
    if num_p == 0 or tree.num_nodes <= 1:
        return bad, per_level
    chains = np.vstack([tree.chains, np.full((1, tree.chains.shape[1]), -1, np.int64)])
    rows = np.where(matrix >= 0, matrix, chains.shape[0] - 1)
    for level in range(1, chains.shape[1]):
        child = chains[rows, level]
        shared = np.zeros(num_p, np.bool_)
        for i in range(width):
            for j in range(i + 1, width):
                shared |= (child[:, i] == child[:, j]) & (child[:, i] >= 0)
        idx = np.flatnonzero(shared)
        if idx.size == 0:
            continue
        uneven = _uneven(tree, child[idx], chains[rows[idx], level - 1])
        if uneven.any():
            per_level[level - 1] = int(uneven.sum())
            bad[idx[uneven]] = True
    return bad, per_level


def _uneven(tree: PlanTree, child: IntArray, parent: IntArray) -> BoolArray:
    """Rows whose replicas are unevenly spread over the children of some parent node."""
    width = child.shape[1]
    num_brokers = tree.rack_tree.num_brokers
    child_count = tree.rack_tree.child_count
    earlier = np.tril(np.ones((width, width), np.bool_), -1)  # [j, j'] = j' < j
    present = child >= 0
    both = present[:, :, None] & present[:, None, :]
    same_child = (child[:, :, None] == child[:, None, :]) & both
    same_parent = (parent[:, :, None] == parent[:, None, :]) & both
    held = same_child.sum(axis=2)
    first = ~(same_child & earlier).any(axis=2)
    distinct = (same_parent & first[:, None, :]).sum(axis=2)
    safe_parent = np.maximum(parent, 0)
    is_free = held < num_brokers[np.maximum(child, 0)]
    most = np.where(same_parent, held[:, None, :], 0).max(axis=2)
    least = np.where(same_parent & is_free[:, None, :], held[:, None, :], _BIG).min(axis=2)
    least = np.where(distinct < child_count[safe_parent], 0, least)
    uneven: BoolArray = (present & (child_count[safe_parent] >= 2) & (most - least >= 2)).any(
        axis=1
    )
    return uneven


def water(caps: Sequence[int], count: int) -> tuple[int, int]:
    """Spread ``count`` replicas over children of capacities ``caps`` (sorted ascending): the
    level L every child is filled to (or its capacity, if smaller), and how many children above
    L get one more (``extra``). A count vector is evenly spread exactly when it is
    ``min(cap, L)`` plus one for ``extra`` of the children with ``cap > L``."""
    used = 0
    n = len(caps)
    for i, cap in enumerate(caps):
        share = (count - used) // (n - i)
        if share >= cap:
            used += cap
            continue
        return share, count - used - share * (n - i)
    return (caps[-1] if caps else 0), count - used


def spread_ok(tree: PlanTree, brokers: Iterable[int], excluded: Iterable[int] = ()) -> bool:
    """One partition on ``brokers`` (indices in the tree) is evenly spread everywhere, brokers in
    ``excluded`` counting as not free for it."""
    kid_count: dict[int, dict[int, int]] = {}
    chain_list = tree.chain_list
    for b in brokers:
        chain = chain_list[b]
        for i in range(len(chain) - 1):
            kids = kid_count.setdefault(chain[i], {})
            kids[chain[i + 1]] = kids.get(chain[i + 1], 0) + 1
    lost: dict[int, int] = {}
    for b in excluded:
        for node in chain_list[b]:
            lost[node] = lost.get(node, 0) + 1
    cap = tree.cap
    for node, kids in kid_count.items():
        if tree.broker_only[node] or len(tree.children[node]) < 2:
            continue
        most = max(kids.values())
        if most < 2:
            continue
        least = _BIG
        for kid, held in kids.items():
            if held < cap[kid] - lost.get(kid, 0) and held < least:
                least = held
        if least > 0 and _has_free_absent(tree, node, kids, lost):
            least = 0
        if most - least >= 2:
            return False
    return True


def _has_free_absent(tree: PlanTree, node: int, kids: dict[int, int], lost: dict[int, int]) -> bool:
    absent = len(tree.children[node]) - len(kids)
    if absent <= 0:
        return False
    if not lost:
        return True
    for kid in tree.children[node]:
        if kid not in kids and tree.cap[kid] - lost.get(kid, 0) > 0:
            return True
    return False
