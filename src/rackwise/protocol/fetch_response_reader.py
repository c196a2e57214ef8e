"""Fetch responses read as plain values: a follower's hot path.

Goals
    A follower reads a Fetch response for every round of replication; its records are already
    a view of the frame and are appended as they are. What remains is the frame around them,
    which kio reads into a message of dataclasses with a typed value per field. Read it here
    instead as a few named tuples of ints, strings and views, field for field what kio reads.
    Measured on a shared 2-core machine, a v17 response of 4 partitions of 64 KiB: kio 66 us,
    this reader 22 us (both read the records as a view of the frame).

Constraints
    * The flexible versions, 12 to 18 (what brokers speak to each other). Earlier versions are
      read by kio (:func:`~rackwise.protocol.client.decode_response`).
    * The values are kio's, as plain Python: error codes and ids as ints, ``throttle_time_ms``
      in milliseconds, ``records`` a read-only view of ``data`` (or None), the tagged structs
      (``diverging_epoch``, ``current_leader``, ``snapshot_id``) their defaults when absent
      (-1 everywhere, as kio's), topics named by ``topic`` (v12) or ``topic_id`` (v13 on) with
      the other None (a zero topic id is None too, as kio reads it). Unknown tagged fields are
      skipped, as kio does.
    * Malformed bytes (a length beyond the frame, a bad varint, bytes after the body, invalid
      UTF-8) raise :class:`~rackwise.protocol.errors.MalformedResponseError`, never another
      exception.

Algorithm
    A cursor over the frame: ``struct.unpack_from`` for fixed-width fields, unsigned varints
    for compact lengths and tags, in the order of Kafka's ``FetchResponse.json``: per partition
    its fixed fields, the aborted transactions, the preferred read replica, the records, then
    its tagged fields; per topic its partitions and tagged fields; the body's tagged fields
    last (``node_endpoints``, tag 0).

Worked example
    ``read_fetch_response(frame, position, 17)`` on the body of a v17 answer for one partition
    of topic id T with records R (a 61-byte batch) and high watermark 5 gives
    ``FetchAnswer(throttle_time_ms=0, error_code=0, session_id=0, responses=(FetchedTopic(
    topic=None, topic_id=T, partitions=(FetchedPartition(partition_index=0, error_code=0,
    high_watermark=5, ..., records=<61 bytes of the frame>),)),), node_endpoints=())``.
"""

from __future__ import annotations

import struct
import uuid
from typing import Final, NamedTuple

from rackwise.protocol.errors import MalformedResponseError
from rackwise.protocol.frame_cursor import FrameCursor

FIRST_VERSION: Final = 12
LAST_VERSION: Final = 18
_FIRST_TOPIC_ID_VERSION: Final = 13
_FIRST_NODE_ENDPOINTS_VERSION: Final = 16

_PARTITION_HEAD: Final = struct.Struct(">ihqqq")
"""partition_index, error_code, high_watermark, last_stable_offset, log_start_offset"""
_RESPONSE_HEAD: Final = struct.Struct(">ihi")
"""throttle_time_ms, error_code, session_id"""
_ABORTED: Final = struct.Struct(">qq")
_INT32: Final = struct.Struct(">i")
_INT32_INT64: Final = struct.Struct(">iq")
_INT64_INT32: Final = struct.Struct(">qi")
_INT32_INT32: Final = struct.Struct(">ii")


class EpochEndOffset(NamedTuple):
    epoch: int = -1
    end_offset: int = -1


class LeaderIdAndEpoch(NamedTuple):
    leader_id: int = -1
    leader_epoch: int = -1


class SnapshotId(NamedTuple):
    end_offset: int = -1
    epoch: int = -1


class AbortedTransaction(NamedTuple):
    producer_id: int
    first_offset: int


class FetchedPartition(NamedTuple):
    partition_index: int
    error_code: int
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    diverging_epoch: EpochEndOffset
    current_leader: LeaderIdAndEpoch
    snapshot_id: SnapshotId
    aborted_transactions: tuple[AbortedTransaction, ...] | None
    preferred_read_replica: int
    records: memoryview | None


class FetchedTopic(NamedTuple):
    topic: str | None
    topic_id: uuid.UUID | None
    partitions: tuple[FetchedPartition, ...]


class NodeEndpoint(NamedTuple):
    node_id: int
    host: str
    port: int
    rack: str | None


class FetchAnswer(NamedTuple):
    throttle_time_ms: int
    error_code: int
    session_id: int
    responses: tuple[FetchedTopic, ...]
    node_endpoints: tuple[NodeEndpoint, ...]


_NO_DIVERGENCE: Final = EpochEndOffset()
_NO_LEADER: Final = LeaderIdAndEpoch()
_NO_SNAPSHOT: Final = SnapshotId()


def read_fetch_response(data: bytes | memoryview, position: int, version: int) -> FetchAnswer:
    """The Fetch response body of ``version`` that starts at ``position`` of ``data`` and ends
    with it; raises :class:`MalformedResponseError` when the bytes are not one."""
    if not FIRST_VERSION <= version <= LAST_VERSION:
        raise ValueError(f"BUG: Fetch v{version} is not read here (flexible versions only)")
    reader = _Reader(memoryview(data).toreadonly(), position, flexible=True)
    try:
        answer = reader.response(version)
    except (struct.error, IndexError, UnicodeDecodeError, ValueError) as e:
        raise MalformedResponseError(
            f"a FETCH v{version} response does not decode: {type(e).__name__}: {e}"
        ) from None
    if reader.position != len(reader.data):
        raise MalformedResponseError(
            f"a FETCH v{version} response has {len(reader.data) - reader.position} bytes "
            "after its body"
        )
    return answer


class _Reader(FrameCursor):
    __slots__ = ()

    def response(self, version: int) -> FetchAnswer:
        # The response header (v1): the correlation id was read by the caller; its tags.
        throttle, error, session = _RESPONSE_HEAD.unpack_from(self.data, self.position)
        self.position += _RESPONSE_HEAD.size
        by_id = version >= _FIRST_TOPIC_ID_VERSION
        topics = tuple(self.topic(by_id) for _ in range(self.uvarint() - 1))
        endpoints: tuple[NodeEndpoint, ...] = ()
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            size = self.uvarint()
            end = self.position + size
            if tag == 0 and version >= _FIRST_NODE_ENDPOINTS_VERSION:
                endpoints = tuple(self.endpoint() for _ in range(self.uvarint() - 1))
                if self.position != end:
                    raise ValueError(f"tagged field 0 is {size} bytes, its value is not")
            else:
                self.take(size)
        return FetchAnswer(throttle, error, session, topics, endpoints)

    def topic(self, by_id: bool) -> FetchedTopic:
        if by_id:
            topic_id = self.uuid()
            name = None
        else:
            name, topic_id = self.string(), None
        partitions = tuple(self.partition() for _ in range(self.uvarint() - 1))
        self.skip_tags()
        return FetchedTopic(name, topic_id, partitions)

    def partition(self) -> FetchedPartition:
        # The hot loop: one-byte varints (counts, lengths under 128, no tags) read inline.
        data = self.data
        pos = self.position
        index, error, high, stable, start = _PARTITION_HEAD.unpack_from(data, pos)
        pos += _PARTITION_HEAD.size
        aborted: tuple[AbortedTransaction, ...] | None = None
        count = data[pos]
        if count == 0:
            pos += 1
        elif count == 1:
            pos += 1
            aborted = ()
        else:
            self.position = pos
            aborted = tuple(self.aborted() for _ in range(self.uvarint() - 1))
            pos = self.position
        (preferred,) = _INT32.unpack_from(data, pos)
        pos += 4
        self.position = pos
        size = self.uvarint() - 1
        records = None if size < 0 else self.take(size)
        diverging, leader, snapshot = _NO_DIVERGENCE, _NO_LEADER, _NO_SNAPSHOT
        if data[self.position] == 0:
            self.position += 1
        else:
            diverging, leader, snapshot = self.partition_tags()
        return FetchedPartition(
            index,
            error,
            high,
            stable,
            start,
            diverging,
            leader,
            snapshot,
            aborted,
            preferred,
            records,
        )

    def partition_tags(self) -> tuple[EpochEndOffset, LeaderIdAndEpoch, SnapshotId]:
        data = self.data
        diverging, leader, snapshot = _NO_DIVERGENCE, _NO_LEADER, _NO_SNAPSHOT
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            size = self.uvarint()
            end = self.position + size
            if tag == 0:
                diverging = EpochEndOffset(*_INT32_INT64.unpack_from(data, self.position))
                self.position += _INT32_INT64.size
            elif tag == 1:
                leader = LeaderIdAndEpoch(*_INT32_INT32.unpack_from(data, self.position))
                self.position += _INT32_INT32.size
            elif tag == 2:
                snapshot = SnapshotId(*_INT64_INT32.unpack_from(data, self.position))
                self.position += _INT64_INT32.size
            else:
                self.take(size)
                continue
            self.skip_tags()
            if self.position != end:
                raise ValueError(f"tagged field {tag} is {size} bytes, its value is not")
        return diverging, leader, snapshot

    def aborted(self) -> AbortedTransaction:
        producer_id, first_offset = _ABORTED.unpack_from(self.data, self.position)
        self.position += _ABORTED.size
        self.skip_tags()
        return AbortedTransaction(producer_id, first_offset)

    def endpoint(self) -> NodeEndpoint:
        (node_id,) = _INT32.unpack_from(self.data, self.position)
        self.position += 4
        host = self.string()
        (port,) = _INT32.unpack_from(self.data, self.position)
        self.position += 4
        rack = self.nullable_string()
        self.skip_tags()
        return NodeEndpoint(node_id, host, port, rack)
