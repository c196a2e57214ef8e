"""The two ways batches enter a partition's log: a leader's append of a producer's records and a
follower's append of the leader's (Kafka's UnifiedLog.append).

Goals
    A leader append validates, checks the producer's sequence, stamps and writes; a follower
    append writes the leader's batches as they are. Either answers a :class:`LogAppendInfo`; the
    checks answer one at once for a retried batch or an append of no whole batch.

Constraints
    Called by :class:`~rackwise.storage.log.PartitionLog` with its lock held, given what each
    step reads (the config, the offsets, the producer state, the active segment); the log
    applies what a step answers (a roll, the new log end offset, a flush). Nothing reaches
    the file before every check has passed: a refused request leaves the log unchanged. The
    records are stamped where they arrived (or in the one copy a read-only buffer needs) and
    written once.

Algorithm
    Leader: :func:`~rackwise.storage.batch.validate_leader_batches`, the compacted topic's key
    check of a compressed batch (:func:`rackwise.storage.record_codec.require_keys`), the
    producer check (a retry of one of the producer's last five batches answers the original
    offsets, ``duplicate=True``, and writes nothing), then offsets from the log end offset,
    the leader epoch and (LogAppendTime) the time are stamped in place (into the records
    themselves when they are a writable view, as a request's frame is; else into a copy) and
    the epoch's start is recorded. Follower: framing, magic and CRC (a partial last batch is
    dropped, as Kafka's), offsets increasing and not below the log end offset, the batches'
    epochs into the cache. Both (the log's steps): roll the active segment if the data would
    overflow it (:func:`should_roll`), :func:`write`, apply the batches to the producer state
    (:func:`update_producers`), flush when ``flush.messages`` is reached.

Worked example
    A retried batch of producer 7 (epoch 0, sequences 10-14) that was appended at offsets
    40-44: the second append answers first offset 40, last offset 44, ``duplicate=True``, and
    the log end offset does not move.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Final, NamedTuple

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
from rackwise.storage.config import LogConfig
from rackwise.storage.epochs import LeaderEpochCache
from rackwise.storage.errors import (
    OffsetsOutOfOrderException,
    RecordBatchTooLargeException,
    UnexpectedAppendOffsetException,
)
from rackwise.storage.producer_state import ProducerStateManager
from rackwise.storage.segment import LogSegment

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


class Batches(NamedTuple):
    """Checked (and, from a leader, stamped) batches ready to be written."""

    data: bytes | bytearray | memoryview
    headers: list[BatchHeader]
    """Their headers, positions within :attr:`data`."""
    best: BatchHeader
    """The batch with the largest max timestamp (the first of them)."""
    log_append_time_ms: int | None
    """The time stamped into them on a LogAppendTime topic, else None."""


def leader_batches(
    records: bytes | memoryview,
    leader_epoch: int,
    *,
    config: LogConfig,
    name: str,
    now: int,
    producer_state: ProducerStateManager,
    epochs: LeaderEpochCache,
    log_start_offset: int,
    log_end_offset: int,
) -> Batches | LogAppendInfo:
    """The leader's checks and stamping (module docstring): the batches to write from
    ``log_end_offset``, the epoch's start recorded in ``epochs``; or the original answer to
    a retried batch, with nothing to write."""
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
        partition=name,
    )
    headers = [v.header for v in validated]
    if config.is_compact and any(h.compression for h in headers):
        record_codec.require_keys(records, f" in topic partition {name}" if name else "")
    is_append_time = config.message_timestamp_type == LOG_APPEND_TIME
    duplicate = producer_state.check(headers[0], is_leader=True)  # one batch: validated
    if duplicate is not None:
        return LogAppendInfo(
            duplicate.first_offset,
            duplicate.last_offset,
            duplicate.last_offset - duplicate.first_offset + 1,
            duplicate.timestamp,
            duplicate.last_offset,
            duplicate.timestamp if is_append_time else NO_TIMESTAMP,
            log_start_offset,
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
        first_offset=log_end_offset,
        leader_epoch=leader_epoch,
        log_append_time_ms=append_time,
        max_timestamps=None if is_append_time else [v.max_timestamp for v in validated],
    )
    epochs.assign(leader_epoch, stamped[0].base_offset)
    return Batches(buf, stamped, max(stamped, key=_max_timestamp), append_time)


def follower_batches(
    records: bytes | memoryview,
    *,
    config: LogConfig,
    name: str,
    epochs: LeaderEpochCache,
    log_start_offset: int,
    log_end_offset: int,
) -> Batches | LogAppendInfo:
    """The follower's checks (module docstring): the batches to write as they are, their
    epochs recorded in ``epochs``; or the answer to an append of no whole batch."""
    headers = check_batches(records, allow_partial_tail=True)
    if not headers:
        end = log_end_offset
        return LogAppendInfo(
            end, end - 1, 0, NO_TIMESTAMP, NO_OFFSET, NO_TIMESTAMP, log_start_offset, 0
        )
    for before, after in itertools.pairwise(headers):
        if after.base_offset <= before.last_offset:
            raise OffsetsOutOfOrderException(
                f"Out of order offsets found in append to {name}: "
                f"{[h.base_offset for h in headers]}"
            )
    if headers[0].base_offset < log_end_offset:
        raise UnexpectedAppendOffsetException(
            f"Unexpected offset in append to {name}. First offset {headers[0].base_offset} "
            f"is less than the next offset {log_end_offset}. Log start offset = "
            f"{log_start_offset}"
        )
    valid = headers[-1].end
    if valid > config.segment_bytes:
        raise RecordBatchTooLargeException(
            f"Message batch size is {valid} bytes in append to partition {name}, which "
            f"exceeds the maximum configured segment size of {config.segment_bytes}."
        )
    for header in headers:
        if header.partition_leader_epoch >= 0:
            epochs.assign(header.partition_leader_epoch, header.base_offset)
    return Batches(records[:valid], headers, max(headers, key=_max_timestamp), None)


def _max_timestamp(header: BatchHeader) -> int:
    return header.max_timestamp


def should_roll(segment: LogSegment, batches: Batches, config: LogConfig, now: int) -> bool:
    """Kafka's maybeRoll: whether ``batches`` would overflow the active ``segment``."""
    return segment.should_roll(
        now_ms=now,
        max_timestamp=batches.best.max_timestamp,
        max_offset=batches.headers[-1].last_offset,
        messages_size=len(batches.data),
        segment_bytes=config.segment_bytes,
        segment_ms=config.segment_ms,
    )


def write(segment: LogSegment, batches: Batches, log_start_offset: int) -> LogAppendInfo:
    """Write ``batches`` at the end of ``segment``: the answer to the append (its last
    offset + 1 is the new log end offset)."""
    headers, best, data = batches.headers, batches.best, batches.data
    first, last = headers[0].base_offset, headers[-1].last_offset
    segment.append(
        data,
        largest_offset=last,
        largest_timestamp=best.max_timestamp,
        offset_of_max=best.last_offset,
        batches=headers,
    )
    append_time = batches.log_append_time_ms
    if append_time is None:
        return LogAppendInfo(
            first,
            last,
            last - first + 1,
            best.max_timestamp,
            best.last_offset,
            NO_TIMESTAMP,
            log_start_offset,
            len(data),
        )
    return LogAppendInfo(
        first, last, last - first + 1, append_time, last, append_time, log_start_offset, len(data)
    )


def update_producers(
    producer_state: ProducerStateManager, headers: list[BatchHeader], log_end_offset: int, now: int
) -> None:
    """Apply written batches to the producer state."""
    for header in headers:
        producer_state.update(header, now_ms=now)
    producer_state.update_map_end_offset(log_end_offset)
