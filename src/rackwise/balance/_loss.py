"""``DomainLossGoal``: after losing any one top-level domain (a data centre), every partition
keeps ``min.insync.replicas`` replicas in ``min.insync.racks`` domains wherever its
replication factor allows it.

Goals
    A partition is *exposed* to the loss of top-level domain t when it has a replica in t and
    what is left is under ``min.insync.replicas`` (offline included) or spans fewer than
    ``min.insync.racks`` domains at ``min.insync.racks.level``: the audit's three if-lost
    counts (offline, under min ISR, refusing acks=all writes) together. The goal moves
    replicas of every exposed partition that some placement of its factor protects
    (:func:`rackwise.topology.loss.protectable`, on the brokers the plan may use) until no top-level
    domain exposes it, and reports those no placement protects with the smallest factor that
    would.
Constraints
    Below the hard goals: a move keeps one replica per broker, stays off brokers the partition
    may not use and keeps the partition evenly spread on the strategy's tree (``spread_ok``),
    and is made only when it exposes the partition to no top-level domain it was safe from
    (so no domain's count grows). Above the balance goals: :meth:`Guard.allows` is the same
    test, and the balance goals ask it of every move that crosses a domain; it keeps a tally
    per partition, so a move is judged in O(replicas of the partition). A partition is judged
    protectable on the usable brokers less those holding it in a failed directory
    (:class:`Verdicts`).
Algorithm
    The exposed partitions are found with numpy per rule; each is then repaired by an exact
    search over classes of alike brokers (:mod:`~rackwise.balance._loss_repair`), before the
    balance goals and again after them.
Worked example
    Brokers 0..3 in ``/dc1``, 4, 5 in ``/dc2``, 6, 7 in ``/dc3`` (rack-aware, so data centres
    are not spread), RF 3 on 0, 1, 4, ``min.insync.racks=2``: losing ``/dc2`` leaves two
    replicas in ``/dc1`` only. Moving the replica on 1 to 6 protects it.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from rackwise.balance._layout import PAD, layout
from rackwise.balance._tree import build_tree
from rackwise.balance._work import Work
from rackwise.balance.model import ClusterInput, DomainRule, IntArray
from rackwise.topology import domain_at
from rackwise.topology.loss import loss_tree, protectable, smallest_protecting_rf


class _Tally:
    """One partition's replicas counted for its rule: per top-level domain, per domain at the
    rule's level, and the distinct such domains in each top-level domain (a domain lies in
    exactly one top-level domain, so losing t loses ``width[t]`` of them whole)."""

    __slots__ = ("doms", "exposed", "raw", "row", "seen", "tops", "width")

    def __init__(
        self, guard: Guard, rule: DomainRule, row: tuple[int, ...], raw: list[int] | None = None
    ) -> None:
        dom = guard.dom[rule.level]
        self.row = row
        self.raw = raw
        """The partition's matrix row the tally was taken from (padding included)."""
        self.seen: dict[tuple[int, int, int], bool] = {}
        """Verdicts given on this row, by (source broker, destination's two domains)."""
        self.tops: dict[int, int] = {}
        self.doms: dict[int, int] = {}
        self.width: dict[int, int] = {}
        for b in row:
            t, d = int(guard.top[b]), int(dom[b])
            self.tops[t] = self.tops.get(t, 0) + 1
            if d not in self.doms:
                self.width[t] = self.width.get(t, 0) + 1
            self.doms[d] = self.doms.get(d, 0) + 1
        self.exposed = _judge(rule, len(row), self.tops, len(self.doms), self.width)


def _judge(
    rule: DomainRule, rf: int, tops: Mapping[int, int], doms: int, width: Mapping[int, int]
) -> frozenset[int]:
    """The top-level domains whose loss leaves under min.insync.replicas replicas or fewer
    than min.insync.racks domains."""
    mir, racks = rule.min_insync_replicas, rule.min_insync_racks
    return frozenset(
        t for t, n in tops.items() if n > 0 and (rf - n < mir or doms - width.get(t, 0) < racks)
    )


class Guard:
    """Each broker's top-level domain and domain per rule level, and each partition's rule.

    :meth:`allows` keeps a :class:`_Tally` per partition it was asked about, taken again only
    when the partition's row changed, so a candidate move is judged in O(replicas of the
    partition): the tallies of the two domains it touches change, and the top-level domains it
    holds are judged again; a verdict is kept with the tally for every destination alike (the
    same two domains), as the balance goals ask of many brokers in turn."""

    def __init__(self, work: Work, rules: Mapping[str, DomainRule]) -> None:
        lay = work.lay
        self.work = work
        self.rules: list[DomainRule] = sorted(set(rules.values()), key=repr)
        index = {rule: i for i, rule in enumerate(self.rules)}
        by_topic = np.array(
            [index[rules[t]] if t in rules else -1 for t in lay.topic_names], np.int64
        )
        self.rule_of: IntArray = by_topic[lay.topics] if lay.topics.size else lay.topics
        self.covered = np.zeros(lay.num_partitions, np.bool_)
        """Partitions the goal protects: a rule, and a factor some placement protects."""
        ids = lay.broker_ids.tolist()
        self.top = _codes(ids, lay.racks, 1)
        self.dom = {rule.level: _codes(ids, lay.racks, rule.level) for rule in self.rules}
        self._top: list[int] = self.top.tolist()
        self._dom: dict[int, list[int]] = {k: v.tolist() for k, v in self.dom.items()}
        self._tally: dict[int, _Tally] = {}
        self._rule_of: list[int] = self.rule_of.tolist()

    def exposed(self, p: int, row: list[int]) -> set[int]:
        """The top-level domains whose loss exposes partition p on ``row``."""
        r = int(self.rule_of[p])
        if r < 0:
            return set()
        return set(_Tally(self, self.rules[r], tuple(row)).exposed)

    def tally(self, p: int) -> _Tally:
        """Partition p's tally on its current row (cached while the row stays)."""
        raw = self.work.tgt[p].tolist()
        held = self._tally.get(p)
        if held is None or held.raw != raw:
            row = tuple(b for b in raw if b >= 0)
            held = _Tally(self, self.rules[int(self.rule_of[p])], row, raw)
            self._tally[p] = held
        return held

    def allows(self, p: int, src: int, dst: int) -> bool:
        """Whether moving p's replica from ``src`` to ``dst`` exposes it to no new loss (a
        partition no placement protects may go anywhere)."""
        r = self._rule_of[p]
        if r < 0 or not self.covered[p]:
            return True
        rule = self.rules[r]
        dom = self._dom[rule.level]
        ts, td, ds, dd = self._top[src], self._top[dst], dom[src], dom[dst]
        if ts == td and ds == dd:
            return True  # the same domains at every level the rule looks at
        was = self.tally(p)
        key = (src, td, dd)
        known = was.seen.get(key)
        if known is None:
            known = was.seen[key] = self._judge_move(rule, was, (ts, td, ds, dd))
        return known

    @staticmethod
    def _judge_move(rule: DomainRule, was: _Tally, move: tuple[int, int, int, int]) -> bool:
        """Whether the move (source's and destination's top-level domain and domain) leaves
        the partition exposed to no loss it was safe from."""
        ts, td, ds, dd = move
        tops = dict(was.tops)
        width = dict(was.width)
        doms = len(was.doms)
        tops[ts] -= 1
        tops[td] = tops.get(td, 0) + 1
        if was.doms[ds] == 1 and ds != dd:
            doms -= 1
            width[ts] -= 1
        if dd not in was.doms:
            doms += 1
            width[td] = width.get(td, 0) + 1
        return _judge(rule, len(was.row), tops, doms, width) <= was.exposed

    def shortfall(self, p: int, row: list[int]) -> int:
        """Replicas and domains missing, summed over the losses of every top-level domain."""
        rule = self.rules[int(self.rule_of[p])]
        dom = self._dom[rule.level]
        top = self._top
        total = 0
        for t in {top[b] for b in row}:
            left = [b for b in row if top[b] != t]
            total += max(0, rule.min_insync_replicas - len(left))
            total += max(0, rule.min_insync_racks - len({dom[b] for b in left}))
        return total


def _codes(ids: list[int], racks: tuple[str | None, ...], level: int) -> IntArray:
    """Each broker's domain at ``level`` as a small integer."""
    names = [domain_at(r, level, broker_id=b) for b, r in zip(ids, racks, strict=True)]
    order = {name: i for i, name in enumerate(sorted(set(names)))}
    return np.array([order[n] for n in names], np.int64)


def exposed_partitions(guard: Guard, tgt: IntArray) -> IntArray:
    """Partitions (indices) some top-level domain's loss exposes, vectorised per rule."""
    out: list[IntArray] = []
    present = tgt != PAD
    safe = np.maximum(tgt, 0)
    for r, rule in enumerate(guard.rules):
        rows = np.flatnonzero(guard.rule_of == r)
        if rows.size == 0:
            continue
        top = np.where(present[rows], guard.top[safe[rows]], -1)
        dom = np.where(present[rows], guard.dom[rule.level][safe[rows]], -1)
        bad = np.zeros(rows.size, np.bool_)
        for t in np.unique(top[top >= 0]).tolist():
            holds = (top == t).any(axis=1)
            keep = (top >= 0) & (top != t)
            left = keep.sum(axis=1)
            kept = np.sort(np.where(keep, dom, -1), axis=1)
            distinct = ((kept[:, 1:] != kept[:, :-1]) & (kept[:, 1:] >= 0)).sum(axis=1)
            distinct += kept[:, 0] >= 0
            bad |= holds & ((left < rule.min_insync_replicas) | (distinct < rule.min_insync_racks))
        out.append(rows[bad])
    return np.sort(np.concatenate(out)) if out else np.zeros(0, np.int64)


class Verdicts:
    """Whether a partition's (replication factor, rule) can be protected on the brokers the
    plan may use for it (the usable ones, less those holding it in a failed directory), judged
    once per (factor, rule, brokers excluded)."""

    def __init__(self, work: Work, guard: Guard) -> None:
        self.work = work
        self.guard = guard
        self._trees: dict[tuple[int, tuple[int, ...]], list[list[int]]] = {}
        self._seen: dict[tuple[int, DomainRule, tuple[int, ...]], bool] = {}
        self._needed: dict[tuple[int, DomainRule, tuple[int, ...]], int | None] = {}

    def _tree(self, level: int, excluded: tuple[int, ...]) -> list[list[int]]:
        key = (level, excluded)
        if key not in self._trees:
            lay = self.work.lay
            usable = np.flatnonzero(self.work.tree.leaf >= 0).tolist()
            racks = [(int(lay.broker_ids[b]), lay.racks[b]) for b in usable if b not in excluded]
            self._trees[key] = loss_tree(racks, level)
        return self._trees[key]

    def cover(self) -> None:
        """Mark in ``guard.covered`` every partition with a rule that its factor can meet."""
        guard, rf = self.guard, self.work.lay.rf
        for r, rule in enumerate(guard.rules):
            for factor in np.unique(rf[guard.rule_of == r]).tolist():
                if self._judge(int(factor), rule, ()):
                    guard.covered |= (guard.rule_of == r) & (rf == factor)
        for p in self.work.excluded:
            if guard.rule_of[p] >= 0:
                guard.covered[p] = self.protectable(p)

    def _key(self, p: int) -> tuple[int, DomainRule, tuple[int, ...]]:
        rule = self.guard.rules[int(self.guard.rule_of[p])]
        return int(self.work.lay.rf[p]), rule, tuple(sorted(self.work.excluded.get(p, ())))

    def _judge(self, rf: int, rule: DomainRule, excluded: tuple[int, ...]) -> bool:
        key = (rf, rule, excluded)
        if key not in self._seen:
            tree = self._tree(rule.level, excluded)
            self._seen[key] = protectable(rf, tree, rule.min_insync_replicas, rule.min_insync_racks)
        return self._seen[key]

    def protectable(self, p: int) -> bool:
        """Whether some placement of partition p's factor protects it (p has a rule)."""
        return self._judge(*self._key(p))

    def needed(self, p: int) -> int | None:
        """The smallest factor above partition p's that can be protected (None: none)."""
        key = self._key(p)
        if key not in self._needed:
            rf, rule, excluded = key
            self._needed[key] = smallest_protecting_rf(
                self._tree(rule.level, excluded),
                rule.min_insync_replicas,
                rule.min_insync_racks,
                start=rf + 1,
            )
        return self._needed[key]


def violations(work: Work, guard: Guard, verdicts: Verdicts, tgt: IntArray) -> int:
    """The goal's violations on ``tgt``: exposed partitions some placement would protect."""
    return sum(1 for p in exposed_partitions(guard, tgt).tolist() if verdicts.protectable(p))


def exposed_count(cluster: ClusterInput, target: IntArray) -> int:
    """How many partitions some placement of their factor protects are exposed on ``target``
    (broker ids in the layout's partition order, ``-1`` past the factor, as a plan's
    ``target``), judged by ``cluster.domain_rules``: a plan made without the rules, counted by
    them."""
    lay = layout(cluster)
    if not cluster.domain_rules:
        return 0
    tree = build_tree(lay.broker_ids, lay.racks, lay.usable, flat=False)
    work = Work(lay, tree, np.zeros(lay.num_brokers, np.float64))
    guard = Guard(work, cluster.domain_rules)
    verdicts = Verdicts(work, guard)
    index = np.searchsorted(lay.broker_ids, np.maximum(target, 0))
    tgt = np.where(target >= 0, index, PAD)
    return violations(work, guard, verdicts, tgt)
