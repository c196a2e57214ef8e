"""Fair shares: how many replicas each broker should hold where the spread rule allows.

Goals
    Give every broker the same number of replicas, except where the spread rule decides for it:
    with replication factor 3 over three data centres every data centre holds exactly one
    replica of every partition, however many brokers it has, so a small data centre's brokers
    must each hold more.

Constraints
    For each replication factor k and each node n, the spread rule bounds how many of a
    partition's k replicas n can hold: ``lo_n(k) .. hi_n(k)`` (the root holds k; a node's count
    c splits over its children as ``min(cap, L)`` plus one for ``extra`` of them, see
    :func:`~rackwise.balance._spread.water`, so a child holds between its share at the parent's
    smallest count and its share plus one at the parent's largest). Summed over partitions these
    give each node a range ``LO_n .. HI_n`` of replicas.

Algorithm
    Hand the cluster's replicas down the tree: a node splits its share among its children in
    proportion to their brokers, clamped to each child's range (a water level, found exactly:
    the clamped sum is piecewise linear in the level). A broker's fair share ``t_b`` is what
    reaches its leaf; the replica goal holds when every broker holds ``floor(t_b) ..
    ceil(t_b)`` replicas. On a tree whose racks at each level have equal brokers, or wherever
    the spread rule leaves the split free, ``t_b`` is the mean.

Example: data centres A (brokers 1, 2) and B (brokers 3, 4, 5, 6), 6 partitions of RF 2. Each
data centre must hold one replica of every partition (``LO = HI = 6``), so A's brokers get
``t = 3`` and B's ``t = 1.5``. With RF 1 the ranges are ``0 .. 6`` and the shares are the
mean, 1 each.
"""

from __future__ import annotations

import numpy as np

from rackwise.balance._spread import water
from rackwise.balance._tree import PlanTree
from rackwise.balance.model import BoolArray, FloatArray, IntArray


def count_ranges(tree: PlanTree, rf: int) -> tuple[IntArray, IntArray]:
    """``lo[n], hi[n]``: the fewest and most replicas of one partition of ``rf`` replicas that
    node n can hold in an evenly spread placement."""
    lo = np.zeros(tree.num_nodes, np.int64)
    hi = np.zeros(tree.num_nodes, np.int64)
    lo[0] = hi[0] = min(rf, tree.cap[0])
    for node in range(tree.num_nodes):  # breadth first: parents before children
        kids = tree.children[node]
        if not kids:
            continue
        caps = tree.sorted_caps[node]
        low_level, _ = water(caps, int(lo[node]))
        high_level, high_extra = water(caps, int(hi[node]))
        for kid in kids:
            cap = tree.cap[kid]
            lo[kid] = min(cap, low_level)
            hi[kid] = min(cap, high_level) + (1 if high_extra > 0 and cap > high_level else 0)
    return lo, hi


def fair_shares(tree: PlanTree, rf: IntArray, num_brokers: int) -> FloatArray:
    """Each broker's fair share of replicas (0 for a broker outside the tree)."""
    shares = np.zeros(num_brokers, np.float64)
    if rf.size == 0 or tree.num_nodes == 0:
        return shares
    values, counts = np.unique(rf, return_counts=True)
    low = np.zeros(tree.num_nodes, np.float64)
    high = np.zeros(tree.num_nodes, np.float64)
    for k, n in zip(values.tolist(), counts.tolist(), strict=True):
        lo, hi = count_ranges(tree, int(k))
        low += n * lo
        high += n * hi
    node_share = np.zeros(tree.num_nodes, np.float64)
    node_share[0] = low[0]
    for node in range(tree.num_nodes):
        kids = tree.children[node]
        if kids:
            index = np.array(kids, dtype=np.int64)
            weight = np.array([tree.cap[k] for k in kids], dtype=np.float64)
            node_share[index] = _split(node_share[node], weight, low[index], high[index])
        elif tree.node_broker[node] >= 0:
            shares[tree.node_broker[node]] = node_share[node]
    return shares


def _split(total: float, weight: FloatArray, low: FloatArray, high: FloatArray) -> FloatArray:
    """``clip(lam * weight, low, high)`` summing to ``total`` (clamped into the feasible range):
    the sum is piecewise linear in ``lam`` with breaks where a child hits a bound, so find the
    piece and interpolate."""
    total = min(max(total, float(low.sum())), float(high.sum()))
    positive = weight > 0
    if not positive.any():
        return low.copy()
    breaks = np.unique(
        np.concatenate([[0.0], low[positive] / weight[positive], high[positive] / weight[positive]])
    )
    sums = np.clip(breaks[:, None] * weight[None, :], low, high).sum(axis=1)
    k = int(np.searchsorted(sums, total))
    if k == 0:
        lam = float(breaks[0])
    elif k >= breaks.size:
        lam = float(breaks[-1])
    else:
        a, b = float(breaks[k - 1]), float(breaks[k])
        lam = (
            a
            if sums[k] == sums[k - 1]
            else a + (b - a) * (total - sums[k - 1]) / (sums[k] - sums[k - 1])
        )
    out = np.clip(lam * weight, low, high)
    gap = total - float(out.sum())
    room = high - out if gap > 0 else out - low
    if abs(gap) > 1e-9 and room.sum() > 0:
        out = out + gap * room / room.sum()
    return out


def fixed_splits(tree: PlanTree, rf: IntArray) -> BoolArray:
    """``fixed[n]``: the spread rule decides how many replicas of every partition each child of
    n holds (the same low and high count for every replication factor present), so the bytes
    under each child are decided too: no move can shift bytes between them."""
    fixed = np.array([bool(kids) for kids in tree.children], dtype=np.bool_)
    for k in np.unique(rf).tolist():
        lo, hi = count_ranges(tree, int(k))
        loose = lo != hi
        for node, kids in enumerate(tree.children):
            if kids and loose[list(kids)].any():
                fixed[node] = False
    return fixed


def bounds(shares: FloatArray) -> tuple[IntArray, IntArray]:
    """The replica goal's bounds per broker: ``floor(t) .. ceil(t)`` (a whole share: exactly t)."""
    eps = 1e-6
    return (
        np.floor(shares + eps).astype(np.int64),
        np.ceil(shares - eps).astype(np.int64),
    )
