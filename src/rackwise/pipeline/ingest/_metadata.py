"""One cluster's metadata export (``rackwise metadata dump --format parquet``) as raw tables.

The export's ``brokers`` and ``partitions`` datasets (:mod:`rackwise.metalog.export`) become the
raw rows :mod:`rackwise.pipeline.ingest._validate` checks, so that a metadata export is
validated and rejected exactly as the other input forms are (the in-process engine maps it the
same way: :func:`rackwise.pipeline.ingest.local.metadata_raw`).

Goals
    The controller's view of a cluster in the pipeline's tables: brokers with their racks,
    their log directories, and every replica with its position and, where the controller knows
    it, its log directory.
Constraints
    The metadata log knows a log directory only by its id (KIP-858), never by its path or
    capacity, and knows nothing of replica sizes. A directory is therefore named ``/<id>`` (the
    tables hold absolute paths; the id in Kafka's base64 form never contains ``/``), its
    capacity and every replica's size are unknown (null). A replica whose directory is one of
    Kafka's reserved ids (``MIGRATING``, ``UNASSIGNED``, ``LOST``: the first 100) has an unknown
    directory. A broker's registered directories are its online ones, so each is live.
    Pure transforms: the caller reads the datasets and supplies ``_source``.
Algorithm
    1. Brokers: one raw broker row each, without declared directories (``log_dirs`` null);
       its registered directory ids become reported directories, which must then be on a kept
       broker, and against which its replicas' directories are checked.
    2. Partitions: ``posexplode_outer`` of ``replicas``: the position is the replica index, the
       directory is ``directories`` at the same position. A partition with no replicas becomes
       one row without a broker, which validation rejects rather than drops.
Worked example
    Partition ``orders-0`` with ``replicas [2, 0]`` and ``directories [<d2>, LOST]`` gives the
    replica rows ``(orders, 0, 0, 2, /<d2>)`` and ``(orders, 0, 1, 0, null)``.
"""

from __future__ import annotations

from typing import Final

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812

from rackwise.pipeline.ingest.checks import RESERVED_DIRECTORIES

_NO_DIRS: Final = "array<struct<path:string,total_bytes:bigint,is_live:boolean>>"


def directory_name(directory_id: Column) -> Column:
    """A directory id as the pipeline's ``log_dir``: ``/<id>``; null for a reserved id or null."""
    known = directory_id.isNotNull() & ~directory_id.isin(*RESERVED_DIRECTORIES)
    return F.when(known, F.concat(F.lit("/"), directory_id))


def raw_brokers(brokers: DataFrame, cluster_id: str, source: str) -> DataFrame:
    """The export's brokers as raw broker rows
    (:data:`~rackwise.pipeline.ingest._validate.RAW_BROKERS_DDL` with ``_source``), their
    directories left to :func:`reported_dirs`."""
    return brokers.select(
        F.lit(cluster_id).alias("cluster_id"),
        F.col("broker_id"),
        F.col("rack"),
        F.lit(None).cast(_NO_DIRS).alias("log_dirs"),
        F.monotonically_increasing_id().alias("_ordinal"),
        F.lit(source).alias("_source"),
    )


def reported_dirs(brokers: DataFrame, cluster_id: str, source: str) -> DataFrame:
    """Each broker's registered directory ids as reported directories
    (:data:`~rackwise.pipeline.ingest._validate.RAW_REPORTED_DIRS_DDL` with ``_source``), live."""
    exploded = brokers.select("broker_id", F.explode("log_dirs").alias("directory_id"))
    real = exploded.filter(directory_name(F.col("directory_id")).isNotNull())
    return real.select(
        F.lit(cluster_id).alias("cluster_id"),
        F.col("broker_id"),
        F.concat(F.lit("/"), F.col("directory_id")).alias("log_dir"),
        F.lit(True).alias("is_live"),
        F.monotonically_increasing_id().alias("_ordinal"),
        F.lit(source).alias("_source"),
    )


def raw_replicas(partitions: DataFrame, cluster_id: str, source: str) -> DataFrame:
    """The export's partitions as raw replica rows
    (:data:`~rackwise.pipeline.ingest._validate.RAW_REPLICAS_DDL` with ``_source``): one per
    entry of ``replicas``, its position the replica index; sizes unknown."""
    exploded = partitions.select(
        "topic",
        "partition",
        "directories",
        F.posexplode_outer("replicas").alias("replica_index", "broker_id"),
    )
    directory = F.when(
        F.col("replica_index").isNotNull(), F.get(F.col("directories"), F.col("replica_index"))
    )
    return exploded.select(
        F.lit(cluster_id).alias("cluster_id"),
        F.col("topic"),
        F.col("partition"),
        F.col("replica_index").cast("int").alias("replica_index"),
        F.col("broker_id"),
        directory_name(directory).alias("log_dir"),
        F.lit(None).cast("bigint").alias("size_bytes"),
        F.monotonically_increasing_id().alias("_ordinal"),
        F.lit(source).alias("_source"),
    )
