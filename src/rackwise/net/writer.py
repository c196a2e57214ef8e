"""The writing end of a server's connection: one response's buffers and file regions, in
order, straight to the socket while it takes them.

Goals
    Send a Fetch answer of megabytes without joining it into one copy: runs of buffers go in
    one ``writev`` each (the transport's own ``writelines`` joins them first, a copy of every
    response, most of whose bytes, a fetch's records, are already in their own buffers), a
    :class:`~rackwise.storage.files.FileRegion` with ``sendfile``.

Constraints
    * In order: bytes go to the socket directly only while nothing is queued with the
      transport before them.
    * Bounded: when the socket is full, the next :data:`QUEUED_PIECE_BYTES` are queued with
      the transport (a region's part read into bytes) and the rest waits until the transport
      has written them all; so a slow reader costs the server at most one such piece of
      memory and one copy per time the socket fills, not a copy of the whole response.
    * Over TLS every byte goes through the transport, which encrypts it (the socket is only
      the TLS records'), a :data:`QUEUED_PIECE_BYTES` piece at a time (:data:`_TLS_LIMITS`).
    * A region whose file lost its bytes raises
      :class:`~rackwise.storage.files.RegionUnavailable`: the response cannot be completed,
      and the connection is closed (:mod:`rackwise.net.pipelining`).

Worked example
    ``await send_response(stream, [header, records_region])`` with a socket that takes
    100 KiB: the header and the region's first bytes go in a ``writev`` and a ``sendfile``,
    the next 64 KiB are queued with the transport, and the rest follows once they drained.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from typing import Any, Final

from rackwise.net.frames import FrameStream
from rackwise.storage.files import FileRegion

_IOV_MAX: Final = os.sysconf("SC_IOV_MAX") if hasattr(os, "sysconf") else 16
QUEUED_PIECE_BYTES: Final = 65_536
"""What a response queues with the transport each time the socket is full."""
_TLS_LIMITS: Final = (0, QUEUED_PIECE_BYTES)
"""(low, high) of a TLS transport's write buffer. Without TLS, high 0 makes ``drain()`` wait
for an empty queue; a TLS transport (asyncio's and uvloop's SSL protocol) would pause its
writer at size 0 >= high 0 and resume it at 0 <= low 0 on alternate checks, and could leave it
paused with nothing queued: ``drain()`` would never return. A piece over the high mark pauses
it, an empty buffer resumes it."""


def _send_at_once(transport: asyncio.BaseTransport, buffers: Sequence[Any]) -> list[Any]:
    """Hand ``buffers`` to the socket while it takes them and nothing is queued before them;
    give back what it did not take. Runs of buffers go in one ``writev`` each, a
    :class:`~rackwise.storage.files.FileRegion` with ``sendfile``. Raises
    :class:`~rackwise.storage.files.RegionUnavailable` when a region's file lost its bytes
    (the response cannot be completed: the caller closes the connection)."""
    if (
        transport.is_closing()
        or not hasattr(transport, "get_write_buffer_size")
        or transport.get_write_buffer_size()
        or transport.get_extra_info("socket") is None
        or transport.get_extra_info("sslcontext") is not None  # TLS: the transport encrypts
    ):
        return list(buffers)
    fd = transport.get_extra_info("socket").fileno()
    i = 0
    while i < len(buffers):
        if type(buffers[i]) is FileRegion:
            region = buffers[i]
            sent = region.send(fd)
            if sent < region.size:
                return [region.split(sent)[1], *buffers[i + 1 :]]
            i += 1
            continue
        j = i + 1
        while j < len(buffers) and j - i < _IOV_MAX and type(buffers[j]) is not FileRegion:
            j += 1
        try:
            sent = os.writev(fd, buffers[i:j])
        except OSError:  # full (BlockingIOError), or failed: the transport meets it and closes
            return list(buffers[i:])
        for k in range(i, j):
            view = memoryview(buffers[k]).cast("B")
            if sent < view.nbytes:
                return [view[sent:], *buffers[k + 1 :]]
            sent -= view.nbytes
        i = j
    return []


async def send_response(stream: FrameStream, buffers: Sequence[Any]) -> None:
    """Write one response's buffers and file regions in order (module docstring), straight to
    the socket while it takes them (:func:`_send_at_once`), then a
    :data:`QUEUED_PIECE_BYTES` piece at a time through the transport."""
    transport = stream.transport
    limits = _TLS_LIMITS if transport.get_extra_info("sslcontext") is not None else (0, 0)
    if transport.get_write_buffer_limits() != limits:
        transport.set_write_buffer_limits(high=limits[1], low=limits[0])
    rest: list[Any] = list(buffers)
    while rest and not transport.is_closing():  # a closing transport writes nothing more
        rest = _send_at_once(transport, rest)
        if not rest:
            break
        piece, rest = _take(rest, QUEUED_PIECE_BYTES)
        stream.writelines(piece)
        await stream.drain()


def _take(buffers: list[Any], limit: int) -> tuple[list[Any], list[Any]]:
    """The first ``limit`` bytes of ``buffers`` as bytes-like pieces, and the rest."""
    piece: list[Any] = []
    left: list[Any]
    for i, buffer in enumerate(buffers):
        if limit <= 0:
            return piece, buffers[i:]
        if type(buffer) is FileRegion:
            head, tail = buffer.split(limit)
            piece.append(head.read())
            left = [tail] if tail.size else []
        else:
            view = memoryview(buffer).cast("B")
            piece.append(view[:limit])
            left = [view[limit:]] if view.nbytes > limit else []
        limit -= len(piece[-1])
        if left:
            return piece, [*left, *buffers[i + 1 :]]
    return piece, []
