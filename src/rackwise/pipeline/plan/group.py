"""The planner's per-cluster step: one cluster's rows in (as Arrow tables), its plan out.

Spark hands each cluster's replicas and broker-directory rows to :func:`plan_group` (a cogrouped
``applyInArrow``, one call per cluster). The rows are turned into the balance package's NumPy
columns without a Python loop over replicas (strings are dictionary-encoded by Arrow), planned
with :func:`rackwise.balance.plan_cluster`, and returned as rows of one table,
:data:`PLAN_ROWS_DDL`, whose ``kind`` says what a row is:

``replica``
    A target replica (``topic, partition, replica_index, broker_id, log_dir, size_bytes``, the
    replicas schema) and ``moved`` (copied onto a broker that did not hold it).
``broker`` / ``log_dir``
    Load before and after the plan: ``replicas_*``, ``leaders_*``, ``bytes_*`` per broker, and
    per log directory (``broker_id, log_dir``). A broker row also carries the balance goals'
    targets for it (:class:`rackwise.balance.BrokerTargets`): ``<metric>_low``,
    ``<metric>_target``, ``<metric>_high`` for ``replicas``, ``leaders`` and ``bytes``, what the
    goal accepts after the plan (inclusive) and what it aims at; null for a broker outside the
    goals' tree (fenced, or without a live log directory) and on a ``log_dir`` row.
``summary``
    ``payload``: the plan's report as JSON (:meth:`rackwise.balance.PlanReport.to_dict`), or
    ``{"error": ...}`` when the cluster cannot be planned (its replicas are then returned
    unchanged as its target).
``reassignment``
    ``payload``: the reassignment JSON for ``kafka-reassign-partitions --execute`` (only for a
    cluster the plan changes: Kafka's tool refuses an empty reassignment).

The planner's tie-breaks follow the order of its input, so the rows are put in a canonical
order first (topics by name, directories by broker and path): the same cluster gives the same
plan however Spark partitioned it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rackwise.balance import (
    NO_LOG_DIR,
    UNKNOWN_BYTES,
    BrokerTable,
    ClusterInput,
    DomainRule,
    LogDirTable,
    Plan,
    ReplicaTable,
    Strategy,
    plan_cluster,
    target_rows,
    to_reassignment,
)
from rackwise.common import RackwiseError
from rackwise.formats import format_reassignment
from rackwise.pipeline.audit.rules import DEFAULT_RULES, DomainRules

PLAN_ROWS_DDL: Final = (
    "cluster_id string, kind string, topic string, partition int, replica_index int, "
    "broker_id int, log_dir string, size_bytes long, moved boolean, "
    "replicas_before long, replicas_after long, leaders_before long, leaders_after long, "
    "bytes_before long, bytes_after long, "
    "replicas_low double, replicas_target double, replicas_high double, "
    "leaders_low double, leaders_target double, leaders_high double, "
    "bytes_low double, bytes_target double, bytes_high double, payload string"
)
PLAN_ROW_COLUMNS: Final = tuple(field.split(" ")[0] for field in PLAN_ROWS_DDL.split(", "))
TARGET_METRICS: Final = ("replicas", "leaders", "bytes")
TARGET_BOUNDS: Final = ("low", "target", "high")
"""A broker row's target columns are ``f"{metric}_{bound}"``."""
BROKER_DIR_COLUMNS: Final = ("cluster_id", "broker_id", "rack", "log_dir", "total_bytes", "is_live")
"""The right side of the cogroup: brokers left-joined to their log directories."""

_INT = pa.int32()
_LONG = pa.int64()
_DOUBLE = pa.float64()


def _ints(column: pa.ChunkedArray | pa.Array, missing: int) -> np.ndarray:
    return np.asarray(pc.fill_null(column, missing).to_numpy(), dtype=np.int64)


def _codes(column: pa.ChunkedArray) -> tuple[np.ndarray, list[str]]:
    """Codes into the sorted distinct values (nulls: -1), and those values."""
    values = pc.unique(column.combine_chunks()).drop_null()
    values = pc.take(values, pc.sort_indices(values))
    codes = pc.fill_null(pc.index_in(column, value_set=values), -1)
    return np.asarray(codes.to_numpy(), dtype=np.int64), values.to_pylist()


def drained(broker_ids: np.ndarray, paths: tuple[str, ...], drain: tuple[str, ...]) -> np.ndarray:
    """Which directory rows ``drain`` names: ``PATH`` (that directory of every broker) or
    ``BROKER:PATH`` (one broker's)."""
    every = {d for d in drain if d.startswith("/")}
    one = {(int(b), p) for b, _, p in (d.partition(":") for d in drain if not d.startswith("/"))}
    return np.array(
        [p in every or (int(b), p) in one for b, p in zip(broker_ids.tolist(), paths, strict=True)],
        np.bool_,
    )


def cluster_input(
    replicas: pa.Table, brokers: pa.Table, drain: tuple[str, ...] = ()
) -> ClusterInput:
    """The balance package's input from one cluster's replica rows and broker-directory rows;
    the directories ``drain`` names (:func:`drained`) are to be emptied."""
    b_ids = _ints(brokers.column("broker_id"), -1)
    first = np.unique(b_ids, return_index=True)[1]
    racks = brokers.column("rack").to_pylist()
    broker_table = BrokerTable(b_ids[first], tuple(racks[i] for i in first.tolist()))
    has_dir = pc.is_valid(brokers.column("log_dir")).to_numpy(zero_copy_only=False)
    dirs = brokers.filter(pa.array(has_dir)).sort_by(
        [("broker_id", "ascending"), ("log_dir", "ascending")]
    )
    dir_brokers, dir_paths = (
        _ints(dirs.column("broker_id"), -1),
        tuple(dirs.column("log_dir").to_pylist()),
    )
    dir_table = LogDirTable(
        dir_brokers,
        dir_paths,
        _ints(dirs.column("total_bytes"), UNKNOWN_BYTES),
        np.asarray(pc.fill_null(dirs.column("is_live"), True).to_numpy(zero_copy_only=False)),
        drained(dir_brokers, dir_paths, drain) if drain else None,
    )
    topics, names = _codes(replicas.column("topic"))
    r_brokers = _ints(replicas.column("broker_id"), -1)
    return ClusterInput(
        broker_table,
        dir_table,
        ReplicaTable(
            tuple(names),
            topics,
            _ints(replicas.column("partition"), -1),
            _ints(replicas.column("replica_index"), -1),
            r_brokers,
            _dir_rows(replicas.column("log_dir"), r_brokers, dir_table),
            _ints(replicas.column("size_bytes"), UNKNOWN_BYTES),
        ),
    )


def broker_dir_rows(brokers: pa.Table) -> pa.Table:
    """The fleet's ``brokers`` dataset (directories inline, as ``log_dirs`` structs of
    ``path, total_bytes, is_live``) as the cogroup's right side: one row per broker and
    directory, a broker without any with a null ``log_dir`` (:data:`BROKER_DIR_COLUMNS` but
    ``cluster_id``). For a single process, as the benchmark plans a cluster without Spark."""
    listed = brokers.column("log_dirs")
    lengths = pc.fill_null(pc.list_value_length(listed), 0).to_numpy(zero_copy_only=False)
    dirs = pc.list_flatten(listed)
    with_dirs = brokers.take(pc.list_parent_indices(listed))
    bare = brokers.filter(pa.array(lengths == 0))
    none = pa.nulls(bare.num_rows)
    return pa.concat_tables(
        [
            pa.table(
                {
                    "broker_id": with_dirs.column("broker_id"),
                    "rack": with_dirs.column("rack"),
                    "log_dir": pc.struct_field(dirs, "path"),
                    "total_bytes": pc.struct_field(dirs, "total_bytes"),
                    "is_live": pc.struct_field(dirs, "is_live"),
                }
            ),
            pa.table(
                {
                    "broker_id": bare.column("broker_id"),
                    "rack": bare.column("rack"),
                    "log_dir": none.cast(pa.string()),
                    "total_bytes": none.cast(pa.int64()),
                    "is_live": none.cast(pa.bool_()),
                }
            ),
        ],
        promote_options="permissive",
    )


def _dir_rows(column: pa.ChunkedArray, brokers: np.ndarray, dirs: LogDirTable) -> np.ndarray:
    """Each replica's log directory row (``NO_LOG_DIR`` if null or not among its broker's)."""
    codes, paths = _codes(column)
    out = np.full(codes.size, NO_LOG_DIR, np.int64)
    if not paths or len(dirs) == 0:
        return out
    code_of = {p: i for i, p in enumerate(paths)}
    ids = np.unique(np.concatenate([brokers, dirs.broker_ids]))
    lookup = np.full((ids.size, len(paths)), NO_LOG_DIR, np.int64)
    for row, (owner, path) in enumerate(zip(dirs.broker_ids.tolist(), dirs.paths, strict=True)):
        if path in code_of:
            lookup[np.searchsorted(ids, owner), code_of[path]] = row
    known = codes >= 0
    out[known] = lookup[np.searchsorted(ids, brokers[known]), codes[known]]
    return out


def _table(cluster_id: str, kind: str, size: int, columns: dict[str, pa.Array]) -> pa.Table:
    types = {
        "topic": pa.string(),
        "partition": _INT,
        "replica_index": _INT,
        "broker_id": _INT,
        "log_dir": pa.string(),
        "size_bytes": _LONG,
        "moved": pa.bool_(),
        "payload": pa.string(),
        **{f"{m}_{b}": _DOUBLE for m in TARGET_METRICS for b in TARGET_BOUNDS},
    }
    arrays = []
    for name in PLAN_ROW_COLUMNS:
        if name == "cluster_id":
            arrays.append(pa.array([cluster_id] * size, pa.string()))
        elif name == "kind":
            arrays.append(pa.array([kind] * size, pa.string()))
        elif name in columns:
            arrays.append(columns[name].cast(types.get(name, _LONG)))
        else:
            arrays.append(pa.nulls(size, types.get(name, _LONG)))
    return pa.Table.from_arrays(arrays, names=list(PLAN_ROW_COLUMNS))


def _replica_rows(cluster_id: str, plan: Plan) -> pa.Table:
    rows = target_rows(plan)
    paths = pa.array(plan.dir_paths, pa.string())
    dir_index = pa.array(rows.log_dirs, mask=rows.log_dirs < 0)
    present = plan.target >= 0
    return _table(
        cluster_id,
        "replica",
        rows.topics.size,
        {
            "topic": pc.take(pa.array(plan.topic_names, pa.string()), pa.array(rows.topics)),
            "partition": pa.array(rows.partitions),
            "replica_index": pa.array(rows.replica_index),
            "broker_id": pa.array(rows.broker_ids),
            "log_dir": pc.take(paths, dir_index) if len(paths) else pa.nulls(rows.topics.size),
            "size_bytes": pa.array(rows.size_bytes),
            "moved": pa.array(plan.moved[present]),
        },
    )


def _dir_leaders(brokers: np.ndarray, dirs: np.ndarray, num_dirs: int) -> np.ndarray:
    """Preferred leaders per directory row (a leader whose directory is not known counts for
    its broker only)."""
    known = (brokers[:, 0] >= 0) & (dirs[:, 0] >= 0) if brokers.size else np.zeros(0, np.bool_)
    return np.bincount(dirs[known, 0], minlength=num_dirs).astype(np.int64)


def _target_columns(plan: Plan) -> dict[str, pa.Array]:
    """The broker rows' target columns (NaN, outside the goals' tree, written as null)."""
    out = {}
    for metric in TARGET_METRICS:
        goal_range = getattr(plan.targets, metric)
        for bound in TARGET_BOUNDS:
            values = np.asarray(getattr(goal_range, bound), np.float64)
            out[f"{metric}_{bound}"] = pa.array(values, _DOUBLE, mask=np.isnan(values))
    return out


def _load_rows(cluster_id: str, plan: Plan) -> list[pa.Table]:
    before, after = plan.loads_before, plan.loads_after
    num_dirs = len(plan.dir_paths)
    brokers = _table(
        cluster_id,
        "broker",
        plan.broker_ids.size,
        {
            "broker_id": pa.array(plan.broker_ids),
            "replicas_before": pa.array(before.replicas),
            "replicas_after": pa.array(after.replicas),
            "leaders_before": pa.array(before.leaders),
            "leaders_after": pa.array(after.leaders),
            "bytes_before": pa.array(before.bytes),
            "bytes_after": pa.array(after.bytes),
            **_target_columns(plan),
        },
    )
    dirs = _table(
        cluster_id,
        "log_dir",
        len(plan.dir_paths),
        {
            "broker_id": pa.array(plan.dir_broker_ids),
            "log_dir": pa.array(plan.dir_paths, pa.string()),
            "replicas_before": pa.array(before.dir_replicas),
            "replicas_after": pa.array(after.dir_replicas),
            "leaders_before": pa.array(_dir_leaders(plan.current, plan.current_dirs, num_dirs)),
            "leaders_after": pa.array(_dir_leaders(plan.target, plan.target_dirs, num_dirs)),
            "bytes_before": pa.array(before.dir_bytes),
            "bytes_after": pa.array(after.dir_bytes),
        },
    )
    return [brokers, dirs]


def _payload(cluster_id: str, kind: str, text: str) -> pa.Table:
    return _table(cluster_id, kind, 1, {"payload": pa.array([text], pa.string())})


def plan_rows(cluster_id: str, plan: Plan) -> pa.Table:
    """All of one cluster's output rows."""
    report = plan.report.to_dict()
    parts = [
        _replica_rows(cluster_id, plan),
        *_load_rows(cluster_id, plan),
        _payload(cluster_id, "summary", json.dumps(report)),
    ]
    if plan.changed.any():
        reassignment = format_reassignment(to_reassignment(plan))
        parts.append(_payload(cluster_id, "reassignment", reassignment))
    return pa.concat_tables(parts)


def _unplanned(cluster_id: str, replicas: pa.Table, error: str) -> pa.Table:
    """A cluster that cannot be planned: its replicas unchanged, and the reason."""
    size = replicas.num_rows
    columns = {
        name: replicas.column(name).combine_chunks() if size else pa.array([], pa.null())
        for name in ("topic", "partition", "replica_index", "broker_id", "log_dir", "size_bytes")
    }
    columns["moved"] = pa.array([False] * size)
    rows = _table(cluster_id, "replica", size, columns)
    return pa.concat_tables([rows, _payload(cluster_id, "summary", json.dumps({"error": error}))])


def domain_rules(
    rules: DomainRules, cluster_id: str, topics: tuple[str, ...], min_insync_replicas: int
) -> dict[str, DomainRule]:
    """Each topic's :class:`~rackwise.balance.model.DomainRule` (its own
    ``min.insync.replicas`` where known, else ``min_insync_replicas``), or none at all when
    ``min_insync_replicas`` is 0 or no topic asks for more than one domain."""
    if min_insync_replicas < 1:
        return {}
    mine = {t: rules.rule(cluster_id, t) for t in topics}
    if all(r.min_insync_racks <= 1 for r in mine.values()):
        return {}
    return {
        t: DomainRule(r.min_isr(min_insync_replicas), r.min_insync_racks, r.level)
        for t, r in mine.items()
    }


def plan_group(
    strategy: Strategy,
    seed: int = 0,
    rules: DomainRules = DEFAULT_RULES,
    drain: tuple[str, ...] = (),
    min_insync_replicas: int = 0,
) -> Callable[[tuple[Any, ...], pa.Table, pa.Table], pa.Table]:
    """The cogrouped function: ``(key, replicas, broker_dirs) -> rows`` for one cluster; its
    topics' ``leaders.preference`` (``rules``) decides where the planner puts their leaders
    (:func:`rackwise.balance.plan_cluster`: the first replica in the most preferred domain
    holding one, after the leader goal). With ``min_insync_replicas`` (0: not given), when
    some topic has ``min.insync.racks`` above 1, every topic's rule goes to ``DomainLossGoal``."""

    def run(key: tuple[Any, ...], replicas: pa.Table, brokers: pa.Table) -> pa.Table:
        cluster_id = str(key[0].as_py() if hasattr(key[0], "as_py") else key[0])
        try:
            cluster = cluster_input(replicas, brokers, drain)
            preferences = rules.preferences(cluster_id, cluster.replicas.topic_names)
            if preferences:
                cluster = replace(cluster, leaders_preferences=preferences)
            losses = domain_rules(
                rules, cluster_id, cluster.replicas.topic_names, min_insync_replicas
            )
            if losses:
                cluster = replace(cluster, domain_rules=losses)
            plan = plan_cluster(cluster, strategy, clock=time.perf_counter, seed=seed)
        except RackwiseError as exc:
            return _unplanned(cluster_id, replicas, str(exc))
        return plan_rows(cluster_id, plan)

    return run
