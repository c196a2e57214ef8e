"""Kafka's record batch v2 as bytes: the header, its checks, offsets written in place.

Goals
    Handle a producer's batch as the bytes it sent: read the 61-byte header, check framing and
    CRC32C, validate it as Kafka's leader does (``UnifiedLog.analyzeAndValidateRecords`` and
    ``LogValidator``), then write the offsets, the partition leader epoch and (for
    ``LogAppendTime``) the timestamp into the header in place. What is written to a segment is
    what the producer sent, byte for byte, except those header fields.

Constraints
    Cost per batch, not per record: the header is one ``struct`` unpack; the record walk of an
    uncompressed batch (:mod:`rackwise.storage.batch_records`) reads varints without building
    objects. Compressed batches are stored as sent and not decompressed (below).

Algorithm
    The header's layout is in :mod:`rackwise.records.batch_v2` (whose names this module
    re-exports). The CRC32C covers bytes 21 to the end, so the base offset (byte 0) and the
    leader epoch (byte 12) can be written without touching it; changing the attributes or the
    max timestamp (LogAppendTime) recomputes it, as Kafka's ``DefaultRecordBatch.setMaxTimestamp``
    does.

    Leader-side validation, in Kafka's order: framing (a batch shorter than 61 bytes, a length
    that runs past the data or bytes after the last batch: CORRUPT_MESSAGE); magic 2 (Kafka 4
    refuses v0/v1 batches in a v3+ produce request with INVALID_RECORD, "Produce requests ...
    are only allowed to contain record batches with magic version 2", and v0-v2 produce
    requests no longer exist, so rackwise answers INVALID_RECORD too); exactly one batch
    (LogValidator: INVALID_RECORD); base offset 0 (INVALID_RECORD); size against
    ``max.message.bytes`` (MESSAGE_TOO_LARGE); CRC (CORRUPT_MESSAGE); record count equal to
    lastOffsetDelta + 1 and positive, no control batch, a sequence for an idempotent batch
    (INVALID_RECORD); the records' structure, offset deltas 0, 1, 2 ... and keys of a compacted
    topic (INVALID_RECORD); timestamps (INVALID_TIMESTAMP); the whole request against
    ``segment.bytes`` (RECORD_LIST_TOO_LARGE).

    Inside a compressed batch Kafka's LogValidator decompresses every record and checks its
    structure, that its inner offsets run 0, 1, 2 ... (rewriting the batch when they do not),
    that it has a key on a compacted topic, each record's timestamp, and it resets the batch's
    max timestamp to the records' largest. rackwise checks the header only: count against
    lastOffsetDelta, the CRC, the base and max timestamps against the CreateTime bounds, and
    keys on a compacted topic (through the record codec, only for compacted topics). It does
    not decompress on the hot path because the compressed path is the high-throughput one and
    decompressing and walking every record in Python would cost a multiple of the append
    itself; the producer's CRC already protects the payload, and consumers decode it anyway.

    Deviations, each stricter than Kafka: a batch whose producer set the LogAppendTime bit is
    refused (Kafka refuses it unless a record's timestamp is set on a CreateTime topic); an
    uncompressed batch whose offset deltas are not 0, 1, 2 ... is refused (Kafka's
    uncompressed path does not look at them); trailing bytes after the last whole batch are
    refused (Kafka drops them silently).

Worked example
    A producer sends one uncompressed batch of 3 records, base offset 0, CRC c. The log end
    offset is 42 and the leader epoch 7: :func:`stamp_batches` writes 42 at byte 0 and 7 at
    byte 12; the CRC stays c. On a LogAppendTime topic at time 1700000000000 it also sets bit 3
    of the attributes and the max timestamp, and writes the new CRC at byte 17.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from crc32c import crc32c

from rackwise.records.batch_v2 import (
    ATTRIBUTES_AT,
    ATTRIBUTES_STRUCT,
    BATCH_HEADER_BYTES,
    COMPRESSION_MASK,
    COMPRESSION_NAMES,
    COMPRESSION_NONE,
    CONTROL_MASK,
    CRC_AT,
    CREATE_TIME,
    HEADER_SIZE_UP_TO_MAGIC,
    INT32_MAX,
    INT32_STRUCT,
    INT64_STRUCT,
    LOG_APPEND_TIME,
    LOG_OVERHEAD,
    LONG_MAX,
    MAGIC_AT,
    MAGIC_V2,
    MAX_TIMESTAMP_AT,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    PARTITION_LEADER_EPOCH_AT,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    UINT32_STRUCT,
    BatchHeader,
    build_batch,
    check_batches,
    compute_crc,
    crc_matches,
    increment_sequence,
    iter_headers,
    parse_header,
)
from rackwise.storage.batch_records import (
    iter_null_key_deltas,
    iter_record_timestamps,
    walk_records,
)
from rackwise.storage.errors import (
    CorruptRecordException,
    InvalidRecordException,
    InvalidTimestampException,
    RecordBatchTooLargeException,
    RecordTooLargeException,
    record_errors_exception,
)

__all__ = [
    "ATTRIBUTES_AT",
    "BATCH_HEADER_BYTES",
    "COMPRESSION_MASK",
    "COMPRESSION_NAMES",
    "COMPRESSION_NONE",
    "CONTROL_MASK",
    "CRC_AT",
    "CREATE_TIME",
    "INT32_MAX",
    "LOG_APPEND_TIME",
    "LOG_OVERHEAD",
    "LONG_MAX",
    "MAGIC_V2",
    "MAX_TIMESTAMP_AT",
    "NO_PARTITION_LEADER_EPOCH",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "NO_SEQUENCE",
    "NO_TIMESTAMP",
    "PARTITION_LEADER_EPOCH_AT",
    "TIMESTAMP_TYPE_MASK",
    "TRANSACTIONAL_MASK",
    "BatchHeader",
    "TimestampRules",
    "ValidatedBatch",
    "build_batch",
    "check_batches",
    "compute_crc",
    "crc_matches",
    "increment_sequence",
    "iter_headers",
    "parse_header",
    "stamp_batches",
    "validate_batches",
    "validate_leader_batches",
]


@dataclass(frozen=True, slots=True)
class ValidatedBatch:
    """A batch that passed leader-side validation, with what stamping it needs."""

    header: BatchHeader
    max_timestamp: int
    """The records' largest timestamp (the header's for a compressed batch)."""


@dataclass(frozen=True, slots=True)
class TimestampRules:
    """The topic's timestamp settings and the broker's clock at the append."""

    now_ms: int
    timestamp_type: str = CREATE_TIME
    before_max_ms: int = LONG_MAX
    after_max_ms: int = 3_600_000


def validate_batches(
    data: bytes,
    *,
    max_message_bytes: int,
    now_ms: int,
    segment_bytes: int = INT32_MAX,
    timestamp_type: str = CREATE_TIME,
    timestamp_before_max_ms: int = LONG_MAX,
    timestamp_after_max_ms: int = 3_600_000,
    require_keys: bool = False,
    partition: str = "",
) -> list[BatchHeader]:
    """Leader-side checks of a producer's records (module docstring); the headers."""
    rules = TimestampRules(now_ms, timestamp_type, timestamp_before_max_ms, timestamp_after_max_ms)
    validated = validate_leader_batches(
        data,
        max_message_bytes=max_message_bytes,
        segment_bytes=segment_bytes,
        rules=rules,
        require_keys=require_keys,
        partition=partition,
    )
    return [v.header for v in validated]


def validate_leader_batches(
    data: bytes | memoryview,
    *,
    max_message_bytes: int,
    segment_bytes: int,
    rules: TimestampRules,
    require_keys: bool,
    partition: str,
) -> list[ValidatedBatch]:
    """:func:`validate_batches` with the records' max timestamps, which stamping needs."""
    where = f" in topic partition {partition}" if partition else ""
    if len(data) >= HEADER_SIZE_UP_TO_MAGIC and data[MAGIC_AT] != MAGIC_V2:
        raise InvalidRecordException(
            f"Produce requests are only allowed to contain record batches with magic version "
            f"{MAGIC_V2}; this batch has magic {data[MAGIC_AT]}{where}"
        )
    headers = list(iter_headers(data))
    valid = headers[-1].end if headers else 0
    if valid != len(data):
        raise CorruptRecordException(
            f"Cannot append record batch with illegal length {len(data)}{where}: "
            f"{len(data) - valid} bytes after the last whole batch at position {valid}"
        )
    if not headers:
        raise InvalidRecordException(f"Record batch has no batches at all{where}")
    if len(headers) > 1:
        raise InvalidRecordException(f"Compressed outer record has more than one batch{where}")
    header = headers[0]
    if header.base_offset != 0:
        raise InvalidRecordException(
            f"The baseOffset of the record batch in the append to {partition} should be 0, "
            f"but it is {header.base_offset}"
        )
    if header.size > max_message_bytes:
        raise RecordTooLargeException(
            f"The record batch size in the append to {partition} is {header.size} bytes which "
            f"exceeds the maximum configured value of {max_message_bytes}."
        )
    if not crc_matches(data, header):
        raise CorruptRecordException(f"Record is corrupt (stored crc = {header.crc}){where}.")
    _check_batch_fields(header, where)
    max_timestamp = _check_records(data, header, rules, require_keys, where)
    if len(data) > segment_bytes:
        raise RecordBatchTooLargeException(
            f"Message batch size is {len(data)} bytes in append to partition {partition}, "
            f"which exceeds the maximum configured segment size of {segment_bytes}."
        )
    return [ValidatedBatch(header, max_timestamp)]


def _check_batch_fields(header: BatchHeader, where: str) -> None:
    """Kafka's LogValidator.validateBatch for a client's v2 batch."""
    count_from_offsets = header.last_offset_delta + 1
    if count_from_offsets <= 0:
        raise InvalidRecordException(
            f"Batch has an invalid offset range: [{header.base_offset}, {header.last_offset}]"
            f"{where}"
        )
    if header.record_count <= 0:
        raise InvalidRecordException(
            f"Invalid reported count for record batch: {header.record_count}{where}"
        )
    if count_from_offsets != header.record_count:
        raise InvalidRecordException(
            f"Inconsistent batch offset range [{header.base_offset}, {header.last_offset}] "
            f"and count of records {header.record_count}{where}"
        )
    if header.is_control:
        raise InvalidRecordException(f"Clients are not allowed to write control records{where}")
    if header.has_producer_id and header.base_sequence < 0:
        raise InvalidRecordException(
            f"Invalid sequence number {header.base_sequence} in record batch with producerId "
            f"{header.producer_id}{where}"
        )


def _check_records(
    data: bytes | memoryview,
    header: BatchHeader,
    rules: TimestampRules,
    require_keys: bool,
    where: str,
) -> int:
    """Structure, keys and timestamps of the records; their largest timestamp."""
    if header.timestamp_type == 1:
        raise InvalidTimestampException(
            "Invalid timestamp type in message. Producer should not set timestamp type to "
            "LogAppendTime.",
            record_errors=[(0, "Producer should not set timestamp type to LogAppendTime.")],
        )
    if header.compression == COMPRESSION_NONE:
        summary = walk_records(
            data,
            header.position + BATCH_HEADER_BYTES,
            header.end,
            header.record_count,
            header.base_timestamp,
        )
        lo, hi = summary.min_timestamp, summary.max_timestamp
        key_errors = (
            _key_errors(data, header, where) if require_keys and summary.has_null_key else []
        )
    else:
        stamps = [t for t in (header.base_timestamp, header.max_timestamp) if t != NO_TIMESTAMP]
        lo = min(stamps, default=NO_TIMESTAMP)
        hi = header.max_timestamp
        key_errors = []  # a compressed batch's keys are checked once decompressed (appends)
    timestamp_errors: list[tuple[int, str]] = []
    if rules.timestamp_type == CREATE_TIME and lo != NO_TIMESTAMP:
        low_bound = rules.now_ms - rules.before_max_ms
        high_bound = rules.now_ms + rules.after_max_ms
        if lo < low_bound or hi > high_bound:
            timestamp_errors = _timestamp_errors(data, header, low_bound, high_bound)
    if key_errors or timestamp_errors:
        raise record_errors_exception(key_errors, timestamp_errors)
    return hi


def _key_errors(data: bytes | memoryview, header: BatchHeader, where: str) -> list[tuple[int, str]]:
    """The records without a key, each with Kafka's message (a compacted topic's refusal)."""
    message = f"Compacted topic cannot accept message without key{where}"
    deltas = iter_null_key_deltas(
        data, header.position + BATCH_HEADER_BYTES, header.end, header.record_count
    )
    return [(delta, message) for delta in deltas]


def _timestamp_errors(
    data: bytes | memoryview, header: BatchHeader, low: int, high: int
) -> list[tuple[int, str]]:
    """The records of a batch with timestamps out of range, each named (for an uncompressed
    batch; a compressed one by its first and last) as Kafka's record errors do."""
    if header.compression == COMPRESSION_NONE:
        pairs = list(
            iter_record_timestamps(
                data,
                header.position + BATCH_HEADER_BYTES,
                header.end,
                header.record_count,
                header.base_timestamp,
            )
        )
    else:
        pairs = [(0, header.base_timestamp), (header.last_offset_delta, header.max_timestamp)]
    bound = f"The timestamp should be within [{low}, {high}]"
    return [
        (delta, f"Timestamp {ts} of message with offset {delta} is out of range. {bound}")
        for delta, ts in pairs
        if ts != NO_TIMESTAMP and not low <= ts <= high
    ]


def stamp_batches(
    buf: bytearray | memoryview,
    headers: Sequence[BatchHeader],
    *,
    first_offset: int,
    leader_epoch: int,
    log_append_time_ms: int | None,
    max_timestamps: Sequence[int] | None = None,
) -> list[BatchHeader]:
    """Write consecutive base offsets from ``first_offset`` and ``leader_epoch`` into each
    batch; with ``log_append_time_ms``, also the LogAppendTime bit and max timestamp, and the
    new CRC. ``max_timestamps`` (CreateTime) corrects a header whose max timestamp differs
    from its records' largest, as Kafka's ``setMaxTimestamp`` does. The new headers."""
    stamped = []
    offset = first_offset
    for i, header in enumerate(headers):
        pos = header.position
        INT64_STRUCT.pack_into(buf, pos, offset)
        INT32_STRUCT.pack_into(buf, pos + PARTITION_LEADER_EPOCH_AT, leader_epoch)
        attributes, max_timestamp = header.attributes, header.max_timestamp
        if log_append_time_ms is not None:
            attributes |= TIMESTAMP_TYPE_MASK
            max_timestamp = log_append_time_ms
        elif max_timestamps is not None:
            max_timestamp = max_timestamps[i]
        crc = header.crc
        if attributes != header.attributes or max_timestamp != header.max_timestamp:
            ATTRIBUTES_STRUCT.pack_into(buf, pos + ATTRIBUTES_AT, attributes)
            INT64_STRUCT.pack_into(buf, pos + MAX_TIMESTAMP_AT, max_timestamp)
            crc = crc32c(memoryview(buf)[pos + ATTRIBUTES_AT : header.end])
            UINT32_STRUCT.pack_into(buf, pos + CRC_AT, crc)
        stamped.append(
            BatchHeader(  # dataclasses.replace, without its per-field walk (the hot path)
                header.position,
                offset,
                header.batch_length,
                leader_epoch,
                header.magic,
                crc,
                attributes,
                header.last_offset_delta,
                header.base_timestamp,
                max_timestamp,
                header.producer_id,
                header.producer_epoch,
                header.base_sequence,
                header.record_count,
            )
        )
        offset += header.last_offset_delta + 1
    return stamped
