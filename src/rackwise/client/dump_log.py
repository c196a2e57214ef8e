"""What ``kafka-dump-log.sh`` (Kafka's ``DumpLogSegments``) prints of a broker's files: a
segment (``.log``) batch by batch and, with ``--deep-iteration``, record by record (with
``--print-data-log``, keys and values as UTF-8 text), an offset index (``.index``) and a time
index (``.timeindex``) entry by entry, in Kafka's words.

Constraints
    * The lines are Kafka's, field for field: ``baseOffset: 0 lastOffset: 2 count: 3
      baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch:
      0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: 0
      CreateTime: 1700000000000 size: 82 magic: 2 compresscodec: none crc: 123 isvalid: true``,
      then ``| offset: 0 CreateTime: 1700000000000 keySize: 2 valueSize: 2 sequence: -1
      headerKeys: [] key: k1 payload: v1``.
    * Files are read, never written or locked, so a running broker's files can be dumped; an
      incomplete tail is reported as Kafka reports it (``Found 17 invalid bytes at the end of
      00000000000000000000.log``).
    * The metadata log's segments are Kafka v2 batches too; with ``--cluster-metadata-decoder``
      each record's value prints as the JSON Kafka's decoder prints
      (:func:`metadata_payload`: ``payload: {"type":"TOPIC_RECORD","version":0,"data":{...}}``)
      and a control record by its type (``controlType: LEADER_CHANGE(2)``).

Worked example
    ``dump(Path("orders-0/00000000000000000000.index"), ...)`` of an index with one entry
    prints ``offset: 52 position: 4170``; of an empty one, ``... is empty.``.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Final

from rackwise.records.batch_v2 import (
    BATCH_HEADER_BYTES,
    COMPRESSION_MASK,
    COMPRESSION_NAMES,
    CONTROL_MASK,
    NO_SEQUENCE,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    BatchHeader,
    crc_matches,
    parse_header,
)
from rackwise.storage.record_codec import Record, iter_records

DELETE_HORIZON_MASK: Final = 0x40
INT_MAX: Final = 2**31 - 1
CONTROL_TYPES: Final = {
    0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER", 4: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION", 6: "KRAFT_VOTERS",
}  # fmt: skip
Print = Callable[[str], None]


def _sequence(base: int, delta: int) -> int:
    """Kafka's ``incrementSequence``: wraps past Integer.MAX_VALUE."""
    if base == NO_SEQUENCE:
        return NO_SEQUENCE
    return base + delta if base <= INT_MAX - delta else delta - (INT_MAX - base) - 1


def _bool(value: int) -> str:
    return "true" if value else "false"


def timestamp_type(header: BatchHeader) -> str:
    return "LogAppendTime" if header.attributes & TIMESTAMP_TYPE_MASK else "CreateTime"


def batch_line(header: BatchHeader, data: bytes) -> str:
    """One batch, as Kafka's ``printBatchLevel`` prints a v2 batch."""
    attributes = header.attributes
    horizon = (
        f"OptionalLong[{header.base_timestamp}]"
        if attributes & DELETE_HORIZON_MASK
        else "OptionalLong.empty"
    )
    return (
        f"baseOffset: {header.base_offset} lastOffset: {header.last_offset} count: "
        f"{header.record_count} baseSequence: {header.base_sequence} lastSequence: "
        f"{_sequence(header.base_sequence, header.last_offset_delta)} producerId: "
        f"{header.producer_id} producerEpoch: {header.producer_epoch} partitionLeaderEpoch: "
        f"{header.partition_leader_epoch} isTransactional: "
        f"{_bool(attributes & TRANSACTIONAL_MASK)} isControl: {_bool(attributes & CONTROL_MASK)}"
        f" deleteHorizonMs: {horizon} position: {header.position} {timestamp_type(header)}: "
        f"{header.max_timestamp} size: {header.size} magic: {header.magic} compresscodec: "
        f"{COMPRESSION_NAMES[attributes & COMPRESSION_MASK]} crc: {header.crc} isvalid: "
        f"{_bool(crc_matches(data, header))}"
    )


def _size(data: bytes | None) -> int:
    return -1 if data is None else len(data)


def record_line(
    header: BatchHeader,
    record: Record,
    *,
    print_data: bool,
    decode: Callable[[bytes], str] | None = None,
) -> str:
    """One record, as Kafka's deep iteration prints it (``| offset: ...``)."""
    sequence = _sequence(header.base_sequence, record.offset - header.base_offset)
    keys = ",".join(k for k, _ in record.headers)
    line = (
        f"| offset: {record.offset} {timestamp_type(header)}: {record.timestamp} keySize: "
        f"{_size(record.key)} valueSize: {_size(record.value)} sequence: {sequence} "
        f"headerKeys: [{keys}]"
    )
    if header.attributes & CONTROL_MASK:
        return line + _control(record)
    if print_data:
        if record.key is not None:
            line += f" key: {record.key.decode(errors='replace')}"
        if record.value is not None:
            text = decode(record.value) if decode else record.value.decode(errors="replace")
            line += f" payload: {text}"
    return line


def _control(record: Record) -> str:
    """A control record's marker (Kafka's ``EndTransactionMarker`` for ABORT and COMMIT)."""
    key_type = (
        struct.unpack_from(">h", record.key, 2)[0] if record.key and len(record.key) >= 4 else -1
    )
    name = CONTROL_TYPES.get(key_type, "UNKNOWN")
    if name in ("ABORT", "COMMIT") and record.value and len(record.value) >= 6:
        epoch = struct.unpack_from(">i", record.value, 2)[0]
        return f" endTxnMarker: {name} coordinatorEpoch: {epoch}"
    return f" controlType: {name}({key_type})"


def _batches(data: bytes) -> Iterator[BatchHeader]:
    position = 0
    while len(data) - position >= BATCH_HEADER_BYTES:
        header = parse_header(data, position, check=False)
        if header.size < BATCH_HEADER_BYTES or header.end > len(data):
            return
        yield header
        position = header.end


def dump_segment(
    path: Path,
    out: Print,
    *,
    deep: bool,
    print_data: bool,
    decode: Callable[[bytes], str] | None = None,
) -> None:
    """A ``.log`` file: ``Log starting offset``, its batches and (``deep``) their records."""
    data = path.read_bytes()
    out(f"Log starting offset: {int(path.name.split('.')[0])}")
    valid = 0
    for header in _batches(data):
        out(batch_line(header, data))
        if deep:
            for record in iter_records(memoryview(data)[header.position : header.end]):
                out(record_line(header, record, print_data=print_data, decode=decode))
        valid = header.end
    if len(data) > valid:
        out(f"Found {len(data) - valid} invalid bytes at the end of {path.name}")


def dump_offset_index(path: Path, out: Print) -> None:
    """A ``.index`` file: ``offset: O position: P`` per entry (absolute offsets)."""
    base = int(path.name.split(".")[0])
    data = path.read_bytes()
    entries = [struct.unpack_from(">ii", data, i) for i in range(0, len(data) - 7, 8)]
    if not entries:
        out(f"{path} is empty.")
        return
    for i, (relative, position) in enumerate(entries):
        if relative == 0 and i > 0:
            return
        out(f"offset: {base + relative} position: {position}")


def dump_time_index(path: Path, out: Print) -> None:
    """A ``.timeindex`` file: ``timestamp: T offset: O`` per entry."""
    base = int(path.name.split(".")[0])
    data = path.read_bytes()
    for i in range(0, len(data) - 11, 12):
        timestamp, relative = struct.unpack_from(">qi", data, i)
        if relative == 0 and i > 0:
            return
        out(f"timestamp: {timestamp} offset: {base + relative}")


def metadata_payload(value: bytes) -> str:
    """A metadata log record's value (its ``ApiMessageAndVersion`` frame) as the JSON Kafka's
    ``--cluster-metadata-decoder`` prints: ``{"type":"TOPIC_RECORD","version":0,"data":{...}}``."""
    import json  # noqa: PLC0415

    from rackwise.records.frame import decode_record  # noqa: PLC0415
    from rackwise.records.jsonform import record_json  # noqa: PLC0415

    return json.dumps(record_json(decode_record(bytes(value))), separators=(",", ":"))
