"""The second pass: everything the audit needs from the partitions, in one small table.

After the one aggregation of the replicas (``_replicas``), one more pass over its rows
gives, with three grouping sets, every small table the rest of the audit works from:

``placement`` rows
    ``cluster_key, leaves, live_leaves, partitions``: how many partitions share each
    placement (the racks of all their replicas and of their live ones). Spread and rack
    exposure are evaluated once per placement; the per-cluster counts are sums over them.
    Partitions of more than three replicas, which the aggregation does not describe, are
    counted (``wide_partitions``) under a placement of ``null`` leaves: when there are any,
    the job completes the partitions apart and runs this pass again on them.
``fragile`` rows
    ``cluster_key, broker_id, log_dir_key, offline_if_lost, under_min_isr_if_lost``. A broker
    (or log dir) holds at most one replica of a partition, so losing it leaves ``live - 1``:
    only partitions with ``1 <= live <= min.insync.replicas`` can be hurt, and each of their
    live replicas is charged to its broker and log dir (from ``live_keys``).
``load`` rows
    ``cluster_key, broker_id, log_dir_key, replicas, live_replicas, leaders, bytes``: the
    aggregation's per-(broker, log dir) rows, passed through.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from pyspark.sql import functions as F  # noqa: N812

from rackwise.pipeline.audit._replicas import KEY_SHIFT

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

PLACEMENT: Final = "placement"
FRAGILE: Final = "fragile"
LOAD: Final = "load"
_ROW_COLUMNS: Final = (
    "is_partition",
    "cluster_key",
    "broker_id",
    "log_dir_key",
    "replicas",
    "live_replicas",
    "leaders",
    "bytes",
    "leaves",
    "live_leaves",
    "live_keys",
)


def placement_input(aggregates: DataFrame, partitions: DataFrame | None) -> DataFrame:
    """The rows of the second pass: ``aggregates`` itself, or, when the partitions were
    completed apart (some have more than three replicas), ``partitions`` and the
    aggregation's per-(broker, log dir) rows."""
    if partitions is None:
        return aggregates.select(*_ROW_COLUMNS)
    parts = partitions.select(
        F.lit(True).alias("is_partition"),
        "cluster_key",
        F.lit(None).cast("int").alias("broker_id"),
        F.lit(None).cast("int").alias("log_dir_key"),
        "replicas",
        "live_replicas",
        F.lit(0).cast("long").alias("leaders"),
        F.lit(0).cast("long").alias("bytes"),
        "leaves",
        "live_leaves",
        "live_keys",
    )
    dirs = aggregates.where(~F.col("is_partition")).select(*_ROW_COLUMNS)
    return parts.unionByName(dirs)


def placement_aggregates(rows: DataFrame, min_insync_replicas: int) -> DataFrame:
    """``kind`` (``PLACEMENT``, ``FRAGILE``, ``LOAD``) and the columns of all three (see the
    module notes), from the rows of :func:`placement_input`."""
    part, live = F.col("is_partition"), F.col("live_replicas")
    fragile = part & (live >= 1) & (live <= min_insync_replicas)
    exploded = rows.select(
        *_ROW_COLUMNS, F.posexplode_outer(F.when(fragile, F.col("live_keys"))).alias("pos", "key")
    )
    key = F.col("key")
    keyed = exploded.select(
        "is_partition",
        "cluster_key",
        F.when(part, F.col("leaves")).alias("leaves"),
        F.when(part, F.col("live_leaves")).alias("live_leaves"),
        F.shiftright(key, KEY_SHIFT).cast("int").alias("hit_broker"),
        (key % (1 << KEY_SHIFT)).cast("int").alias("hit_dir"),
        F.when(~part, F.col("broker_id")).alias("broker_id"),
        F.when(~part, F.col("log_dir_key")).alias("log_dir_key"),
        (part & (F.col("pos").isNull() | (F.col("pos") == 0))).alias("is_first"),
        F.when(key.isNotNull(), live).alias("fragile_live"),
        *[
            F.when(~part, F.col(c)).alias(c)
            for c in ("replicas", "live_replicas", "leaders", "bytes")
        ],
    )
    sets = [
        ("cluster_key", "leaves", "live_leaves"),
        ("cluster_key", "hit_broker", "hit_dir"),
        ("cluster_key", "broker_id", "log_dir_key"),
    ]
    grouped = keyed.groupingSets(sets, *sorted({c for s in sets for c in s}))
    out = grouped.agg(
        F.when(F.grouping("leaves") == 0, F.lit(PLACEMENT))
        .when(F.grouping("hit_broker") == 0, F.lit(FRAGILE))
        .otherwise(F.lit(LOAD))
        .alias("kind"),
        F.count_if(F.col("is_first")).alias("partitions"),
        F.count_if(F.col("is_partition") & F.col("leaves").isNull()).alias("wide_partitions"),
        F.count_if(F.col("fragile_live") == 1).alias("offline_if_lost"),
        F.count_if(F.col("fragile_live") >= 2).alias("under_min_isr_if_lost"),
        *[F.sum(c).alias(c) for c in ("replicas", "live_replicas", "leaders", "bytes")],
    )
    present = (
        F.when(
            F.col("kind") == PLACEMENT, F.col("leaves").isNotNull() | (F.col("wide_partitions") > 0)
        )
        .when(F.col("kind") == FRAGILE, F.col("hit_broker").isNotNull())
        .otherwise(F.col("broker_id").isNotNull())
    )
    return out.where(present)


def has_wide_partitions(table: DataFrame) -> bool:
    """Whether the second pass met partitions of more than three replicas, which the first
    aggregation does not describe (an action, on the small materialized table)."""
    return not table.where((F.col("kind") == PLACEMENT) & (F.col("wide_partitions") > 0)).isEmpty()


def placements(table: DataFrame) -> DataFrame:
    """``cluster_key, leaves, live_leaves, partitions``."""
    rows = table.where((F.col("kind") == PLACEMENT) & F.col("leaves").isNotNull())
    return rows.select("cluster_key", "leaves", "live_leaves", "partitions")


def fragile_hits(table: DataFrame) -> DataFrame:
    """``cluster_key, broker_id, log_dir_key, offline_if_lost, under_min_isr_if_lost``."""
    rows = table.where(F.col("kind") == FRAGILE)
    return rows.select(
        "cluster_key",
        F.col("hit_broker").alias("broker_id"),
        F.col("hit_dir").alias("log_dir_key"),
        "offline_if_lost",
        "under_min_isr_if_lost",
    )


def fine_load(table: DataFrame) -> DataFrame:
    """``cluster_key, broker_id, log_dir_key, replicas, live_replicas, leaders, bytes``."""
    rows = table.where(F.col("kind") == LOAD)
    return rows.select(
        "cluster_key", "broker_id", "log_dir_key", "replicas", "live_replicas", "leaders", "bytes"
    )
