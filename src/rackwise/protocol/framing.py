"""Size-prefixed frames: Kafka's transport. Every request and response travels as a 4-byte
big-endian signed size followed by that many bytes.

:class:`FrameDecoder` cuts a byte stream, delivered in arbitrary chunks, into whole frames, as
Kafka's ``NetworkReceive`` does: a size below 0 or above the configured maximum
(``socket.request.max.bytes``, default 104857600) ends the connection with Kafka's message
(``Invalid receive (size = N)``), before any of the announced bytes are buffered. A size of 0
is a valid, empty frame (Kafka allows it; the request decoder then refuses it).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final

from rackwise.protocol.outcomes import Close

DEFAULT_MAX_REQUEST_BYTES: Final = 104_857_600
"""Kafka's ``socket.request.max.bytes`` default: the largest request frame accepted."""
SIZE_BYTES: Final = 4
"""The frame's size prefix: an int32."""
_SIZE: Final = struct.Struct(">i")
_COMPACT_AT: Final = 1 << 16
"""Consumed bytes the decoder drops from its buffer once there are this many."""


def frame(payload: bytes) -> bytes:
    """``payload`` with its size prefix."""
    return _SIZE.pack(len(payload)) + payload


def size_refused(size: int, max_size: int) -> str | None:
    """Why a frame announcing ``size`` bytes breaks the stream (Kafka's words), or None when
    the size is acceptable."""
    if size < 0:
        return f"Invalid receive (size = {size})"
    if size > max_size:
        return f"Invalid receive (size = {size} larger than {max_size})"
    return None


@dataclass(frozen=True, slots=True)
class Frames:
    """What one :meth:`FrameDecoder.feed` produced: the frames completed, in order, and, if
    the stream broke, why the connection must close (nothing after that is read)."""

    frames: tuple[bytes, ...]
    close: Close | None = None


class FrameDecoder:
    """Whole frames (without their size prefix) from a stream fed in arbitrary chunks.

    Mutable by nature: it holds the bytes of the frame being received. After a bad size it
    stays broken: every later feed returns no frames and the same :class:`Close`.
    """

    __slots__ = ("_buffer", "_closed", "_max_size", "_position")

    def __init__(self, max_size: int = DEFAULT_MAX_REQUEST_BYTES) -> None:
        if max_size < 0:
            raise ValueError(f"the maximum frame size must be at least 0, not {max_size}")
        self._max_size = max_size
        self._buffer = bytearray()
        self._position = 0
        self._closed: Close | None = None

    @property
    def max_size(self) -> int:
        return self._max_size

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned in a frame."""
        return len(self._buffer) - self._position

    @property
    def closed(self) -> Close | None:
        """Why the stream broke, or None while it is sound."""
        return self._closed

    def feed(self, data: bytes) -> Frames:
        """Take the next bytes of the stream; return the frames they complete."""
        if self._closed is not None:
            return Frames((), self._closed)
        self._buffer += data
        frames: list[bytes] = []
        buffer = self._buffer
        while len(buffer) - self._position >= SIZE_BYTES:
            (size,) = _SIZE.unpack_from(buffer, self._position)
            if size < 0 or size > self._max_size:
                self._fail(size)
                return Frames(tuple(frames), self._closed)
            start = self._position + SIZE_BYTES
            if len(buffer) - start < size:
                break
            with memoryview(buffer) as view:
                frames.append(bytes(view[start : start + size]))  # one copy, not two
            self._position = start + size
        self._compact()
        return Frames(tuple(frames))

    def _fail(self, size: int) -> None:
        self._closed = Close(size_refused(size, self._max_size) or "")
        self._buffer = bytearray()
        self._position = 0

    def _compact(self) -> None:
        if self._position == len(self._buffer):
            self._buffer.clear()
            self._position = 0
        elif self._position >= _COMPACT_AT:
            del self._buffer[: self._position]
            self._position = 0
