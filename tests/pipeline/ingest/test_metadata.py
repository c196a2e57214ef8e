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
    assert tables.log_dirs.collect() == []  # ids only: no path is known
    replicas = sorted(tuple(r) for r in tables.replicas.collect())
    assert replicas == [
        ("east", "orders", p, i, b, None, None)
        for p, brokers in enumerate([(1, 2, 3), (3, 4, 1), (4, 2, 3)])
        for i, b in enumerate(brokers)
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


def _log_dirs_json(path: Path) -> dict[str, str]:
    """``kafka-log-dirs --describe`` output for the four brokers: each broker's directories by
    path, the replicas the export places there with their sizes; the paths by broker."""
    placed = {1: ["orders-0", "orders-1", "stray-0"], 2: ["orders-0"], 3: ["orders-0"]}
    placed |= {3: ["orders-0", "orders-1", "orders-2"], 4: ["orders-2"]}
    placed_b = {2: ["orders-2"]}  # broker 2's second directory
    brokers, paths = [], {}
    for broker in RACKS:
        dirs = [(f"/data/b{broker}", placed.get(broker, []))]
        if broker in placed_b:
            dirs.append((f"/data/b{broker}-second", placed_b[broker]))
        for name, _ in dirs:
            paths[name] = str(broker)
        brokers.append(
            {
                "broker": broker,
                "logDirs": [
                    {
                        "logDir": name,
                        "error": None,
                        "partitions": [
                            {"partition": tp, "size": 1000, "offsetLag": 0, "isFuture": False}
                            for tp in tps
                        ],
                    }
                    for name, tps in dirs
                ],
            }
        )
    path.write_text(json.dumps({"version": 1, "brokers": brokers}))
    return paths


@pytest.mark.parametrize("with_log_dirs", [False, True])
def test_a_plan_names_directories_by_path_or_any(
    export: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], with_log_dirs: bool
) -> None:
    paths = _log_dirs_json(tmp_path / "log-dirs.json")
    extra = ["--log-dirs", str(tmp_path / "log-dirs.json")] if with_log_dirs else []
    out = tmp_path / "plan"
    args = ["pipeline", "plan", "--metadata", str(export), "--cluster-id", "east", *extra]
    code = main([*args, "--engine", "local", "--out", str(out), "--format", "json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    reassignment = json.loads((out / "east" / "reassignment.json").read_text())
    named = [d for p in reassignment["partitions"] for d in p["log_dirs"] if d != "any"]
    if not with_log_dirs:
        assert named == []
        return
    assert named and set(named) <= set(paths)
    for entry in reassignment["partitions"]:
        for broker, log_dir in zip(entry["replicas"], entry["log_dirs"], strict=True):
            assert log_dir == "any" or paths[log_dir] == str(broker)
    summary = json.loads((out / "plan_summary.json").read_text())["clusters"]["east"]
    assert summary["num_estimated_sizes"] == 1  # broker 4's orders-1, in the lost directory
    assert summary["data_to_move_bytes"] % 1000 == 0 and summary["data_to_move_bytes"] > 0


@pytest.mark.parametrize("engine", ["spark", "local"])
def test_a_cluster_without_topics_has_nothing_to_plan(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str], engine: str
) -> None:
    with FileMetadataLog(tmp_path / "metadata", clock=lambda: 1_700_000_000_000) as log:
        log.append([_register(b) for b in RACKS], epoch=1)
    dump = ["metadata", "dump", "--dir", str(tmp_path / "metadata"), "--format", "parquet"]
    assert main([*dump, "--out", str(tmp_path / "export")]) == 0
    capsys.readouterr()
    chosen = ["--master", str(spark.sparkContext.master)] if engine == "spark" else []
    for command in ("audit", "plan"):
        args = ["pipeline", command, "--metadata", str(tmp_path / "export"), *chosen]
        code = main([*args, "--out", str(tmp_path / command), "--format", "json"])
        captured = capsys.readouterr()
        assert code == 0, captured.err
        fleet = json.loads(captured.out)["fleet"]
        assert fleet["replicas" if command == "audit" else "replica_moves"] == 0
    summary = json.loads((tmp_path / "plan" / "plan_summary.json").read_text())
    assert [c["reassignment_file"] for c in summary["clusters"].values()] == [None]
