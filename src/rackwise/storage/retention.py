"""Which old segments a log may delete (Kafka's UnifiedLog.deletableSegments and its three
retention rules).

Goals
    Delete whole segments, oldest first, when they are past ``retention.ms`` (measured from
    the segment's largest timestamp), when the log is over ``retention.bytes``, or when they
    lie wholly below the log start offset (DeleteRecords moved it); the log start offset then
    moves to the first segment kept.

Constraints
    Never delete data at or above the high watermark: a segment is deletable only if the next
    segment starts at or below the high watermark (the active segment: if the log end offset
    is). An empty last segment is never deleted. Pure: the log
    (:meth:`~rackwise.storage.log.PartitionLog.delete_old_segments`) applies the rules in
    Kafka's order, moves its log start offset and deletes the files.

Algorithm
    Walk the segments oldest first while the rule and the high-watermark bound both hold;
    stop at the first that fails (Kafka deletes a prefix, never a hole). ``retention.bytes``
    deletes a segment while the log would still be at least the limit without it. With
    ``cleanup.policy`` lacking ``delete``, only the log-start rule applies.

Worked example
    Segments at 0 (1000 bytes, newest timestamp 10 000), 100 (1000 bytes, 20 000) and 200
    (active, 500 bytes, 30 000), high watermark 250, ``retention.ms`` 15 000 at time 32 000:
    segment 0 is 22 000 old, deletable; segment 100 is 12 000 old, not; the walk stops there.
    With ``retention.bytes`` 1600 instead: the log holds 2500, 900 over: deleting segment 0
    would leave 1500 < 1600, so nothing is deleted (a segment goes only if the log stays at or
    above the limit).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rackwise.storage.config import NO_LIMIT, LogConfig
from rackwise.storage.segment import LogSegment

Predicate = Callable[[LogSegment, LogSegment | None], bool]


def deletable_segments(
    segments: Sequence[LogSegment],
    predicate: Predicate,
    *,
    high_watermark: int,
    log_end_offset: int,
) -> list[LogSegment]:
    """The oldest segments, in order, for which ``predicate`` holds and whose data lies below
    the high watermark (module docstring)."""
    deletable = []
    for i, segment in enumerate(segments):
        following = segments[i + 1] if i + 1 < len(segments) else None
        upper = following.base_offset if following is not None else log_end_offset
        if following is None and segment.size == 0:
            break
        if high_watermark < upper or not predicate(segment, following):
            break
        deletable.append(segment)
    return deletable


def below_log_start(log_start_offset: int) -> Predicate:
    """A segment whose successor starts at or below the log start offset."""

    def rule(segment: LogSegment, following: LogSegment | None) -> bool:
        return following is not None and following.base_offset <= log_start_offset

    return rule


def over_retention_bytes(config: LogConfig, size_bytes: int) -> Predicate | None:
    """Segments that may go while the log stays at or above ``retention.bytes``; None when
    the log is within the limit."""
    if config.retention_bytes == NO_LIMIT or size_bytes < config.retention_bytes:
        return None
    over = [size_bytes - config.retention_bytes]

    def rule(segment: LogSegment, following: LogSegment | None) -> bool:
        if over[0] - segment.size < 0:
            return False
        over[0] -= segment.size
        return True

    return rule


def past_retention_ms(config: LogConfig, now_ms: int) -> Predicate | None:
    """Segments whose largest timestamp is more than ``retention.ms`` before ``now_ms``."""
    if config.retention_ms < 0:
        return None

    def rule(segment: LogSegment, following: LogSegment | None) -> bool:
        return now_ms - segment.largest_timestamp() > config.retention_ms

    return rule
