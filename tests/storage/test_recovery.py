"""Reopening after faults: torn tails, flipped bits, damaged indexes, interrupted swaps."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from rackwise.storage.config import LogConfig
from rackwise.storage.log import PartitionLog
from tests.storage.helpers import LogHarness, batch, read_all

SEGMENT0 = "00000000000000000000.log"


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "rackwise.storage" and r.levelno >= logging.WARNING
    ]


def _six_batches(tmp_path: Path, config: LogConfig | None = None) -> tuple[LogHarness, list[int]]:
    """A log of six 2-record batches at epochs 0, 0, 1, 1, 2, 2; the batches' sizes."""
    h = LogHarness(tmp_path / "orders-0", config or LogConfig())
    log = h.open()
    for i in range(6):
        log.append_as_leader(batch(2, size=40), leader_epoch=i // 2)
    return h, [len(b) for _, b in read_all(log)]


def _flip(path: Path, position: int) -> None:
    data = bytearray(path.read_bytes())
    data[position] ^= 0x10
    path.write_bytes(bytes(data))


def test_a_torn_tail_is_cut_and_reported_in_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    h, sizes = _six_batches(tmp_path)
    segment = h.directory / SEGMENT0
    os.truncate(segment, sum(sizes) - 7)
    caplog.set_level(logging.INFO, "rackwise.storage")
    log = h.reopen(clean=False)
    assert log.log_end_offset == 10
    assert segment.stat().st_size == sum(sizes[:5])
    assert [o for o, _ in read_all(log)] == [0, 2, 4, 6, 8]
    assert _warnings(caplog) == [
        f"orders-0: recovered after an unclean shutdown: truncated {sizes[5] - 7} bytes "
        f"(1 batch) from segment {SEGMENT0} at offset 10 (a torn batch: {sizes[5] - 7} bytes "
        "remain); log end offset now 10"
    ]
    assert log.epochs.epoch_entries == [(0, 0), (1, 4), (2, 8)]


def test_a_bit_flip_in_the_last_batch_cuts_that_batch(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    h, sizes = _six_batches(tmp_path)
    _flip(h.directory / SEGMENT0, sum(sizes[:5]) + 70)
    caplog.set_level(logging.INFO, "rackwise.storage")
    log = h.reopen(clean=False)
    assert log.log_end_offset == 10
    (line,) = _warnings(caplog)
    assert line == (
        f"orders-0: recovered after an unclean shutdown: truncated {sizes[5]} bytes (1 batch) "
        f"from segment {SEGMENT0} at offset 10 (the batch at position {sum(sizes[:5])} fails "
        "its CRC32C); log end offset now 10"
    )
    assert log.append_as_leader(batch(1), leader_epoch=3).first_offset == 10


def test_a_bit_flip_in_a_middle_batch_after_the_recovery_point_cuts_the_rest(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    h, sizes = _six_batches(tmp_path, LogConfig(segment_bytes=3 * 130))
    log = h.log
    assert log is not None
    bases = [s.base_offset for s in log.segments]
    assert bases == [0, 4, 8] and log.recovery_point == 8
    # The recovery point says segment 8 is the first unflushed one: pretend it is 4.
    log.recovery_point = 4
    _flip(h.directory / "00000000000000000004.log", sizes[2] + 80)
    caplog.set_level(logging.INFO, "rackwise.storage")
    log = h.reopen(clean=False)
    assert log.log_end_offset == 6
    assert [s.base_offset for s in log.segments] == [0, 4]
    assert not (h.directory / "00000000000000000008.log").exists()
    assert [o for o, _ in read_all(log)] == [0, 2, 4]
    (line,) = _warnings(caplog)
    assert line == (
        f"orders-0: recovered after an unclean shutdown: truncated {sizes[3] + sizes[4] + sizes[5]}"
        f" bytes (3 batches) from segment 00000000000000000004.log at offset 6 (the batch at "
        f"position {sizes[2]} fails its CRC32C); deleted 1 later segment(s); log end offset "
        "now 6"
    )
    assert log.epochs.epoch_entries == [(0, 0), (1, 4)]


def test_flushed_segments_below_the_recovery_point_are_not_scanned(tmp_path: Path) -> None:
    h, _ = _six_batches(tmp_path, LogConfig(segment_bytes=3 * 130))
    _flip(h.directory / SEGMENT0, 70)  # damage Kafka would not look for either
    log = h.reopen(clean=False)
    assert log.log_end_offset == 12 and len(read_all(log)) == 6


def test_a_truncated_index_is_rebuilt(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    h, _ = _six_batches(tmp_path, LogConfig(index_interval_bytes=100))
    before = read_all(h.log)  # type: ignore[arg-type]
    assert h.log is not None
    h.log.flush()
    h.log.close()
    index = h.directory / "00000000000000000000.index"
    full = index.read_bytes()
    assert len(full) == 5 * 8
    os.truncate(index, 13)
    caplog.set_level(logging.INFO, "rackwise.storage")
    log = h.open(clean=True)
    assert read_all(log) == before
    log.flush()
    assert index.read_bytes() == full
    (line,) = _warnings(caplog)
    assert line == (
        f"orders-0: repaired at open: rebuilt the indexes of {SEGMENT0} (a missing or partial "
        "index file); log end offset now 12"
    )


def test_an_index_with_fewer_whole_entries_still_serves_reads(tmp_path: Path) -> None:
    h, _ = _six_batches(tmp_path, LogConfig(index_interval_bytes=100))
    assert h.log is not None
    before = read_all(h.log)
    h.log.close()
    index = h.directory / "00000000000000000000.index"
    os.truncate(index, 16)
    log = h.open(clean=True)
    assert read_all(log) == before and log.log_end_offset == 12


def test_an_index_pointing_past_the_segment_is_rebuilt(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    h, _ = _six_batches(tmp_path, LogConfig(index_interval_bytes=100))
    assert h.log is not None
    before = read_all(h.log)
    h.log.close()
    index = h.directory / "00000000000000000000.index"
    index.write_bytes(
        index.read_bytes()[:-8] + (11).to_bytes(4, "big") + (99_999).to_bytes(4, "big")
    )
    caplog.set_level(logging.INFO, "rackwise.storage")
    log = h.open(clean=True)
    assert read_all(log) == before
    (line,) = _warnings(caplog)
    assert line.startswith(f"orders-0: repaired at open: rebuilt the indexes of {SEGMENT0} (")


def test_an_interrupted_swap_is_finished(tmp_path: Path) -> None:
    h, _ = _six_batches(tmp_path, LogConfig(segment_bytes=3 * 130))
    assert h.log is not None
    before = read_all(h.log)
    h.log.close()
    d = h.directory
    # A cleaner rewrote segments 0 and 4 into one .swap segment at 0, then crashed before
    # deleting the old ones; a .cleaned file of a later attempt is left over too.
    merged = (d / SEGMENT0).read_bytes() + (d / "00000000000000000004.log").read_bytes()
    (d / (SEGMENT0 + ".swap")).write_bytes(merged)
    (d / "00000000000000000008.log.cleaned").write_bytes(b"partial")
    (d / "00000000000000000002.log.deleted").write_bytes(b"old")
    log = h.open(clean=True)
    assert [s.base_offset for s in log.segments] == [0, 8]
    assert read_all(log) == before
    names = sorted(p.name for p in d.iterdir())
    assert not [n for n in names if n.endswith((".swap", ".cleaned", ".deleted"))]
    assert "00000000000000000004.log" not in names


def test_a_log_ending_before_its_start_offset_is_emptied(tmp_path: Path) -> None:
    h, _ = _six_batches(tmp_path)
    assert h.log is not None
    h.log.close()
    log = PartitionLog.open(
        h.directory,
        LogConfig(),
        topic_id=None,
        recovery_point=0,
        log_start_offset=50,
        had_clean_shutdown=True,
        files=h.files,
        clock=h.clock,
    )
    assert (log.log_start_offset, log.log_end_offset) == (50, 50)
    assert [s.base_offset for s in log.segments] == [50]
    assert log.epochs.epoch_entries == []


def test_an_empty_directory_starts_at_the_log_start_offset(tmp_path: Path) -> None:
    h = LogHarness(tmp_path / "t-7")
    h.directory.mkdir()
    log = PartitionLog.open(
        h.directory,
        LogConfig(),
        topic_id=None,
        recovery_point=0,
        log_start_offset=30,
        had_clean_shutdown=False,
        files=h.files,
        clock=h.clock,
    )
    assert log.log_end_offset == 30
    assert (h.directory / "00000000000000000030.log").exists()
    assert (h.directory / "00000000000000000030.index").exists()
    assert (h.directory / "00000000000000000030.timeindex").exists()
