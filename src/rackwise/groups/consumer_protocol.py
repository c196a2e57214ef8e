"""The embedded consumer protocol a classic member speaks inside its JoinGroup and SyncGroup,
as the coordinator reads and writes it when it serves classic members in a consumer group
(Kafka's ``ConsumerProtocol``): the ``ConsumerProtocolSubscription`` a member joins with and
the ``ConsumerProtocolAssignment`` it is given.

Constraints
    * Not flexible, versions 0-3; a newer version is read as version 3, as Kafka reads it
      (new versions only add fields at the end). A subscription holds its topics and user
      data (v0), the partitions the member owns (v1), its generation (v2) and its rack (v3);
      an assignment holds its partitions by topic name and user data in every version.
    * An assignment is written in the version of the member's subscription, as Kafka's
      ``prepareAssignment`` writes it, so an old client reads what it can.
    * Bytes that do not parse raise :class:`~rackwise.groups.offsets.OffsetsFormatError`.

Worked example
    kafka-python joins with ``00 00 | 00 00 00 01 | 00 01 74 | ff ff ff ff``: version 0,
    topic ``t``, no user data; owning nothing, with no rack. Given partitions 0 and 1 of
    ``t``, its SyncGroup answer is ``encode_assignment(0, {"t": [0, 1]})``.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from rackwise.groups.offsets import read_record
from rackwise.protocol.frame_cursor import FrameCursor

HIGHEST_VERSION: Final = 3
_I16: Final = struct.Struct(">h")
_I32: Final = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class Subscription:
    version: int
    topics: tuple[str, ...]
    owned: tuple[tuple[str, tuple[int, ...]], ...] = ()
    rack_id: str | None = None


def _bytes_field(cursor: FrameCursor) -> None:
    size = cursor.int32()
    if size >= 0:
        cursor.take(size)


def decode_subscription(data: bytes) -> Subscription:
    """The subscription in a JoinGroup protocol's metadata."""

    def read(cursor: FrameCursor) -> Subscription:
        version = cursor.int16()
        if version < 0:
            raise ValueError(f"unsupported subscription version {version}")
        version = min(version, HIGHEST_VERSION)
        topics = tuple(cursor.string("topic") for _ in range(cursor.count("topics")))
        _bytes_field(cursor)
        owned: list[tuple[str, tuple[int, ...]]] = []
        rack = None
        if version >= 1:
            for _ in range(cursor.count("owned partitions")):
                topic = cursor.string("topic")
                owned.append((topic, tuple(cursor.int32() for _ in range(cursor.count("ids")))))
        if version >= 2:
            cursor.int32()
        if version >= 3:
            rack = cursor.nullable_string("rack")
        return Subscription(version, topics, tuple(owned), rack)

    return read_record(data, "a consumer protocol subscription", flexible=False, read=read)


def subscription_version(data: bytes) -> int:
    """The version a subscription was written in (capped at 3; 0 if unreadable)."""
    if len(data) < 2:
        return 0
    version: int = _I16.unpack_from(data)[0]
    return max(0, min(version, HIGHEST_VERSION))


def encode_assignment(version: int, partitions: Mapping[str, list[int]]) -> bytes:
    """A ``ConsumerProtocolAssignment`` of ``partitions`` (topic name -> ids), no user data."""
    out = [_I16.pack(version), _I32.pack(len(partitions))]
    for topic in sorted(partitions):
        name = topic.encode()
        ids = sorted(partitions[topic])
        out.append(_I16.pack(len(name)) + name + _I32.pack(len(ids)))
        out.extend(_I32.pack(p) for p in ids)
    out.append(_I32.pack(-1))
    return b"".join(out)


def decode_assignment(data: bytes) -> dict[str, tuple[int, ...]]:
    """The partitions (topic name -> ids) of an assignment; empty bytes are none."""
    if not data:
        return {}

    def read(cursor: FrameCursor) -> dict[str, tuple[int, ...]]:
        cursor.int16()
        out: dict[str, tuple[int, ...]] = {}
        for _ in range(cursor.count("topics")):
            topic = cursor.string("topic")
            out[topic] = out.get(topic, ()) + tuple(
                cursor.int32() for _ in range(cursor.count("partitions"))
            )
        return out

    return read_record(data, "a consumer protocol assignment", flexible=False, read=read)
