"""DomainLossGoal: after losing any one data centre, partitions keep min.insync.replicas
replicas in min.insync.racks domains wherever their factor allows; golden cases and properties
over random small clusters, judged by an independent count of what each loss would do."""

from __future__ import annotations

import json
from dataclasses import replace

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from rackwise.balance import STRATEGIES, ClusterInput, Plan, Strategy, plan_cluster
from rackwise.balance.model import DomainRule
from rackwise.pipeline.audit.rules import DomainRules
from rackwise.pipeline.plan.group import plan_group
from rackwise.topology import domain_at
from rackwise.topology.loss import loss_tree, protectable
from tests.pipeline.plan.test_group import _brokers, _replicas

from ._clusters import Shape, clusters, make, stuck, targets, usable
from .test_properties import (
    SETTINGS,
    _plan,
    targets_of,
    test_every_plan_is_valid_and_evenly_spread,
)

RULE = DomainRule(min_insync_replicas=2, min_insync_racks=2, level=1)


def _exposed(
    cluster: ClusterInput, rows: dict[tuple[str, int], list[int]], rules: dict[str, DomainRule]
) -> tuple[dict[str, int], int]:
    """Per data centre, the partitions some placement of their factor protects (on the usable
    brokers that do not hold them in a failed directory) that its loss leaves offline, under
    min ISR or refusing acks=all writes (the audit's three counts together); and how many
    partitions that is in all."""
    rack = dict(zip(cluster.brokers.ids.tolist(), cluster.brokers.racks, strict=True))
    excluded = stuck(cluster)
    out: dict[str, int] = {}
    anywhere = 0
    for key, row in rows.items():
        rule = rules.get(key[0])
        if rule is None:
            continue
        live = [(b, rack[b]) for b in sorted(usable(cluster) - excluded.get(key, set()))]
        tree = loss_tree(live, rule.level)
        if not protectable(len(row), tree, rule.min_insync_replicas, rule.min_insync_racks):
            continue
        top = {b: domain_at(rack[b], 1, broker_id=b) for b in row}
        hit = False
        for lost in set(top.values()):
            left = [b for b in row if top[b] != lost]
            domains = {domain_at(rack[b], rule.level, broker_id=b) for b in left}
            if len(left) < rule.min_insync_replicas or len(domains) < rule.min_insync_racks:
                out[lost] = out.get(lost, 0) + 1
                hit = True
        anywhere += hit
    return out, anywhere


def _goal(plan: Plan) -> tuple[int, int, int]:
    goal = next(g for g in plan.report.goals if g.name == "DomainLossGoal")
    return goal.violations_before, goal.violations_after, goal.replica_moves


def test_rack_aware_moves_a_replica_into_the_third_data_centre() -> None:
    brokers = {1: "/dc1/a", 2: "/dc1/b", 3: "/dc2/a", 4: "/dc2/b", 5: "/dc3/a", 6: "/dc3/b"}
    cluster = make(brokers, {("t", 0): [1, 2, 3], ("t", 1): [3, 5, 1]})
    cluster = replace(cluster, domain_rules={"t": RULE})
    plan = plan_cluster(cluster, "rack-aware")
    row = targets(plan)[("t", 0)]
    assert {brokers[b][:4] for b in row} == {"/dc1", "/dc2", "/dc3"}
    assert targets(plan)[("t", 1)] == [3, 5, 1]  # already protected: untouched
    assert _goal(plan) == (1, 0, 1)
    assert plan.report.unprotectable_partitions == 0


def test_what_no_placement_protects_is_listed_with_the_factor_that_would() -> None:
    brokers = {1: "/dc1/a", 2: "/dc1/b", 3: "/dc2/a", 4: "/dc2/b"}
    cluster = make(brokers, {("t", 0): [1, 3], ("u", 0): [1, 3]})
    rules = {"t": DomainRule(2, 2, 1), "u": DomainRule(2, 1, 1)}
    plan = plan_cluster(replace(cluster, domain_rules=rules), "keep")
    listed = {(u.topic, u.protecting_replication_factor) for u in plan.report.unprotectable}
    # Two data centres never leave two after one is lost; two replicas in each would do for u.
    assert listed == {("t", None), ("u", 4)}
    assert plan.report.unprotectable_partitions == 2
    assert plan.report.to_dict()["unprotectable"][0]["replication_factor"] == 2
    assert _goal(plan) == (0, 0, 0)  # nothing protectable is exposed


rules_drawn = st.dictionaries(
    st.sampled_from(["a", "b"]),
    st.builds(DomainRule, st.integers(1, 3), st.integers(1, 3), st.integers(1, 2)),
    min_size=1,
)


@SETTINGS
@given(cluster=clusters(), strategy=st.sampled_from(STRATEGIES), rules=rules_drawn)
def test_the_goal_keeps_the_hard_goals_and_counts_what_each_loss_would_do(
    cluster: ClusterInput, strategy: Strategy, rules: dict[str, DomainRule]
) -> None:
    ruled = replace(cluster, domain_rules=rules)
    test_every_plan_is_valid_and_evenly_spread.hypothesis.inner_test(ruled, strategy)  # type: ignore[attr-defined]
    plan = _plan(ruled, strategy)
    if plan is None:
        return
    before, after, _ = _goal(plan)
    assert before == _exposed(cluster, targets_of(cluster), rules)[1]
    assert after == _exposed(cluster, targets(plan), rules)[1]  # the goal's count is the audit's


@settings(SETTINGS, max_examples=400)
@given(
    cluster=clusters(Shape(max_brokers=18, max_partitions=60, max_rf=5)),
    strategy=st.sampled_from(STRATEGIES),
    rules=rules_drawn,
)
def test_the_goal_never_leaves_more_exposed_than_the_plan_without_it(
    cluster: ClusterInput, strategy: Strategy, rules: dict[str, DomainRule]
) -> None:
    """Balance moves made without the goal can protect a partition by chance; the goal's
    search and its repair after the balance goals must protect at least as many, for every
    data centre's loss (before, a plan on 18 brokers left one partition exposed to a rackless
    broker's loss where the plan without the goal left none)."""
    without = _plan(cluster, strategy)
    if without is None:
        return
    plan = plan_cluster(replace(cluster, domain_rules=rules), strategy)
    per_domain, anywhere = _exposed(cluster, targets(plan), rules)
    per_domain_without, anywhere_without = _exposed(cluster, targets(without), rules)
    assert anywhere <= anywhere_without
    for domain, count in per_domain.items():
        assert count <= per_domain_without.get(domain, 0), (domain, per_domain_without)
    assert _goal(plan)[1] == anywhere


def test_the_fleet_plan_protects_and_lists_by_the_topics_min_insync_racks() -> None:
    racks = {1: "/dc1/a", 2: "/dc1/b", 3: "/dc2/a", 4: "/dc2/b", 5: "/dc3/a", 6: "/dc3/b"}
    brokers = [("c", b, racks[b], "/d", 100, True) for b in racks]
    placed = [((1, 2, 3), "t"), ((1, 3), "u")]
    replicas = [
        ("c", topic, p, i, b, "/d", 10) for p, (bs, topic) in enumerate(placed)
        for i, b in enumerate(bs)
    ]  # fmt: skip
    rules = DomainRules.of({"min.insync.racks": "2"})
    run = plan_group("rack-aware", 0, rules, (), 2)
    rows = run((pa.scalar("c"),), _replicas(replicas), _brokers(brokers)).to_pylist()
    summary = json.loads(next(r for r in rows if r["kind"] == "summary")["payload"])
    assert summary["unprotectable"] == [
        {"topic": "u", "partition": 1, "replication_factor": 2, "protecting_replication_factor": 3}
    ]
    goal = next(g for g in summary["goals"] if g["name"] == "DomainLossGoal")
    assert (goal["violations_before"], goal["violations_after"]) == (1, 0)


def test_the_fleet_plan_takes_a_topics_own_min_insync_replicas() -> None:
    racks = {1: "/dc1/a", 2: "/dc1/b", 3: "/dc2/a", 4: "/dc2/b", 5: "/dc3/a", 6: "/dc3/b"}
    brokers = [("c", b, racks[b], "/d", 100, True) for b in racks]
    placed = [((1, 2, 3), "t"), ((1, 2, 3), "u")]
    replicas = [
        ("c", topic, p, i, b, "/d", 10) for p, (bs, topic) in enumerate(placed)
        for i, b in enumerate(bs)
    ]  # fmt: skip
    own = [("c", "t", "min.insync.replicas", "3")]
    rules = DomainRules.of({"min.insync.racks": "2"}, own)
    run = plan_group("rack-aware", 0, rules, (), 2)
    rows = run((pa.scalar("c"),), _replicas(replicas), _brokers(brokers)).to_pylist()
    summary = json.loads(next(r for r in rows if r["kind"] == "summary")["payload"])
    # t needs 3 replicas left after any data centre's loss: 5 replicas, 2 + 2 + 1, would do;
    # u at the option's 2 is protected by one replica in each data centre.
    assert summary["unprotectable"] == [
        {"topic": "t", "partition": 0, "replication_factor": 3, "protecting_replication_factor": 5}
    ]
    goal = next(g for g in summary["goals"] if g["name"] == "DomainLossGoal")
    assert (goal["violations_before"], goal["violations_after"]) == (1, 0)
