"""A cursor over a frame: what the plain readers share.

The hottest messages (:mod:`~rackwise.protocol.produce_request_reader` and
:mod:`~rackwise.protocol.fetch_request_reader` on the broker,
:mod:`~rackwise.protocol.fetch_response_reader` on a follower) are read as plain values rather
than kio's messages. All three walk the frame with this cursor: Kafka's fixed-width integers,
unsigned varints, strings and arrays in their legacy and flexible (compact) forms, topic ids
and tagged fields. Every check kio's reading makes is made here with the same outcome: a null
where the schema allows none, a negative length, an array claiming more items than bytes are
left, a length beyond the frame, invalid UTF-8; each raises ``ValueError`` (a short read
raises ``struct.error`` or ``IndexError``: :func:`read_request` turns those into one, the
response reader into its own error).
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from typing import Final, TypeVar

from rackwise.records.codec import InternCache, intern_uuid, read_uvarint

T = TypeVar("T")
INT16: Final = struct.Struct(">h")
INT32: Final = struct.Struct(">i")
INT64: Final = struct.Struct(">q")
_ZERO_UUID: Final = bytes(16)
"""Kafka's ``Uuid.ZERO_UUID``: no id (None, as kio reads it)."""
_UUIDS_KEPT: Final = 4096
_UUIDS: InternCache = {}
"""Topic ids met lately: clients send the same few in every request."""


class FrameCursor:
    """A position in ``data`` and whether the version read is flexible."""

    __slots__ = ("data", "flexible", "position")

    def __init__(self, data: memoryview, position: int, *, flexible: bool) -> None:
        self.data = data
        self.position = position
        self.flexible = flexible

    def uvarint(self) -> int:
        byte = self.data[self.position]
        if byte < 0x80:  # nearly every count, length and tag
            self.position += 1
            return byte
        value, self.position = read_uvarint(self.data, self.position)
        return value

    def int16(self) -> int:
        (value,) = INT16.unpack_from(self.data, self.position)
        self.position += 2
        return int(value)

    def int32(self) -> int:
        (value,) = INT32.unpack_from(self.data, self.position)
        self.position += 4
        return int(value)

    def int64(self) -> int:
        (value,) = INT64.unpack_from(self.data, self.position)
        self.position += 8
        return int(value)

    def take(self, size: int) -> memoryview:
        start = self.position
        end = start + size
        if size < 0 or end > len(self.data):
            raise ValueError(f"{size} bytes wanted at {start}, the frame has {len(self.data)}")
        self.position = end
        return self.data[start:end]

    def nullable_string(self, name: str = "a string") -> str | None:
        size = self.uvarint() - 1 if self.flexible else self.int16()
        if size < -1:
            raise ValueError(f"{name} has a negative length {size}")
        return None if size == -1 else str(self.take(size), "utf-8")

    def string(self, name: str = "a string") -> str:
        value = self.nullable_string(name)
        if value is None:
            raise ValueError(f"null found for non-nullable string {name}")
        return value

    def uuid(self) -> uuid.UUID | None:
        raw = bytes(self.take(16))
        found = _UUIDS.get(raw)
        if found is None and raw != _ZERO_UUID:
            if len(_UUIDS) >= _UUIDS_KEPT:
                _UUIDS.clear()
            found = intern_uuid(_UUIDS, raw)
        return found

    def count(self, name: str) -> int:
        """The length of a non-nullable array."""
        count = self.uvarint() - 1 if self.flexible else self.int32()
        if count == -1:
            raise ValueError(f"null found for non-nullable array {name}")
        if count < 0:
            raise ValueError(f"array {name} has a negative length {count}")
        # Every item takes at least a byte: a longer claim is false, whatever it says.
        if count > len(self.data) - self.position:
            raise ValueError(
                f"array {name} claims {count} items, only "
                f"{len(self.data) - self.position} bytes are left"
            )
        return count

    def tags(self) -> list[tuple[int, int, int]]:
        """The tagged fields here, (tag, start, end) each, the cursor after the last: the
        caller reads a known one from its start and checks it ends by its end."""
        out = []
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            size = self.uvarint()
            start = self.position
            self.take(size)
            out.append((tag, start, start + size))
        return out

    def skip_tags(self) -> None:
        if self.flexible:
            for _ in range(self.uvarint()):
                self.uvarint()
                self.take(self.uvarint())


def read_request(read: Callable[[int], T], version: int) -> T:
    """``read(version)``, a frame that ends early (``struct.error``, ``IndexError``) refused
    as ``ValueError`` like any other malformed request."""
    try:
        return read(version)
    except (struct.error, IndexError) as e:
        raise ValueError(f"the request ends early ({e})") from None
