"""A :class:`~rackwise.client.cluster_state.ClusterSnapshot` as the planner and the executor see
it: :func:`planner_input` for ``rackwise.balance.plan_cluster``, :func:`executor_state` for
``rackwise.rebalance``, and :func:`plan_targets` the plan's changed partitions as the executor's
targets.

Constraints
    * Brokers that are fenced are left out of the executor's brokers that are up (nothing is
      moved onto them); the planner is given every broker and learns which are usable from
      their log directories.
    * A directory's use is the sum of the replica sizes DescribeLogDirs reported in it; its
      capacity is the volume's total bytes (DescribeLogDirs v4), unknown before.
    * A move in flight is planned from as its target (the pipeline's reading of it), so a plan
      made during a move does not undo it.

Worked example
    A snapshot with broker 1 in ``dc1/r1`` and ``t-0`` on (1, 2) gives a ``ClusterInput`` whose
    broker table holds ``(1, "/dc1/r1")`` and an executor state whose ``partitions[t-0]`` has
    ``replicas == (1, 2)``; a plan moving ``t-0`` to (3, 2) becomes ``{t-0: Target((3, 2))}``.
"""

from __future__ import annotations

import numpy as np

from rackwise.balance import (
    NO_LOG_DIR,
    UNKNOWN_BYTES,
    BrokerTable,
    ClusterInput,
    LogDirTable,
    Plan,
    ReplicaTable,
)
from rackwise.client.cluster_state import ClusterSnapshot
from rackwise.common import TopicPartition
from rackwise.rebalance import (
    ANY_DIR,
    UNKNOWN,
    ClusterState,
    InFlight,
    LogDir,
    PartitionState,
    Target,
)
from rackwise.topology import as_rack_path


def planner_input(snapshot: ClusterSnapshot) -> ClusterInput:
    """The planner's tables of ``snapshot``."""
    ids = sorted(snapshot.brokers)
    brokers = BrokerTable(
        np.array(ids, np.int64), tuple(as_rack_path(snapshot.brokers[b].rack) for b in ids)
    )
    dir_rows: dict[tuple[int, str], int] = {}
    totals: list[int] = []
    live: list[bool] = []
    for broker in ids:
        for d in snapshot.log_dirs.get(broker, ()):
            dir_rows[(broker, d.path)] = len(dir_rows)
            totals.append(UNKNOWN_BYTES if d.total_bytes is None else d.total_bytes)
            live.append(d.is_live)
    dirs = LogDirTable(
        np.array([b for b, _ in dir_rows], np.int64),
        tuple(p for _, p in dir_rows),
        np.array(totals, np.int64),
        np.array(live, np.bool_),
    )
    names = sorted({tp.topic for tp in snapshot.partitions})
    number = {name: i for i, name in enumerate(names)}
    rows: list[tuple[int, int, int, int, int, int]] = []
    for tp, state in snapshot.partitions.items():
        moving = snapshot.reassignments.get(tp)
        replicas = moving.target if moving is not None else state.replicas
        largest = max(state.size_bytes.values(), default=UNKNOWN_BYTES)
        for index, broker in enumerate(replicas):
            path = state.log_dir.get(broker)
            row = dir_rows.get((broker, path), NO_LOG_DIR) if path is not None else NO_LOG_DIR
            size = state.size_bytes.get(broker, largest)
            rows.append((number[tp.topic], tp.partition, index, broker, row, size))
    columns = np.array(rows, np.int64).reshape(-1, 6).T
    replicas_table = ReplicaTable(tuple(names), *columns)
    return ClusterInput(brokers, dirs, replicas_table)


def executor_state(snapshot: ClusterSnapshot) -> ClusterState:
    """The executor's view of ``snapshot``."""
    racks = {b.id: as_rack_path(b.rack) for b in snapshot.brokers.values() if not b.fenced}
    partitions = {}
    used: dict[tuple[int, str], int] = {}
    for tp, p in snapshot.partitions.items():
        sizes = [s for s in p.size_bytes.values() if s >= 0]
        partitions[tp] = PartitionState(
            replicas=p.replicas,
            log_dirs=tuple(p.log_dir.get(b) for b in p.replicas),
            isr=p.isr,
            leader=-1 if p.leader is None else p.leader,
            min_insync=p.min_insync,
            size_bytes=max(sizes, default=UNKNOWN),
        )
        for broker, path in p.log_dir.items():
            key = (broker, path)
            used[key] = used.get(key, 0) + max(p.size_bytes.get(broker, 0), 0)
    dirs = {
        (broker, d.path): LogDir(
            UNKNOWN if d.total_bytes is None else d.total_bytes, used.get((broker, d.path), 0)
        )
        for broker, listed in snapshot.log_dirs.items()
        for d in listed
    }
    flights = {
        tp: InFlight(m.replicas, m.adding, m.removing) for tp, m in snapshot.reassignments.items()
    }
    return ClusterState(racks, partitions, dirs, flights)


def plan_targets(plan: Plan) -> dict[TopicPartition, Target]:
    """The executor's target of every partition ``plan`` changes: its replicas, and the
    directory of each replica the plan places (``"any"`` for the others)."""
    named = (plan.moved | plan.dir_moved) & (plan.target_dirs >= 0)
    out: dict[TopicPartition, Target] = {}
    for p in np.flatnonzero(plan.changed).tolist():
        rf = int(plan.rf[p])
        tp = TopicPartition(plan.topic_names[int(plan.topics[p])], int(plan.partitions[p]))
        dirs = tuple(
            plan.dir_paths[int(plan.target_dirs[p, j])] if named[p, j] else ANY_DIR
            for j in range(rf)
        )
        out[tp] = Target(tuple(int(b) for b in plan.target[p, :rf]), dirs)
    return out
