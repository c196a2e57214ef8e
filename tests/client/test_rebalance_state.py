"""A cluster snapshot as the planner's tables and the executor's state, and a plan's changed
partitions as the executor's targets."""

from __future__ import annotations

from rackwise.balance import plan_cluster
from rackwise.client.cluster_state import BrokerState, ReassignmentState
from rackwise.client.rebalance_state import executor_state, plan_targets, planner_input
from rackwise.common import TopicPartition
from rackwise.rebalance import UNKNOWN, InFlight, Limits, LogDir, Target, plan_batches

from .test_snapshot_tables import TB, snapshot

ORDERS_0 = TopicPartition("orders", 0)


def test_the_executor_sees_brokers_replicas_directories_and_their_use() -> None:
    state = executor_state(snapshot())
    assert state.racks == {1: "/dc1/r1", 2: "/dc1/r2", 3: "/dc2/r1"}
    p = state.partitions[ORDERS_0]
    assert (p.replicas, p.log_dirs, p.isr, p.leader) == ((1, 2), ("/d/1a", "/d/2a"), (1, 2), 1)
    assert (p.min_insync, p.size_bytes) == (2, 700)
    assert state.log_dirs[(1, "/d/1a")] == LogDir(TB, 700)
    assert state.log_dirs[(2, "/d/2a")] == LogDir(TB, 1200)
    assert state.log_dirs[(3, "/d/3a")] == LogDir(UNKNOWN, 90)
    assert state.in_flight == {}


def test_a_fenced_broker_is_not_up_and_a_move_in_flight_is_listed() -> None:
    fenced = BrokerState(3, "h", 9003, "/dc2/r1", fenced=True)
    moving = ReassignmentState((3, 1, 2), (3,), (2,))
    s = snapshot(brokers={**snapshot().brokers, 3: fenced}, reassignments={ORDERS_0: moving})
    state = executor_state(s)
    assert 3 not in state.racks
    assert state.in_flight == {ORDERS_0: InFlight((3, 1, 2), (3,), (2,))}


def test_a_plan_made_from_the_snapshot_becomes_targets_and_batches() -> None:
    s = snapshot(brokers={**snapshot().brokers, 4: BrokerState(4, "h", 9004, "/dc2/r1")})
    plan = plan_cluster(planner_input(s), "keep")
    targets = plan_targets(plan)
    assert ORDERS_0 in targets  # badly spread: both replicas in /dc1
    target = targets[ORDERS_0]
    assert len(target.replicas) == 2 and len(target.log_dirs) == 2
    assert set(target.replicas) & {3, 4}
    schedule = plan_batches(executor_state(s), targets, Limits())
    started = {m.partition for batch in schedule.batches for m in batch}
    refused = {h.partition for h in schedule.refused}
    assert {str(tp) for tp in targets} == {str(tp) for tp in started} | refused


def test_a_move_in_flight_is_planned_from_as_its_target() -> None:
    moving = ReassignmentState((3, 1, 2), (3,), (2,))
    cluster = planner_input(snapshot(reassignments={ORDERS_0: moving}))
    rows = cluster.replicas
    orders = cluster.replicas.topic_names.index("orders")
    mine = [
        int(b)
        for t, p, b in zip(rows.topics, rows.partitions, rows.broker_ids, strict=True)
        if t == orders and p == 0
    ]
    assert mine == [3, 1]


def test_targets_keep_any_for_replicas_the_plan_does_not_place() -> None:
    s = snapshot(brokers={**snapshot().brokers, 4: BrokerState(4, "h", 9004, "/dc2/r1")})
    for tp, target in plan_targets(plan_cluster(planner_input(s), "keep")).items():
        assert isinstance(target, Target)
        assert all(d == "any" or d.startswith("/d/") for d in target.log_dirs), tp
