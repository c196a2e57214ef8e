"""Draining log directories (``pipeline plan --drain-log-dirs``, for directories cordoned with
``cordoned.log.dirs``, KIP-1066): a hand-worked plan, and a property over random clusters: no
replica is left in or sent to a draining directory wherever Kafka lets it move, and the goal's
report counts exactly the directories that could not be drained."""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from rackwise.balance import FIXED, ClusterInput, plan_cluster, to_reassignment
from rackwise.common import InvalidReplicationFactorException
from rackwise.formats import format_reassignment

from ._clusters import clusters, make


def _draining(cluster: ClusterInput, mask: list[bool]) -> ClusterInput:
    dirs = dataclasses.replace(cluster.log_dirs, draining=np.array(mask, np.bool_))
    return dataclasses.replace(cluster, log_dirs=dirs)


def test_a_draining_directory_is_emptied_into_the_brokers_other_directories() -> None:
    # Broker 1 holds t-0 (30 B) and t-1 (10 B) in /d1 and t-2 (20 B) in /d2; /d1 drains: both
    # its replicas go to /d2 (an intra-broker move each), /d2 receives nothing else, and the
    # goal that was violated (/d1 not empty) is fixed.
    assignment = {("t", p): [1] for p in range(3)}
    cluster = make(
        {1: "/r"},
        assignment,
        dirs={1: [("/d1", 500, True), ("/d2", 500, True)]},
        sizes={("t", 0): 30, ("t", 1): 10, ("t", 2): 20},
        placed={("t", 0, 1): "/d1", ("t", 1, 1): "/d1", ("t", 2, 1): "/d2"},
    )
    plan = plan_cluster(_draining(cluster, [True, False]))
    assert format_reassignment(to_reassignment(plan)) == (
        '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1],"log_dirs":["/d2"]},'
        '{"topic":"t","partition":1,"replicas":[1],"log_dirs":["/d2"]}]}'
    )
    assert (plan.report.replica_moves, plan.report.intra_broker_moves) == (0, 2)
    assert plan.report.intra_broker_data_to_move_bytes == 40
    goal = next(g for g in plan.report.goals if g.name == "IntraBrokerDiskUsageDistributionGoal")
    assert (goal.status, goal.violations_before, goal.violations_after) == (FIXED, 1, 0)
    # Without the drain the same cluster is left as it is (20 B apart is within the tolerance).
    assert plan_cluster(cluster).report.intra_broker_moves == 0


def test_a_broker_with_an_offline_directory_cannot_drain() -> None:
    # Kafka moves no replica between directories while one is offline: /d1 keeps t-0 and the
    # goal reports it as left.
    cluster = make(
        {1: "/r"},
        {("t", 0): [1]},
        dirs={1: [("/d1", 500, True), ("/d2", 500, True), ("/d3", 500, False)]},
        placed={("t", 0, 1): "/d1"},
    )
    plan = plan_cluster(_draining(cluster, [True, False, False]))
    assert plan.report.intra_broker_moves == 0


@settings(max_examples=60, deadline=None)
@given(cluster=clusters(), data=st.data())
def test_no_replica_stays_in_or_goes_to_a_draining_directory(
    cluster: ClusterInput, data: st.DataObject
) -> None:
    rows = len(cluster.log_dirs)
    mask = [data.draw(st.booleans()) for _ in range(rows)]
    drained = _draining(cluster, mask)
    try:
        plan = plan_cluster(drained)
    except InvalidReplicationFactorException:  # more replicas than brokers to hold them
        assume(False)
        return
    dirs = drained.log_dirs
    draining = np.asarray(mask, np.bool_)
    live = dirs.is_live
    # Brokers where Kafka lets a replica move between directories, and that have somewhere
    # else to put it: no failed directory, and a live one not draining.
    failed = {int(b) for b, ok in zip(dirs.broker_ids, live, strict=True) if not ok}
    open_ = {
        int(b) for b, ok, d in zip(dirs.broker_ids, live, draining, strict=True) if ok and not d
    }
    can_drain = open_ - failed
    left = set()
    for p in range(plan.target.shape[0]):
        for j in range(int(plan.rf[p])):
            d = int(plan.target_dirs[p, j])
            if d < 0 or not draining[d]:
                continue
            broker = int(plan.target[p, j])
            assert broker not in can_drain, (p, j, broker)
            assert not plan.moved[p, j], "a replica moved onto a broker into a draining directory"
            left.add(d)
    goal = next(g for g in plan.report.goals if g.name == "IntraBrokerDiskUsageDistributionGoal")
    assert goal.violations_after >= len({d for d in left if int(dirs.broker_ids[d]) in can_drain})
