"""Retention by time and size, DeleteRecords, and the high-watermark bound."""

from __future__ import annotations

from pathlib import Path

import pytest

from rackwise.storage.config import LogConfig
from rackwise.storage.errors import OffsetOutOfRangeException
from rackwise.storage.log import PartitionLog
from tests.storage.helpers import START_MS, LogHarness, batch, read_all

HOUR = 3_600_000


def _log(tmp_path: Path, **config: object) -> tuple[LogHarness, PartitionLog]:
    """A log of 3 segments of 2 one-record batches each, an hour apart, plus an active
    segment holding one more batch (offsets 0-6)."""
    h = LogHarness(tmp_path / "t-0", LogConfig(segment_bytes=2 * 80 + 10, **config))  # type: ignore[arg-type]
    log = h.open()
    for i in range(7):
        h.clock.now_ms = START_MS + (i // 2) * HOUR
        log.append_as_leader(batch(1, size=10, timestamp_ms=h.clock.now_ms), leader_epoch=i // 2)
    assert [s.base_offset for s in log.segments] == [0, 2, 4, 6]
    return h, log


def test_retention_ms_deletes_old_segments_below_the_high_watermark(tmp_path: Path) -> None:
    h, log = _log(tmp_path, retention_ms=int(1.5 * HOUR))
    now = START_MS + 3 * HOUR
    assert log.delete_old_segments(now) == 0  # high watermark 0: nothing may go
    log.update_high_watermark(3)
    assert log.delete_old_segments(now) == 1  # segment 2 ends at 4 > 3
    assert log.log_start_offset == 2 and [s.base_offset for s in log.segments] == [2, 4, 6]
    assert not (h.directory / "00000000000000000000.log").exists()
    assert not (h.directory / "00000000000000000000.index").exists()
    log.update_high_watermark(7)
    assert log.delete_old_segments(now) == 1
    assert log.log_start_offset == 4
    assert log.epochs.epoch_entries == [(2, 4), (3, 6)]
    with pytest.raises(OffsetOutOfRangeException):
        log.read(3, max_bytes=100, max_offset=7, min_one_batch=True)
    reopened = h.reopen(clean=True)
    assert reopened.log_start_offset == 4 and [o for o, _ in read_all(reopened)] == [4, 5, 6]


def test_when_every_segment_expires_the_log_rolls_and_keeps_an_empty_one(tmp_path: Path) -> None:
    _, log = _log(tmp_path, retention_ms=HOUR)
    log.update_high_watermark(7)
    assert log.delete_old_segments(START_MS + 10 * HOUR) == 4
    assert (log.log_start_offset, log.log_end_offset) == (7, 7)
    assert [s.base_offset for s in log.segments] == [7]
    assert log.append_as_leader(batch(1), leader_epoch=9).first_offset == 7


def test_retention_bytes_keeps_the_log_at_or_above_the_limit(tmp_path: Path) -> None:
    _, log = _log(tmp_path, retention_bytes=2 * 80 + 2 * 80 + 1)
    log.update_high_watermark(7)
    total = log.size_bytes()
    deleted = log.delete_old_segments(START_MS)
    assert deleted == 1
    assert log.size_bytes() >= 2 * 80 + 2 * 80 + 1 > log.size_bytes() - log.segments[0].size
    assert total - log.size_bytes() == 2 * len(batch(1, size=10))


def test_delete_records_moves_the_log_start_offset_then_retention_drops_segments(
    tmp_path: Path,
) -> None:
    h, log = _log(tmp_path, cleanup_policy=frozenset({"compact"}))
    log.update_high_watermark(5)
    with pytest.raises(OffsetOutOfRangeException, match="larger than the high watermark 5"):
        log.maybe_increment_log_start_offset(6)
    log.maybe_increment_log_start_offset(5)
    assert log.log_start_offset == 5 and len(log.segments) == 4
    assert log.read(5, max_bytes=100, max_offset=5, min_one_batch=True).records == b""
    with pytest.raises(OffsetOutOfRangeException):
        log.read(4, max_bytes=100, max_offset=7, min_one_batch=True)
    assert log.delete_old_segments(START_MS + 100 * HOUR) == 2  # compact: only the start rule
    assert [s.base_offset for s in log.segments] == [4, 6]
    assert log.log_start_offset == 5
    reopened = h.reopen(clean=True)
    assert reopened.log_start_offset == 5
