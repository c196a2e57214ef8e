"""Ingestion: Kafka's JSON files and Parquet fleets into validated tables, every bad row in
``rejected`` with its reason. Expected tables are worked out by hand from the fixtures."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest
from pyspark.testing import assertDataFrameEqual

from rackwise.common import InvalidFormatException
from rackwise.pipeline import schema
from rackwise.pipeline.ingest.spark import FLEET_BROKERS_DDL, read_cluster, read_fleet
from tests.pipeline.ingest.cases import (
    BAD_ASSIGNMENT,
    BAD_BROKERS,
    BAD_LOG_DIRS,
    EXAMPLE_LOG_DIRS,
    EXAMPLE_REPLICAS,
    EXAMPLES,
    FLEET_BROKER_REASONS,
    FLEET_BROKERS,
    FLEET_REPLICA_REASONS,
    FLEET_REPLICAS,
    fleet_replicas_table,
    json_rejected,
    write_fleet,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def _frame(spark: SparkSession, rows: list[tuple[object, ...]], ddl: str) -> DataFrame:
    return spark.createDataFrame(rows, ddl)


def test_example_cluster_in_kafkas_shape(spark: SparkSession) -> None:
    tables = read_cluster(
        spark,
        EXAMPLES / "brokers.json",
        EXAMPLES / "assignment.json",
        EXAMPLES / "log-dirs.txt",
    )
    brokers = [("default", 1, "/dc1/r1"), ("default", 2, "/dc1/r2")]
    brokers += [("default", 3, "/dc2/r1"), ("default", 4, "/dc2/r2")]
    assertDataFrameEqual(tables.brokers, _frame(spark, brokers, schema.BROKERS_DDL))
    assertDataFrameEqual(tables.log_dirs, _frame(spark, EXAMPLE_LOG_DIRS, schema.LOG_DIRS_DDL))
    assertDataFrameEqual(tables.replicas, _frame(spark, EXAMPLE_REPLICAS, schema.REPLICAS_DDL))
    assert tables.rejected.count() == 0
    assert tuple(tables.replicas.columns) == schema.REPLICAS_COLUMNS


def test_example_cluster_in_kip113s_shape_gives_the_same_log_dirs(spark: SparkSession) -> None:
    per_broker = [(b, EXAMPLES / "kip113" / f"broker-{b}.json") for b in (1, 2, 3, 4)]
    tables = read_cluster(
        spark, EXAMPLES / "brokers.json", EXAMPLES / "assignment.json", per_broker, "kip"
    )
    expected_dirs = [("kip", *row[1:]) for row in EXAMPLE_LOG_DIRS]
    expected_replicas = [("kip", *row[1:]) for row in EXAMPLE_REPLICAS]
    assertDataFrameEqual(tables.log_dirs, _frame(spark, expected_dirs, schema.LOG_DIRS_DDL))
    assertDataFrameEqual(tables.replicas, _frame(spark, expected_replicas, schema.REPLICAS_DDL))
    assert tables.rejected.count() == 0


def test_every_bad_row_of_a_json_cluster_is_rejected_with_its_reason(
    spark: SparkSession, tmp_path: Path
) -> None:
    (tmp_path / "brokers.json").write_text(BAD_BROKERS)
    (tmp_path / "assignment.json").write_text(BAD_ASSIGNMENT)
    (tmp_path / "log_dirs.json").write_text(BAD_LOG_DIRS)
    b, a, d = (str(tmp_path / n) for n in ("brokers.json", "assignment.json", "log_dirs.json"))
    tables = read_cluster(spark, b, a, d)

    brokers = [("default", 1, "/dc1/r1"), ("default", 2, "/dc2"), ("default", 5, "/dc2/r1")]
    assertDataFrameEqual(tables.brokers, _frame(spark, brokers, schema.BROKERS_DDL))
    log_dirs = [
        ("default", 1, "/d1", 100, True),
        ("default", 2, "/d1", 100, True),
        ("default", 5, "/x1", None, True),
    ]
    assertDataFrameEqual(tables.log_dirs, _frame(spark, log_dirs, schema.LOG_DIRS_DDL))
    replicas = [
        ("default", "ok", 0, 0, 1, "/d1", 10),
        ("default", "ok", 0, 1, 2, "/d1", 10),
        ("default", "named", 0, 0, 5, "/x1", None),
        ("default", "named", 0, 1, 1, None, None),
    ]
    assertDataFrameEqual(tables.replicas, _frame(spark, replicas, schema.REPLICAS_DDL))

    rejected = json_rejected(b, a, d)
    expected = _frame(spark, [("default", *row) for row in rejected], schema.REJECTED_DDL)
    assertDataFrameEqual(tables.rejected, expected)


def test_every_bad_row_of_a_parquet_fleet_is_rejected_with_its_reason(
    spark: SparkSession, tmp_path: Path
) -> None:
    table = fleet_replicas_table()
    write_fleet(tmp_path, FLEET_BROKERS, table)
    tables = read_fleet(spark, tmp_path)

    brokers = [("c1", 1, "/a/r1"), ("c1", 2, "/a/r2")]
    assertDataFrameEqual(tables.brokers, _frame(spark, brokers, schema.BROKERS_DDL))
    log_dirs = [("c1", 1, "/d1", 100, True), ("c1", 2, "/d1", 100, True)]
    assertDataFrameEqual(tables.log_dirs, _frame(spark, log_dirs, schema.LOG_DIRS_DDL))
    kept = [("c1", *row) for row in FLEET_REPLICAS[:2]]
    assertDataFrameEqual(tables.replicas, _frame(spark, kept, schema.REPLICAS_DDL))

    by_record = {
        (r["source"].split("/")[-1], r["record"]): r["reason"] for r in tables.rejected.collect()
    }
    brokers_source = {reason for (source, _), reason in by_record.items() if source == "brokers"}
    assert brokers_source == FLEET_BROKER_REASONS
    replica_reasons = [
        reason for (source, _), reason in sorted(by_record.items()) if source == "replicas"
    ]
    assert sorted(set(replica_reasons)) == sorted(FLEET_REPLICA_REASONS)
    # Every input row is accounted for: kept or rejected, none twice.
    assert tables.replicas.count() + len(replica_reasons) == len(FLEET_REPLICAS)
    assert tables.rejected.count() == len(by_record) == len(FLEET_REPLICAS) - 2 + 6


def test_fleet_datasets_must_have_the_documented_schema(
    spark: SparkSession, tmp_path: Path
) -> None:
    replicas = pa.table(
        {"cluster_id": ["c"], "topic": ["t"], "partition": pa.array([0], pa.int64())}
    )
    write_fleet(tmp_path, [], replicas)
    with pytest.raises(InvalidFormatException) as caught:
        read_fleet(spark, tmp_path)
    assert str(caught.value) == (
        f"fleet dataset {tmp_path / 'replicas'}: column partition is bigint, expected int"
    )
    with pytest.raises(FileNotFoundError):
        read_fleet(spark, tmp_path / "nowhere")
    assert "log_dirs array<struct<path:string" in FLEET_BROKERS_DDL
