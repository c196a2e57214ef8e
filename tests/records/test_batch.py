"""Record batches of the metadata log: Kafka's v2 batches, checked against bytes written out by
hand from Kafka's spec and a reader written from it, and damage inside the CRC's span caught."""

from __future__ import annotations

import struct
import uuid

import pytest
from crc32c import crc32c
from hypothesis import given
from hypothesis import strategies as st

from rackwise.records import (
    CorruptRecordException,
    LeaderChangeMessage,
    MetadataParseException,
    NoOpRecord,
    SnapshotFooterRecord,
    SnapshotHeaderRecord,
    TopicRecord,
    check_batch,
    decode_record,
    encode_batch,
    encode_frames,
    encode_record,
    encode_records,
    iter_batches,
)
from tests.records.kafka_v2 import parse_batches

RECORDS = [TopicRecord(name="foo", topic_id=uuid.UUID(int=1)), NoOpRecord()]
BATCH = encode_batch(5, 2, 1000, encode_frames(RECORDS))


def test_one_batch_written_out_by_hand_from_kafkas_spec() -> None:
    assert encode_record(NoOpRecord()) == bytes([1, 20, 0, 0])  # frame 1, api key 20, v0, tags
    # DefaultRecord: length 10, attributes, timestamp delta 0, offset delta 0, null key (-1),
    # value length 4, the value, no headers (varints zig-zag)
    record = bytes([0x14, 0, 0, 0, 0x01, 0x08, 1, 20, 0, 0, 0])
    after_crc = struct.pack(">hiqqqhii", 0, 0, 1000, 1000, -1, -1, -1, 1) + record
    crc = crc32c(after_crc)
    head = struct.pack(">qiibI", 5, 49 + len(record), 2, 2, crc)
    assert encode_batch(5, 2, 1000, encode_frames([NoOpRecord()])) == head + after_crc
    header = check_batch(head + after_crc, 0)
    assert (header.base_offset, header.epoch, header.append_time_ms) == (5, 2, 1000)
    assert (header.magic, header.attributes, header.record_count, header.size) == (2, 0, 1, 72)


def test_an_independent_reader_finds_kafkas_fields() -> None:
    [batch] = parse_batches(BATCH)
    assert batch.magic == 2 and batch.crc_ok and batch.attributes == 0
    assert (batch.base_offset, batch.partition_leader_epoch, batch.last_offset_delta) == (5, 2, 1)
    assert (batch.base_timestamp, batch.max_timestamp) == (1000, 1000)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (-1, -1, -1)
    assert [r.offset_delta for r in batch.records] == [0, 1]
    assert all(r.key is None and r.headers == 0 for r in batch.records)
    assert [decode_record(r.value) for r in batch.records] == RECORDS


def test_a_leader_change_is_a_control_batch_as_kafka_writes_it() -> None:
    mark = LeaderChangeMessage(1, (1, 2, 3), (1, 2))
    data = encode_records(7, 4, 2000, [mark])
    [batch] = parse_batches(data)
    assert batch.crc_ok and batch.attributes == 0x20 and batch.partition_leader_epoch == 4
    [record] = batch.records
    assert record.key == b"\x00\x00\x00\x02"  # ControlRecordType key v0, LEADER_CHANGE
    voter = b"\x00\x00\x00"
    assert (
        record.value
        == (
            b"\x00\x00" + b"\x00\x00\x00\x01"  # Version 0, LeaderId 1
            b"\x04" + voter + b"\x01\x00" + voter + b"\x02\x00" + voter + b"\x03\x00"
            b"\x03" + voter + b"\x01\x00" + voter + b"\x02\x00" + b"\x00"
        )
    )
    [decoded] = iter_batches(data)
    assert decoded.is_control and decoded.records == (mark,)


def test_a_snapshots_header_and_footer_are_control_records() -> None:
    data = encode_records(0, 3, 5, [SnapshotHeaderRecord(5)]) + encode_records(
        1, 3, 5, [SnapshotFooterRecord()]
    )
    header, footer = parse_batches(data)
    assert header.records[0].key == b"\x00\x00\x00\x03"
    assert header.records[0].value == struct.pack(">hq", 0, 5) + b"\x00"
    assert footer.records[0].key == b"\x00\x00\x00\x04"
    assert footer.records[0].value == b"\x00\x00\x00"
    assert [b.records for b in iter_batches(data)] == [
        (SnapshotHeaderRecord(5),),
        (SnapshotFooterRecord(),),
    ]


def test_batches_decode_back() -> None:
    second = encode_batch(7, 3, 2000, encode_frames([NoOpRecord()]))
    batches = list(iter_batches(BATCH + second))
    assert [b.records for b in batches] == [tuple(RECORDS), (NoOpRecord(),)]
    assert [(b.base_offset, b.epoch) for b in batches] == [(5, 2), (7, 3)]


def test_many_and_large_records_take_multi_byte_varints() -> None:
    records = [TopicRecord(name="t" * 300, topic_id=uuid.UUID(int=i)) for i in range(200)]
    data = encode_batch(0, 1, 10**12, encode_frames(records))
    [batch] = parse_batches(data)
    assert batch.crc_ok and [r.offset_delta for r in batch.records] == list(range(200))
    assert list(next(iter_batches(data)).records) == records


@given(st.integers(16 * 8, len(BATCH) * 8 - 1))  # the magic, the CRC and what it covers
def test_any_flipped_bit_from_the_magic_on_is_caught(bit: int) -> None:
    damaged = bytearray(BATCH)
    damaged[bit // 8] ^= 1 << (bit % 8)
    with pytest.raises(CorruptRecordException):
        check_batch(bytes(damaged), 0)


@given(st.integers(8 * 8, 12 * 8 - 1))
def test_any_flipped_length_bit_is_caught(bit: int) -> None:
    damaged = bytearray(BATCH)
    damaged[bit // 8] ^= 1 << (bit % 8)
    with pytest.raises(CorruptRecordException):
        check_batch(bytes(damaged) + bytes(4096), 0)


@given(st.integers(0, len(BATCH) - 1))
def test_any_torn_batch_is_caught(cut: int) -> None:
    with pytest.raises(CorruptRecordException, match="torn batch"):
        check_batch(BATCH[:cut], 0)


def test_a_batch_of_the_earlier_format_is_refused_not_taken_for_damage() -> None:
    frame = encode_record(NoOpRecord())
    body = bytes([len(frame)]) + frame
    head = struct.pack(">qi", 0, 21 + len(body))
    rest = struct.pack(">biqi", 0, 1, 1000, 1)
    old = head + struct.pack(">I", crc32c(rest + body, value=crc32c(head))) + rest + body
    old += bytes(61 - len(old)) if len(old) < 61 else b""
    head = struct.pack(">qi", 0, len(old) - 12)
    rest = old[16:]
    old = head + struct.pack(">I", crc32c(rest, value=crc32c(head))) + rest
    with pytest.raises(MetadataParseException, match="magic 0"):
        check_batch(old, 0)


def test_empty_batches_are_refused() -> None:
    with pytest.raises(ValueError, match="at least one record"):
        encode_batch(0, 0, 0, [])
