"""The records of classic groups' members, as bytes: ``GroupMetadataValue``, which keeps a
classic group in ``__consumer_offsets`` (written byte for byte as Kafka writes it, version 3,
and every version Kafka has written read back, 0-4), and the topics of a consumer's
``ConsumerProtocolSubscription``, which Kafka reads from a member's metadata. Pure values; the
group they describe is :class:`~rackwise.groups.classic.ClassicGroup`, which
:func:`~rackwise.groups.classic.stored` and :func:`~rackwise.groups.classic.restored` turn
into and out of a :class:`StoredGroup`."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final

from rackwise.groups.offsets import (
    OffsetsFormatError,
    encoded_string,
    read_record,
    required_string,
)
from rackwise.protocol.frame_cursor import FrameCursor

METADATA_VERSION: Final = 3
"""The ``GroupMetadataValue`` version Kafka 4 writes (``groupMetadataValueVersion``)."""
NO_TIMESTAMP: Final = -1

_I16: Final = struct.Struct(">h")
_I32: Final = struct.Struct(">i")
_I64: Final = struct.Struct(">q")


# ---- ConsumerProtocolSubscription ---------------------------------------------------------


def subscription_topics(metadata: bytes) -> list[str]:
    """The topics of a ``ConsumerProtocolSubscription`` (read as version 0, the prefix of every
    version, as Kafka reads it)."""
    what = "a consumer protocol subscription"

    def read(cursor: FrameCursor) -> list[str]:
        cursor.int16()
        return [required_string(cursor, what) for _ in range(cursor.count("topics"))]

    return read_record(metadata, what, flexible=False, read=read)


# ---- GroupMetadataValue -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StoredMember:
    """A member as ``GroupMetadataValue`` keeps it."""

    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class StoredGroup:
    """A ``GroupMetadataValue``: a classic group as of its last stored generation."""

    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    state_timestamp_ms: int
    members: tuple[StoredMember, ...]


def _nullable_string(text: str | None) -> bytes:
    return _I16.pack(-1) if text is None else encoded_string(text)


def _bytes(data: bytes) -> bytes:
    return _I32.pack(len(data)) + data


def encode_metadata(value: StoredGroup) -> bytes:
    """A ``GroupMetadataValue``, version 3."""
    parts = [
        _I16.pack(METADATA_VERSION),
        encoded_string(value.protocol_type),
        _I32.pack(value.generation),
        _nullable_string(value.protocol),
        _nullable_string(value.leader),
        _I64.pack(value.state_timestamp_ms),
        _I32.pack(len(value.members)),
    ]
    for m in value.members:
        parts += [
            encoded_string(m.member_id),
            _nullable_string(m.instance_id),
            encoded_string(m.client_id),
            encoded_string(m.client_host),
            _I32.pack(m.rebalance_timeout_ms),
            _I32.pack(m.session_timeout_ms),
            _bytes(m.subscription),
            _bytes(m.assignment),
        ]
    return b"".join(parts)


def decode_metadata(value: bytes) -> StoredGroup:
    """A ``GroupMetadataValue`` of any version Kafka has written (0-4; 4 is flexible)."""
    what = "a group metadata value"
    version = read_record(value, what, flexible=False, read=FrameCursor.int16)
    if version < 0 or version > 4:
        raise OffsetsFormatError(f"unknown group metadata value version {version}")

    def data(cursor: FrameCursor) -> bytes:
        size = cursor.uvarint() - 1 if cursor.flexible else cursor.int32()
        return bytes(cursor.take(size))

    def member(cursor: FrameCursor) -> StoredMember:
        member_id = required_string(cursor, what)
        instance_id = cursor.nullable_string() if version >= 3 else None
        client_id = required_string(cursor, what)
        client_host = required_string(cursor, what)
        rebalance_ms = cursor.int32() if version >= 1 else -1
        session_ms = cursor.int32()
        subscription, assignment = data(cursor), data(cursor)
        if cursor.flexible:
            cursor.skip_tags()
        if rebalance_ms < 0:
            rebalance_ms = session_ms
        return StoredMember(
            member_id,
            instance_id,
            client_id,
            client_host,
            rebalance_ms,
            session_ms,
            subscription,
            assignment,
        )

    def read(cursor: FrameCursor) -> StoredGroup:
        cursor.position = 2
        protocol_type = required_string(cursor, what)
        generation = cursor.int32()
        protocol = cursor.nullable_string()
        leader = cursor.nullable_string()
        timestamp = cursor.int64() if version >= 2 else NO_TIMESTAMP
        members = tuple(member(cursor) for _ in range(cursor.count("members")))
        if cursor.flexible:
            cursor.skip_tags()
        return StoredGroup(protocol_type, generation, protocol, leader, timestamp, members)

    return read_record(value, what, flexible=version >= 4, read=read)
