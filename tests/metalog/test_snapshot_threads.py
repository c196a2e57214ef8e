"""The file log's snapshots on another thread, on real files: appends go on while a snapshot's
records are listed and written; a failed snapshot leaves nothing behind; a segment a snapshot
deleted under a reader reads as below the log's start."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rackwise.image import replay
from rackwise.metalog import FileMetadataLog, OffsetOutOfRangeException, SnapshotId
from tests.metalog.helpers import broker, topic

BATCHES = [[broker(0), broker(1), broker(2)], topic("a", 3), topic("b", 2)]


def _records(log: FileMetadataLog, offset: int = 0) -> list[Any]:
    return [r for batch in log.read_from(offset) for r in batch.records]


def test_appends_go_on_while_a_snapshot_is_written(tmp_path: Path) -> None:
    log = FileMetadataLog(tmp_path)
    for batch in BATCHES:
        log.append(batch, epoch=1)
    end = log.end_offset
    image = replay(_records(log))
    started, release = threading.Event(), threading.Event()

    def slow_records() -> Iterator[Any]:
        started.set()
        assert release.wait(10)
        yield from image.to_records()

    result: list[SnapshotId] = []
    writer = threading.Thread(target=lambda: result.append(log.write_snapshot(slow_records(), end)))
    writer.start()
    assert started.wait(10)
    appended = log.append(topic("later", 2), epoch=1)  # does not wait for the snapshot
    release.set()
    writer.join(10)
    assert not writer.is_alive()
    assert result == [SnapshotId(end, 1)]
    assert appended == end + 2
    log.close()

    with FileMetadataLog(tmp_path) as reopened:
        reader = reopened.read_snapshot()
        assert reader is not None and reader.snapshot_id == SnapshotId(end, 1)
        from_snapshot = replay(r for records in reader.batches() for r in records)
        assert from_snapshot == image
        assert _records(reopened, end) == topic("later", 2)


def test_a_failed_snapshot_leaves_nothing_and_the_log_goes_on(tmp_path: Path) -> None:
    with FileMetadataLog(tmp_path) as log:
        for batch in BATCHES:
            log.append(batch, epoch=1)
        with pytest.raises(TypeError, match="not a metadata record class"):
            log.write_snapshot([broker(0), object()], log.end_offset)
        assert list(tmp_path.glob("*.part")) == []
        assert list(tmp_path.glob("*.checkpoint")) == []
        assert log.snapshot_ids() == []
        last = log.append(topic("after", 1), epoch=1)
        assert last == log.end_offset - 1
        snapshot_id = log.write_snapshot(replay(_records(log)).to_records(), log.end_offset)
        assert log.snapshot_ids() == [snapshot_id]


def test_a_segment_deleted_under_a_reader_is_below_the_log_start(tmp_path: Path) -> None:
    with FileMetadataLog(tmp_path, segment_bytes=100) as log:
        for batch in BATCHES:
            log.append(batch, epoch=1)
        first = sorted(tmp_path.glob("*.log"))[0]
        first.unlink()  # as a snapshot on another thread would, after the reader located it
        with pytest.raises(OffsetOutOfRangeException, match="was deleted after a snapshot"):
            log.read_raw(0, 1 << 20)
        with pytest.raises(OffsetOutOfRangeException, match="was deleted after a snapshot"):
            _records(log)
