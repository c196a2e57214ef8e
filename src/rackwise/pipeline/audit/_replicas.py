"""The one pass over the replicas: per partition and per (broker, log dir), in one aggregation.

The replicas are the only large table, so they are read once: a single aggregation with two
grouping sets computes both the per-partition figures (for spread and exposure) and the load per
(broker, log dir), with fixed-width aggregates only (Spark's fast hash aggregation; a
``collect_list`` would force the slow sort-based path on millions of groups).

A partition's replicas are described by three sorted arrays: ``leaves`` (the rack node of each
replica's broker), ``live_leaves`` (of the live ones) and ``live_keys`` (``broker_id * 2**16 +
log_dir_key`` of the live ones). Up to three values are recovered exactly from their minimum,
maximum and sum (the middle one is the sum minus the other two), which covers replication
factors up to 3. Partitions with more replicas take a second, exact path: their replicas are
read again and their arrays collected. The job takes that path only when the next pass finds
such partitions (``_placements.has_wide_partitions``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from pyspark.sql import Column
from pyspark.sql import functions as F  # noqa: N812

from rackwise.pipeline.audit.tree import UNKNOWN_LOG_DIR
from rackwise.pipeline.schema import REPLICAS_COLUMNS

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

MAX_EXACT_REPLICAS: Final = 3
"""Largest replica count whose arrays the aggregation recovers from minimum, maximum, sum."""
KEY_SHIFT: Final = 16
"""``live_keys`` hold ``broker_id << KEY_SHIFT | log_dir_key`` (below 65,536 dirs a broker)."""
_PARTITION_KEYS: Final = ("cluster_key", "topic", "partition")
_DIR_KEYS: Final = ("cluster_key", "broker_id", "log_dir_key")
_PARTITION_COLUMNS: Final = (
    *_PARTITION_KEYS,
    "replicas",
    "live_replicas",
    "leaves",
    "live_leaves",
    "live_keys",
)


def enrich_replicas(replicas: DataFrame, leaves: DataFrame, dirs: DataFrame) -> DataFrame:
    """The replicas keyed by integers: ``cluster_key, topic, partition, is_leader, broker_id,
    log_dir_key`` (``UNKNOWN_LOG_DIR``: not known), ``size_bytes, is_live`` (false in a failed
    dir), ``leaf_id`` (the rack node of the broker). Both joins broadcast the small side.
    Replicas on brokers the cluster does not have are not audited (ingestion rejects them)."""
    r = replicas.select(*REPLICAS_COLUMNS)
    b = leaves.select("cluster_id", "broker_id", "cluster_key", "leaf_id")
    d = dirs.select("cluster_id", "broker_id", "log_dir", "log_dir_key", "is_live")
    joined = r.join(F.broadcast(b), on=["cluster_id", "broker_id"], how="inner").join(
        F.broadcast(d), on=["cluster_id", "broker_id", "log_dir"], how="left"
    )
    return joined.select(
        "cluster_key",
        "topic",
        "partition",
        (F.col("replica_index") == 0).alias("is_leader"),
        "broker_id",
        F.coalesce(F.col("log_dir_key"), F.lit(UNKNOWN_LOG_DIR)).alias("log_dir_key"),
        "size_bytes",
        F.coalesce(F.col("is_live"), F.lit(True)).alias("is_live"),
        "leaf_id",
    )


def _live_key() -> Column:
    return F.shiftleft(F.col("broker_id").cast("long"), KEY_SHIFT) + F.col("log_dir_key")


def _min_max_sum(name: str, value: Column) -> list[Column]:
    return [
        F.min(value).alias(f"{name}_min"),
        F.max(value).alias(f"{name}_max"),
        F.sum(value).alias(f"{name}_sum"),
    ]


def replica_aggregates(enriched: DataFrame) -> DataFrame:
    """One row per partition (``is_partition``) and one per (cluster, broker, log dir):
    ``replicas, live_replicas, leaders, bytes``; partition rows of at most three replicas also
    carry their arrays (``leaves, live_leaves, live_keys``; ``null`` elsewhere)."""
    e = enriched.select(
        "cluster_key",
        "topic",
        "partition",
        "broker_id",
        "log_dir_key",
        "is_leader",
        "is_live",
        "size_bytes",
        "leaf_id",
    )
    live = F.col("is_live")
    grouped = e.groupingSets([_PARTITION_KEYS, _DIR_KEYS], *_PARTITION_KEYS, *_DIR_KEYS[1:])
    sums = grouped.agg(
        (F.grouping("topic") == 0).alias("is_partition"),
        F.count(F.lit(1)).alias("replicas"),
        F.count_if(live).alias("live_replicas"),
        F.count_if(F.col("is_leader")).alias("leaders"),
        F.sum(F.coalesce(F.col("size_bytes"), F.lit(0))).alias("bytes"),
        *_min_max_sum("leaf", F.col("leaf_id")),
        *_min_max_sum("live_leaf", F.when(live, F.col("leaf_id"))),
        *_min_max_sum("live_key", F.when(live, _live_key())),
    )
    exact = F.col("is_partition") & (F.col("replicas") <= MAX_EXACT_REPLICAS)
    replicas, live_replicas = F.col("replicas"), F.col("live_replicas")
    return sums.select(
        "is_partition",
        *_PARTITION_KEYS,
        *_DIR_KEYS[1:],
        "replicas",
        "live_replicas",
        "leaders",
        "bytes",
        F.when(exact, _exact("leaf", replicas)).alias("leaves"),
        F.when(exact, _exact("live_leaf", live_replicas)).alias("live_leaves"),
        F.when(exact, _exact("live_key", live_replicas)).alias("live_keys"),
    )


def _exact(name: str, count: Column) -> Column:
    """The sorted array of ``count`` (at most 3) values from their minimum, maximum and sum."""
    low, high, total = F.col(f"{name}_min"), F.col(f"{name}_max"), F.col(f"{name}_sum")
    return (
        F.when(count == 0, F.array().cast(f"array<{_element(name)}>"))
        .when(count == 1, F.array(low))
        .when(count == 2, F.array(low, high))
        .otherwise(F.array(low, (total - low - high).cast(_element(name)), high))
    )


def _element(name: str) -> str:
    return "bigint" if name == "live_key" else "int"


def _collected(enriched: DataFrame, wide: DataFrame) -> DataFrame:
    """The arrays of the partitions in ``wide``, collected from their replicas."""
    live = F.col("is_live")
    replicas = enriched.join(F.broadcast(wide), on=list(_PARTITION_KEYS), how="left_semi")
    return replicas.groupBy(*_PARTITION_KEYS).agg(
        F.count(F.lit(1)).alias("replicas"),
        F.count_if(live).alias("live_replicas"),
        F.array_sort(F.collect_list("leaf_id")).alias("leaves"),
        F.array_sort(F.collect_list(F.when(live, F.col("leaf_id")))).alias("live_leaves"),
        F.array_sort(F.collect_list(F.when(live, _live_key()))).alias("live_keys"),
    )


def partition_table(aggregates: DataFrame, enriched: DataFrame | None) -> DataFrame:
    """One row per partition: ``cluster_key, topic, partition, replicas, live_replicas,
    leaves, live_leaves, live_keys`` (see the module notes). Without ``enriched`` (the replicas
    to read again) the partitions of more than three replicas are left out: pass ``None`` only
    when there is none."""
    parts = aggregates.where(F.col("is_partition"))
    exact = parts.where(F.col("replicas") <= MAX_EXACT_REPLICAS).select(*_PARTITION_COLUMNS)
    if enriched is None:
        return exact
    wide = parts.where(F.col("replicas") > MAX_EXACT_REPLICAS).select(*_PARTITION_KEYS)
    return exact.unionByName(_collected(enriched, wide).select(*_PARTITION_COLUMNS))
