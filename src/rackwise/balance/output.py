"""A plan as Kafka's reassignment document and as a replicas table.

The reassignment lists only the partitions that change (a replica copied to another broker, a
replica moved between directories, or a new preferred leader), each with its whole target replica
list. ``log_dirs`` names the directory of every replica the plan places (copied onto a broker, or
moved between directories) and says ``"any"`` for a replica staying where it is or for a broker
whose directories are not known: Kafka's tool then leaves that replica's directory alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rackwise.balance.model import IntArray
from rackwise.balance.planner import Plan
from rackwise.formats import ANY_LOG_DIR, PartitionReassignment, Reassignment


def to_reassignment(plan: Plan) -> Reassignment:
    """The partitions ``plan`` changes, as the document ``kafka-reassign-partitions --execute``
    takes."""
    entries: list[PartitionReassignment] = []
    named = (plan.moved | plan.dir_moved) & (plan.target_dirs >= 0)
    for p in np.flatnonzero(plan.changed).tolist():
        rf = int(plan.rf[p])
        brokers = plan.target[p, :rf].tolist()
        dirs = [
            plan.dir_paths[int(plan.target_dirs[p, j])] if named[p, j] else ANY_LOG_DIR
            for j in range(rf)
        ]
        entries.append(
            PartitionReassignment(
                plan.topic_names[int(plan.topics[p])],
                int(plan.partitions[p]),
                tuple(brokers),
                tuple(dirs),
            )
        )
    return Reassignment(tuple(entries))


@dataclass(frozen=True, eq=False)
class TargetRows:
    """The target assignment as replica rows (the pipeline's ``replicas`` columns): topic
    number, partition, replica index, broker id, log directory row (``-1``: not known), bytes."""

    topics: IntArray
    partitions: IntArray
    replica_index: IntArray
    broker_ids: IntArray
    log_dirs: IntArray
    size_bytes: IntArray


def target_rows(plan: Plan) -> TargetRows:
    """Every target replica, partition by partition, preferred leader first."""
    present = plan.target >= 0
    rows, cols = np.nonzero(present)
    return TargetRows(
        topics=plan.topics[rows],
        partitions=plan.partitions[rows],
        replica_index=cols.astype(np.int64),
        broker_ids=plan.target[rows, cols],
        log_dirs=plan.target_dirs[rows, cols],
        size_bytes=plan.sizes[rows, cols],
    )
