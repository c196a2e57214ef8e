"""``rackwise metadata dump`` run as a person runs it, on logs written by the metadata log."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rackwise.image import replay
from rackwise.metalog import FileMetadataLog
from rackwise.metalog.segment import segment_name
from rackwise.records import (
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    PartitionChangeRecord,
    kafka_uuid,
)
from tests.metalog.helpers import broker, topic

TOPIC_ID = topic("orders", 0)[0].topic_id


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rackwise.cli.main", "metadata", "dump", *args],
        capture_output=True,
        text=True,
        check=False,
    )


def _history() -> list[list[Any]]:
    return [
        [broker(1, 0), broker(2, 1), broker(3, 2)],
        [BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=0, fenced=-1)],
        topic("orders", 3),
        [ConfigRecord(resource_type=2, resource_name="orders", name="retention.ms", value="60000")],
        [PartitionChangeRecord(partition_id=1, topic_id=TOPIC_ID, leader=2, isr=(2, 0))],
    ]


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "metadata"
    history = _history()
    with FileMetadataLog(directory, clock=lambda: 1_700_000_000_000) as log:
        for batch in history[:3]:
            log.append(batch, epoch=1)
        image = replay([r for batch in history[:3] for r in batch])
        log.write_snapshot(image.to_records(), log.end_offset)
        for batch in history[3:]:
            log.append(batch, epoch=2)
    return directory


def test_json_lists_records_and_image(log_dir: Path) -> None:
    result = _run("--dir", str(log_dir))
    assert result.returncode == 0, result.stderr
    dump = json.loads(result.stdout)
    assert dump["log"]["start_offset"] == 0 and dump["log"]["end_offset"] == 10
    assert dump["log"]["snapshot"] == {"end_offset": 8, "epoch": 1, "records": 7}
    log_records = [r for r in dump["records"] if r["source"] == "log"]
    assert [(r["offset"], r["epoch"], r["type"]) for r in log_records] == [
        (0, 1, "REGISTER_BROKER_RECORD"),
        (1, 1, "REGISTER_BROKER_RECORD"),
        (2, 1, "REGISTER_BROKER_RECORD"),
        (3, 1, "BROKER_REGISTRATION_CHANGE_RECORD"),
        (4, 1, "TOPIC_RECORD"),
        (5, 1, "PARTITION_RECORD"),
        (6, 1, "PARTITION_RECORD"),
        (7, 1, "PARTITION_RECORD"),
        (8, 2, "CONFIG_RECORD"),
        (9, 2, "PARTITION_CHANGE_RECORD"),
    ]
    assert log_records[9]["data"] == {
        "partitionId": 1,
        "topicId": kafka_uuid(TOPIC_ID),
        "isr": [2, 0],
        "leader": 2,
    }
    assert log_records[0]["append_time_ms"] == 1_700_000_000_000
    snapshot = [r for r in dump["records"] if r["source"] == "snapshot"]
    assert len(snapshot) == 7 and all(r["offset"] is None for r in snapshot)
    image = dump["image"]
    assert [(b["broker_id"], b["rack"], b["fenced"]) for b in image["brokers"]] == [
        (1, "/dc1/r1", False),
        (2, "/dc0/r2", True),
        (3, "/dc1/r3", True),
    ]
    assert image["brokers"][0]["listeners"] == ["PLAINTEXT://127.0.0.1:9093"]
    assert image["topics"] == [
        {
            "topic": "orders",
            "topic_id": kafka_uuid(TOPIC_ID),
            "partitions": 3,
            "replication_factor": 3,
        }
    ]
    second = image["partitions"][1]
    assert (second["partition"], second["leader"], second["isr"], second["replicas"]) == (
        1,
        2,
        [2, 0],
        [1, 2, 0],
    )
    assert (second["leader_epoch"], second["partition_epoch"]) == (1, 1)
    assert image["configs"] == [
        {"resource_type": 2, "resource_name": "orders", "name": "retention.ms", "value": "60000"}
    ]


def test_sections_and_output_file(log_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "dump.json"
    assert _run("--dir", str(log_dir), "--section", "image", "--out", str(out)).returncode == 0
    dump = json.loads(out.read_text())
    assert "records" not in dump and len(dump["image"]["partitions"]) == 3
    records_only = json.loads(_run("--dir", str(log_dir), "--section", "records").stdout)
    assert "image" not in records_only and len(records_only["records"]) == 17


def test_table_view(log_dir: Path) -> None:
    result = _run("--dir", str(log_dir), "--format", "table")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].endswith("offsets 0 to 10, epoch 2, snapshot at offset 8 (epoch 1, 7 records)")
    assert any(line.split()[:4] == ["9", "2", "PARTITION_CHANGE_RECORD", "2"] for line in lines)
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["topic", "partition"])
    assert lines[header + 2].split() == ["orders", "1", "2", "1,2,0", "2,0", "1"]


def test_parquet_tables_for_the_pipeline(log_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "export"
    result = _run("--dir", str(log_dir), "--format", "parquet", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        f"wrote 17 records, 3 brokers, 1 topics, 3 partitions, 1 configs under {out}"
    )
    partitions = pq.read_table(out / "partitions")
    assert partitions.schema.field("replicas").type.value_type == pa.int32()
    assert partitions.column_names[:6] == [
        "topic",
        "topic_id",
        "partition",
        "replicas",
        "isr",
        "leader",
    ]
    assert partitions.to_pylist()[1]["isr"] == [2, 0]
    brokers = pq.read_table(out / "brokers").to_pylist()
    assert [(b["broker_id"], b["rack"]) for b in brokers] == [
        (1, "/dc1/r1"),
        (2, "/dc0/r2"),
        (3, "/dc1/r3"),
    ]
    records = pq.read_table(out / "records").to_pylist()
    assert records[-1]["type"] == "PARTITION_CHANGE_RECORD" and records[-1]["offset"] == 9
    assert json.loads(records[-1]["record"])["leader"] == 2
    assert pq.read_table(out / "topics").to_pylist()[0]["partitions"] == 3
    again = _run("--dir", str(log_dir), "--format", "parquet", "--out", str(out))
    assert again.returncode == 0 and len(list((out / "records").iterdir())) == 1


def test_a_running_controllers_log_can_be_dumped(log_dir: Path) -> None:
    with FileMetadataLog(log_dir) as writer:  # holds the directory lock
        writer.append(topic("late", 1), epoch=3)
        dump = json.loads(_run("--dir", str(log_dir), "--section", "image").stdout)
    assert [t["topic"] for t in dump["image"]["topics"]] == ["late", "orders"]


def test_damage_is_reported_and_left_alone(log_dir: Path) -> None:
    segment = log_dir / segment_name(0)
    size = segment.stat().st_size
    os.truncate(segment, size - 5)
    result = _run("--dir", str(log_dir), "--section", "records")
    assert result.returncode == 0, result.stderr
    assert result.stderr.startswith(f"warning: ignored {segment} at offset 9: torn batch")
    offsets = [r["offset"] for r in json.loads(result.stdout)["records"] if r["offset"] is not None]
    assert offsets == list(range(9))
    assert segment.stat().st_size == size - 5  # read-only: not truncated


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--dir", "/nonexistent/metadata"], "error: metadata log /nonexistent/metadata does not"),
        (["--dir", ".", "--format", "parquet"], "error: --format parquet writes a directory"),
        (["--format", "json"], "error: the following arguments are required: --dir"),
    ],
)
def test_errors_are_one_line(args: list[str], message: str) -> None:
    result = _run(*args)
    assert result.returncode == 1
    assert result.stderr.startswith(message) and result.stderr.count("\n") == 1


def test_a_directory_without_a_log_is_refused(tmp_path: Path) -> None:
    result = _run("--dir", str(tmp_path))
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == (
        f"error: --dir {tmp_path}: no metadata log is there (no 00000000000000000000.log "
        "segment or .checkpoint snapshot)\n"
    )
    assert list(tmp_path.iterdir()) == []  # a read-only dump creates no files


def test_a_cluster_or_node_directory_is_refused_naming_the_log_below(
    tmp_path: Path, log_dir: Path
) -> None:
    # A cluster directory as `cluster up` lays it out: DIR/controller-3000/metadata.
    node = tmp_path / "cluster" / "controller-3000"
    node.mkdir(parents=True)
    log_dir.rename(node / "metadata")
    (node / "server.log").write_text("started\n")
    for given in (node.parent, node):
        result = _run("--dir", str(given))
        assert result.returncode == 1 and result.stdout == ""
        assert result.stderr.startswith(f"error: --dir {given}: no metadata log is there")
        assert result.stderr.endswith(f"; the logs below it: {node / 'metadata'}\n")
    assert _run("--dir", str(node / "metadata")).returncode == 0
