"""The figures of one state of the cluster (before or after the plan): violations per goal, loads
per broker and per log directory, skew, and the per-broker targets the balance goals judge by."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rackwise.balance._bytes import byte_targets, bytes_outside, largest, tolerance
from rackwise.balance._counts import replicas_outside
from rackwise.balance._dirs import dirs_outside
from rackwise.balance._layout import PAD, Layout
from rackwise.balance._leaders import leader_counts, leaders_outside
from rackwise.balance._spread import spread_ok, violations_by_level
from rackwise.balance._tree import PlanTree
from rackwise.balance.model import BoolArray, FloatArray, IntArray
from rackwise.balance.report import Skew


@dataclass(frozen=True, eq=False)
class State:
    """One assignment: brokers, log directory rows and sizes per replica position."""

    brokers: IntArray
    dirs: IntArray
    sizes: IntArray


@dataclass(frozen=True, eq=False)
class Bounds:
    """What the balance goals aim for: replica bounds per broker, leader bounds, byte shares."""

    in_tree: BoolArray
    lo: IntArray
    hi: IntArray
    leader_lo: int
    leader_hi: int
    tree: PlanTree
    shares: FloatArray
    fixed: BoolArray
    mean_size: float


@dataclass(frozen=True, eq=False)
class Loads:
    """Per broker: replicas, leaders, bytes; per log directory row: replicas, bytes."""

    replicas: IntArray
    leaders: IntArray
    bytes: IntArray
    dir_replicas: IntArray
    dir_bytes: IntArray


@dataclass(frozen=True, eq=False)
class TargetRange:
    """Per broker (in ``broker_ids`` order): what a goal accepts, ``low .. high`` inclusive, and
    what it aims at, ``target``. NaN for a broker outside the goals' tree (a fenced broker, or
    one without a live log directory: the goals want it empty)."""

    low: FloatArray
    target: FloatArray
    high: FloatArray


@dataclass(frozen=True, eq=False)
class BrokerTargets:
    """The balance goals' targets per broker: replicas (``ReplicaDistributionGoal``), preferred
    leaders (``LeaderReplicaDistributionGoal``), bytes (``DiskUsageDistributionGoal``)."""

    replicas: TargetRange
    leaders: TargetRange
    bytes: TargetRange


def _outside_nan(in_tree: BoolArray, low: object, target: object, high: object) -> TargetRange:
    def column(values: object) -> FloatArray:
        full = np.broadcast_to(np.asarray(values, np.float64), in_tree.shape)
        return np.where(in_tree, full, np.nan)

    return TargetRange(column(low), column(target), column(high))


def broker_targets(lay: Layout, state: State, bounds: Bounds, load: Loads) -> BrokerTargets:
    """The targets :func:`goal_violations` judges ``state`` by: replicas within ``floor ..
    ceil`` of the broker's fair share (a share within 1e-6 of a whole number is that number, as
    :func:`~rackwise.balance._shares.bounds` reads it); leaders within ``floor .. ceil`` of
    partitions over the brokers in the tree; bytes within
    :func:`~rackwise.balance._bytes.tolerance` of the byte target (a low end below zero is
    drawn at zero: no load is smaller)."""
    in_tree = bounds.in_tree
    num_in_tree = int(in_tree.sum())
    leader_mean = int((lay.rf > 0).sum()) / num_in_tree if num_in_tree else 0.0
    byte_target = _byte_target(state, bounds, load)
    slack = tolerance(byte_target, bounds.mean_size)
    return BrokerTargets(
        replicas=_outside_nan(
            in_tree, bounds.lo, np.clip(bounds.shares, bounds.lo, bounds.hi), bounds.hi
        ),
        leaders=_outside_nan(in_tree, bounds.leader_lo, leader_mean, bounds.leader_hi),
        bytes=_outside_nan(
            in_tree, np.maximum(byte_target - slack, 0.0), byte_target, byte_target + slack
        ),
    )


def loads(lay: Layout, state: State) -> Loads:
    present = state.brokers != PAD
    num = lay.num_brokers
    on_dir = present & (state.dirs >= 0)
    num_dirs = lay.dir_broker.size
    return Loads(
        replicas=np.bincount(state.brokers[present], minlength=num).astype(np.int64),
        leaders=leader_counts(state.brokers, num),
        bytes=np.bincount(
            state.brokers[present], weights=state.sizes[present], minlength=num
        ).astype(np.int64),
        dir_replicas=np.bincount(state.dirs[on_dir], minlength=num_dirs).astype(np.int64),
        dir_bytes=np.bincount(
            state.dirs[on_dir], weights=state.sizes[on_dir], minlength=num_dirs
        ).astype(np.int64),
    )


def offline_replicas(lay: Layout, state: State) -> int:
    present = state.brokers != PAD
    usable = lay.usable[np.maximum(state.brokers, 0)]
    dead_dir = (state.dirs >= 0) & ~(
        lay.dir_live[np.maximum(state.dirs, 0)] if lay.dir_live.size else True
    )
    return int((present & (~usable | dead_dir)).sum())


def avoidable(tree: PlanTree, brokers: IntArray, excluded: dict[int, tuple[int, ...]]) -> BoolArray:
    """Partitions badly spread on ``tree`` although an even spread was possible (a partition
    that may not use some broker is checked with that broker counted as not free)."""
    bad, _ = violations_by_level(tree, brokers)
    for p in np.flatnonzero(bad).tolist():
        if p in excluded:
            row = [int(b) for b in brokers[p] if b >= 0]
            bad[p] = not spread_ok(tree, row, excluded[p])
    return bad


def goal_violations(
    lay: Layout,
    state: State,
    spread_bad: int,
    bounds: Bounds,
    load: Loads,
) -> dict[str, int]:
    on_live = lay.dir_live[np.maximum(state.dirs, 0)] if lay.dir_live.size else False
    live_dirs = np.where((state.dirs >= 0) & on_live, state.dirs, -1)
    return {
        "SpreadGoal": spread_bad,
        "ReplicaDistributionGoal": replicas_outside(
            load.replicas, bounds.lo, bounds.hi, bounds.in_tree
        ),
        "LeaderReplicaDistributionGoal": leaders_outside(
            state.brokers, bounds.leader_lo, bounds.leader_hi, bounds.in_tree
        ),
        "OfflineReplicaGoal": offline_replicas(lay, state),
        "DiskUsageDistributionGoal": bytes_outside(
            load.bytes, _byte_target(state, bounds, load), bounds.in_tree, bounds.mean_size
        ),
        "IntraBrokerDiskUsageDistributionGoal": dirs_outside(
            lay, state.brokers, live_dirs, state.sizes
        ),
    }


def _byte_target(state: State, bounds: Bounds, load: Loads) -> FloatArray:
    present = state.brokers != PAD
    biggest = largest(state.brokers[present], state.sizes[present], bounds.in_tree.size)
    return byte_targets(bounds.tree, bounds.shares, bounds.fixed, load.bytes, biggest)


def _max_over_mean(values: FloatArray | IntArray) -> float:
    mean = float(values.mean()) if values.size else 0.0
    return float(values.max()) / mean if mean > 0 else 1.0


def skew(lay: Layout, load: Loads) -> Skew:
    dir_skew = 1.0
    if lay.dir_broker.size:
        live = lay.dir_live
        sums = np.bincount(lay.dir_broker, weights=np.where(live, load.dir_bytes, 0))
        nums = np.bincount(lay.dir_broker, weights=live)
        mean = np.where(nums > 0, sums / np.maximum(nums, 1), 0.0)[lay.dir_broker]
        ratio = np.where(live & (mean > 0), load.dir_bytes / np.where(mean > 0, mean, 1.0), 0.0)
        dir_skew = float(ratio.max()) if ratio.size and ratio.max() > 0 else 1.0
    return Skew(
        replicas=_max_over_mean(load.replicas),
        leaders=_max_over_mean(load.leaders),
        bytes=_max_over_mean(load.bytes),
        log_dir_bytes=dir_skew,
    )
