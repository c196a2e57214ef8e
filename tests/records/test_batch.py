"""Record batches: their layout, and damage anywhere in them caught by the CRC32C."""

from __future__ import annotations

import struct
import uuid

import pytest
from crc32c import crc32c
from hypothesis import given
from hypothesis import strategies as st

from rackwise.records import (
    CorruptRecordException,
    NoOpRecord,
    TopicRecord,
    check_batch,
    encode_batch,
    encode_frames,
    encode_record,
    iter_batches,
)
from rackwise.records.batch import HEADER_SIZE

RECORDS = [TopicRecord(name="foo", topic_id=uuid.UUID(int=1)), NoOpRecord()]
BATCH = encode_batch(5, 2, 1000, encode_frames(RECORDS))


def test_layout_written_out_by_hand() -> None:
    frames = [encode_record(r) for r in RECORDS]
    body = bytes([len(frames[0])]) + frames[0] + bytes([len(frames[1])]) + frames[1]
    length = HEADER_SIZE - 12 + len(body)
    head = struct.pack(">qi", 5, length)
    rest = struct.pack(">biqi", 0, 2, 1000, 2)  # magic, epoch, append time, record count
    crc = crc32c(rest + body, value=crc32c(head))
    assert head + struct.pack(">I", crc) + rest + body == BATCH
    header = check_batch(BATCH, 0)
    assert (header.base_offset, header.epoch, header.append_time_ms) == (5, 2, 1000)
    assert (header.record_count, header.size, header.last_offset) == (2, len(BATCH), 6)


def test_batches_decode_back() -> None:
    second = encode_batch(7, 3, 2000, encode_frames([NoOpRecord()]))
    batches = list(iter_batches(BATCH + second))
    assert [b.records for b in batches] == [tuple(RECORDS), (NoOpRecord(),)]
    assert [(b.base_offset, b.epoch) for b in batches] == [(5, 2), (7, 3)]


@given(st.integers(0, len(BATCH) * 8 - 1))
def test_any_flipped_bit_is_caught(bit: int) -> None:
    damaged = bytearray(BATCH)
    damaged[bit // 8] ^= 1 << (bit % 8)
    with pytest.raises(CorruptRecordException):
        check_batch(bytes(damaged), 0)


@given(st.integers(0, len(BATCH) - 1))
def test_any_torn_batch_is_caught(cut: int) -> None:
    with pytest.raises(CorruptRecordException, match="torn batch"):
        check_batch(BATCH[:cut], 0)


def test_empty_batches_are_refused() -> None:
    with pytest.raises(ValueError, match="at least one record"):
        encode_batch(0, 0, 0, [])
