"""The plan on Spark: every cluster planned in one cogrouped Arrow call per cluster.

The replicas and the brokers' directories are cogrouped by ``cluster_id`` and each cluster is
planned in one Arrow call on an executor (:func:`rackwise.pipeline.plan.group.plan_group`, over
:func:`rackwise.balance.plan_cluster`): a cluster, not a topic, is the unit, so a fleet of
thousands of clusters costs thousands of calls, and one large cluster is one call. The same
cluster gives the same plan however Spark partitioned it (the group's rows are put in a
canonical order first).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rackwise.balance import STRATEGIES, Strategy
from rackwise.common import IllegalArgumentException
from rackwise.pipeline import schema
from rackwise.pipeline.audit.rules import DEFAULT_RULES, DomainRules
from rackwise.pipeline.plan.group import BROKER_DIR_COLUMNS, PLAN_ROWS_DDL, plan_group

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from rackwise.pipeline.ingest.tables import ClusterTables


def check_strategy(strategy: str) -> None:
    """Refuse a strategy the planner does not know."""
    if strategy not in STRATEGIES:
        raise IllegalArgumentException(
            f"Unknown strategy {strategy!r}; expected one of {', '.join(STRATEGIES)}"
        )


def plan_rows(
    tables: ClusterTables,
    strategy: Strategy,
    seed: int = 0,
    rules: DomainRules = DEFAULT_RULES,
    drain: tuple[str, ...] = (),
    min_insync_replicas: int = 0,
) -> DataFrame:
    """Every cluster planned: the rows of :data:`rackwise.pipeline.plan.group.PLAN_ROWS_DDL`."""
    check_strategy(strategy)
    replicas = tables.replicas.select(*schema.REPLICAS_COLUMNS)
    broker_dirs = tables.brokers.select(*schema.BROKERS_COLUMNS).join(
        tables.log_dirs.select(*schema.LOG_DIRS_COLUMNS),
        on=["cluster_id", "broker_id"],
        how="left",
    )
    return (
        replicas.groupBy("cluster_id")
        .cogroup(broker_dirs.select(*BROKER_DIR_COLUMNS).groupBy("cluster_id"))
        .applyInArrow(
            plan_group(strategy, seed, rules, drain, min_insync_replicas), schema=PLAN_ROWS_DDL
        )
    )
