"""Leaders where their topics' ``leaders.preference`` puts them: after the leader goal, a
partition whose preferred leader (first replica) sits outside the most preferred domain its
replicas reach gets the first replica of that domain as its first replica.

Constraints
    A reordering of replica lists only (no data moves), run after ``LeaderReplicaDistribution
    Goal``, so a preference wins over leader balance: a broker may lead more than the leader
    goal's ceiling when its domain is the one its topics prefer. Every replica of the plan is
    taken as in sync (the plan is a target, not a live state), so "the first domain with an
    in-sync replica" is the first domain with a replica. The partitions are grouped by
    distinct preference (a fleet has a few, its topics thousands), so the cost is one pass over
    the partitions per distinct preference.

Example: ``ordered_racks:/dc1,/dc2``, t-0 on (5, 1, 3) with 5 in ``/dc3``, 1 in ``/dc2`` and
3 in ``/dc1``: the ranks are (2, 1, 0); 3 goes first: (3, 1, 5).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np

from rackwise.balance._layout import PAD
from rackwise.balance._work import Work, swap_many
from rackwise.topology import LeadersPreference


def broker_ranks(racks: tuple[str | None, ...], preference: LeadersPreference) -> np.ndarray:
    """Each broker index's rank under ``preference``, then one past every rank (for ``PAD``,
    which indexes the last element)."""
    return np.array([*(preference.rank(r) for r in racks), preference.ranks + 1], np.int64)


def _by_preference(
    topic_names: tuple[str, ...],
    topics: np.ndarray,
    preferences: Mapping[str, LeadersPreference],
) -> Iterator[tuple[LeadersPreference, np.ndarray]]:
    """Each distinct preference other than ``none`` with the partitions (indexes into
    ``topics``) of the topics that have it."""
    distinct: dict[LeadersPreference, int] = {}
    of_topic = np.full(len(topic_names) + 1, -1, np.int64)
    for t, name in enumerate(topic_names):
        preference = preferences.get(name)
        if preference is not None and not preference.is_none:
            of_topic[t] = distinct.setdefault(preference, len(distinct))
    if not distinct:
        return
    group = of_topic[topics]
    order = np.argsort(group, kind="stable")
    bounds = np.searchsorted(group[order], np.arange(len(distinct) + 1))
    for preference, k in distinct.items():
        yield preference, order[bounds[k] : bounds[k + 1]]


def pin_leaders(work: Work, preferences: Mapping[str, LeadersPreference]) -> int:
    """Move each preferring partition's best-ranked replica first (module docstring); how many
    partitions changed leader."""
    lay = work.lay
    moved = 0
    for preference, chosen in _by_preference(lay.topic_names, lay.topics, preferences):
        ranks = broker_ranks(lay.racks, preference)
        rows = chosen[work.tgt[chosen, 0] != PAD]
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
    for preference, chosen in _by_preference(topic_names, topics, preferences):
        ranks = broker_ranks(racks, preference)
        led = leaders[chosen]
        led = led[led != PAD]
        outside += int((ranks[led] >= preference.ranks).sum())
    return outside
