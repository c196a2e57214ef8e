"""Reading a cluster or a fleet into validated tables.

Three input forms, one result (:class:`~rackwise.pipeline.tables.ClusterTables`):

* **One cluster as JSON**, the files Kafka's tools print (:func:`read_cluster`): the broker list
  (:mod:`rackwise.formats.brokers`), the current assignment as reassignment JSON, and optionally
  ``kafka-log-dirs --describe`` output in Kafka's shape or KIP-113's
  (:mod:`rackwise.formats.log_dirs`). The files are parsed on the driver, a large array one
  element at a time, and handed to Spark as Arrow.
* **One cluster's metadata export** (:func:`read_metadata`): ``PATH/brokers`` and
  ``PATH/partitions`` as ``rackwise metadata dump --format parquet`` writes them, mapped by
  :mod:`rackwise.pipeline._metadata_input` (log directories named by their ids, sizes unknown).
* **A fleet as Parquet** (:func:`read_fleet`): ``DIR/brokers`` and ``DIR/replicas``, the
  datasets ``rackwise pipeline generate`` writes (schemas in :data:`FLEET_BROKERS_DDL` and
  :data:`~rackwise.pipeline.schema.REPLICAS_DDL`), read by Spark where it runs.

A replica's log directory is the one the assignment names (``log_dirs``, when given and not
``"any"``), else the one ``kafka-log-dirs`` reports for that broker and partition; its size is
the one ``kafka-log-dirs`` reports for that broker and partition. A broker's directories are
those the broker list declares together with those ``kafka-log-dirs`` reports (which must be
among the declared ones when the broker list declares any); for a broker of which neither says
anything, those the assignment names. Validation (:mod:`rackwise.pipeline._validate`) moves
every row that does not parse or contradicts another to ``rejected`` with its reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Final

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql.types import StructType

from rackwise.common.errors import InvalidFormatException
from rackwise.pipeline import _metadata_input as m
from rackwise.pipeline import _validate as v
from rackwise.pipeline import schema
from rackwise.pipeline._json_input import read_json_cluster
from rackwise.pipeline.tables import ClusterTables, conform

if TYPE_CHECKING:
    from collections.abc import Sequence

StrPath = str | PathLike[str]

_BROADCAST_PROBLEMS: Final = 1_000_000
"""Up to this many rejected partitions are broadcast to the anti-join that drops them."""

FLEET_BROKERS_DDL: Final = (
    "cluster_id string, broker_id int, rack string, "
    "log_dirs array<struct<path:string,total_bytes:bigint,is_live:boolean>>"
)
"""The fleet's ``brokers`` dataset: one row per broker, its log directories inline."""


@dataclass(frozen=True)
class RawTables:
    """Input rows before validation (schemas in :mod:`rackwise.pipeline._validate`, each with
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
    log_dirs_path: StrPath | Sequence[StrPath | tuple[int, StrPath]] | None = None,
    cluster_id: str = schema.DEFAULT_CLUSTER_ID,
) -> ClusterTables:
    """One cluster's JSON files as validated tables. The replicas are the Arrow data the driver
    parsed, handed to Spark once and not cached (the audit and the planner cache what they
    read).

    ``log_dirs_path`` is one ``kafka-log-dirs`` file, or several; a KIP-113 document, which
    describes one broker without naming it, is given as ``(broker_id, path)``.
    """
    columns = read_json_cluster(
        Path(brokers_path), Path(assignment_path), _log_dirs_paths(log_dirs_path), cluster_id
    )

    def frame(data: object, ddl: str, source: StrPath) -> DataFrame:
        created = spark.createDataFrame(data, ddl)
        return created.withColumn("_source", F.lit(str(source)))

    reported = _log_dirs_paths(log_dirs_path)
    log_dirs_source = ",".join(str(p) for _, p in reported)
    raw = RawTables(
        brokers=frame(columns.brokers, v.RAW_BROKERS_DDL, brokers_path),
        replicas=frame(columns.replicas, v.RAW_REPLICAS_DDL, assignment_path),
        reported_dirs=(
            frame(columns.reported_dirs, v.RAW_REPORTED_DIRS_DDL, log_dirs_source)
            if reported
            else None
        ),
        rejected=spark.createDataFrame(columns.rejects.rows, schema.REJECTED_DDL),
        partitions_checked=True,
    )
    return validate(spark, raw)


def _log_dirs_paths(
    paths: StrPath | Sequence[StrPath | tuple[int, StrPath]] | None,
) -> list[tuple[int | None, Path]]:
    if paths is None:
        return []
    if isinstance(paths, str | PathLike):
        return [(None, Path(paths))]
    result: list[tuple[int | None, Path]] = []
    for item in paths:
        if isinstance(item, tuple):
            result.append((item[0], Path(item[1])))
        else:
            result.append((None, Path(item)))
    return result


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
    spark: SparkSession, export_dir: StrPath, cluster_id: str = schema.DEFAULT_CLUSTER_ID
) -> ClusterTables:
    """One cluster's ``rackwise metadata dump --format parquet`` export (its ``brokers`` and
    ``partitions`` datasets) as validated tables, named ``cluster_id``."""
    root = Path(export_dir)
    brokers_dir, partitions_dir = root / "brokers", root / "partitions"
    kind = "metadata dataset"
    brokers = _read_dataset(spark, brokers_dir, m.METADATA_BROKERS_DDL, kind)
    partitions = _read_dataset(spark, partitions_dir, m.METADATA_PARTITIONS_DDL, kind)
    raw = RawTables(
        brokers=m.raw_brokers(brokers, cluster_id, str(brokers_dir)),
        replicas=m.raw_replicas(partitions, cluster_id, str(partitions_dir)),
        reported_dirs=m.reported_dirs(brokers, cluster_id, str(brokers_dir)),
        rejected=spark.createDataFrame([], schema.REJECTED_DDL),
    )
    return validate(spark, raw)


def check_dataset(path: Path, kind: str = "fleet dataset") -> None:
    """Refuse a dataset that is not a directory (or file) with Parquet data in it, naming it:
    Spark's own message for an empty directory is a page of stack."""
    if not path.exists():
        raise FileNotFoundError(2, f"No such {kind}", str(path))
    if path.is_dir() and not any(
        f.is_file() and not f.name.startswith(("_", ".")) for f in path.rglob("*")
    ):
        raise InvalidFormatException(f"{kind} {path}: no data files in it")


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


BrokerKey = tuple[str, int]
DirKey = tuple[str, int, str]


@dataclass
class _Directories:
    """What the driver holds after the small checks: which brokers the broker list names and
    which it kept, and every known log directory with its capacity and liveness."""

    listed: set[BrokerKey] = field(default_factory=set)
    kept: set[BrokerKey] = field(default_factory=set)
    dirs: dict[DirKey, tuple[int | None, bool]] = field(default_factory=dict)

    def lookup(self, spark: SparkSession) -> DataFrame:
        """:data:`~rackwise.pipeline._validate.LOOKUP_DDL`: each listed broker, whether it was
        kept, and its known directories (null when none is known)."""
        known: dict[BrokerKey, list[str]] = {}
        for cluster, broker, path in self.dirs:
            known.setdefault((cluster, broker), []).append(path)
        rows = [(c, b, (c, b) in self.kept, known.get((c, b))) for c, b in sorted(self.listed)]
        return spark.createDataFrame(rows, v.LOOKUP_DDL)

    def add(self, key: DirKey, total_bytes: int | None, is_live: bool) -> None:
        """Record a directory; a capacity already known stays, and it is live only if every
        source says so."""
        known_total, known_live = self.dirs.get(key, (None, True))
        total = known_total if known_total is not None else total_bytes
        self.dirs[key] = (total, known_live and is_live)

    def rows(self) -> list[tuple[object, ...]]:
        """The ``log_dirs`` table's rows."""
        return [(c, b, p, total, live) for (c, b, p), (total, live) in sorted(self.dirs.items())]


def _check_brokers(
    spark: SparkSession, raw: DataFrame, held: _Directories
) -> tuple[DataFrame, DataFrame]:
    """Kept brokers and their rejected rows; ``held`` learns the brokers and their declared
    directories (one small job, plus one for the racks)."""
    racks = v.rack_problems(row["rack"] for row in raw.select("rack").collect())
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


def _check_reported(spark: SparkSession, reported_dirs: DataFrame, held: _Directories) -> DataFrame:
    """The rejected rows of the reported directories; ``held`` learns the kept ones."""
    annotated = v.annotate_reported_dirs(reported_dirs, held.lookup(spark))
    rows = annotated.collect()
    for row in rows:
        if row["_reason"] is None:
            key = (row["cluster_id"], row["broker_id"], row["log_dir"])
            held.add(key, None, row["is_live"] is not False)
    bad = spark.createDataFrame([r for r in rows if r["_reason"] is not None], annotated.schema)
    return v.rejected_rows(bad, ("cluster_id", "broker_id", "log_dir", "is_live"))


def validate(spark: SparkSession, raw: RawTables) -> ClusterTables:
    """Validate ``raw`` (see :mod:`rackwise.pipeline._validate`).

    The brokers, the log directories and the set of rejected partitions are computed here,
    once, and held on the driver (they are small); the replicas stay lazy: reading them costs
    one anti-join with the rejected partitions, or nothing more when there are none.
    """
    held = _Directories()
    brokers, rejected_brokers = _check_brokers(spark, raw.brokers, held)
    rejected = [raw.rejected, rejected_brokers]
    replicas = raw.replicas
    if raw.reported_dirs is not None:
        rejected.append(_check_reported(spark, raw.reported_dirs, held))
    lookup = held.lookup(spark)
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
    without_dirs = held.kept - {(c, b) for c, b, _ in held.dirs}
    if without_dirs:
        for row in v.assignment_dirs(kept, lookup).collect():
            held.add((row["cluster_id"], row["broker_id"], row["log_dir"]), None, True)
    return ClusterTables(
        brokers=conform(brokers, schema.BROKERS_COLUMNS, schema.BROKERS_DDL),
        log_dirs=spark.createDataFrame(held.rows(), schema.LOG_DIRS_DDL),
        replicas=kept,
        rejected=conform(_union(rejected), schema.REJECTED_COLUMNS, schema.REJECTED_DDL),
    )
