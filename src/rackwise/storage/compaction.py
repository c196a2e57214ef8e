"""What a cleaning keeps (Kafka's Cleaner.cleanInto with its RecordFilter, and the
SkimpyOffsetMap of the dirty section's keys).

Goals
    For every key, at least its latest record, at its original offset; a tombstone until its
    batch's delete horizon has passed; an idempotent producer's last batch (as an empty batch
    header if need be) so that its sequence numbers stay checkable.

Constraints
    Per batch: the filter decodes the batch's records (decompressing them), and answers the
    batch's own bytes when it keeps every record and needs no stamp, so untouched batches are
    copied as they are. A rebuilt batch keeps its base offset, last offset delta, producer id,
    epoch and base sequence, partition leader epoch and compression. Memory: the offset map
    holds the MD5 of each key (16 bytes) and an offset, up to its capacity.

Algorithm
    A record is kept if it lies beyond the mapped range, or is the key's latest and either has
    a value or is a tombstone whose batch's delete horizon has not passed. The first cleaning
    that keeps a tombstone stamps its batch's delete horizon (now + ``delete.retention.ms``)
    into the base timestamp with the delete-horizon attribute bit (KIP-534). An emptied batch
    is dropped unless it is its producer's last batch or the last batch of the cleaned range:
    then its header stays, with no record.

Worked example
    Map k1->2, k2->3 (latest offset 4), now 1000, ``delete.retention.ms`` 100: a batch holding
    k1=a @0 and k2=null @3 is rebuilt with k2=null alone, its delete horizon 1100 stamped; a
    cleaning at 1100 drops the tombstone, and the batch with it unless it is its producer's
    last batch or the last of the cleaned range (then its header stays, with no record).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from rackwise.storage.batch import BatchHeader
from rackwise.storage.record_codec import (
    DELETE_HORIZON_MASK,
    LOG_APPEND_TIME,
    Record,
    build_batch_from_records,
    iter_records,
)

DEFAULT_MAX_OFFSET_MAP_ENTRIES: Final = 1_000_000
"""Keys the offset map holds (Kafka sizes it from ``log.cleaner.dedupe.buffer.size``, 128 MiB
at 24 bytes a slot and a 0.9 load factor; a Python dict costs more per key)."""
NO_OFFSET: Final = -1


class OffsetMap:
    """Key -> latest offset for the dirty section, keyed by the MD5 of the key as Kafka's
    SkimpyOffsetMap (a collision, astronomically unlikely, would keep an old record)."""

    def __init__(self, capacity: int = DEFAULT_MAX_OFFSET_MAP_ENTRIES) -> None:
        self.capacity = capacity
        self.latest_offset = NO_OFFSET
        """The last offset mapped (records past it are kept as they are)."""
        self._offsets: dict[bytes, int] = {}

    def __len__(self) -> int:
        return len(self._offsets)

    def put(self, key: bytes, offset: int) -> None:
        self._offsets[hashlib.md5(key, usedforsecurity=False).digest()] = offset

    def get(self, key: bytes) -> int:
        """The latest offset of ``key``, NO_OFFSET if it is not mapped."""
        return self._offsets.get(hashlib.md5(key, usedforsecurity=False).digest(), NO_OFFSET)


@dataclass
class CleanStats:
    """What a cleaning read and kept, for its answer and its log line."""

    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_retained: int = 0


@dataclass
class RecordFilter:
    """Kafka's RecordFilter of Cleaner.cleanInto."""

    offset_map: OffsetMap
    now_ms: int
    delete_retention_ms: int
    producers: Mapping[int, tuple[int, int]]
    """Producer id -> (last data offset or NO_OFFSET, epoch) of the active producers."""
    upper_bound_offset: int
    stats: CleanStats = field(default_factory=CleanStats)

    def filter(self, header: BatchHeader, data: bytes) -> bytes:
        """The batch to write for ``header`` (``data`` its bytes): itself, a rebuilt batch,
        an empty header, or nothing."""
        records = list(iter_records(data))
        self.stats.records_read += len(records)
        kept = records if header.is_control else [r for r in records if self._keep(header, r)]
        self.stats.records_retained += len(kept)
        if not kept:
            if self._retain_empty(header):
                return rebuild_batch(header, [], None)
            return b""
        has_horizon = bool(header.attributes & DELETE_HORIZON_MASK)
        stamp = not has_horizon and any(r.value is None for r in kept)
        if len(kept) == len(records) and not stamp:
            return data
        horizon = self.now_ms + self.delete_retention_ms if stamp else None
        if has_horizon:
            horizon = header.base_timestamp
        return rebuild_batch(header, kept, horizon)

    def _keep(self, header: BatchHeader, record: Record) -> bool:
        if record.offset > self.offset_map.latest_offset:
            return True
        if record.key is None:
            return False
        if record.offset < self.offset_map.get(record.key):
            return False
        if record.value is not None:
            return True
        has_horizon = bool(header.attributes & DELETE_HORIZON_MASK)
        return not has_horizon or self.now_ms < header.base_timestamp

    def _retain_empty(self, header: BatchHeader) -> bool:
        if header.next_offset == self.upper_bound_offset:
            return True
        last = self.producers.get(header.producer_id) if header.has_producer_id else None
        if last is None:
            return False
        last_offset, epoch = last
        if last_offset != NO_OFFSET:
            return header.last_offset == last_offset
        return header.is_control and header.producer_epoch == epoch


def rebuild_batch(header: BatchHeader, kept: list[Record], horizon: int | None) -> bytes:
    return build_batch_from_records(
        kept,
        base_offset=header.base_offset,
        compression=header.compression,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        partition_leader_epoch=header.partition_leader_epoch,
        timestamp_type=header.timestamp_type,
        last_offset_delta=header.last_offset_delta,
        max_timestamp=header.max_timestamp
        if header.timestamp_type == LOG_APPEND_TIME or not kept
        else None,
        is_transactional=header.is_transactional,
        is_control=header.is_control,
        delete_horizon_ms=horizon,
    )
