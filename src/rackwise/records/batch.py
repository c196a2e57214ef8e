"""Record batches of the metadata log: Kafka's v2 record batches exactly, as KRaft writes them
in ``__cluster_metadata``, its snapshots and (as bytes) to the brokers that fetch them. Pure:
bytes in, bytes out.

A batch is Kafka's v2 batch (:mod:`rackwise.records.batch_v2` for the header's layout) as
KRaft's ``BatchBuilder`` writes it: magic 2, the partition leader epoch is the controller
epoch, attributes 0 (no compression, CreateTime), no producer id, epoch or sequence, both
timestamps the append time; each record (Kafka's DefaultRecord) has a null key, timestamp
delta 0, offset delta 0, 1, 2 ..., no headers, and as its value the record's
``ApiMessageAndVersion`` frame (:mod:`rackwise.records.frame`). A control batch (attribute bit
5) holds control records instead (:mod:`rackwise.records.control`): the leader's
LeaderChangeMessage at the start of each epoch, a snapshot's header and footer.

The CRC32C is Kafka's: it covers the attributes to the end of the batch, not the base offset,
the length or the epoch. A flipped bit in those is caught by the reader of a sequence of
batches (offsets that follow on, epochs that never go down: :mod:`rackwise.metalog.segment`);
a flipped length bit tears the batch or moves the CRC's span. :func:`check_batch` reports why
a batch is unusable (torn, bad length, bad CRC, bad magic or count) as a
:class:`~rackwise.common.errors.CorruptRecordException`; a batch that checks out but holds a
record this version cannot decode, is compressed, or is in rackwise's earlier own format
(magic 0) raises :class:`MetadataParseException` instead, because that is a version mismatch,
not damage.

Worked example
    ``encode_batch(5, 2, 1000, encode_frames([NoOpRecord()]))`` is 72 bytes: base offset 5,
    length 60, epoch 2, magic 2, the CRC, attributes 0, last offset delta 0, both timestamps
    1000, producer id -1, producer epoch -1, base sequence -1, a count of 1, then the record
    ``14 00 00 00 01 08 01 14 00 00 00``: length 10, attributes, timestamp and offset deltas
    0, a null key (-1), a value of 4 bytes (frame version 1, api key 20, version 0, no tagged
    fields) and no headers.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

from crc32c import crc32c

from rackwise.common.errors import CorruptRecordException
from rackwise.records.batch_v2 import (
    ATTRIBUTES_AT,
    BATCH_HEADER_BYTES,
    COMPRESSION_MASK,
    COMPRESSION_NAMES,
    CONTROL_MASK,
    HEADER_STRUCT,
    LOG_OVERHEAD,
    MAGIC_V2,
    BatchHeader,
    build_batch,
    pack_batch,
    varint_bytes,
)
from rackwise.records.codec import DECODE_ERRORS, InternCache, read_uvarint, uvarint_bytes
from rackwise.records.control import decode_control, encode_control, is_control_record
from rackwise.records.errors import MetadataParseException
from rackwise.records.frame import FRAME_VERSION, decode_record
from rackwise.records.registry import RECORD_TYPES

BATCH_MAGIC: Final = MAGIC_V2
HEADER_SIZE: Final = BATCH_HEADER_BYTES
LENGTH_FIELD_END: Final = LOG_OVERHEAD
"""Bytes before the partition leader epoch: base_offset and batch_length."""
MAX_BATCH_BYTES: Final = 64 * 1024 * 1024
"""The largest batch accepted: a longer length field means damage."""
INTERN_CACHE_LIMIT: Final = 1 << 18
"""Entries an intern cache may reach before :func:`decode_records` empties it."""
NO_TIMESTAMP: Final = -1
"""``append_time_ms`` when the writer had no clock (Kafka's RecordBatch.NO_TIMESTAMP)."""
OLD_MAGIC: Final = 0
_OLD_HEADER: Final = struct.Struct(">qiI")

_DECODERS: Final = {
    (t.api_key << 8) | version: codec.decode
    for t in RECORD_TYPES.values()
    for version, codec in t.codecs.items()
    if t.api_key < 128 and version < 128
}
_ENCODERS: Final = {
    codec.cls: (
        uvarint_bytes(FRAME_VERSION) + uvarint_bytes(t.api_key) + uvarint_bytes(version),
        codec,
    )
    for t in RECORD_TYPES.values()
    for version, codec in t.codecs.items()
}

__all__ = [
    "BATCH_MAGIC",
    "HEADER_SIZE",
    "MAX_BATCH_BYTES",
    "BatchHeader",
    "RecordBatch",
    "check_batch",
    "decode_records",
    "encode_batch",
    "encode_control_batch",
    "encode_frames",
    "encode_records",
    "iter_batches",
]


@dataclass(frozen=True, slots=True)
class RecordBatch:
    """A decoded batch: its header and its records (instances of the record classes, or of
    the control record classes in a control batch)."""

    header: BatchHeader
    records: tuple[Any, ...]

    @property
    def base_offset(self) -> int:
        return self.header.base_offset

    @property
    def epoch(self) -> int:
        return self.header.partition_leader_epoch

    @property
    def is_control(self) -> bool:
        return self.header.is_control


def encode_frames(records: Sequence[Any]) -> list[bytes]:
    """Each record framed (header and body), as a batch holds them."""
    frames = []
    for record in records:
        entry = _ENCODERS.get(type(record))
        if entry is None:
            raise TypeError(f"{type(record).__qualname__} is not a metadata record class")
        header, codec = entry
        frames.append(header + codec.encode(record))
    return frames


_ZIGZAG: Final = tuple(varint_bytes(i) for i in range(8192))
"""Zig-zag varints of the lengths and offset deltas most records have."""
_MIDDLES: Final = tuple(b"\x00\x00" + varint_bytes(delta) + b"\x01" for delta in range(4096))
"""A record's attributes (0), timestamp delta (0), offset delta and null key (-1), by delta."""


def encode_batch(
    base_offset: int, epoch: int, append_time_ms: int, frames: Sequence[bytes]
) -> bytes:
    """One batch holding ``frames`` (from :func:`encode_frames`) as its records' values,
    numbered from ``base_offset``, as KRaft's ``BatchBuilder`` writes it."""
    if not frames:
        raise ValueError("a record batch holds at least one record")
    parts: list[bytes] = []
    extend = parts.extend
    zigzag, middles = _ZIGZAG, _MIDDLES
    for delta, frame in enumerate(frames):
        size = len(frame)
        middle = middles[delta] if delta < 4096 else b"\x00\x00" + varint_bytes(delta) + b"\x01"
        value_size = zigzag[size] if size < 8192 else varint_bytes(size)
        length = len(middle) + len(value_size) + size + 1
        extend((zigzag[length] if length < 8192 else varint_bytes(length), middle, value_size))
        extend((frame, b"\x00"))  # the value, no headers
    body = b"".join(parts)
    if len(body) + BATCH_HEADER_BYTES > MAX_BATCH_BYTES:
        raise ValueError(
            f"a batch of {len(body) + BATCH_HEADER_BYTES} bytes exceeds {MAX_BATCH_BYTES}"
        )
    return pack_batch(
        body,
        base_offset=base_offset,
        record_count=len(frames),
        base_timestamp=append_time_ms,
        max_timestamp=append_time_ms,
        partition_leader_epoch=epoch,
    )


def encode_control_batch(
    base_offset: int, epoch: int, append_time_ms: int, records: Sequence[Any]
) -> bytes:
    """A control batch of control records (:mod:`rackwise.records.control`), as Kafka's
    ``MemoryRecordsBuilder`` writes a leader change or a snapshot's header or footer."""
    if not records:
        raise ValueError("a record batch holds at least one record")
    return build_batch(
        [(*encode_control(r), ()) for r in records],
        base_offset=base_offset,
        timestamp_ms=append_time_ms,
        partition_leader_epoch=epoch,
        is_control=True,
    )


def encode_records(
    base_offset: int, epoch: int, append_time_ms: int, records: Sequence[Any]
) -> bytes:
    """The batch of ``records``: a control batch if they are control records, otherwise a
    batch of metadata records."""
    if records and is_control_record(records[0]):
        return encode_control_batch(base_offset, epoch, append_time_ms, records)
    return encode_batch(base_offset, epoch, append_time_ms, encode_frames(records))


def check_batch(buf: bytes, pos: int, end: int | None = None) -> BatchHeader:
    """The header of the batch at ``buf[pos:]``, after checking its length, CRC, magic and
    count; the batch must end by ``end`` (default: the end of ``buf``). Raises
    CorruptRecordException saying what is wrong."""
    end = len(buf) if end is None else end
    available = end - pos
    if available < HEADER_SIZE:
        raise CorruptRecordException(
            f"torn batch: {available} byte(s) left, fewer than a {HEADER_SIZE}-byte header"
        )
    header = BatchHeader(pos, *HEADER_STRUCT.unpack_from(buf, pos))
    size = header.batch_length + LENGTH_FIELD_END
    if size < HEADER_SIZE or size > MAX_BATCH_BYTES:
        raise CorruptRecordException(f"batch length {header.batch_length} is impossible")
    if size > available:
        raise CorruptRecordException(
            f"torn batch: it claims {size} bytes but only {available} remain"
        )
    view = memoryview(buf)
    computed = crc32c(view[pos + ATTRIBUTES_AT : pos + size])
    if computed != header.crc:
        if header.magic == OLD_MAGIC and _is_old_batch(view, pos, size):
            raise MetadataParseException(
                f"the batch at offset {header.base_offset} is in rackwise's own batch format "
                "of earlier releases (magic 0), not Kafka's v2: this release reads only v2"
            )
        raise CorruptRecordException(
            f"CRC32C mismatch: stored {header.crc:#010x}, computed {computed:#010x}"
        )
    if header.magic != BATCH_MAGIC:
        raise CorruptRecordException(f"unknown batch magic {header.magic}")
    count = header.record_count
    if count < 1 or count != header.last_offset_delta + 1 or count > size - HEADER_SIZE:
        raise CorruptRecordException(
            f"impossible record count {count} (last offset delta {header.last_offset_delta})"
        )
    if header.attributes & COMPRESSION_MASK:
        raise MetadataParseException(
            f"the batch at offset {header.base_offset} is compressed with "
            f"{_compression_name(header.attributes)}: the metadata log reads uncompressed "
            "batches only"
        )
    return header


def _compression_name(attributes: int) -> str:
    code = attributes & COMPRESSION_MASK
    return COMPRESSION_NAMES[code] if code < len(COMPRESSION_NAMES) else f"codec {code}"


def _is_old_batch(view: memoryview, pos: int, size: int) -> bool:
    """Whether the bytes are a whole batch of rackwise's earlier format, whose CRC32C at
    byte 12 covered bytes 0-11 and 16 to the end."""
    crc = _OLD_HEADER.unpack_from(view, pos)[2]
    return bool(crc32c(view[pos + 16 : pos + size], value=crc32c(view[pos : pos + 12])) == crc)


def _read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    raw, pos = read_uvarint(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def _read_sized(buf: bytes, pos: int) -> tuple[bytes | None, int]:
    size, pos = _read_varint(buf, pos)
    if size < 0:
        return None, pos
    return bytes(buf[pos : pos + size]), pos + size


def _decode_control_records(buf: bytes, pos: int, header: BatchHeader) -> list[Any]:
    out = []
    end = pos + header.size
    pos += HEADER_SIZE
    for index in range(header.record_count):
        size, pos = _read_varint(buf, pos)
        stop = pos + size
        _, at = _read_varint(buf, pos + 1)  # attributes, then the timestamp delta
        delta, at = _read_varint(buf, at)
        if delta != index:
            raise MetadataParseException(f"control record {index} has offset delta {delta}")
        key, at = _read_sized(buf, at)
        value, at = _read_sized(buf, at)
        headers, at = _read_varint(buf, at)
        if headers != 0 or at != stop or stop > end:
            raise MetadataParseException(f"control record {index} is malformed")
        out.append(decode_control(key, value))
        pos = stop
    if pos != end:
        raise MetadataParseException("the control records do not fill their batch")
    return out


def decode_records(
    buf: bytes, pos: int, header: BatchHeader, uuids: InternCache | None = None
) -> list[Any]:
    """The records of the checked batch starting at ``buf[pos]``: metadata records, or the
    control records of a control batch."""
    if header.attributes & CONTROL_MASK:
        try:
            return _decode_control_records(buf, pos, header)
        except DECODE_ERRORS as e:
            raise MetadataParseException(
                f"batch at offset {header.base_offset}: a control record does not decode: {e}"
            ) from None
    if uuids is None:
        uuids = {}
    elif len(uuids) > INTERN_CACHE_LIMIT:
        uuids.clear()
    end = pos + header.size
    pos += HEADER_SIZE
    out: list[Any] = []
    append = out.append
    decoders = _DECODERS
    try:
        for index in range(header.record_count):
            # The common shape inline: a length of one or two bytes, attributes and timestamp
            # delta 0, the offset delta, a null key, a value length of one or two bytes.
            b = buf[pos]
            if b < 0x80:
                p, raw = pos + 1, b
            elif buf[pos + 1] < 0x80:
                p, raw = pos + 2, (b & 0x7F) | (buf[pos + 1] << 7)
            else:
                p = raw = -1
            stop = -1
            if p > 0 and buf[p] == 0 and buf[p + 1] == 0:
                delta = index << 1
                if delta < 0x80:
                    q = p + 3 if buf[p + 2] == delta else -1
                elif buf[p + 2] == (delta & 0x7F) | 0x80 and buf[p + 3] == delta >> 7:
                    q = p + 4
                else:
                    q = -1
                if q > 0 and buf[q] == 1:
                    b = buf[q + 1]
                    if b < 0x80:
                        value, size = q + 2, b
                    elif buf[q + 2] < 0x80:
                        value, size = q + 3, (b & 0x7F) | (buf[q + 2] << 7)
                    else:
                        value = size = -1
                    stop = value + (size >> 1)
                    if value < 0 or stop + 1 != p + (raw >> 1) or (raw | size) & 1:
                        stop = -1
            if stop < 0:
                value, stop = _value_span(buf, pos, index)
            record = None
            if buf[value] == FRAME_VERSION and buf[value + 1] < 128:
                decoder = decoders.get((buf[value + 1] << 8) | buf[value + 2])
                if decoder is not None:
                    record, at = decoder(buf, value + 3, uuids)
                    if at != stop:
                        record = None
            append(_decode_value(buf, value, stop, uuids) if record is None else record)
            if stop >= end or buf[stop] != 0:
                raise MetadataParseException(f"record {index} has headers or runs past the batch")
            pos = stop + 1
    except MetadataParseException as e:
        raise MetadataParseException(f"batch at offset {header.base_offset}: {e}") from None
    except DECODE_ERRORS as e:
        raise MetadataParseException(
            f"batch at offset {header.base_offset}: record {len(out)} does not decode: {e}"
        ) from None
    if pos != end:
        raise MetadataParseException(
            f"batch at offset {header.base_offset}: its records end at byte {pos - end} "
            "relative to its length"
        )
    return out


def _value_span(buf: bytes, pos: int, index: int) -> tuple[int, int]:
    """Where the value of the record at ``pos`` (the ``index``-th of its batch) starts and
    ends, after checking its length, offset delta and null key. Single-byte varints, the
    common case, are read inline."""
    b = buf[pos]
    if b < 0x80:
        size, pos = (b >> 1) ^ -(b & 1), pos + 1
    else:
        size, pos = _read_varint(buf, pos)
    record_end = pos + size
    pos += 1  # the attributes, unused
    if buf[pos] < 0x80:  # the timestamp delta, not used: the batch's time is the append's
        pos += 1
    else:
        _, pos = _read_varint(buf, pos)
    b = buf[pos]
    if b < 0x80:
        delta, pos = (b >> 1) ^ -(b & 1), pos + 1
    else:
        delta, pos = _read_varint(buf, pos)
    if delta != index:
        raise MetadataParseException(f"record {index} has offset delta {delta}")
    if buf[pos] != 1:
        raise MetadataParseException(f"record {index} has a key: metadata records have none")
    b = buf[pos + 1]
    if b < 0x80:
        value_size, pos = (b >> 1) ^ -(b & 1), pos + 2
    else:
        value_size, pos = _read_varint(buf, pos + 1)
    if value_size < 0:
        raise MetadataParseException(f"record {index} has a null value")
    stop = pos + value_size
    if stop + 1 != record_end:
        raise MetadataParseException(
            f"record {index}: its length says {size} bytes, its fields take "
            f"{size + stop + 1 - record_end}"
        )
    return pos, stop


def _decode_value(buf: bytes, pos: int, stop: int, uuids: InternCache) -> Any:
    """The metadata record framed in ``buf[pos:stop]``."""
    if stop - pos >= 3 and buf[pos] == FRAME_VERSION and buf[pos + 1] < 128:
        decoder = _DECODERS.get((buf[pos + 1] << 8) | buf[pos + 2])
        if decoder is not None:
            record, at = decoder(buf, pos + 3, uuids)
            if at == stop:
                return record
    return decode_record(buf, pos, stop, uuids)  # the slow path, or raises saying why


def iter_batches(buf: bytes, pos: int = 0, end: int | None = None) -> Iterator[RecordBatch]:
    """Every batch in ``buf[pos:end]``, checked and decoded; the span must hold whole batches."""
    end = len(buf) if end is None else end
    uuids: InternCache = {}
    while pos < end:
        header = check_batch(buf, pos, end)
        yield RecordBatch(header, tuple(decode_records(buf, pos, header, uuids)))
        pos += header.size
