"""The plan in process: every cluster planned in turn by the same per-cluster step Spark runs.

:func:`plan_rows` hands each cluster's replicas and broker-directory rows, as Arrow tables, to
:func:`rackwise.pipeline.plan.group.plan_group`, the function Spark calls once per cluster in
its cogroup: the rows are the same whichever engine planned (the step puts its input in a
canonical order first), and no second planner exists to disagree with the first.
"""

from __future__ import annotations

import pyarrow as pa

from rackwise.balance import Strategy
from rackwise.pipeline.audit.rules import DEFAULT_RULES, DomainRules
from rackwise.pipeline.ingest.local import LocalTables, cluster_slices
from rackwise.pipeline.plan.group import BROKER_DIR_COLUMNS, plan_group
from rackwise.pipeline.plan.spark import check_strategy


def broker_dirs(tables: LocalTables) -> pa.Table:
    """The brokers left-joined to their log directories (:data:`BROKER_DIR_COLUMNS`)."""
    joined = tables.brokers.join(
        tables.log_dirs, keys=["cluster_id", "broker_id"], join_type="left outer"
    )
    return joined.select(list(BROKER_DIR_COLUMNS))


def plan_rows(
    tables: LocalTables,
    strategy: Strategy,
    seed: int = 0,
    rules: DomainRules = DEFAULT_RULES,
    drain: tuple[str, ...] = (),
    min_insync_replicas: int = 0,
) -> pa.Table | None:
    """Every cluster planned (clusters in id order): the rows of
    :data:`rackwise.pipeline.plan.group.PLAN_ROWS_DDL`, or ``None`` for an input without any
    cluster."""
    check_strategy(strategy)
    replicas = dict(cluster_slices(tables.replicas))
    brokers = dict(cluster_slices(broker_dirs(tables)))
    run = plan_group(strategy, seed, rules, drain, min_insync_replicas)
    parts = []
    for cluster_id in sorted(set(replicas) | set(brokers)):
        mine = replicas.get(cluster_id, tables.replicas.slice(0, 0))
        theirs = brokers.get(cluster_id, broker_dirs(tables).slice(0, 0))
        parts.append(run((cluster_id,), mine, theirs))
    return pa.concat_tables(parts) if parts else None
