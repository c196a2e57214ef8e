"""Produce responses written from plain values: the other half of the broker's hot path.

Goals
    Every Produce request is answered with a small message of a few fields per partition. Built
    as kio's message (``make``) and written by kio's writer, that small message was a fifth of a
    broker's CPU time at acks=1 with 1 KiB records in 64 KiB batches: about 90 us per response
    of four partitions, a dataclass and a ``datetime`` per partition, each field walked by
    kio's generic writer. This writer takes the handler's plain values and writes the body
    byte for byte as kio's writer would, in one bytearray.

Constraints
    * Every Produce version served (3-13): legacy encodings before 9, flexible ones from 9
      (compact lengths, tagged fields), ``log_start_offset`` from 5, ``record_errors`` and
      ``error_message`` from 8, the tagged ``current_leader`` (per partition) and
      ``node_endpoints`` (top level) from 10, topics by id from 13. A tagged field is written
      only when it differs from its default, as kio and Kafka write them.
    * It takes what a handler has: plain values as :func:`~rackwise.protocol.values.make` takes
      them (dicts and lists, error codes as ints, ``throttle_time`` in milliseconds,
      ``log_append_time`` in milliseconds since the epoch or -1 for none) or kio's
      ProduceResponse of that version. Fields the version lacks are ignored, optional ones take
      kio's defaults, a missing required one or a value that does not fit raises
      :class:`~rackwise.protocol.errors.MessageEncodeError`.

Worked example
    Version 3, topic "t", partition 0 with no error at base offset 5 and no log append time,
    throttle time 0: ``00 00 00 01`` (one topic), ``00 01 74`` ("t"), ``00 00 00 01`` (one
    partition), ``00 00 00 00`` ``00 00`` ``00 00 00 00 00 00 00 05`` ``ff ff ff ff ff ff ff
    ff`` (index, error, base offset, log append time -1), ``00 00 00 00`` (throttle): 37 bytes.
"""

from __future__ import annotations

import datetime
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from rackwise.protocol.errors import MessageEncodeError
from rackwise.protocol.plain_writer import (
    INT32,
    INT64,
    REQUIRED,
    PlainWriter,
    getter,
    millis,
    missing,
    required,
)

PRODUCE: Final = 0
MIN_VERSION: Final = 3
MAX_VERSION: Final = 13
FIRST_FLEXIBLE_VERSION: Final = 9
FIRST_TOPIC_ID_VERSION: Final = 13
NO_OFFSET: Final = -1
NO_TIMESTAMP: Final = -1
NO_LEADER: Final = -1
NO_EPOCH: Final = -1

_HEAD: Final = struct.Struct(">ihqq")  # index, error, base offset, log append time
_LEADER_TAG: Final = struct.Struct(">BBiiB")  # tag 0, size 9, leader id, leader epoch, no tags
_EPOCH: Final = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


@dataclass(frozen=True, slots=True)
class ProduceResponseValues:
    """A Produce response of ``version`` as plain values (what ``make`` takes): a handler may
    return it instead of a message, and :func:`~rackwise.protocol.server.encode_response`
    writes it with this module's writer."""

    version: int
    values: Mapping[str, Any]

    __api_key__: ClassVar[int] = PRODUCE

    @property
    def __version__(self) -> int:
        """The version the values are written in (what a message class says as a class
        attribute)."""
        return self.version


def write_produce_response(version: int, response: Any) -> bytes:
    """The body of a Produce response of ``version`` (see the module docstring)."""
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise ValueError(f"BUG: Produce version {version} is not one this writer knows")
    writer = _ProduceWriter(version)
    try:
        writer.response(response)
    except (struct.error, TypeError, ValueError, AttributeError, OverflowError) as e:
        raise MessageEncodeError(f"ProduceResponse v{version}: {e}") from None
    return bytes(writer.out)


def _timestamp_ms(value: Any) -> int:
    """``log_append_time`` in ms since the epoch: given so, or as kio's datetime (None: -1)."""
    if value is None:
        return NO_TIMESTAMP
    if isinstance(value, datetime.datetime):
        return (value - _EPOCH) // datetime.timedelta(milliseconds=1)
    return int(value)


class _ProduceWriter(PlainWriter):
    __slots__ = ("version",)

    def __init__(self, version: int) -> None:
        super().__init__(flexible=version >= FIRST_FLEXIBLE_VERSION)
        self.version = version

    def response(self, response: Any) -> None:
        get = getter(response)
        topics = required(get, "responses", "ProduceResponse")
        self.array_length(topics)
        for topic in topics:
            self.topic(
                topic,
                by_id=self.version >= FIRST_TOPIC_ID_VERSION,
                name_field="name",
                partitions_field="partition_responses",
                where="TopicProduceResponse",
                partition=self.partition,
            )
        self.out += INT32.pack(millis(get("throttle_time", 0)))
        if self.flexible:
            self.node_endpoints_tag(get("node_endpoints", ()) if self.version >= 10 else ())

    def partition(self, partition: Any) -> None:
        get = getter(partition)
        index = get("index", REQUIRED)
        error_code = get("error_code", REQUIRED)
        base_offset = get("base_offset", REQUIRED)
        if index is REQUIRED or error_code is REQUIRED or base_offset is REQUIRED:
            raise missing("PartitionProduceResponse", "index", "error_code", "base_offset")
        out = self.out
        out += _HEAD.pack(
            index, int(error_code), base_offset, _timestamp_ms(get("log_append_time", None))
        )
        version = self.version
        if version >= 5:
            out += INT64.pack(get("log_start_offset", NO_OFFSET))
        if version >= 8:
            errors = required(get, "record_errors", "PartitionProduceResponse")
            self.array_length(errors)
            for error in errors:
                value = getter(error)
                out += INT32.pack(required(value, "batch_index", "BatchIndexAndErrorMessage"))
                self.nullable_string(value("batch_index_error_message", None))
                if self.flexible:
                    out += b"\x00"
            self.nullable_string(get("error_message", None))
        if not self.flexible:
            return
        leader = get("current_leader", None) if version >= 10 else None
        if leader is not None:
            value = getter(leader)
            leader_id, epoch = value("leader_id", NO_LEADER), value("leader_epoch", NO_EPOCH)
            if (leader_id, epoch) != (NO_LEADER, NO_EPOCH):
                out += b"\x01"  # one tagged field
                out += _LEADER_TAG.pack(0, 9, leader_id, epoch, 0)
                return
        out += b"\x00"
