"""One log segment: ``<base offset>.log`` with its ``.index`` and ``.timeindex`` (Kafka's
LogSegment).

Goals
    Append whole batches, find the batch holding an offset, read whole batches,
    truncate, and rebuild the indexes from the batches after a crash, in Kafka's file layout
    and with Kafka's rules (index entry every ``index.interval.bytes``, time index entry for
    the largest timestamp so far, roll on size, age, a full index or an offset that would not
    fit the index's int32).

Constraints
    No descriptor is held: every access goes through the broker's
    :class:`~rackwise.storage.files.FileCache`. Opening a segment reads nothing; its indexes
    load on first use. Scans read the file in chunks and parse headers only (61 bytes each);
    the CRC of a batch is computed only by :meth:`LogSegment.recover`.

Algorithm
    :meth:`LogSegment.translate_offset` looks the offset up in the offset index and walks the
    headers forward from there to the first batch whose last offset reaches it.
    :meth:`LogSegment.read` reads ``max_bytes`` from that batch in one ``pread`` and keeps the
    whole batches below ``max_offset`` that fit (the first batch alone if none fits and the
    caller wants at least one). The last :data:`TAIL_BATCHES` batches appended are remembered
    (base offset, next offset, position): a read from one of them (a follower's fetch from
    its log end, a consumer at the tail) finds its start and its whole batches there, with no
    index lookup and no header read; truncation and recovery forget them. A zero-copy read
    (a Fetch answered over a socket) reads only the 12-byte offset and length of each batch to
    find where those whole batches end, and returns the span as a
    :class:`~rackwise.storage.files.FileRegion` for ``sendfile``; it copies instead when the
    span is under 4 KiB, or when the batches are so small that the header reads would cost
    more than the copy. :meth:`LogSegment.recover` checks every batch and rebuilds the indexes
    (:mod:`rackwise.storage.segment_recovery`), then cuts the file at the first that fails.
    The search by timestamp is in :mod:`rackwise.storage.timestamps`.

Worked example
    A segment at base 0 holds batches 0-4 (position 0, 300 bytes) and 5-9 (position 300, 300
    bytes). ``read(7, max_bytes=1000, max_offset=10)`` finds batch 5-9 and returns its 300
    bytes; with ``max_bytes=100`` it returns nothing, or the batch anyway with
    ``min_one_batch``; with ``max_offset=5`` it returns nothing: the batch starts at the limit.
"""

from __future__ import annotations

import itertools
import logging
import os
import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from rackwise.storage.batch import (
    BATCH_HEADER_BYTES,
    LOG_OVERHEAD,
    NO_TIMESTAMP,
    BatchHeader,
)
from rackwise.storage.errors import CorruptIndexException, CorruptRecordException
from rackwise.storage.files import FileCache, FileRegion
from rackwise.storage.index import OffsetIndex, TimeIndex
from rackwise.storage.segment_files import (
    INDEX_SUFFIX,
    SCAN_CHUNK_BYTES,
    TIME_INDEX_SUFFIX,
    iter_file_headers,
    segment_file_name,
)
from rackwise.storage.segment_recovery import scan_batches

LOG: Final = logging.getLogger("rackwise.storage")
TRANSLATE_CHUNK_BYTES: Final = 4096
UNKNOWN: Final = -2
"""A lazily computed value not yet known (distinct from NO_TIMESTAMP)."""
_OFFSET_AND_LENGTH: Final = struct.Struct(">qi")
_MIN_LENGTH: Final = BATCH_HEADER_BYTES - LOG_OVERHEAD
ZERO_COPY_MIN_BYTES: Final = 4096
"""Smaller reads are copied: below this a ``sendfile`` saves less than it costs."""
ZERO_COPY_MAX_BATCHES: Final = 16
"""Batch headers read one by one to find where a zero-copy read ends, whatever their size;
past them the walk goes on while the batches average :data:`_WORTH_A_READ` bytes or more."""
_WORTH_A_READ: Final = 8192
"""Batch bytes whose copy costs about what reading one more header costs."""
TAIL_BATCHES: Final = 8
"""Batches appended last whose positions a segment keeps for reads at the tail."""


@dataclass(frozen=True, slots=True)
class SegmentSettings:
    """The topic settings a segment uses (from :class:`~rackwise.storage.log.LogConfig`)."""

    index_interval_bytes: int = 4096
    max_index_bytes: int = 10_485_760


@dataclass(frozen=True, slots=True)
class RecoverResult:
    """What :meth:`LogSegment.recover` did."""

    truncated_bytes: int
    truncated_batches: int
    """Whole batch headers walkable in the truncated bytes (a torn tail counts as one)."""
    valid_batches: int
    first_bad_offset: int
    """The base offset the bad batch claims (or the next expected offset), NO_OFFSET if none."""
    reason: str


class LogSegment:
    """One segment (module docstring). Not thread-safe: the log calls it under its lock."""

    def __init__(
        self,
        directory: Path,
        base_offset: int,
        files: FileCache,
        settings: SegmentSettings,
        *,
        size: int,
        created_ms: int,
        roll_jitter_ms: int = 0,
    ) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.files = files
        self.settings = settings
        self.size = size
        self.created_ms = created_ms
        self.roll_jitter_ms = roll_jitter_ms
        self.log_path = directory / segment_file_name(base_offset)
        self.index_path = directory / segment_file_name(base_offset, INDEX_SUFFIX)
        self.time_index_path = directory / segment_file_name(base_offset, TIME_INDEX_SUFFIX)
        self.offset_index = OffsetIndex(
            self.index_path, base_offset, settings.max_index_bytes, files
        )
        self.time_index = TimeIndex(
            self.time_index_path, base_offset, settings.max_index_bytes, files
        )
        self._max_timestamp = UNKNOWN
        self._offset_of_max_timestamp = UNKNOWN
        self._rolling_timestamp = UNKNOWN
        self._bytes_since_index_entry = 0
        self._indexes_checked = False
        self._tail: list[tuple[int, int, int]] = []
        """(base offset, next offset, position) of the last batches appended, in order, the
        last ending at :attr:`size` (module docstring)."""

    @classmethod
    def create(
        cls,
        directory: Path,
        base_offset: int,
        files: FileCache,
        settings: SegmentSettings,
        *,
        now_ms: int,
        roll_jitter_ms: int = 0,
    ) -> LogSegment:
        """A new empty segment: its three files are created (replacing leftovers)."""
        segment = cls(
            directory,
            base_offset,
            files,
            settings,
            size=0,
            created_ms=now_ms,
            roll_jitter_ms=roll_jitter_ms,
        )
        for path in (segment.log_path, segment.index_path, segment.time_index_path):
            files.create(path)
        segment.offset_index.start_empty()
        segment.time_index.start_empty()
        segment._indexes_checked = True
        segment._max_timestamp = NO_TIMESTAMP
        segment._offset_of_max_timestamp = base_offset
        segment._rolling_timestamp = NO_TIMESTAMP
        return segment

    def __repr__(self) -> str:
        return f"LogSegment(baseOffset={self.base_offset}, size={self.size})"

    # ---- scanning ----------------------------------------------------------------------------

    def iter_headers(
        self, start: int = 0, end: int | None = None, chunk: int = SCAN_CHUNK_BYTES
    ) -> Iterator[BatchHeader]:
        """Headers of the whole batches between positions ``start`` and ``end`` (the segment's
        size), with their positions in the file. Stops before an incomplete tail."""
        return iter_file_headers(
            self.files, self.log_path, start, self.size if end is None else end, chunk
        )

    def iter_headers_tolerant(self, start: int = 0) -> Iterator[BatchHeader]:
        """:meth:`iter_headers` that ends quietly at a corrupt length (counting what a
        truncation removes)."""
        try:
            yield from self.iter_headers(start)
        except CorruptRecordException:
            return

    def ensure_indexes(self, *, report: bool = True) -> str:
        """Load both indexes on first use; if either fails its sanity check (entries out of
        order, a position past the segment's end), rebuild both from the segment, logging it
        if ``report``. The reason for a rebuild, "" if there was none."""
        if self._indexes_checked:
            return ""
        try:
            self.offset_index.load()
            self.offset_index.check_positions(self.size)
            self.time_index.load()
        except CorruptIndexException as e:
            result = self.recover(lambda header: None)
            self.offset_index.flush()
            self.time_index.flush()
            if not report:
                return str(e)
            LOG.warning(
                "%s: rebuilt the indexes of %s (%s); truncated %d bytes",
                self.directory.name,
                self.log_path.name,
                e,
                result.truncated_bytes,
            )
            return str(e)
        self._indexes_checked = True
        return ""

    def translate_offset(self, offset: int, start_position: int = 0) -> BatchHeader | None:
        """The first batch whose last offset is at least ``offset``, or None."""
        self.ensure_indexes()
        _, position = self.offset_index.lookup(offset)
        # The batch sought is within about index.interval.bytes of the entry, often the first
        # one: read a page at a time rather than a scan's chunk of records not wanted here.
        for header in self.iter_headers(max(position, start_position), chunk=TRANSLATE_CHUNK_BYTES):
            if header.last_offset >= offset:
                return header
        return None

    def read_next_offset(self) -> int:
        """The offset after the segment's last batch (its base offset if it has none)."""
        self.ensure_indexes()
        position = self.offset_index.last_position
        next_offset = self.base_offset
        for header in self.iter_headers(position):
            next_offset = header.next_offset
        return next_offset

    def read(
        self,
        start_offset: int,
        *,
        max_bytes: int,
        max_offset: int,
        min_one_batch: bool,
        zero_copy: bool = False,
    ) -> tuple[bytes | FileRegion, int] | None:
        """Whole batches from the one holding ``start_offset`` (module docstring) and the base
        offset of the first; None if the segment has no offset at or above ``start_offset``.
        With ``zero_copy`` the batches come as a :class:`FileRegion` when they are at least
        :data:`ZERO_COPY_MIN_BYTES` and few enough to find their end header by header (at most
        :data:`ZERO_COPY_MAX_BATCHES`)."""
        at = self._remembered(start_offset)
        if at is None:
            first = self.translate_offset(start_offset)
            if first is None:
                return None
            base, position, first_size = first.base_offset, first.position, first.size
        else:
            base, _, position = self._tail[at]
            first_size = self._remembered_end(at) - position
        if base >= max_offset:
            return b"", base
        wanted = min(max(max_bytes, first_size if min_one_batch else 0), self.size - position)
        if wanted < first_size:
            return b"", base
        if zero_copy and wanted >= ZERO_COPY_MIN_BYTES:
            limit = position + wanted
            end = (
                self._whole_batches_end(position, limit, max_offset)
                if at is None
                else self._remembered_batches_end(at, limit, max_offset)
            )
            if end is not None and end - position >= ZERO_COPY_MIN_BYTES:
                return FileRegion(self.files, self.log_path, position, end - position), base
            if end is not None:  # found, and small enough to copy: read no more than it
                return self.files.read(self.log_path, position, end - position), base
        data = self.files.read(self.log_path, position, wanted)
        end, size = 0, len(data)
        unpack = _OFFSET_AND_LENGTH.unpack_from
        while size - end >= BATCH_HEADER_BYTES:
            base_offset, length = unpack(data, end)  # one batch per step, no header object
            following = end + LOG_OVERHEAD + length
            if base_offset >= max_offset or following > size or length < _MIN_LENGTH:
                break
            end = following
        return (data if end == size else data[:end]), base

    def _remembered(self, offset: int) -> int | None:
        """The index in :attr:`_tail` of the first remembered batch ending past ``offset``
        (offsets may skip between batches), or None when ``offset`` is outside them."""
        tail = self._tail
        if not tail or not tail[0][0] <= offset < tail[-1][1]:
            return None
        i = len(tail) - 1
        while i and tail[i - 1][1] > offset:  # reads come near the end: walk back
            i -= 1
        return i

    def _remembered_end(self, i: int) -> int:
        """Where the remembered batch ``i`` ends in the file."""
        return self._tail[i + 1][2] if i + 1 < len(self._tail) else self.size

    def _remembered_batches_end(self, i: int, limit: int, max_offset: int) -> int:
        """:meth:`_whole_batches_end` from remembered batch ``i``, without reading a header."""
        end = self._tail[i][2]
        for j in range(i, len(self._tail)):
            following = self._remembered_end(j)
            if self._tail[j][0] >= max_offset or following > limit:
                break
            end = following
        return end

    def _whole_batches_end(self, position: int, limit: int, max_offset: int) -> int | None:
        """Where the whole batches from ``position`` that end by ``limit`` and begin below
        ``max_offset`` end, reading their 12-byte offset and length only; None when there are
        more than :data:`ZERO_COPY_MAX_BATCHES` and they are small (reading them costs less
        than so many reads)."""
        end = position
        with self.files.lease(self.log_path) as fd:
            for walked in itertools.count():
                if walked >= ZERO_COPY_MAX_BATCHES and end - position < walked * _WORTH_A_READ:
                    return None
                if limit - end < BATCH_HEADER_BYTES:
                    return end
                head = os.pread(fd, LOG_OVERHEAD, end)
                if len(head) < LOG_OVERHEAD:
                    return end
                base_offset, length = _OFFSET_AND_LENGTH.unpack(head)
                following = end + LOG_OVERHEAD + length
                if base_offset >= max_offset or following > limit or length < _MIN_LENGTH:
                    return end
                end = following
        return end  # not reached: the loop returns

    # ---- appending ---------------------------------------------------------------------------

    def append(
        self,
        records: bytes | bytearray | memoryview,
        *,
        largest_offset: int,
        largest_timestamp: int,
        offset_of_max: int,
        batches: Sequence[BatchHeader] = (),
    ) -> None:
        """Write ``records`` (whole, stamped batches) at the end; index as Kafka does.
        ``batches`` are their headers (positions within ``records``), remembered for reads at
        the tail; without them the tail is forgotten."""
        if not records:
            return
        position = self.size
        if position == 0:
            self._rolling_timestamp = largest_timestamp
        if not self.offset_index.can_append_offset(largest_offset):
            raise CorruptIndexException(
                f"BUG: offset {largest_offset} does not fit segment {self.base_offset}'s index"
            )
        tail, self._tail = self._tail, []  # forgotten while the write may fail
        self.files.write(self.log_path, position, records)
        self.size = position + len(records)
        if batches and batches[0].position == 0 and batches[-1].end == len(records):
            tail.extend((h.base_offset, h.next_offset, position + h.position) for h in batches)
            del tail[:-TAIL_BATCHES]
            self._tail = tail
        if largest_timestamp > self.max_timestamp_so_far:
            self._max_timestamp = largest_timestamp
            self._offset_of_max_timestamp = offset_of_max
        if self._bytes_since_index_entry > self.settings.index_interval_bytes:
            self.offset_index.append(largest_offset, position)
            self.time_index.maybe_append(self._max_timestamp, self._offset_of_max_timestamp)
            self._bytes_since_index_entry = 0
        self._bytes_since_index_entry += len(records)

    @property
    def max_timestamp_so_far(self) -> int:
        """The largest batch max timestamp in the segment (NO_TIMESTAMP if none)."""
        if self._max_timestamp == UNKNOWN:
            self.ensure_indexes()
            self._max_timestamp, self._offset_of_max_timestamp = self.time_index.last_entry
        return self._max_timestamp

    @property
    def offset_of_max_timestamp(self) -> int:
        _ = self.max_timestamp_so_far
        return self._offset_of_max_timestamp

    def largest_timestamp(self) -> int:
        """Kafka's largestTimestamp: the max timestamp, else the file's modification time."""
        if self.max_timestamp_so_far >= 0:
            return self.max_timestamp_so_far
        return self.last_modified_ms()

    def last_modified_ms(self) -> int:
        return os.stat(self.log_path).st_mtime_ns // 1_000_000

    def first_batch_timestamp(self) -> int:
        """The max timestamp of the first batch (what segment.ms measures from)."""
        if self._rolling_timestamp == UNKNOWN:
            first = next(self.iter_headers(0), None)
            self._rolling_timestamp = first.max_timestamp if first else NO_TIMESTAMP
        return self._rolling_timestamp

    def time_waited_for_roll(self, now_ms: int, message_timestamp: int) -> int:
        first = self.first_batch_timestamp()
        if first >= 0:
            return message_timestamp - first
        return now_ms - self.created_ms

    def should_roll(
        self,
        *,
        now_ms: int,
        max_timestamp: int,
        max_offset: int,
        messages_size: int,
        segment_bytes: int,
        segment_ms: int,
    ) -> bool:
        """Kafka's LogSegment.shouldRoll."""
        reached_ms = self.time_waited_for_roll(now_ms, max_timestamp) > (
            segment_ms - self.roll_jitter_ms
        )
        return (
            self.size > segment_bytes - messages_size
            or (self.size > 0 and reached_ms)
            or self.offset_index.is_full()
            or self.time_index.is_full()
            or not self.offset_index.can_append_offset(max_offset)
        )

    # ---- durability --------------------------------------------------------------------------

    def flush(self) -> None:
        """fsync the segment and write and fsync its indexes."""
        self.files.fsync(self.log_path)
        self.offset_index.flush()
        self.time_index.flush()

    def write_indexes(self) -> list[Path]:
        """Write the indexes' new entries without fsync; the files that :meth:`flush` would
        fsync, for the caller to fsync (a flush in two steps: this one under the log's lock,
        the fsyncs outside it)."""
        self.offset_index.flush(sync=False)
        self.time_index.flush(sync=False)
        return [self.log_path, self.index_path, self.time_index_path]

    def on_become_inactive(self) -> None:
        """The segment stops being the active one: the time index gets its final entry."""
        if self.max_timestamp_so_far != NO_TIMESTAMP:
            self.time_index.maybe_append(
                self._max_timestamp, self._offset_of_max_timestamp, skip_full_check=True
            )

    def close(self) -> None:
        """Write the indexes (with the final time index entry) and release descriptors."""
        if self._max_timestamp not in (UNKNOWN, NO_TIMESTAMP):
            self.on_become_inactive()
        self.offset_index.flush()
        self.time_index.flush()
        for path in (self.log_path, self.index_path, self.time_index_path):
            self.files.forget(path)

    def delete(self) -> None:
        """Remove the segment's files (the log first, so no index outlives its segment)."""
        for path in (self.log_path, self.index_path, self.time_index_path):
            self.files.forget(path)
            path.unlink(missing_ok=True)

    # ---- truncation and recovery -------------------------------------------------------------

    def truncate_to(self, offset: int) -> int:
        """Remove every batch at or above ``offset`` (the batch holding it, too); the bytes
        removed."""
        mapping = self.translate_offset(offset)
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        if mapping is None:
            return 0
        removed = self.size - mapping.position
        self._tail = []
        self.files.truncate(self.log_path, mapping.position)
        self.size = mapping.position
        self._bytes_since_index_entry = 0
        self._max_timestamp = UNKNOWN
        self._rolling_timestamp = UNKNOWN
        if self.size:
            self._read_largest_timestamp()
        return removed

    def _read_largest_timestamp(self) -> None:
        """Kafka's readLargestTimestamp: the last time index entry, or a larger batch max
        timestamp after it."""
        best, best_offset = self.time_index.last_entry
        _, position = self.offset_index.lookup(best_offset)
        for header in self.iter_headers(position):
            if header.max_timestamp > best:
                best, best_offset = header.max_timestamp, header.last_offset
        self._max_timestamp, self._offset_of_max_timestamp = best, best_offset

    def recover(self, on_batch: Callable[[BatchHeader], None]) -> RecoverResult:
        """Check every batch, rebuild both indexes, call ``on_batch`` for each valid batch
        (leader epochs, producer state) and cut the file at the first bad batch
        (:mod:`rackwise.storage.segment_recovery`)."""
        self._tail = []
        self._max_timestamp, self._offset_of_max_timestamp = NO_TIMESTAMP, self.base_offset
        scan = scan_batches(
            self.files,
            self.log_path,
            self.size,
            self.base_offset,
            self.settings.index_interval_bytes,
            self.offset_index,
            self.time_index,
            on_batch,
        )
        valid = scan.valid_bytes
        self._max_timestamp = scan.max_timestamp
        self._offset_of_max_timestamp = scan.offset_of_max_timestamp
        truncated = self.size - valid
        dropped = 0
        if truncated:
            dropped = max(1, sum(1 for _ in self.iter_headers_tolerant(valid)))
            self.files.truncate(self.log_path, valid)
            self.size = valid
        self.time_index.maybe_append(
            self._max_timestamp, self._offset_of_max_timestamp, skip_full_check=True
        )
        self._bytes_since_index_entry = scan.bytes_since_index_entry
        self._rolling_timestamp = UNKNOWN
        self._indexes_checked = True
        return RecoverResult(
            truncated, dropped, scan.valid_batches, scan.first_bad_offset, scan.reason
        )
