"""The two ways batches enter a partition's log: a leader's append of a producer's records and a
follower's append of the leader's (Kafka's UnifiedLog.append).

Goals
    A leader append validates, checks the producer's sequence, stamps and writes; a follower
    append writes the leader's batches as they are. Either answers a :class:`LogAppendInfo`.

Constraints
    Called by :class:`~rackwise.storage.log.PartitionLog` with its lock held. Nothing reaches
    the file before every check has passed: a refused request leaves the log unchanged.

Algorithm
    Leader: :func:`~rackwise.storage.batch.validate_leader_batches`, the compacted topic's key
    check of a compressed batch (:func:`rackwise.storage.record_codec.require_keys`), the
    producer check (a retry of one of the producer's last five batches answers the original
    offsets, ``duplicate=True``, and writes nothing), then offsets from the log end offset,
    the leader epoch and (LogAppendTime) the time are stamped in place (into the records
    themselves when they are a writable view, as a request's frame is; else into a copy) and
    the epoch's start is recorded. Follower: framing, magic and CRC (a partial last batch is
    dropped, as Kafka's), offsets increasing and not below the log end offset, the batches'
    epochs into the cache. Both: roll the active segment if the data would overflow it,
    write, apply the batches to the producer state, flush when ``flush.messages`` is reached.

Worked example
    A retried batch of producer 7 (epoch 0, sequences 10-14) that was appended at offsets
    40-44: the second append answers first offset 40, last offset 44, ``duplicate=True``, and
    the log end offset does not move.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from rackwise.storage import record_codec
from rackwise.storage.batch import (
    LOG_APPEND_TIME,
    NO_TIMESTAMP,
    BatchHeader,
    TimestampRules,
    check_batches,
    stamp_batches,
    validate_leader_batches,
)
from rackwise.storage.errors import (
    OffsetsOutOfOrderException,
    RecordBatchTooLargeException,
    UnexpectedAppendOffsetException,
)
from rackwise.storage.segment import LogSegment

if TYPE_CHECKING:
    from rackwise.storage.log import PartitionLog

NO_OFFSET: Final = -1


@dataclass(frozen=True, slots=True)
class LogAppendInfo:
    """The answer to an append (Kafka's LogAppendInfo)."""

    first_offset: int
    last_offset: int
    num_messages: int
    max_timestamp: int
    offset_of_max_timestamp: int
    log_append_time_ms: int
    """The time stamped into the batches on a LogAppendTime topic, else NO_TIMESTAMP."""
    log_start_offset: int
    valid_bytes: int
    duplicate: bool = False
    """True when the request was a retried idempotent batch answered as the original."""


def append_as_leader(
    log: PartitionLog, records: bytes | memoryview, leader_epoch: int
) -> LogAppendInfo:
    """The leader's append (module docstring)."""
    now = log.clock()
    config = log.config
    validated = validate_leader_batches(
        records,
        max_message_bytes=config.max_message_bytes,
        segment_bytes=config.segment_bytes,
        rules=TimestampRules(
            now,
            config.message_timestamp_type,
            config.message_timestamp_before_max_ms,
            config.message_timestamp_after_max_ms,
        ),
        require_keys=config.is_compact,
        partition=log.name,
    )
    headers = [v.header for v in validated]
    if config.is_compact and any(h.compression for h in headers):
        record_codec.require_keys(records)
    is_append_time = config.message_timestamp_type == LOG_APPEND_TIME
    duplicate = log.producer_state.check(headers[0], is_leader=True)  # one batch: validated
    if duplicate is not None:
        return LogAppendInfo(
            duplicate.first_offset,
            duplicate.last_offset,
            duplicate.last_offset - duplicate.first_offset + 1,
            duplicate.timestamp,
            duplicate.last_offset,
            duplicate.timestamp if is_append_time else NO_TIMESTAMP,
            log.log_start_offset,
            0,
            duplicate=True,
        )
    append_time = now if is_append_time else None
    # In place where the records arrived (the request's own frame, handed over writable);
    # a copy of bytes or of a read-only view, whose owner may still read them.
    buf = (
        records if isinstance(records, memoryview) and not records.readonly else bytearray(records)
    )
    stamped = stamp_batches(
        buf,
        headers,
        first_offset=log.log_end_offset,
        leader_epoch=leader_epoch,
        log_append_time_ms=append_time,
        max_timestamps=None if is_append_time else [v.max_timestamp for v in validated],
    )
    log.epochs.assign(leader_epoch, stamped[0].base_offset)
    info = _append(log, buf, stamped, now)
    if append_time is None:
        return info
    return LogAppendInfo(
        info.first_offset,
        info.last_offset,
        info.num_messages,
        append_time,
        info.last_offset,
        append_time,
        info.log_start_offset,
        info.valid_bytes,
    )


def append_as_follower(log: PartitionLog, records: bytes | memoryview) -> LogAppendInfo:
    """The follower's append (module docstring)."""
    now = log.clock()
    headers = check_batches(records, allow_partial_tail=True)
    if not headers:
        end = log.log_end_offset
        return LogAppendInfo(
            end, end - 1, 0, NO_TIMESTAMP, NO_OFFSET, NO_TIMESTAMP, log.log_start_offset, 0
        )
    for before, after in itertools.pairwise(headers):
        if after.base_offset <= before.last_offset:
            raise OffsetsOutOfOrderException(
                f"Out of order offsets found in append to {log.name}: "
                f"{[h.base_offset for h in headers]}"
            )
    if headers[0].base_offset < log.log_end_offset:
        raise UnexpectedAppendOffsetException(
            f"Unexpected offset in append to {log.name}. First offset {headers[0].base_offset} "
            f"is less than the next offset {log.log_end_offset}. Log start offset = "
            f"{log.log_start_offset}"
        )
    valid = headers[-1].end
    if valid > log.config.segment_bytes:
        raise RecordBatchTooLargeException(
            f"Message batch size is {valid} bytes in append to partition {log.name}, which "
            f"exceeds the maximum configured segment size of {log.config.segment_bytes}."
        )
    for header in headers:
        if header.partition_leader_epoch >= 0:
            log.epochs.assign(header.partition_leader_epoch, header.base_offset)
    return _append(log, records[:valid], headers, now)


def _append(
    log: PartitionLog, data: bytes | bytearray | memoryview, headers: list[BatchHeader], now: int
) -> LogAppendInfo:
    """Roll if needed, write, and update the producer state and offsets."""
    best = max(headers, key=lambda h: h.max_timestamp)
    first, last = headers[0].base_offset, headers[-1].last_offset
    segment = _maybe_roll(log, len(data), best.max_timestamp, first, last, now)
    segment.append(
        data,
        largest_offset=last,
        largest_timestamp=best.max_timestamp,
        offset_of_max=best.last_offset,
        batches=headers,
    )
    log.log_end_offset = last + 1
    for header in headers:
        log.producer_state.update(header, now_ms=now)
    log.producer_state.update_map_end_offset(log.log_end_offset)
    if log.log_end_offset - log.recovery_point >= log.config.flush_messages:
        log.flush_to(log.log_end_offset)
    return LogAppendInfo(
        first,
        last,
        last - first + 1,
        best.max_timestamp,
        best.last_offset,
        NO_TIMESTAMP,
        log.log_start_offset,
        len(data),
    )


def _maybe_roll(
    log: PartitionLog, size: int, max_timestamp: int, first_offset: int, last_offset: int, now: int
) -> LogSegment:
    """Kafka's maybeRoll: the active segment, or a new one if the data would overflow it."""
    segment = log.active_segment
    if segment.should_roll(
        now_ms=now,
        max_timestamp=max_timestamp,
        max_offset=last_offset,
        messages_size=size,
        segment_bytes=log.config.segment_bytes,
        segment_ms=log.config.segment_ms,
    ):
        return log.roll_to(first_offset)
    return segment
