"""Loading a partition's segments at open, and recovering them after an unclean shutdown
(Kafka's LogLoader).

Goals
    After a crash the log reopens to a prefix of what it held: every batch from the recovery
    point on is checked (framing, magic, CRC32C, offsets) and the first torn or corrupt one is
    cut off with everything after it; indexes are rebuilt; the leader epoch cache is truncated
    to the new log end. After a clean shutdown none of that is needed: opening reads no
    segment data except the tail of the last segment after its last index entry.

Constraints
    10,000 partitions must open quickly after a clean shutdown: per partition one directory
    listing, a ``stat`` per file, and the last segment's offset index. Every repair of a
    partition is reported in one line on the ``rackwise.storage`` logger (the partition, what
    was truncated, and the log end offset it now has).

Algorithm
    1. Interrupted file swaps (the cleaner's ``.cleaned`` -> ``.swap`` -> rename protocol, as
       Kafka's LogLoader): delete ``.deleted`` and ``.cleaned`` files; drop ``.swap`` files at
       or above the smallest ``.cleaned`` offset (an interrupted split); delete the segments
       that the remaining ``.swap`` segments replace (base offsets in [smallest swap base,
       largest swap end)), then rename the ``.swap`` files into place.
    2. List the segments; delete an index whose segment is gone; a missing index, or one whose
       size is not a whole number of entries, marks its segment for rebuilding.
    3. Unclean shutdown: from the segment holding the recovery point on, recover each segment
       (:meth:`~rackwise.storage.segment.LogSegment.recover`); at the first that truncates,
       delete every later segment. Clean shutdown: check the last segment's offset index
       (entries increasing, positions inside the segment) and rebuild it if it fails.
    4. The log end offset is the last segment's next offset; a log that ends before the log
       start offset checkpoint is emptied (Kafka: "segment files were deleted"). An empty
       directory gets a segment at the log start offset. The recovery point becomes the log
       end after a clean shutdown, else min(checkpointed recovery point, log end).

Worked example
    Segments 0 (batches 0-99) and 100 (batches 100-149, the last torn by the crash),
    recovery point 100, no clean-shutdown marker: segment 0 is trusted, segment 100 is
    scanned, the torn batch and what follows it are cut, and the log says ``t-0: recovered
    after an unclean shutdown: truncated 700 bytes (1 batch) from segment
    00000000000000000100.log at offset 149 (a torn batch: 700 bytes remain); log end offset
    now 149``.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from rackwise.storage.batch import BatchHeader
from rackwise.storage.epochs import LeaderEpochCache
from rackwise.storage.errors import CorruptRecordException
from rackwise.storage.files import FileCache
from rackwise.storage.index import OFFSET_ENTRY_BYTES, TIME_ENTRY_BYTES
from rackwise.storage.segment import LogSegment, SegmentSettings
from rackwise.storage.segment_files import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    iter_file_headers,
    parse_base_offset,
)

LOG: Final = logging.getLogger("rackwise.storage")
DELETED_SUFFIX: Final = ".deleted"
CLEANED_SUFFIX: Final = ".cleaned"
SWAP_SUFFIX: Final = ".swap"
_SEGMENT_SUFFIXES: Final = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX)


@dataclass
class LoadedLog:
    """What :func:`load_segments` leaves: the segments and the log's offsets."""

    segments: list[LogSegment]
    log_start_offset: int
    recovery_point: int
    log_end_offset: int


@dataclass
class _Repairs:
    """What loading repaired, for the partition's one log line."""

    truncated_bytes: int = 0
    truncated_batches: int = 0
    first_bad: str = ""
    deleted_segments: int = 0
    rebuilt_indexes: list[str] = field(default_factory=list)
    recovered_segments: int = 0


def _base_offset_of(name: str) -> int | None:
    """The base offset of any segment file name (``.log``, ``.index`` ... with suffixes)."""
    stem = name.split(".", 1)[0]
    return int(stem) if len(stem) == 20 and stem.isdigit() else None


def finish_interrupted_swaps(directory: Path, files: FileCache) -> None:
    """Step 1 of the module docstring."""
    names = [p.name for p in directory.iterdir() if p.is_file()]
    cleaned = [_base_offset_of(n) for n in names if n.endswith(CLEANED_SUFFIX)]
    min_cleaned = min((b for b in cleaned if b is not None), default=None)
    swaps = []
    for name in names:
        if name.endswith(DELETED_SUFFIX) or name.endswith(CLEANED_SUFFIX):
            (directory / name).unlink(missing_ok=True)
        elif name.endswith(SWAP_SUFFIX):
            base = _base_offset_of(name)
            if base is None or (min_cleaned is not None and base >= min_cleaned):
                (directory / name).unlink(missing_ok=True)
            else:
                swaps.append(name)
    swap_logs = [n for n in swaps if n.endswith(LOG_SUFFIX + SWAP_SUFFIX)]
    if not swap_logs:
        return
    low = min(_base_offset_of(n) or 0 for n in swap_logs)
    high = max(_swap_end_offset(directory / n, files) for n in swap_logs)
    for name in names:
        base = _base_offset_of(name)
        if name.endswith(_SEGMENT_SUFFIXES) and base is not None and low <= base < high:
            LOG.info("%s: deleting segment file %s replaced by a swap", directory.name, name)
            files.forget(directory / name)
            (directory / name).unlink(missing_ok=True)
    for name in swaps:
        LOG.info("%s: recovering file %s by renaming it from %s", directory.name, name, SWAP_SUFFIX)
        os.replace(directory / name, directory / name[: -len(SWAP_SUFFIX)])


def _swap_end_offset(path: Path, files: FileCache) -> int:
    base = _base_offset_of(path.name) or 0
    end = base
    with contextlib.suppress(CorruptRecordException):
        for header in iter_file_headers(files, path, 0, path.stat().st_size):
            end = header.next_offset
    files.forget(path)
    return end


def list_segments(
    directory: Path,
    files: FileCache,
    settings: SegmentSettings,
    *,
    now_ms: int,
    jitter: Callable[[], int],
) -> tuple[list[LogSegment], set[int]]:
    """Step 2: the segments in offset order, and the base offsets whose indexes must be
    rebuilt."""
    sizes: dict[str, int] = {}
    for entry in os.scandir(directory):
        if entry.is_file():
            sizes[entry.name] = entry.stat().st_size
    segments = []
    rebuild: set[int] = set()
    for name, size in sizes.items():
        for suffix, entry_bytes in (
            (INDEX_SUFFIX, OFFSET_ENTRY_BYTES),
            (TIME_INDEX_SUFFIX, TIME_ENTRY_BYTES),
        ):
            base = parse_base_offset(name, suffix)
            if base is None:
                continue
            if name[: -len(suffix)] + LOG_SUFFIX not in sizes:
                LOG.warning("%s: deleting orphaned index file %s", directory.name, name)
                (directory / name).unlink(missing_ok=True)
            elif size % entry_bytes:
                rebuild.add(base)
        base = parse_base_offset(name)
        if base is None:
            continue
        segment = LogSegment(
            directory, base, files, settings, size=size, created_ms=now_ms, roll_jitter_ms=jitter()
        )
        segments.append(segment)
        if segment.index_path.name not in sizes or segment.time_index_path.name not in sizes:
            rebuild.add(base)
    segments.sort(key=lambda s: s.base_offset)
    return segments, rebuild


def load_segments(
    directory: Path,
    files: FileCache,
    settings: SegmentSettings,
    epochs: LeaderEpochCache,
    *,
    had_clean_shutdown: bool,
    recovery_point: int,
    log_start_offset: int,
    now_ms: int,
    jitter: Callable[[], int],
) -> LoadedLog:
    """Steps 1-4 of the module docstring."""
    finish_interrupted_swaps(directory, files)
    segments, rebuild = list_segments(directory, files, settings, now_ms=now_ms, jitter=jitter)
    repairs = _Repairs()
    assign = _epoch_assigner(epochs)
    first_recovered = len(segments)
    if not had_clean_shutdown and segments:
        first_recovered = max(
            (i for i, s in enumerate(segments) if s.base_offset <= recovery_point), default=0
        )
    for i, segment in enumerate(segments[:first_recovered]):
        if segment.base_offset in rebuild or (had_clean_shutdown and i == len(segments) - 1):
            _rebuild_if_needed(segment, segment.base_offset in rebuild, assign, repairs)
    if not had_clean_shutdown:
        _recover_unflushed(segments, first_recovered, assign, repairs)
    end = segments[-1].read_next_offset() if segments else log_start_offset
    if segments and end < log_start_offset:
        LOG.warning(
            "%s: deleting all segments because the log end offset (%d) is smaller than the log "
            "start offset %d",
            directory.name,
            end,
            log_start_offset,
        )
        for segment in segments:
            segment.delete()
        segments = []
        epochs.clear()
        end = log_start_offset
    if not segments:
        segments.append(
            LogSegment.create(
                directory, log_start_offset, files, settings, now_ms=now_ms, roll_jitter_ms=jitter()
            )
        )
    start = max(log_start_offset, segments[0].base_offset)
    point = end if had_clean_shutdown else min(recovery_point, end)
    epochs.truncate_from_end(end)
    epochs.truncate_from_start(start)
    _report(directory.name, repairs, end)
    return LoadedLog(segments, start, point, end)


def _epoch_assigner(epochs: LeaderEpochCache) -> Callable[[BatchHeader], None]:
    """Recovery's epoch update (Kafka's LogSegment.recover): a batch's epoch starts an entry
    when it is above the latest."""

    def assign(header: BatchHeader) -> None:
        epoch = header.partition_leader_epoch
        latest = epochs.latest_epoch
        if epoch >= 0 and (latest is None or epoch > latest):
            epochs.assign(epoch, header.base_offset)

    return assign


def _rebuild_if_needed(
    segment: LogSegment, marked: bool, assign: Callable[[BatchHeader], None], repairs: _Repairs
) -> None:
    """Rebuild a segment's indexes if their files are missing or partial (``marked``) or
    fail the sanity check."""
    if marked:
        result = segment.recover(assign)
        segment.offset_index.flush()
        segment.time_index.flush()
        repairs.rebuilt_indexes.append(f"{segment.log_path.name} (a missing or partial index file)")
        repairs.truncated_bytes += result.truncated_bytes
        repairs.truncated_batches += result.truncated_batches
        return
    reason = segment.ensure_indexes(report=False)
    if reason:
        repairs.rebuilt_indexes.append(f"{segment.log_path.name} ({reason})")


def _recover_unflushed(
    segments: list[LogSegment], first: int, assign: Callable[[BatchHeader], None], repairs: _Repairs
) -> None:
    for i in range(first, len(segments)):
        segment = segments[i]
        result = segment.recover(assign)
        repairs.recovered_segments += 1
        if not result.truncated_bytes:
            continue
        repairs.truncated_bytes += result.truncated_bytes
        repairs.truncated_batches += result.truncated_batches
        repairs.first_bad = (
            f"from segment {segment.log_path.name} at offset {result.first_bad_offset} "
            f"({result.reason})"
        )
        for later in segments[i + 1 :]:
            repairs.truncated_bytes += later.size
            repairs.truncated_batches += sum(1 for _ in later.iter_headers_tolerant())
            later.delete()
            repairs.deleted_segments += 1
        del segments[i + 1 :]
        return


def _report(name: str, repairs: _Repairs, end: int) -> None:
    """The one line per partition (module docstring)."""
    parts = []
    if repairs.truncated_bytes or repairs.first_bad:
        batches = repairs.truncated_batches
        parts.append(
            f"truncated {repairs.truncated_bytes} bytes ({batches} batch"
            f"{'' if batches == 1 else 'es'}) {repairs.first_bad}".rstrip()
        )
    if repairs.deleted_segments:
        parts.append(f"deleted {repairs.deleted_segments} later segment(s)")
    if repairs.rebuilt_indexes:
        parts.append("rebuilt the indexes of " + ", ".join(repairs.rebuilt_indexes))
    if parts:
        LOG.warning(
            "%s: recovered after an unclean shutdown: %s; log end offset now %d"
            if repairs.recovered_segments
            else "%s: repaired at open: %s; log end offset now %d",
            name,
            "; ".join(parts),
            end,
        )
    elif repairs.recovered_segments:
        LOG.debug(
            "%s: recovered %d segment(s) after an unclean shutdown, nothing truncated; log end "
            "offset %d",
            name,
            repairs.recovered_segments,
            end,
        )
