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
    test, and the balance goals ask it of every move that crosses a domain.
Algorithm
    The exposed partitions are found with numpy per rule; each is then repaired greedily: of
    the moves of one replica to the roomiest broker of each (top-level domain, domain) pair,
    the one leaving the fewest missing replicas and domains over all losses, until none
    remain or no move helps.
Worked example
    Brokers 0..3 in ``/dc1``, 4, 5 in ``/dc2``, 6, 7 in ``/dc3`` (rack-aware, so data centres
    are not spread), RF 3 on 0, 1, 4, ``min.insync.racks=2``: losing ``/dc2`` leaves two
    replicas in ``/dc1`` only. Moving the replica on 1 to 6 protects it.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from rackwise.balance._layout import PAD
from rackwise.balance._spread import spread_ok
from rackwise.balance._work import DOMAIN_LOSS, Work
from rackwise.balance.model import DomainRule, IntArray
from rackwise.balance.report import Unprotectable
from rackwise.topology import domain_at
from rackwise.topology.loss import loss_tree, protectable, smallest_protecting_rf


class Guard:
    """Each broker's top-level domain and domain per rule level, and each partition's rule."""

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

    def exposed(self, p: int, row: list[int]) -> set[int]:
        """The top-level domains whose loss exposes partition p on ``row``."""
        r = int(self.rule_of[p])
        if r < 0:
            return set()
        rule = self.rules[r]
        dom = self.dom[rule.level]
        out: set[int] = set()
        for t in {int(self.top[b]) for b in row}:
            left = [b for b in row if self.top[b] != t]
            if len(left) < rule.min_insync_replicas or (
                len({int(dom[b]) for b in left}) < rule.min_insync_racks
            ):
                out.add(t)
        return out

    def allows(self, p: int, src: int, dst: int) -> bool:
        """Whether moving p's replica from ``src`` to ``dst`` exposes it to no new loss (a
        partition no placement protects may go anywhere)."""
        r = int(self.rule_of[p])
        if r < 0 or not self.covered[p]:
            return True
        dom = self.dom[self.rules[r].level]
        if self.top[src] == self.top[dst] and dom[src] == dom[dst]:
            return True  # the same domains at every level the rule looks at
        row = self.work.row(p)
        before = self.exposed(p, row)
        return self.exposed(p, [dst if x == src else x for x in row]) <= before

    def shortfall(self, p: int, row: list[int]) -> int:
        """Replicas and domains missing, summed over the losses of every top-level domain."""
        rule = self.rules[int(self.rule_of[p])]
        dom = self.dom[rule.level]
        total = 0
        for t in {int(self.top[b]) for b in row}:
            left = [b for b in row if self.top[b] != t]
            total += max(0, rule.min_insync_replicas - len(left))
            total += max(0, rule.min_insync_racks - len({int(dom[b]) for b in left}))
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
    """Whether a (replication factor, rule) can be protected on the brokers the plan may use,
    judged once per pair."""

    def __init__(self, work: Work, guard: Guard) -> None:
        lay = work.lay
        usable = np.flatnonzero(work.tree.leaf >= 0).tolist()
        racks = [(int(lay.broker_ids[b]), lay.racks[b]) for b in usable]
        self.trees = {rule.level: loss_tree(racks, rule.level) for rule in guard.rules}
        self._seen: dict[tuple[int, DomainRule], bool] = {}
        self._needed: dict[tuple[int, DomainRule], int | None] = {}

    def cover(self, guard: Guard, rf: IntArray) -> None:
        """Mark in ``guard.covered`` every partition with a rule that its factor can meet."""
        for r, rule in enumerate(guard.rules):
            for factor in np.unique(rf[guard.rule_of == r]).tolist():
                if self.protectable(int(factor), rule):
                    guard.covered |= (guard.rule_of == r) & (rf == factor)

    def protectable(self, rf: int, rule: DomainRule) -> bool:
        key = (rf, rule)
        if key not in self._seen:
            self._seen[key] = protectable(
                rf, self.trees[rule.level], rule.min_insync_replicas, rule.min_insync_racks
            )
        return self._seen[key]

    def needed(self, rf: int, rule: DomainRule) -> int | None:
        """The smallest factor above ``rf`` that can be protected (None: none)."""
        key = (-rf, rule)
        if key not in self._needed:
            self._needed[key] = smallest_protecting_rf(
                self.trees[rule.level],
                rule.min_insync_replicas,
                rule.min_insync_racks,
                start=rf + 1,
            )
        return self._needed[key]


def violations(work: Work, guard: Guard, verdicts: Verdicts, tgt: IntArray) -> int:
    """The goal's violations on ``tgt``: exposed partitions some placement would protect."""
    rf = work.lay.rf
    return sum(
        1
        for p in exposed_partitions(guard, tgt).tolist()
        if verdicts.protectable(int(rf[p]), guard.rules[int(guard.rule_of[p])])
    )


def protect(work: Work, guard: Guard, verdicts: Verdicts) -> tuple[Unprotectable, ...]:
    """Move replicas of the exposed partitions that can be protected; return those that
    cannot, with the factor that would protect them."""
    lay = work.lay
    pairs: dict[tuple[int, int], list[int]] = {}
    for b in np.flatnonzero(work.tree.leaf >= 0).tolist():
        for rule in guard.rules:
            pairs.setdefault((int(guard.top[b]), int(guard.dom[rule.level][b])), []).append(b)
    groups = [np.array(v, np.int64) for v in pairs.values()]
    lost: list[Unprotectable] = []
    for p in exposed_partitions(guard, work.tgt).tolist():
        rule = guard.rules[int(guard.rule_of[p])]
        rf = int(lay.rf[p])
        if not verdicts.protectable(rf, rule):
            need = verdicts.needed(rf, rule)
            name = lay.topic_names[int(lay.topics[p])]
            lost.append(Unprotectable(name, int(lay.partitions[p]), rf, need))
            continue
        _repair(work, guard, p, groups)
    return tuple(lost)


def _repair(work: Work, guard: Guard, p: int, groups: list[IntArray]) -> None:
    excluded = work.excluded.get(p, ())
    deficit = work.shares - work.count
    ranked = [g[np.argsort(-deficit[g], kind="stable")].tolist() for g in groups]
    for _ in range(2 * int(work.lay.rf[p]) + 2):
        row = work.row(p)
        before = guard.exposed(p, row)
        if not before:
            return
        best: tuple[int, float, int, int] | None = None
        score = guard.shortfall(p, row)
        for j, src in enumerate(work.tgt[p].tolist()):
            if src < 0:
                continue
            for group in ranked:
                dst = next((b for b in group if b not in row and b not in excluded), -1)
                if dst < 0:
                    continue
                moved = [dst if x == src else x for x in row]
                if not guard.exposed(p, moved) <= before:
                    continue
                after = guard.shortfall(p, moved)
                if after >= score or not spread_ok(work.tree, moved, excluded):
                    continue
                cand = (after, -float(deficit[dst]), j, dst)
                if best is None or cand < best:
                    best = cand
        if best is None:
            return
        work.place(p, best[2], best[3], DOMAIN_LOSS)
