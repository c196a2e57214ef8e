"""Fetch requests written from plain values: what a follower sends for every fetch.

Goals
    A follower sends a Fetch request after every answer, with the same partitions and new
    offsets. Built as kio's message (``make``) and written by kio's writer, it cost a follower
    about 8% of its CPU time at RF 3 (a dataclass per partition, each field walked by the
    generic writer). This writer takes the plain values and writes the body byte for byte as
    kio's writer would, in one bytearray.

Constraints
    * Every Fetch version served (4-18): legacy encodings before 12, flexible ones from 12;
      ``log_start_offset`` from 5, sessions and forgotten topics from 7,
      ``current_leader_epoch`` from 9, ``rack_id`` from 11, ``last_fetched_epoch`` and the
      tagged ``cluster_id`` from 12, topics by id from 13, the tagged ``replica_state``
      instead of ``replica_id`` from 15, the partitions' tagged ``replica_directory_id`` from
      17 and ``high_watermark`` from 18. A tagged field is written only when it differs from
      its default, in tag order, as kio and Kafka write them.
    * It takes plain values as :func:`~rackwise.protocol.values.make` takes them (``max_wait``
      in milliseconds) or kio's FetchRequest of that version. Fields the version lacks are
      ignored, optional ones take kio's defaults, a missing required one or a value that does
      not fit raises :class:`~rackwise.protocol.errors.MessageEncodeError`.

Worked example
    Version 4 from replica 2, max wait 500 ms, min bytes 1, topic "t" partition 0 at offset 9
    with a partition limit of 1 MiB: ``00 00 00 02`` ``00 00 01 f4`` ``00 00 00 01`` ``7f ff ff
    ff`` (max bytes: the default) ``00`` (read uncommitted), ``00 00 00 01 00 01 74`` (one
    topic, "t"), ``00 00 00 01 00 00 00 00 00 00 00 00 00 00 00 09 00 10 00 00``: 44 bytes.
"""

from __future__ import annotations

import functools
import struct
import uuid
from dataclasses import dataclass
from typing import Any, Final

from rackwise.protocol.errors import MessageEncodeError
from rackwise.protocol.plain_writer import (
    INT32,
    REQUIRED,
    PlainWriter,
    getter,
    millis,
    missing,
    required,
)
from rackwise.records.codec import uvarint_bytes as uvarint

FETCH: Final = 1
MIN_VERSION: Final = 4
MAX_VERSION: Final = 18
FIRST_FLEXIBLE_VERSION: Final = 12
FIRST_TOPIC_ID_VERSION: Final = 13
FIRST_REPLICA_STATE_VERSION: Final = 15
NO_REPLICA: Final = -1
NO_EPOCH: Final = -1
NO_OFFSET: Final = -1
NO_HIGH_WATERMARK: Final = 2**63 - 1
"""The partitions' ``high_watermark`` (v18) when not given: not written."""
MAX_BYTES: Final = 2**31 - 1

_LIMITS: Final = struct.Struct(">iiib")  # max wait, min bytes, max bytes, isolation level
_SESSION: Final = struct.Struct(">ii")  # session id, session epoch
_REPLICA_STATE_TAG: Final = struct.Struct(">BBiqB")  # tag 1, size 13, id, epoch, no tags
_HIGH_WATERMARK_TAG: Final = struct.Struct(">BBq")  # tag 1, size 8, high watermark


@dataclass(frozen=True, slots=True)
class FetchRequestValues:
    """A Fetch request of ``version`` as plain values (what ``make`` takes)."""

    version: int
    values: Any


def write_fetch_request(version: int, request: Any) -> bytes:
    """The body of a Fetch request of ``version`` (see the module docstring)."""
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise ValueError(f"BUG: Fetch version {version} is not one this writer knows")
    writer = _FetchRequestWriter(version)
    try:
        writer.request(request)
    except (struct.error, TypeError, ValueError, AttributeError, OverflowError) as e:
        raise MessageEncodeError(f"FetchRequest v{version}: {e}") from None
    return bytes(writer.out)


@functools.cache
def _partition_struct(version: int) -> struct.Struct:
    """A partition's fixed fields in ``version``: index, [current leader epoch], fetch offset,
    [last fetched epoch], [log start offset], partition max bytes."""
    layout = ">i" + ("i" if version >= 9 else "") + "q" + ("i" if version >= 12 else "")
    return struct.Struct(layout + ("q" if version >= 5 else "") + "i")


class _FetchRequestWriter(PlainWriter):
    __slots__ = ("by_id", "version")

    def __init__(self, version: int) -> None:
        super().__init__(flexible=version >= FIRST_FLEXIBLE_VERSION)
        self.version = version
        self.by_id = version >= FIRST_TOPIC_ID_VERSION

    def request(self, request: Any) -> None:
        get = getter(request)
        version = self.version
        out = self.out
        if version < FIRST_REPLICA_STATE_VERSION:
            out += INT32.pack(get("replica_id", NO_REPLICA))
        max_wait = get("max_wait", REQUIRED)
        min_bytes = get("min_bytes", REQUIRED)
        if max_wait is REQUIRED or min_bytes is REQUIRED:
            raise missing("FetchRequest", "max_wait", "min_bytes")
        out += _LIMITS.pack(
            millis(max_wait), min_bytes, get("max_bytes", MAX_BYTES), get("isolation_level", 0)
        )
        if version >= 7:
            out += _SESSION.pack(get("session_id", 0), get("session_epoch", -1))
        topics = required(get, "topics", "FetchRequest")
        self.array_length(topics)
        for topic in topics:
            self.topic(
                topic,
                by_id=self.by_id,
                name_field="topic",
                partitions_field="partitions",
                where="FetchTopic",
                partition=self.partition,
            )
        if version >= 7:
            forgotten = required(get, "forgotten_topics_data", "FetchRequest")
            self.array_length(forgotten)
            for topic in forgotten:
                value = getter(topic)
                self.topic_name_or_id(value, self.by_id, "topic", "ForgottenTopic")
                partitions = value("partitions", ())
                self.array_length(partitions)
                for index in partitions:
                    out += INT32.pack(index)
                if self.flexible:
                    out += b"\x00"
        if version >= 11:
            self.string(get("rack_id", ""))
        if self.flexible:
            self.request_tags(get)

    def request_tags(self, get: Any) -> None:
        """Tags 0 (cluster id) and, from v15, 1 (replica state), each if set."""
        tags = PlainWriter(flexible=True)
        count = 0
        cluster_id = get("cluster_id", None)
        if cluster_id is not None:
            text = PlainWriter(flexible=True)
            text.string(cluster_id)
            tags.out += b"\x00" + uvarint(len(text.out)) + text.out
            count += 1
        state = get("replica_state", None) if self.version >= FIRST_REPLICA_STATE_VERSION else None
        if state is not None:
            value = getter(state)
            replica_id, epoch = value("replica_id", NO_REPLICA), value("replica_epoch", NO_EPOCH)
            if (replica_id, epoch) != (NO_REPLICA, NO_EPOCH):
                tags.out += _REPLICA_STATE_TAG.pack(1, 13, replica_id, epoch, 0)
                count += 1
        self.out += uvarint(count)
        self.out += tags.out

    def partition(self, partition: Any) -> None:
        get = getter(partition)
        version = self.version
        out = self.out
        index = get("partition", REQUIRED)
        fetch_offset = get("fetch_offset", REQUIRED)
        max_bytes = get("partition_max_bytes", REQUIRED)
        if index is REQUIRED or fetch_offset is REQUIRED or max_bytes is REQUIRED:
            raise missing("FetchPartition", "partition", "fetch_offset", "partition_max_bytes")
        fields = [index]
        if version >= 9:
            fields.append(get("current_leader_epoch", NO_EPOCH))
        fields.append(fetch_offset)
        if version >= 12:
            fields.append(get("last_fetched_epoch", NO_EPOCH))
        if version >= 5:
            fields.append(get("log_start_offset", NO_OFFSET))
        fields.append(max_bytes)
        out += _partition_struct(version).pack(*fields)
        if not self.flexible:
            return
        tags: list[bytes] = []
        if version >= 17:
            directory: uuid.UUID | None = get("replica_directory_id", None)
            if directory is not None:
                tags.append(b"\x00\x10" + directory.bytes)
        if version >= 18:
            high_watermark = get("high_watermark", NO_HIGH_WATERMARK)
            if high_watermark != NO_HIGH_WATERMARK:
                tags.append(_HIGH_WATERMARK_TAG.pack(1, 8, high_watermark))
        out += uvarint(len(tags))
        for tag in tags:
            out += tag
