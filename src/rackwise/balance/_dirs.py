"""``IntraBrokerDiskUsageDistributionGoal``: bytes spread over each broker's live log
directories in proportion to their capacity (KIP-113), within 10% either way (or a mean replica
of the broker, if that is more).

Goals
    Choose the directory of every replica that arrives on a broker, then even out what remains
    by moving replicas between directories of the same broker (an intra-broker move: a local
    copy, no network).

Constraints
    Only live directories receive replicas. Kafka refuses to move a replica between directories
    of a broker that has an offline directory (``ReplicaManager.alterReplicaLogDirs`` will not
    create a future log while any directory is offline), so such a broker only chooses
    directories for arriving replicas. A directory's capacity is its ``total_bytes``; when a
    broker does not report every capacity, its directories count as equal. A replica whose
    directory is unknown stays where it is and is not counted.

Algorithm
    A directory's target is its capacity's share of the broker's bytes, raised to its largest
    replica where that is more (:func:`~rackwise.balance._bytes.level_targets`). Per broker:
    arriving replicas, largest first, go to the directory furthest below its target
    (longest-processing-time greedy). Then, while a directory is outside the tolerance, move the
    largest replica of the fullest directory to the emptiest one that keeps both inside the
    tolerance from the other side and is smaller than their two gaps together (so the sum of
    squared gaps falls with every move and the loop ends). It stops when that largest replica
    carries less than 1% of the fuller directory's excess over its tolerance (or nothing).

A draining directory (``LogDirTable.draining``: ``pipeline plan --drain-log-dirs``, for a
directory cordoned with ``cordoned.log.dirs``, KIP-1066) counts as having no capacity: it
receives nothing, and each of its replicas is given a directory again as if it were arriving,
among the broker's other live directories (where Kafka lets it move: the broker has no offline
directory and another live one). A draining directory that still holds a replica counts as
outside the goal, so the report names what the plan could not drain.

Example: a broker with /d1 (60 GB) and /d2 (0 GB) of equal capacity receives a 20 GB replica: it
goes to /d2; the targets are 40 GB each, so the largest replica of /d1 up to 20 GB moves to /d2.
With /d1 draining, all 80 GB go to /d2.
"""

from __future__ import annotations

import bisect
import heapq

import numpy as np

from rackwise.balance._bytes import largest, level_targets, tolerance
from rackwise.balance._counts import SlotIndex
from rackwise.balance._layout import Layout
from rackwise.balance._work import NOT_MOVED, Work
from rackwise.balance.model import NO_LOG_DIR, BoolArray, FloatArray, IntArray

_MAX_MOVES_PER_BROKER = 10_000
_MIN_SHARE_OF_EXCESS = 0.01
"""A move between directories must carry at least this share of the fuller directory's bytes
beyond its tolerance: a replica of a few KiB moved against a gap of megabytes changes nothing an
operator would see, and a plan of such moves is never done (each commit to a small partition
makes another one fit)."""


def dir_weights(lay: Layout) -> FloatArray:
    """Each live directory's share of its broker's bytes (0 for a failed or draining one)."""
    live = lay.dir_live & ~lay.dir_draining
    total = np.where(live, np.maximum(lay.dir_total, 0), 0).astype(np.float64)
    brokers = lay.num_brokers
    num_live = np.bincount(lay.dir_broker, weights=live, minlength=brokers)
    known = np.bincount(lay.dir_broker, weights=live & (lay.dir_total > 0), minlength=brokers)
    cap = np.bincount(lay.dir_broker, weights=total, minlength=brokers)
    all_known = (known == num_live) & (cap > 0)
    equal = np.where(live, 1.0 / np.maximum(num_live[lay.dir_broker], 1), 0.0)
    by_cap = total / np.maximum(cap[lay.dir_broker], 1.0)
    return np.where(all_known[lay.dir_broker], by_cap, equal)


def dirs_outside(lay: Layout, brokers: IntArray, dirs: IntArray, sizes: IntArray) -> int:
    """Live directories further from their target than the tolerance (10%, or a mean replica of
    the broker if more), counted on brokers where Kafka lets replicas move between directories:
    two or more live ones and none offline."""
    if lay.dir_broker.size == 0:
        return 0
    weight = dir_weights(lay)
    ok = (dirs >= 0) & (brokers >= 0)
    ok &= lay.dir_live[np.maximum(dirs, 0)]
    held = np.bincount(dirs[ok], weights=sizes[ok], minlength=lay.dir_broker.size)
    num = np.bincount(dirs[ok], minlength=lay.dir_broker.size)
    biggest = largest(dirs[ok], sizes[ok], lay.dir_broker.size)
    num_live = np.bincount(lay.dir_broker, weights=lay.dir_live, minlength=lay.num_brokers)
    movable = (num_live >= 2) & ~lay.has_failed_dir
    draining = lay.dir_live & lay.dir_draining
    off = int((draining & (num > 0) & movable[lay.dir_broker]).sum())
    for b in np.flatnonzero(movable).tolist():
        mine = np.flatnonzero((lay.dir_broker == b) & lay.dir_live & ~lay.dir_draining)
        if mine.size == 0:
            continue
        total = float(held[mine].sum())
        target = level_targets(total, weight[mine], biggest[mine])
        mean_size = total / max(int(num[mine].sum()), 1)
        off += int((np.abs(held[mine] - target) > tolerance(target, mean_size) + 0.5).sum())
    return off


def balance_dirs(work: Work) -> None:
    lay = work.lay
    if lay.dir_broker.size == 0:
        return
    weight = dir_weights(lay)
    index = SlotIndex(work, by_size_only=True)
    order = np.argsort(lay.dir_broker, kind="stable")
    bounds = np.searchsorted(lay.dir_broker[order], np.arange(lay.num_brokers + 1))
    for b in range(lay.num_brokers):
        mine = order[bounds[b] : bounds[b + 1]]
        live = mine[lay.dir_live[mine] & ~lay.dir_draining[mine]]
        if live.size == 0:
            continue
        slots = index.of(b)
        drained = mine[lay.dir_draining[mine]]
        released = _release(work, slots, drained) if not lay.has_failed_dir[b] else None
        _arrivals(work, slots, live, weight, released)
        if live.size >= 2 and not lay.has_failed_dir[b]:
            _even_out(work, slots, live, weight)


def _release(work: Work, slots: IntArray, drained: IntArray) -> BoolArray | None:
    """The slots held in a draining directory, their directory cleared (to be chosen again)."""
    if drained.size == 0:
        return None
    flat_dir = work.tgt_dir.ravel()
    released = np.isin(flat_dir[slots], drained)
    width = work.tgt.shape[1]
    for slot in slots[released].tolist():
        p, j = divmod(slot, width)
        work.tgt_dir[p, j] = NO_LOG_DIR
    return released


def _dir_bytes(
    work: Work, slots: IntArray, live: IntArray
) -> tuple[FloatArray, FloatArray, IntArray]:
    """Bytes and largest replica per live directory of the broker, and each slot's directory."""
    dirs = work.tgt_dir.ravel()[slots]
    sizes = work.size.ravel()[slots]
    held = np.zeros(live.size, np.float64)
    biggest = np.zeros(live.size, np.float64)
    for i, d in enumerate(live.tolist()):
        mine = sizes[dirs == d]
        if mine.size:
            held[i] = float(mine.sum())
            biggest[i] = float(mine.max())
    return held, biggest, dirs


def _arrivals(
    work: Work,
    slots: IntArray,
    live: IntArray,
    weight: FloatArray,
    released: BoolArray | None = None,
) -> None:
    width = work.tgt.shape[1]
    flat_dir = work.tgt_dir.ravel()
    flat_cause = work.cause.ravel()
    moving = flat_cause[slots] != NOT_MOVED
    if released is not None:
        moving |= released
    arriving = slots[(flat_dir[slots] == NO_LOG_DIR) & moving]
    if arriving.size == 0:
        return
    held, biggest, _ = _dir_bytes(work, slots, live)
    sizes = work.size.ravel()
    total = held.sum() + float(sizes[arriving].sum())
    target = level_targets(total, weight[live], biggest)
    heap = [(-(target[i] - held[i]), i) for i in range(live.size)]
    heapq.heapify(heap)
    for slot in arriving[::-1].tolist():  # largest first
        room, i = heapq.heappop(heap)
        p, j = divmod(slot, width)
        work.tgt_dir[p, j] = live[i]
        heapq.heappush(heap, (room + float(sizes[slot]), i))


def _even_out(work: Work, slots: IntArray, live: IntArray, weight: FloatArray) -> None:
    width = work.tgt.shape[1]
    sizes = work.size.ravel()[slots].tolist()
    held, biggest, dirs = _dir_bytes(work, slots, live)
    target = level_targets(float(held.sum()), weight[live], biggest)
    counted = dirs >= 0
    mean_size = float(np.mean(np.asarray(sizes)[counted])) if counted.any() else 0.0
    slack = tolerance(target, mean_size)
    position = {d: i for i, d in enumerate(live.tolist())}
    # Per directory, (size, k) of its replicas in size order: k indexes ``slots``.
    content: list[list[tuple[int, int]]] = [[] for _ in live]
    for k, d in enumerate(dirs.tolist()):
        if d in position:
            content[position[d]].append((sizes[k], k))
    for _ in range(_MAX_MOVES_PER_BROKER):
        gap = held - target
        if not (np.abs(gap) > slack).any():
            return
        o, u = int(np.argmax(gap)), int(np.argmin(gap))
        # At most what keeps both within their slack from the other side, and less than the
        # sum of their gaps, so the sum of squared gaps falls with every move.
        limit = min(gap[o] + slack[o], -gap[u] + slack[u], gap[o] - gap[u] - 1.0)
        at = bisect.bisect_right(content[o], (int(limit), len(sizes)))
        if at == 0 or content[o][at - 1][0] < _MIN_SHARE_OF_EXCESS * (gap[o] - slack[o]):
            return  # nothing fits, or what fits is too small to be worth a move
        size, k = content[o].pop(at - 1)  # the largest that fits
        bisect.insort(content[u], (size, k))
        p, j = divmod(int(slots[k]), width)
        work.tgt_dir[p, j] = live[u]
        held[o] -= size
        held[u] += size
