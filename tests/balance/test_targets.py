"""The per-broker targets a plan reports: the ones its balance goals judged the target by."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rackwise.balance import (
    FIXED,
    STRATEGIES,
    ClusterInput,
    Plan,
    Strategy,
    TargetRange,
    plan_cluster,
)
from rackwise.common import InvalidReplicationFactorException

from ._clusters import clusters, make, usable

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# The goal, the metric its targets are for, and the after-plan load it judges.
GOAL_METRICS = (
    ("ReplicaDistributionGoal", "replicas"),
    ("LeaderReplicaDistributionGoal", "leaders"),
    ("DiskUsageDistributionGoal", "bytes"),
)


def _ranges(plan: Plan) -> dict[str, TargetRange]:
    return {metric: getattr(plan.targets, metric) for _, metric in GOAL_METRICS}


def _as_lists(goal_range: TargetRange) -> list[tuple[float, float, float]]:
    return list(
        zip(
            goal_range.low.tolist(),
            goal_range.target.tolist(),
            goal_range.high.tolist(),
            strict=True,
        )
    )


def test_three_partitions_on_one_broker_aim_at_one_each() -> None:
    # Three brokers in three racks, three partitions of RF 1 and 100 bytes, all on broker 1.
    # Every share is 1 (replicas 1 to 1, leaders 3 / 3 = 1); the 300 bytes are shared equally,
    # 100 each, within the larger of 10% and the mean replica (100): 0 to 200.
    cluster = make(
        {1: "/r1", 2: "/r2", 3: "/r3"},
        {("t", 0): [1], ("t", 1): [1], ("t", 2): [1]},
    )
    plan = plan_cluster(cluster)
    ranges = _ranges(plan)
    assert _as_lists(ranges["replicas"]) == [(1.0, 1.0, 1.0)] * 3
    assert _as_lists(ranges["leaders"]) == [(1.0, 1.0, 1.0)] * 3
    assert _as_lists(ranges["bytes"]) == [(0.0, 100.0, 200.0)] * 3
    assert plan.loads_after.replicas.tolist() == [1, 1, 1]


def test_a_broker_without_a_live_directory_has_no_targets() -> None:
    # Broker 3's only directory has failed: the goals want it empty and judge brokers 1 and 2
    # only. Three partitions over two brokers: shares 1.5 (1 to 2), leaders 1.5 (1 to 2), bytes
    # 150 each within 100 (the mean replica): 50 to 250.
    cluster = make(
        {1: "/r1", 2: "/r2", 3: "/r3"},
        {("t", 0): [1], ("t", 1): [1], ("t", 2): [3]},
        dirs={1: [("/d1", 1000, True)], 2: [("/d1", 1000, True)], 3: [("/d1", 1000, False)]},
    )
    plan = plan_cluster(cluster)
    ranges = _ranges(plan)
    assert _as_lists(ranges["replicas"])[:2] == [(1.0, 1.5, 2.0)] * 2
    assert _as_lists(ranges["leaders"])[:2] == [(1.0, 1.5, 2.0)] * 2
    assert _as_lists(ranges["bytes"])[:2] == [(50.0, 150.0, 250.0)] * 2
    for goal_range in ranges.values():
        assert all(math.isnan(v) for v in _as_lists(goal_range)[2])
    assert plan.loads_after.replicas.tolist()[2] == 0


def _plan(cluster: ClusterInput, strategy: Strategy) -> Plan | None:
    try:
        return plan_cluster(cluster, strategy)
    except InvalidReplicationFactorException:
        return None  # more replicas than brokers that may hold them: refused, as elsewhere


@SETTINGS
@given(cluster=clusters(), strategy=st.sampled_from(STRATEGIES))
def test_targets_are_ordered_and_known_exactly_for_the_goals_brokers(
    cluster: ClusterInput, strategy: Strategy
) -> None:
    plan = _plan(cluster, strategy)
    if plan is None:
        return
    live = usable(cluster)
    in_tree = np.array([b in live for b in plan.broker_ids.tolist()])
    for metric, goal_range in _ranges(plan).items():
        for name in ("low", "target", "high"):
            column = getattr(goal_range, name)
            assert column.shape == plan.broker_ids.shape, (metric, name)
            assert (np.isnan(column) == ~in_tree).all(), (metric, name)
        low, target, high = goal_range.low, goal_range.target, goal_range.high
        assert (low[in_tree] <= target[in_tree]).all(), metric
        assert (target[in_tree] <= high[in_tree]).all(), metric
        assert (low[in_tree] >= 0).all(), metric


@SETTINGS
@given(cluster=clusters(), strategy=st.sampled_from(STRATEGIES))
def test_a_goal_met_after_the_plan_has_every_broker_within_its_targets(
    cluster: ClusterInput, strategy: Strategy
) -> None:
    plan = _plan(cluster, strategy)
    if plan is None:
        return
    goals = {g.name: g for g in plan.report.goals}
    for name, metric in GOAL_METRICS:
        goal = goals[name]
        goal_range = getattr(plan.targets, metric)
        value = getattr(plan.loads_after, metric).astype(np.float64)
        judged = ~np.isnan(goal_range.target)
        slack = 1e-9 * np.maximum(np.abs(value), 1.0)  # float rounding of the byte bounds
        outside = judged & ((value < goal_range.low - slack) | (value > goal_range.high + slack))
        if goal.violations_after == 0:
            assert not outside.any(), (name, goal.status)
        if goal.status == FIXED:
            assert goal.violations_after == 0
        if metric != "bytes":  # whole counts: the goal counts exactly the brokers outside
            held_outside = int((~judged & (value > 0)).sum())
            assert int(outside.sum()) + held_outside == goal.violations_after, name
