"""A lower bound on the replicas (and bytes) any plan must move to meet the offline, spread and
replica-count goals.

Let X be the replicas a plan moves off their brokers. It must contain

* every replica that cannot stay (in a failed directory, or on a broker without a live one): F;
* at least ``s_p`` replicas of each partition p, where ``s_p = RF - best_p`` and ``best_p`` is the
  most replicas p can keep in an evenly spread placement (exact, from the repair's dynamic
  programme; 0 for a partition that is fine);
* at least ``e_b = count_b - ceil(t_b)`` replicas of each broker above its ceiling.

Two ways of counting X, each replica once, give two bounds:

* by broker: on a broker above its ceiling ("over") X holds at least ``max(e_b, |F_b|)``;
  elsewhere, for each partition, at least ``max(|F_p off over|, s_p - n_p)`` where ``n_p``
  counts p's replicas on over brokers (those could be the ones p gives up);
* by partition: X holds ``s_p`` replicas of every partition (F among them), and each broker
  still has to give up ``e_b - m_b`` more, where ``m_b`` counts its replicas of partitions with
  ``s_p > 0`` (at most that many of its departures were counted already).

Every moved replica lands somewhere, so the total by which brokers fall short of their floor is
a third bound; the bound on moves is the largest of the three. Each byte bound takes the
smallest replicas that can make up its counts (the failed ones, then the smallest others); the
byte bound is the larger of the two.

The bound ignores the byte goals (balancing bytes can take more moves) and leader moves (free);
a plan's excess over it is what balancing bytes and the greedy's choices cost.

Example: one rack, brokers 1, 2, 3 holding 5, 1 and 3 single-replica partitions of 10 bytes
(shares 3 each): no partition must change, broker 1 is 2 over its ceiling, broker 2 is 2 short
of its floor: the bound is 2 moves and 20 bytes (broker 1's two smallest replicas), which the
plan meets.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rackwise.balance._layout import PAD, Layout
from rackwise.balance.model import BoolArray, IntArray


@dataclass(frozen=True, slots=True)
class LowerBound:
    """``replica_moves`` and ``bytes`` no plan meeting the hard goals and the replica goal can
    go below; ``explanation`` says where they come from, with the figures."""

    replica_moves: int
    bytes: int
    must_leave_failed: int
    must_leave_spread: int
    over_ceiling: int
    short_of_floor: int
    explanation: str


def lower_bound(
    lay: Layout, in_tree: BoolArray, lo: IntArray, hi: IntArray, must: IntArray
) -> LowerBound:
    present = lay.cur != PAD
    brokers = lay.num_brokers
    safe = np.maximum(lay.cur, 0)
    count = np.bincount(lay.cur[present], minlength=brokers)
    failed = present & ~lay.keepable
    failed_per_broker = np.bincount(lay.cur[failed], minlength=brokers)
    excess = np.where(in_tree, np.maximum(count - hi, 0), count)
    short = int(np.where(in_tree, np.maximum(lo - count, 0), 0).sum())
    by_broker = _by_broker(lay, excess, failed, failed_per_broker, must)
    by_partition = _by_partition(lay, excess, failed, must, safe)
    moves = max(by_broker[0], by_partition[0], short)
    explanation = (
        f"{int(failed.sum())} replicas cannot stay (failed log directory or no live one); "
        f"{int(must.sum())} replicas must leave their partitions to fix spread or replace "
        f"those (the fewest any even spread needs); {int(excess[in_tree].sum())} replicas sit "
        f"above their brokers' ceilings (ceil of the fair share) on "
        f"{int((excess > 0).sum())} brokers; {short} replicas must arrive on brokers below "
        f"their floors. Counting each moved replica once: per broker above its ceiling "
        f"max(excess, failed) plus per partition what it must still give up elsewhere = "
        f"{by_broker[0]}; per partition its replacements plus per broker the excess its "
        f"replaced replicas cannot cover = {by_partition[0]}. The bound is the largest of these "
        f"three; the byte bound takes the smallest replicas that can make up each count."
    )
    return LowerBound(
        replica_moves=moves,
        bytes=max(by_broker[1], by_partition[1]),
        must_leave_failed=int(failed.sum()),
        must_leave_spread=int(must.sum()),
        over_ceiling=int(excess[in_tree].sum()),
        short_of_floor=short,
        explanation=explanation,
    )


def _smallest_per_broker(lay: Layout, mask: BoolArray, need: IntArray) -> int:
    """Bytes of the ``need[b]`` smallest replicas in ``mask`` on each broker b."""
    sizes = lay.size[mask]
    order = np.argsort(sizes, kind="stable")
    brokers = lay.cur[mask][order]
    small = np.int16 if lay.num_brokers < 2**15 else np.int32  # int16: radix sort
    by_broker = np.argsort(brokers.astype(small), kind="stable")
    brokers, sizes = brokers[by_broker], sizes[order][by_broker]
    start = np.searchsorted(brokers, np.arange(lay.num_brokers))
    rank = np.arange(brokers.size) - start[brokers]
    return int(sizes[rank < need[brokers]].sum())


def _by_broker(
    lay: Layout, excess: IntArray, failed: BoolArray, failed_per_broker: IntArray, must: IntArray
) -> tuple[int, int]:
    """Over brokers give up max(excess, failed) each (the failed ones and their smallest
    others); each partition still gives up ``must - (its replicas on over brokers)``,
    at least its failed replicas elsewhere, the smallest first."""
    present = lay.cur != PAD
    over = excess > 0
    on_over = present & over[np.maximum(lay.cur, 0)]
    moves_over = int(np.maximum(excess, failed_per_broker)[over].sum())
    need = np.maximum(excess - failed_per_broker, 0)
    bytes_over = int(np.where(on_over & failed, lay.size, 0).sum())
    bytes_over += _smallest_per_broker(lay, on_over & ~failed, need)
    failed_off = (failed & ~on_over).sum(axis=1)
    rest = np.maximum(must - on_over.sum(axis=1), 0)
    moves_off = int(np.maximum(failed_off, rest).sum())
    smallest = np.where(present & ~on_over & ~failed, lay.size, np.iinfo(np.int64).max).min(axis=1)
    extra = np.maximum(rest - failed_off, 0)
    bytes_off = int(np.where(failed & ~on_over, lay.size, 0).sum())
    bytes_off += int((extra * np.where(extra > 0, smallest, 0)).sum())
    return moves_over + moves_off, bytes_over + bytes_off


def _by_partition(
    lay: Layout, excess: IntArray, failed: BoolArray, must: IntArray, safe: IntArray
) -> tuple[int, int]:
    """Each partition gives up ``must`` (its failed replicas, then its smallest others); each
    broker still gives up its excess minus the replicas it holds of partitions that must
    change (at most that many of its departures are already counted), the smallest first."""
    present = lay.cur != PAD
    touched = present & (must > 0)[:, None]
    held = np.bincount(lay.cur[touched], minlength=lay.num_brokers)
    need = np.maximum(excess - held, 0)
    moves = int(must.sum()) + int(need.sum())
    bytes_failed = int(np.where(failed, lay.size, 0).sum())
    others = np.where(present & ~failed, lay.size, np.iinfo(np.int64).max)
    others.sort(axis=1)
    count = np.maximum(must - failed.sum(axis=1), 0)
    take = np.arange(others.shape[1])[None, :] < count[:, None]
    bytes_spread = int(np.where(take, others, 0).sum())
    bytes_rest = _smallest_per_broker(lay, present & ~touched, need)
    del safe
    return moves, bytes_failed + bytes_spread + bytes_rest
