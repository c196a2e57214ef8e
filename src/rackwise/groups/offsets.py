"""Committed offsets of consumer groups, as Kafka's group coordinator keeps them in
``__consumer_offsets`` (Kafka's ``OffsetMetadataManager``).

Goals
    * :func:`partition_for`: which ``__consumer_offsets`` partition holds a group, as Kafka
      computes it, so that the coordinator of a group is the broker Kafka would pick.
    * The records Kafka writes there, byte for byte: an ``OffsetCommitKey`` (version 1: group,
      topic, partition) and an ``OffsetCommitValue`` (version 3: offset, leader epoch,
      metadata, commit timestamp; version 1 when the commit asked for a retention time, with
      its expiry), and every version Kafka has written read back.
    * :class:`GroupOffsets`: the state of one ``__consumer_offsets`` partition, changed only by
      :meth:`GroupOffsets.replay` of its records, and the checks Kafka makes before a commit.

Constraints
    * Pure: bytes and values in, values out.
    * A group exists once offsets were committed for it or a classic group's metadata was
      stored. Its members are :mod:`rackwise.groups.classic`'s; this module keeps each group's
      last ``GroupMetadataValue`` as bytes, for the loader. :meth:`GroupOffsets.commit_error`
      answers for a group that has no members (no classic group is live for it): a commit
      with a generation of -1 is accepted, and one that names a generation or a member is
      refused as Kafka refuses it for an empty group: ILLEGAL_GENERATION (GROUP_ID_NOT_FOUND
      from OffsetCommit v9) when the group does not exist, UNKNOWN_MEMBER_ID when it does.
    * Records of other kinds in the topic (KIP-848 consumer groups, share groups) are
      skipped; a key or value that does not parse raises :class:`OffsetsFormatError`, which
      the loader logs and skips.

Algorithm
    A group's partition is ``abs(hash) % partitions`` with Java's ``String.hashCode`` (UTF-16
    code units, 32-bit overflow) and Kafka's ``Utils.abs`` (``Integer.MIN_VALUE`` is 0).
    Replaying a key with a value sets the group's offset for the topic partition; a key
    without one (a tombstone) removes it. A group metadata key without a value removes the
    group (DeleteGroups writes one after its offsets' tombstones).

Worked example
    ``partition_for("my-group", 50)`` is 12 (``"my-group".hashCode()`` is -1906497762, as Java
    17 computes it). ``encode_key("g", "t", 0)`` is ``00 01 00 01 67 00 01 74 00 00 00 00``.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Final, TypeVar

from rackwise.common.error_codes import (
    GROUP_ID_NOT_FOUND,
    ILLEGAL_GENERATION,
    NONE,
    UNKNOWN_MEMBER_ID,
)
from rackwise.common.errors import RackwiseError
from rackwise.common.java import java_string_hash
from rackwise.protocol.frame_cursor import FrameCursor

T = TypeVar("T")

OFFSETS_TOPIC: Final = "__consumer_offsets"
NO_LEADER_EPOCH: Final = -1
NO_EXPIRE_TIMESTAMP: Final = -1
"""Kafka's ``OffsetCommitRequest.DEFAULT_TIMESTAMP``: the commit asked for no retention time."""
NO_GENERATION: Final = -1

KEY_VERSION: Final = 1
"""Kafka writes offset commit keys at version 1 (0 means the same layout)."""
GROUP_KEY_VERSION: Final = 2
"""A ``GroupMetadataKey``: a classic group's metadata, or with no value its deletion."""
VALUE_VERSION: Final = 3
VALUE_VERSION_WITH_EXPIRY: Final = 1


_I16: Final = struct.Struct(">h")
_I32: Final = struct.Struct(">i")
_I64: Final = struct.Struct(">q")


class OffsetsFormatError(RackwiseError, ValueError):
    """A ``__consumer_offsets`` key or value that does not parse."""


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    """One topic partition's committed offset in a group."""

    offset: int
    leader_epoch: int = NO_LEADER_EPOCH
    """The epoch of the leader the committed record came from; -1 when the client sent none."""
    metadata: str = ""
    commit_timestamp_ms: int = 0
    expire_timestamp_ms: int = NO_EXPIRE_TIMESTAMP
    """When an OffsetCommit v2-v4 asked for a retention time, the commit time plus it."""


def partition_for(group_id: str, num_partitions: int) -> int:
    """The ``__consumer_offsets`` partition of ``group_id`` (Kafka's ``partitionFor``)."""
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % num_partitions


# ---- records ------------------------------------------------------------------------------


def encoded_string(text: str) -> bytes:
    """A non-flexible string: int16 length, UTF-8."""
    data = text.encode()
    return _I16.pack(len(data)) + data


def encode_key(group: str, topic: str, partition: int) -> bytes:
    """An ``OffsetCommitKey`` record key, version 1."""
    return (
        _I16.pack(KEY_VERSION)
        + encoded_string(group)
        + encoded_string(topic)
        + _I32.pack(partition)
    )


def encode_group_key(group: str) -> bytes:
    """A ``GroupMetadataKey`` record key (version 2): with no value, the group's deletion."""
    return _I16.pack(GROUP_KEY_VERSION) + encoded_string(group)


def encode_value(committed: CommittedOffset) -> bytes:
    """An ``OffsetCommitValue``: version 3, or 1 when the commit has an expiry (as Kafka's
    ``MetadataVersion.offsetCommitValueVersion``)."""
    if committed.expire_timestamp_ms != NO_EXPIRE_TIMESTAMP:
        return (
            _I16.pack(VALUE_VERSION_WITH_EXPIRY)
            + _I64.pack(committed.offset)
            + encoded_string(committed.metadata)
            + _I64.pack(committed.commit_timestamp_ms)
            + _I64.pack(committed.expire_timestamp_ms)
        )
    return (
        _I16.pack(VALUE_VERSION)
        + _I64.pack(committed.offset)
        + _I32.pack(committed.leader_epoch)
        + encoded_string(committed.metadata)
        + _I64.pack(committed.commit_timestamp_ms)
    )


def read_record(data: bytes, what: str, *, flexible: bool, read: Callable[[FrameCursor], T]) -> T:
    """``read`` over ``data`` with the protocol's cursor, its failures as
    :class:`OffsetsFormatError` naming ``what``."""
    cursor = FrameCursor(memoryview(data), 0, flexible=flexible)
    try:
        return read(cursor)
    except UnicodeDecodeError as e:
        raise OffsetsFormatError(f"{what} has a string that is not UTF-8") from e
    except (struct.error, IndexError) as e:
        raise OffsetsFormatError(f"{what} is cut short at byte {cursor.position}") from e
    except ValueError as e:
        raise OffsetsFormatError(f"{what} does not parse: {e}") from e


def required_string(cursor: FrameCursor, what: str) -> str:
    value = cursor.nullable_string()
    if value is None:
        raise OffsetsFormatError(f"{what} has a null string")
    return value


def decode_key(key: bytes) -> tuple[str, str, int] | str | None:
    """``(group, topic, partition)`` of an offset commit key, the group of a group metadata
    key, or None for a key of another kind (KIP-848 and share group records)."""
    what = "an offset commit key"

    def read(cursor: FrameCursor) -> tuple[str, str, int] | str | None:
        version = cursor.int16()
        if version == GROUP_KEY_VERSION:
            return required_string(cursor, what)
        if version not in (0, 1):
            return None
        return required_string(cursor, what), required_string(cursor, what), cursor.int32()

    return read_record(key, what, flexible=False, read=read)


def decode_value(value: bytes) -> CommittedOffset:
    """An ``OffsetCommitValue`` of any version Kafka has written (0-4; 4 is flexible)."""
    what = "an offset commit value"
    version = read_record(value, what, flexible=False, read=FrameCursor.int16)
    if version < 0 or version > 4:
        raise OffsetsFormatError(f"unknown offset commit value version {version}")

    def read(cursor: FrameCursor) -> CommittedOffset:
        cursor.position = 2
        offset = cursor.int64()
        epoch = cursor.int32() if version >= 3 else NO_LEADER_EPOCH
        metadata = required_string(cursor, what)
        committed_ms = cursor.int64()
        expire_ms = cursor.int64() if version == 1 else NO_EXPIRE_TIMESTAMP
        cursor.skip_tags()
        return CommittedOffset(offset, epoch, metadata, committed_ms, expire_ms)

    return read_record(value, what, flexible=version >= 4, read=read)


# ---- state ------------------------------------------------------------------------------------

TopicPartitionKey = tuple[str, int]


class GroupOffsets:
    """The groups and committed offsets of one ``__consumer_offsets`` partition (module
    docstring); changed only by :meth:`replay`."""

    def __init__(self) -> None:
        self._groups: dict[str, dict[TopicPartitionKey, CommittedOffset]] = {}
        self._metadata: dict[str, bytes] = {}
        """Each classic group's last ``GroupMetadataValue``, as read (decoded when loaded)."""

    def replay(self, key: bytes | None, value: bytes | None) -> None:
        """Apply one record of the partition (raises :class:`OffsetsFormatError`)."""
        if key is None:
            raise OffsetsFormatError("a record without a key")
        parsed = decode_key(key)
        if parsed is None:
            return
        if isinstance(parsed, str):  # a group's metadata: it exists; without a value, deleted
            if value is None:  # its offsets stay, as in Kafka (a deletion tombstones them first)
                self._metadata.pop(parsed, None)
                if not self._groups.get(parsed):
                    self._groups.pop(parsed, None)
            else:
                self._groups.setdefault(parsed, {})
                self._metadata[parsed] = value
            return
        group, topic, partition = parsed
        if value is None:
            offsets = self._groups.get(group)
            if offsets is not None:
                offsets.pop((topic, partition), None)
            return
        self._groups.setdefault(group, {})[(topic, partition)] = decode_value(value)

    def stored_metadata(self) -> Mapping[str, bytes]:
        """The last ``GroupMetadataValue`` of each group that has one."""
        return self._metadata

    def has_group(self, group: str) -> bool:
        return group in self._groups

    def groups(self) -> Iterator[str]:
        return iter(self._groups)

    def offsets(self, group: str) -> Mapping[TopicPartitionKey, CommittedOffset]:
        """The group's committed offsets (empty for a group that does not exist)."""
        return self._groups.get(group, {})

    def deletion(self, group: str) -> list[tuple[bytes, None]]:
        """The records that delete ``group`` (``createGroupTombstoneRecords`` for a classic
        group): a tombstone for each committed offset, then one for the group."""
        tombstones: list[tuple[bytes, None]] = [
            (encode_key(group, topic, partition), None)
            for topic, partition in sorted(self.offsets(group))
        ]
        return [*tombstones, (encode_group_key(group), None)]

    def commit_error(self, group: str, generation: int, version: int) -> int:
        """NONE, or the error Kafka answers an OffsetCommit of ``version`` with, given that
        every group here is empty (``validateOffsetCommit``): a commit that names a generation
        is refused whatever member it names, since an empty group knows none."""
        if generation < 0:
            return NONE
        if group not in self._groups:
            return GROUP_ID_NOT_FOUND if version >= 9 else ILLEGAL_GENERATION
        return UNKNOWN_MEMBER_ID
