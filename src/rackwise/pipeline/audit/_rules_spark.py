"""The domain-loss rules on Spark: the per-cluster step of
:mod:`rackwise.pipeline.audit.domain_loss` in a cogroup of the replicas with the brokers'
directories (one Arrow call per cluster, as the plan is), and its rows joined into the
``exposure`` and ``clusters`` tables (0 where a domain has no row)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as F  # noqa: N812

from rackwise.pipeline.audit.domain_loss import (
    RULE_BROKER_COLUMNS,
    RULE_EXPOSURE,
    RULE_NOW,
    RULE_ROWS_DDL,
    rules_group,
)
from rackwise.pipeline.audit.rules import DomainRules
from rackwise.pipeline.audit.tree import CLUSTER_LEVEL

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

_REPLICA_COLUMNS = ("cluster_id", "topic", "partition", "replica_index", "broker_id", "log_dir")
_SOURCES = ("below_min_insync_racks", "leaders_leave_preference")


def rule_frame(
    replicas: DataFrame,
    brokers: DataFrame,
    log_dirs: DataFrame,
    rules: DomainRules,
    min_insync_replicas: int,
) -> DataFrame:
    """Every cluster's rows of :data:`rackwise.pipeline.audit.domain_loss.RULE_ROWS_DDL`."""
    broker_dirs = brokers.select("cluster_id", "broker_id", "rack").join(
        log_dirs.select("cluster_id", "broker_id", "log_dir", "is_live"),
        on=["cluster_id", "broker_id"],
        how="left",
    )
    return (
        replicas.select(*_REPLICA_COLUMNS)
        .groupBy("cluster_id")
        .cogroup(broker_dirs.select("cluster_id", *RULE_BROKER_COLUMNS).groupBy("cluster_id"))
        .applyInArrow(rules_group(rules, min_insync_replicas), schema=RULE_ROWS_DDL)
    )


def _zeros(frame: DataFrame, columns: tuple[str, ...]) -> DataFrame:
    return frame.select(*frame.columns, *[F.lit(0).cast("long").alias(c) for c in columns])


def with_rule_exposure(exposure: DataFrame, rules: DataFrame | None) -> DataFrame:
    """``exposure`` with the rules' if-lost columns (all 0 without ``rules``)."""
    if rules is None:
        return _zeros(exposure, RULE_EXPOSURE)
    hits = rules.where(F.col("level") != CLUSTER_LEVEL).select(
        "cluster_id",
        "level",
        "domain",
        *[F.col(s).alias(c) for s, c in zip(_SOURCES, RULE_EXPOSURE, strict=True)],
    )
    joined = exposure.join(F.broadcast(hits), on=["cluster_id", "level", "domain"], how="left")
    return joined.select(
        *exposure.columns,
        *[F.coalesce(F.col(c), F.lit(0)).cast("long").alias(c) for c in RULE_EXPOSURE],
    )


def with_rule_clusters(clusters: DataFrame, rules: DataFrame | None) -> DataFrame:
    """``clusters`` with the rules' now-columns (all 0 without ``rules``)."""
    if rules is None:
        return _zeros(clusters, RULE_NOW)
    now = rules.where(F.col("level") == CLUSTER_LEVEL).select(
        "cluster_id", *[F.col(s).alias(c) for s, c in zip(_SOURCES, RULE_NOW, strict=True)]
    )
    joined = clusters.join(F.broadcast(now), on="cluster_id", how="left")
    return joined.select(
        *clusters.columns, *[F.coalesce(F.col(c), F.lit(0)).cast("long").alias(c) for c in RULE_NOW]
    )
