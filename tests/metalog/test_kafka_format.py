"""The metadata log's files in Kafka's formats, read by readers that are not the log's own: the
brokers' v2 batch checks and record decoder, and a reader written from Kafka's spec
(:mod:`tests.records.kafka_v2`). Damage outside Kafka's CRC (a batch's base offset, its epoch)
is caught by the offsets' sequence and the leader-epoch-checkpoint."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest

from rackwise.image import replay
from rackwise.metalog import FileMetadataLog
from rackwise.metalog.segment import segment_name
from rackwise.records import (
    LeaderChangeMessage,
    SnapshotFooterRecord,
    SnapshotHeaderRecord,
    check_batch,
    decode_record,
    iter_batches,
)
from rackwise.storage.batch import check_batches
from rackwise.storage.record_codec import iter_records
from tests.metalog.helpers import broker, topic
from tests.records.kafka_v2 import parse_batches

MARK = LeaderChangeMessage(1, (1,), ())
HISTORY: list[tuple[int, list[Any]]] = [
    (1, [MARK]),
    (1, [broker(0), broker(1), broker(2)]),
    (1, topic("a", 3)),
    (2, [LeaderChangeMessage(1, (1,), ())]),
    (2, topic("b", 2)),
    (2, topic("c", 4)),
]


def _write(directory: Path) -> bytes:
    with FileMetadataLog(directory) as log:
        for epoch, records in HISTORY:
            log.append(records, epoch)
    return (directory / segment_name(0)).read_bytes()


def test_a_segment_reads_as_kafka_v2_batches(tmp_path: Path) -> None:
    data = _write(tmp_path)
    batches = parse_batches(data)
    assert all(b.magic == 2 and b.crc_ok for b in batches)
    assert [b.partition_leader_epoch for b in batches] == [epoch for epoch, _ in HISTORY]
    assert [b.attributes for b in batches] == [0x20, 0, 0, 0x20, 0, 0]  # leader changes: control
    assert all(b.producer_id == -1 and b.base_sequence == -1 for b in batches)
    offsets = [b.base_offset for b in batches]
    assert offsets == [0, 1, 4, 8, 9, 12]
    values = [decode_record(r.value) for b in batches if not b.attributes for r in b.records]
    assert values == [
        r for _, records in HISTORY for r in records if r.__class__ is not MARK.__class__
    ]
    assert (tmp_path / "leader-epoch-checkpoint").read_text() == "0\n2\n1 0\n2 8\n"


def test_the_brokers_log_code_accepts_the_segment(tmp_path: Path) -> None:
    data = _write(tmp_path)
    headers = check_batches(data, allow_partial_tail=False)  # framing, magic 2, Kafka's CRC
    assert [h.base_offset for h in headers] == [0, 1, 4, 8, 9, 12]
    second = headers[1]
    stored = list(iter_records(data[second.position : second.end]))
    assert [r.offset for r in stored] == [1, 2, 3]
    assert [decode_record(r.value) for r in stored] == HISTORY[1][1]
    assert all(r.key is None and r.headers == () for r in stored)


def test_a_snapshot_is_kafkas_checkpoint_file(tmp_path: Path) -> None:
    records = [r for _, batch in HISTORY[1:3] for r in batch]
    with FileMetadataLog(tmp_path) as log:
        for epoch, batch in HISTORY[:3]:
            log.append(batch, epoch)
        snapshot_id = log.write_snapshot(replay(records).to_records(), log.end_offset)
    path = tmp_path / snapshot_id.file_name()
    assert path.name == "00000000000000000008-0000000001.checkpoint"
    data = path.read_bytes()
    batches = parse_batches(data)
    assert all(b.crc_ok and b.partition_leader_epoch == 1 for b in batches)
    first, *middle, last = batches
    assert (first.attributes, first.records[0].key) == (0x20, struct.pack(">hh", 0, 3))
    assert (last.attributes, last.records[0].key) == (0x20, struct.pack(">hh", 0, 4))
    assert [b.base_offset for b in batches][:2] == [0, 1]
    decoded = [decode_record(r.value) for b in middle for r in b.records]
    assert decoded == replay(records).to_records()
    kinds = [type(b.records[0]) for b in iter_batches(data)]
    assert kinds[0] is SnapshotHeaderRecord and kinds[-1] is SnapshotFooterRecord


def _batch_positions(data: bytes) -> list[int]:
    positions, pos = [], 0
    while pos < len(data):
        positions.append(pos)
        pos += check_batch(data, pos).size
    return positions


@pytest.mark.parametrize(
    ("batch", "bit"),
    [
        (2, 0),  # the base offset's lowest bit
        (2, 40),  # a high bit of the base offset
        (2, 96 + 31),  # the epoch's lowest bit: 1 becomes 0, lower than the batch before
        (2, 96 + 30),  # the epoch's bit 1: 1 becomes 3, higher, and the log goes on at 1
        (5, 96 + 28),  # the last batch's epoch: 2 becomes 10, and nothing after it
    ],
)
def test_damage_outside_kafkas_crc_truncates_at_its_batch(
    tmp_path: Path, batch: int, bit: int
) -> None:
    data = bytearray(_write(tmp_path))
    position = _batch_positions(bytes(data))[batch]
    data[position + bit // 8] ^= 0x80 >> (bit % 8)
    (tmp_path / segment_name(0)).write_bytes(bytes(data))
    with FileMetadataLog(tmp_path) as log:
        [event] = log.recovery_events
        assert event.action == "truncated"
        kept = [list(b.records) for b in log.read_from(0)]
    assert kept == [records for _, records in HISTORY[:batch]]


def test_a_log_without_its_epoch_checkpoint_rebuilds_it(tmp_path: Path) -> None:
    _write(tmp_path)
    checkpoint = tmp_path / "leader-epoch-checkpoint"
    checkpoint.unlink()
    with FileMetadataLog(tmp_path) as log:
        assert log.recovery_events == ()
        assert log.end_offset == 17
    assert checkpoint.read_text() == "0\n2\n1 0\n2 8\n"


def test_an_unreadable_epoch_checkpoint_is_set_aside_and_rebuilt(tmp_path: Path) -> None:
    _write(tmp_path)
    checkpoint = tmp_path / "leader-epoch-checkpoint"
    checkpoint.write_text("0\n2\n1 0\n")
    with FileMetadataLog(tmp_path) as log:
        [event] = log.recovery_events
        assert event.action == "set aside" and "leader-epoch-checkpoint.corrupt" in event.reason
        assert log.end_offset == 17
    assert checkpoint.read_text() == "0\n2\n1 0\n2 8\n"


def test_a_snapshot_with_a_damaged_epoch_is_set_aside(tmp_path: Path) -> None:
    with FileMetadataLog(tmp_path) as log:
        for epoch, batch in HISTORY[:3]:
            log.append(batch, epoch)
        snapshot_id = log.write_snapshot(replay(HISTORY[1][1]).to_records(), log.end_offset)
    path = tmp_path / snapshot_id.file_name()
    data = bytearray(path.read_bytes())
    second = check_batch(bytes(data), 0).size
    data[second + 15] ^= 0x04  # the epoch of the first batch of records, outside Kafka's CRC
    path.write_bytes(bytes(data))
    with FileMetadataLog(tmp_path) as log:
        [event] = log.recovery_events
        assert event.action == "set aside" and "has epoch 5, the snapshot's is 1" in event.reason
        assert log.snapshot_ids() == []
