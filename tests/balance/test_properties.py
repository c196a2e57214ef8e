"""Properties of every plan, over random small clusters."""

from __future__ import annotations

import networkx as nx
import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from rackwise.balance import (
    NO_LOG_DIR,
    STRATEGIES,
    ClusterInput,
    Plan,
    ReplicaTable,
    Strategy,
    plan_cluster,
)
from rackwise.common import InvalidReplicationFactorException

from ._clusters import Shape, badly_spread, clusters, make, stuck, targets, usable

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _plan(cluster: ClusterInput, strategy: Strategy) -> Plan | None:
    """The plan, or None when some partition has more replicas than brokers that may hold it
    (then the planner must refuse)."""
    live = usable(cluster)
    excluded = stuck(cluster)
    rows = targets_of(cluster)
    feasible = all(len(row) <= len(live - excluded.get(k, set())) for k, row in rows.items())
    try:
        plan = plan_cluster(cluster, strategy)
    except InvalidReplicationFactorException:
        assert not feasible
        return None
    assert feasible
    return plan


def targets_of(cluster: ClusterInput) -> dict[tuple[str, int], list[int]]:
    reps = cluster.replicas
    out: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for t, p, i, b in zip(
        reps.topics.tolist(),
        reps.partitions.tolist(),
        reps.replica_index.tolist(),
        reps.broker_ids.tolist(),
        strict=True,
    ):
        out.setdefault((reps.topic_names[t], p), []).append((i, b))
    return {k: [b for _, b in sorted(v)] for k, v in out.items()}


@SETTINGS
@given(cluster=clusters(), strategy=st.sampled_from(STRATEGIES))
def test_every_plan_is_valid_and_evenly_spread(cluster: ClusterInput, strategy: Strategy) -> None:
    plan = _plan(cluster, strategy)
    if plan is None:
        return
    live = usable(cluster)
    excluded = stuck(cluster)
    before = targets_of(cluster)
    after = targets(plan)
    dirs = cluster.log_dirs
    has_dirs = {
        b for b, ok in zip(dirs.broker_ids.tolist(), dirs.is_live.tolist(), strict=True) if ok
    }
    assert after.keys() == before.keys()
    for p in range(plan.rf.size):
        key = (plan.topic_names[int(plan.topics[p])], int(plan.partitions[p]))
        row = after[key]
        assert len(row) == len(before[key])  # replication factor kept
        assert len(set(row)) == len(row)  # no broker twice
        assert set(row) <= live
        assert not set(row) & excluded.get(key, set())
        for j, broker in enumerate(row):
            d = int(plan.target_dirs[p, j])
            if d != NO_LOG_DIR:
                assert int(dirs.broker_ids[d]) == broker and bool(dirs.is_live[d])
            if plan.moved[p, j] and broker in has_dirs:
                assert d != NO_LOG_DIR  # a placed replica is told where to go
    rack_aware = strategy == "rack-aware"
    assert badly_spread(cluster, after, excluded, rack_aware=rack_aware) == []
    assert plan.report.avoidable_spread_violations_after == 0
    offline = next(g for g in plan.report.goals if g.name == "OfflineReplicaGoal")
    assert offline.violations_after == 0


def _leaders_feasible(plan: Plan, live: set[int]) -> bool:
    """Can some choice of one replica per partition give every usable broker floor(m)..ceil(m)
    leaderships? (A flow with lower bounds, as node demands.)"""
    parts = plan.rf.size
    lo, hi = parts // len(live), -(-parts // len(live))
    graph = nx.DiGraph()
    graph.add_node("sink", demand=parts - lo * len(live))
    for b in live:
        graph.add_node(("b", b), demand=lo)
        graph.add_edge(("b", b), "sink", capacity=hi - lo)
    for p in range(parts):
        graph.add_node(("p", p), demand=-1)
        for b in plan.target[p, : int(plan.rf[p])].tolist():
            graph.add_edge(("p", p), ("b", b), capacity=1)
    try:
        nx.network_simplex(graph)
    except nx.NetworkXUnfeasible:
        return False
    return True


@SETTINGS
@given(cluster=clusters())
def test_leaders_within_one_of_the_mean_whenever_possible(cluster: ClusterInput) -> None:
    plan = _plan(cluster, "keep")
    if plan is None:
        return
    live = usable(cluster)
    counts = np.bincount(plan.target[:, 0], minlength=max(live) + 1)[sorted(live)]
    mean = plan.rf.size / len(live)
    within = bool(((counts >= np.floor(mean)) & (counts <= np.ceil(mean))).all())
    assert within == _leaders_feasible(plan, live)
    goal = next(g for g in plan.report.goals if g.name == "LeaderReplicaDistributionGoal")
    assert (goal.violations_after == 0) == within


@st.composite
def symmetric(draw: st.DrawFn) -> ClusterInput:
    """Every rack at a level has the same children and every leaf rack the same brokers: the
    fair share is the mean. No failed directories."""
    levels = draw(st.integers(1, 2))
    fan = draw(st.integers(2, 3))
    per_rack = draw(st.integers(1, 3))
    paths = [""]
    for level in range(levels):
        paths = [f"{p}/l{level}n{i}" for p in paths for i in range(fan)]
    brokers = {10 * r + k: path for r, path in enumerate(paths) for k in range(per_rack)}
    ids = sorted(brokers)
    assignment = {}
    for part in range(draw(st.integers(1, 30))):
        rf = draw(st.integers(1, min(3, len(ids))))
        assignment[("t", part)] = list(draw(st.permutations(ids))[:rf])
    return make(brokers, assignment)


@SETTINGS
@given(cluster=symmetric(), strategy=st.sampled_from(STRATEGIES))
def test_replicas_within_one_of_the_mean_on_a_symmetric_tree(
    cluster: ClusterInput, strategy: Strategy
) -> None:
    plan = plan_cluster(cluster, strategy)
    counts = plan.loads_after.replicas
    mean = counts.sum() / counts.size
    assert counts.min() >= np.floor(mean) and counts.max() <= np.ceil(mean)
    goal = next(g for g in plan.report.goals if g.name == "ReplicaDistributionGoal")
    assert goal.violations_after == 0


def _replan(cluster: ClusterInput, plan: Plan, strategy: Strategy) -> Plan:
    """Plan the plan's target again, with as much knowledge of directories as the input had
    (none reported stays none reported: reporting some changes what an unlisted replica
    means)."""
    present = plan.target >= 0
    rows, cols = np.nonzero(present)
    reported = bool((cluster.replicas.log_dirs != NO_LOG_DIR).any())
    dirs = plan.target_dirs[rows, cols] if reported else np.full(rows.size, NO_LOG_DIR)
    replicas = ReplicaTable(
        plan.topic_names,
        plan.topics[rows],
        plan.partitions[rows],
        cols,
        plan.target[rows, cols],
        dirs,
        plan.sizes[rows, cols],
    )
    return plan_cluster(ClusterInput(cluster.brokers, cluster.log_dirs, replicas), strategy)


@SETTINGS
@given(cluster=clusters(), strategy=st.sampled_from(STRATEGIES))
def test_a_plan_that_meets_every_goal_is_a_fixed_point(
    cluster: ClusterInput, strategy: Strategy
) -> None:
    assume(not stuck(cluster))  # a replica stuck in a failed directory frees its broker later
    plan = _plan(cluster, strategy)
    if plan is None:
        return
    assume(all(g.violations_after == 0 for g in plan.report.goals))
    again = _replan(cluster, plan, strategy).report
    assert (again.replica_moves, again.intra_broker_moves, again.leader_moves) == (0, 0, 0)
    assert again.partitions_changed == 0
    assert again.score_before == again.score_after == 100.0


@SETTINGS
@given(cluster=clusters(), strategy=st.sampled_from(STRATEGIES))
def test_moves_never_beat_the_lower_bound(cluster: ClusterInput, strategy: Strategy) -> None:
    plan = _plan(cluster, strategy)
    if plan is None:
        return
    report = plan.report
    met = {g.name for g in report.goals if g.violations_after == 0}
    assume({"SpreadGoal", "OfflineReplicaGoal", "ReplicaDistributionGoal"} <= met)
    assert report.replica_moves >= report.lower_bound.replica_moves
    assert report.data_to_move_bytes >= report.lower_bound.bytes
    assert report.lower_bound.replica_moves >= report.lower_bound.must_leave_spread


@SETTINGS
@given(cluster=clusters(Shape(failures=False)))
def test_multi_level_keeps_exactly_what_keep_keeps(cluster: ClusterInput) -> None:
    keep = _plan(cluster, "keep")
    multi = _plan(cluster, "multi-level")
    if keep is None or multi is None:
        return
    assert multi.report.lower_bound == keep.report.lower_bound
    for name in ("SpreadGoal", "OfflineReplicaGoal"):
        k = next(g for g in keep.report.goals if g.name == name)
        m = next(g for g in multi.report.goals if g.name == name)
        assert (k.violations_before, k.violations_after) == (m.violations_before, 0)
