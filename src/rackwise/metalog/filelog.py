"""The metadata log on local disk: append-only segments and atomic snapshots in one directory.

Goals
    A batch is acknowledged only once fsync has put it on stable storage; after any crash the
    log reopens to a prefix of what was acknowledged (every acknowledged batch, unless the disk
    itself lost or damaged them), never to damaged or half-written data.

Constraints
    One writer (the active controller); readers (brokers fetching) may read concurrently. The
    directory is locked against a second process. Opening must stay quick with a million
    partitions in the newest snapshot.

Algorithm
    Open: delete ``.part`` files (snapshots interrupted before their rename); check snapshot
    files newest first, set a damaged one aside as ``.corrupt`` and fall back to the next;
    read the ``leader-epoch-checkpoint`` (:mod:`rackwise.metalog.epochs`); from the segment
    holding the chosen snapshot's end offset on, scan every batch (CRC32C, length, offsets
    that follow on, epochs that do not go down and agree with the checkpoint) and truncate
    the log at the first batch that fails, deleting later segments. Every such step is a
    :class:`~rackwise.metalog.api.RecoveryEvent` (also logged as a warning). Segments wholly
    before that segment are scanned only if read.
    Append: encode every batch first, record a new epoch's start in the checkpoint, then
    write them to the active segment (rolling to a new
    one past ``segment_bytes``) and fsync once for all of them (group commit); only then do
    they enter the index readers use. A failed write or fsync leaves the log unusable until
    reopened, because what reached the disk is unknown; reopening repairs the tail.
    Snapshot: written atomically (:mod:`rackwise.metalog.snapshots`), possibly on another
    thread while appends go on (the lock is not held while the file is written); afterwards
    only the
    newest ``SNAPSHOTS_RETAINED`` snapshots are kept, and segments wholly before the older kept
    one are deleted, so that falling back to it still finds every record after it.

Worked example
    Batches at offsets 0-9, 10-19 and 20-29 are acknowledged; the machine dies while batch
    30-39 is half written. At open the scan accepts the first three, finds 40 bytes where a
    batch of 700 was announced, reports ``truncated 00000000000000000000.log at offset 30:
    torn batch: it claims 700 bytes but only 40 remain`` and cuts the file there; the next
    append gets offset 30.
"""

from __future__ import annotations

import fcntl
import itertools
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

from rackwise.common.errors import (
    CorruptRecordException,
    FencedLeaderEpochException,
    OffsetOutOfRangeException,
)
from rackwise.metalog.api import (
    DEFAULT_MAX_RECORD_BYTES_BETWEEN_SNAPSHOTS,
    DEFAULT_SEGMENT_BYTES,
    NO_EPOCH,
    SNAPSHOTS_RETAINED,
    MetadataLog,
    MetadataLogError,
    RecoveryEvent,
    SnapshotId,
    SnapshotReader,
)
from rackwise.metalog.epochs import EpochCheckpoint
from rackwise.metalog.memory import trim_batch
from rackwise.metalog.segment import (
    Segment,
    SegmentIndex,
    parse_segment_name,
    read_chunks,
    scan,
    segment_name,
    write_all,
)
from rackwise.metalog.snapshots import (
    CORRUPT_SUFFIX,
    PART_SUFFIX,
    FileSnapshotReader,
    fsync_directory,
    parse_snapshot_name,
    write_snapshot_file,
)
from rackwise.records.batch import RecordBatch, check_batch, decode_records, encode_records
from rackwise.records.codec import InternCache

LOG: Final = logging.getLogger("rackwise.metalog")
LOCK_FILE: Final = ".lock"
READ_CHUNK_BYTES: Final = 8 * 1024 * 1024
"""Bytes read from a segment at a time (whole batches, at least one)."""


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class FileMetadataLog(MetadataLog):
    """The metadata log in ``directory`` (created if missing). ``read_only`` opens it as the
    dump tool does, even while a controller has it open: no lock is taken, nothing is repaired
    (damage is reported as ``ignored`` and left out) and writes are refused."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        max_record_bytes_between_snapshots: int = DEFAULT_MAX_RECORD_BYTES_BETWEEN_SNAPSHOTS,
        clock: Callable[[], int] = wall_clock_ms,
        read_only: bool = False,
    ) -> None:
        self.directory = Path(directory)
        self.read_only = read_only
        self.segment_bytes = segment_bytes
        self.max_record_bytes_between_snapshots = max_record_bytes_between_snapshots
        self._clock = clock
        self._lock = threading.RLock()
        self._failed: BaseException | None = None
        self._closed = False
        self._events: list[RecoveryEvent] = []
        self._active_fd = -1
        self._lock_fd = -1
        if read_only:
            if not self.directory.is_dir():
                raise MetadataLogError(f"metadata log {self.directory} does not exist")
        else:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._lock_fd = _lock_directory(self.directory)
        try:
            self._open()
        except BaseException:
            self._release()
            raise
        self.recovery_events = tuple(self._events)
        if not read_only:
            for event in self.recovery_events:
                LOG.warning("metadata log recovery: %s", event)

    # ---- opening --------------------------------------------------------------------------------

    def _event(self, action: str, path: Path, offset: int | None, reason: str) -> None:
        """Record a repair; a read-only log only reports what it ignores."""
        action = "ignored" if self.read_only else action
        self._events.append(RecoveryEvent(action, str(path), offset, reason))

    def _open(self) -> None:
        self._epochs = EpochCheckpoint(self.directory, read_only=self.read_only, event=self._event)
        for part in sorted(self.directory.glob(f"*{PART_SUFFIX}")):
            if not self.read_only:
                part.unlink()
            self._event("deleted", part, None, "a snapshot interrupted before its rename")
        self._damaged_snapshots: set[SnapshotId] = set()
        chosen = self._choose_snapshot()
        self._snapshot_cache: FileSnapshotReader | None = chosen
        self._snapshot_ids = self._list_snapshots()
        replay_from = chosen.snapshot_id.end_offset if chosen else 0
        self._segments = self._list_segments()
        self._check_coverage(chosen, replay_from)
        self._scan_from(self._first_to_scan(replay_from))
        last = self._segments[-1] if self._segments else None
        if last is not None and last.end_offset < replay_from:
            self._drop_segments_from(0, f"the log ends before the snapshot's end {replay_from}")
        if not self._segments:
            self._segments.append(self._create_segment(replay_from))
        self._epochs.adopt(self._segments, self._segments[-1].end_offset)
        self._snapshot_epoch = chosen.snapshot_id.epoch if chosen else NO_EPOCH
        self._epoch = self._segments[-1].last_epoch
        if self._epoch == NO_EPOCH:
            self._epoch = self._snapshot_epoch
        if not self.read_only:
            active = self._segments[-1]
            self._active_fd = os.open(active.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            if self._snapshot_ids:
                self._retain()  # finish what a crash after a snapshot's write may have left
            fsync_directory(self.directory)

    def _choose_snapshot(self) -> FileSnapshotReader | None:
        """The newest snapshot that checks out; damaged newer ones are renamed ``.corrupt``."""
        ids = sorted(
            (snapshot_id, path)
            for path in self.directory.iterdir()
            if (snapshot_id := parse_snapshot_name(path.name)) is not None
        )
        for snapshot_id, path in reversed(ids):
            try:
                return FileSnapshotReader(path)
            except CorruptRecordException as e:
                self._damaged_snapshots.add(snapshot_id)
                aside = path.with_name(path.name + CORRUPT_SUFFIX)
                if not self.read_only:
                    path.rename(aside)
                self._event("set aside", path, None, f"corrupt snapshot ({e}); now {aside.name}")
        return None

    def _list_segments(self) -> list[Segment]:
        segments = []
        for path in self.directory.iterdir():
            base = parse_segment_name(path.name)
            if base is not None:
                segments.append(Segment(base, path, base, path.stat().st_size))
        segments.sort(key=lambda s: s.base_offset)
        for current, following in itertools.pairwise(segments):
            current.end_offset = following.base_offset
        return segments

    def _check_coverage(self, chosen: FileSnapshotReader | None, replay_from: int) -> None:
        """The records before the log's first segment must be in the chosen snapshot."""
        if not self._segments:
            return
        first = self._segments[0].base_offset
        if first > replay_from:
            covered = f"snapshot {chosen.snapshot_id}" if chosen else "no valid snapshot"
            raise MetadataLogError(
                f"metadata log {self.directory} starts at offset {first} and {covered} covers "
                f"the records before it only up to offset {replay_from}: they are lost"
            )

    def _first_to_scan(self, replay_from: int) -> int:
        bases = [s.base_offset for s in self._segments]
        position = 0
        for i, base in enumerate(bases):
            if base <= replay_from:
                position = i
        return position

    def _scan_from(self, first: int) -> None:
        """Scan segments from index ``first``; truncate at the first damage."""
        epoch = NO_EPOCH
        expected = self._segments[first].base_offset if self._segments else 0
        for i in range(first, len(self._segments)):
            segment = self._segments[i]
            if segment.base_offset != expected:
                reason = f"segment starts at offset {segment.base_offset}, expected {expected}"
                self._drop_segments_from(i, reason)
                return
            data = segment.path.read_bytes()
            result = scan(data, segment.base_offset, epoch, self._epochs.epoch_at)
            segment.index = result.index
            segment.end_offset = result.end_offset
            segment.last_epoch = result.last_epoch
            segment.size = result.valid_bytes
            if result.problem is not None:
                if not self.read_only:
                    os.truncate(segment.path, result.valid_bytes)
                    self._fsync_file(segment.path)
                self._event("truncated", segment.path, result.problem_offset, result.problem)
                self._drop_segments_from(i + 1, f"after the damage at offset {result.end_offset}")
                return
            epoch = result.last_epoch
            expected = result.end_offset

    def _drop_segments_from(self, index: int, reason: str) -> None:
        for segment in self._segments[index:]:
            if not self.read_only:
                segment.path.unlink()
            self._event("deleted", segment.path, segment.base_offset, reason)
        del self._segments[index:]

    def _create_segment(self, base_offset: int) -> Segment:
        path = self.directory / segment_name(base_offset)
        if not self.read_only:
            path.touch()
            fsync_directory(self.directory)
        return Segment(base_offset, path, base_offset, 0, SegmentIndex(), NO_EPOCH)

    @staticmethod
    def _fsync_file(path: Path) -> None:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    # ---- appending ------------------------------------------------------------------------------

    def _check_usable(self) -> None:
        if self._closed:
            raise MetadataLogError(f"metadata log {self.directory} is closed")
        if self.read_only:
            raise MetadataLogError(f"metadata log {self.directory} is open read-only")
        if self._failed is not None:
            raise MetadataLogError(
                f"metadata log {self.directory} failed a write ({self._failed}); reopen it"
            )

    def append_batches(self, batches: Sequence[Sequence[Any]], epoch: int) -> list[int]:
        with self._lock:
            self._check_usable()
            if epoch < self._epoch:
                raise FencedLeaderEpochException(
                    f"append with epoch {epoch}, older than the log's epoch {self._epoch}"
                )
            if not batches:
                return []
            now = self._clock()
            encoded = []
            base = self.end_offset
            for records in batches:
                encoded.append((base, encode_records(base, epoch, now, records)))
                base += len(records)
            active = self._segments[-1]
            if active.size >= self.segment_bytes and active.end_offset > active.base_offset:
                active = self._roll()
            try:
                self._epochs.start_epoch(epoch, encoded[0][0])
                write_all(self._active_fd, b"".join(data for _, data in encoded))
                os.fsync(self._active_fd)
            except OSError as e:
                self._failed = e
                raise MetadataLogError(f"metadata log {self.directory}: write failed: {e}") from e
            index = active.index
            assert index is not None, "BUG: the active segment is always indexed"
            lasts = []
            for batch_base, data in encoded:
                index.add(batch_base, active.size, epoch)
                active.size += len(data)
                lasts.append(batch_base + check_batch(data, 0).record_count - 1)
            active.end_offset = base
            active.last_epoch = epoch
            self._epoch = epoch
            return lasts

    def _roll(self) -> Segment:
        segment = self._create_segment(self.end_offset)
        os.close(self._active_fd)
        self._active_fd = os.open(segment.path, os.O_WRONLY | os.O_APPEND)
        self._segments.append(segment)
        return segment

    # ---- offsets --------------------------------------------------------------------------------

    @property
    def start_offset(self) -> int:
        return self._segments[0].base_offset

    @property
    def end_offset(self) -> int:
        return self._segments[-1].end_offset

    @property
    def latest_epoch(self) -> int:
        return self._epoch

    # ---- reading --------------------------------------------------------------------------------

    def _locate(self, offset: int) -> list[tuple[Path, list[int], int]]:
        """What to read from ``offset``, taken under the lock so that appends racing with the
        read are not seen: for each segment, its path, the positions of the batches to read
        (from the one holding ``offset``) and the end of the last of them."""
        with self._lock:
            if self._closed:
                raise MetadataLogError(f"metadata log {self.directory} is closed")
            start, end = self.start_offset, self.end_offset
            if offset < start or offset > end:
                raise OffsetOutOfRangeException(
                    f"offset {offset} is outside the log's range {start} to {end}"
                )
            spans = []
            for segment in self._segments:
                if segment.end_offset <= offset:
                    continue
                index = self._index_of(segment)
                first = max(index.batch_at(offset), 0)
                spans.append((segment.path, list(index.positions[first:]), segment.size))
            return spans

    def _index_of(self, segment: Segment) -> SegmentIndex:
        if segment.index is None:
            data = segment.path.read_bytes()
            result = scan(data, segment.base_offset, NO_EPOCH, self._epochs.epoch_at)
            if result.problem is not None or result.end_offset != segment.end_offset:
                raise CorruptRecordException(
                    f"{segment.path}: {result.problem or 'ends early'} at offset "
                    f"{result.end_offset}"
                )
            segment.index = result.index
            segment.last_epoch = result.last_epoch
        return segment.index

    def read_from(self, offset: int) -> Iterator[RecordBatch]:
        return self._iter_batches(self._locate(offset), offset)

    @staticmethod
    def _iter_batches(
        spans: list[tuple[Path, list[int], int]], offset: int
    ) -> Iterator[RecordBatch]:
        cache: InternCache = {}
        for path, positions, stop in spans:
            with _deleted_is_out_of_range(path):
                for data, starts in read_chunks(path, positions, stop, READ_CHUNK_BYTES):
                    for pos in starts:
                        header = check_batch(data, pos)
                        if header.next_offset > offset:
                            records = tuple(decode_records(data, pos, header, cache))
                            yield trim_batch(RecordBatch(header, records), offset)

    def read_raw(self, offset: int, max_bytes: int) -> bytes:
        spans = self._locate(offset)
        if not spans:
            return b""
        path, positions, stop = spans[0]
        with _deleted_is_out_of_range(path):
            data, _ = next(read_chunks(path, positions, stop, max_bytes))
        return data

    # ---- snapshots ------------------------------------------------------------------------------

    def snapshot_ids(self) -> list[SnapshotId]:
        with self._lock:
            return list(self._snapshot_ids)

    def _list_snapshots(self) -> list[SnapshotId]:
        return sorted(
            snapshot_id
            for path in self.directory.iterdir()
            if (snapshot_id := parse_snapshot_name(path.name)) is not None
            and snapshot_id not in self._damaged_snapshots
        )

    def read_snapshot(self, snapshot_id: SnapshotId | None = None) -> SnapshotReader | None:
        with self._lock:
            snapshot_id = snapshot_id or self.latest_snapshot_id()
            if snapshot_id is None:
                return None
            cached = self._snapshot_cache
            self._snapshot_cache = None
            if cached is not None and cached.snapshot_id == snapshot_id:
                return cached
            path = self.directory / snapshot_id.file_name()
            if not path.exists():
                return None
            return FileSnapshotReader(path)

    def write_snapshot(self, records: Iterable[Any], end_offset: int) -> SnapshotId:
        """May run on another thread than the appends: the lock is held only to pick the
        snapshot's epoch and, after the rename, to adopt it and delete what it frees; the
        records are listed, encoded, written and flushed without it, so appends go on."""
        with self._lock:
            self._check_usable()
            if not self.start_offset <= end_offset <= self.end_offset:
                raise OffsetOutOfRangeException(
                    f"snapshot end offset {end_offset} is outside the log's range "
                    f"{self.start_offset} to {self.end_offset}"
                )
            snapshot_id = SnapshotId(end_offset, self._epoch_before(end_offset))
        write_snapshot_file(self.directory, snapshot_id, list(records), self._clock())
        with self._lock:
            self._check_usable()
            self._snapshot_ids = sorted({*self._snapshot_ids, snapshot_id})
            LOG.debug("metadata log %s: wrote snapshot %s", self.directory, snapshot_id)
            self._retain()
            return snapshot_id

    def _epoch_before(self, end_offset: int) -> int:
        """The epoch of the record at ``end_offset - 1``."""
        for segment in reversed(self._segments):
            if segment.base_offset < end_offset:
                index = self._index_of(segment)
                i = index.batch_at(end_offset - 1)
                if i >= 0:
                    return int(index.epochs[i])
        return max(self._snapshot_epoch, 0)

    def _retain(self) -> None:
        ids = self._snapshot_ids
        for old in ids[:-SNAPSHOTS_RETAINED]:
            (self.directory / old.file_name()).unlink()
        self._snapshot_ids = ids = ids[-SNAPSHOTS_RETAINED:]
        keep_from = ids[0].end_offset
        while len(self._segments) > 1 and self._segments[0].end_offset <= keep_from:
            self._segments.pop(0).path.unlink()
        self._epochs.truncate_from_start(self._segments[0].base_offset)
        fsync_directory(self.directory)

    @property
    def bytes_since_snapshot(self) -> int:
        with self._lock:
            since = self._snapshot_ids[-1].end_offset if self._snapshot_ids else 0
            total = 0
            for segment in reversed(self._segments):
                if segment.end_offset <= since:
                    break
                index = self._index_of(segment)
                first = max(index.batch_at(since), 0)
                total += segment.size - index.positions[first] if len(index.positions) else 0
            return total

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._epochs.close()
            self._release()

    def _release(self) -> None:
        for fd in (self._active_fd, self._lock_fd):
            if fd >= 0:
                os.close(fd)
        self._active_fd = self._lock_fd = -1


@contextmanager
def _deleted_is_out_of_range(path: Path) -> Iterator[None]:
    """A segment deleted between locating and reading it (a snapshot written on another thread
    freed it): its offsets are below the log's start now."""
    try:
        yield
    except FileNotFoundError:
        raise OffsetOutOfRangeException(
            f"segment {path.name} was deleted after a snapshot: its offsets are below the "
            "log's start"
        ) from None


def _lock_directory(directory: Path) -> int:
    fd = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise MetadataLogError(
            f"metadata log {directory} is in use by another process (lock {LOCK_FILE})"
        ) from None
    return fd
