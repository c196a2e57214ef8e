"""``ReplicaDistributionGoal``: every broker holds ``floor(t_b) .. ceil(t_b)`` replicas.

Goals
    Bring every broker within its bounds (``t_b`` is its fair share, see
    :mod:`~rackwise.balance._shares`), moving as little data as possible.

Constraints
    A move keeps the partition evenly spread (checked unless source and destination share a
    rack, where no count at any node changes); no broker gets a second replica of a partition
    or one it holds in a failed directory.

Algorithm
    Two greedy passes over a per-broker index of replica positions sorted cheapest first:
    replicas this plan already moved onto the broker (moving them again copies nothing new),
    then the smallest. *Shed*: each broker above its ceiling, most loaded first, hands its
    cheapest replicas to the receiver with the largest deficit (share minus count) below its
    ceiling, looking in its own rack first, then in each enclosing node. *Fill*: each broker
    below its floor takes the cheapest replicas of the most loaded donors above their floor, near
    first. Each pass stops early on a broker after a run of replicas that cannot move. When the
    brokers a replica may go to are all full (or all the donors a broker may take from are at
    their floor), a two-step move goes through one of them: it passes one of its own replicas
    on (or takes one from a donor), then takes (or gives) the one in question.

Example: one rack, brokers 1, 2, 3 with 5, 1, 3 replicas of single-replica partitions: the
shares are 3 each, broker 1 sheds its two smallest replicas to broker 2 (deficit 2), and the
counts become 3, 3, 3: two moves, which is also the lower bound.
"""

from __future__ import annotations

from typing import Final

import numpy as np

from rackwise.balance._spread import spread_ok
from rackwise.balance._work import REPLICAS, Work
from rackwise.balance.model import BoolArray, IntArray

_TRIES: Final = 2
"""Receivers tried under each child of a region's node (donors tried in a row without success
before a fill leaves a region)."""
_GIVE_UP: Final = 4096
"""Consecutive replicas of one broker that could not move before the pass leaves that broker
(a replica can be stuck because every nearby receiver holds its partition or may not take it)."""
_RELAY: Final = 8
"""Replicas tried at the moving end of a two-step move."""
_RELAY_MIDDLE: Final = 256
"""Replicas tried on a middle broker of a two-step move (a scan that stops at the first that
can move on). Deeper than ``_RELAY``: where the
spread rule leaves few partitions free to go where there is room (a leaf rack that must hold
nearly every partition, under ``rack-aware``), a broker's cheapest replicas are the ones
already moved or blocked, round after round."""
_DEAD: Final = 32
"""Consecutive refusals (by the spread rule) after which a region is skipped for a while."""


class SlotIndex:
    """Replica positions (``p * width + j``) grouped by broker, cheapest to move first. Built
    once per pass with two radix sorts over a size order kept for the whole plan; positions
    that have since moved away are skipped by the reader."""

    def __init__(self, work: Work, *, by_size_only: bool = False) -> None:
        tgt = work.tgt
        self.width = tgt.shape[1]
        flat = tgt.ravel()
        order = work.size_order[flat[work.size_order] >= 0]
        if not by_size_only:
            original = (tgt[:, :, None] == work.lay.cur[:, None, :]).any(axis=2).ravel()
            order = order[np.argsort(original[order].astype(np.int8), kind="stable")]
        brokers = flat[order]
        small = np.int16 if work.lay.num_brokers < 2**15 else np.int32  # int16: radix sort
        order = order[np.argsort(brokers.astype(small), kind="stable")]
        self.slots = order
        self.sizes = work.size.ravel()[order]
        bounds = np.searchsorted(flat[order], np.arange(work.lay.num_brokers + 1))
        self.start = bounds[:-1]
        self.stop = bounds[1:]

    def of(self, broker: int) -> IntArray:
        return self.slots[self.start[broker] : self.stop[broker]]


def destination(
    work: Work,
    p: int,
    src: int,
    want: BoolArray,
    dead: dict[int, list[int]] | None = None,
) -> int:
    """The broker to move partition p's replica on ``src`` to: among brokers with ``want``
    true, not holding p and free for it, the one with the largest deficit, nearest region
    first; a move across racks must keep p evenly spread (tried on the best ``_TRIES`` brokers
    under each child of the region's node, since the rule mostly cares which child). ``-1`` if
    none.

    ``dead`` keeps, per region node, ``[refusals in a row, replicas to skip]`` for moves out of
    ``src``: after ``_DEAD`` refusals by the spread rule in a row the region is skipped for as
    many replicas as it refused (a back-off: where the rule forbids every move, as across data
    centres at one replica per data centre, it is rarely tried; where it only forbade some
    partitions, it is tried again soon)."""
    tree = work.tree
    row = work.row(p)
    excluded = work.excluded.get(p, ())
    deficit = work.shares - work.count
    for node, near in work.regions(src):
        backoff = dead.setdefault(node, [0, 0]) if dead is not None else None
        if backoff is not None and backoff[1] > 0:
            backoff[1] -= 1
            continue
        cand = near[want[near]]
        if cand.size == 0:
            continue
        cand = cand[np.argsort(-deficit[cand], kind="stable")]
        if tree.broker_only[node]:
            for b in cand.tolist():
                if b not in row and b not in excluded and work.allows(p, src, b):
                    return int(b)
            continue
        found = _try_across(work, cand, node, p, src)
        if found >= 0:
            if backoff is not None:
                backoff[0] = 0
            return found
        if backoff is not None:
            backoff[0] += 1
            if backoff[0] >= _DEAD:
                backoff[1] = backoff[0]
    return -1


def _try_across(work: Work, cand: IntArray, node: int, p: int, src: int) -> int:
    """The first of ``cand`` (best first) that keeps the partition evenly spread, trying at
    most ``_TRIES`` under each child of ``node``. When the moving replica is the partition's
    only one beneath ``node``, every destination there keeps the spread (the counts at ``node``
    keep their shape, and each side below holds at most that one replica), so none is checked."""
    tree = work.tree
    row = work.row(p)
    excluded = work.excluded.get(p, ())
    depth = int(tree.rack_tree.depth[node])
    chains = tree.chain_list
    alone = sum(1 for x in row if len(chains[x]) > depth and chains[x][depth] == node) == 1
    kids = tree.chains[cand, depth + 1].tolist()
    tries: dict[int, int] = {}
    for b, kid in zip(cand.tolist(), kids, strict=True):
        if b in row or b in excluded or tries.get(kid, 0) >= _TRIES:
            continue
        if not work.allows(p, src, b):
            continue
        if alone and not excluded:
            return int(b)
        tries[kid] = tries.get(kid, 0) + 1
        if spread_ok(tree, [b if x == src else x for x in row], excluded):
            return int(b)
    return -1


def balance_replicas(work: Work, lo: IntArray, hi: IntArray) -> None:
    """Shed, then fill (see the module docstring), at most three rounds."""
    in_tree = work.tree.leaf >= 0
    for _ in range(3):
        index = SlotIndex(work)
        moved = _shed(work, index, lo, hi, in_tree) + _fill(work, index, lo, hi, in_tree)
        if moved == 0:
            break


def _shed(work: Work, index: SlotIndex, lo: IntArray, hi: IntArray, in_tree: BoolArray) -> int:
    over = np.flatnonzero(in_tree & (work.count > hi))
    moved = 0
    for o in over[np.argsort(-(work.count[over] - hi[over]), kind="stable")].tolist():
        stuck = 0
        dead: dict[int, list[int]] = {}
        for slot in index.of(o).tolist():
            if work.count[o] <= hi[o] or stuck >= _GIVE_UP:
                break
            p, j = divmod(slot, index.width)
            if work.tgt[p, j] != o:
                continue
            want = in_tree & (work.count < hi)
            dst = destination(work, p, o, want, dead)
            if dst < 0:
                stuck += 1
                continue
            work.place(p, j, dst, REPLICAS)
            moved += 1
            stuck = 0
        while work.count[o] > hi[o] and _relay_out(work, index, o, hi, in_tree, _RELAY_MIDDLE):
            moved += 2
    return moved


def _movers(work: Work, index: SlotIndex, b: int, limit: int) -> list[tuple[int, int]]:
    """Up to ``limit`` of b's replica positions (p, j) still on b, cheapest first."""
    out: list[tuple[int, int]] = []
    for slot in index.of(b).tolist():
        p, j = divmod(slot, index.width)
        if work.tgt[p, j] == b:
            out.append((p, j))
            if len(out) >= limit:
                break
    return out


def _movers_toward(
    work: Work, index: SlotIndex, b: int, limit: int, want: BoolArray
) -> list[tuple[int, int]]:
    """Up to ``limit`` of b's replica positions still on b, cheapest first: those whose
    partition has no replica in a leaf rack of a ``want`` broker (the likely ones to move
    there), then at most ``_RELAY`` of the others (as many as a shallow search tries)."""
    movers = _movers(work, index, b, limit)
    if len(movers) <= _RELAY:
        return movers
    leaves = work.tree.leaf
    wanted = np.zeros(int(leaves.max(initial=-1)) + 2, np.bool_)
    wanted[leaves[want & (leaves >= 0)]] = True
    rows = work.tgt[np.fromiter((p for p, _ in movers), np.int64, len(movers))]
    row_leaves = np.where(rows >= 0, leaves[np.maximum(rows, 0)], -1)
    blocked = wanted[row_leaves].any(axis=1)
    free = np.flatnonzero(~blocked).tolist()
    return [movers[k] for k in free + np.flatnonzero(blocked)[:_RELAY].tolist()]


def _may_move(work: Work, p: int, src: int, dst: int, node: int) -> bool:
    row = work.row(p)
    excluded = work.excluded.get(p, ())
    if dst in row or dst in excluded or not work.allows(p, src, dst):
        return False
    if work.tree.broker_only[node]:
        return True
    return spread_ok(work.tree, [dst if x == src else x for x in row], excluded)


def _relay_out(
    work: Work, index: SlotIndex, o: int, hi: IntArray, in_tree: BoolArray, depth: int
) -> bool:
    """Shed one replica of ``o`` whose neighbours are all full: find a full broker m that may
    take one of o's replicas and can itself pass one of its own to a broker with room, and make
    both moves (an augmenting path of two steps), trying ``depth`` of m's replicas."""
    want = in_tree & (work.count < hi)
    if not want.any():
        return False
    full = in_tree & (work.count >= hi)
    full[o] = False
    for p, j in _movers(work, index, o, _RELAY):
        for node, near in work.regions(o):
            middle = [m for m in near[full[near]].tolist() if _may_move(work, p, o, m, node)]
            for m in middle[:_TRIES]:
                for q, i in _movers_toward(work, index, m, depth, want):
                    dst = destination(work, q, m, want)
                    if dst >= 0 and dst != o:
                        work.place(q, i, dst, REPLICAS)
                        work.place(p, j, m, REPLICAS)
                        return True
    return False


def _fill(work: Work, index: SlotIndex, lo: IntArray, hi: IntArray, in_tree: BoolArray) -> int:
    under = np.flatnonzero(in_tree & (work.count < lo))
    moved = 0
    for u in under[np.argsort(work.count[under] - lo[under], kind="stable")].tolist():
        for node, near in work.regions(u):
            if work.count[u] >= lo[u]:
                break
            moved += _pull(work, index, u, node, near, lo)
        while work.count[u] < lo[u] and _relay_in(work, index, u, lo, in_tree):
            moved += 2
    return moved


def _relay_in(work: Work, index: SlotIndex, u: int, lo: IntArray, in_tree: BoolArray) -> bool:
    """Bring one replica to ``u`` when no donor can give it one directly: find a broker m that
    may pass one of its replicas to u and take one from a donor above its floor in turn."""
    donors = in_tree & (work.count > lo)
    donors[u] = False
    if not donors.any():
        return False
    for node, near in work.regions(u):
        for m in near[in_tree[near] & (near != u)].tolist()[: 4 * _RELAY]:
            for q, i in _movers(work, index, m, _RELAY):
                if not _may_move(work, q, m, u, node):
                    continue
                source = _source(work, index, m, donors)
                if source is not None:
                    r, k, _donor = source
                    work.place(r, k, m, REPLICAS)
                    work.place(q, i, u, REPLICAS)
                    return True
    return False


def _source(work: Work, index: SlotIndex, m: int, donors: BoolArray) -> tuple[int, int, int] | None:
    """A replica (p, j) on a donor d that may move to m, nearest donors first."""
    for node, near in work.regions(m):
        cand = near[donors[near] & (near != m)]
        surplus = work.count[cand] - work.shares[cand]
        for d in cand[np.argsort(-surplus, kind="stable")][:_TRIES].tolist():
            for p, j in _movers(work, index, d, _RELAY):
                if _may_move(work, p, d, m, node):
                    return p, j, d
    return None


def _pull(work: Work, index: SlotIndex, u: int, node: int, near: IntArray, lo: IntArray) -> int:
    """Move replicas from the donors in ``near`` (above their floor) onto ``u``."""
    tree = work.tree
    moved = 0
    donors = near[work.count[near] > lo[near]]
    surplus = work.count[donors] - work.shares[donors]
    barren = 0
    for d in donors[np.argsort(-surplus, kind="stable")].tolist():
        if work.count[u] >= lo[u] or barren >= _TRIES:
            break
        stuck = 0
        gave = moved
        for slot in index.of(d).tolist():
            if work.count[u] >= lo[u] or work.count[d] <= lo[d] or stuck >= _GIVE_UP:
                break
            p, j = divmod(slot, index.width)
            if work.tgt[p, j] != d:
                continue
            row = work.row(p)
            excluded = work.excluded.get(p, ())
            ok = u not in row and u not in excluded and work.allows(p, d, u)
            if ok and not tree.broker_only[node]:
                ok = spread_ok(tree, [u if x == d else x for x in row], excluded)
            if not ok:
                stuck += 1
                continue
            work.place(p, j, u, REPLICAS)
            moved += 1
            stuck = 0
        barren = barren + 1 if moved == gave else 0
    return moved


def replicas_outside(count: IntArray, lo: IntArray, hi: IntArray, in_tree: BoolArray) -> int:
    """Brokers outside their bounds (a broker outside the tree violates if it holds any)."""
    bad = np.where(in_tree, (count < lo) | (count > hi), count > 0)
    return int(bad.sum())
