"""Plan one cluster's reassignment: :func:`plan_cluster`.

Goals, in priority order (the report lists them so; see :data:`~rackwise.balance.report.GOALS`)
    1. ``SpreadGoal`` (hard): every partition evenly spread at every node of the rack tree, as far
       as the brokers allow (``rackwise.topology.spread``'s definition).
    2. ``DomainLossGoal``: every partition with a rule (``ClusterInput.domain_rules``) keeps,
       after losing any one top-level domain, ``min.insync.replicas`` replicas in
       ``min.insync.racks`` domains wherever its factor allows (:mod:`~rackwise.balance._loss`);
       the goals below it make no move that exposes a partition to a new loss, and what is
       still exposed after the replica and byte goals is repaired then, keeping replica
       bounds where a move back allows it.
    3. ``ReplicaDistributionGoal`` and ``LeaderReplicaDistributionGoal``: replicas per broker
       within ``floor .. ceil`` of the broker's fair share (the mean, except where the spread
       rule fixes a rack's total: :mod:`~rackwise.balance._shares`), preferred leaders per
       broker within one of the mean.
    4. ``OfflineReplicaGoal`` (hard): no replica in a failed log directory or on a broker
       without a live one; ``DiskUsageDistributionGoal`` and
       ``IntraBrokerDiskUsageDistributionGoal``: bytes within 10% of each broker's share and of
       each live directory's share of its broker (KIP-113).
    5. Preferred leaders balanced by reordering replica lists only (no data moves); then a
       topic's ``leaders.preference`` puts each partition's first replica in its most
       preferred domain (:mod:`~rackwise.balance._pinning`).
    6. Move as little data as possible: keep every replica that may stay, move the smallest,
       move a replica this plan already moved before an original one.

Constraints
    Replication factors are kept; no broker holds two replicas of a partition; every target log
    directory is live and belongs to its broker (or is ``"any"`` where the broker's directories
    are not known). A replica in a failed directory leaves its broker: Kafka cannot move it to
    another directory of the same broker (the partition is offline there) nor move anything
    between the directories of a broker with an offline directory, so such brokers only choose
    directories for replicas arriving.

Strategies
    ``keep``: the current assignment is the start; only the moves the goals need are made.
    ``rack-aware``: as ``keep``, but spread is judged on the leaf racks only, each distinct rack
    path one rack directly under the root (KIP-36's view: as many distinct racks as possible).
    ``multi-level``: as ``keep`` (full hierarchy), but the replicas that must move are placed by
    KIP-879's multi-level placer, given each partition's kept replicas as its existing ones. A
    replica "may stay" exactly as under ``keep``: it is live and belongs to a largest set of the
    partition's replicas that an even spread can be completed from (the repair's dynamic
    programme, :mod:`~rackwise.balance._repair`); rows the placer cannot complete evenly are
    completed by the repair.

Algorithm
    Lay the cluster out as a partition matrix; repair offline partitions, then badly spread ones
    (drop what cannot stay, then place); shed and fill replica counts; even out bytes across
    brokers; choose directories for arriving replicas and even out directories; reorder replica
    lists for leaders. Each step is timed with the injected clock.

Example: brokers 1, 2 in /dc1/r1, 3, 4 in /dc2/r1, RF 2, partition t-0 on (1, 2): badly spread
at the root (2 and 0). The repair keeps 1 and places the other replica in /dc2 on the broker
with more room, say 3: ``t-0`` -> ``(1, 3)``, one replica move, equal to the lower bound.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from rackwise.balance import _fix
from rackwise.balance._bound import lower_bound
from rackwise.balance._bytes import balance_bytes
from rackwise.balance._counts import balance_replicas
from rackwise.balance._dirs import balance_dirs
from rackwise.balance._layout import PAD, Layout, layout
from rackwise.balance._leaders import balance_leaders, leader_bounds
from rackwise.balance._loss import Guard, Verdicts, violations
from rackwise.balance._loss_repair import Classes, protect, repair
from rackwise.balance._measure import (
    Bounds,
    BrokerTargets,
    Loads,
    State,
    avoidable,
    broker_targets,
    goal_violations,
    loads,
    skew,
)
from rackwise.balance._pinning import pin_leaders
from rackwise.balance._shares import bounds as share_bounds
from rackwise.balance._shares import fair_shares
from rackwise.balance._spread import violations_by_level
from rackwise.balance._tree import PlanTree, build_tree
from rackwise.balance._work import BYTES, DOMAIN_LOSS, OFFLINE, REPLICAS, SPREAD, Work
from rackwise.balance.model import (
    STRATEGIES,
    BoolArray,
    Clock,
    ClusterInput,
    DomainRule,
    IntArray,
    Strategy,
)
from rackwise.balance.report import (
    GOALS,
    UNPROTECTABLE_LISTED,
    GoalResult,
    PlanReport,
    Unprotectable,
    balancedness,
    status,
)
from rackwise.common import InvalidRequestException
from rackwise.topology import LeadersPreference


@dataclass(frozen=True, eq=False)
class Plan:
    """A cluster's target assignment and its report.

    Partition p is ``topic_names[topics[p]]``-``partitions[p]``; ``current[p]`` and
    ``target[p]`` are broker ids (``-1`` past ``rf[p]``), ``target_dirs[p, j]`` the log
    directory row of target replica j (``-1``: ``"any"``), ``sizes`` its bytes, ``moved`` true
    for a replica copied onto a broker that did not have it, ``dir_moved`` true for a replica
    moved between directories of its broker. ``dir_paths``/``dir_broker_ids`` describe the
    directory rows. Loads are per broker (in ``broker_ids`` order) and per directory row;
    ``targets`` are what the balance goals judged the target's per-broker loads by.
    """

    strategy: Strategy
    broker_ids: IntArray
    topic_names: tuple[str, ...]
    topics: IntArray
    partitions: IntArray
    rf: IntArray
    current: IntArray
    current_dirs: IntArray
    target: IntArray
    target_dirs: IntArray
    sizes: IntArray
    moved: BoolArray
    dir_moved: BoolArray
    changed: BoolArray
    dir_paths: tuple[str, ...]
    dir_broker_ids: IntArray
    loads_before: Loads
    loads_after: Loads
    targets: BrokerTargets
    report: PlanReport


def _clock_or_zero(clock: Clock | None) -> Clock:
    return clock if clock is not None else (lambda: 0.0)


def plan_cluster(
    cluster: ClusterInput,
    strategy: Strategy = "keep",
    *,
    clock: Clock | None = None,
    seed: int = 0,
) -> Plan:
    """Plan ``cluster`` with ``strategy`` (see the module docstring). ``clock`` times the goals
    (zeros without one); ``seed`` seeds the multi-level placer's rings."""
    if strategy not in STRATEGIES:
        raise InvalidRequestException(
            f"Unknown strategy {strategy!r}; expected one of {', '.join(STRATEGIES)}"
        )
    now = _clock_or_zero(clock)
    started = now()
    lay = layout(cluster)
    flat = strategy == "rack-aware"
    everyone = np.ones(lay.num_brokers, np.bool_)
    full_tree = build_tree(lay.broker_ids, lay.racks, everyone, flat=flat)
    tree = (
        full_tree
        if lay.usable.all()
        else build_tree(lay.broker_ids, lay.racks, lay.usable, flat=flat)
    )
    shares = fair_shares(tree, lay.rf, lay.num_brokers)
    lo, hi = share_bounds(shares)
    work = Work(lay, tree, shares)
    in_tree = tree.leaf >= 0
    leader_lo, leader_hi = leader_bounds(work)
    present = lay.cur != PAD
    mean_size = float(lay.size[present].mean()) if present.any() else 0.0
    goal_bounds = Bounds(in_tree, lo, hi, leader_lo, leader_hi, tree, shares, work.fixed, mean_size)
    before_state = State(lay.cur, np.where(lay.cur != PAD, lay.cur_dir, -1), lay.size)
    audit_bad, before_levels = violations_by_level(full_tree, lay.cur)
    planned_bad = avoidable(tree, lay.cur, work.excluded)
    load_before = loads(lay, before_state)
    before = goal_violations(lay, before_state, int(planned_bad.sum()), goal_bounds, load_before)
    before["audit"] = int(audit_bad.sum())
    loss = _DomainLoss(work, cluster.domain_rules)
    before["DomainLossGoal"] = loss.violations(lay.cur)
    timings, must = _run_goals(
        work, strategy, seed, (lo, hi), now, cluster.leaders_preferences, loss
    )
    return _finish(
        lay,
        work,
        full_tree,
        strategy,
        goal_bounds,
        before,
        before_levels,
        load_before,
        timings,
        must,
        now() - started,
        loss,
    )


class _DomainLoss:
    """``DomainLossGoal``'s state: nothing when no topic has a rule."""

    def __init__(self, work: Work, rules: Mapping[str, DomainRule]) -> None:
        self.work = work
        self.guard = Guard(work, rules) if rules else None
        self.verdicts = Verdicts(work, self.guard) if self.guard is not None else None
        if self.verdicts is not None:
            self.verdicts.cover()
        self.lost: tuple[Unprotectable, ...] = ()
        self.classes: Classes | None = None

    def violations(self, tgt: IntArray) -> int:
        if self.guard is None or self.verdicts is None:
            return 0
        return violations(self.work, self.guard, self.verdicts, tgt)

    def run(self) -> None:
        """Protect what can be, then guard it from the balance goals."""
        if self.guard is None or self.verdicts is None:
            return
        self.classes = Classes(self.work, self.guard)
        self.lost = protect(self.work, self.guard, self.verdicts, self.classes)
        self.work.guard = self.guard

    def repair(self, bounds: tuple[IntArray, IntArray]) -> None:
        """After the balance goals, protect what they left exposed (moves they may have made
        without the goal protect by chance; these are made on purpose)."""
        if self.guard is not None and self.classes is not None:
            repair(self.work, self.guard, self.classes, bounds)


def _run_goals(
    work: Work,
    strategy: Strategy,
    seed: int,
    bounds: tuple[IntArray, IntArray],
    now: Clock,
    preferences: Mapping[str, LeadersPreference],
    loss: _DomainLoss,
) -> tuple[dict[str, float], IntArray]:
    lo, hi = bounds
    timings: dict[str, float] = {}
    use_placer = strategy == "multi-level"
    mark = now()
    offline = _fix.offline_partitions(work)
    must = _fix.repair(work, offline, OFFLINE, use_placer=use_placer, seed=seed)
    timings["OfflineReplicaGoal"], mark = now() - mark, now()
    spread = _fix.spread_partitions(work, offline)
    must += _fix.repair(work, spread, SPREAD, use_placer=use_placer, seed=seed)
    timings["SpreadGoal"], mark = now() - mark, now()
    loss.run()
    timings["DomainLossGoal"], mark = now() - mark, now()
    balance_replicas(work, lo, hi)
    timings["ReplicaDistributionGoal"], mark = now() - mark, now()
    balance_bytes(work, lo, hi)
    timings["DiskUsageDistributionGoal"], mark = now() - mark, now()
    loss.repair((lo, hi))  # before the directories are chosen for what it moves
    timings["DomainLossGoal"] += now() - mark
    mark = now()
    balance_dirs(work)
    timings["IntraBrokerDiskUsageDistributionGoal"], mark = now() - mark, now()
    balance_leaders(work)
    pin_leaders(work, preferences)  # a topic's leaders.preference wins over leader balance
    timings["LeaderReplicaDistributionGoal"] = now() - mark
    return timings, must


def _finish(
    lay: Layout,
    work: Work,
    full_tree: PlanTree,
    strategy: Strategy,
    goal_bounds: Bounds,
    before: dict[str, int],
    before_levels: dict[int, int],
    load_before: Loads,
    timings: dict[str, float],
    must: IntArray,
    elapsed: float,
    loss: _DomainLoss,
) -> Plan:
    tgt = work.tgt
    present = tgt != PAD
    moved = present & (work.cause != 0)
    orig_dir = _original_dirs(lay, tgt)
    dir_moved = present & ~moved & (work.tgt_dir >= 0) & (orig_dir >= 0)
    dir_moved &= work.tgt_dir != orig_dir
    after_state = State(tgt, work.tgt_dir, work.size)
    load_after = loads(lay, after_state)
    bad_after = avoidable(work.tree, tgt, work.excluded)
    full_bad, after_levels = violations_by_level(full_tree, tgt)
    after = goal_violations(lay, after_state, int(bad_after.sum()), goal_bounds, load_after)
    after["DomainLossGoal"] = loss.violations(tgt)
    goals = _goal_results(work, (moved, dir_moved), before, after, timings)
    changed = moved.any(axis=1) | dir_moved.any(axis=1) | (tgt != lay.cur).any(axis=1)
    leader_moves = int((~moved.any(axis=1) & (tgt[:, 0] != lay.cur[:, 0])).sum())
    traffic = _traffic(lay, work, moved, dir_moved)
    report = PlanReport(
        strategy=strategy,
        num_brokers=lay.num_brokers,
        num_partitions=lay.num_partitions,
        num_replicas=int((lay.cur != PAD).sum()),
        num_estimated_sizes=lay.num_estimated_sizes,
        replica_moves=int(moved.sum()),
        data_to_move_bytes=int(work.size[moved].sum()),
        intra_broker_moves=int(dir_moved.sum()),
        intra_broker_data_to_move_bytes=int(work.size[dir_moved].sum()),
        leader_moves=leader_moves,
        partitions_changed=int(changed.sum()),
        lower_bound=lower_bound(lay, goal_bounds.in_tree, goal_bounds.lo, goal_bounds.hi, must),
        goals=goals,
        score_before=balancedness([g.name for g in goals if g.violations_before > 0]),
        score_after=balancedness([g.name for g in goals if g.violations_after > 0]),
        spread_violations_before=before["audit"],
        spread_violations_after=int(full_bad.sum()),
        avoidable_spread_violations_after=after["SpreadGoal"],
        spread_by_level_before=before_levels,
        spread_by_level_after=after_levels,
        skew_before=skew(lay, load_before),
        skew_after=skew(lay, load_after),
        max_broker_inbound_bytes=traffic[0],
        max_broker_outbound_bytes=traffic[1],
        max_broker_intra_bytes=traffic[2],
        plan_ms=elapsed * 1000.0,
        unprotectable_partitions=len(loss.lost),
        unprotectable=loss.lost[:UNPROTECTABLE_LISTED],
    )
    return Plan(
        strategy=strategy,
        **_arrays(lay, work, moved, dir_moved, changed),
        loads_before=load_before,
        loads_after=load_after,
        targets=broker_targets(lay, after_state, goal_bounds, load_after),
        report=report,
    )


def _arrays(
    lay: Layout, work: Work, moved: BoolArray, dir_moved: BoolArray, changed: BoolArray
) -> dict[str, Any]:
    """The plan's arrays, broker indices turned back into ids."""
    ids = lay.broker_ids
    present = work.tgt != PAD
    return {
        "broker_ids": ids,
        "topic_names": lay.topic_names,
        "topics": lay.topics,
        "partitions": lay.partitions,
        "rf": lay.rf,
        "current": np.where(lay.cur != PAD, ids[np.maximum(lay.cur, 0)], -1),
        "current_dirs": np.where(lay.cur != PAD, lay.cur_dir, -1),
        "target": np.where(present, ids[np.maximum(work.tgt, 0)], -1),
        "target_dirs": np.where(present, work.tgt_dir, -1),
        "sizes": work.size,
        "moved": moved,
        "dir_moved": dir_moved,
        "changed": changed,
        "dir_paths": lay.dir_paths,
        "dir_broker_ids": ids[lay.dir_broker] if lay.dir_broker.size else lay.dir_broker,
    }


INTRA_GOAL = "IntraBrokerDiskUsageDistributionGoal"
_CAUSE_OF_GOAL = {
    "OfflineReplicaGoal": OFFLINE,
    "SpreadGoal": SPREAD,
    "ReplicaDistributionGoal": REPLICAS,
    "DiskUsageDistributionGoal": BYTES,
    "DomainLossGoal": DOMAIN_LOSS,
}


def _goal_results(
    work: Work,
    moves: tuple[BoolArray, BoolArray],
    before: dict[str, int],
    after: dict[str, int],
    timings: dict[str, float],
) -> tuple[GoalResult, ...]:
    """Each goal's figures; its moves are the inter-broker moves it caused, and for
    :data:`INTRA_GOAL` the moves between a broker's directories (the plan's
    ``intra_broker_moves``), which that goal alone makes."""
    moved, dir_moved = moves
    out: list[GoalResult] = []
    for goal in GOALS:
        cause = _CAUSE_OF_GOAL.get(goal.name, -1)
        mine = dir_moved if goal.name == INTRA_GOAL else moved & (work.cause == cause)
        out.append(
            GoalResult(
                name=goal.name,
                is_hard=goal.is_hard,
                unit=goal.unit,
                status=status(before[goal.name], after[goal.name]),
                violations_before=before[goal.name],
                violations_after=after[goal.name],
                replica_moves=int(mine.sum()),
                bytes_moved=int(work.size[mine].sum()),
                time_ms=timings.get(goal.name, 0.0) * 1000.0,
            )
        )
    return tuple(out)


def _original_dirs(lay: Layout, tgt: IntArray) -> IntArray:
    """For each target position, the directory its broker held the partition in (-1: none)."""
    match = (tgt[:, :, None] == lay.cur[:, None, :]) & (tgt[:, :, None] != PAD)
    k = match.argmax(axis=2)
    dirs = np.take_along_axis(lay.cur_dir, k, axis=1)
    keep = np.take_along_axis(lay.keepable, k, axis=1)
    return np.where(match.any(axis=2) & keep, dirs, -1)


def _traffic(
    lay: Layout, work: Work, moved: BoolArray, dir_moved: BoolArray
) -> tuple[int, int, int]:
    """Busiest broker's inbound copy bytes, outbound (from the partition's current leader, or
    its first replica that is still live), and intra-broker copy bytes."""
    num = lay.num_brokers
    sizes = work.size
    inbound = np.bincount(work.tgt[moved], weights=sizes[moved], minlength=num)
    source_slot = lay.keepable.argmax(axis=1)
    has_source = lay.keepable.any(axis=1)
    source = np.take_along_axis(lay.cur, source_slot[:, None], axis=1)[:, 0]
    per_partition = np.where(moved, sizes, 0).sum(axis=1)
    ok = has_source & (per_partition > 0)
    outbound = np.bincount(source[ok], weights=per_partition[ok], minlength=num)
    intra = np.bincount(work.tgt[dir_moved], weights=sizes[dir_moved], minlength=num)
    return (
        int(inbound.max()) if num else 0,
        int(outbound.max()) if num else 0,
        int(intra.max()) if num else 0,
    )
