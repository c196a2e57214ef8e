"""Record batches: how records travel in the metadata log, its snapshots and (as bytes) to the
brokers that fetch them. Pure: bytes in, bytes out.

A batch (big-endian; offsets in bytes)::

     0  base_offset      int64   offset of the first record
     8  batch_length     int32   bytes after this field (the batch is batch_length + 12 long)
    12  crc              uint32  CRC32C (Castagnoli) of bytes 0-11 followed by bytes 16-end
    16  magic            int8    batch format, BATCH_MAGIC
    17  epoch            int32   the controller epoch that wrote the batch
    21  append_time_ms   int64   wall-clock time of the append, ms since the epoch
    29  record_count     int32   number of records, at least 1
    33  records          record_count times: unsigned varint size, then the record's frame
                                 (see :mod:`rackwise.records.frame`)

The layout follows Kafka's v2 record batch (base offset, length, leader epoch, CRC32C, count)
but the CRC also covers the base offset, length and epoch, so a flipped bit anywhere is caught.
:func:`check_batch` reports why a batch is unusable (torn, bad length, bad CRC) as a
:class:`~rackwise.common.errors.CorruptRecordException`; a batch that checks out but holds a
record this version cannot decode raises :class:`MetadataParseException` instead, because that
is a version mismatch, not damage.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

from crc32c import crc32c

from rackwise.common.errors import CorruptRecordException
from rackwise.records.codec import DECODE_ERRORS, InternCache, read_uvarint, uvarint_bytes
from rackwise.records.errors import MetadataParseException
from rackwise.records.frame import FRAME_VERSION, decode_record
from rackwise.records.registry import RECORD_TYPES

BATCH_MAGIC: Final = 0
HEADER: Final = struct.Struct(">qiIbiqi")
HEADER_SIZE: Final = HEADER.size
LENGTH_FIELD_END: Final = 12
"""Bytes before the CRC field: base_offset and batch_length."""
CRC_FIELD_END: Final = 16
MAX_BATCH_BYTES: Final = 64 * 1024 * 1024
"""The largest batch accepted: a longer length field means damage."""
INTERN_CACHE_LIMIT: Final = 1 << 18
"""Entries an intern cache may reach before :func:`decode_records` empties it."""
NO_TIMESTAMP: Final = -1
"""``append_time_ms`` when the writer had no clock (Kafka's RecordBatch.NO_TIMESTAMP)."""

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


@dataclass(frozen=True, slots=True)
class BatchHeader:
    """A checked batch header; ``size`` is the whole batch in bytes."""

    base_offset: int
    epoch: int
    append_time_ms: int
    record_count: int
    size: int

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.record_count - 1

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.record_count


@dataclass(frozen=True, slots=True)
class RecordBatch:
    """A decoded batch: its header and its records (instances of the record classes)."""

    header: BatchHeader
    records: tuple[Any, ...]

    @property
    def base_offset(self) -> int:
        return self.header.base_offset

    @property
    def epoch(self) -> int:
        return self.header.epoch


def encode_frames(records: Sequence[Any]) -> list[bytes]:
    """Each record framed (header and body), as a batch holds them, without size prefixes."""
    frames = []
    for record in records:
        entry = _ENCODERS.get(type(record))
        if entry is None:
            raise TypeError(f"{type(record).__qualname__} is not a metadata record class")
        header, codec = entry
        frames.append(header + codec.encode(record))
    return frames


def encode_batch(
    base_offset: int, epoch: int, append_time_ms: int, frames: Sequence[bytes]
) -> bytes:
    """One batch holding ``frames`` (from :func:`encode_frames`), numbered from
    ``base_offset``."""
    if not frames:
        raise ValueError("a record batch holds at least one record")
    body = b"".join(uvarint_bytes(len(frame)) + frame for frame in frames)
    length = HEADER_SIZE - LENGTH_FIELD_END + len(body)
    if length + LENGTH_FIELD_END > MAX_BATCH_BYTES:
        raise ValueError(f"a batch of {length + LENGTH_FIELD_END} bytes exceeds {MAX_BATCH_BYTES}")
    header = bytearray(
        HEADER.pack(base_offset, length, 0, BATCH_MAGIC, epoch, append_time_ms, len(frames))
    )
    crc = crc32c(header[CRC_FIELD_END:], value=crc32c(header[:LENGTH_FIELD_END]))
    crc = crc32c(body, value=crc)
    struct.pack_into(">I", header, LENGTH_FIELD_END, crc)
    return bytes(header) + body


def check_batch(buf: bytes, pos: int, end: int | None = None) -> BatchHeader:
    """The header of the batch at ``buf[pos:]``, after checking its length, magic, count and
    CRC; the batch must end by ``end`` (default: the end of ``buf``). Raises
    CorruptRecordException saying what is wrong."""
    end = len(buf) if end is None else end
    available = end - pos
    if available < HEADER_SIZE:
        raise CorruptRecordException(
            f"torn batch: {available} byte(s) left, fewer than a {HEADER_SIZE}-byte header"
        )
    base_offset, length, crc, magic, epoch, append_ms, count = HEADER.unpack_from(buf, pos)
    size = length + LENGTH_FIELD_END
    if size < HEADER_SIZE or size > MAX_BATCH_BYTES:
        raise CorruptRecordException(f"batch length {length} is impossible")
    if size > available:
        raise CorruptRecordException(
            f"torn batch: it claims {size} bytes but only {available} remain"
        )
    view = memoryview(buf)
    computed = crc32c(view[pos + CRC_FIELD_END : pos + size], value=crc32c(view[pos : pos + 12]))
    if computed != crc:
        raise CorruptRecordException(
            f"CRC32C mismatch: stored {crc:#010x}, computed {computed:#010x}"
        )
    if magic != BATCH_MAGIC:
        raise CorruptRecordException(f"unknown batch magic {magic}")
    if count < 1 or count > size - HEADER_SIZE:
        raise CorruptRecordException(f"impossible record count {count}")
    return BatchHeader(base_offset, epoch, append_ms, count, size)


def decode_records(
    buf: bytes, pos: int, header: BatchHeader, uuids: InternCache | None = None
) -> list[Any]:
    """The records of the checked batch starting at ``buf[pos]``."""
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
        for _ in range(header.record_count):
            size = buf[pos]
            if size < 128:
                pos += 1
            else:
                size, pos = read_uvarint(buf, pos)
            stop = pos + size
            decoder = None
            if size >= 3 and buf[pos] == FRAME_VERSION and buf[pos + 1] < 128:
                decoder = decoders.get((buf[pos + 1] << 8) | buf[pos + 2])
            if decoder is not None:
                record, at = decoder(buf, pos + 3, uuids)
                if at != stop:
                    record = decode_record(buf, pos, stop, uuids)  # raises, saying why
            else:
                record = decode_record(buf, pos, stop, uuids)
            append(record)
            pos = stop
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


def iter_batches(buf: bytes, pos: int = 0, end: int | None = None) -> Iterator[RecordBatch]:
    """Every batch in ``buf[pos:end]``, checked and decoded; the span must hold whole batches."""
    end = len(buf) if end is None else end
    uuids: InternCache = {}
    while pos < end:
        header = check_batch(buf, pos, end)
        yield RecordBatch(header, tuple(decode_records(buf, pos, header, uuids)))
        pos += header.size
