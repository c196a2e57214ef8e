"""The file log against damage and crashes, on real files: torn tails, flipped bits, corrupt
snapshots, a crash between a snapshot's write and its rename, lost segments."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from rackwise.image import replay
from rackwise.metalog import (
    FileMetadataLog,
    MetadataLogError,
    OffsetOutOfRangeException,
    SnapshotId,
    load_image,
)
from rackwise.metalog.segment import segment_name
from rackwise.records import NoOpRecord, SnapshotFooterRecord, encode_records
from tests.metalog.helpers import broker, topic

BATCHES = [[broker(0), broker(1), broker(2)], topic("a", 3), topic("b", 2), topic("c", 4)]


def _write(directory: Path, batches: list[list[Any]], **options: Any) -> list[int]:
    with FileMetadataLog(directory, **options) as log:
        return [log.append(batch, epoch=1) for batch in batches]


def _records(log: FileMetadataLog) -> list[Any]:
    return [r for batch in log.read_from(log.start_offset) for r in batch.records]


def _segments(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.glob("*.log"))


def _batch_starts(path: Path) -> list[int]:
    from rackwise.records import check_batch

    data, pos, starts = path.read_bytes(), 0, []
    while pos < len(data):
        starts.append(pos)
        pos += check_batch(data, pos).size
    return starts


def test_reopen_keeps_everything(tmp_path: Path) -> None:
    assert _write(tmp_path, BATCHES) == [2, 6, 9, 14]
    with FileMetadataLog(tmp_path) as log:
        assert log.recovery_events == ()
        assert _records(log) == [r for batch in BATCHES for r in batch]
        assert (log.end_offset, log.latest_epoch) == (15, 1)
        assert log.append([NoOpRecord()], epoch=2) == 15


def test_a_torn_tail_is_reported_and_truncated(tmp_path: Path) -> None:
    _write(tmp_path, BATCHES)
    segment = tmp_path / segment_name(0)
    last = _batch_starts(segment)[-1]
    os.truncate(segment, last + 70)  # the last batch half written
    with FileMetadataLog(tmp_path) as log:
        (event,) = log.recovery_events
        assert event.action == "truncated" and event.offset == 10
        assert event.reason.startswith("torn batch: it claims")
        assert str(event) == f"truncated {segment} at offset 10: {event.reason}"
        assert _records(log) == [r for batch in BATCHES[:3] for r in batch]
        assert log.append([NoOpRecord()], epoch=1) == 10
    assert segment.stat().st_size > last  # the new batch went where the torn one was


def test_a_flipped_bit_drops_its_batch_and_everything_after(tmp_path: Path) -> None:
    _write(tmp_path, BATCHES)
    segment = tmp_path / segment_name(0)
    second = _batch_starts(segment)[1]
    data = bytearray(segment.read_bytes())
    data[second + 50] ^= 0x10
    segment.write_bytes(bytes(data))
    with FileMetadataLog(tmp_path) as log:
        (event,) = log.recovery_events
        assert (event.action, event.offset) == ("truncated", 3)
        assert event.reason.startswith("CRC32C mismatch: stored 0x")
        assert _records(log) == BATCHES[0]
        assert segment.stat().st_size == second


def test_damage_in_an_earlier_segment_deletes_the_later_ones(tmp_path: Path) -> None:
    _write(tmp_path, BATCHES, segment_bytes=200)
    names = _segments(tmp_path)
    assert len(names) == 4
    second = tmp_path / names[1]
    data = bytearray(second.read_bytes())
    data[-1] ^= 0x01
    second.write_bytes(bytes(data))
    with FileMetadataLog(tmp_path, segment_bytes=200) as log:
        actions = [(e.action, Path(e.path).name, e.offset) for e in log.recovery_events]
        assert actions == [
            ("truncated", names[1], 3),
            ("deleted", names[2], 7),
            ("deleted", names[3], 10),
        ]
        assert _records(log) == BATCHES[0]
    assert _segments(tmp_path) == names[:2]


def _snapshot_history(directory: Path) -> tuple[list[Any], list[SnapshotId]]:
    """Two snapshots, with records before, between and after them."""
    records: list[Any] = []
    ids = []
    with FileMetadataLog(directory, segment_bytes=300) as log:
        for i, batch in enumerate([*BATCHES, topic("d", 2), topic("e", 1)]):
            log.append(batch, epoch=1)
            records.extend(batch)
            if i in (2, 4):
                ids.append(log.write_snapshot(replay(records).to_records(), log.end_offset))
    return records, ids


def test_a_corrupt_newest_snapshot_falls_back_to_the_older_one(tmp_path: Path) -> None:
    records, (older, newer) = _snapshot_history(tmp_path)
    newest = tmp_path / newer.file_name()
    data = bytearray(newest.read_bytes())
    data[len(data) // 2] ^= 0xFF
    newest.write_bytes(bytes(data))
    with FileMetadataLog(tmp_path, segment_bytes=300) as log:
        (event,) = log.recovery_events
        assert (event.action, Path(event.path).name) == ("set aside", newer.file_name())
        assert "CRC32C mismatch" in event.reason
        assert log.snapshot_ids() == [older]
        loaded = load_image(log)
        assert loaded.snapshot_id == older
        assert loaded.image == replay(records)
    assert (tmp_path / (newer.file_name() + ".corrupt")).exists()


@pytest.mark.parametrize(
    ("cut", "reason"),
    [
        (1, "torn batch"),
        (len(encode_records(0, 0, 0, [SnapshotFooterRecord()])), "no snapshot footer"),
    ],
)
def test_a_truncated_snapshot_is_not_a_snapshot(tmp_path: Path, cut: int, reason: str) -> None:
    records, (_, newer) = _snapshot_history(tmp_path)
    newest = tmp_path / newer.file_name()
    os.truncate(newest, newest.stat().st_size - cut)
    with FileMetadataLog(tmp_path, segment_bytes=300) as log:
        assert reason in log.recovery_events[0].reason
        assert load_image(log).image == replay(records)


def test_a_crash_between_write_and_rename_leaves_the_old_snapshot(tmp_path: Path) -> None:
    records, (older, newer) = _snapshot_history(tmp_path)
    newest = tmp_path / newer.file_name()
    part = newest.with_name(newest.name + ".part")
    newest.rename(part)  # as if the process died before os.replace
    with FileMetadataLog(tmp_path, segment_bytes=300) as log:
        (event,) = log.recovery_events
        assert (event.action, Path(event.path).name) == ("deleted", part.name)
        assert log.snapshot_ids() == [older]
        assert load_image(log).image == replay(records)
    assert not part.exists()


def test_segments_before_the_older_kept_snapshot_are_deleted(tmp_path: Path) -> None:
    records, (older, _) = _snapshot_history(tmp_path)
    with FileMetadataLog(tmp_path, segment_bytes=300) as log:
        assert 0 < log.start_offset <= older.end_offset
        assert min(int(n[:20]) for n in _segments(tmp_path)) == log.start_offset
        with pytest.raises(OffsetOutOfRangeException):
            log.read_from(0)
        assert load_image(log).image == replay(records)


def test_a_log_that_lost_its_start_without_a_snapshot_refuses_to_open(tmp_path: Path) -> None:
    _write(tmp_path, BATCHES, segment_bytes=200)
    (tmp_path / segment_name(0)).unlink()
    with pytest.raises(MetadataLogError, match="starts at offset 3 and no valid snapshot"):
        FileMetadataLog(tmp_path, segment_bytes=200)


def test_a_log_behind_its_snapshot_restarts_at_the_snapshot(tmp_path: Path) -> None:
    records, (_, newer) = _snapshot_history(tmp_path)
    for name in _segments(tmp_path)[1:]:
        (tmp_path / name).unlink()  # the records after the first kept segment are gone
    with FileMetadataLog(tmp_path, segment_bytes=300) as log:
        assert [e.action for e in log.recovery_events][-1] == "deleted"
        assert log.start_offset == log.end_offset == newer.end_offset
        assert load_image(log).image == replay(records[: newer.end_offset])


def test_one_process_at_a_time(tmp_path: Path) -> None:
    with (
        FileMetadataLog(tmp_path),
        pytest.raises(MetadataLogError, match="in use by another process"),
    ):
        FileMetadataLog(tmp_path)
    FileMetadataLog(tmp_path).close()  # released on close


def test_readers_see_a_batch_only_after_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = FileMetadataLog(tmp_path)
    log.append([NoOpRecord()], epoch=1)  # the epoch's start goes to the epoch checkpoint first
    seen_at_fsync: list[int] = []
    real_fsync = os.fsync

    def watching_fsync(fd: int) -> None:
        seen_at_fsync.append(log.end_offset)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", watching_fsync)
    assert log.append_batches([[NoOpRecord()], [NoOpRecord(), NoOpRecord()]], epoch=1) == [1, 3]
    assert seen_at_fsync == [1]  # one fsync for both batches, before either is visible
    assert log.end_offset == 4
    log.close()


def test_a_failed_fsync_stops_the_log_until_reopened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = FileMetadataLog(tmp_path)
    log.append([NoOpRecord()], epoch=1)

    def failing_fsync(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(MetadataLogError, match="write failed"):
        log.append([NoOpRecord()], epoch=1)
    monkeypatch.undo()
    with pytest.raises(MetadataLogError, match=r"failed a write .* reopen it"):
        log.append([NoOpRecord()], epoch=1)
    assert log.end_offset == 1  # the unacknowledged batch is not visible
    log.close()
    with FileMetadataLog(tmp_path) as reopened:
        assert reopened.end_offset == 2  # it did reach the file: the disk kept it after all


def test_read_only_logs_repair_nothing_and_refuse_writes(tmp_path: Path) -> None:
    records, (older, newer) = _snapshot_history(tmp_path)
    newest = tmp_path / newer.file_name()
    newest.write_bytes(b"damaged")
    before = sorted(p.name for p in tmp_path.iterdir())
    with FileMetadataLog(tmp_path, read_only=True) as log:
        assert [e.action for e in log.recovery_events] == ["ignored"]
        assert log.snapshot_ids() == [older]
        assert load_image(log).image == replay(records)
        with pytest.raises(MetadataLogError, match="open read-only"):
            log.append([NoOpRecord()], epoch=1)
        with pytest.raises(MetadataLogError, match="open read-only"):
            log.write_snapshot([], log.end_offset)
    assert sorted(p.name for p in tmp_path.iterdir()) == before
