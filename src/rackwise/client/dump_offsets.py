"""``kafka-dump-log.sh --offsets-decoder``: the records of a ``__consumer_offsets`` segment
printed as Kafka's ``OffsetsMessageParser`` prints them, each key and value as JSON.

Constraints
    * A key prints as ``{"type":"<key version>","data":{...}}``, a value as
      ``{"version":"<value version>","data":{...}}``, a tombstone's value as ``<DELETE>``;
      the data's fields are the schema's for that version, in its order and with its names
      (``OffsetCommitKey``, ``OffsetCommitValue``, ``GroupMetadataKey``,
      ``GroupMetadataValue``), as Kafka's JSON converters write them, bytes in base64.
    * A ``consumer`` group's member subscriptions and assignments print decoded
      (``ConsumerProtocolSubscription`` / ``ConsumerProtocolAssignment``), or as their base64
      bytes where they do not parse, as Kafka does.
    * A key of another type (the KIP-848 group records) prints ``Unknown record type 3 at
      offset 12, skipping.``, a record that does not parse ``Error at offset 12, skipping.
      <why>``; a record with no key stops the dump with Kafka's message (:class:`DumpError`).

Worked example
    The key and value of a commit of offset 10 by group ``g`` for ``t-0`` print as
    ``key: {"type":"1","data":{"group":"g","topic":"t","partition":0}} payload:
    {"version":"3","data":{"offset":10,"leaderEpoch":-1,"metadata":"","commitTimestamp":...}}``.
"""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Callable
from typing import Any

from rackwise.client.dump_files import DumpError
from rackwise.protocol.frame_cursor import FrameCursor

Json = dict[str, Any]


def _json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _cursor(data: bytes, *, flexible: bool = False) -> FrameCursor:
    cursor = FrameCursor(memoryview(data), 2, flexible=flexible)
    return cursor


def _string(cursor: FrameCursor) -> str:
    value = cursor.nullable_string()
    if value is None:
        raise ValueError("non-nullable field was serialized as null")
    return value


def _bytes(cursor: FrameCursor, *, nullable: bool = False) -> bytes | None:
    size = cursor.uvarint() - 1 if cursor.flexible else cursor.int32()
    if size < 0:
        if nullable:
            return None
        raise ValueError("non-nullable field was serialized as null")
    return bytes(cursor.take(size))


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def _key(key: bytes) -> tuple[int, Json]:
    version = struct.unpack_from(">h", key)[0]
    cursor = _cursor(key)
    if version in (0, 1):
        return version, {
            "group": _string(cursor), "topic": _string(cursor), "partition": cursor.int32(),
        }  # fmt: skip
    if version == 2:
        return version, {"group": _string(cursor)}
    raise _UnknownType(version)


class _UnknownType(Exception):
    def __init__(self, version: int) -> None:
        super().__init__(version)
        self.version = version


def _offset_value(version: int, cursor: FrameCursor) -> Json:
    data: Json = {"offset": cursor.int64()}
    if version >= 3:
        data["leaderEpoch"] = cursor.int32()
    data["metadata"] = _string(cursor)
    data["commitTimestamp"] = cursor.int64()
    if version == 1:
        data["expireTimestamp"] = cursor.int64()
    return data


def _partitions(cursor: FrameCursor, name: str) -> list[Json]:
    return [
        {
            "topic": _string(cursor),
            "partitions": [cursor.int32() for _ in range(cursor.count(name))],
        }
        for _ in range(cursor.count(name))
    ]


def _subscription(data: bytes) -> Json:
    version = struct.unpack_from(">h", data)[0]
    cursor = _cursor(data)
    out: Json = {"topics": [_string(cursor) for _ in range(cursor.count("topics"))]}
    out["userData"] = _b64(_bytes(cursor, nullable=True))
    if version >= 1:
        out["ownedPartitions"] = _partitions(cursor, "ownedPartitions")
    if version >= 2:
        out["generationId"] = cursor.int32()
    if version >= 3:
        out["rackId"] = cursor.nullable_string()
    return out


def _assignment(data: bytes) -> Json:
    cursor = _cursor(data)
    return {
        "assignedPartitions": _partitions(cursor, "assignedPartitions"),
        "userData": _b64(_bytes(cursor, nullable=True)),
    }


def _decoded(data: bytes, read: Callable[[bytes], Json]) -> Json | str:
    """The embedded consumer protocol message, or its base64 where it does not parse."""
    try:
        return read(data)
    except (ValueError, struct.error, IndexError, UnicodeDecodeError):
        return base64.b64encode(data).decode()


def _member(version: int, cursor: FrameCursor, consumer: bool) -> Json:
    member: Json = {"memberId": _string(cursor)}
    if version >= 3:
        member["groupInstanceId"] = cursor.nullable_string()
    member["clientId"] = _string(cursor)
    member["clientHost"] = _string(cursor)
    if version >= 1:
        member["rebalanceTimeout"] = cursor.int32()
    member["sessionTimeout"] = cursor.int32()
    subscription, assignment = _bytes(cursor) or b"", _bytes(cursor) or b""
    member["subscription"] = (
        _decoded(subscription, _subscription) if consumer else _b64(subscription)
    )
    member["assignment"] = _decoded(assignment, _assignment) if consumer else _b64(assignment)
    cursor.skip_tags()
    return member


def _group_value(version: int, cursor: FrameCursor) -> Json:
    data: Json = {"protocolType": _string(cursor), "generation": cursor.int32()}
    data["protocol"] = cursor.nullable_string()
    data["leader"] = cursor.nullable_string()
    if version >= 2:
        data["currentStateTimestamp"] = cursor.int64()
    consumer = data["protocolType"] == "consumer"
    data["members"] = [_member(version, cursor, consumer) for _ in range(cursor.count("members"))]
    return data


def _value(key_version: int, value: bytes) -> Json:
    version = struct.unpack_from(">h", value)[0]
    if not 0 <= version <= 4:
        raise ValueError(f"Unknown value version {version}")
    cursor = _cursor(value, flexible=version >= 4)
    read = _group_value if key_version == 2 else _offset_value
    return {"version": str(version), "data": read(version, cursor)}


def offsets_key_value(
    offset: int, key: bytes | None, value: bytes | None
) -> tuple[str | None, str | None]:
    """The key and payload Kafka's offsets decoder prints for the record at ``offset``."""
    if key is None:
        raise DumpError(
            f"Failed to decode message at offset {offset} using offset topic decoder (message "
            "had a missing key)"
        )
    try:
        version, data = _key(key)
        shown_key = _json({"type": str(version), "data": data})
        return shown_key, "<DELETE>" if value is None else _json(_value(version, value))
    except _UnknownType as e:
        return f"Unknown record type {e.version} at offset {offset}, skipping.", None
    except (ValueError, struct.error, IndexError, UnicodeDecodeError) as e:
        return f"Error at offset {offset}, skipping. {e}", None
