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
        found = segment.find_offset_by_timestamp(
            timestamp, log_start_offset, record_codec.decompress
        )
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
            offset = best.offset_of_timestamp_in_batch(header, record_codec.decompress)
            return offset, header.max_timestamp, header.partition_leader_epoch
    return None
