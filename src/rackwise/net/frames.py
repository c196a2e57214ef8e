"""One TCP connection as a stream of Kafka frames, read straight into the buffer each frame
ends up in (an ``asyncio.BufferedProtocol``), and written with the transport's flow control.

Goals
    Carry megabytes a second of Produce requests and Fetch responses through the event loop
    with as few copies as the kernel allows: the socket is read into one buffer per large
    frame, which the decoder then reads as a view. An ``asyncio.StreamReader`` copies every
    byte three times on the way (the transport's ``recv`` into a new bytes object, that into
    the reader's buffer, and out of it into the bytes ``readexactly`` returns).

Constraints
    * Bounded: at most :data:`STAGING_BYTES` are read ahead of what the owner asked for; then
      reading pauses until the owner reads (the peer's writes wait in the socket). A large
      frame's buffer is only made once the owner asks for that frame's body (the server
      first waits for its memory pool's grant).
    * Small reads (a frame's size, a small frame) are copied out of the staging buffer into
      bytes of their own, which stay valid however the staging buffer is reused.
    * One reader at a time: :meth:`FrameStream.read_exactly` and :meth:`FrameStream.read_body`
      are awaited by one task per connection (the server's connection task, the client's
      response reader).
    * Writing is the transport's (``write``/``writelines``, pausing and resuming) with
      ``drain`` as a ``StreamWriter``'s: it waits while the transport has paused writing
      and raises ``ConnectionResetError`` once the connection is lost.

Algorithm
    ``get_buffer`` hands the transport the free part of the body being filled when a body is
    being read, otherwise the free tail of the staging buffer (moving the unread bytes to its
    front when the tail runs short). ``buffer_updated`` counts the bytes in and wakes the
    reader once what it waits for is there. :meth:`FrameStream.read_body` copies the part of
    the body already staged (at most :data:`STAGING_BYTES`) into a new ``bytearray`` and lets
    the transport fill the rest of it directly.

Worked example
    ``transport, stream = await loop.create_connection(FrameStream, "127.0.0.1", port)``;
    ``stream.write(frame)``; ``(size,) = struct.unpack(">i", await stream.read_exactly(4))``;
    ``body = await stream.read_body(size)`` is a read-only ``memoryview`` of ``size`` bytes.
"""

from __future__ import annotations

import asyncio
from typing import Any, Final, cast

STAGING_BYTES: Final = 65_536
"""The most bytes read ahead of the owner (and the largest :meth:`FrameStream.read_exactly`)."""
_COMPACT_BELOW: Final = STAGING_BYTES // 4
"""Unread bytes move to the front of the staging buffer when less room than this is left."""


class FrameStream(asyncio.BufferedProtocol):
    """A connection's reading and writing ends (see the module docstring)."""

    def __init__(self) -> None:
        self._staging = bytearray(STAGING_BYTES)
        self._staged = memoryview(self._staging)
        self._start = 0
        self._end = 0
        self._body: memoryview | None = None
        self._filled = 0
        self._wanted = 0
        """Staged bytes the reader waits for (0: none)."""
        self._waiter: asyncio.Future[None] | None = None
        self._eof = False
        self._error: BaseException | None = None
        self._lost = False
        self._reading_paused = False
        self._writing_paused = False
        self._drain_waiters: list[asyncio.Future[None]] = []
        self._loop = asyncio.get_running_loop()
        self._closed: asyncio.Future[None] = self._loop.create_future()
        self._transport: asyncio.Transport | None = None
        self.last_read = self._loop.time()
        """Loop time of the last bytes received."""

    # ---- the transport's side --------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport = cast(asyncio.Transport, transport)  # uvloop's are not subclasses
        self._transport = transport

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._body is not None:
            return self._body[self._filled :]
        if self._start == self._end:
            self._start = self._end = 0
        elif STAGING_BYTES - self._end < _COMPACT_BELOW and self._start:
            unread = self._end - self._start
            # Through bytes: a bytearray's slice assignment from a view of itself is a memcpy,
            # undefined when the two ranges overlap.
            self._staging[:unread] = bytes(self._staged[self._start : self._end])
            self._start, self._end = 0, unread
        return self._staged[self._end :]

    def buffer_updated(self, nbytes: int) -> None:
        self.last_read = self._loop.time()
        if self._body is not None:
            self._filled += nbytes
            if self._filled == len(self._body):
                self._body = None  # the next bytes are the next frame's: staged
                self._wake()
            return
        self._end += nbytes
        if self._wanted and self._end - self._start >= self._wanted:
            self._wake()
        if self._end - self._start == STAGING_BYTES:
            self._pause_reading()

    def eof_received(self) -> bool:
        self._eof = True
        self._wake()
        # Half-open: the owner decides when to close (TLS transports close on EOF anyway).
        tls = self._transport is not None and self._transport.get_extra_info("sslcontext")
        return not tls

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        self._eof = True
        if exc is not None and self._error is None:
            self._error = exc
        self._wake()
        for waiter in self._drain_waiters:
            if not waiter.done():
                waiter.set_exception(exc or ConnectionResetError("Connection lost"))
        self._drain_waiters.clear()
        if not self._closed.done():
            self._closed.set_result(None)

    def pause_writing(self) -> None:
        self._writing_paused = True

    def resume_writing(self) -> None:
        self._writing_paused = False
        for waiter in self._drain_waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._drain_waiters.clear()

    # ---- reading ---------------------------------------------------------------------------

    async def read_exactly(self, n: int) -> bytes:
        """The next ``n`` bytes (``n`` <= :data:`STAGING_BYTES`) as bytes of their own; raises
        ``asyncio.IncompleteReadError`` when the peer closed first, or the error the
        connection was lost with."""
        if n > STAGING_BYTES:
            raise ValueError(f"BUG: read_exactly({n}) beyond the staging buffer")
        while self._end - self._start < n:
            if self._eof:
                self._raise_closed(bytes(self._staged[self._start : self._end]), n)
            self._wanted = n
            await self._wait()
            self._wanted = 0
        data = bytes(self._staged[self._start : self._start + n])
        self._start += n
        self._resume_reading()
        return data

    async def read_body(self, size: int, *, writable: bool = False) -> memoryview:
        """The next ``size`` bytes as a view of a buffer of their own, read into it by the
        transport (read-only unless ``writable``: the owner of a request frame may write into
        it); raises as :meth:`read_exactly`."""
        body = bytearray(size)
        have = min(self._end - self._start, size)
        body[:have] = self._staged[self._start : self._start + have]
        self._start += have
        if have < size:
            view = memoryview(body)
            if self._eof:
                self._raise_closed(bytes(view[:have]), size)
            self._body, self._filled = view, have
            try:
                while self._body is not None:
                    if self._eof:
                        self._raise_closed(bytes(view[: self._filled]), size)
                    await self._wait()
            finally:
                self._body = None
        self._resume_reading()
        view = memoryview(body)
        return view if writable else view.toreadonly()

    def _raise_closed(self, partial: bytes, expected: int) -> None:
        if self._error is not None:
            raise self._error
        raise asyncio.IncompleteReadError(partial, expected)

    async def _wait(self) -> None:
        self._resume_reading()
        self._waiter = self._loop.create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def _pause_reading(self) -> None:
        if not self._reading_paused and self._transport is not None:
            self._reading_paused = True
            self._transport.pause_reading()

    def _resume_reading(self) -> None:
        if (
            self._reading_paused
            and self._transport is not None
            and (self._body is not None or self._end - self._start < STAGING_BYTES)
        ):
            self._reading_paused = False
            self._transport.resume_reading()

    # ---- writing ---------------------------------------------------------------------------

    @property
    def transport(self) -> asyncio.Transport:
        assert self._transport is not None, "BUG: the stream has no connection yet"
        return self._transport

    def write(self, data: Any) -> None:
        self.transport.write(data)

    def writelines(self, buffers: Any) -> None:
        self.transport.writelines(buffers)

    async def drain(self) -> None:
        """Return once the transport takes more (at once unless it paused writing)."""
        if self.transport.is_closing():
            await asyncio.sleep(0)  # lets connection_lost run, as StreamWriter.drain does
        if self._lost:
            raise ConnectionResetError("Connection lost")
        if not self._writing_paused:
            return
        waiter = self._loop.create_future()
        self._drain_waiters.append(waiter)
        await waiter

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()

    def is_closing(self) -> bool:
        return self._transport is None or self._transport.is_closing()

    async def wait_closed(self) -> None:
        await asyncio.shield(self._closed)
