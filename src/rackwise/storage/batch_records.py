"""The records inside an uncompressed v2 batch, walked as varints without building objects.

Goals
    Check the structure of every record of a batch the way Kafka's ``DefaultRecord.readFrom``
    does (sizes, varints, header counts, no bytes left over), find the records' smallest and
    largest timestamps, whether any key is null, and that offset deltas run 0, 1, 2, ...;
    (the encoder of records and batches is :mod:`rackwise.records.batch_v2`'s).

Constraints
    The batch is the unit on the hot path: no Python object per record. Large batches are
    walked by a compiled kernel (:mod:`rackwise.storage.records_kernel`); in Python,
    :func:`walk_records_interpreted` keeps a handful of integers in local variables and reads
    single-byte varints (the common case) inline. Only the failure path and
    ListOffsets-by-timestamp use the generator :func:`iter_record_timestamps`, which yields
    one tuple per record.

Algorithm
    A record (Kafka's DefaultRecord, varints zig-zag as Kafka's ``ByteUtils``)::

        length            varint   bytes of the body that follows
        attributes        int8     unused, 0
        timestampDelta    varlong  from the batch's base timestamp
        offsetDelta       varint   from the batch's base offset
        keyLength         varint   -1 for a null key
        key               bytes
        valueLength       varint   -1 for a null value
        value             bytes
        headerCount       varint   at least 0
        headers           headerCount times: keyLength varint (>= 0), key (UTF-8),
                                            valueLength varint (-1 for null), value

    Each record must end exactly where its length says, and the batch's records must end
    exactly at the batch's end (Kafka: "Incorrect declared batch size").

Worked example
    A record with key ``b"k"``, value ``b"v"``, no headers, offset delta 0, timestamp delta 0
    is ``10 00 00 00 02 6b 02 76 00``: length 8 (zig-zag 0x10), attributes 0, the two deltas,
    key length 1 (0x02) and ``k``, value length 1 and ``v``, no headers.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from rackwise.records.batch_v2 import RecordHeaders, encode_record, varint_bytes
from rackwise.storage.errors import InvalidRecordException
from rackwise.storage.records_kernel import (
    COMPILED_MIN_RECORDS,
    MAX_BASE_TIMESTAMP,
    SCAN_OK,
    as_array,
    compiled_scan_if_loaded,
)

NO_TIMESTAMP: Final = -1
"""Kafka's RecordBatch.NO_TIMESTAMP: a record or batch without a timestamp."""
_MAX_VARINT_BYTES: Final = 5
_MAX_VARLONG_BYTES: Final = 10

__all__ = [
    "NO_TIMESTAMP",
    "RecordHeaders",
    "RecordsSummary",
    "encode_record",
    "iter_record_timestamps",
    "read_varint",
    "varint_bytes",
    "walk_records",
    "walk_records_interpreted",
]


@dataclass(frozen=True, slots=True)
class RecordsSummary:
    """What :func:`walk_records` found in a batch's records."""

    min_timestamp: int
    """Smallest record timestamp other than NO_TIMESTAMP, or NO_TIMESTAMP if there is none."""
    max_timestamp: int
    """Largest record timestamp, or NO_TIMESTAMP if every record has none."""
    has_null_key: bool


def _bad(message: str) -> InvalidRecordException:
    return InvalidRecordException(message)


def read_varint(buf: bytes | memoryview, pos: int, end: int, limit: int) -> tuple[int, int]:
    """A zig-zag varint (``limit`` bytes at most) at ``pos``: (value, position after it)."""
    raw = 0
    shift = 0
    for i in range(limit):
        if pos + i >= end:
            raise _bad("Incorrect declared batch size, premature EOF reached")
        b = buf[pos + i]
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            return (raw >> 1) ^ -(raw & 1), pos + i + 1
        shift += 7
    raise _bad(f"Varint is too long, the most significant bit in the {limit}th byte is set")


def _uvarint(view: memoryview, p: int, limit: int) -> tuple[int, int]:
    """The raw (not zig-zag decoded) varint at ``p``: (value, position after it)."""
    raw = 0
    for i in range(limit):
        b = view[p + i]
        raw |= (b & 0x7F) << (7 * i)
        if b < 0x80:
            return raw, p + i + 1
    raise _bad(f"Varint is too long, the most significant bit in the {limit}th byte is set")


def walk_records(
    buf: bytes | memoryview, pos: int, end: int, count: int, base_timestamp: int
) -> RecordsSummary:
    """Check ``count`` records in ``buf[pos:end]`` (module docstring); raise
    :class:`InvalidRecordException` at the first that breaks a rule. A large batch is walked
    by the compiled kernel once it is loaded (:mod:`rackwise.storage.records_kernel`); what it
    does not accept, and every other batch, is walked here."""
    if count >= COMPILED_MIN_RECORDS and -MAX_BASE_TIMESTAMP < base_timestamp < MAX_BASE_TIMESTAMP:
        scan = compiled_scan_if_loaded()
        if scan is not None:
            status, lo, hi, null_key = scan(as_array(buf), pos, end, count, base_timestamp)
            if status == SCAN_OK:
                return RecordsSummary(int(lo), int(hi), bool(null_key))
    return walk_records_interpreted(buf, pos, end, count, base_timestamp)


def walk_records_interpreted(
    buf: bytes | memoryview, pos: int, end: int, count: int, base_timestamp: int
) -> RecordsSummary:
    """:func:`walk_records` in Python, whatever the batch. Single-byte varints, the common
    case, are read inline."""
    view = memoryview(buf)[pos:end]
    n = len(view)
    lo = hi = NO_TIMESTAMP
    null_key = False
    p = 0
    try:
        for index in range(count):
            b = view[p]
            if b < 0x80:
                raw, p = b, p + 1
            elif view[p + 1] < 0x80:
                raw, p = (b & 0x7F) | (view[p + 1] << 7), p + 2
            else:
                raw, p = _uvarint(view, p, _MAX_VARINT_BYTES)
            size = (raw >> 1) ^ -(raw & 1)
            body_end = p + size
            if size < 0 or body_end > n:
                raise _bad(
                    f"Invalid record size: expected {size} bytes in record payload, but "
                    f"instead the buffer has only {n - p} remaining bytes."
                )
            p += 1  # the attributes
            b = view[p]
            if b < 0x80:
                raw, p = b, p + 1
            elif view[p + 1] < 0x80:
                raw, p = (b & 0x7F) | (view[p + 1] << 7), p + 2
            else:
                raw, p = _uvarint(view, p, _MAX_VARLONG_BYTES)
            timestamp = base_timestamp + ((raw >> 1) ^ -(raw & 1))
            if timestamp != NO_TIMESTAMP:
                if lo == NO_TIMESTAMP or timestamp < lo:
                    lo = timestamp
                if timestamp > hi:  # noqa: PLR1730 (max() is a call per record)
                    hi = timestamp
            b = view[p]
            if b < 0x80:
                raw, p = b, p + 1
            elif view[p + 1] < 0x80:
                raw, p = (b & 0x7F) | (view[p + 1] << 7), p + 2
            else:
                raw, p = _uvarint(view, p, _MAX_VARINT_BYTES)
            if raw != index << 1:
                raise _bad(
                    f"Record {index} of the batch has offset delta {(raw >> 1) ^ -(raw & 1)}: "
                    "the records of a batch must have offset deltas 0, 1, 2, ... in order"
                )
            b = view[p]
            if b < 0x80:
                raw, p = b, p + 1
            elif view[p + 1] < 0x80:
                raw, p = (b & 0x7F) | (view[p + 1] << 7), p + 2
            else:
                raw, p = _uvarint(view, p, _MAX_VARINT_BYTES)
            if raw & 1:
                null_key = True
            else:
                p += raw >> 1
            b = view[p]
            if b < 0x80:
                raw, p = b, p + 1
            elif view[p + 1] < 0x80:
                raw, p = (b & 0x7F) | (view[p + 1] << 7), p + 2
            else:
                raw, p = _uvarint(view, p, _MAX_VARINT_BYTES)
            if not raw & 1:
                p += raw >> 1
            if view[p] == 0:  # no headers
                p += 1
            else:
                p = _skip_headers(view, p, body_end)
            if p != body_end:
                raise _bad(
                    f"Invalid record size: expected to read {size} bytes in record payload, "
                    f"but instead read {p - (body_end - size)}"
                )
    except IndexError:
        raise _bad("Incorrect declared batch size, premature EOF reached") from None
    if p != n:
        raise _bad("Incorrect declared batch size, records still remaining in file")
    return RecordsSummary(lo, hi, null_key)


def _skip_headers(buf: bytes | memoryview, p: int, end: int) -> int:
    num_headers, p = read_varint(buf, p, end, _MAX_VARINT_BYTES)
    if num_headers < 0:
        raise _bad(f"Found invalid number of record headers {num_headers}")
    if num_headers > end - p:
        raise _bad(
            f"Found invalid number of record headers. {num_headers} is larger than the "
            "remaining size of the buffer"
        )
    for _ in range(num_headers):
        key_size, p = read_varint(buf, p, end, _MAX_VARINT_BYTES)
        if key_size < 0:
            raise _bad(f"Invalid negative header key size {key_size}")
        p += key_size
        value_size, p = read_varint(buf, p, end, _MAX_VARINT_BYTES)
        if value_size > 0:
            p += value_size
        if p > end:
            raise _bad("Found invalid record structure")
    return p


def iter_record_timestamps(
    buf: bytes | memoryview, pos: int, end: int, count: int, base_timestamp: int
) -> Iterator[tuple[int, int]]:
    """(offset delta, timestamp) of each record, for the few callers that need per-record
    answers (ListOffsets by timestamp, the record errors of a refused batch). Structure is
    assumed checked; a record that runs past ``end`` stops the iteration."""
    for _ in range(count):
        if pos >= end:
            return
        size, p = read_varint(buf, pos, end, _MAX_VARINT_BYTES)
        body_end = p + size
        delta, p = read_varint(buf, p + 1, body_end, _MAX_VARLONG_BYTES)
        offset_delta, p = read_varint(buf, p, body_end, _MAX_VARINT_BYTES)
        yield offset_delta, base_timestamp + delta
        pos = body_end


def iter_null_key_deltas(buf: bytes | memoryview, pos: int, end: int, count: int) -> Iterator[int]:
    """The offset delta of each record without a key (the record errors of a batch a
    compacted topic refuses). Structure is assumed checked, as for
    :func:`iter_record_timestamps`."""
    for _ in range(count):
        if pos >= end:
            return
        size, p = read_varint(buf, pos, end, _MAX_VARINT_BYTES)
        body_end = p + size
        _, p = read_varint(buf, p + 1, body_end, _MAX_VARLONG_BYTES)  # the timestamp delta
        offset_delta, p = read_varint(buf, p, body_end, _MAX_VARINT_BYTES)
        key_length, p = read_varint(buf, p, body_end, _MAX_VARINT_BYTES)
        if key_length < 0:
            yield offset_delta
        pos = body_end
