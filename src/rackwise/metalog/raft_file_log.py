"""The file log as a quorum member needs it: besides appending, cut an uncommitted tail that
diverges from the leader's, and replace the whole log by a snapshot fetched from the leader
(Kafka's ``ReplicatedLog.truncateTo`` and ``truncateToLatestSnapshot``).

Goals
    After any crash the log reopens either as it was before the change or as it is after it,
    never to a mixture that holds records of both.

Constraints
    Only a follower's uncommitted tail is ever cut, and only at a batch boundary (epochs change
    only there, and the leader's diverging offsets are batch boundaries). A snapshot replacing
    the log is the leader's own file, checked (CRC, header, name) before it is kept.

Algorithm
    Truncate to ``offset``: delete the segments starting at or after it (newest first), cut the
    segment holding it at that batch's position and fsync it, fsync the directory, then drop
    the leader-epoch-checkpoint's entries from ``offset`` on (an entry past the log's end, left
    by a crash, is dropped at open). A
    crash midway leaves a shorter prefix of the old tail, which the leader cuts again.
    Replace by a snapshot: write the file atomically (``.part``, fsync, rename, fsync the
    directory), then delete every segment, clear the leader-epoch-checkpoint and start an
    empty segment at the snapshot's end offset. Crash points: :data:`CRASH_POINTS`. A crash
    after the rename but before the segments go reopens to the new snapshot and the old
    segments, which end before it and are dropped at open.

Worked example
    Batches at 0-2 (epoch 1), 3-4 (epoch 2), 5-7 (epoch 2) in one segment; the leader of epoch
    3 says epoch 1 ends at 3. ``truncate_to(3)`` cuts the segment at the position of the batch
    at 3; the log ends at 3 with epoch 1, and the next append (epoch 3) goes there.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Final

from rackwise.metalog.api import NO_EPOCH, SnapshotId
from rackwise.metalog.filelog import FileMetadataLog
from rackwise.metalog.segment import SegmentIndex
from rackwise.metalog.snapshots import PART_SUFFIX, FileSnapshotReader, fsync_directory

CRASH_POINTS: Final = ("snapshot-renamed", "segments-deleted")
"""Where a test may stop :meth:`RaftFileLog.replace_with_snapshot`."""


class RaftFileLog(FileMetadataLog):
    """A :class:`FileMetadataLog` that a quorum's follower can cut and reset."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.crash_hook: Callable[[str], None] = _no_crash
        super().__init__(*args, **kwargs)

    def truncate_to(self, offset: int) -> None:
        """Drop every record at ``offset`` and after (``offset`` starts a batch)."""
        with self._lock:
            self._check_usable()
            if not self.start_offset <= offset <= self.end_offset:
                raise ValueError(
                    f"BUG: truncation to {offset} outside the log {self.start_offset} to "
                    f"{self.end_offset}"
                )
            if offset == self.end_offset:
                return
            while len(self._segments) > 1 and self._segments[-1].base_offset >= offset:
                self._segments.pop().path.unlink()
            segment = self._segments[-1]
            index = self._index_of(segment)
            if segment.end_offset > offset:
                kept = index.batch_at(offset)
                if kept < 0 or index.bases[kept] != offset:
                    raise ValueError(f"BUG: truncation to {offset}, inside a batch")
                position = index.positions[kept]
                os.truncate(segment.path, position)
                self._fsync_file(segment.path)
                segment.index = _prefix(index, kept)
                segment.size = position
                segment.end_offset = offset
                segment.last_epoch = int(index.epochs[kept - 1]) if kept else NO_EPOCH
            os.close(self._active_fd)
            self._active_fd = os.open(segment.path, os.O_WRONLY | os.O_APPEND)
            fsync_directory(self.directory)
            self._epochs.truncate_from_end(offset)
            self._epoch = segment.last_epoch
            if self._epoch == NO_EPOCH:
                self._epoch = self._epoch_before_segments(segment.base_offset)

    def _epoch_before_segments(self, base_offset: int) -> int:
        if len(self._segments) > 1:
            return self._segments[-2].last_epoch
        return self._snapshot_epoch if base_offset > 0 else NO_EPOCH

    def snapshot_bytes(self, snapshot_id: SnapshotId) -> bytes:
        """The snapshot file as stored (what a follower is sent)."""
        return (self.directory / snapshot_id.file_name()).read_bytes()

    def replace_with_snapshot(self, snapshot_id: SnapshotId, data: bytes) -> None:
        """Keep ``data`` (a snapshot file fetched from the leader) as snapshot ``snapshot_id``
        and drop every record: the log continues at its end offset."""
        final = self.directory / snapshot_id.file_name()
        FileSnapshotReader(final, data)  # refuses a damaged or mislabelled file
        with self._lock:
            self._check_usable()
            temp = final.with_name(final.name + PART_SUFFIX)
            with open(temp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(temp, final)
            fsync_directory(self.directory)
            self.crash_hook("snapshot-renamed")
            os.close(self._active_fd)
            self._active_fd = -1
            for segment in self._segments:
                segment.path.unlink()
            self.crash_hook("segments-deleted")
            self._epochs.clear()
            fresh = self._create_segment(snapshot_id.end_offset)
            self._segments = [fresh]
            self._active_fd = os.open(fresh.path, os.O_WRONLY | os.O_APPEND)
            self._snapshot_ids = sorted({*self._snapshot_ids, snapshot_id})
            self._snapshot_epoch = snapshot_id.epoch
            self._epoch = snapshot_id.epoch
            self._retain()


def _no_crash(point: str) -> None:
    """No crash injected."""


def _prefix(index: SegmentIndex, count: int) -> SegmentIndex:
    kept = SegmentIndex()
    for i in range(count):
        kept.add(index.bases[i], index.positions[i], index.epochs[i])
    return kept
