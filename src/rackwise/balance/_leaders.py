"""``LeaderReplicaDistributionGoal``: every broker is the preferred leader (first replica) of
``floor(m) .. ceil(m)`` partitions, m = partitions / brokers that can hold replicas.

Goals
    Balance preferred leaders per broker by reordering replica lists only: a leader move copies
    no data, so this runs after every replica has found its broker and cannot disturb the goals
    before it.

Constraints
    A partition's leader is one of its replicas. "Where the topology allows" means: some choice
    of one replica per partition meets the bounds. The search below finds one whenever one
    exists (it is an augmenting-path search for a degree-bounded choice), so a broker is left
    outside its bounds only when no choice of leaders could fix it.

Algorithm
    Keep each current leader unless its broker is above the ceiling. *Rounds*: every partition
    led by a broker above the ceiling names its follower with the most room below the ceiling;
    each giver keeps its first ``excess`` candidates and each taker its first ``room``, and the
    survivors change leader at once (whole arrays, no loop per partition); likewise for brokers
    below the floor taking from leaders above it. *Direct*: what the rounds leave is handed over
    one partition at a time. *Chains*: for a broker still outside, a breadth-first search over
    "a leads a partition that b follows" finds a chain a -> b -> ... to a broker with room, and
    every link hands over one leadership.

Example: brokers 1, 2, 3, partitions (1, 2), (1, 3), (1, 2): m = 1, broker 1 leads all three.
One round: every partition names its follower with room (2, 3, 2); broker 1 may give two, so
partitions 0 and 1 are kept; takers 2 and 3 have room for one each: partition 0 goes to 2
(now (2, 1)) and partition 1 to 3. One leader each, two leader moves, no data.
"""

from __future__ import annotations

import itertools
from collections import deque
from typing import Final

import numpy as np

from rackwise.balance._layout import PAD
from rackwise.balance._work import Work, swap_many, swap_slots
from rackwise.balance.model import BoolArray, IntArray
from rackwise.common import RackwiseError

_MAX_CHAINS: Final = 10_000
_MAX_ROUNDS: Final = 50


def leader_bounds(work: Work) -> tuple[int, int]:
    """``floor(m), ceil(m)`` for m = partitions / brokers in the tree."""
    brokers = int((work.tree.leaf >= 0).sum())
    parts = int((work.lay.rf > 0).sum())
    if brokers == 0:
        return 0, 0
    return parts // brokers, -(-parts // brokers)


def leader_counts(tgt: IntArray, num_brokers: int) -> IntArray:
    leaders = tgt[:, 0]
    return np.bincount(leaders[leaders != PAD], minlength=num_brokers).astype(np.int64)


def leaders_outside(tgt: IntArray, lo: int, hi: int, in_tree: BoolArray) -> int:
    count = leader_counts(tgt, in_tree.size)
    return int(np.where(in_tree, (count < lo) | (count > hi), count > 0).sum())


def balance_leaders(work: Work) -> None:
    lo, hi = leader_bounds(work)
    in_tree = work.tree.leaf >= 0
    _rounds(work, lo, hi, in_tree, down=True)
    _rounds(work, lo, hi, in_tree, down=False)
    state = _Leaders(work)
    state.direct_down(hi)
    state.direct_up(lo)
    for _ in range(_MAX_CHAINS):
        count = np.array(state.count, dtype=np.int64)
        over = np.flatnonzero(in_tree & (count > hi))
        under = np.flatnonzero(in_tree & (count < lo))
        if over.size:
            start = int(over[0])
            room = np.where(in_tree, hi - count, 0)
            done = state.chain(start, int(count[start] - hi), room, forward=True)
        elif under.size:
            start = int(under[0])
            room = np.where(in_tree, count - lo, 0)
            done = state.chain(start, int(lo - count[start]), room, forward=False)
        else:
            break
        if not done:
            break


def _rank_in_group(keys: IntArray) -> IntArray:
    """Each element's position among the elements with the same key, in array order."""
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    starts = np.flatnonzero(np.concatenate([[True], ordered[1:] != ordered[:-1]]))
    group = np.cumsum(np.concatenate([[False], ordered[1:] != ordered[:-1]]))
    rank = np.empty(keys.size, np.int64)
    rank[order] = np.arange(keys.size) - starts[group]
    return rank


def _rounds(work: Work, lo: int, hi: int, in_tree: BoolArray, *, down: bool) -> None:
    """Direct hand-overs, many at once: brokers above the ceiling (``down``) give leaderships
    to followers below it, or brokers below the floor take them from leaders above it; each
    round caps every giver and taker by its excess or room so no one overshoots."""
    tgt = work.tgt
    num = work.lay.num_brokers
    for _ in range(_MAX_ROUNDS):
        count = leader_counts(tgt, num)
        if down:
            give = np.maximum(count - hi, 0)
            take = np.where(in_tree, np.maximum(hi - count, 0), 0)
        else:
            give = np.maximum(count - lo, 0)
            take = np.where(in_tree, np.maximum(lo - count, 0), 0)
        must = give if down else take
        if not must.any():
            return
        lead = tgt[:, 0]
        rows = np.flatnonzero((lead >= 0) & (give[np.maximum(lead, 0)] > 0))
        followers = tgt[rows, 1:]
        if followers.shape[1] == 0:
            return  # replication factor 1 everywhere: no follower to hand leadership to
        room = np.where(followers >= 0, take[np.maximum(followers, 0)], 0)
        col = room.argmax(axis=1)
        best = room[np.arange(rows.size), col]
        rows, col = rows[best > 0], col[best > 0]
        giver = tgt[rows, 0]
        rows, col = (
            rows[_rank_in_group(giver) < give[giver]],
            col[_rank_in_group(giver) < give[giver]],
        )
        taker = tgt[rows, col + 1]
        keep = _rank_in_group(taker) < take[taker]
        if not keep.any():
            return
        swap_many(work, rows[keep], col[keep] + 1)


class _Leaders:
    """Leader counts per broker (a Python list: the loops below touch one partition at a time)
    and the ``links`` matrix (a leads a partition that b follows); every leader change is a swap
    of replica positions applied to the work at once."""

    def __init__(self, work: Work) -> None:
        self.work = work
        self.rf = work.lay.rf
        num = work.lay.num_brokers
        self.count: list[int] = leader_counts(work.tgt, num).tolist()
        self.links = _links(work)
        lead = work.tgt[:, 0]
        rows = np.flatnonzero(lead >= 0)
        order = rows[np.argsort(lead[rows], kind="stable")]
        bounds = np.searchsorted(lead[order], np.arange(num + 1))
        # Partitions each broker led at the start, and those it was handed since.
        self.led = [order[bounds[b] : bounds[b + 1]] for b in range(num)]
        self.handed: list[list[int]] = [[] for _ in range(num)]

    def take_lead(self, p: int, j: int) -> None:
        tgt = self.work.tgt
        row = tgt[p, : self.rf[p]].tolist()
        old, new = row[0], row[j]
        for f in row:
            if f != old:
                self.links[old, f] -= 1
            if f != new:
                self.links[new, f] += 1
        self.count[old] -= 1
        self.count[new] += 1
        self.handed[new].append(p)
        swap_slots(self.work, p, 0, j)

    def direct_down(self, hi: int) -> None:
        count = self.count
        tgt = self.work.tgt
        for o in [b for b, c in enumerate(count) if c > hi]:
            led = self.led[o]
            for p, row in zip(led.tolist(), tgt[led].tolist(), strict=True):
                if count[o] <= hi:
                    break
                best, j = min(
                    ((count[b], k) for k, b in enumerate(row) if k > 0 and b >= 0),
                    default=(hi, 0),
                )
                if best < hi:
                    self.take_lead(p, j)

    def direct_up(self, lo: int) -> None:
        count = self.count
        tgt = self.work.tgt
        for u in [b for b, c in enumerate(count) if c < lo and self.work.tree.leaf[b] >= 0]:
            rows, cols = np.nonzero(tgt[:, 1:] == u)
            leaders = tgt[rows, 0].tolist()
            for p, j, leader in zip(rows.tolist(), cols.tolist(), leaders, strict=True):
                if count[u] >= lo:
                    break
                if count[leader] > lo and tgt[p, 0] == leader:
                    self.take_lead(p, j + 1)

    def chain(self, start: int, units: int, room: IntArray, *, forward: bool) -> bool:
        """Find a chain of hand-overs from ``start`` (forward: start gives leaderships away)
        or to it (backward: start receives them) ending at a broker with ``room``, and push as
        many leaderships along it as the start needs, the end has room for and every link
        carries (the partitions one broker leads and the next follows)."""
        graph = self.links if forward else self.links.T
        came = {start: start}
        queue = deque([start])
        while queue:
            a = queue.popleft()
            for b in np.flatnonzero(graph[a] > 0).tolist():
                if b in came:
                    continue
                came[b] = a
                if room[b] > 0:
                    path = [b]
                    while path[-1] != start:
                        path.append(came[path[-1]])
                    path.reverse()
                    pairs = list(itertools.pairwise(path))
                    width = min(int(graph[x, y]) for x, y in pairs)
                    push = max(1, min(units, int(room[b]), width))
                    for x, y in pairs if forward else [(y, x) for x, y in pairs]:
                        self.hand_over(x, y, push)
                    return True
                queue.append(b)
        return False

    def hand_over(self, leader: int, follower: int, units: int = 1) -> None:
        """Hand ``units`` leaderships of partitions ``leader`` leads and ``follower`` follows."""
        tgt = self.work.tgt
        rows = np.unique(
            np.concatenate([self.led[leader], np.array(self.handed[leader], np.int64)])
        )
        hit = (tgt[rows, 1:] == follower) & (tgt[rows, :1] == leader)
        found, cols = np.nonzero(hit)
        if found.size < units:
            raise RackwiseError(
                f"BUG: {found.size} partitions led by {leader} are followed by {follower}, "
                f"{units} needed"
            )
        for k in range(units):
            self.take_lead(int(rows[found[k]]), int(cols[k]) + 1)


def _links(work: Work) -> IntArray:
    """``links[a, b]``: partitions that a leads and b follows."""
    size = work.lay.num_brokers
    out = np.zeros(size * size, np.int64)
    lead = work.tgt[:, 0]
    for j in range(1, work.tgt.shape[1]):
        follow = work.tgt[:, j]
        ok = (follow != PAD) & (lead != PAD)
        out += np.bincount(lead[ok] * size + follow[ok], minlength=size * size)
    return out.reshape(size, size)
