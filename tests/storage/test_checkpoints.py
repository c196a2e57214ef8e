"""Kafka's checkpoint files, partition.metadata and the clean-shutdown marker, byte for byte."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from rackwise.common.types import TopicPartition
from rackwise.storage.checkpoints import (
    CLEAN_SHUTDOWN_MARKER,
    CheckpointFormatError,
    read_clean_shutdown_marker,
    read_epochs,
    read_offsets,
    read_partition_metadata,
    write_clean_shutdown_marker,
    write_epochs,
    write_offsets,
    write_partition_metadata,
)


def test_offset_checkpoint_golden_bytes(tmp_path: Path) -> None:
    path = tmp_path / "recovery-point-offset-checkpoint"
    write_offsets(path, {TopicPartition("orders", 1): 7, TopicPartition("orders", 0): 120})
    assert path.read_bytes() == b"0\n2\norders 0 120\norders 1 7\n"
    assert read_offsets(path) == {TopicPartition("orders", 0): 120, TopicPartition("orders", 1): 7}
    assert not (tmp_path / "recovery-point-offset-checkpoint.tmp").exists()


def test_offset_checkpoint_reads_what_kafka_writes(tmp_path: Path) -> None:
    path = tmp_path / "replication-offset-checkpoint"
    path.write_bytes(b"0\n3\n__consumer_offsets 12 0\nmy-topic 0 5\nmy-topic 10 99\n")
    assert read_offsets(path) == {
        TopicPartition("__consumer_offsets", 12): 0,
        TopicPartition("my-topic", 0): 5,
        TopicPartition("my-topic", 10): 99,
    }
    assert read_offsets(tmp_path / "absent") == {}
    (tmp_path / "empty").write_bytes(b"")
    assert read_offsets(tmp_path / "empty") == {}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"1\n0\n", "Unrecognised version:1, expected version: 0"),
        (b"0\n2\nt 0 1\n", r"Expected \[2\] entries in checkpoint file"),
        (b"0\n1\nt 0\n", "Malformed line in checkpoint file"),
        (b"0\nx\n", "Malformed line in checkpoint file"),
    ],
)
def test_a_damaged_offset_checkpoint_is_refused(
    tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "log-start-offset-checkpoint"
    path.write_bytes(content)
    with pytest.raises(CheckpointFormatError, match=message):
        read_offsets(path)


def test_leader_epoch_checkpoint_golden_bytes(tmp_path: Path) -> None:
    path = tmp_path / "leader-epoch-checkpoint"
    write_epochs(path, [(0, 0), (3, 150), (4, 1000)])
    assert path.read_bytes() == b"0\n3\n0 0\n3 150\n4 1000\n"
    assert read_epochs(path) == [(0, 0), (3, 150), (4, 1000)]


def test_partition_metadata_golden_bytes(tmp_path: Path) -> None:
    topic_id = uuid.UUID(bytes=bytes(range(16)))
    write_partition_metadata(tmp_path, topic_id)
    assert (tmp_path / "partition.metadata").read_bytes() == (
        b"version: 0\ntopic_id: AAECAwQFBgcICQoLDA0ODw"
    )
    assert read_partition_metadata(tmp_path) == topic_id
    assert read_partition_metadata(tmp_path / "nowhere") is None


@pytest.mark.parametrize(
    "content",
    [
        b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA",
        b"version: 0\n",
        b"topic_id: AAECAwQFBgcICQoLDA0ODw",
        b"version: x\ntopic_id: AAECAwQFBgcICQoLDA0ODw",
    ],
)
def test_a_damaged_partition_metadata_is_refused(tmp_path: Path, content: bytes) -> None:
    (tmp_path / "partition.metadata").write_bytes(content)
    with pytest.raises(CheckpointFormatError):
        read_partition_metadata(tmp_path)


def test_clean_shutdown_marker_is_kafka_4s_json(tmp_path: Path) -> None:
    write_clean_shutdown_marker(tmp_path, 42)
    assert (tmp_path / CLEAN_SHUTDOWN_MARKER).read_bytes() == b'{"version":0,"brokerEpoch":42}'
    assert read_clean_shutdown_marker(tmp_path) == 42
    write_clean_shutdown_marker(tmp_path)
    assert (tmp_path / CLEAN_SHUTDOWN_MARKER).read_bytes() == b'{"version":0,"brokerEpoch":-1}'
    (tmp_path / CLEAN_SHUTDOWN_MARKER).write_bytes(b"garbage")
    assert read_clean_shutdown_marker(tmp_path) is None
