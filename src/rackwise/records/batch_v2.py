"""Kafka's record batch v2: the header's layout, parsing, framing and CRC32C, and the encoder of
uncompressed batches, shared by the brokers' logs (:mod:`rackwise.storage`) and the metadata
log (:mod:`rackwise.records.batch`).

Goals
    Read the 61-byte header of a batch held as bytes, walk the whole batches of a buffer, and
    check each batch's framing, magic and CRC, at the cost of one ``struct`` unpack and one
    CRC32C (C) per batch; write a batch exactly as Kafka's ``DefaultRecordBatch`` and
    ``DefaultRecord`` lay it out. A header is a named tuple: immutable, and built from the unpacked
    fields at a sixth of a frozen dataclass's cost (each batch's header is built several times
    on its way through a broker).

Constraints
    Pure: bytes in, values out. A batch shorter than a header or whose length field is
    shorter than a header is corruption (CORRUPT_MESSAGE); a buffer that ends inside a batch
    has an incomplete tail, which :func:`iter_headers` stops before.

Algorithm
    The header (big-endian; position in bytes)::

         0 baseOffset int64          8 batchLength int32 (bytes after this field)
        12 partitionLeaderEpoch int32  16 magic int8 (2)   17 crc uint32
        21 attributes int16 (bits 0-2 compression, 3 timestamp type, 4 transactional,
           5 control, 6 delete horizon)   23 lastOffsetDelta int32   27 baseTimestamp int64
        35 maxTimestamp int64   43 producerId int64   51 producerEpoch int16
        53 baseSequence int32   57 recordCount int32   61 records

    The CRC32C covers bytes 21 to the end of the batch: the base offset, the length and the
    partition leader epoch lie outside it.

Worked example
    A batch of one record with key ``k`` and value ``v`` at timestamp 1000 is 70 bytes:
    ``batchLength`` 58, ``lastOffsetDelta`` 0, ``recordCount`` 1, both timestamps 1000, CRC
    0x716a6189; :func:`parse_header` gives ``size`` 70, ``last_offset`` 0, ``next_offset`` 1.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from typing import Final, NamedTuple

from crc32c import crc32c

from rackwise.common.errors import CorruptRecordException

BATCH_HEADER_BYTES: Final = 61
"""Kafka's RECORD_BATCH_OVERHEAD: the v2 header, records start after it."""
LOG_OVERHEAD: Final = 12
"""The base offset and length fields, which the length does not count."""
HEADER_SIZE_UP_TO_MAGIC: Final = 17
MAGIC_V2: Final = 2
NO_PRODUCER_ID: Final = -1
NO_PRODUCER_EPOCH: Final = -1
NO_SEQUENCE: Final = -1
NO_PARTITION_LEADER_EPOCH: Final = -1
NO_TIMESTAMP: Final = -1
INT32_MAX: Final = 2**31 - 1
LONG_MAX: Final = 2**63 - 1

CREATE_TIME: Final = "CreateTime"
LOG_APPEND_TIME: Final = "LogAppendTime"
"""``message.timestamp.type`` values."""

COMPRESSION_NONE: Final = 0
COMPRESSION_NAMES: Final = ("none", "gzip", "snappy", "lz4", "zstd")
COMPRESSION_MASK: Final = 0x07
TIMESTAMP_TYPE_MASK: Final = 0x08
TRANSACTIONAL_MASK: Final = 0x10
CONTROL_MASK: Final = 0x20

PARTITION_LEADER_EPOCH_AT: Final = 12
MAGIC_AT: Final = 16
CRC_AT: Final = 17
ATTRIBUTES_AT: Final = 21
MAX_TIMESTAMP_AT: Final = 35

HEADER_STRUCT: Final = struct.Struct(">qiibIHiqqqhii")
INT64_STRUCT: Final = struct.Struct(">q")
INT32_STRUCT: Final = struct.Struct(">i")
UINT32_STRUCT: Final = struct.Struct(">I")
ATTRIBUTES_STRUCT: Final = struct.Struct(">H")


class BatchHeader(NamedTuple):
    """A batch's header as read from a buffer (module docstring for the layout)."""

    position: int
    """Where the batch starts in the buffer it was read from (bytes)."""
    base_offset: int
    batch_length: int
    """The length field: bytes after it, so the batch is ``batch_length + 12`` long."""
    partition_leader_epoch: int
    """NO_PARTITION_LEADER_EPOCH until a leader stamps it."""
    magic: int
    crc: int
    """Unsigned CRC32C of bytes 21 to the end."""
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    """ms since the epoch; NO_TIMESTAMP if the batch has none."""
    producer_id: int
    """NO_PRODUCER_ID for a producer that is not idempotent."""
    producer_epoch: int
    base_sequence: int
    """NO_SEQUENCE for a producer that is not idempotent."""
    record_count: int

    @property
    def size(self) -> int:
        return LOG_OVERHEAD + self.batch_length

    @property
    def epoch(self) -> int:
        """The partition leader epoch: for the metadata log, the controller epoch."""
        return self.partition_leader_epoch

    @property
    def append_time_ms(self) -> int:
        """The max timestamp: for a batch KRaft writes, the time of its append."""
        return self.max_timestamp

    @property
    def end(self) -> int:
        """Where the batch ends in its buffer."""
        return self.position + LOG_OVERHEAD + self.batch_length

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        """0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd."""
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        """0 CreateTime, 1 LogAppendTime."""
        return 1 if self.attributes & TIMESTAMP_TYPE_MASK else 0

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id > NO_PRODUCER_ID

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return increment_sequence(self.base_sequence, self.last_offset_delta)


def increment_sequence(sequence: int, increment: int) -> int:
    """Kafka's DefaultRecordBatch.incrementSequence: wraps past 2**31-1 to 0."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


def parse_header(
    buf: bytes | bytearray | memoryview,
    position: int = 0,
    *,
    file_position: int | None = None,
    check: bool = True,
) -> BatchHeader:
    """The header of the batch at ``position`` of ``buf``; CorruptRecordException if fewer
    than 61 bytes remain or (unless not ``check``) the length field is shorter than a header.
    ``file_position`` is recorded as the header's position instead of ``position`` (a buffer
    read from the middle of a file)."""
    if len(buf) - position < BATCH_HEADER_BYTES:
        raise CorruptRecordException(
            f"Record batch at position {position} is corrupt (only {len(buf) - position} "
            f"bytes remain, fewer than the minimum allowed overhead {BATCH_HEADER_BYTES})"
        )
    fields = HEADER_STRUCT.unpack_from(buf, position)
    header = BatchHeader(position if file_position is None else file_position, *fields)
    if check and header.size < BATCH_HEADER_BYTES:
        raise CorruptRecordException(
            f"Record batch is corrupt (the size {header.size} is smaller than the minimum "
            f"allowed overhead {BATCH_HEADER_BYTES})"
        )
    return header


def iter_headers(buf: bytes | bytearray | memoryview) -> Iterator[BatchHeader]:
    """The headers of the whole batches in ``buf``, stopping before an incomplete tail (fewer
    than 61 bytes, or fewer than the batch's length says). A length too short for a header is
    corruption, not a tail."""
    position = 0
    total = len(buf)
    while total - position >= BATCH_HEADER_BYTES:
        header = parse_header(buf, position)
        if header.end > total:
            return
        yield header
        position = header.end


def crc_matches(buf: bytes | bytearray | memoryview, header: BatchHeader) -> bool:
    """Whether the stored CRC32C matches bytes 21 to the end of the batch."""
    view = memoryview(buf)[header.position + ATTRIBUTES_AT : header.end]
    return crc32c(view) == header.crc


def compute_crc(batch: bytes | bytearray | memoryview) -> int:
    """The CRC32C of a batch that starts at ``batch[0]`` (bytes 21 to its end)."""
    return int(crc32c(memoryview(batch)[ATTRIBUTES_AT:]))


def check_batches(
    buf: bytes | bytearray | memoryview, *, allow_partial_tail: bool
) -> list[BatchHeader]:
    """Framing, magic and CRC of every batch (a follower's append, recovery): the headers of
    the whole batches, CorruptRecordException at the first that fails. Bytes after the last
    whole batch are refused unless ``allow_partial_tail``."""
    headers = []
    for header in iter_headers(buf):
        if header.magic != MAGIC_V2:
            raise CorruptRecordException(
                f"Record batch at position {header.position} has magic {header.magic}; this "
                f"log holds only magic {MAGIC_V2} batches"
            )
        if not crc_matches(buf, header):
            raise CorruptRecordException(
                f"Record is corrupt (stored crc = {header.crc}, computed crc = "
                f"{crc32c(memoryview(buf)[header.position + ATTRIBUTES_AT : header.end])})"
            )
        headers.append(header)
    valid = headers[-1].end if headers else 0
    if valid != len(buf) and not allow_partial_tail:
        raise CorruptRecordException(
            f"{len(buf) - valid} bytes after the last whole record batch at position {valid}"
        )
    return headers


RecordHeaders = Sequence[tuple[str, bytes | None]]


def varint_bytes(value: int) -> bytes:
    """Kafka's zig-zag varint/varlong encoding of ``value``."""
    raw = (value << 1) ^ (value >> 63)
    raw &= (1 << 64) - 1
    if raw < 0x80:
        return _SMALL_VARINTS[raw]
    out = bytearray()
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)


_SMALL_VARINTS: Final = tuple(bytes([i]) for i in range(0x80))
_NULL: Final = b"\x01"
"""The zig-zag varint -1: a null key or value."""


def _sized(data: bytes | None) -> bytes:
    if data is None:
        return _NULL
    return varint_bytes(len(data)) + data


def encode_record(
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: RecordHeaders = (),
) -> bytes:
    """One record in Kafka's DefaultRecord layout: length varint, attributes (0), timestamp
    delta varlong, offset delta varint, key and value each as a length varint (-1: null) and
    the bytes, a header count varint and each header's key and value likewise."""
    parts = [b"\x00", varint_bytes(timestamp_delta), varint_bytes(offset_delta)]
    parts.append(_sized(key))
    parts.append(_sized(value))
    parts.append(varint_bytes(len(headers)))
    for name, header_value in headers:
        parts.append(_sized(name.encode("utf-8")))
        parts.append(_sized(header_value))
    body = b"".join(parts)
    return varint_bytes(len(body)) + body


def pack_batch(
    body: bytes,
    *,
    base_offset: int,
    record_count: int,
    base_timestamp: int,
    max_timestamp: int,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    attributes: int = 0,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
) -> bytes:
    """The uncompressed batch of ``record_count`` encoded records ``body`` (offset deltas 0 to
    ``record_count - 1``): its header, with the CRC32C of bytes 21 to the end, and the body."""
    size = BATCH_HEADER_BYTES + len(body)
    buf = bytearray(size)
    HEADER_STRUCT.pack_into(
        buf,
        0,
        base_offset,
        size - LOG_OVERHEAD,
        partition_leader_epoch,
        MAGIC_V2,
        0,
        attributes,
        record_count - 1,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        record_count,
    )
    buf[BATCH_HEADER_BYTES:] = body
    UINT32_STRUCT.pack_into(buf, CRC_AT, crc32c(memoryview(buf)[ATTRIBUTES_AT:]))
    return bytes(buf)


def build_batch(
    records: Sequence[tuple[bytes | None, bytes | None, RecordHeaders]],
    *,
    base_offset: int = 0,
    timestamp_ms: int,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    compression: int = COMPRESSION_NONE,
    record_timestamps: Sequence[int] | None = None,
    is_transactional: bool = False,
    is_control: bool = False,
) -> bytes:
    """An uncompressed v2 batch of ``(key, value, headers)`` records at offset deltas 0, 1,
    ..., all at ``timestamp_ms`` unless ``record_timestamps`` gives each record's."""
    if compression != COMPRESSION_NONE:
        raise NotImplementedError("build_batch writes uncompressed batches only")
    if not records:
        raise ValueError("a batch holds at least one record")
    stamps = list(record_timestamps) if record_timestamps is not None else None
    if stamps is not None and len(stamps) != len(records):
        raise ValueError(f"{len(stamps)} timestamps for {len(records)} records")
    base_ts = stamps[0] if stamps else timestamp_ms
    body = b"".join(
        encode_record(i, (stamps[i] if stamps else timestamp_ms) - base_ts, key, value, hdrs)
        for i, (key, value, hdrs) in enumerate(records)
    )
    attributes = (TRANSACTIONAL_MASK if is_transactional else 0) | (
        CONTROL_MASK if is_control else 0
    )
    return pack_batch(
        body,
        base_offset=base_offset,
        record_count=len(records),
        base_timestamp=base_ts,
        max_timestamp=max(stamps) if stamps else timestamp_ms,
        partition_leader_epoch=partition_leader_epoch,
        attributes=attributes,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
    )
