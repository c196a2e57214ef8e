"""A reader of Kafka's v2 record batches written for the tests from Kafka's spec
(``DefaultRecordBatch`` and ``DefaultRecord``), sharing no code with rackwise's, to check
that what rackwise writes is what Kafka's tools read."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from crc32c import crc32c

_HEADER = struct.Struct(">qiibIhiqqqhii")


@dataclass
class Record:
    offset_delta: int
    timestamp_delta: int
    key: bytes | None
    value: bytes | None
    headers: int


@dataclass
class Batch:
    base_offset: int
    partition_leader_epoch: int
    magic: int
    crc_ok: bool
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records: list[Record]


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    shift = raw = 0
    while True:
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if not b & 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7


def _bytes(buf: bytes, pos: int) -> tuple[bytes | None, int]:
    size, pos = _varint(buf, pos)
    if size < 0:
        return None, pos
    return buf[pos : pos + size], pos + size


def parse_batches(data: bytes) -> list[Batch]:
    """Every batch in ``data``, which must hold whole batches only."""
    out = []
    pos = 0
    while pos < len(data):
        fields = _HEADER.unpack_from(data, pos)
        base, length, epoch, magic, crc, attributes, last_delta = fields[:7]
        end = pos + 12 + length
        assert end <= len(data), "a torn batch"
        records = []
        at = pos + 61
        for _ in range(fields[12]):
            size, at = _varint(data, at)
            stop = at + size
            timestamp_delta, p = _varint(data, at + 1)
            offset_delta, p = _varint(data, p)
            key, p = _bytes(data, p)
            value, p = _bytes(data, p)
            headers, p = _varint(data, p)
            assert p == stop, "a record whose fields do not fill its length"
            records.append(Record(offset_delta, timestamp_delta, key, value, headers))
            at = stop
        assert at == end, "records that do not fill their batch"
        crc_ok = crc32c(data[pos + 21 : end]) == crc
        out.append(
            Batch(base, epoch, magic, crc_ok, attributes, last_delta, *fields[7:12], records)
        )
        pos = end
    return out
