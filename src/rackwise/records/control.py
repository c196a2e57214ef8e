"""KRaft's control records: the leader's mark at the start of its epoch and a snapshot's header
and footer, as Kafka writes them in control batches (pure).

A control record's key is Kafka's ``ControlRecordType`` key, two int16 (version 0, type); its
value is the message at its current version, without a version prefix (Kafka's
``MessageUtil.toByteBuffer``), in the flexible encoding (compact arrays, tagged fields)::

    LeaderChangeMessage v0   Version int16, LeaderId int32, Voters [VoterId int32],
                             GrantingVoters [VoterId int32]
    SnapshotHeaderRecord v0  Version int16, LastContainedLogTimestamp int64
    SnapshotFooterRecord v0  Version int16

Control records are not metadata records: a replay skips them (they only take offsets), and
the records of a control batch are never framed as ``ApiMessageAndVersion``. A control type
this version does not know (KRaft's voters records of KIP-853, a transaction marker) decodes
to a :class:`RawControlRecord` holding its bytes.

Worked example
    Leader 1 of voters 1, 2, 3, elected by 1 and 2: key ``00 00 00 02``, value
    ``00 00 | 00 00 00 01 | 04 00000001 00 00000002 00 00000003 00 | 03 00000001 00
    00000002 00 | 00``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final

from rackwise.records.codec import DECODE_ERRORS, read_uvarint, uvarint_bytes
from rackwise.records.errors import MetadataParseException

LEADER_CHANGE: Final = 2
SNAPSHOT_HEADER: Final = 3
SNAPSHOT_FOOTER: Final = 4
"""Kafka's ``ControlRecordType`` ids."""
TYPE_NAMES: Final = {
    0: "ABORT",
    1: "COMMIT",
    LEADER_CHANGE: "LEADER_CHANGE",
    SNAPSHOT_HEADER: "SNAPSHOT_HEADER",
    SNAPSHOT_FOOTER: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION",
    6: "KRAFT_VOTERS",
}
KEY: Final = struct.Struct(">hh")
CONTROL_KEY_VERSION: Final = 0
_INT16: Final = struct.Struct(">h")
_INT32: Final = struct.Struct(">i")
_INT64: Final = struct.Struct(">q")
_NO_TAGS: Final = b"\x00"


@dataclass(frozen=True, slots=True)
class LeaderChangeMessage:
    """Kafka's LeaderChangeMessage: who leads the epoch its batch starts, the voters it counts
    on and those that elected it."""

    leader_id: int
    voters: tuple[int, ...]
    granting_voters: tuple[int, ...]
    version: int = 0


@dataclass(frozen=True, slots=True)
class SnapshotHeaderRecord:
    """Kafka's SnapshotHeaderRecord: the first record of a snapshot."""

    last_contained_log_timestamp: int
    version: int = 0


@dataclass(frozen=True, slots=True)
class SnapshotFooterRecord:
    """Kafka's SnapshotFooterRecord: the last record of a whole snapshot."""

    version: int = 0


@dataclass(frozen=True, slots=True)
class RawControlRecord:
    """A control record of a type this version does not decode."""

    type_id: int
    value: bytes | None


ControlRecord = LeaderChangeMessage | SnapshotHeaderRecord | SnapshotFooterRecord | RawControlRecord
CONTROL_RECORD_CLASSES: Final = (
    LeaderChangeMessage,
    SnapshotHeaderRecord,
    SnapshotFooterRecord,
    RawControlRecord,
)


def is_control_record(record: object) -> bool:
    return isinstance(record, CONTROL_RECORD_CLASSES)


def _voters(ids: tuple[int, ...]) -> bytes:
    return uvarint_bytes(len(ids) + 1) + b"".join(_INT32.pack(i) + _NO_TAGS for i in ids)


def encode_control(record: ControlRecord) -> tuple[bytes, bytes | None]:
    """The key and value of ``record`` as a control batch holds them."""
    if isinstance(record, LeaderChangeMessage):
        value = (
            _INT16.pack(record.version)
            + _INT32.pack(record.leader_id)
            + _voters(record.voters)
            + _voters(record.granting_voters)
            + _NO_TAGS
        )
        return KEY.pack(CONTROL_KEY_VERSION, LEADER_CHANGE), value
    if isinstance(record, SnapshotHeaderRecord):
        value = _INT16.pack(record.version) + _INT64.pack(record.last_contained_log_timestamp)
        return KEY.pack(CONTROL_KEY_VERSION, SNAPSHOT_HEADER), value + _NO_TAGS
    if isinstance(record, SnapshotFooterRecord):
        return KEY.pack(CONTROL_KEY_VERSION, SNAPSHOT_FOOTER), _INT16.pack(
            record.version
        ) + _NO_TAGS
    return KEY.pack(CONTROL_KEY_VERSION, record.type_id), record.value


def decode_control(key: bytes | None, value: bytes | None) -> ControlRecord:
    """The control record with ``key`` and ``value``; MetadataParseException if it does not
    decode."""
    if key is None or len(key) < KEY.size:
        raise MetadataParseException(f"a control record's key is {key!r}, not a control type")
    _, type_id = KEY.unpack_from(key)
    if type_id not in (LEADER_CHANGE, SNAPSHOT_HEADER, SNAPSHOT_FOOTER):
        return RawControlRecord(type_id, value)
    if value is None:
        raise MetadataParseException(f"a {TYPE_NAMES[type_id]} control record has no value")
    try:
        record, pos = _decode_value(type_id, value)
        pos = _skip_tags(value, pos)
    except DECODE_ERRORS as e:
        raise MetadataParseException(
            f"the {TYPE_NAMES[type_id]} control record does not decode: {e}"
        ) from None
    if pos != len(value):
        raise MetadataParseException(
            f"Found {len(value) - pos} byte(s) of garbage after the {TYPE_NAMES[type_id]} "
            "control record"
        )
    return record


def _decode_value(type_id: int, value: bytes) -> tuple[ControlRecord, int]:
    (version,) = _INT16.unpack_from(value, 0)
    if type_id == SNAPSHOT_FOOTER:
        return SnapshotFooterRecord(version), 2
    if type_id == SNAPSHOT_HEADER:
        (timestamp,) = _INT64.unpack_from(value, 2)
        return SnapshotHeaderRecord(timestamp, version), 10
    (leader_id,) = _INT32.unpack_from(value, 2)
    voters, pos = _read_voters(value, 6)
    granting, pos = _read_voters(value, pos)
    return LeaderChangeMessage(leader_id, voters, granting, version), pos


def _read_voters(buf: bytes, pos: int) -> tuple[tuple[int, ...], int]:
    count, pos = read_uvarint(buf, pos)
    if count == 0:
        raise ValueError("a null voters array")
    ids = []
    for _ in range(count - 1):
        (voter_id,) = _INT32.unpack_from(buf, pos)
        ids.append(voter_id)
        pos = _skip_tags(buf, pos + 4)
    return tuple(ids), pos


def _skip_tags(buf: bytes, pos: int) -> int:
    count, pos = read_uvarint(buf, pos)
    for _ in range(count):
        _, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        pos += size
        if pos > len(buf):
            raise ValueError("a tagged field runs past the record")
    return pos


def control_json(record: ControlRecord) -> dict[str, object]:
    """The record as the dump tool prints it: the control type's name, version and fields in
    Kafka's JSON names."""
    if isinstance(record, LeaderChangeMessage):
        data: dict[str, object] = {
            "version": record.version,
            "leaderId": record.leader_id,
            "voters": [{"voterId": v} for v in record.voters],
            "grantingVoters": [{"voterId": v} for v in record.granting_voters],
        }
        return {"type": "LEADER_CHANGE", "version": record.version, "data": data}
    if isinstance(record, SnapshotHeaderRecord):
        data = {
            "version": record.version,
            "lastContainedLogTimestamp": record.last_contained_log_timestamp,
        }
        return {"type": "SNAPSHOT_HEADER", "version": record.version, "data": data}
    if isinstance(record, SnapshotFooterRecord):
        data = {"version": record.version}
        return {"type": "SNAPSHOT_FOOTER", "version": record.version, "data": data}
    name = TYPE_NAMES.get(record.type_id, f"UNKNOWN({record.type_id})")
    return {"type": name, "version": 0, "data": {"valueSize": len(record.value or b"")}}
