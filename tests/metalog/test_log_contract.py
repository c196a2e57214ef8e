"""What every MetadataLog promises, held against the file log (real files) and the in-memory
fake alike, so that tests written against the fake hold for the real thing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rackwise.image import replay
from rackwise.metalog import (
    FencedLeaderEpochException,
    FileMetadataLog,
    InMemoryMetadataLog,
    MetadataLog,
    OffsetOutOfRangeException,
    SnapshotId,
    load_image,
    maybe_snapshot,
)
from rackwise.records import NoOpRecord, RecordEncodeError, TopicRecord, iter_batches
from tests.metalog.helpers import broker, topic


@pytest.fixture(params=["file", "memory"])
def log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MetadataLog]:
    made: MetadataLog
    if request.param == "file":
        made = FileMetadataLog(tmp_path / "log", clock=lambda: 1234, segment_bytes=2048)
    else:
        made = InMemoryMetadataLog(clock=lambda: 1234)
    with made:
        yield made


def _records(log: MetadataLog, offset: int = 0) -> list[Any]:
    return [r for batch in log.read_from(offset) for r in batch.records]


def test_offsets_and_reads(log: MetadataLog) -> None:
    assert (log.start_offset, log.end_offset, log.latest_offset, log.latest_epoch) == (0, 0, -1, -1)
    assert log.append([broker(0), broker(1)], epoch=1) == 1
    assert log.append_batches([topic("a", 2), [NoOpRecord()]], epoch=2) == [4, 5]
    assert (log.end_offset, log.latest_offset, log.latest_epoch) == (6, 5, 2)
    batches = list(log.read_from(0))
    assert [(b.base_offset, b.epoch, len(b.records)) for b in batches] == [
        (0, 1, 2),
        (2, 2, 3),
        (5, 2, 1),
    ]
    assert batches[0].header.append_time_ms == 1234
    assert _records(log, 3) == [*topic("a", 2)[1:], NoOpRecord()]  # the first batch trimmed
    assert list(log.read_from(6)) == []
    with pytest.raises(OffsetOutOfRangeException, match="offset 7 is outside the log's range"):
        log.read_from(7)


def test_epochs_never_go_back(log: MetadataLog) -> None:
    log.append([NoOpRecord()], epoch=3)
    with pytest.raises(FencedLeaderEpochException, match="epoch 2, older than the log's epoch 3"):
        log.append([NoOpRecord()], epoch=2)
    assert log.end_offset == 1


def test_a_record_that_does_not_encode_writes_nothing(log: MetadataLog) -> None:
    bad = TopicRecord(name=None, topic_id=topic("a", 0)[0].topic_id)  # type: ignore[arg-type]
    with pytest.raises(RecordEncodeError):
        log.append_batches([[NoOpRecord()], [bad]], epoch=1)
    assert log.end_offset == 0 and _records(log) == []


def test_raw_reads_hold_whole_batches(log: MetadataLog) -> None:
    for i in range(5):
        log.append(topic(f"t{i}", 3), epoch=1)
    one = log.read_raw(0, 1)  # never less than one batch
    assert [len(b.records) for b in iter_batches(one)] == [4]
    everything = log.read_raw(0, 10**6)
    assert [r for b in iter_batches(everything) for r in b.records] == _records(log)
    assert log.read_raw(log.end_offset, 100) == b""


def test_snapshots_and_retention(log: MetadataLog) -> None:
    for i in range(6):
        log.append(topic(f"t{i}", 4), epoch=1 + i // 3)
    image = load_image(log).image
    first = log.write_snapshot(image.to_records(), log.end_offset)
    assert first == SnapshotId(30, 2)
    log.append([NoOpRecord()], epoch=2)
    second = log.write_snapshot(image.to_records(), log.end_offset)
    log.append(topic("late", 1), epoch=3)
    third = log.write_snapshot(replay(_records(log, 31), image).to_records(), log.end_offset)
    assert log.snapshot_ids() == [second, third]  # two kept
    assert log.start_offset <= second.end_offset  # every record after the older one is kept
    reader = log.read_snapshot()
    assert reader is not None and reader.snapshot_id == third
    assert [r for batch in reader.batches() for r in batch] == load_image(log).image.to_records()


def test_load_image_is_snapshot_plus_log(log: MetadataLog) -> None:
    everything = [broker(0), broker(1), *topic("a", 3)]
    log.append(everything, epoch=1)
    log.write_snapshot(replay(everything).to_records(), log.end_offset)
    more = topic("b", 2)
    log.append(more, epoch=1)
    loaded = load_image(log)
    assert loaded.image == replay([*everything, *more])
    assert (loaded.snapshot_id, loaded.end_offset, loaded.epoch) == (SnapshotId(6, 1), 9, 1)
    assert (loaded.num_snapshot_records, loaded.num_log_records) == (6, 3)


def test_snapshots_are_taken_when_due(log: MetadataLog) -> None:
    log.max_record_bytes_between_snapshots = 500
    log.append(topic("a", 1), epoch=1)
    assert not log.snapshot_due()
    assert maybe_snapshot(log, load_image(log).image, log.end_offset) is None
    log.append(topic("b", 5), epoch=1)
    assert log.bytes_since_snapshot > 500 and log.snapshot_due()
    taken = maybe_snapshot(log, load_image(log).image, log.end_offset)
    assert taken == SnapshotId(8, 1)
    assert log.bytes_since_snapshot == 0 and not log.snapshot_due()


def test_the_fake_can_refuse_a_write() -> None:
    log = InMemoryMetadataLog()
    log.append([NoOpRecord()], epoch=1)
    log.fail_next_append(OSError("disk gone"))
    with pytest.raises(OSError, match="disk gone"):
        log.append([NoOpRecord(), NoOpRecord()], epoch=1)
    assert log.end_offset == 1  # nothing of the refused batch
    assert log.append([NoOpRecord()], epoch=1) == 1
