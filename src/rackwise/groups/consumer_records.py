"""The records a consumer group (KIP-848) keeps in ``__consumer_offsets``, as bytes, in
Kafka's formats: each key is an int16 version that names its kind followed by non-flexible
fields, each value an int16 version (0) followed by flexible fields.

=========================================  ===  ==============================================
record                                     key  what the value holds
=========================================  ===  ==============================================
``ConsumerGroupMetadata``                   3   the group epoch
``ConsumerGroupPartitionMetadata``          4   the subscribed topics: id, name, partition
                                                count, each partition's replica racks
``ConsumerGroupMemberMetadata``             5   a member's subscription, rack, client, assignor;
                                                for a classic member (tagged field 0,
                                                ``ClassicMemberMetadata``) its session timeout
                                                and JoinGroup protocols
``ConsumerGroupTargetAssignmentMetadata``   6   the epoch of the target assignment
``ConsumerGroupTargetAssignmentMember``     7   a member's target partitions
``ConsumerGroupCurrentMemberAssignment``    8   a member's epochs, state, owned and revoking
=========================================  ===  ==============================================

A key without a value (a tombstone) deletes what the key names. Pure values; the group they
rebuild is :class:`rackwise.groups.consumer_group.ConsumerGroup`.

Worked example
    ``encode(GroupEpoch("g", 1))`` is the key ``00 03 00 01 67`` and the value
    ``00 00 00 00 00 01 00``: version 0, the epoch, an empty tag buffer.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from rackwise.groups.offsets import OffsetsFormatError, encoded_string, read_record
from rackwise.protocol.frame_cursor import FrameCursor
from rackwise.records.codec import uvarint_bytes

GROUP_EPOCH_KEY: Final = 3
PARTITION_METADATA_KEY: Final = 4
MEMBER_METADATA_KEY: Final = 5
TARGET_METADATA_KEY: Final = 6
TARGET_MEMBER_KEY: Final = 7
CURRENT_ASSIGNMENT_KEY: Final = 8
CONSUMER_GROUP_KEYS: Final = frozenset(range(3, 9))

_I8: Final = struct.Struct(">b")
_I16: Final = struct.Struct(">h")
_I32: Final = struct.Struct(">i")
_VALUE_VERSION: Final = b"\x00\x00"
_NO_TAGS: Final = b"\x00"

Partitions = Mapping[uuid.UUID, frozenset[int]]
"""Topic id -> partition ids: an assignment as the records hold it."""


@dataclass(frozen=True, slots=True)
class GroupEpoch:
    group: str
    epoch: int


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    topic_id: uuid.UUID
    name: str
    num_partitions: int
    racks: tuple[tuple[str, ...], ...] = ()
    """Each partition's replica racks, sorted; empty when no partition has a rack."""


@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    group: str
    topics: tuple[TopicMetadata, ...]


@dataclass(frozen=True, slots=True)
class ClassicMeta:
    """``ClassicMemberMetadata``: what a member of the classic protocol served in a consumer
    group keeps of its JoinGroup (its session timeout and protocols, in its order)."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True)
class MemberMetadata:
    group: str
    member_id: str
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    topic_names: tuple[str, ...]
    topic_regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None
    classic: ClassicMeta | None = None


@dataclass(frozen=True, slots=True)
class TargetMetadata:
    group: str
    epoch: int


@dataclass(frozen=True, slots=True)
class TargetMember:
    group: str
    member_id: str
    partitions: Partitions


@dataclass(frozen=True, slots=True)
class CurrentAssignment:
    group: str
    member_id: str
    member_epoch: int
    previous_epoch: int
    state: int
    assigned: Partitions
    revoking: Partitions


Value = GroupEpoch | PartitionMetadata | MemberMetadata | TargetMetadata | TargetMember
Record = Value | CurrentAssignment


@dataclass(frozen=True, slots=True)
class Tombstone:
    """A key without a value: ``kind`` is the key version, ``member_id`` empty for group
    keys."""

    kind: int
    group: str
    member_id: str = ""


# ---- writing ----------------------------------------------------------------------------


def _string(text: str) -> bytes:
    data = text.encode()
    return uvarint_bytes(len(data) + 1) + data


def _nullable(text: str | None) -> bytes:
    return b"\x00" if text is None else _string(text)


def _array(items: list[bytes]) -> bytes:
    return uvarint_bytes(len(items) + 1) + b"".join(items)


def _partitions(partitions: Partitions) -> bytes:
    topics = []
    for topic_id in sorted(partitions, key=str):
        ids = sorted(partitions[topic_id])
        topics.append(topic_id.bytes + _array([_I32.pack(p) for p in ids]) + _NO_TAGS)
    return _array(topics)


def _key(kind: int, group: str, member_id: str | None) -> bytes:
    key = _I16.pack(kind) + encoded_string(group)
    return key if member_id is None else key + encoded_string(member_id)


def _topic(t: TopicMetadata) -> bytes:
    racks = [
        _I32.pack(p) + _array([_string(r) for r in rs]) + _NO_TAGS for p, rs in enumerate(t.racks)
    ]
    return (
        t.topic_id.bytes + _string(t.name) + _I32.pack(t.num_partitions) + _array(racks) + _NO_TAGS
    )


def _member_value(r: MemberMetadata) -> bytes:
    return (
        _nullable(r.instance_id)
        + _nullable(r.rack_id)
        + _string(r.client_id)
        + _string(r.client_host)
        + _array([_string(t) for t in r.topic_names])
        + _nullable(r.topic_regex)
        + _I32.pack(r.rebalance_timeout_ms)
        + _nullable(r.server_assignor)
    )


def _classic_tag(classic: ClassicMeta | None) -> bytes:
    """The value's tag buffer: none, or tag 0 holding the nullable ``ClassicMemberMetadata``
    struct (a presence byte, then the struct, as Kafka's generated writer puts it)."""
    if classic is None:
        return _NO_TAGS
    protocols = [
        _string(name) + uvarint_bytes(len(data) + 1) + data + _NO_TAGS
        for name, data in classic.protocols
    ]
    struct_ = b"\x01" + _I32.pack(classic.session_timeout_ms) + _array(protocols) + _NO_TAGS
    return b"\x01" + uvarint_bytes(0) + uvarint_bytes(len(struct_)) + struct_


def encode(record: Record) -> tuple[bytes, bytes]:
    """The key and value of ``record``."""
    match record:
        case GroupEpoch(group, epoch):
            key, body = _key(GROUP_EPOCH_KEY, group, None), _I32.pack(epoch)
        case PartitionMetadata(group, topics):
            key, body = _key(PARTITION_METADATA_KEY, group, None), _array(list(map(_topic, topics)))
        case MemberMetadata():
            key = _key(MEMBER_METADATA_KEY, record.group, record.member_id)
            body = _member_value(record)
        case TargetMetadata(group, epoch):
            key, body = _key(TARGET_METADATA_KEY, group, None), _I32.pack(epoch)
        case TargetMember(group, member_id, partitions):
            key, body = _key(TARGET_MEMBER_KEY, group, member_id), _partitions(partitions)
        case CurrentAssignment():
            key = _key(CURRENT_ASSIGNMENT_KEY, record.group, record.member_id)
            body = (
                _I32.pack(record.member_epoch)
                + _I32.pack(record.previous_epoch)
                + _I8.pack(record.state)
                + _partitions(record.assigned)
                + _partitions(record.revoking)
            )
    if isinstance(record, MemberMetadata):
        return key, _VALUE_VERSION + body + _classic_tag(record.classic)
    return key, _VALUE_VERSION + body + _NO_TAGS


def encode_tombstone(tombstone: Tombstone) -> bytes:
    member = tombstone.member_id if tombstone.kind in (5, 7, 8) else None
    return _key(tombstone.kind, tombstone.group, member)


# ---- reading ----------------------------------------------------------------------------


def key_kind(key: bytes) -> int:
    """The version of a ``__consumer_offsets`` key (which kind of record it is)."""
    return read_record(key, "a record key", flexible=False, read=FrameCursor.int16)


def _read_partitions(cursor: FrameCursor) -> dict[uuid.UUID, frozenset[int]]:
    out: dict[uuid.UUID, frozenset[int]] = {}
    for _ in range(cursor.count("topic partitions")):
        topic_id = cursor.uuid() or uuid.UUID(int=0)
        out[topic_id] = frozenset(cursor.int32() for _ in range(cursor.count("partitions")))
        cursor.skip_tags()
    return out


def _read_topic(cursor: FrameCursor) -> TopicMetadata:
    topic_id = cursor.uuid() or uuid.UUID(int=0)
    name = cursor.string("topic name")
    count = cursor.int32()
    racks: list[tuple[str, ...]] = []
    for _ in range(cursor.count("partition metadata")):
        cursor.int32()
        racks.append(tuple(cursor.string("rack") for _ in range(cursor.count("racks"))))
        cursor.skip_tags()
    cursor.skip_tags()
    return TopicMetadata(topic_id, name, count, tuple(racks))


def _read_classic(cursor: FrameCursor) -> ClassicMeta | None:
    found = None
    for tag, start, end in cursor.tags():
        if tag != 0:
            continue
        inner = FrameCursor(cursor.data[start:end], 0, flexible=True)
        if inner.take(1)[0] == 0:
            continue
        timeout = inner.int32()
        protocols = []
        for _ in range(inner.count("classic protocols")):
            name = inner.string("protocol name")
            data = bytes(inner.take(inner.uvarint() - 1))
            inner.skip_tags()
            protocols.append((name, data))
        found = ClassicMeta(timeout, tuple(protocols))
    return found


def _read_member(cursor: FrameCursor, group: str, member_id: str) -> MemberMetadata:
    return MemberMetadata(
        group,
        member_id,
        instance_id=cursor.nullable_string(),
        rack_id=cursor.nullable_string(),
        client_id=cursor.string("client id"),
        client_host=cursor.string("client host"),
        topic_names=tuple(cursor.string("topic") for _ in range(cursor.count("topics"))),
        topic_regex=cursor.nullable_string(),
        rebalance_timeout_ms=cursor.int32(),
        server_assignor=cursor.nullable_string(),
        classic=_read_classic(cursor),
    )


def _read_value(kind: int, group: str, member_id: str, cursor: FrameCursor) -> Record:
    version = cursor.int16()
    if version != 0:
        raise OffsetsFormatError(f"unknown value version {version} for a key of version {kind}")
    match kind:
        case 3:
            return GroupEpoch(group, cursor.int32())
        case 4:
            topics = tuple(_read_topic(cursor) for _ in range(cursor.count("topics")))
            return PartitionMetadata(group, topics)
        case 5:
            return _read_member(cursor, group, member_id)
        case 6:
            return TargetMetadata(group, cursor.int32())
        case 7:
            return TargetMember(group, member_id, _read_partitions(cursor))
    epoch, previous = cursor.int32(), cursor.int32()
    (state,) = _I8.unpack(cursor.take(1))
    assigned = _read_partitions(cursor)
    revoking = _read_partitions(cursor)
    return CurrentAssignment(group, member_id, epoch, previous, state, assigned, revoking)


def decode(key: bytes, value: bytes | None) -> Record | Tombstone:
    """The record (or tombstone) of a consumer group key (one of :data:`CONSUMER_GROUP_KEYS`)
    and its value; raises :class:`OffsetsFormatError`."""

    def read_key(cursor: FrameCursor) -> tuple[int, str, str]:
        kind = cursor.int16()
        if kind not in CONSUMER_GROUP_KEYS:
            raise ValueError(f"key version {kind} is not a consumer group's")
        group = cursor.string("group id")
        member = cursor.string("member id") if kind in (5, 7, 8) else ""
        return kind, group, member

    kind, group, member_id = read_record(key, "a consumer group key", flexible=False, read=read_key)
    if value is None:
        return Tombstone(kind, group, member_id)
    return read_record(
        value,
        "a consumer group value",
        flexible=True,
        read=lambda cursor: _read_value(kind, group, member_id, cursor),
    )
