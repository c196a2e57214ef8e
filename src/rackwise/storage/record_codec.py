"""The records inside a Kafka v2 record batch, and the four compression codecs that wrap them.

Goals
    Read what any Kafka client writes (Java, librdkafka, kafka-python) and write what every one
    of them reads: the batch's records as Kafka's DefaultRecord lays them out, compressed with
    gzip, snappy, lz4 or zstd. Used off the hot path (the log cleaner, tools, tests): the
    produce and fetch paths keep batches as bytes and never decode a record.

Constraints
    One C-backed library (``cramjam``) for the codecs. Snappy: Java clients write xerial's
    framing (a 16-byte header, then blocks each prefixed by its int32 length), librdkafka
    writes a bare snappy block; both are read, xerial's framing is written. LZ4: the LZ4 frame
    format as Kafka's Lz4BlockOutputStream writes it and Lz4BlockInputStream requires:
    independent 64 KiB blocks (Kafka refuses linked blocks), no content size or checksums,
    the header checksum byte computed correctly (only magic v0 batches used Kafka's old broken
    one). Zstd and gzip: plain frames / members. A batch that does not decode raises
    CorruptRecordException with Kafka's message (Kafka itself says InvalidRecordException for
    a damaged record inside a batch whose CRC matched; the broker answers CORRUPT_MESSAGE
    either way). The CRC is not checked here: the log checks it when the batch arrives.

Algorithm
    A record (varints zig-zag encoded as Kafka's ByteUtils)::

        length varint (bytes after it), attributes int8 (0), timestamp delta varlong,
        offset delta varint, key length varint (-1: null) + key, value length varint
        (-1: null) + value, header count varint, per header: key length varint + UTF-8 key,
        value length varint (-1: null) + value

    The records follow the 61-byte batch header, compressed as one stream when the batch's
    attributes say so. A record's offset is the batch's base offset plus its delta, its
    timestamp the base timestamp plus its delta, or the batch's max timestamp under
    LogAppendTime. Building a batch takes records at any increasing offsets: deltas may have
    gaps (after compaction) and ``last_offset_delta`` may exceed the last record's delta, as
    Kafka keeps the original last offset of a cleaned batch. A batch with no record is an empty
    header (Kafka's writeEmptyHeader), kept to preserve a producer's last sequence.

Worked example
    One record, key ``b"k"``, value ``b"v"``, no header, offset delta 0, timestamp delta 0:
    ``10 00 00 00 02 6b 02 76 00``: length 8 (zig-zag 0x10), attributes, timestamp delta,
    offset delta, key length 1 (zig-zag 0x02), key, value length, value, header count 0;
    after a header whose record count is 1 and whose last offset delta is 0.
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Final

import cramjam
from crc32c import crc32c

from rackwise.storage.batch import (
    BATCH_HEADER_BYTES,
    COMPRESSION_MASK,
    CONTROL_MASK,
    MAGIC_V2,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
)
from rackwise.storage.errors import (
    CorruptRecordException,
    record_errors_exception,
)

NO_COMPRESSION: Final = 0
GZIP: Final = 1
SNAPPY: Final = 2
LZ4: Final = 3
ZSTD: Final = 4
CODEC_NAMES: Final = {
    NO_COMPRESSION: "none",
    GZIP: "gzip",
    SNAPPY: "snappy",
    LZ4: "lz4",
    ZSTD: "zstd",
}

CREATE_TIME: Final = 0
LOG_APPEND_TIME: Final = 1
"""The batch's timestamp type bit, as :attr:`BatchHeader.timestamp_type` gives it."""

NULL_LENGTH: Final = -1
"""A key, value or header value length meaning null."""
DELETE_HORIZON_MASK: Final = 0x40
"""Set when the base timestamp holds the delete horizon of a cleaned batch's tombstones."""

_HEADER: Final = struct.Struct(">qiibIhiqqqhii")
_CRC_POSITION: Final = 17
_ATTRIBUTES_POSITION: Final = 21
_LENGTH_FIELD_END: Final = 12

XERIAL_MAGIC: Final = b"\x82SNAPPY\x00"
XERIAL_HEADER: Final = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
"""xerial snappy-java's stream header: magic, version 1, compatible version 1."""
XERIAL_BLOCK_BYTES: Final = 32 * 1024
"""Uncompressed bytes per xerial block (snappy-java's default, as Kafka writes)."""
LZ4_FRAME_MAGIC: Final = 0x184D2204
LZ4_BLOCK_BYTES: Final = 64 * 1024
_LZ4_FLG: Final = 0x60
"""Version 01, independent blocks, no block checksum, no content size, no content checksum."""
_LZ4_BD: Final = 0x40
"""Maximum block size 64 KiB."""
_LZ4_UNCOMPRESSED_BIT: Final = 0x80000000
_LZ4_END_MARK: Final = b"\x00\x00\x00\x00"


@dataclass(frozen=True, slots=True)
class Record:
    """One record: its absolute offset and timestamp (ms), key, value (None: a tombstone) and
    headers (a null header value is None)."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


# --------------------------------------------------------------------------- compression


def compress(codec: int, data: bytes) -> bytes:
    """``data`` compressed as a Kafka client would for ``codec`` (0-4)."""
    if codec == NO_COMPRESSION:
        return bytes(data)
    if codec == GZIP:
        return bytes(cramjam.gzip.compress(data))
    if codec == SNAPPY:
        return _xerial_snappy_compress(data)
    if codec == LZ4:
        return _lz4_frame_compress(data)
    if codec == ZSTD:
        return bytes(cramjam.zstd.compress(data))
    raise CorruptRecordException(f"Unknown compression type id: {codec}")


def decompress(codec: int, data: bytes) -> bytes:
    """The bytes ``data`` decompress to under ``codec``; CorruptRecordException if they do
    not."""
    try:
        if codec == NO_COMPRESSION:
            return bytes(data)
        if codec == GZIP:
            return bytes(cramjam.gzip.decompress(data))
        if codec == SNAPPY:
            if bytes(data[: len(XERIAL_MAGIC)]) == XERIAL_MAGIC:
                return _xerial_snappy_decompress(data)
            return bytes(cramjam.snappy.decompress_raw(data))
        if codec == LZ4:
            return bytes(cramjam.lz4.decompress(data))
        if codec == ZSTD:
            return bytes(cramjam.zstd.decompress(data))
    except cramjam.DecompressionError as e:
        name = CODEC_NAMES[codec]
        raise CorruptRecordException(f"Failed to decompress record stream ({name}): {e}") from e
    raise CorruptRecordException(f"Unknown compression type id: {codec}")


def _xerial_snappy_compress(data: bytes) -> bytes:
    out = bytearray(XERIAL_HEADER)
    for start in range(0, len(data), XERIAL_BLOCK_BYTES):
        block = bytes(cramjam.snappy.compress_raw(data[start : start + XERIAL_BLOCK_BYTES]))
        out += struct.pack(">i", len(block)) + block
    return bytes(out)


def _xerial_snappy_decompress(data: bytes) -> bytes:
    out = bytearray()
    pos = len(XERIAL_HEADER)
    while pos < len(data):
        if pos + 4 > len(data):
            raise CorruptRecordException("Failed to decompress record stream (snappy): torn block")
        (size,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if size < 0 or pos + size > len(data):
            raise CorruptRecordException(
                f"Failed to decompress record stream (snappy): block of {size} bytes"
            )
        out += cramjam.snappy.decompress_raw(data[pos : pos + size])
        pos += size
    return bytes(out)


def _lz4_frame_compress(data: bytes) -> bytes:
    descriptor = bytes((_LZ4_FLG, _LZ4_BD))
    out = bytearray(struct.pack("<I", LZ4_FRAME_MAGIC) + descriptor)
    out.append((xxh32(descriptor) >> 8) & 0xFF)
    for start in range(0, len(data), LZ4_BLOCK_BYTES):
        chunk = data[start : start + LZ4_BLOCK_BYTES]
        block = bytes(cramjam.lz4.compress_block(chunk, store_size=False))
        if len(block) >= len(chunk):
            out += struct.pack("<I", len(chunk) | _LZ4_UNCOMPRESSED_BIT) + chunk
        else:
            out += struct.pack("<I", len(block)) + block
    out += _LZ4_END_MARK
    return bytes(out)


_PRIME32: Final = (0x9E3779B1, 0x85EBCA77, 0xC2B2AE3D, 0x27D4EB2F, 0x165667B1)
_MASK32: Final = 0xFFFFFFFF


def _rotl32(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _MASK32


def xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32 of ``data`` (the LZ4 frame's header checksum). Pure Python: used only on the two
    descriptor bytes."""
    p1, p2, p3, p4, p5 = _PRIME32
    n, pos = len(data), 0
    if n >= 16:
        v = [(seed + p1 + p2) & _MASK32, (seed + p2) & _MASK32, seed, (seed - p1) & _MASK32]
        while pos + 16 <= n:
            for i in range(4):
                (lane,) = struct.unpack_from("<I", data, pos + 4 * i)
                v[i] = (_rotl32((v[i] + lane * p2) & _MASK32, 13) * p1) & _MASK32
            pos += 16
        h = (_rotl32(v[0], 1) + _rotl32(v[1], 7) + _rotl32(v[2], 12) + _rotl32(v[3], 18)) & _MASK32
    else:
        h = (seed + p5) & _MASK32
    h = (h + n) & _MASK32
    while pos + 4 <= n:
        (word,) = struct.unpack_from("<I", data, pos)
        h = (_rotl32((h + word * p3) & _MASK32, 17) * p4) & _MASK32
        pos += 4
    while pos < n:
        h = (_rotl32((h + data[pos] * p5) & _MASK32, 11) * p1) & _MASK32
        pos += 1
    h = ((h ^ (h >> 15)) * p2) & _MASK32
    h = ((h ^ (h >> 13)) * p3) & _MASK32
    return h ^ (h >> 16)


# --------------------------------------------------------------------------- varints


def zigzag_varint(value: int) -> bytes:
    """``value`` zig-zag encoded as a (64-bit) varint, as Kafka's ByteUtils.writeVarlong; for
    values in int32 range this equals writeVarint."""
    n = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def read_zigzag_varint(buf: bytes, pos: int, max_bytes: int = 10) -> tuple[int, int]:
    """The zig-zag varint at ``buf[pos]`` and the position after it."""
    shift = n = 0
    for i in range(max_bytes):
        if pos + i >= len(buf):
            raise CorruptRecordException("Found invalid record structure: varint past the end")
        byte = buf[pos + i]
        n |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (n >> 1) ^ -(n & 1), pos + i + 1
        shift += 7
    raise CorruptRecordException(f"Found invalid record structure: varint longer than {max_bytes}")


# --------------------------------------------------------------------------- records


def encode_record(
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[tuple[str, bytes | None]] = (),
) -> bytes:
    """One record as Kafka's DefaultRecord.writeTo lays it out, its length prefix included."""
    body = bytearray(b"\x00")
    body += zigzag_varint(timestamp_delta)
    body += zigzag_varint(offset_delta)
    _append_bytes(body, key)
    _append_bytes(body, value)
    body += zigzag_varint(len(headers))
    for header_key, header_value in headers:
        _append_bytes(body, header_key.encode("utf-8"))
        _append_bytes(body, header_value)
    return zigzag_varint(len(body)) + bytes(body)


def _append_bytes(out: bytearray, data: bytes | None) -> None:
    if data is None:
        out += zigzag_varint(NULL_LENGTH)
    else:
        out += zigzag_varint(len(data))
        out += data


def _read_bytes(buf: bytes, pos: int, end: int) -> tuple[bytes | None, int]:
    size, pos = read_zigzag_varint(buf, pos, 5)
    if size == NULL_LENGTH:
        return None, pos
    if size < 0 or pos + size > end:
        raise CorruptRecordException(f"Found invalid record structure: field of {size} bytes")
    return bytes(buf[pos : pos + size]), pos + size


def _decode_record(
    buf: bytes, pos: int, base_offset: int, base_timestamp: int, fixed_timestamp: int | None
) -> tuple[Record, int]:
    size, pos = read_zigzag_varint(buf, pos, 5)
    end = pos + size
    if size < 1 or end > len(buf):
        raise CorruptRecordException(
            f"Invalid record size: expected {size} bytes of record payload, but only "
            f"{len(buf) - pos} remain"
        )
    pos += 1  # attributes, unused
    timestamp_delta, pos = read_zigzag_varint(buf, pos)
    offset_delta, pos = read_zigzag_varint(buf, pos, 5)
    key, pos = _read_bytes(buf, pos, end)
    value, pos = _read_bytes(buf, pos, end)
    count, pos = read_zigzag_varint(buf, pos, 5)
    if count < 0:
        raise CorruptRecordException(f"Found invalid number of record headers {count}")
    headers = []
    for _ in range(count):
        header_key, pos = _read_bytes(buf, pos, end)
        if header_key is None:
            raise CorruptRecordException("Invalid negative header key size -1")
        header_value, pos = _read_bytes(buf, pos, end)
        headers.append((header_key.decode("utf-8", errors="replace"), header_value))
    if pos != end:
        raise CorruptRecordException(
            f"Invalid record size: expected to read {size} bytes in record payload, but "
            f"instead read {size - (end - pos)}"
        )
    timestamp = base_timestamp + timestamp_delta if fixed_timestamp is None else fixed_timestamp
    return Record(base_offset + offset_delta, timestamp, key, value, tuple(headers)), pos


def iter_records(batch: bytes | memoryview) -> Iterator[Record]:
    """The records of the v2 batch ``batch`` (one whole batch), decompressed as needed."""
    if len(batch) < BATCH_HEADER_BYTES:
        raise CorruptRecordException(
            f"Record batch is corrupt (the size {len(batch)} is smaller than the minimum "
            f"allowed overhead {BATCH_HEADER_BYTES})"
        )
    fields = _HEADER.unpack_from(batch)
    base_offset, length, _epoch, magic, _crc, attributes = fields[:6]
    base_timestamp, max_timestamp, count = fields[7], fields[8], fields[12]
    if magic != MAGIC_V2:
        raise CorruptRecordException(f"Unsupported magic {magic}: only v2 batches are read")
    if length + _LENGTH_FIELD_END != len(batch):
        raise CorruptRecordException(
            f"Record batch is corrupt (its length field says {length + _LENGTH_FIELD_END} "
            f"bytes, the batch has {len(batch)})"
        )
    if count < 0:
        raise CorruptRecordException(f"Found invalid record count {count} in magic v2 batch")
    payload = decompress(attributes & COMPRESSION_MASK, bytes(batch[BATCH_HEADER_BYTES:]))
    fixed = max_timestamp if attributes & TIMESTAMP_TYPE_MASK else None
    pos = 0
    for _ in range(count):
        record, pos = _decode_record(payload, pos, base_offset, base_timestamp, fixed)
        yield record
    if pos != len(payload):
        raise CorruptRecordException(
            "Incorrect declared batch size, records still remaining in file"
        )


def require_keys(records: bytes | memoryview, where: str = "") -> None:
    """Raise InvalidRecordException if a record of the whole batches in ``records`` has no
    key: a compacted topic refuses it (Kafka's LogValidator, for uncompressed and compressed
    batches alike)."""
    pos = 0
    while pos < len(records):
        if len(records) - pos < BATCH_HEADER_BYTES:
            raise CorruptRecordException(f"Record batch at position {pos} is torn")
        (length,) = struct.unpack_from(">i", records, pos + 8)
        end = pos + _LENGTH_FIELD_END + length
        message = f"Compacted topic cannot accept message without key{where}"
        errors = [
            (i, message) for i, r in enumerate(iter_records(records[pos:end])) if r.key is None
        ]
        if errors:
            raise record_errors_exception(errors)
        pos = end


# --------------------------------------------------------------------------- building batches


def build_batch_from_records(
    records: Sequence[Record],
    *,
    base_offset: int,
    compression: int = NO_COMPRESSION,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    timestamp_type: int = CREATE_TIME,
    last_offset_delta: int | None = None,
    max_timestamp: int | None = None,
    is_transactional: bool = False,
    is_control: bool = False,
    delete_horizon_ms: int | None = None,
) -> bytes:
    """A v2 batch holding ``records`` at their own offsets (increasing, none below
    ``base_offset``). ``last_offset_delta`` defaults to the last record's delta (it may be
    larger, never smaller); ``max_timestamp`` defaults to the records' largest (required for
    LogAppendTime: the append time); ``delete_horizon_ms`` puts the tombstones' delete horizon
    in the base timestamp (Kafka's delete horizon flag). Empty ``records`` make an empty batch
    (Kafka's writeEmptyHeader: no compression, both timestamps ``max_timestamp``)."""
    deltas = [r.offset - base_offset for r in records]
    if any(d < 0 for d in deltas) or any(b <= a for a, b in itertools.pairwise(deltas)):
        raise ValueError(
            f"BUG: record offsets {[r.offset for r in records]} do not increase "
            f"from base offset {base_offset}"
        )
    if last_offset_delta is None:
        last_offset_delta = deltas[-1] if deltas else 0
    elif deltas and last_offset_delta < deltas[-1]:
        raise ValueError(f"BUG: last offset delta {last_offset_delta} is below {deltas[-1]}")
    if max_timestamp is None:
        if timestamp_type == LOG_APPEND_TIME:
            raise ValueError("BUG: a LogAppendTime batch needs its append time as max_timestamp")
        max_timestamp = max((r.timestamp for r in records), default=NO_TIMESTAMP)
    if not records:
        compression, base_timestamp = NO_COMPRESSION, max_timestamp
    elif delete_horizon_ms is not None:
        base_timestamp = delete_horizon_ms
    else:
        base_timestamp = records[0].timestamp
    body = b"".join(
        encode_record(d, r.timestamp - base_timestamp, r.key, r.value, r.headers)
        for d, r in zip(deltas, records, strict=True)
    )
    body = compress(compression, body) if records else b""
    attributes = compression & COMPRESSION_MASK
    attributes |= TIMESTAMP_TYPE_MASK if timestamp_type == LOG_APPEND_TIME else 0
    attributes |= TRANSACTIONAL_MASK if is_transactional else 0
    attributes |= CONTROL_MASK if is_control else 0
    attributes |= DELETE_HORIZON_MASK if delete_horizon_ms is not None and records else 0
    header = bytearray(
        _HEADER.pack(
            base_offset,
            BATCH_HEADER_BYTES - _LENGTH_FIELD_END + len(body),
            partition_leader_epoch,
            MAGIC_V2,
            0,
            attributes,
            last_offset_delta,
            base_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            len(records),
        )
    )
    crc = crc32c(body, value=crc32c(header[_ATTRIBUTES_POSITION:]))
    struct.pack_into(">I", header, _CRC_POSITION, crc)
    return bytes(header) + body
