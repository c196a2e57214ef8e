"""What ``kafka-dump-log.sh`` (Kafka's ``DumpLogSegments``) prints of a broker's segments
(``.log``): batch by batch and, with ``--deep-iteration``, record by record (with
``--print-data-log``, keys and values through a decoder, :data:`Parser`: UTF-8 text, the
metadata records' JSON, or the offsets topic's, :mod:`rackwise.client.dump_offsets`), in
Kafka's words. The other files of a segment are :mod:`rackwise.client.dump_files`'.

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
    * ``--skip-record-metadata`` leaves the key and payload alone (``| key: k1 payload: v1``);
      ``--max-bytes`` reads the batches within the file's first bytes only.

Worked example
    ``dump_segment(Path("orders-0/00000000000000000000.log"), print, deep=True,
    print_data=True)`` prints ``Log starting offset: 0``, ``baseOffset: 0 lastOffset: 9 ...``
    and ``| offset: 0 CreateTime: ... key: k0 payload: v0`` for each record.
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


Parser = Callable[[Record], tuple[str | None, str | None]]
"""A record's key and payload as a decoder prints them (None: not printed)."""


def text_parser(record: Record) -> tuple[str | None, str | None]:
    """Kafka's ``StringDecoder`` for keys and values."""
    key, value = record.key, record.value
    return (
        None if key is None else key.decode(errors="replace"),
        None if value is None else value.decode(errors="replace"),
    )


def metadata_parser(record: Record) -> tuple[str | None, str | None]:
    """Kafka's cluster metadata decoder: no key, the value as the metadata record's JSON."""
    from rackwise.records.errors import MetadataParseException  # noqa: PLC0415

    if record.value is None:
        return None, None
    try:
        return None, metadata_payload(record.value)
    except (MetadataParseException, ValueError, KeyError) as e:
        return None, f"Error at {record.offset}, skipping. {e}"


def record_line(
    header: BatchHeader,
    record: Record,
    *,
    print_data: bool,
    parse: Parser = text_parser,
    skip_metadata: bool = False,
) -> str:
    """One record, as Kafka's deep iteration prints it (``| offset: ...``); with
    ``skip_metadata`` only its key and payload, as ``--skip-record-metadata`` prints them."""
    prefix, line = "| ", ""
    control = header.attributes & CONTROL_MASK
    if not skip_metadata:
        sequence = _sequence(header.base_sequence, record.offset - header.base_offset)
        keys = ",".join(k for k, _ in record.headers)
        line = (
            f"{prefix}offset: {record.offset} {timestamp_type(header)}: {record.timestamp} "
            f"keySize: {_size(record.key)} valueSize: {_size(record.value)} sequence: "
            f"{sequence} headerKeys: [{keys}]"
        )
        prefix = " "
        if control:
            line += _control(record)
    if print_data and not control:
        key, payload = parse(record)
        if key is not None:
            line += f"{prefix}key: {key}"
        if payload is not None:
            line += f" payload: {payload}"
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
    parse: Parser = text_parser,
    skip_metadata: bool = False,
    max_bytes: int = INT_MAX,
    gaps: dict[str, list[tuple[int, int]]] | None = None,
) -> None:
    """A ``.log`` file: ``Log starting offset``, its batches and (``deep``) their records,
    the batches within its first ``max_bytes`` only. Records whose offset does not follow the
    one before are kept in ``gaps`` (by absolute path), for Kafka's report after the dump."""
    data = path.read_bytes()[:max_bytes]
    out(f"Log starting offset: {int(path.name.split('.')[0])}")
    valid, last = 0, -1
    for header in _batches(data):
        out(batch_line(header, data))
        if deep:
            for record in iter_records(memoryview(data)[header.position : header.end]):
                if last != -1 and record.offset != last + 1 and gaps is not None:
                    gaps.setdefault(str(path.absolute()), []).append((last, record.offset))
                last = record.offset
                out(
                    record_line(
                        header, record, print_data=print_data, parse=parse,
                        skip_metadata=skip_metadata,
                    )
                )  # fmt: skip
        valid = header.end
    if len(data) > valid and max_bytes == INT_MAX:
        out(f"Found {len(data) - valid} invalid bytes at the end of {path.name}")


def metadata_payload(value: bytes) -> str:
    """A metadata log record's value (its ``ApiMessageAndVersion`` frame) as the JSON Kafka's
    ``--cluster-metadata-decoder`` prints: ``{"type":"TOPIC_RECORD","version":0,"data":{...}}``."""
    import json  # noqa: PLC0415

    from rackwise.records.frame import decode_record  # noqa: PLC0415
    from rackwise.records.jsonform import record_json  # noqa: PLC0415

    return json.dumps(record_json(decode_record(bytes(value))), separators=(",", ":"))
