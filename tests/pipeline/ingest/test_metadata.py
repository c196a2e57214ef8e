"""A controller's metadata log, exported by ``rackwise metadata dump --format parquet``, read by
``rackwise pipeline audit --metadata``: real log files, the real export, the real command, on
the suite's one Spark session."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq
import pytest

from rackwise.cli.main import main
from rackwise.metalog import FileMetadataLog
from rackwise.pipeline.ingest.spark import read_metadata
from rackwise.records import (
    BrokerRegistrationChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
    kafka_uuid,
)
from rackwise.records.constants import DIRECTORY_LOST

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

RACKS = {1: "/dc1/r1", 2: "/dc1/r1", 3: "/dc1/r2", 4: "/dc1/r3"}
DIRS: dict[int, tuple[uuid.UUID, ...]] = {b: (uuid.UUID(int=1000 + b),) for b in RACKS} | {
    2: (uuid.UUID(int=1002), uuid.UUID(int=2002))
}
ORDERS = uuid.uuid5(uuid.NAMESPACE_DNS, "orders")
STRAY = uuid.uuid5(uuid.NAMESPACE_DNS, "stray")


def _register(broker_id: int) -> RegisterBrokerRecord:
    return RegisterBrokerRecord(
        broker_id=broker_id,
        incarnation_id=uuid.UUID(int=broker_id + 1),
        broker_epoch=broker_id,
        end_points=(
            RegisterBrokerRecord.BrokerEndpoint(
                name="PLAINTEXT", host="127.0.0.1", port=9092 + broker_id, security_protocol=0
            ),
        ),
        features=(),
        rack=RACKS[broker_id],
        log_dirs=DIRS[broker_id],
    )


def _partition(topic_id: uuid.UUID, index: int, placed: list[tuple[int, uuid.UUID]]) -> Any:
    replicas = tuple(b for b, _ in placed)
    return PartitionRecord(
        partition_id=index,
        topic_id=topic_id,
        replicas=replicas,
        isr=replicas,
        removing_replicas=(),
        adding_replicas=(),
        leader=replicas[0],
        leader_epoch=0,
        partition_epoch=0,
        directories=tuple(d for _, d in placed),
    )


def _history() -> list[list[Any]]:
    """Four brokers (1 and 2 on one rack, 2 with two directories, 4 left fenced); ``orders``
    with a partition two of whose replicas share a rack and one replica in a lost directory;
    ``stray`` with a replica on a broker that never registered."""
    d1, (d2a, d2b), d3, d4 = DIRS[1][0], DIRS[2], DIRS[3][0], DIRS[4][0]
    return [
        [_register(b) for b in RACKS],
        [BrokerRegistrationChangeRecord(broker_id=b, broker_epoch=b, fenced=-1) for b in (1, 2, 3)],
        [
            TopicRecord(name="orders", topic_id=ORDERS),
            _partition(ORDERS, 0, [(1, d1), (2, d2a), (3, d3)]),
            _partition(ORDERS, 1, [(3, d3), (4, DIRECTORY_LOST), (1, d1)]),
            _partition(ORDERS, 2, [(4, d4), (2, d2b), (3, d3)]),
        ],
        [
            TopicRecord(name="stray", topic_id=STRAY),
            _partition(STRAY, 0, [(1, d1), (9, uuid.UUID(int=1009))]),
        ],
    ]


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The log written, then exported by the real command."""
    root = tmp_path_factory.mktemp("metadata")
    with FileMetadataLog(root / "metadata", clock=lambda: 1_700_000_000_000) as log:
        for batch in _history():
            log.append(batch, epoch=1)
    out = root / "export"
    assert (
        main(
            [
                "metadata",
                "dump",
                "--dir",
                str(root / "metadata"),
                "--format",
                "parquet",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    return out


def _dir(directory_id: uuid.UUID) -> str:
    return "/" + kafka_uuid(directory_id)


def test_export_becomes_validated_tables(spark: SparkSession, export: Path) -> None:
    assert pq.read_table(export / "brokers").column("fenced").to_pylist() == [
        False,
        False,
        False,
        True,
    ]
    tables = read_metadata(spark, export, "east")
    brokers = sorted(tuple(r) for r in tables.brokers.collect())
    assert brokers == [("east", b, rack) for b, rack in RACKS.items()]
    log_dirs = sorted(tuple(r) for r in tables.log_dirs.collect())
    assert log_dirs == sorted(
        ("east", b, _dir(d), None, True) for b, dirs in DIRS.items() for d in dirs
    )
    replicas = sorted(tuple(r) for r in tables.replicas.collect())
    d1, (d2a, d2b), d3, d4 = DIRS[1][0], DIRS[2], DIRS[3][0], DIRS[4][0]
    assert replicas == [
        ("east", "orders", 0, 0, 1, _dir(d1), None),
        ("east", "orders", 0, 1, 2, _dir(d2a), None),
        ("east", "orders", 0, 2, 3, _dir(d3), None),
        ("east", "orders", 1, 0, 3, _dir(d3), None),
        ("east", "orders", 1, 1, 4, None, None),
        ("east", "orders", 1, 2, 1, _dir(d1), None),
        ("east", "orders", 2, 0, 4, _dir(d4), None),
        ("east", "orders", 2, 1, 2, _dir(d2b), None),
        ("east", "orders", 2, 2, 3, _dir(d3), None),
    ]
    rejected = sorted((r["source"], r["reason"]) for r in tables.rejected.collect())
    reason = "stray-0: replica on broker 9, which is not in the broker list"
    assert rejected == [(str(export / "partitions"), reason)] * 2


@pytest.mark.parametrize("engine", ["spark", "local"])
def test_audit_command_reads_the_export(
    spark: SparkSession,
    export: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    engine: str,
) -> None:
    out = tmp_path / "audit"
    args = ["pipeline", "audit", "--metadata", str(export), "--cluster-id", "east"]
    chosen = ["--master", str(spark.sparkContext.master)] if engine == "spark" else []
    code = main([*args, *chosen, "--out", str(out), "--format", "json"])
    captured = capsys.readouterr()
    assert captured.err.startswith(f"engine: {engine} ")
    assert code == 0, captured.err
    summary = json.loads(captured.out)
    assert summary["rejected"] == 2
    fleet = summary["fleet"]
    assert (fleet["brokers"], fleet["partitions"], fleet["replicas"]) == (4, 3, 9)
    assert fleet["partitions_with_spread_violations"] == 1
    violations = pq.read_table(out / "audit" / "spread_violations").to_pylist()
    assert [(v["topic"], v["partition"], v["node"]) for v in violations] == [("orders", 0, "/dc1")]


def test_audit_command_refuses_a_missing_export(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["pipeline", "audit", "--metadata", str(tmp_path / "none"), "--out", str(tmp_path)]
    assert main(args) == 1
    assert capsys.readouterr().err == (
        f"error: No such metadata export directory: {tmp_path / 'none'}\n"
    )
    both = [*args, "--brokers", "b.json", "--assignment", "a.json"]
    assert main(both) == 1
    assert capsys.readouterr().err == (
        "error: give either --metadata PATH or --brokers/--assignment, not both\n"
    )
