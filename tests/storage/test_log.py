"""A partition's log: appends as leader and follower, reads, rolls, truncation, reopening."""

from __future__ import annotations

import struct
import uuid
from pathlib import Path

import pytest
from crc32c import crc32c
from kafka.record.default_records import DefaultRecordBatch

from rackwise.storage.batch import LOG_APPEND_TIME, parse_header
from rackwise.storage.config import LogConfig
from rackwise.storage.errors import (
    CorruptRecordException,
    InconsistentTopicIdException,
    InvalidRecordException,
    InvalidTimestampException,
    OffsetOutOfRangeException,
    OffsetsOutOfOrderException,
    OutOfOrderSequenceException,
    RecordTooLargeException,
    UnexpectedAppendOffsetException,
)
from rackwise.storage.files import FileCache, FileRegion, RegionUnavailable
from rackwise.storage.log import PartitionLog
from tests.storage.helpers import START_MS, LogHarness, batch, read_all


@pytest.fixture
def h(tmp_path: Path) -> LogHarness:
    harness = LogHarness(tmp_path / "orders-0")
    harness.open()
    return harness


def test_leader_appends_get_consecutive_offsets_and_the_leader_epoch(h: LogHarness) -> None:
    log = h.log
    assert log is not None
    first = log.append_as_leader(batch(3), leader_epoch=5)
    second = log.append_as_leader(batch(2), leader_epoch=5)
    assert (first.first_offset, first.last_offset, first.num_messages) == (0, 2, 3)
    assert (second.first_offset, second.last_offset) == (3, 4)
    assert log.log_end_offset == 5
    assert log.epochs.epoch_entries == [(5, 0)]
    batches = read_all(log)
    assert [offset for offset, _ in batches] == [0, 3]
    for offset, data in batches:
        header = parse_header(data)
        assert header.partition_leader_epoch == 5 and header.base_offset == offset
        assert DefaultRecordBatch(data).validate_crc()


def test_stored_bytes_are_the_producers_except_offset_and_epoch(h: LogHarness) -> None:
    sent = batch(4, size=33)
    assert h.log is not None
    h.log.append_as_leader(sent, leader_epoch=2)
    h.log.append_as_leader(sent, leader_epoch=2)
    stored = (h.directory / "00000000000000000000.log").read_bytes()
    second = stored[len(sent) :]
    assert second[:8] == struct.pack(">q", 4)
    assert second[12:16] == struct.pack(">i", 2)
    assert second[8:12] == sent[8:12] and second[16:] == sent[16:]


@pytest.mark.parametrize("timestamp_type", ["CreateTime", LOG_APPEND_TIME])
def test_a_writable_view_is_stamped_in_place_and_anything_else_is_left_alone(
    tmp_path: Path, timestamp_type: str
) -> None:
    h = LogHarness(tmp_path / "t-0", LogConfig(message_timestamp_type=timestamp_type))
    log = h.open()
    sent = batch(4, size=33)
    log.append_as_leader(sent, leader_epoch=3)  # bytes: the caller's are untouched
    frame = bytearray(b"head" + sent + b"tail")  # a request frame with the batch inside
    records = memoryview(frame)[4 : 4 + len(sent)]
    log.append_as_leader(records.toreadonly(), leader_epoch=3)
    assert frame == b"head" + sent + b"tail"
    log.append_as_leader(records, leader_epoch=3)
    stored = (h.directory / "00000000000000000000.log").read_bytes()
    assert stored[: len(sent)] != sent  # stamped: offset 0, epoch 3
    assert frame[4 : 4 + len(sent)] == stored[2 * len(sent) :]  # stamped where it arrived
    assert frame[:4] == b"head" and frame[-4:] == b"tail"
    third = parse_header(stored[2 * len(sent) :])
    assert (third.base_offset, third.partition_leader_epoch) == (8, 3)
    assert DefaultRecordBatch(stored[2 * len(sent) :]).validate_crc()


def test_log_append_time_stamps_the_batch(tmp_path: Path) -> None:
    h = LogHarness(tmp_path / "t-0", LogConfig(message_timestamp_type=LOG_APPEND_TIME))
    log = h.open()
    h.clock.now_ms = START_MS + 99
    info = log.append_as_leader(batch(2, timestamp_ms=START_MS - 50_000), leader_epoch=0)
    assert info.log_append_time_ms == START_MS + 99 == info.max_timestamp
    ((_, data),) = read_all(log)
    stored = DefaultRecordBatch(data)
    assert stored.validate_crc() and stored.timestamp_type == 1
    assert [r.timestamp for r in stored] == [START_MS + 99] * 2


def test_a_refused_batch_leaves_the_files_unchanged(tmp_path: Path) -> None:
    h = LogHarness(
        tmp_path / "orders-0",
        LogConfig(max_message_bytes=500, message_timestamp_before_max_ms=60_000),
    )
    log = h.open()
    log.append_as_leader(batch(1, producer_id=3, producer_epoch=0, base_sequence=0), leader_epoch=0)
    segment = h.directory / "00000000000000000000.log"
    size = segment.stat().st_size
    flipped = bytearray(batch(1))
    flipped[-1] ^= 0xFF
    magic_one = bytearray(batch(1))
    magic_one[16] = 1
    refused = [
        (bytes(flipped), CorruptRecordException, 2),
        (batch(1) + batch(1), InvalidRecordException, 87),
        (bytes(magic_one), InvalidRecordException, 87),
        (batch(1, size=600), RecordTooLargeException, 10),
        (batch(1, timestamp_ms=START_MS - 61_000), InvalidTimestampException, 32),
        (
            batch(1, producer_id=3, producer_epoch=0, base_sequence=5),
            OutOfOrderSequenceException,
            45,
        ),
    ]
    for data, error, code in refused:
        with pytest.raises(error) as caught:
            log.append_as_leader(data, leader_epoch=0)
        assert caught.value.error_code == code  # type: ignore[attr-defined]
        assert segment.stat().st_size == size and log.log_end_offset == 1
    assert log.epochs.epoch_entries == [(0, 0)]


def test_reads_return_whole_batches_below_max_offset(h: LogHarness) -> None:
    log = h.log
    assert log is not None
    sizes = [len(batch(n, size=50)) for n in (2, 2, 2)]
    for _ in range(3):
        log.append_as_leader(batch(2, size=50), leader_epoch=0)
    whole = log.read(1, max_bytes=10_000, max_offset=6, min_one_batch=False)
    assert whole.first_offset == 0 and len(whole.records) == sum(sizes)
    assert (
        log.read(2, max_bytes=10_000, max_offset=4, min_one_batch=False).records
        == (whole.records[sizes[0] : sizes[0] + sizes[1]])
    )
    assert log.read(4, max_bytes=10_000, max_offset=4, min_one_batch=False).records == b""
    assert (
        log.read(0, max_bytes=sizes[0] + 5, max_offset=6, min_one_batch=False).records
        == (whole.records[: sizes[0]])
    )
    assert log.read(0, max_bytes=10, max_offset=6, min_one_batch=False).records == b""
    one = log.read(0, max_bytes=10, max_offset=6, min_one_batch=True)
    assert one.records == whole.records[: sizes[0]]
    third = log.read(5, max_bytes=10_000, max_offset=6, min_one_batch=True)
    assert (third.first_offset, third.records) == (4, whole.records[sizes[0] + sizes[1] :])
    empty = log.read(6, max_bytes=100, max_offset=6, min_one_batch=True)
    assert (empty.records, empty.first_offset) == (b"", 6)
    with pytest.raises(OffsetOutOfRangeException, match="range 0 to 6") as caught:
        log.read(7, max_bytes=100, max_offset=6, min_one_batch=True)
    assert caught.value.error_code == 1


def test_clean_and_unclean_reopen_keep_every_batch(h: LogHarness) -> None:
    log = h.log
    assert log is not None
    h.config = LogConfig(segment_bytes=400)
    log.update_config(h.config)
    for i in range(12):
        log.append_as_leader(batch(2, size=40), leader_epoch=i // 4)
    before = read_all(log)
    assert len(log.segments) > 2
    reopened = h.reopen(clean=True)
    assert read_all(reopened) == before and reopened.log_end_offset == 24
    assert reopened.epochs.epoch_entries == [(0, 0), (1, 8), (2, 16)]
    reopened = h.reopen(clean=False)
    assert read_all(reopened) == before and reopened.log_end_offset == 24
    assert reopened.append_as_leader(batch(1), leader_epoch=3).first_offset == 24


def test_segments_roll_on_size_age_and_offset_overflow(tmp_path: Path) -> None:
    h = LogHarness(tmp_path / "t-0", LogConfig(segment_bytes=250, segment_ms=60_000))
    log = h.open()
    one = len(batch(1, size=50))
    log.append_as_leader(batch(1, size=50), leader_epoch=0)
    log.append_as_leader(batch(1, size=50), leader_epoch=0)
    assert [s.base_offset for s in log.segments] == [0]
    log.append_as_leader(batch(1, size=50), leader_epoch=0)
    assert 3 * one > 250 and [s.base_offset for s in log.segments] == [0, 2]
    h.clock.now_ms += 60_001
    log.append_as_leader(batch(1, size=5, timestamp_ms=h.clock.now_ms), leader_epoch=0)
    assert [s.base_offset for s in log.segments] == [0, 2, 3]
    far = batch(1, base_offset=2**31 + 10, partition_leader_epoch=0)
    log.append_as_follower(far)
    assert log.segments[-1].base_offset == 2**31 + 10
    assert log.log_end_offset == 2**31 + 11


def test_a_full_index_rolls_the_segment(tmp_path: Path) -> None:
    h = LogHarness(tmp_path / "t-0", LogConfig(segment_index_bytes=24, index_interval_bytes=1))
    log = h.open()
    for _ in range(8):
        log.append_as_leader(batch(1), leader_epoch=0)
    assert len(log.segments) > 1
    assert all(s.offset_index.entries <= 3 for s in log.segments)
    assert [o for o, _ in read_all(log)] == list(range(8))


def test_index_files_hold_kafkas_entries(tmp_path: Path) -> None:
    h = LogHarness(tmp_path / "t-0", LogConfig(index_interval_bytes=100))
    log = h.open()
    size = len(batch(1, size=60))
    for _ in range(4):
        log.append_as_leader(batch(1, size=60, timestamp_ms=START_MS), leader_epoch=0)
    log.flush()
    # An entry is added by the append that starts after more than 100 bytes since the last.
    assert size > 100
    index = (h.directory / "00000000000000000000.index").read_bytes()
    assert index == struct.pack(">ii", 1, size) + struct.pack(">ii", 2, 2 * size) + struct.pack(
        ">ii", 3, 3 * size
    )
    time_index = (h.directory / "00000000000000000000.timeindex").read_bytes()
    assert time_index == struct.pack(">qi", START_MS, 0)


def test_follower_appends_keep_offsets_and_epochs(h: LogHarness) -> None:
    log = h.log
    assert log is not None
    log.append_as_follower(batch(3, base_offset=0, partition_leader_epoch=4))
    log.append_as_follower(batch(1, base_offset=5, partition_leader_epoch=6))
    assert log.log_end_offset == 6
    assert log.epochs.epoch_entries == [(4, 0), (6, 5)]
    with pytest.raises(UnexpectedAppendOffsetException, match="First offset 5 is less than"):
        log.append_as_follower(batch(1, base_offset=5, partition_leader_epoch=6))
    with pytest.raises(OffsetsOutOfOrderException):
        log.append_as_follower(
            batch(2, base_offset=10, partition_leader_epoch=6)
            + batch(1, base_offset=11, partition_leader_epoch=6)
        )
    torn = batch(1, base_offset=6, partition_leader_epoch=6)
    info = log.append_as_follower(torn + torn[:30])
    assert info.valid_bytes == len(torn) and log.log_end_offset == 7
    assert log.append_as_follower(b"").num_messages == 0


def test_truncation_removes_offsets_and_their_epochs(h: LogHarness) -> None:
    log = h.log
    assert log is not None
    h.config = LogConfig(segment_bytes=300)
    log.update_config(h.config)
    for i in range(10):
        log.append_as_leader(batch(1, size=60), leader_epoch=i // 5)
    log.update_high_watermark(8)
    log.truncate_to(6)
    assert log.log_end_offset == 6 and log.high_watermark == 6
    assert [o for o, _ in read_all(log)] == list(range(6))
    assert log.epochs.epoch_entries == [(0, 0), (1, 5)]
    assert log.append_as_leader(batch(1), leader_epoch=2).first_offset == 6
    log.truncate_fully_and_start_at(100)
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (100, 100, 100)
    assert [s.base_offset for s in log.segments] == [100]
    assert log.epochs.epoch_entries == []
    assert log.append_as_leader(batch(1), leader_epoch=3).first_offset == 100
    reopened = h.reopen(clean=True)
    assert reopened.log_start_offset == 100 and reopened.log_end_offset == 101


def test_high_watermark_is_clamped_to_the_log(h: LogHarness) -> None:
    log = h.log
    assert log is not None
    log.append_as_leader(batch(3), leader_epoch=0)
    log.update_high_watermark(10)
    assert log.high_watermark == 3
    log.update_high_watermark(-5)
    assert log.high_watermark == 0


def test_a_retried_idempotent_batch_is_answered_as_the_original(h: LogHarness) -> None:
    log = h.log
    assert log is not None
    log.append_as_leader(batch(1), leader_epoch=0)
    sent = batch(3, producer_id=9, producer_epoch=0, base_sequence=0)
    first = log.append_as_leader(sent, leader_epoch=0)
    size = log.size_bytes()
    again = log.append_as_leader(sent, leader_epoch=0)
    assert again.duplicate and (again.first_offset, again.last_offset) == (1, 3)
    assert (first.first_offset, first.last_offset) == (1, 3) and log.size_bytes() == size
    with pytest.raises(OutOfOrderSequenceException):
        log.append_as_leader(
            batch(1, producer_id=9, producer_epoch=0, base_sequence=7), leader_epoch=0
        )
    reopened = h.reopen(clean=False)
    assert reopened.append_as_leader(sent, leader_epoch=0).duplicate


def test_flush_messages_moves_the_recovery_point(tmp_path: Path) -> None:
    h = LogHarness(tmp_path / "t-0", LogConfig(flush_messages=4))
    log = h.open()
    log.append_as_leader(batch(3), leader_epoch=0)
    assert log.recovery_point == 0
    log.append_as_leader(batch(1), leader_epoch=0)
    assert log.recovery_point == 4
    log.append_as_leader(batch(1), leader_epoch=0)
    log.flush()
    assert log.recovery_point == 5


def test_offsets_by_timestamp(h: LogHarness) -> None:
    log = h.log
    assert log is not None
    for i in range(5):
        stamps = [START_MS + 10 * i, START_MS + 10 * i + 5]
        records = [(b"k", b"v", ()), (b"k", b"w", ())]
        from rackwise.storage.batch import build_batch

        log.append_as_leader(
            build_batch(records, timestamp_ms=stamps[0], record_timestamps=stamps),
            leader_epoch=i,
        )
    assert log.offset_for_timestamp(START_MS + 12) == (3, START_MS + 15, 1)
    assert log.offset_for_timestamp(START_MS) == (0, START_MS, 0)
    assert log.offset_for_timestamp(START_MS + 1_000) is None
    assert log.max_timestamp_offset() == (9, START_MS + 45, 4)


def test_partition_metadata_carries_the_topic_id(tmp_path: Path) -> None:
    topic_id = uuid.UUID("0f5a6a5e-1b2c-4d3e-8f90-a1b2c3d4e5f6")
    directory = tmp_path / "orders-3"

    def open_with(tid: uuid.UUID) -> PartitionLog:
        return PartitionLog.open(
            directory,
            LogConfig(),
            topic_id=tid,
            recovery_point=0,
            log_start_offset=0,
            had_clean_shutdown=True,
            files=FileCache(4),
            clock=lambda: START_MS,
        )

    open_with(topic_id).close()
    assert (
        directory / "partition.metadata"
    ).read_bytes() == b"version: 0\ntopic_id: D1pqXhssTT6PkKGyw9Tl9g"
    other = uuid.UUID(int=5)
    with pytest.raises(InconsistentTopicIdException, match="D1pqXhssTT6PkKGyw9Tl9g") as caught:
        open_with(other)
    assert "AAAAAAAAAAAAAAAAAAAABQ" in str(caught.value) and caught.value.error_code == 103


def test_a_crc_is_what_kafka_computes(h: LogHarness) -> None:
    assert h.log is not None
    h.log.append_as_leader(batch(2), leader_epoch=0)
    ((_, data),) = read_all(h.log)
    assert struct.unpack_from(">I", data, 17)[0] == crc32c(data[21:])


def test_zero_copy_reads_name_the_bytes_a_copying_read_returns(h: LogHarness) -> None:
    # Large and small batches, more of them than a zero-copy read walks header by header:
    # every read as a region or bytes holds exactly the bytes of the copying read.
    log = h.log
    assert log is not None
    for n, size in [(3, 2000), (1, 10), (2, 5000), *[(1, 30)] * 20, (4, 1500), (1, 9000)]:
        log.append_as_leader(batch(n, size=size), leader_epoch=0)
    end = log.log_end_offset
    regions = 0
    for offset in range(end):
        for max_bytes in (10, 100, 5_000, 20_000, 1 << 20):
            for max_offset in (offset + 1, offset + 5, end):
                for min_one in (True, False):
                    args = {"max_bytes": max_bytes, "max_offset": max_offset}
                    copied = log.read(offset, min_one_batch=min_one, **args)
                    zero = log.read(offset, min_one_batch=min_one, zero_copy=True, **args)
                    assert zero.first_offset == copied.first_offset
                    assert bytes(zero.records) == copied.records
                    if isinstance(zero.records, FileRegion):
                        regions += 1
                        assert len(zero.records) >= 4096
    assert regions > 100


def test_a_region_sends_its_bytes_and_fails_clearly_when_its_file_is_cut(
    h: LogHarness, tmp_path: Path
) -> None:
    import socket

    log = h.log
    assert log is not None
    log.append_as_leader(batch(8, size=1000), leader_epoch=0)
    log.append_as_leader(batch(8, size=1000), leader_epoch=0)
    got = log.read(0, max_bytes=1 << 20, max_offset=16, min_one_batch=True, zero_copy=True)
    region = got.records
    assert isinstance(region, FileRegion)
    expected = log.read(0, max_bytes=1 << 20, max_offset=16, min_one_batch=True).records
    ours, theirs = socket.socketpair()
    with ours, theirs:
        assert region.send(ours.fileno()) == len(expected)
        received = b""
        while len(received) < len(expected):
            received += theirs.recv(1 << 20)
        assert received == expected
        assert region.read() == expected
        assert region.split(100)[1].read() == expected[100:]
        log.truncate_to(8)  # the second batch is cut from the file
        with pytest.raises(RegionUnavailable, match="ends before"):
            region.send(ours.fileno())
        with pytest.raises(RegionUnavailable, match="ends inside"):
            region.read()
