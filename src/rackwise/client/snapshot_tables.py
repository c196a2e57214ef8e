"""Live clusters as the pipeline's input: each
:class:`~rackwise.client.cluster_state.ClusterSnapshot` turned into the raw rows the JSON files
give (:class:`~rackwise.pipeline.ingest.json_input.JsonColumns`), so that both engines
validate, audit and plan a running cluster exactly as they do its files.

Goals
    ``rackwise pipeline audit --bootstrap-server`` finds what ``audit --brokers --assignment
    --log-dirs`` finds for the same cluster, row for row.

Constraints
    * Pure: :func:`snapshot_columns` and :func:`merged` read values and build rows; the
      reading is :func:`read_live`'s, one cluster after the other, one progress line each.
    * A broker row per broker (fenced ones too), its directories those DescribeLogDirs gives
      (a failed one not live, its capacity unknown); a fenced broker's are not asked for, so
      unknown. A replica row per replica in Metadata's order, with the directory and size of the
      broker's current copy (a future copy, a move between directories, is not a placement);
      a broker that reported no copy leaves both unknown.
    * A reassignment in flight is read as done: the partition's replicas are its target
      (Metadata's replicas without the ones being removed), so a plan never takes the extra
      replicas of a move for the partition's replication factor; a replica being added
      counts the size of the partition's largest copy, which it will have once it has caught
      up.
    * A partition without replicas is rejected, as the JSON reader rejects an entry without.
    * The topics' ``min.insync.racks``, ``min.insync.racks.level`` and ``leaders.preference``
      (DescribeConfigs' values, the brokers' defaults included) are the input's topic config
      rows, which the audit and the plan judge the topics by, as a fleet's
      ``topic_configs`` dataset is.

Worked example
    A snapshot of brokers 1-3 where ``t-0`` is on ``(1, 2)`` and moving to ``(2, 3)``
    (ListPartitionReassignments: replicas ``(2, 3, 1)``, adding ``(3,)``, removing ``(1,)``)
    gives replica rows ``(t, 0, 0, broker 2)`` and ``(t, 0, 1, broker 3)``, broker 3's row
    with broker 2's size.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, Final

import pyarrow as pa
import pyarrow.compute as pc

from rackwise.client.cluster_state import (
    RULE_KEYS,
    ClusterSnapshot,
    ClusterStateError,
    PartitionState,
    ReassignmentState,
    read_cluster,
)
from rackwise.pipeline.ingest.json_input import JsonColumns, Rejects
from rackwise.pipeline.ingest.source import LiveCluster

METADATA_SOURCE: Final = "live:Metadata,DescribeLogDirs"
"""The ``source`` of the rejected replica rows of a live cluster."""
REPLICA_TYPES: Final = {
    "cluster_id": pa.string(),
    "topic": pa.string(),
    "partition": pa.int32(),
    "replica_index": pa.int32(),
    "broker_id": pa.int32(),
    "log_dir": pa.string(),
    "size_bytes": pa.int64(),
    "_ordinal": pa.int64(),
}
"""The raw replica columns, as the JSON reader gives them."""


def _replicas(state: PartitionState, moving: ReassignmentState | None) -> list[int]:
    """The partition's replicas, a move in flight read as its target."""
    if moving is None:
        return list(state.replicas)
    return [b for b in state.replicas if b not in moving.removing]


def snapshot_columns(snapshot: ClusterSnapshot, cluster_id: str) -> JsonColumns:
    """One cluster's rows (see the module docstring); ``_ordinal`` counts its partitions."""
    rejects = Rejects(cluster_id)
    brokers: list[tuple[object, ...]] = []
    for ordinal, broker in enumerate(snapshot.brokers.values()):
        dirs = snapshot.log_dirs.get(broker.id)
        listed = None if not dirs else [(d.path, d.total_bytes, d.is_live) for d in dirs]
        brokers.append((cluster_id, broker.id, broker.rack, listed, ordinal))
    columns: dict[str, list[Any]] = {name: [] for name in REPLICA_TYPES}
    for ordinal, (tp, state) in enumerate(snapshot.partitions.items()):
        moving = snapshot.reassignments.get(tp)
        replicas = _replicas(state, moving)
        if not replicas:
            record = {"topic": tp.topic, "partition": tp.partition, "replicas": replicas}
            rejects.add(METADATA_SOURCE, record, f"partition {tp} has no replicas")
            continue
        largest = max(state.size_bytes.values(), default=None)
        for index, broker_id in enumerate(replicas):
            size = state.size_bytes.get(broker_id)
            if moving is not None and broker_id in moving.adding:
                size = largest
            row = (cluster_id, tp.topic, tp.partition, index, broker_id,
                   state.log_dir.get(broker_id), size, ordinal)  # fmt: skip
            for name, value in zip(REPLICA_TYPES, row, strict=True):
                columns[name].append(value)
    table = pa.table({k: pa.array(v, REPLICA_TYPES[k]) for k, v in columns.items()})
    configs = [
        (cluster_id, topic, key, value)
        for topic, values in sorted(snapshot.topic_configs.items())
        for key, value in sorted(values.items())
        if key in RULE_KEYS
    ]
    return JsonColumns(brokers, table, [], rejects, configs)


def merged(parts: Sequence[JsonColumns]) -> JsonColumns:
    """Several clusters' rows as one input, ordinals renumbered to stay unique."""
    brokers: list[tuple[object, ...]] = []
    tables = [pa.table({k: pa.array([], t) for k, t in REPLICA_TYPES.items()})]
    rejects = Rejects(parts[0].rejects.cluster_id if parts else "")
    configs: list[tuple[str, str, str, str]] = []
    offset = 0
    for part in parts:
        brokers.extend(
            (*row[:4], ordinal) for ordinal, row in enumerate(part.brokers, len(brokers))
        )
        ordinals = part.replicas.column("_ordinal")
        index = part.replicas.schema.get_field_index("_ordinal")
        tables.append(part.replicas.set_column(index, "_ordinal", pc.add(ordinals, offset)))
        if part.replicas.num_rows:
            offset += int(pc.max(ordinals).as_py()) + 1
        rejects.rows.extend(part.rejects.rows)
        configs.extend(part.topic_configs)
    return JsonColumns(brokers, pa.concat_tables(tables), [], rejects, configs)


def summary(snapshot: ClusterSnapshot) -> str:
    """What one read found, for its progress line."""
    dirs = sum(len(d) for d in snapshot.log_dirs.values())
    moves = len(snapshot.reassignments)
    text = (
        f"{len(snapshot.brokers):,} brokers, {len(snapshot.partitions):,} partitions, "
        f"{dirs:,} log dirs"
    )
    if moves:
        text += f", {moves:,} move{'s' if moves != 1 else ''} in flight (read as their targets)"
    return text


def read_live(
    clusters: Sequence[LiveCluster],
    config: dict[str, str],
    timeout_ms: int,
    progress: Callable[[str], None],
    default_name: str | None = None,
) -> JsonColumns:
    """Read each cluster in turn into one input; a cluster without a name is named by
    ``default_name`` when it is the only one, else by its own id. Two clusters of one name
    are refused."""
    parts: list[JsonColumns] = []
    names: dict[str, str] = {}
    for cluster in clusters:
        began = time.perf_counter()
        snapshot = read_cluster(cluster.bootstrap, config, timeout_ms=timeout_ms)
        name = cluster.name or (default_name if len(clusters) == 1 else None)
        name = name or snapshot.cluster_id
        if name in names:
            raise ClusterStateError(
                f"cluster {name} is given twice: by {names[name]} and by {cluster.bootstrap}"
            )
        names[name] = cluster.bootstrap
        parts.append(snapshot_columns(snapshot, name))
        seconds = time.perf_counter() - began
        progress(f"read {name} from {cluster.bootstrap}: {summary(snapshot)} ({seconds:.1f} s)")
    return merged(parts)


__all__ = ["LiveCluster", "merged", "read_live", "snapshot_columns", "summary"]
