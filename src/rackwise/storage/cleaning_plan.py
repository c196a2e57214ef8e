"""What one cleaning of a compacted log covers (Kafka's LogCleanerManager.cleanableOffsets,
Cleaner's logSegments(from, to) and groupSegmentsBySize).

Goals
    From a log's segments and offsets, the dirty section a cleaning may rewrite and how dirty
    the log is; and the groups of consecutive segments that each become one cleaned segment.

Constraints
    Pure: given the segments and the offsets, it reads no record (only the segments' sizes,
    index entry counts and largest timestamps); :class:`~rackwise.storage.cleaner.LogCleaner`
    does the cleaning. Never the active segment, nothing at or above the high watermark,
    nothing younger than ``min.compaction.lag.ms``.

Algorithm
    The first dirty offset is the log's entry in ``cleaner-offset-checkpoint`` if it lies
    within the log, else the log start offset. The first uncleanable offset is the smallest of
    the high watermark, the active segment's base offset and the base of the first dirty
    segment whose largest timestamp is within ``min.compaction.lag.ms`` of now, rounded down
    to its segment's base. The ratio is dirty bytes / all bytes. A group takes the next
    segment while the log bytes fit ``segment.bytes``, each index's bytes fit
    ``segment.index.bytes``, and its offsets fit one index (an int32 from the group's base).

Worked example
    Segments 0 (400 bytes), 3 (600 bytes) and active 5, high watermark 5, checkpoint 3: the
    first dirty offset is 3, the first uncleanable 5 (the active segment), clean bytes 400,
    cleanable 600, ratio 0.6. With ``segment.bytes`` 1000, segments 0 and 3 form one group.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rackwise.storage.index import OFFSET_ENTRY_BYTES, TIME_ENTRY_BYTES
from rackwise.storage.segment import LogSegment


@dataclass(frozen=True, slots=True)
class CleaningRange:
    """The offsets of one cleaning (LogCleanerManager's LogToClean)."""

    first_dirty: int
    first_uncleanable: int
    clean_bytes: int
    cleanable_bytes: int

    @property
    def ratio(self) -> float:
        total = self.clean_bytes + self.cleanable_bytes
        return self.cleanable_bytes / total if total else 0.0


def cleaning_range(
    segments: Sequence[LogSegment],
    *,
    checkpointed: int | None,
    log_start_offset: int,
    log_end_offset: int,
    high_watermark: int,
    min_compaction_lag_ms: int,
    now_ms: int,
) -> CleaningRange:
    """The dirty section of a log with ``segments`` (module docstring); ``checkpointed`` is
    its entry in ``cleaner-offset-checkpoint``, None if it has none."""
    first_dirty = log_start_offset
    if checkpointed is not None and log_start_offset <= checkpointed <= log_end_offset:
        first_dirty = checkpointed
    active = segments[-1]
    limits = [high_watermark, active.base_offset]
    lag_ms = max(min_compaction_lag_ms, 0)
    if lag_ms > 0:
        for segment in segments_between(segments, first_dirty, active.base_offset):
            if segment.largest_timestamp() > now_ms - lag_ms:
                limits.append(segment.base_offset)
                break
    uncleanable = max(first_dirty, min(limits))
    holding = segments_between(segments, uncleanable, active.base_offset)
    first_uncleanable = holding[0].base_offset if holding else active.base_offset
    clean = sum(s.size for s in segments_between(segments, 0, first_dirty))
    low = min(first_dirty, first_uncleanable)
    cleanable = sum(s.size for s in segments_between(segments, low, first_uncleanable))
    return CleaningRange(first_dirty, first_uncleanable, clean, cleanable)


def segments_between(
    segments: Sequence[LogSegment], low: int, high: int | None
) -> list[LogSegment]:
    """Kafka's logSegments(from, to): the segment holding ``low`` and those after it whose
    base offset is below ``high``."""
    out = []
    for i, segment in enumerate(segments):
        following = segments[i + 1].base_offset if i + 1 < len(segments) else None
        if following is not None and following <= low:
            continue
        if high is not None and segment.base_offset >= high:
            break
        out.append(segment)
    return out


def group_by_size(
    segments: Sequence[LogSegment], *, max_bytes: int, max_index_bytes: int, first_uncleanable: int
) -> list[list[LogSegment]]:
    """Kafka's groupSegmentsBySize: consecutive segments whose log and index sizes fit one
    segment and whose offsets fit one index."""
    groups: list[list[LogSegment]] = []
    i = 0
    while i < len(segments):
        group = [segments[i]]
        log_bytes = segments[i].size
        index_bytes = segments[i].offset_index.entries * OFFSET_ENTRY_BYTES
        time_bytes = segments[i].time_index.entries * TIME_ENTRY_BYTES
        i += 1
        while i < len(segments):
            nxt = segments[i]
            last = (
                segments[i + 1].base_offset - 1 if i + 1 < len(segments) else first_uncleanable - 1
            )
            if (
                log_bytes + nxt.size > max_bytes
                or index_bytes + nxt.offset_index.entries * OFFSET_ENTRY_BYTES > max_index_bytes
                or time_bytes + nxt.time_index.entries * TIME_ENTRY_BYTES > max_index_bytes
                or (nxt.size > 0 and last - group[-1].base_offset > 2**31 - 1)
            ):
                break
            group.append(nxt)
            log_bytes += nxt.size
            index_bytes += nxt.offset_index.entries * OFFSET_ENTRY_BYTES
            time_bytes += nxt.time_index.entries * TIME_ENTRY_BYTES
            i += 1
        groups.append(group)
    return groups
