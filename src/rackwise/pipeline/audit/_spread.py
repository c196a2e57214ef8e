"""Spread violations, evaluated once per distinct placement signature.

A partition's spread over the tree depends only on the racks its replicas sit in (each replica
is on a different broker), so the check runs on the distinct ``(cluster, sorted leaf racks)``
signatures, a few thousand rows where the partitions are millions, and the violations are
joined back to the partitions that share a signature.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as F  # noqa: N812

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

VIOLATION_FIELDS = (
    "depth",
    "level",
    "node",
    "replicas",
    "max_child_replicas",
    "min_free_child_replicas",
)


def _held_per_child(signatures: DataFrame, nodes: DataFrame) -> DataFrame:
    """``cluster_key, leaves, node, child, held``: replicas of the signature under each child
    (by path) of each node that holds any. A broker child (a replica on a broker placed
    directly in the node) is keyed ``#<position>``: it is distinct per replica and holds one."""
    chains = nodes.select("cluster_key", F.col("node_id").alias("leaf_id"), "ancestors")
    replicas = signatures.select(
        "cluster_key", "leaves", F.posexplode("leaves").alias("pos", "leaf_id")
    ).join(F.broadcast(chains), on=["cluster_key", "leaf_id"], how="inner")
    steps = replicas.select(
        "cluster_key",
        "leaves",
        "pos",
        "ancestors",
        F.posexplode("ancestors").alias("i", "node"),
    )
    child = F.when(
        F.col("i") + 1 < F.size("ancestors"), F.element_at("ancestors", F.col("i") + 2)
    ).otherwise(F.concat(F.lit("#"), F.col("pos").cast("string")))
    return steps.groupBy("cluster_key", "leaves", "node", child.alias("child")).agg(
        F.count(F.lit(1)).alias("held")
    )


def violating_signatures(signatures: DataFrame, nodes: DataFrame) -> DataFrame:
    """``cluster_key, leaves, violations``: each signature that violates the spread somewhere,
    with one struct per violating node (``VIOLATION_FIELDS``).

    Goals: find every node whose children hold the replicas less evenly than the brokers allow.
    Constraints: a child can take another replica only while it has a broker without one
    (``num_brokers > held``); a child holding none always can.
    Algorithm: count the replicas per (node, child); per node take the largest count and the
    smallest count among children still free (zero when some child holds none); the node
    violates when it has two or more children and the two differ by two or more.
    Worked example: ``/dc1`` with racks ``r1`` (2 brokers) and ``r2`` (2 brokers) and replicas
    on both brokers of ``r1``: counts (2, 0), ``r2`` is free with 0, 2 - 0 = 2: a violation.
    """
    held = _held_per_child(signatures.select("cluster_key", "leaves").distinct(), nodes)
    sizes = nodes.select(
        "cluster_key", F.col("path").alias("child"), F.col("num_brokers").alias("capacity")
    )
    held = held.join(F.broadcast(sizes), on=["cluster_key", "child"], how="left")
    capacity = F.coalesce(F.col("capacity"), F.lit(1))  # a broker child takes one replica
    per_node = held.groupBy("cluster_key", "leaves", "node").agg(
        F.sum("held").alias("replicas"),
        F.max("held").alias("max_child_replicas"),
        F.count(F.lit(1)).alias("children_held"),
        F.min(F.when(capacity > F.col("held"), F.col("held"))).alias("min_free_held"),
    )
    shape = nodes.select(
        "cluster_key", F.col("path").alias("node"), "depth", "level", "num_children"
    )
    per_node = per_node.join(F.broadcast(shape), on=["cluster_key", "node"], how="inner")
    min_free = F.when(F.col("children_held") < F.col("num_children"), F.lit(0)).otherwise(
        F.col("min_free_held")
    )
    bad = per_node.where(
        (F.col("num_children") >= 2) & (F.col("max_child_replicas") - min_free >= 2)
    ).withColumn("min_free_child_replicas", min_free)
    return bad.groupBy("cluster_key", "leaves").agg(
        F.collect_list(F.struct(*VIOLATION_FIELDS)).alias("violations")
    )


def spread_rows(partitions: DataFrame, bad: DataFrame, cluster_keys: DataFrame) -> DataFrame:
    """One row per (partition, violating node), named."""
    hit = partitions.select("cluster_key", "topic", "partition", "leaves").join(
        F.broadcast(bad), on=["cluster_key", "leaves"], how="inner"
    )
    rows = hit.select("cluster_key", "topic", "partition", F.inline("violations"))
    rows = rows.join(F.broadcast(cluster_keys), on="cluster_key", how="inner")
    return rows.select(
        "cluster_id",
        "topic",
        "partition",
        "depth",
        "level",
        "node",
        F.col("replicas").cast("long").alias("replicas"),
        F.col("max_child_replicas").cast("long").alias("max_child_replicas"),
        F.col("min_free_child_replicas").cast("long").alias("min_free_child_replicas"),
    )
