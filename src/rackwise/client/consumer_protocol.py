"""A consumer group member's assignment as DescribeGroups carries it: the bytes of Kafka's
``ConsumerProtocolAssignment`` (``clients/src/main/resources/common/message/
ConsumerProtocolAssignment.json``), read as Kafka's ``ConsumerProtocol.deserializeAssignment``
reads them.

Goals
    ``rackwise consumer-groups --describe`` shows which partitions each member owns, from the
    ``member_assignment`` bytes the coordinator keeps for it, whichever client wrote them
    (librdkafka, kafka-python, Kafka's Java consumer).

Constraints
    * The format, versions 0-3 alike (``flexibleVersions: none``)::

          int16   version
          int32   number of topics, then per topic:
                  int16 length + UTF-8 topic name
                  int32 number of partitions, then an int32 per partition
          int32   length of the user data (-1: null), then its bytes

      Versions 1-3 add nothing to the assignment (they extend the subscription), and a
      version above 3 is read as version 3, as Kafka reads it ("new versions cannot remove or
      reorder any of the existing fields"); a negative version is refused.
    * Empty bytes are an empty assignment (a member that has not been assigned yet), as
      Kafka's admin client reads them; bytes after the user data are ignored, as Kafka's
      reader ignores them.
    * A truncated or malformed assignment raises :class:`InvalidAssignmentError` naming what
      could not be read; nothing here does I/O.

Algorithm
    Read the fields in order with a cursor over the bytes; each count and length is checked
    against what remains before it is used.

Worked example
    ``decode_assignment(b"\\x00\\x00\\x00\\x00\\x00\\x01\\x00\\x01t\\x00\\x00\\x00\\x02"
    b"\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x01\\xff\\xff\\xff\\xff")`` is version 0, partitions
    ``t-0`` and ``t-1``, no user data.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final

from rackwise.common import RackwiseError, TopicPartition

HIGHEST_SUPPORTED_VERSION: Final = 3
"""The newest ``ConsumerProtocolAssignment`` version; newer ones are read as this one."""
NULL_LENGTH: Final = -1
"""The length of null user data on the wire."""

_I16: Final = struct.Struct(">h")
_I32: Final = struct.Struct(">i")


class InvalidAssignmentError(RackwiseError, ValueError):
    """Bytes that are not a ``ConsumerProtocolAssignment``."""


@dataclass(frozen=True, slots=True)
class Assignment:
    """A member's assignment: ``version`` as written (before the cap at 3), its partitions in
    the order written, and its user data (None when null)."""

    version: int
    partitions: tuple[TopicPartition, ...]
    user_data: bytes | None


EMPTY_ASSIGNMENT: Final = Assignment(HIGHEST_SUPPORTED_VERSION, (), None)


class _Cursor:
    def __init__(self, data: bytes) -> None:
        self._data = data
        self._position = 0

    def take(self, size: int, what: str) -> bytes:
        end = self._position + size
        if size < 0 or end > len(self._data):
            raise InvalidAssignmentError(
                f"Error reading {what} of a consumer protocol assignment: {size} bytes needed at "
                f"byte {self._position}, {len(self._data) - self._position} left"
            )
        chunk = self._data[self._position : end]
        self._position = end
        return chunk

    def int16(self, what: str) -> int:
        value: int = _I16.unpack(self.take(_I16.size, what))[0]
        return value

    def int32(self, what: str) -> int:
        value: int = _I32.unpack(self.take(_I32.size, what))[0]
        return value

    def count(self, what: str, item_bytes: int) -> int:
        count = self.int32(f"the number of {what}")
        if count < 0 or count * item_bytes > len(self._data) - self._position:
            raise InvalidAssignmentError(
                f"Error reading the number of {what} of a consumer protocol assignment: {count}"
            )
        return count

    def string(self, what: str) -> str:
        length = self.int16(f"the length of {what}")
        if length < 0:
            raise InvalidAssignmentError(f"Error reading {what}: null in a non-nullable string")
        raw = self.take(length, what)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidAssignmentError(f"Error reading {what}: not UTF-8: {raw!r}") from None


def decode_assignment(data: bytes) -> Assignment:
    """The assignment in ``data`` (see the module docstring)."""
    if not data:
        return EMPTY_ASSIGNMENT
    cursor = _Cursor(bytes(data))
    version = cursor.int16("the version")
    if version < 0:
        raise InvalidAssignmentError(f"Unsupported assignment version: {version}")
    partitions: list[TopicPartition] = []
    for _ in range(cursor.count("topics", _I16.size + _I32.size)):
        topic = cursor.string("a topic name")
        for _ in range(cursor.count(f"partitions of topic {topic!r}", _I32.size)):
            partitions.append(TopicPartition(topic, cursor.int32(f"a partition of {topic!r}")))
    length = cursor.int32("the length of the user data")
    if length < NULL_LENGTH:
        raise InvalidAssignmentError(f"Error reading the user data: length {length}")
    user_data = None if length == NULL_LENGTH else cursor.take(length, "the user data")
    return Assignment(version, tuple(partitions), user_data)
