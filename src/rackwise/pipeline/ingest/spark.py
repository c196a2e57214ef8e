"""Reading a cluster or a fleet into validated tables.

Three input forms, one result (:class:`~rackwise.pipeline.ingest.tables.ClusterTables`):

* **One cluster as JSON**, the files Kafka's tools print (:func:`read_cluster`): the broker list
  (:mod:`rackwise.formats.brokers`), the current assignment as reassignment JSON, and optionally
  ``kafka-log-dirs --describe`` output in Kafka's shape or KIP-113's
  (:mod:`rackwise.formats.log_dirs`). The files are parsed on the driver, a large array one
  element at a time, and handed to Spark as Arrow.
* **One cluster's metadata export** (:func:`read_metadata`): ``PATH/brokers`` and
  ``PATH/partitions`` as ``rackwise metadata dump --format parquet`` writes them, read on the
  driver as :func:`rackwise.pipeline.ingest.local.metadata_raw` maps them (the metadata log
  names a directory by id, not by path: directories and sizes come only from
  ``kafka-log-dirs`` output given beside it).
* **A fleet as Parquet** (:func:`read_fleet`): ``DIR/brokers`` and ``DIR/replicas``, the
  datasets ``rackwise pipeline generate`` writes (schemas in :data:`FLEET_BROKERS_DDL` and
  :data:`~rackwise.pipeline.schema.REPLICAS_DDL`), read by Spark where it runs.

A replica's log directory is the one the assignment names (``log_dirs``, when given and not
``"any"``), else the one ``kafka-log-dirs`` reports for that broker and partition; its size is
the one ``kafka-log-dirs`` reports for that broker and partition. A broker's directories are
those the broker list declares together with those ``kafka-log-dirs`` reports (which must be
among the declared ones when the broker list declares any); for a broker of which neither says
anything, those the assignment names. Validation (:mod:`rackwise.pipeline.ingest._validate`) moves
every row that does not parse or contradicts another to ``rejected`` with its reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql.types import StructType

from rackwise.common.errors import InvalidFormatException
from rackwise.pipeline import schema
from rackwise.pipeline.ingest import _validate as v
from rackwise.pipeline.ingest.checks import Directories, rack_problems
from rackwise.pipeline.ingest.source import (
    FLEET_BROKERS_DDL,
    InputSource,
    LogDirsArg,
    StrPath,
    check_dataset,
)
from rackwise.pipeline.ingest.tables import ClusterTables, conform

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rackwise.pipeline.ingest.json_input import JsonColumns

_BROADCAST_PROBLEMS: Final = 1_000_000
"""Up to this many rejected partitions are broadcast to the anti-join that drops them."""


@dataclass(frozen=True)
class RawTables:
    """Input rows before validation (schemas in :mod:`rackwise.pipeline.ingest._validate`, each with
    ``_source``): the replicas with their directories and sizes already attached;
    ``reported_dirs`` is ``None`` without ``kafka-log-dirs`` input. ``partitions_checked``
    says that the reader already checked every partition's replica list as a whole (no broker
    twice, indexes 0..n-1), as the JSON reader does entry by entry."""

    brokers: DataFrame
    replicas: DataFrame
    reported_dirs: DataFrame | None
    rejected: DataFrame
    partitions_checked: bool = False


def read_cluster(
    spark: SparkSession,
    brokers_path: StrPath,
    assignment_path: StrPath,
    log_dirs_path: LogDirsArg = None,
    cluster_id: str = schema.DEFAULT_CLUSTER_ID,
) -> ClusterTables:
    """One cluster's JSON files as validated tables (see :func:`cluster_tables`).

    ``log_dirs_path`` is one ``kafka-log-dirs`` file, or several; a KIP-113 document, which
    describes one broker without naming it, is given as ``(broker_id, path)``.
    """
    source = InputSource.json_cluster(brokers_path, assignment_path, log_dirs_path, cluster_id)
    return cluster_tables(spark, source, source.parse_json())


def cluster_tables(spark: SparkSession, source: InputSource, columns: JsonColumns) -> ClusterTables:
    """One cluster's JSON files, parsed already on the driver (``columns``, so that a file
    that does not parse is refused before Spark starts), as validated tables. The replicas are
    the Arrow data the driver parsed, handed to Spark once and not cached (the audit and the
    planner cache what they read)."""
    brokers_source, replicas_source, log_dirs_source = source.row_sources

    def frame(data: object, ddl: str, path: StrPath) -> DataFrame:
        created = spark.createDataFrame(data, ddl)
        return created.withColumn("_source", F.lit(str(path)))

    raw = RawTables(
        brokers=frame(columns.brokers, v.RAW_BROKERS_DDL, brokers_source),
        replicas=frame(columns.replicas, v.RAW_REPLICAS_DDL, replicas_source),
        reported_dirs=(
            frame(columns.reported_dirs, v.RAW_REPORTED_DIRS_DDL, log_dirs_source)
            if source.log_dirs
            else None
        ),
        rejected=spark.createDataFrame(columns.rejects.rows, schema.REJECTED_DDL),
        partitions_checked=True,
    )
    return validate(spark, raw)


def read_source(
    spark: SparkSession, source: InputSource, columns: JsonColumns | None = None
) -> ClusterTables:
    """Any input form as validated tables; JSON parsed already may be given as ``columns``."""
    if source.fleet is not None:
        return read_fleet(spark, source.fleet)
    if source.metadata is not None:
        return read_metadata(spark, source.metadata, source.cluster_id, source.log_dirs)
    return cluster_tables(spark, source, source.parse_json() if columns is None else columns)


def read_fleet(spark: SparkSession, fleet_dir: StrPath) -> ClusterTables:
    """A fleet's Parquet datasets ``fleet_dir/brokers`` and ``fleet_dir/replicas`` as
    validated tables. The replicas stay a lazy Parquet scan; only small results are
    materialised."""
    root = Path(fleet_dir)
    brokers_dir, replicas_dir = root / "brokers", root / "replicas"
    brokers = _read_dataset(spark, brokers_dir, FLEET_BROKERS_DDL)
    replicas = _read_dataset(spark, replicas_dir, schema.REPLICAS_DDL)
    raw = RawTables(
        brokers=brokers.withColumn("_ordinal", F.monotonically_increasing_id()).withColumn(
            "_source", F.lit(str(brokers_dir))
        ),
        replicas=replicas.withColumn("_ordinal", F.monotonically_increasing_id()).withColumn(
            "_source", F.lit(str(replicas_dir))
        ),
        reported_dirs=None,
        rejected=spark.createDataFrame([], schema.REJECTED_DDL),
    )
    return validate(spark, raw)


def read_metadata(
    spark: SparkSession,
    export_dir: StrPath,
    cluster_id: str = schema.DEFAULT_CLUSTER_ID,
    log_dirs: Sequence[tuple[int | None, Path]] = (),
) -> ClusterTables:
    """One cluster's ``rackwise metadata dump --format parquet`` export (its ``brokers`` and
    ``partitions`` datasets), with ``kafka-log-dirs`` output for the directories and sizes
    when given, as validated tables named ``cluster_id``. One cluster's export is read on the
    driver, as JSON input is, mapped as the in-process reader maps it
    (:func:`rackwise.pipeline.ingest.local.metadata_raw`)."""
    from rackwise.pipeline.ingest.local import metadata_raw  # noqa: PLC0415

    local = metadata_raw(Path(export_dir), cluster_id, log_dirs)

    def frame(data: object, ddl: str, source: str) -> DataFrame:
        return spark.createDataFrame(data, ddl).withColumn("_source", F.lit(source))

    raw = RawTables(
        brokers=frame(local.brokers, v.RAW_BROKERS_DDL, local.brokers_source),
        replicas=frame(local.replicas, v.RAW_REPLICAS_DDL, local.replicas_source),
        reported_dirs=(
            None
            if local.reported_dirs is None
            else frame(local.reported_dirs, v.RAW_REPORTED_DIRS_DDL, local.reported_source)
        ),
        rejected=spark.createDataFrame(local.rejected, schema.REJECTED_DDL),
    )
    return validate(spark, raw)


def _read_dataset(
    spark: SparkSession, path: Path, ddl: str, kind: str = "fleet dataset"
) -> DataFrame:
    """A Parquet dataset with at least the columns of ``ddl``, of exactly those types."""
    check_dataset(path, kind)
    try:
        frame = spark.read.parquet(str(path))
    except AnalysisException as error:
        text = str(error).strip()
        first = text.splitlines()[0] if text else type(error).__name__
        raise InvalidFormatException(f"{kind} {path}: not readable as Parquet: {first}") from error
    found = {f.name: f.dataType for f in frame.schema.fields}
    wanted = _struct(ddl)
    for expected in wanted.fields:
        actual = found.get(expected.name)
        if actual is None:
            raise InvalidFormatException(
                f"{kind} {path}: missing column {expected.name} "
                f"({expected.dataType.simpleString()})"
            )
        if actual.simpleString() != expected.dataType.simpleString():
            raise InvalidFormatException(
                f"{kind} {path}: column {expected.name} is {actual.simpleString()}, "
                f"expected {expected.dataType.simpleString()}"
            )
    return frame.select(*(f.name for f in wanted.fields))


def _struct(ddl: str) -> StructType:
    struct = StructType.fromDDL(ddl)
    assert isinstance(struct, StructType)
    return struct


def _union(frames: Sequence[DataFrame]) -> DataFrame:
    result = frames[0]
    for frame in frames[1:]:
        result = result.unionByName(frame)
    return result


def _lookup(spark: SparkSession, held: Directories) -> DataFrame:
    """:data:`~rackwise.pipeline.ingest._validate.LOOKUP_DDL`: what the row checks know of each
    listed broker."""
    return spark.createDataFrame(held.lookup_rows(), v.LOOKUP_DDL)


def _check_brokers(
    spark: SparkSession, raw: DataFrame, held: Directories
) -> tuple[DataFrame, DataFrame]:
    """Kept brokers and their rejected rows; ``held`` learns the brokers and their declared
    directories (one small job, plus one for the racks)."""
    racks = rack_problems(row["rack"] for row in raw.select("rack").collect())
    annotated = v.annotate_brokers(raw, racks)
    rows = annotated.collect()
    for row in rows:
        key = (row["cluster_id"], row["broker_id"])
        if key[0] is None or key[1] is None:
            continue
        held.listed.add(key)
        if row["_reason"] is None:
            held.kept.add(key)
            for d in row["log_dirs"] or []:
                held.add((*key, d["path"]), d["total_bytes"], d["is_live"] is not False)
    return v.split_brokers(spark.createDataFrame(rows, annotated.schema))


def _check_reported(spark: SparkSession, reported_dirs: DataFrame, held: Directories) -> DataFrame:
    """The rejected rows of the reported directories; ``held`` learns the kept ones."""
    annotated = v.annotate_reported_dirs(reported_dirs, _lookup(spark, held))
    rows = annotated.collect()
    for row in rows:
        if row["_reason"] is None:
            key = (row["cluster_id"], row["broker_id"], row["log_dir"])
            held.add(key, None, row["is_live"] is not False)
    bad = spark.createDataFrame([r for r in rows if r["_reason"] is not None], annotated.schema)
    return v.rejected_rows(bad, ("cluster_id", "broker_id", "log_dir", "is_live"))


def validate(spark: SparkSession, raw: RawTables) -> ClusterTables:
    """Validate ``raw`` (see :mod:`rackwise.pipeline.ingest._validate`).

    The brokers, the log directories and the set of rejected partitions are computed here,
    once, and held on the driver (they are small); the replicas stay lazy: reading them costs
    one anti-join with the rejected partitions, or nothing more when there are none.
    """
    held = Directories()
    brokers, rejected_brokers = _check_brokers(spark, raw.brokers, held)
    rejected = [raw.rejected, rejected_brokers]
    replicas = raw.replicas
    if raw.reported_dirs is not None:
        rejected.append(_check_reported(spark, raw.reported_dirs, held))
    lookup = _lookup(spark, held)
    annotated = v.annotate_replicas(replicas, lookup)
    if raw.partitions_checked:
        problems = v.row_problems(annotated).collect()
    else:
        problems = v.partition_problems(spark, annotated)
    bad = spark.createDataFrame(problems, v.PROBLEMS_DDL) if problems else None
    kept, rejected_replicas = v.split_replicas(
        replicas, annotated, bad, broadcast=len(problems) <= _BROADCAST_PROBLEMS
    )
    rejected.append(rejected_replicas)
    if held.without_dirs():
        for row in v.assignment_dirs(kept, lookup).collect():
            held.add((row["cluster_id"], row["broker_id"], row["log_dir"]), None, True)
    return ClusterTables(
        brokers=conform(brokers, schema.BROKERS_COLUMNS, schema.BROKERS_DDL),
        log_dirs=spark.createDataFrame(held.rows(), schema.LOG_DIRS_DDL),
        replicas=kept,
        rejected=conform(_union(rejected), schema.REJECTED_COLUMNS, schema.REJECTED_DDL),
    )
