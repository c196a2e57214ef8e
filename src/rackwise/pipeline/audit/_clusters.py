"""The ``clusters`` table: one row of counts per cluster."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from pyspark.sql import Column
from pyspark.sql import functions as F  # noqa: N812

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

META_COUNTS: Final = ("brokers", "brokers_without_rack", "log_dirs", "failed_log_dirs")
PARTITION_COUNTS: Final = (
    "partitions",
    "replicas",
    "offline_now",
    "under_min_isr_now",
    "partitions_with_spread_violations",
    "spread_violations",
)


def named(frame: DataFrame, keys: DataFrame) -> DataFrame:
    """Replace ``cluster_key`` by ``cluster_id`` (first column)."""
    rest = [c for c in frame.columns if c != "cluster_key"]
    return frame.join(F.broadcast(keys), on="cluster_key", how="inner").select("cluster_id", *rest)


def _per_cluster(flagged: DataFrame, min_insync_replicas: int) -> DataFrame:
    weight, live = F.col("partitions"), F.size("live_leaves")

    def partitions_where(condition: Column) -> Column:
        return F.sum(F.when(condition, weight).otherwise(0))

    return flagged.groupBy("cluster_key").agg(
        F.sum(weight).alias("partitions"),
        F.sum(weight * F.size("leaves")).alias("replicas"),
        partitions_where(live == 0).alias("offline_now"),
        partitions_where((live >= 1) & (live < min_insync_replicas)).alias("under_min_isr_now"),
        partitions_where(F.col("levels").isNotNull()).alias("partitions_with_spread_violations"),
        F.sum(weight * F.coalesce(F.size("levels"), F.lit(0))).alias("spread_violations"),
    )


def _per_level(flagged: DataFrame) -> DataFrame:
    """``spread_violations_by_level``: partition-node rows per level name."""
    rows = flagged.where(F.col("levels").isNotNull()).select(
        "cluster_key", "partitions", F.explode("levels").alias("level")
    )
    counts = rows.groupBy("cluster_key", "level").agg(F.sum("partitions").alias("n"))
    return counts.groupBy("cluster_key").agg(
        F.map_from_entries(F.collect_list(F.struct("level", "n"))).alias(
            "spread_violations_by_level"
        )
    )


def cluster_rows(
    signatures: DataFrame, bad: DataFrame, meta: DataFrame, min_insync_replicas: int
) -> DataFrame:
    """``cluster_id, rack_levels`` (names, top down), ``META_COUNTS`` (from ``meta``, the
    driver-built per-cluster metadata), ``PARTITION_COUNTS`` and ``spread_violations_by_level``
    (a map) of every cluster, from the placement signatures (no pass over the partitions)."""
    levels_hit = bad.select("cluster_key", "leaves", F.col("violations.level").alias("levels"))
    flagged = signatures.select("cluster_key", "leaves", "live_leaves", "partitions").join(
        F.broadcast(levels_hit), on=["cluster_key", "leaves"], how="left"
    )
    out = meta.select("cluster_key", "cluster_id", "rack_levels", *META_COUNTS)
    for part in (_per_cluster(flagged, min_insync_replicas), _per_level(flagged)):
        out = out.join(F.broadcast(part), on="cluster_key", how="left")
    return out.select(
        "cluster_id",
        "rack_levels",
        *[F.col(c).cast("long").alias(c) for c in META_COUNTS],
        *[F.coalesce(F.col(c), F.lit(0)).cast("long").alias(c) for c in PARTITION_COUNTS],
        F.coalesce(
            F.col("spread_violations_by_level"), F.create_map().cast("map<string,bigint>")
        ).alias("spread_violations_by_level"),
    )
