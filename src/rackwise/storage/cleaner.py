"""The log cleaner: ``cleanup.policy=compact`` keeps the last record of each key (Kafka's
LogCleaner, Cleaner and LogCleanerManager).

Goals
    A compacted log keeps, for every key, at least its latest record, at its original offset;
    older records of the key go, and so do tombstones (a null value) once consumers have had
    ``delete.retention.ms`` to see them. An idempotent producer's last batch survives (as an
    empty batch header if need be) so that its sequence numbers stay checkable. A crash at
    any point of a cleaning leaves a log that reopens whole.

Constraints
    No thread, no wall clock: :meth:`LogCleaner.clean_once` cleans one log once, at the time
    it is given; the broker schedules it (see below). Only whole segments below the first
    uncleanable offset are cleaned: never the active segment, nothing at or above the high
    watermark (the last stable offset without transactions), nothing younger than
    ``min.compaction.lag.ms``. Memory is bounded by the offset map (MD5 of each key to its
    offset, as Kafka's SkimpyOffsetMap): a dirty section with more keys than the map holds is
    cleaned in several rounds. Records keep their offsets; a rebuilt batch keeps its base
    offset, last offset delta, producer id, epoch and base sequence, partition leader epoch
    and compression. Transactions are not tracked: transactional records are compacted like
    any other and control batches are kept (Kafka also removes aborted data and, later,
    markers).

Algorithm
    Choosing (LogCleanerManager.cleanableOffsets): the first dirty offset is the log's entry
    in ``cleaner-offset-checkpoint`` (Kafka's file in the log directory) if it lies within
    the log, else the log start offset. The first uncleanable offset is the smallest of the
    high watermark, the active segment's base offset and the base of the first dirty segment
    whose largest timestamp is within ``min.compaction.lag.ms`` of now, rounded down to its
    segment's base. The log is cleaned if dirty bytes / all bytes exceeds
    ``min.cleanable.dirty.ratio``.
    Mapping: every keyed record of the dirty section goes into the map, key to offset, until
    the map is full (at a batch boundary); the cleaned range ends after the last mapped batch.
    Copying: every segment of the log below that end is recopied, in groups whose total size
    fits ``segment.bytes`` and whose offsets fit an index. A record is kept if it lies beyond
    the mapped range, or is the key's latest and either has a value or is a tombstone whose
    batch's delete horizon has not passed. A batch keeps its bytes untouched when every record
    stays and nothing needs stamping; otherwise it is rebuilt from the kept records. The first
    cleaning that keeps a tombstone stamps its batch's delete horizon (now +
    ``delete.retention.ms``) into the base timestamp with the delete-horizon attribute bit
    (KIP-534, as Kafka does for v2 batches; the segment modification time rule of older Kafka
    applies only to v0/v1 records, which rackwise never stores). An emptied batch is dropped
    unless it is its producer's last batch or the last batch of the cleaned range: then its
    header stays, with no record.
    Swapping (crash points, in order; Kafka's ``.cleaned`` -> ``.swap`` protocol):

    ``cleaned-written``  the group's new ``<base>.log.cleaned``, ``.index.cleaned`` and
                         ``.timeindex.cleaned`` are written and fsynced (mtime: the newest
                         old segment's);
    ``swap-partial``     the ``.log.cleaned`` has been renamed to ``.log.swap``, the indexes
                         not yet;
    ``swap-renamed``     all three are ``.swap`` files;
    ``old-deleted``      the log has dropped the old segments and deleted their files;
    ``installed``        the ``.swap`` files carry their final names (the checkpoint is not
                         yet written: the next round recleans the same range).

    Recovery (rackwise.storage.recovery, as Kafka's LogLoader): ``.cleaned`` files are
    deleted, with every ``.swap`` at or above the smallest ``.cleaned`` offset (so a crash at
    ``cleaned-written`` or ``swap-partial`` leaves the old segments alone); remaining ``.swap``
    segments replace the segments whose base offsets fall in their range and lose their
    suffix (``swap-renamed``, ``old-deleted``). Every outcome holds each key's latest record.

Running it
    The broker runs a background thread (Kafka's ``log.cleaner.threads``, default 1) that
    calls :meth:`LogCleaner.clean_once` for the dirtiest compacted log, one log at a time,
    sleeping ``log.cleaner.backoff.ms`` (15 s) when nothing is cleanable; the log must not
    be truncated or deleted meanwhile (Kafka aborts and pauses the cleaning). Reads are
    throttled by ``log.cleaner.io.max.bytes.per.second`` through a :class:`Throttler` given
    the broker's clock and sleep.

Worked example
    Segments 0 (k1=a @0, k2=b @1, k1=c @2) and 3 (k2=null @3, k3=d @4), active segment 5,
    high watermark 5, no checkpoint. Dirty range [0, 5), ratio 1.0. The map: k1->2, k2->3,
    k3->4. Both segments are recopied into one: k1=c @2, k2=null @3 (its batch now carries
    delete horizon now + 86400000), k3=d @4. The checkpoint says 5. A cleaning after the
    horizon drops the tombstone too.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from rackwise.common.errors import RackwiseError
from rackwise.common.types import TopicPartition
from rackwise.storage.batch import NO_TIMESTAMP, BatchHeader, parse_header
from rackwise.storage.checkpoints import fsync_directory, read_offsets, write_offsets
from rackwise.storage.cleaning_plan import (
    CleaningRange,
    cleaning_range,
    group_by_size,
    segments_between,
)
from rackwise.storage.compaction import (
    DEFAULT_MAX_OFFSET_MAP_ENTRIES,
    CleanStats,
    OffsetMap,
    RecordFilter,
)
from rackwise.storage.index import OffsetIndex, TimeIndex
from rackwise.storage.record_codec import iter_records, require_keys
from rackwise.storage.recovery import CLEANED_SUFFIX, SWAP_SUFFIX
from rackwise.storage.segment import LogSegment, SegmentSettings
from rackwise.storage.segment_files import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    segment_file_name,
)

if TYPE_CHECKING:
    from rackwise.storage.log import PartitionLog

__all__ = ["CleanResult", "LogCleaner", "OffsetMap", "Throttler", "require_keys"]

LOG: Final = logging.getLogger("rackwise.storage")

CLEANER_OFFSET_CHECKPOINT: Final = "cleaner-offset-checkpoint"
"""Kafka's file, in each log directory: the first dirty offset of every compacted log."""
NO_OFFSET: Final = -1
CRASH_POINTS: Final = (
    "cleaned-written",
    "swap-partial",
    "swap-renamed",
    "old-deleted",
    "installed",
)
"""The points between the steps of a segment swap (module docstring), in order."""
_SUFFIXES: Final = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX)


class Throttler:
    """Kafka's Throttler for ``log.cleaner.io.max.bytes.per.second``: after each chunk of
    I/O, sleep long enough to bring the observed rate down to the desired one. Clock (ms) and
    sleep (s) are given."""

    CHECK_INTERVAL_MS: Final = 300

    def __init__(
        self, bytes_per_second: float, clock: Callable[[], int], sleep: Callable[[float], None]
    ) -> None:
        self.bytes_per_second = bytes_per_second
        self._clock, self._sleep = clock, sleep
        self._period_start = clock()
        self._observed = 0

    def maybe_throttle(self, num_bytes: int) -> None:
        self._observed += num_bytes
        elapsed = self._clock() - self._period_start
        if elapsed < self.CHECK_INTERVAL_MS:
            return
        wanted_ms = self._observed * 1000 / self.bytes_per_second
        if wanted_ms > elapsed:
            self._sleep((wanted_ms - elapsed) / 1000)
        self._period_start = self._clock()
        self._observed = 0


@dataclass(frozen=True, slots=True)
class CleanResult:
    """What one :meth:`LogCleaner.clean_once` did. ``end_offset`` is the new first dirty
    offset (checkpointed), ``reason`` why nothing was cleaned when ``cleaned`` is False."""

    cleaned: bool
    first_dirty_offset: int = NO_OFFSET
    end_offset: int = NO_OFFSET
    cleanable_ratio: float = 0.0
    segments_replaced: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_retained: int = 0
    reason: str = ""


class LogCleaningAbortedException(RackwiseError):
    """Kafka's LogCleaningAbortedException: the log changed under a cleaning, which stops
    without touching it (the next round starts again)."""


class SimulatedCrash(Exception):
    """Raised by a crash hook to stop a cleaning at a named crash point."""


class LogCleaner:
    """Cleans compacted logs, one :meth:`clean_once` at a time (module docstring).
    ``crash_hook`` is called with each crash point's name as the swap passes it (tests)."""

    def __init__(
        self,
        *,
        max_offset_map_entries: int = DEFAULT_MAX_OFFSET_MAP_ENTRIES,
        throttler: Throttler | None = None,
        crash_hook: Callable[[str], None] | None = None,
    ) -> None:
        self.max_offset_map_entries = max_offset_map_entries
        self.throttler = throttler
        self._crash_hook = crash_hook

    # ---- choosing --------------------------------------------------------------------------

    @staticmethod
    def checkpoint_path(log: PartitionLog) -> Path:
        return log.directory.parent / CLEANER_OFFSET_CHECKPOINT

    def last_clean_offset(self, log: PartitionLog) -> int | None:
        """The log's entry in ``cleaner-offset-checkpoint``, None if it has none."""
        return read_offsets(self.checkpoint_path(log)).get(TopicPartition(log.topic, log.partition))

    def cleanable_range(self, log: PartitionLog, now_ms: int) -> tuple[int, int, float]:
        """(first dirty offset, first uncleanable offset, cleanable ratio) as Kafka's
        LogCleanerManager computes them."""
        found = self._range(log, log.segments, now_ms)
        return found.first_dirty, found.first_uncleanable, found.ratio

    def _range(
        self, log: PartitionLog, segments: Sequence[LogSegment], now_ms: int
    ) -> CleaningRange:
        return cleaning_range(
            segments,
            checkpointed=self.last_clean_offset(log),
            log_start_offset=log.log_start_offset,
            log_end_offset=log.log_end_offset,
            high_watermark=log.high_watermark,
            min_compaction_lag_ms=log.config.min_compaction_lag_ms,
            now_ms=now_ms,
        )

    # ---- cleaning --------------------------------------------------------------------------

    def clean_once(self, log: PartitionLog, now_ms: int) -> CleanResult:
        """Clean ``log`` if it is compacted and dirty enough; the checkpoint moves to the end
        of what was cleaned."""
        if not log.config.is_compact:
            return CleanResult(False, reason="cleanup.policy does not include compact")
        with log._lock:
            segments = list(log.segments)
            producers = {
                pid: (e.last_offset, e.producer_epoch)
                for pid, e in log.producer_state.active_producers.items()
            }
            found = self._range(log, segments, now_ms)
        if found.cleanable_bytes == 0:
            return CleanResult(False, found.first_dirty, reason="nothing cleanable")
        if found.ratio <= log.config.min_cleanable_dirty_ratio:
            return CleanResult(
                False,
                found.first_dirty,
                cleanable_ratio=found.ratio,
                reason=f"dirty ratio {found.ratio:.3f} <= min.cleanable.dirty.ratio",
            )
        stats = CleanStats()
        offset_map = self._build_offset_map(log, segments, found, stats)
        end_offset = offset_map.latest_offset + 1
        flt = RecordFilter(
            offset_map,
            now_ms,
            log.config.delete_retention_ms,
            producers,
            found.first_uncleanable,
            stats,
        )
        groups = group_by_size(
            [s for s in segments[:-1] if s.base_offset < end_offset],
            max_bytes=log.config.segment_bytes,
            max_index_bytes=log.config.segment_index_bytes,
            first_uncleanable=found.first_uncleanable,
        )
        try:
            for group in groups:
                self._clean_group(log, group, flt)
        except LogCleaningAbortedException as e:
            LOG.warning("%s", e)
            return CleanResult(False, found.first_dirty, reason=f"aborted: {e}")
        self._write_checkpoint(log, end_offset)
        LOG.info(
            "%s: cleaned offsets [%d, %d): %d segment(s), %d of %d records kept, %d -> %d bytes",
            log.name,
            found.first_dirty,
            end_offset,
            sum(len(g) for g in groups),
            stats.records_retained,
            stats.records_read,
            stats.bytes_read,
            stats.bytes_written,
        )
        return CleanResult(
            True,
            found.first_dirty,
            end_offset,
            found.ratio,
            sum(len(g) for g in groups),
            stats.bytes_read,
            stats.bytes_written,
            stats.records_read,
            stats.records_retained,
        )

    def _batches(self, segment: LogSegment, start: int = 0) -> Iterator[tuple[BatchHeader, bytes]]:
        for header in segment.iter_headers(start):
            data = segment.files.read(segment.log_path, header.position, header.size)
            if self.throttler is not None:
                self.throttler.maybe_throttle(len(data))
            yield parse_header(data), data

    def _build_offset_map(
        self,
        log: PartitionLog,
        segments: Sequence[LogSegment],
        found: CleaningRange,
        stats: CleanStats,
    ) -> OffsetMap:
        """Kafka's buildOffsetMap: the dirty section's keys, up to the map's capacity."""
        offset_map = OffsetMap(self.max_offset_map_entries)
        offset_map.latest_offset = found.first_dirty - 1
        dirty = segments_between(segments, found.first_dirty, found.first_uncleanable)
        for i, segment in enumerate(dirty):
            start = segment.translate_offset(found.first_dirty)
            for header, data in self._batches(segment, start.position if start else segment.size):
                records = (
                    [r for r in iter_records(data) if r.key is not None]
                    if not header.is_control
                    else []
                )
                if len(offset_map) + len(records) > offset_map.capacity:
                    if offset_map.latest_offset < found.first_dirty:
                        raise ValueError(
                            f"BUG: the offset map ({offset_map.capacity} keys) cannot hold the "
                            f"batch at offset {header.base_offset} of {log.name}"
                        )
                    return offset_map
                stats.bytes_read += len(data)
                for record in records:
                    if record.key is not None and record.offset >= found.first_dirty:
                        offset_map.put(record.key, record.offset)
                if header.last_offset >= found.first_dirty:
                    offset_map.latest_offset = header.last_offset
            following = dirty[i + 1].base_offset if i + 1 < len(dirty) else found.first_uncleanable
            offset_map.latest_offset = following - 1
        return offset_map

    def _clean_group(
        self, log: PartitionLog, group: Sequence[LogSegment], flt: RecordFilter
    ) -> None:
        """Kafka's cleanSegments: recopy ``group`` into one segment and swap it in."""
        base = group[0].base_offset
        cleaned = {
            s: log.directory / (segment_file_name(base, s) + CLEANED_SUFFIX) for s in _SUFFIXES
        }
        settings = SegmentSettings(log.config.index_interval_bytes, log.config.segment_index_bytes)
        size = self._write_cleaned(log, group, flt, cleaned, settings)
        newest = max(os.stat(s.log_path).st_mtime_ns for s in group)
        os.utime(cleaned[LOG_SUFFIX], ns=(newest, newest))
        self._crash("cleaned-written")
        swaps = {
            s: p.with_name(p.name.removesuffix(CLEANED_SUFFIX) + SWAP_SUFFIX)
            for s, p in cleaned.items()
        }
        for i, suffix in enumerate(_SUFFIXES):
            log.files.forget(cleaned[suffix])
            os.replace(cleaned[suffix], swaps[suffix])
            if i == 0:
                self._crash("swap-partial")
        fsync_directory(log.directory)
        self._crash("swap-renamed")
        with log._lock:
            if not all(s in log.segments for s in group):
                # Kafka's LogCleaningAbortedException: the log changed (truncation,
                # retention) while the group was being cleaned.
                for path in swaps.values():
                    log.files.forget(path)
                    path.unlink(missing_ok=True)
                raise LogCleaningAbortedException(
                    f"{log.name}: segment(s) {[s.base_offset for s in group]} left the log "
                    "while being cleaned"
                )
            self._install(log, group, swaps, base, size, settings)
        LOG.info(
            "%s: swapped in cleaned segment %d for %s",
            log.name,
            base,
            ", ".join(str(s.base_offset) for s in group),
        )

    def _write_cleaned(
        self,
        log: PartitionLog,
        group: Sequence[LogSegment],
        flt: RecordFilter,
        paths: Mapping[str, Path],
        settings: SegmentSettings,
    ) -> int:
        """Write the cleaned segment's three ``.cleaned`` files, fsynced; its size."""
        base = group[0].base_offset
        files = log.files
        offset_index = OffsetIndex(paths[INDEX_SUFFIX], base, settings.max_index_bytes, files)
        time_index = TimeIndex(paths[TIME_INDEX_SUFFIX], base, settings.max_index_bytes, files)
        for path in paths.values():
            files.create(path)
        offset_index.reset()
        time_index.reset()
        position = since_entry = 0
        max_timestamp, offset_of_max = NO_TIMESTAMP, base
        for segment in group:
            for header, data in self._batches(segment):
                flt.stats.bytes_read += len(data)
                out = flt.filter(header, data)
                if not out:
                    continue
                if header.max_timestamp > max_timestamp:
                    max_timestamp, offset_of_max = header.max_timestamp, header.last_offset
                if since_entry > settings.index_interval_bytes:
                    offset_index.append(header.last_offset, position)
                    time_index.maybe_append(max_timestamp, offset_of_max)
                    since_entry = 0
                files.write(paths[LOG_SUFFIX], position, out)
                position += len(out)
                since_entry += len(out)
                flt.stats.bytes_written += len(out)
        if max_timestamp != NO_TIMESTAMP:
            time_index.maybe_append(max_timestamp, offset_of_max, skip_full_check=True)
        files.fsync(paths[LOG_SUFFIX])
        offset_index.flush()
        time_index.flush()
        return position

    def _install(
        self,
        log: PartitionLog,
        group: Sequence[LogSegment],
        swaps: Mapping[str, Path],
        base: int,
        size: int,
        settings: SegmentSettings,
    ) -> None:
        """Kafka's replaceSegments, steps 2 and 3, under the log's lock."""
        first = log.segments.index(group[0])
        del log.segments[first : first + len(group)]
        for segment in group:
            segment.delete()
        self._crash("old-deleted")
        for suffix in _SUFFIXES:
            log.files.forget(swaps[suffix])
            os.replace(swaps[suffix], log.directory / segment_file_name(base, suffix))
        fsync_directory(log.directory)
        created_ms = os.stat(log.directory / segment_file_name(base)).st_mtime_ns // 1_000_000
        new = LogSegment(log.directory, base, log.files, settings, size=size, created_ms=created_ms)
        log.segments.insert(first, new)
        self._crash("installed")

    def maybe_truncate_checkpoint(self, log: PartitionLog, offset: int) -> None:
        """After the log was truncated to ``offset``: a checkpoint above it comes down to it
        (Kafka's LogCleaner.maybeTruncateCheckpoint)."""
        last = self.last_clean_offset(log)
        if last is not None and last > offset:
            self._write_checkpoint(log, offset)

    def _write_checkpoint(self, log: PartitionLog, end_offset: int) -> None:
        path = self.checkpoint_path(log)
        offsets = read_offsets(path)
        offsets[TopicPartition(log.topic, log.partition)] = end_offset
        write_offsets(path, offsets)

    def _crash(self, point: str) -> None:
        if self._crash_hook is not None:
            self._crash_hook(point)
