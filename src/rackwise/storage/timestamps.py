"""ListOffsets by timestamp over a partition's segments (Kafka's fetchOffsetByTimestamp).

Goals
    The first record at or after a timestamp, and the record with the largest timestamp
    (``MAX_TIMESTAMP``, -3), each as (offset, timestamp, leader epoch).

Constraints
    Called by :class:`~rackwise.storage.log.PartitionLog` with its lock held, given its
    segments (and log start offset): it reads them and changes nothing. Not the hot
    path: a record-level answer walks the records of one batch (decompressing it when it is
    compressed, through :mod:`rackwise.storage.record_codec`).

Algorithm
    As Kafka: the first segment whose largest timestamp reaches the target; in it, the time
    index entry at or below the target gives an offset, the offset index a position, and the
    batches from there are scanned for the first whose max timestamp reaches the target, then
    its records for the first that does. ``MAX_TIMESTAMP``: the segment with the largest max
    timestamp, the batch holding it (found from the time index's offset), the first record
    carrying it; a LogAppendTime batch answers its base offset.

Worked example
    Batches at offsets 0-1 (timestamps 100, 105) and 2-3 (110, 115): a search for 107 skips the
    first batch (max 105) and answers (2, 110, epoch); MAX_TIMESTAMP answers (3, 115, epoch).
"""

from __future__ import annotations

from collections.abc import Sequence

from rackwise.storage import record_codec
from rackwise.storage.batch import BATCH_HEADER_BYTES, BatchHeader
from rackwise.storage.batch_records import iter_record_timestamps
from rackwise.storage.segment import LogSegment


def offset_for_timestamp(
    segments: Sequence[LogSegment], log_start_offset: int, timestamp: int
) -> tuple[int, int, int] | None:
    """(offset, timestamp, leader epoch) of the first record at or after ``timestamp`` and
    the log start offset."""
    for segment in segments:
        segment.ensure_indexes()
        if segment.largest_timestamp() < timestamp:
            continue
        found = find_offset_by_timestamp(segment, timestamp, log_start_offset)
        if found is not None:
            return found[1], found[0], found[2]
    return None


def max_timestamp_offset(segments: Sequence[LogSegment]) -> tuple[int, int, int] | None:
    """(offset, timestamp, leader epoch) of the record with the largest timestamp; None for a
    log without timestamps."""
    for segment in segments:
        segment.ensure_indexes()
    best = max(segments, key=lambda s: s.max_timestamp_so_far)
    if best.max_timestamp_so_far < 0:
        return None
    _, position = best.offset_index.lookup(best.offset_of_max_timestamp)
    for header in best.iter_headers(position):
        if header.max_timestamp == best.max_timestamp_so_far:
            offset = offset_of_timestamp_in_batch(best, header)
            return offset, header.max_timestamp, header.partition_leader_epoch
    return None


def find_offset_by_timestamp(
    segment: LogSegment, timestamp: int, starting_offset: int
) -> tuple[int, int, int] | None:
    """(timestamp, offset, leader epoch) of the first record of ``segment`` at or after
    ``timestamp`` and ``starting_offset``, or None (Kafka's LogSegment.findOffsetByTimestamp)."""
    segment.ensure_indexes()
    _, indexed_offset = segment.time_index.lookup(timestamp)
    _, position = segment.offset_index.lookup(max(indexed_offset, starting_offset))
    for header in segment.iter_headers(position):
        if header.max_timestamp < timestamp or header.last_offset < starting_offset:
            continue
        found = _first_record_at(segment, header, timestamp, starting_offset)
        if found is not None:
            return found
    return None


def offset_of_timestamp_in_batch(segment: LogSegment, header: BatchHeader) -> int:
    """The offset of the first record whose timestamp is the batch's max timestamp."""
    found = _first_record_at(segment, header, header.max_timestamp, 0)
    return found[1] if found is not None else header.last_offset


def _first_record_at(
    segment: LogSegment, header: BatchHeader, timestamp: int, starting_offset: int
) -> tuple[int, int, int] | None:
    epoch = header.partition_leader_epoch
    if header.timestamp_type == 1:
        return header.max_timestamp, max(header.base_offset, starting_offset), epoch
    body = segment.files.read(
        segment.log_path, header.position + BATCH_HEADER_BYTES, header.size - BATCH_HEADER_BYTES
    )
    if header.compression:
        body = record_codec.decompress(header.compression, body)
    for delta, ts in iter_record_timestamps(
        body, 0, len(body), header.record_count, header.base_timestamp
    ):
        offset = header.base_offset + delta
        if ts >= timestamp and offset >= starting_offset:
            return ts, offset, epoch
    return None
