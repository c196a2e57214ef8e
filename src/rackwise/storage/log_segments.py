"""A log's segments in offset order (Kafka's LogSegments): finding the segment of an offset,
reading whole batches across them, walking their headers, choosing what a flush must fsync,
and creating a segment with the log's settings and roll jitter.

Functions over the list :class:`~rackwise.storage.log.PartitionLog` keeps, called with its
lock held; they change no offset of the log's (the log applies what they answer). A read
costs one bisection of the base offsets and the read of the segment holding the offset.
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from rackwise.storage.batch import BatchHeader
from rackwise.storage.config import LogConfig
from rackwise.storage.files import FileCache, FileRegion
from rackwise.storage.producer_state import ProducerStateManager
from rackwise.storage.segment import LogSegment, SegmentSettings


@dataclass(frozen=True, slots=True)
class FetchSlice:
    """Whole batches read from the log."""

    records: bytes | FileRegion
    """The batches' bytes, or where they lie in a segment file (a zero-copy read)."""
    first_offset: int
    """Base offset of the first batch returned; the fetch offset when ``records`` is empty."""


def floor_index(segments: Sequence[LogSegment], offset: int) -> int:
    """The index of the segment that would hold ``offset`` (-1 if before the first)."""
    return bisect.bisect_right([s.base_offset for s in segments], offset) - 1


def read(
    segments: Sequence[LogSegment],
    offset: int,
    *,
    max_bytes: int,
    max_offset: int,
    min_one_batch: bool,
    zero_copy: bool,
) -> FetchSlice:
    """Whole batches from the one holding ``offset``, from the first segment that has any
    (:meth:`LogSegment.read`); an empty slice at ``offset`` if none does."""
    for segment in segments[max(floor_index(segments, offset), 0) :]:
        segment.ensure_indexes()
        found = segment.read(
            offset,
            max_bytes=max_bytes,
            max_offset=max_offset,
            min_one_batch=min_one_batch,
            zero_copy=zero_copy,
        )
        if found is not None:
            data, first = found
            return FetchSlice(data, first) if len(data) else FetchSlice(b"", offset)
    return FetchSlice(b"", offset)


def headers_from(
    segments: Sequence[LogSegment], offset: int, log_end_offset: int
) -> Iterator[BatchHeader]:
    """Every batch whose last offset is at least ``offset``, in order."""
    if offset >= log_end_offset:
        return
    for segment in segments[max(floor_index(segments, offset), 0) :]:
        first = segment.translate_offset(offset)
        if first is not None:
            yield from segment.iter_headers(first.position)


def replay_producers(
    producer_state: ProducerStateManager,
    segments: Sequence[LogSegment],
    replay_from: int,
    log_end_offset: int,
    now_ms: int,
) -> None:
    """Apply the batches from ``replay_from`` to the log end to the producer state (after it
    loaded the snapshot at ``replay_from``)."""
    for header in headers_from(segments, replay_from, log_end_offset):
        producer_state.update(header, now_ms=now_ms)
    producer_state.update_map_end_offset(log_end_offset)


def unflushed(
    segments: Sequence[LogSegment], recovery_point: int, offset: int
) -> tuple[list[LogSegment], bool]:
    """The segments holding offsets from ``recovery_point`` up to ``offset``, and whether one
    was created since the recovery point (its directory entry needs an fsync too, Kafka's
    rule)."""
    first = max(floor_index(segments, recovery_point), 0)
    dirty = [s for s in segments[first:] if s.base_offset < offset]
    return dirty, any(s.base_offset >= recovery_point for s in dirty)


def settings(config: LogConfig) -> SegmentSettings:
    """The settings a new segment takes from the topic's config."""
    return SegmentSettings(config.index_interval_bytes, config.segment_index_bytes)


def segment_jitter(config: LogConfig, rng: random.Random) -> int:
    """Kafka's randomSegmentJitter: uniform in [0, min(segment.jitter.ms, segment.ms))."""
    if config.segment_jitter_ms <= 0:
        return 0
    return rng.randrange(min(config.segment_jitter_ms, config.segment_ms))


def create_segment(
    directory: Path,
    base_offset: int,
    files: FileCache,
    config: LogConfig,
    rng: random.Random,
    *,
    now_ms: int,
) -> LogSegment:
    """A new empty segment at ``base_offset`` with the config's settings and a roll jitter."""
    return LogSegment.create(
        directory,
        base_offset,
        files,
        settings(config),
        now_ms=now_ms,
        roll_jitter_ms=segment_jitter(config, rng),
    )
