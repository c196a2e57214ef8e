"""``DomainLossGoal``'s moves: which replicas of an exposed partition to move where.

Goals
    For a partition some top-level domain's loss exposes, the smallest set of replica moves
    after which no top-level domain exposes it, keeping the hard goals; failing that, the set
    that leaves it exposed to the fewest losses. :func:`protect` applies it before the balance
    goals; :func:`repair` again after them, to the partitions still exposed, with moves that
    keep the replica balance goal's bounds where it can.
Constraints
    A move keeps one replica per broker, stays off brokers the partition may not use, keeps
    the partition evenly spread on the strategy's tree (``spread_ok``) and exposes it to no
    top-level domain it was safe from. After the balance goals, a move that would take a
    broker past its replica bounds is paired with a move back (another partition's replica
    from the receiver to the giver, one the guard and the spread rule allow, the nearest in
    size), so no broker's count changes; when no such pair exists the move is made alone, the
    goal standing above the balance goals.
Algorithm
    Brokers are grouped in *classes*: the same parent in the plan tree and the same domains at
    every rule level, so any two of a class are alike for the spread rule and for every loss.
    For k = 1, 2, ... up to the replication factor, every choice of k replicas to move and of
    k classes to send them to (the broker of most deficit in each) is judged; the first k with
    a placement that protects the partition wins, the least damage to the replica bounds among
    them, then the most deficit. The search is exact up to ``_BUDGET`` candidates a partition,
    so a partition left exposed is one no placement reachable under the hard goals protects
    (or one past the budget: many classes and a large factor).
Worked example
    Racks ``/dc1/a`` (brokers 0, 1), ``/dc2/a`` (2, 3), ``/dc3/a`` (4, 5) under ``rack-aware``,
    RF 3 on 0, 2, 3, ``min.insync.racks=2``: losing ``/dc2`` leaves one replica. Of the six
    one-replica moves, moving 2 or 3 to ``/dc3/a`` protects it; the broker there with the most
    deficit is chosen.
"""

from __future__ import annotations

from itertools import combinations, combinations_with_replacement
from typing import Final

import numpy as np

from rackwise.balance._loss import Guard, Verdicts, exposed_partitions
from rackwise.balance._spread import spread_ok
from rackwise.balance._work import DOMAIN_LOSS, Work
from rackwise.balance.model import IntArray
from rackwise.balance.report import Unprotectable

_BUDGET: Final = 20_000
"""Candidate placements judged for one partition at most."""
_PARTNERS: Final = 256
"""Replicas on a receiver tried as the move back that keeps the counts."""

Move = tuple[int, int, int]
"""A replica move: (position, from broker, to broker)."""


class Classes:
    """The usable brokers grouped by (parent in the plan tree, top-level domain, domain at
    each rule level)."""

    def __init__(self, work: Work, guard: Guard) -> None:
        groups: dict[tuple[object, ...], list[int]] = {}
        levels = sorted(guard.dom)
        for b in np.flatnonzero(work.tree.leaf >= 0).tolist():
            key = (
                work.tree.chain_list[b][:-1],
                int(guard.top[b]),
                *(int(guard.dom[level][b]) for level in levels),
            )
            groups.setdefault(key, []).append(b)
        self.members: list[list[int]] = list(groups.values())
        self.of: dict[int, int] = {b: c for c, bs in enumerate(self.members) for b in bs}


def protect(
    work: Work, guard: Guard, verdicts: Verdicts, classes: Classes
) -> tuple[Unprotectable, ...]:
    """Move replicas of the exposed partitions that can be protected; return those that
    cannot, with the factor that would protect them."""
    lay = work.lay
    lost: list[Unprotectable] = []
    for p in exposed_partitions(guard, work.tgt).tolist():
        rf = int(lay.rf[p])
        if not verdicts.protectable(p):
            need = verdicts.needed(p)
            name = lay.topic_names[int(lay.topics[p])]
            lost.append(Unprotectable(name, int(lay.partitions[p]), rf, need))
            continue
        moves = search(work, guard, classes, p, None)
        for j, _src, dst in moves:
            work.place(p, j, dst, DOMAIN_LOSS)
    return tuple(lost)


def repair(work: Work, guard: Guard, classes: Classes, bounds: tuple[IntArray, IntArray]) -> int:
    """After the balance goals: protect the partitions still exposed that can be, pairing
    each move that breaks a replica bound with a move back; return the moves made."""
    made = 0
    for p in exposed_partitions(guard, work.tgt).tolist():
        if not guard.covered[p]:
            continue
        for j, src, dst in search(work, guard, classes, p, bounds):
            lo, hi = bounds
            breaks = work.count[dst] + 1 > hi[dst] or work.count[src] - 1 < lo[src]
            work.place(p, j, dst, DOMAIN_LOSS)
            made += 1
            if breaks and _move_back(work, p, src, dst, int(work.size[p, j])):
                made += 1
    return made


def search(
    work: Work, guard: Guard, classes: Classes, p: int, bounds: tuple[IntArray, IntArray] | None
) -> list[Move]:
    """The moves for partition p (module docstring); empty when none helps."""
    row = [int(b) for b in work.tgt[p].tolist()]
    slots = [j for j, b in enumerate(row) if b >= 0]
    brokers = [row[j] for j in slots]
    before = guard.exposed(p, brokers)
    if not before:
        return []
    excluded = set(work.excluded.get(p, ()))
    deficit = (work.shares - work.count).tolist()
    ranked = [sorted(m, key=lambda b: -deficit[b]) for m in classes.members]
    have = sorted(classes.of.get(b, -1) for b in brokers)
    best: tuple[tuple[float, ...], list[Move]] | None = None
    judged = 0
    for k in range(1, len(slots) + 1):
        for drop in combinations(range(len(slots)), k):
            kept = [b for i, b in enumerate(brokers) if i not in drop]
            for dests in combinations_with_replacement(range(len(ranked)), k):
                judged += 1
                if judged > _BUDGET:
                    return best[1] if best is not None else []
                picks = _pick(ranked, dests, brokers, excluded)
                if picks is None:
                    continue
                new = kept + picks
                if sorted(classes.of.get(b, -1) for b in new) == have:
                    continue
                after = guard.exposed(p, new)
                if not after < before or not spread_ok(work.tree, new, excluded):
                    continue
                moves = [(slots[i], brokers[i], dst) for i, dst in zip(drop, picks, strict=True)]
                score = (
                    len(after),
                    guard.shortfall(p, new),
                    k,
                    _damage(work, moves, bounds),
                    -sum(deficit[d] for d in picks),
                )
                if best is None or score < best[0]:
                    best = (score, moves)
        if best is not None and best[0][0] == 0:
            break
    return best[1] if best is not None else []


def _pick(
    ranked: list[list[int]], dests: tuple[int, ...], row: list[int], excluded: set[int]
) -> list[int] | None:
    """A broker of each class in ``dests`` (the most deficit first), none twice, none on the
    partition's row or excluded; None when a class has too few."""
    out: list[int] = []
    for c in dests:
        b = next((x for x in ranked[c] if x not in row and x not in excluded and x not in out), -1)
        if b < 0:
            return None
        out.append(b)
    return out


def _damage(work: Work, moves: list[Move], bounds: tuple[IntArray, IntArray] | None) -> int:
    """How far the moves take brokers past their replica bounds (negative: back within)."""
    if bounds is None:
        return 0
    lo, hi = bounds
    change: dict[int, int] = {}
    for _j, src, dst in moves:
        change[src] = change.get(src, 0) - 1
        change[dst] = change.get(dst, 0) + 1
    total = 0
    for b, delta in change.items():
        old, new = int(work.count[b]), int(work.count[b]) + delta
        total += max(0, new - hi[b]) - max(0, old - hi[b])
        total += max(0, lo[b] - new) - max(0, lo[b] - old)
    return total


def _move_back(work: Work, p: int, src: int, dst: int, size: int) -> bool:
    """Move another partition's replica from ``dst`` to ``src``, the nearest in size to
    ``size`` of those the hard goals and the guard allow; whether one was found."""
    ps, js = np.nonzero(work.tgt == dst)
    order = np.argsort(np.abs(work.size[ps, js] - size), kind="stable")[:_PARTNERS]
    for q, i in zip(ps[order].tolist(), js[order].tolist(), strict=True):
        row = work.row(q)
        if q == p:
            continue
        if src in row or src in work.excluded.get(q, ()) or not work.allows(q, dst, src):
            continue
        if not spread_ok(
            work.tree, [src if x == dst else x for x in row], work.excluded.get(q, ())
        ):
            continue
        work.place(q, i, src, DOMAIN_LOSS)
        return True
    return False
