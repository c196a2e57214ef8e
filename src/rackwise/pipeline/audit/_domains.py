"""Failure-domain exposure and load per domain (racks at every level, brokers, log dirs)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import Column
from pyspark.sql import functions as F  # noqa: N812

from rackwise.pipeline.audit.tree import BROKER_LEVEL, LOG_DIR_LEVEL

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

DOMAIN_KEYS = ("cluster_key", "level", "domain", "broker_id", "log_dir")
EXPOSURE_COUNTS = ("partitions", "offline_if_lost", "under_min_isr_if_lost")
LOAD_COUNTS = ("replicas", "leaders", "bytes")


def _zero(name: str) -> Column:
    return F.coalesce(F.col(name), F.lit(0)).cast("long").alias(name)


def rack_exposure(signatures: DataFrame, nodes: DataFrame, min_insync_replicas: int) -> DataFrame:
    """``cluster_key, node`` (path) and ``EXPOSURE_COUNTS`` for every rack node below the root
    that holds a live replica, evaluated once per distinct placement of live replicas."""
    signatures = signatures.groupBy("cluster_key", "live_leaves").agg(
        F.sum("partitions").alias("weight")
    )
    chains = nodes.select("cluster_key", F.col("node_id").alias("leaf_id"), "ancestors")
    replicas = signatures.select(
        "cluster_key",
        "live_leaves",
        "weight",
        F.size("live_leaves").alias("live"),
        F.explode("live_leaves").alias("leaf_id"),
    ).join(F.broadcast(chains), on=["cluster_key", "leaf_id"], how="inner")
    steps = replicas.select(
        "cluster_key",
        "live_leaves",
        "weight",
        "live",
        F.posexplode("ancestors").alias("i", "node"),
    ).where(F.col("i") >= 1)
    held = steps.groupBy("cluster_key", "live_leaves", "weight", "live", "node").agg(
        F.count(F.lit(1)).alias("held")
    )
    remaining = F.col("live") - F.col("held")
    return held.groupBy("cluster_key", "node").agg(
        F.sum("weight").alias("partitions"),
        F.sum(F.when(remaining == 0, F.col("weight")).otherwise(0)).alias("offline_if_lost"),
        F.sum(
            F.when((remaining >= 1) & (remaining < min_insync_replicas), F.col("weight")).otherwise(
                0
            )
        ).alias("under_min_isr_if_lost"),
    )


def _broker_rows(brokers: DataFrame, fine: DataFrame, log_dirs: DataFrame) -> DataFrame:
    """One row per broker: its log dirs' figures summed, capacity the sum of theirs."""
    counts = (*LOAD_COUNTS, "live_replicas", "offline_if_lost", "under_min_isr_if_lost")
    per_broker = fine.groupBy("cluster_key", "broker_id").agg(*[F.sum(c).alias(c) for c in counts])
    capacity = log_dirs.groupBy("cluster_key", "broker_id").agg(
        F.sum("total_bytes").alias("total_bytes")
    )
    rows = brokers.select("cluster_key", "broker_id").join(
        F.broadcast(per_broker), on=["cluster_key", "broker_id"], how="left"
    )
    return rows.join(F.broadcast(capacity), on=["cluster_key", "broker_id"], how="left")


def _rack_rows(
    brokers: DataFrame, nodes: DataFrame, broker_rows: DataFrame, racks_hit: DataFrame
) -> DataFrame:
    """Broker load summed into every rack node above the broker (the root excluded), with the
    rack's exposure."""
    up = brokers.select(
        "cluster_key", "broker_id", F.posexplode("ancestors").alias("i", "node")
    ).where(F.col("i") >= 1)
    racks = up.join(F.broadcast(broker_rows), on=["cluster_key", "broker_id"], how="inner")
    racks = racks.groupBy("cluster_key", "node").agg(
        *[F.sum(c).alias(c) for c in (*LOAD_COUNTS, "total_bytes")]
    )
    named = nodes.where(F.col("depth") >= 1).select(
        "cluster_key", F.col("path").alias("node"), "level"
    )
    rows = named.join(F.broadcast(racks), on=["cluster_key", "node"], how="left")
    rows = rows.join(F.broadcast(racks_hit), on=["cluster_key", "node"], how="left")
    return rows.withColumnRenamed("node", "domain").select(
        "cluster_key",
        "level",
        "domain",
        F.lit(None).cast("int").alias("broker_id"),
        F.lit(None).cast("string").alias("log_dir"),
        F.lit(None).cast("boolean").alias("is_live"),
        "total_bytes",
        *LOAD_COUNTS,
        *EXPOSURE_COUNTS,
    )


def domain_table(
    nodes: DataFrame,
    brokers: DataFrame,
    log_dirs: DataFrame,
    load: DataFrame,
    brokers_hit: DataFrame,
    racks_hit: DataFrame,
) -> DataFrame:
    """Every domain (rack nodes below the root, brokers, log dirs) with its load and exposure
    (``partitions``: the partitions with a live replica in it); ``null`` where nothing sits."""
    keys = ["cluster_key", "broker_id", "log_dir_key"]
    fine = load.join(F.broadcast(brokers_hit), on=keys, how="left")
    dirs = log_dirs.join(F.broadcast(fine), on=keys, how="left").select(
        "cluster_key",
        F.lit(LOG_DIR_LEVEL).alias("level"),
        F.concat_ws(":", F.col("broker_id").cast("string"), F.col("log_dir")).alias("domain"),
        "broker_id",
        "log_dir",
        "is_live",
        "total_bytes",
        *LOAD_COUNTS,
        F.col("live_replicas").alias("partitions"),
        "offline_if_lost",
        "under_min_isr_if_lost",
    )
    broker_rows = _broker_rows(brokers, fine, log_dirs)
    by_broker = broker_rows.select(
        "cluster_key",
        F.lit(BROKER_LEVEL).alias("level"),
        F.col("broker_id").cast("string").alias("domain"),
        "broker_id",
        F.lit(None).cast("string").alias("log_dir"),
        F.lit(None).cast("boolean").alias("is_live"),
        "total_bytes",
        *LOAD_COUNTS,
        F.col("live_replicas").alias("partitions"),
        "offline_if_lost",
        "under_min_isr_if_lost",
    )
    racks = _rack_rows(brokers, nodes, broker_rows, racks_hit)
    return racks.unionByName(by_broker).unionByName(dirs)


def exposure_rows(domains: DataFrame) -> DataFrame:
    """``DOMAIN_KEYS`` and ``EXPOSURE_COUNTS`` for every domain (zeros included)."""
    return domains.select(*DOMAIN_KEYS, *[_zero(c) for c in EXPOSURE_COUNTS])


def load_rows(domains: DataFrame) -> DataFrame:
    """``DOMAIN_KEYS``, ``is_live``, ``LOAD_COUNTS``, ``total_bytes`` and ``utilisation``
    (bytes over capacity, ``null`` where the capacity is unknown)."""
    utilisation = F.when(
        F.col("total_bytes") > 0,
        F.coalesce(F.col("bytes"), F.lit(0)).cast("double") / F.col("total_bytes"),
    )
    return domains.select(
        *DOMAIN_KEYS,
        "is_live",
        *[_zero(c) for c in LOAD_COUNTS],
        F.col("total_bytes").cast("long").alias("total_bytes"),
        utilisation.alias("utilisation"),
    )


def skew_rows(load: DataFrame) -> DataFrame:
    """``cluster_key, level, metric, domains, min, max, mean, max_over_mean`` per level and
    metric (replicas, leaders, bytes, utilisation); a domain with nothing in it counts as 0."""
    metrics = ("replicas", "leaders", "bytes", "utilisation")
    long = load.select(
        "cluster_key", "level", *[F.col(m).cast("double").alias(m) for m in metrics]
    ).unpivot(["cluster_key", "level"], list(metrics), "metric", "value")
    stats = long.groupBy("cluster_key", "level", "metric").agg(
        F.count("value").alias("domains"),
        F.min("value").alias("min"),
        F.max("value").alias("max"),
        F.avg("value").alias("mean"),
    )
    ratio = F.when(F.col("mean") > 0, F.col("max") / F.col("mean"))
    return stats.where(F.col("domains") > 0).withColumn("max_over_mean", ratio)
