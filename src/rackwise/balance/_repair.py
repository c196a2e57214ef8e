"""Repair a partition that must change: keep every replica that may stay, place the rest.

Goals
    Fix a partition that is badly spread (``SpreadGoal``) or has a replica that cannot stay
    (``OfflineReplicaGoal``: in a failed log directory, or on a broker with no live one), moving
    as few replicas as possible and, among those choices, the smallest.

Constraints
    The result is evenly spread at every node of the tree; no broker holds two replicas; a
    broker that holds the partition in a failed directory does not get it back.

Algorithm
    A node holding c replicas must split them ``min(cap, L)`` per child plus one for ``extra``
    children with capacity above L (:func:`~rackwise.balance._spread.water`). Let
    ``best(n, c)`` be the most replicas (then bytes, then room of the brokers kept on, so that a
    tie keeps the replica on the less loaded broker) the partition can keep under node n when n
    holds c of them. A child's value at ``min(cap, L)`` is fixed; giving it one of the extras
    gains ``best(kid, base + 1) - best(kid, base)``, so ``best(n, c)`` takes the ``extra``
    largest gains: exact, since the choice is only which children get the extras. A leaf broker
    keeps its replica when it gets a count of one. Building the target descends the same way;
    extras that gain nothing go to the children with the most room (fair share minus replicas
    held), and new replicas land on the brokers with the most room. All repairs first drop
    what they do not keep, then place, so placement sees the cluster after every drop.

Example: racks /a (brokers 1, 2) and /b (brokers 3, 4), RF 2, replicas on 1 and 2. At the
root c = 2, L = 1, no extra: each rack gets one. Under /a the gains of 1 and 2 are equal (same
size), so broker 1 is kept (lower id on ties), 2's replica is dropped, and under /b the broker
with more room (say 4) gets the new replica: the target is (1, 4), one move.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from rackwise.balance._spread import water
from rackwise.balance._tree import PlanTree

Value = tuple[int, int, float]  # (replicas kept, bytes kept, room of the brokers kept on)
_NOTHING: Value = (0, 0, 0.0)


class PartitionRepair:
    """The keep-or-place decision for one partition (see the module docstring).

    ``holders`` maps each broker (index) whose replica may stay to its size; ``excluded`` lists
    brokers that may not take the partition; ``room`` (per tree node), if given, breaks ties
    between equally good keeps in favour of the brokers with the most room.
    """

    def __init__(
        self,
        tree: PlanTree,
        holders: dict[int, int],
        excluded: Sequence[int] = (),
        room: Sequence[float] | None = None,
    ) -> None:
        self.tree = tree
        self.holders = holders
        self.room = room
        self.excluded = frozenset(excluded)
        self.active: dict[int, list[int]] = {}
        for b in holders:
            chain = tree.chain_list[b]
            for i in range(len(chain) - 1):
                kids = self.active.setdefault(chain[i], [])
                if chain[i + 1] not in kids:
                    kids.append(chain[i + 1])
        self.lost: dict[int, int] = {}
        for b in excluded:
            for node in tree.chain_list[b]:
                self.lost[node] = self.lost.get(node, 0) + 1
        self.memo: dict[tuple[int, int], Value] = {}

    def cap(self, node: int) -> int:
        return self.tree.cap[node] - self.lost.get(node, 0)

    def _caps(self, node: int) -> Sequence[int]:
        if node not in self.lost:
            return self.tree.sorted_caps[node]
        return sorted(self.cap(k) for k in self.tree.children[node])

    def _leaf(self, node: int) -> Value:
        broker = self.tree.node_broker[node]
        if broker not in self.holders:
            return _NOTHING
        return (1, self.holders[broker], self.room[node] if self.room is not None else 0.0)

    def _ranked_holders(self, node: int) -> list[int]:
        """The holding brokers beneath a rack of brokers, best to keep first."""
        kids = self.active.get(node, [])
        values = {k: self._leaf(k) for k in kids}
        return sorted(kids, key=lambda k: (-values[k][1], -values[k][2], k))

    def best(self, node: int, count: int) -> Value:
        """The most replicas, then bytes, kept beneath ``node`` when it holds ``count``."""
        if count <= 0:
            return _NOTHING
        if self.tree.node_broker[node] >= 0:
            return self._leaf(node)
        kids = self.active.get(node)
        if not kids:
            return _NOTHING
        key = (node, count)
        if key in self.memo:
            return self.memo[key]
        if self.tree.broker_only[node]:
            value = _sum([self._leaf(k) for k in self._ranked_holders(node)[:count]])
        else:
            level, extra = water(self._caps(node), count)
            totals: list[Value] = []
            gains = self._base_and_gains(kids, level, extra, totals)[:extra]
            value = _sum(totals + [g for g, _ in gains])
        self.memo[key] = value
        return value

    def _base_and_gains(
        self, kids: list[int], level: int, extra: int, totals: list[Value]
    ) -> list[tuple[Value, int]]:
        """Append each active child's value at its base count to ``totals``; return the gains
        of one more replica that keep more, best first (ties: lower node first)."""
        gains: list[tuple[Value, int]] = []
        for kid in kids:
            cap = self.cap(kid)
            base = min(cap, level)
            now = self.best(kid, base)
            totals.append(now)
            if extra > 0 and cap > level:
                more = self.best(kid, base + 1)
                if more[0] > now[0] or (more[0] == now[0] and more[1] > now[1]):
                    gains.append(((more[0] - now[0], more[1] - now[1], more[2] - now[2]), kid))
                elif more[:2] == now[:2] and more[2] > now[2]:
                    gains.append(((0, 0, more[2] - now[2]), kid))
        gains.sort(key=lambda g: (-g[0][0], -g[0][1], -g[0][2], g[1]))
        return gains

    def build(self, count: int, room: Sequence[float] | None) -> tuple[list[int], list[int]]:
        """The brokers kept and the brokers to place new replicas on, for ``count`` replicas.
        With ``room`` None only the kept brokers are worked out."""
        kept: list[int] = []
        new: list[int] = []
        self._build(0, count, room, kept, new)
        return kept, new

    def _build(
        self,
        node: int,
        count: int,
        room: Sequence[float] | None,
        kept: list[int],
        new: list[int],
    ) -> None:
        tree = self.tree
        broker = tree.node_broker[node]
        if broker >= 0:
            (kept if broker in self.holders else new).append(broker)
            return
        if tree.broker_only[node]:
            self._pick_brokers(node, count, room, kept, new)
            return
        level, extra = water(self._caps(node), count)
        chosen: set[int] = set()
        if extra > 0:
            gains = self._base_and_gains(self.active.get(node, []), level, extra, [])
            chosen = {kid for _g, kid in gains[:extra]}
            spare = extra - len(chosen)
            if spare > 0 and room is not None:
                open_kids = [
                    k for k in tree.children[node] if k not in chosen and self.cap(k) > level
                ]
                chosen.update(heapq.nlargest(spare, open_kids, key=lambda k: (room[k], -k)))
        for kid in tree.children[node]:
            share = min(self.cap(kid), level) + (1 if kid in chosen else 0)
            if share > 0 and (room is not None or kid in self.active or tree.node_broker[kid] >= 0):
                self._build(kid, share, room, kept, new)

    def _pick_brokers(
        self,
        node: int,
        count: int,
        room: Sequence[float] | None,
        kept: list[int],
        new: list[int],
    ) -> None:
        """A rack of brokers gets ``count`` replicas: its best holders stay, the brokers with
        the most room take the rest."""
        node_broker = self.tree.node_broker
        take = self._ranked_holders(node)[:count]
        kept.extend(node_broker[k] for k in take)
        spare = count - len(take)
        if spare <= 0 or room is None:
            return
        holders, excluded = self.holders, self.excluded
        candidates = [
            k
            for k in self.tree.children[node]
            if node_broker[k] not in holders and node_broker[k] not in excluded
        ]
        if spare == 1:  # the common case; max keeps the first (lowest) node on ties
            new.append(node_broker[max(candidates, key=room.__getitem__)])
            return
        chosen = heapq.nlargest(spare, candidates, key=lambda k: (room[k], -k))
        new.extend(node_broker[k] for k in chosen)


def _sum(values: Sequence[Value]) -> Value:
    return (
        sum(v[0] for v in values),
        sum(v[1] for v in values),
        sum(v[2] for v in values),
    )
