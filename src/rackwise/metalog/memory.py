"""An in-memory :class:`~rackwise.metalog.api.MetadataLog` for tests of the controller and the
brokers: the same offsets, epochs, snapshot retention and errors as the file log, no files.

Records are encoded on append (so a record that would not encode fails here as it would on
disk) and kept as given. :meth:`InMemoryMetadataLog.fail_next_append` makes the next append raise
before anything is stored, to test what a controller does when the log refuses a write.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from rackwise.common.errors import FencedLeaderEpochException, OffsetOutOfRangeException
from rackwise.metalog.api import (
    DEFAULT_MAX_RECORD_BYTES_BETWEEN_SNAPSHOTS,
    NO_EPOCH,
    SNAPSHOTS_RETAINED,
    MetadataLog,
    SnapshotId,
    SnapshotReader,
)
from rackwise.metalog.snapshots import BATCH_RECORDS
from rackwise.records.batch import RecordBatch, check_batch, encode_frames, encode_records


@dataclass(frozen=True, slots=True)
class _StoredSnapshot:
    records: tuple[Any, ...]
    last_append_time_ms: int


class _MemorySnapshotReader(SnapshotReader):
    def __init__(self, snapshot_id: SnapshotId, stored: _StoredSnapshot) -> None:
        self.snapshot_id = snapshot_id
        self.last_append_time_ms = stored.last_append_time_ms
        self.record_count = len(stored.records)
        self._records = stored.records

    def batches(self) -> Iterator[Sequence[Any]]:
        for i in range(0, len(self._records), BATCH_RECORDS):
            yield self._records[i : i + BATCH_RECORDS]


class InMemoryMetadataLog(MetadataLog):
    """The metadata log in memory. ``clock`` gives the append time in ms (default: 0)."""

    def __init__(
        self,
        *,
        max_record_bytes_between_snapshots: int = DEFAULT_MAX_RECORD_BYTES_BETWEEN_SNAPSHOTS,
        clock: Callable[[], int] = lambda: 0,
    ) -> None:
        self.max_record_bytes_between_snapshots = max_record_bytes_between_snapshots
        self._clock = clock
        self._batches: list[tuple[RecordBatch, bytes]] = []
        self._bases: list[int] = []
        self._start = 0
        self._end = 0
        self._epoch = NO_EPOCH
        self._snapshots: dict[SnapshotId, _StoredSnapshot] = {}
        self._failure: Exception | None = None

    def fail_next_append(self, error: Exception) -> None:
        """Make the next append raise ``error`` without storing anything."""
        self._failure = error

    def append_batches(self, batches: Sequence[Sequence[Any]], epoch: int) -> list[int]:
        if epoch < self._epoch:
            raise FencedLeaderEpochException(
                f"append with epoch {epoch}, older than the log's epoch {self._epoch}"
            )
        now = self._clock()
        encoded = []
        base = self._end
        for records in batches:
            data = encode_records(base, epoch, now, records)
            encoded.append((RecordBatch(check_batch(data, 0), tuple(records)), data))
            base += len(records)
        if self._failure is not None:
            error, self._failure = self._failure, None
            raise error
        last_offsets = []
        for batch, data in encoded:
            self._batches.append((batch, data))
            self._bases.append(batch.base_offset)
            last_offsets.append(batch.header.last_offset)
        self._end = base
        if batches:
            self._epoch = epoch
        return last_offsets

    @property
    def start_offset(self) -> int:
        return self._start

    @property
    def end_offset(self) -> int:
        return self._end

    @property
    def latest_epoch(self) -> int:
        return self._epoch

    def _first_index(self, offset: int) -> int:
        if offset < self._start or offset > self._end:
            raise OffsetOutOfRangeException(
                f"offset {offset} is outside the log's range {self._start} to {self._end}"
            )
        index = bisect.bisect_right(self._bases, offset) - 1
        if index < 0 or self._batches[index][0].header.last_offset < offset:
            index += 1
        return index

    def read_from(self, offset: int) -> Iterator[RecordBatch]:
        index = self._first_index(offset)
        return iter([trim_batch(batch, offset) for batch, _ in self._batches[index:]])

    def read_raw(self, offset: int, max_bytes: int) -> bytes:
        index = self._first_index(offset)
        out: list[bytes] = []
        size = 0
        for _, data in self._batches[index:]:
            if out and size + len(data) > max_bytes:
                break
            out.append(data)
            size += len(data)
        return b"".join(out)

    def snapshot_ids(self) -> list[SnapshotId]:
        return sorted(self._snapshots)

    def read_snapshot(self, snapshot_id: SnapshotId | None = None) -> SnapshotReader | None:
        snapshot_id = snapshot_id or self.latest_snapshot_id()
        if snapshot_id is None or snapshot_id not in self._snapshots:
            return None
        return _MemorySnapshotReader(snapshot_id, self._snapshots[snapshot_id])

    def write_snapshot(self, records: Iterable[Any], end_offset: int) -> SnapshotId:
        snapshot_id = SnapshotId(end_offset, self._epoch_at(end_offset))
        stored = tuple(records)
        encode_frames(stored)  # refuse what would not encode
        self._snapshots[snapshot_id] = _StoredSnapshot(stored, self._clock())
        for old in sorted(self._snapshots)[:-SNAPSHOTS_RETAINED]:
            del self._snapshots[old]
        keep_from = min(self._snapshots).end_offset
        while len(self._batches) > 1 and self._batches[1][0].base_offset <= keep_from:
            self._batches.pop(0)
            self._bases.pop(0)
        self._start = self._batches[0][0].base_offset if self._batches else self._end
        return snapshot_id

    def _epoch_at(self, end_offset: int) -> int:
        if end_offset < self._start or end_offset > self._end:
            raise OffsetOutOfRangeException(
                f"snapshot end offset {end_offset} is outside the log's range "
                f"{self._start} to {self._end}"
            )
        index = bisect.bisect_right(self._bases, end_offset - 1) - 1
        if end_offset == 0 or index < 0:
            return max(self._epoch, 0)
        return self._batches[index][0].epoch

    def close(self) -> None:
        """Nothing to release."""

    @property
    def bytes_since_snapshot(self) -> int:
        latest = self.latest_snapshot_id()
        since = latest.end_offset if latest else 0
        return sum(len(data) for batch, data in self._batches if batch.header.last_offset >= since)


def trim_batch(batch: RecordBatch, offset: int) -> RecordBatch:
    """The batch without its records below ``offset`` (which must be in the batch or before
    it); the header's ``size`` stays that of the stored batch."""
    skip = offset - batch.base_offset
    if skip <= 0:
        return batch
    header = batch.header
    trimmed = header._replace(
        base_offset=offset,
        last_offset_delta=header.last_offset_delta - skip,
        record_count=header.record_count - skip,
    )
    return RecordBatch(trimmed, batch.records[skip:])
