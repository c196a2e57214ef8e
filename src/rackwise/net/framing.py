"""The reading end of a server's connection: the next request frame, its size checked and its
memory granted before its body is read, and a glance at its header.

Goals
    Cut a connection's stream into request frames as Kafka's ``NetworkReceive`` does, with a
    frame's body read only once the listener may hold it: a large one straight from the
    socket into a buffer of its own (:class:`~rackwise.net.frames.FrameStream`), which is
    the buffer it is decoded from.

Constraints
    * A size below 0 or above ``max_request_bytes`` (Kafka's ``socket.request.max.bytes``)
      closes the connection before any of the announced bytes are read
      (:func:`rackwise.protocol.framing.size_refused` gives Kafka's words).
    * A frame's body is read only once the listener's memory pool grants its size
      (``queued.max.request.bytes``, :class:`~rackwise.net.limits.MemoryPool`); the grant is
      the caller's to release once the request is done with its bytes (a frame the pool
      grants, ``pool.needs_grant(len(body))``). A frame cut short by the peer or by a
      cancellation gives its grant back here.
    * The connection's :class:`~rackwise.net.admission.ClientState` tells the idle sweeper
      what is being read: its ``last_active`` when a size arrives, its ``frame_bytes``
      while a body does.

Worked example
    ``body = await read_frame(stream, client, pool, 104857600)`` for the bytes
    ``00 00 00 0b 00 12 00 09 ...`` is the 11 bytes after the size; ``is_produce(body)`` is
    False (api key 18, ApiVersions). A size of -1 gives ``Close("Invalid receive (size =
    -1)")``; a peer that closes first gives None.
"""

from __future__ import annotations

import asyncio
import struct
from typing import Final

from rackwise.net.admission import ClientState
from rackwise.net.frames import STAGING_BYTES, FrameStream
from rackwise.net.limits import MemoryPool
from rackwise.protocol import Close
from rackwise.protocol.framing import size_refused
from rackwise.protocol.header import peek_api

_PRODUCE: Final = 0
_FETCH: Final = 1
OFF_LOOP_BYTES: Final = 256 * 1024
"""Request frames (and response bodies, :mod:`rackwise.net.client`) larger than this, but for
Produce and Fetch, are decoded and encoded on a worker thread (:func:`decodes_off_the_loop`)."""
_SIZE: Final = struct.Struct(">i")


async def read_frame(
    stream: FrameStream, client: ClientState, pool: MemoryPool, max_request_bytes: int
) -> bytes | memoryview | Close | None:
    """The next request frame's body (module docstring), a :class:`~rackwise.protocol.Close`
    when its size breaks the stream, or None when the peer closed first. A large body is a
    writable view of the buffer the socket was read into: the frame is this request's alone,
    and a Produce request's batches get their offsets written into it."""
    try:
        head = await stream.read_exactly(_SIZE.size)
    except asyncio.IncompleteReadError:
        return None
    client.last_active = asyncio.get_running_loop().time()
    (size,) = _SIZE.unpack(head)
    refused = size_refused(size, max_request_bytes)
    if refused is not None:
        return Close(refused)
    client.frame_bytes = size
    granted = pool.needs_grant(size)
    if granted:
        await pool.reserve(size)
    body: bytes | memoryview | None
    try:
        if size <= STAGING_BYTES:
            body = await stream.read_exactly(size)
        else:
            body = await stream.read_body(size, writable=True)
    except asyncio.IncompleteReadError:
        body = None
    except BaseException:
        if granted:
            pool.release(size)
        raise
    client.frame_bytes = 0
    if body is None and granted:
        pool.release(size)
    return body


def decodes_off_the_loop(body: bytes | memoryview) -> bool:
    """Whether a request frame is decoded (and its response encoded) on a worker thread: one
    over :data:`OFF_LOOP_BYTES` of any API but Produce and Fetch (whose records stay bytes and
    cost nothing to decode). A 3 MB CreateTopics of 100,000 topics takes seconds to decode
    and its answer as long to encode; on the loop, no other connection would be answered."""
    prefix = peek_api(body)
    return len(body) > OFF_LOOP_BYTES and prefix is not None and prefix[0] not in (_PRODUCE, _FETCH)


def is_produce(body: bytes | memoryview) -> bool:
    """Whether a request frame's header names Produce (a frame too short for a header does
    not)."""
    prefix = peek_api(body)
    return prefix is not None and prefix[0] == _PRODUCE
