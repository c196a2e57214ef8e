"""``DiskUsageDistributionGoal``: every broker holds within 10% of its share of the bytes.

Goals
    Even out bytes per broker after replica counts are balanced, as far as the topology and the
    replica sizes allow. A broker's byte target is handed down the rack tree
    (:func:`byte_targets`): where the spread rule fixes how many replicas of every partition
    each child of a node holds (three data centres at replication factor 3 hold one each), the
    children keep the bytes they have, since no move can shift them; elsewhere the node's target
    is shared in proportion to the children's replica shares, except that a child holding a
    replica larger than its part has that replica as its target (replicas cannot be split: with
    Zipf-like topics one partition can outweigh a broker's share), the others' parts shrinking
    to make up for it (:func:`level_targets`). It is met within ``BALANCE_THRESHOLD``
    (Cruise Control's default disk balance threshold, 1.10) of the share either way, or within
    one mean replica where that is more (a small cluster cannot do better).

Constraints
    Replica counts stay within their bounds (a single move only from a broker above its floor to
    one below its ceiling, otherwise a swap); partitions stay evenly spread; no broker gets a
    second replica of a partition.

Algorithm
    First, a broker holding two or more replicas each over half its target keeps the largest
    and hands the others to the nearest brokers holding none (no exchange of small replicas can
    balance it). Then, for each broker above its share by more than the tolerance, most excess
    first, and receivers
    below their share, nearest region first: move the largest replica that fits the gap (the
    most that leaves both within their tolerance on the other side), or, when counts forbid a
    single move, the swap of one of its replicas x for one of the receiver's y that carries the
    most bytes ``x - y`` within the gap. Then the same for each broker below its share, taking
    from the nearest brokers above theirs. Stop when every broker is within the tolerance, or
    when the best move would carry less than ``_USEFUL`` of its gap (a flood of tiny moves
    is not worth the last few percent).

Example: brokers 1 and 2 in one rack with 100 and 60 GB over replicas of 10, 20, 30, 40 GB
(broker 1) and 25, 35 GB (broker 2), counts already balanced as 4 and 2 of shares 3 and 3:
broker 1 sends its 20 GB replica to broker 2, both reach 80 GB.
"""

from __future__ import annotations

from typing import Final

import numpy as np

from rackwise.balance._counts import SlotIndex
from rackwise.balance._spread import spread_ok
from rackwise.balance._tree import PlanTree
from rackwise.balance._work import BYTES, Work
from rackwise.balance.model import BoolArray, FloatArray, IntArray

BALANCE_THRESHOLD: Final = 1.10
"""A load is balanced within this factor of its target, either way (Cruise Control's default
``disk.balance.threshold``)."""

_CANDIDATES: Final = 8
_USEFUL: Final = 0.01
_PARTNERS: Final = 4
"""Partners tried, most in need first, before a broker's balancing leaves a region."""
"""A byte move must carry at least this share of the gap it works on."""
_MAX_ROUNDS: Final = 5


def level_targets(total: float, weight: FloatArray, floor: FloatArray) -> FloatArray:
    """``max(L * weight, floor)`` summing to ``total``: shares in proportion to ``weight``, but
    never below ``floor`` (a broker's or directory's largest replica, which it cannot hold in
    part). ``L`` is found exactly: the sum is piecewise linear in it."""
    if weight.size == 0 or total <= 0:
        return np.maximum(np.zeros_like(weight), floor)
    total = max(total, float(floor.sum()))
    positive = weight > 0
    breaks = np.unique(np.concatenate([[0.0], floor[positive] / weight[positive]]))
    sums = np.maximum(breaks[:, None] * weight[None, :], floor[None, :]).sum(axis=1)
    k = int(np.searchsorted(sums, total))
    if k >= breaks.size:
        free = float(weight[positive].sum())
        level = float(breaks[-1]) + (total - float(sums[-1])) / free if free > 0 else 0.0
    elif k == 0:
        level = float(breaks[0])
    else:
        a, b = float(breaks[k - 1]), float(breaks[k])
        level = a + (b - a) * (total - float(sums[k - 1])) / float(sums[k] - sums[k - 1])
    return np.maximum(level * weight, floor)


def largest(brokers: IntArray, sizes: IntArray, size: int) -> FloatArray:
    """The largest replica on each of ``size`` owners (0 for none)."""
    out = np.zeros(size, np.float64)
    ok = brokers >= 0
    owners, values = brokers[ok], sizes[ok]
    if owners.size == 0:
        return out
    small = np.int16 if size < 2**15 else np.int32  # int16: radix sort
    order = np.argsort(owners.astype(small), kind="stable")
    owners, values = owners[order], values[order]
    starts = np.flatnonzero(np.concatenate([[True], owners[1:] != owners[:-1]]))
    out[owners[starts]] = np.maximum.reduceat(values, starts)
    return out


def byte_targets(
    tree: PlanTree, shares: FloatArray, fixed: BoolArray, load: IntArray, biggest: FloatArray
) -> FloatArray:
    """Each broker's byte target, handed down the tree from the bytes its brokers hold: where
    the spread rule fixes each child's replicas (``fixed``), each child keeps the bytes it has;
    elsewhere the children share the node's target in proportion to their replica shares,
    raised to their largest replica where that is more (:func:`level_targets`)."""
    num = tree.num_nodes
    node_bytes = np.zeros(num, np.float64)
    node_share = np.zeros(num, np.float64)
    node_big = np.zeros(num, np.float64)
    for b, chain in enumerate(tree.chain_list):
        if chain:
            nodes = list(chain)
            node_bytes[nodes] += load[b]
            node_share[nodes] += shares[b]
            node_big[nodes] = np.maximum(node_big[nodes], biggest[b])
    target = np.zeros(num, np.float64)
    target[0] = node_bytes[0]
    for node, kids in enumerate(tree.children):
        if not kids:
            continue
        index = np.array(kids, dtype=np.int64)
        if fixed[node]:
            scale = target[node] / node_bytes[node] if node_bytes[node] > 0 else 0.0
            target[index] = node_bytes[index] * scale
        else:
            weight = node_share[index]
            weight = (
                weight / weight.sum() if weight.sum() > 0 else np.full(index.size, 1 / index.size)
            )
            target[index] = level_targets(float(target[node]), weight, node_big[index])
    out = np.zeros(shares.size, np.float64)
    inside = tree.leaf >= 0
    out[inside] = target[tree.leaf[inside]]
    return out


def tolerance(target: FloatArray, mean_size: float | FloatArray) -> FloatArray:
    """How far a load may stray from its target: 10%, but never less than a mean replica (a
    cluster too small for 10% cannot be balanced finer than its replicas)."""
    return np.maximum(target * (BALANCE_THRESHOLD - 1.0), mean_size)


def bytes_outside(load: IntArray, target: FloatArray, in_tree: BoolArray, mean_size: float) -> int:
    off = np.abs(load - target) > tolerance(target, mean_size)
    return int((in_tree & off).sum())


def balance_bytes(work: Work, lo: IntArray, hi: IntArray) -> None:
    in_tree = work.tree.leaf >= 0
    present = work.tgt >= 0
    mean_size = float(work.size[present].mean()) if present.any() else 0.0
    for _ in range(_MAX_ROUNDS):
        biggest = largest(work.tgt[present], work.size[present], work.lay.num_brokers)
        target = byte_targets(work.tree, work.shares, work.fixed, work.load, biggest)
        slack = tolerance(target, mean_size)
        if bytes_outside(work.load, target, in_tree, mean_size) == 0:
            return  # the goal holds: no move, not even a swap of large replicas
        index = SlotIndex(work, by_size_only=True)
        moved = _spread_large(work, index, target, lo, hi)
        excess = work.load - target - slack
        over = np.flatnonzero(in_tree & (excess > 0))
        for o in over[np.argsort(-excess[over], kind="stable")].tolist():
            moved += _even(work, index, o, target, slack, lo, hi, giving=True)
        short = target - slack - work.load
        under = np.flatnonzero(in_tree & (short > 0))
        for u in under[np.argsort(-short[under], kind="stable")].tolist():
            moved += _even(work, index, u, target, slack, lo, hi, giving=False)
        if moved == 0:
            return


def _spread_large(
    work: Work, index: SlotIndex, target: FloatArray, lo: IntArray, hi: IntArray
) -> int:
    """A broker holding two or more replicas each larger than half its target keeps the
    largest and hands each other one to the nearest broker holding none, the one furthest below
    its target first (a swap for that broker's smallest replica when counts forbid a single
    move). No exchange of small replicas could balance such a broker."""
    width = index.width
    large: dict[int, list[tuple[int, int]]] = {}
    for b in np.flatnonzero(work.tree.leaf >= 0).tolist():
        sizes = index.sizes[index.start[b] : index.stop[b]]
        first = int(np.searchsorted(sizes, 0.5 * target[b], side="right"))
        slots = index.of(b)[first:].tolist()
        large[b] = [(int(sizes[first + i]), s) for i, s in enumerate(slots)]
    holders = {b for b, found in large.items() if found}
    moved = 0
    for b, found in large.items():
        for _size, slot in sorted(found)[:-1]:
            p, j = divmod(slot, width)
            if work.tgt[p, j] == b and _hand_large(work, index, b, p, j, holders, target, lo, hi):
                moved += 1
    return moved


def _hand_large(
    work: Work,
    index: SlotIndex,
    b: int,
    p: int,
    j: int,
    holders: set[int],
    target: FloatArray,
    lo: IntArray,
    hi: IntArray,
) -> bool:
    for _node, near in work.regions(b):
        free = near[[q not in holders for q in near.tolist()]]
        if free.size == 0:
            continue
        room = target[free] - work.load[free]
        for q in free[np.argsort(-room, kind="stable")][:_PARTNERS].tolist():
            if not _fits(work, p, b, q):
                continue
            if work.count[b] > lo[b] and work.count[q] < hi[q]:
                work.place(p, j, q, BYTES)
            else:
                back = _smallest_movable(work, index, q, b, p)
                if back is None:
                    continue
                work.place(p, j, q, BYTES)
                work.place(back[0], back[1], b, BYTES)
            holders.add(q)
            return True
    return False


def _smallest_movable(
    work: Work, index: SlotIndex, r: int, o: int, p: int
) -> tuple[int, int] | None:
    """One of r's smallest replicas (not of partition p) that may move to o."""
    tried = 0
    for slot in index.of(r).tolist():
        q, i = divmod(slot, index.width)
        if work.tgt[q, i] != r or q == p:
            continue
        if tried >= _CANDIDATES:
            return None
        tried += 1
        if _fits(work, q, r, o):
            return q, i
    return None


def _even(
    work: Work,
    index: SlotIndex,
    b: int,
    target: FloatArray,
    slack: FloatArray,
    lo: IntArray,
    hi: IntArray,
    *,
    giving: bool,
) -> int:
    """Bring broker b back within its slack: it gives to (or takes from) the nearest brokers
    below (above) their byte target, one replica (or swap) at a time, trying the partners most
    in need first (a swap of a large replica needs a partner holding one of the right size)."""
    moved = 0
    sign = 1.0 if giving else -1.0
    for _node, near in work.regions(b):
        while sign * (work.load[b] - target[b]) > slack[b]:
            other = sign * (target[near] - work.load[near])
            partners = near[other > 0]
            if partners.size == 0:
                break
            order = np.argsort(-other[other > 0], kind="stable")[:_PARTNERS]
            if not any(
                _exchange(work, index, b, int(q), target, slack, lo, hi, sign)
                for q in partners[order].tolist()
            ):
                break
            moved += 1
        if sign * (work.load[b] - target[b]) <= slack[b]:
            break
    return moved


def _exchange(
    work: Work,
    index: SlotIndex,
    b: int,
    q: int,
    target: FloatArray,
    slack: FloatArray,
    lo: IntArray,
    hi: IntArray,
    sign: float,
) -> bool:
    """One move or swap between b and partner q, b giving (sign 1) or taking (sign -1): at
    most what leaves both within their slack on the other side, so larger replicas fit and
    fewer moves carry the same bytes."""
    gap = min(
        sign * (work.load[b] - target[b]) + slack[b],
        sign * (target[q] - work.load[q]) + slack[q],
    )
    giver, taker = (b, q) if sign > 0 else (q, b)
    return _move_largest(work, index, giver, taker, gap, lo, hi)


def _fits(work: Work, p: int, src: int, dst: int) -> bool:
    """Partition p's replica on ``src`` may move to ``dst``."""
    row = work.row(p)
    excluded = work.excluded.get(p, ())
    if dst in row or dst in excluded or not work.allows(p, src, dst):
        return False
    return spread_ok(work.tree, [dst if x == src else x for x in row], excluded)


def _move_largest(
    work: Work, index: SlotIndex, o: int, r: int, gap: float, lo: IntArray, hi: IntArray
) -> bool:
    """Move bytes from o to r, at most ``gap`` of them and as many as one move can: o's
    largest replica that fits (when counts allow a single move), else the swap of one of o's
    replicas x for one of r's y with the largest ``x - y <= gap``. A move that would carry
    less than ``_USEFUL`` of the gap is not made (the balance is then as good as it gets
    without a flood of tiny moves)."""
    slots = index.of(o)
    sizes = index.sizes[index.start[o] : index.stop[o]]
    useful = _USEFUL * gap
    if work.count[o] > lo[o] and work.count[r] < hi[r]:
        k = _largest_fitting(work, index, slots, sizes, o, r, gap)
        if k >= 0 and sizes[k] >= useful:
            p, j = divmod(int(slots[k]), index.width)
            work.place(p, j, r, BYTES)
            return True
        return False
    best = _best_swap(work, index, o, r, gap)
    if best is None or best[0] < useful:
        return False
    _, (p, j), (q, i) = best
    work.place(p, j, r, BYTES)
    work.place(q, i, o, BYTES)
    return True


def _largest_fitting(
    work: Work, index: SlotIndex, slots: IntArray, sizes: IntArray, o: int, r: int, gap: float
) -> int:
    """Position (in o's index) of o's largest replica of at most ``gap`` bytes that may move
    to r; -1 if none among the first ``_CANDIDATES`` tried."""
    tried = 0
    for k in range(int(np.searchsorted(sizes, gap, side="right")) - 1, -1, -1):
        if tried >= _CANDIDATES or sizes[k] <= 0:
            return -1
        p, j = divmod(int(slots[k]), index.width)
        if work.tgt[p, j] != o:
            continue
        tried += 1
        if _fits(work, p, o, r):
            return k
    return -1


def _best_swap(
    work: Work, index: SlotIndex, o: int, r: int, gap: float
) -> tuple[float, tuple[int, int], tuple[int, int]] | None:
    """The swap of x (on o) for y (on r) carrying the most bytes ``x - y`` up to ``gap``: for
    each of o's largest replicas, r's smallest replica of at least ``x - gap``."""
    slots_o, slots_r = index.of(o), index.of(r)
    sizes_o = index.sizes[index.start[o] : index.stop[o]]
    sizes_r = index.sizes[index.start[r] : index.stop[r]]
    best: tuple[float, tuple[int, int], tuple[int, int]] | None = None
    seen = 0
    for k in range(slots_o.size - 1, -1, -1):
        if seen >= _CANDIDATES or sizes_o[k] <= 0:
            break
        x = int(sizes_o[k])
        if best is not None and x <= best[0]:
            break  # no smaller x can carry more
        p, j = divmod(int(slots_o[k]), index.width)
        if work.tgt[p, j] != o:
            continue
        seen += 1
        if not _fits(work, p, o, r):
            continue
        start = int(np.searchsorted(sizes_r, x - gap, side="left"))
        for m in range(start, min(start + _CANDIDATES, slots_r.size)):
            y = int(sizes_r[m])
            if y >= x:
                break
            q, i = divmod(int(slots_r[m]), index.width)
            if q == p or work.tgt[q, i] != r or not _fits(work, q, r, o):
                continue
            if best is None or x - y > best[0]:
                best = (float(x - y), (p, j), (q, i))
            break
    return best
