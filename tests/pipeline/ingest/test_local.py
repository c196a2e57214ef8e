"""Ingestion in process: the cases the Spark reader is tested on, with the same expected rows
and reasons, plus the metadata export and the dataset checks, all without Spark."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rackwise.common import InvalidFormatException
from rackwise.pipeline.ingest.local import LocalTables, read_source, spark_type
from rackwise.pipeline.ingest.source import InputSource
from rackwise.records.jsonform import kafka_uuid
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


def _rows(table: pa.Table) -> list[tuple[Any, ...]]:
    return sorted((tuple(r.values()) for r in table.to_pylist()), key=repr)


def _same(table: pa.Table, expected: list[tuple[Any, ...]]) -> None:
    assert _rows(table) == sorted(expected, key=repr)


def _json(brokers: Path, assignment: Path, log_dirs: Any, cluster_id: str) -> LocalTables:
    return read_source(InputSource.json_cluster(brokers, assignment, log_dirs, cluster_id))


def test_example_cluster_in_both_log_dirs_shapes() -> None:
    kafka = _json(
        EXAMPLES / "brokers.json",
        EXAMPLES / "assignment.json",
        EXAMPLES / "log-dirs.txt",
        "default",
    )
    _same(
        kafka.brokers,
        [
            ("default", 1, "/dc1/r1"),
            ("default", 2, "/dc1/r2"),
            ("default", 3, "/dc2/r1"),
            ("default", 4, "/dc2/r2"),
        ],
    )
    _same(kafka.log_dirs, EXAMPLE_LOG_DIRS)
    _same(kafka.replicas, EXAMPLE_REPLICAS)
    assert kafka.rejected.num_rows == 0
    per_broker = [(b, EXAMPLES / "kip113" / f"broker-{b}.json") for b in (1, 2, 3, 4)]
    kip = _json(EXAMPLES / "brokers.json", EXAMPLES / "assignment.json", per_broker, "kip")
    _same(kip.log_dirs, [("kip", *row[1:]) for row in EXAMPLE_LOG_DIRS])
    _same(kip.replicas, [("kip", *row[1:]) for row in EXAMPLE_REPLICAS])


def test_every_bad_row_of_a_json_cluster_is_rejected_with_its_reason(tmp_path: Path) -> None:
    (tmp_path / "brokers.json").write_text(BAD_BROKERS)
    (tmp_path / "assignment.json").write_text(BAD_ASSIGNMENT)
    (tmp_path / "log_dirs.json").write_text(BAD_LOG_DIRS)
    b, a, d = (str(tmp_path / n) for n in ("brokers.json", "assignment.json", "log_dirs.json"))
    tables = _json(Path(b), Path(a), d, "default")
    _same(
        tables.brokers,
        [("default", 1, "/dc1/r1"), ("default", 2, "/dc2"), ("default", 5, "/dc2/r1")],
    )
    _same(
        tables.log_dirs,
        [
            ("default", 1, "/d1", 100, True),
            ("default", 2, "/d1", 100, True),
            ("default", 5, "/x1", None, True),
        ],
    )
    _same(
        tables.replicas,
        [
            ("default", "ok", 0, 0, 1, "/d1", 10),
            ("default", "ok", 0, 1, 2, "/d1", 10),
            ("default", "named", 0, 0, 5, "/x1", None),
            ("default", "named", 0, 1, 1, None, None),
        ],
    )
    _same(tables.rejected, [("default", *row) for row in json_rejected(b, a, d)])


def test_every_bad_row_of_a_parquet_fleet_is_rejected_with_its_reason(tmp_path: Path) -> None:
    write_fleet(tmp_path, FLEET_BROKERS, fleet_replicas_table())
    tables = read_source(InputSource.fleet_dir(tmp_path))
    _same(tables.brokers, [("c1", 1, "/a/r1"), ("c1", 2, "/a/r2")])
    _same(tables.log_dirs, [("c1", 1, "/d1", 100, True), ("c1", 2, "/d1", 100, True)])
    _same(tables.replicas, [("c1", *row) for row in FLEET_REPLICAS[:2]])
    rejected = tables.rejected.to_pylist()
    by_source: dict[str, list[str]] = {}
    for row in rejected:
        by_source.setdefault(row["source"].split("/")[-1], []).append(row["reason"])
    assert set(by_source["brokers"]) == FLEET_BROKER_REASONS
    assert set(by_source["replicas"]) == FLEET_REPLICA_REASONS
    # every input row is accounted for: kept or rejected, none twice
    assert tables.replicas.num_rows + len(by_source["replicas"]) == len(FLEET_REPLICAS)
    assert len(rejected) == len(FLEET_REPLICAS) - 2 + 6


def test_a_dataset_of_another_schema_is_refused_naming_the_column(tmp_path: Path) -> None:
    replicas = pa.table(
        {"cluster_id": ["c"], "topic": ["t"], "partition": pa.array([0], pa.int64())}
    )
    write_fleet(tmp_path, [], replicas)
    with pytest.raises(InvalidFormatException) as caught:
        read_source(InputSource.fleet_dir(tmp_path))
    assert str(caught.value) == (
        f"fleet dataset {tmp_path / 'replicas'}: column partition is bigint, expected int"
    )
    (tmp_path / "replicas" / "r.parquet").unlink()
    pq.write_table(pa.table({"cluster_id": ["c"]}), tmp_path / "replicas" / "r.parquet")
    with pytest.raises(InvalidFormatException, match=r"missing column topic \(string\)$"):
        read_source(InputSource.fleet_dir(tmp_path))


def test_arrow_types_are_named_as_spark_names_them() -> None:
    dirs = pa.list_(pa.struct([("path", pa.string()), ("total_bytes", pa.int64())]))
    assert spark_type(dirs) == "array<struct<path:string,total_bytes:bigint>>"
    assert spark_type(pa.dictionary(pa.int32(), pa.string())) == "string"
    assert [spark_type(t) for t in (pa.int16(), pa.int32(), pa.bool_())] == [
        "smallint",
        "int",
        "boolean",
    ]


def _dir_id(n: int) -> str:
    return kafka_uuid(uuid.UUID(int=(7 << 64) + n))


def test_a_metadata_export_maps_as_the_spark_reader_maps_it(tmp_path: Path) -> None:
    # broker 2 registers d2 and a reserved id; partition p-0 on [2, 1] with directories
    # [d2, LOST]; p-1 has no replicas (one row without a broker: rejected, not dropped). The
    # metadata names directories by id, not by path: no directory is known.
    lost = kafka_uuid(uuid.UUID(int=2))
    (tmp_path / "brokers").mkdir()
    (tmp_path / "partitions").mkdir()
    brokers = pa.table(
        {
            "broker_id": pa.array([1, 2], pa.int32()),
            "rack": ["/a", "b"],
            "log_dirs": pa.array([[], [_dir_id(2), lost]], pa.list_(pa.string())),
        }
    )
    partitions = pa.table(
        {
            "topic": ["p", "p"],
            "partition": pa.array([0, 1], pa.int32()),
            "replicas": pa.array([[2, 1], []], pa.list_(pa.int32())),
            "directories": pa.array([[_dir_id(2), lost], []], pa.list_(pa.string())),
        }
    )
    pq.write_table(brokers, tmp_path / "brokers" / "b.parquet")
    pq.write_table(partitions, tmp_path / "partitions" / "p.parquet")
    tables = read_source(InputSource.metadata_export(tmp_path, "m"))
    _same(tables.brokers, [("m", 1, "/a"), ("m", 2, "/b")])
    _same(tables.log_dirs, [])
    _same(tables.replicas, [("m", "p", 0, 0, 2, None, None), ("m", "p", 0, 1, 1, None, None)])
    assert [r["reason"] for r in tables.rejected.to_pylist()] == [
        "p-1: a replica has no replica_index"
    ]


def test_a_metadata_export_without_topics_is_brokers_and_no_replicas(tmp_path: Path) -> None:
    (tmp_path / "brokers").mkdir()
    (tmp_path / "partitions").mkdir()
    brokers = pa.table(
        {
            "broker_id": pa.array([1], pa.int32()),
            "rack": ["/a"],
            "log_dirs": pa.array([[_dir_id(1)]], pa.list_(pa.string())),
        }
    )
    lists = pa.list_(pa.int32())
    partitions = pa.table(
        {
            "topic": pa.array([], pa.string()),
            "partition": pa.array([], pa.int32()),
            "replicas": pa.array([], lists),
            "directories": pa.array([], pa.list_(pa.string())),
        }
    )
    pq.write_table(brokers, tmp_path / "brokers" / "b.parquet")
    pq.write_table(partitions, tmp_path / "partitions" / "p.parquet")
    tables = read_source(InputSource.metadata_export(tmp_path, "m"))
    _same(tables.brokers, [("m", 1, "/a")])
    assert (tables.replicas.num_rows, tables.rejected.num_rows) == (0, 0)
