"""The tables one ingestion produces: a cluster (or a fleet) as Spark DataFrames.

:class:`ClusterTables` is what :func:`rackwise.pipeline.ingest.spark.read_cluster` and
:func:`~rackwise.pipeline.ingest.spark.read_fleet` return and what the audit and the planner take.
Its four DataFrames have exactly the schemas of :mod:`rackwise.pipeline.schema`, column for
column; ``brokers``, ``log_dirs`` and ``replicas`` hold only rows that passed validation, and
``rejected`` every row that did not, with its reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rackwise.pipeline import schema

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


@dataclass(frozen=True)
class ClusterTables:
    """One cluster's or a whole fleet's validated tables (every row carries its
    ``cluster_id``).

    ``brokers``
        :data:`~rackwise.pipeline.schema.BROKERS_DDL`: one row per broker, ``rack`` as a path.
    ``log_dirs``
        :data:`~rackwise.pipeline.schema.LOG_DIRS_DDL`: one row per log directory of a broker.
    ``replicas``
        :data:`~rackwise.pipeline.schema.REPLICAS_DDL`: one row per replica; the partitions
        are whole (a partition with one bad replica is rejected with all its replicas).
    ``rejected``
        :data:`~rackwise.pipeline.schema.REJECTED_DDL`: what was set aside, and why.
    """

    brokers: DataFrame
    log_dirs: DataFrame
    replicas: DataFrame
    rejected: DataFrame

    def unpersist(self) -> None:
        """Release whatever ingestion cached for these tables (a no-op for what it did not)."""
        for frame in (self.brokers, self.log_dirs, self.replicas, self.rejected):
            frame.unpersist()


def conform(frame: DataFrame, columns: tuple[str, ...], ddl: str) -> DataFrame:
    """``frame`` reduced to ``columns`` in order, each cast to its type in ``ddl``: the schema
    contract at the exit of a transform."""
    from pyspark.sql import functions as F  # noqa: N812, PLC0415
    from pyspark.sql.types import StructType  # noqa: PLC0415

    struct = StructType.fromDDL(ddl)
    assert isinstance(struct, StructType)
    types = {field.name: field.dataType for field in struct.fields}
    return frame.select(*(F.col(name).cast(types[name]).alias(name) for name in columns))


def empty(spark: SparkSession, ddl: str) -> DataFrame:
    """An empty DataFrame of schema ``ddl``."""
    return spark.createDataFrame([], ddl)


def empty_rejected(spark: SparkSession) -> DataFrame:
    """An empty ``rejected`` table."""
    return empty(spark, schema.REJECTED_DDL)
