"""Leaders where their topics' ``leaders.preference`` puts them: after the leader goal, a
partition whose preferred leader (first replica) sits outside the most preferred domain its
replicas reach gets the first replica of that domain as its first replica.

Constraints
    A reordering of replica lists only (no data moves), run after ``LeaderReplicaDistribution
    Goal``, so a preference wins over leader balance: a broker may lead more than the leader
    goal's ceiling when its domain is the one its topics prefer. Every replica of the plan is
    taken as in sync (the plan is a target, not a live state), so "the first domain with an
    in-sync replica" is the first domain with a replica.

Example: ``ordered_racks:/dc1,/dc2``, t-0 on (5, 1, 3) with 5 in ``/dc3``, 1 in ``/dc2`` and
3 in ``/dc1``: the ranks are (2, 1, 0); 3 goes first: (3, 1, 5).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from rackwise.balance._layout import PAD
from rackwise.balance._work import Work, swap_many
from rackwise.topology import LeadersPreference


def broker_ranks(racks: tuple[str | None, ...], preference: LeadersPreference) -> np.ndarray:
    """Each broker index's rank under ``preference``, then one past every rank (for ``PAD``,
    which indexes the last element)."""
    return np.array([*(preference.rank(r) for r in racks), preference.ranks + 1], np.int64)


def pin_leaders(work: Work, preferences: Mapping[str, LeadersPreference]) -> int:
    """Move each preferring partition's best-ranked replica first (module docstring); how many
    partitions changed leader."""
    lay = work.lay
    moved = 0
    for t, name in enumerate(lay.topic_names):
        preference = preferences.get(name)
        if preference is None or preference.is_none:
            continue
        ranks = broker_ranks(lay.racks, preference)
        rows = np.flatnonzero((lay.topics == t) & (work.tgt[:, 0] != PAD))
        if not rows.size:
            continue
        held = ranks[work.tgt[rows]]  # PAD (-1) takes the last, worst rank
        best = held.argmin(axis=1)  # the first position of the best rank
        change = held[np.arange(rows.size), best] < held[:, 0]
        if change.any():
            swap_many(work, rows[change], best[change])
            moved += int(change.sum())
    return moved


def leaders_outside(
    racks: tuple[str | None, ...],
    topic_names: tuple[str, ...],
    topics: np.ndarray,
    leaders: np.ndarray,
    preferences: Mapping[str, LeadersPreference],
) -> int:
    """How many partitions (``topics[p]``, led by broker index ``leaders[p]``) have a leader
    outside their topic's preference."""
    outside = 0
    for t, name in enumerate(topic_names):
        preference = preferences.get(name)
        if preference is None or preference.is_none:
            continue
        ranks = broker_ranks(racks, preference)
        led = leaders[(topics == t) & (leaders != PAD)]
        outside += int((ranks[led] >= preference.ranks).sum())
    return outside
