"""An asyncio server speaking Kafka's protocol on one listener (Kafka's ``SocketServer`` with
its ``Acceptor``, ``Processor``s and the request channel, in one event loop).

Goals
    Accept connections on ``host:port`` (127.0.0.1 unless told otherwise), cut each stream into
    frames, turn each frame into an outcome with :func:`rackwise.protocol.decode_request`, hand
    a :class:`~rackwise.protocol.Request` to the handler and send back what it returns. Bad
    input never takes the server down: what the protocol layer says to close is closed, a
    handler that raises closes its connection (one log line), and every other connection keeps
    being served. No client gets more than its share (:mod:`rackwise.net.limits`).

Constraints
    * One request per connection in processing: as Kafka mutes a channel while its request is
      in flight, the next frame is not read before the previous response is written.
      Concurrency comes from connections: a peer that wants a long poll (FetchMetadataLog) and
      heartbeats at once opens two. One exception, for throughput at acks=all: a Produce
      handler that has appended and only waits for the followers calls
      :func:`let_next_request_in`, and the connection reads its next request meanwhile (up
      to :data:`MAX_WAITING_PRODUCES` waiting). The appends stay in the order of the
      requests (the next one is read only after this one's appends), the answers are written
      in that order, and a request that ends the connection ends the ones behind it. Kafka
      mutes the channel through that wait, so a producer with 5 requests in flight gets one
      replication round per request; here the followers fetch up to 5 requests' records in
      one round.
    * Fair: after each request the connection yields to the event loop, so a connection that
      pipelines requests as fast as they are answered takes its turn with the others instead
      of starving them (a new connection's ApiVersions waits for one request of each busy
      connection, not for all of their queues).
    * Bounded: a frame larger than ``max_request_bytes`` (Kafka's ``socket.request.max.bytes``)
      closes its connection before its body is read; a frame's body is read only once the
      listener's memory pool grants its size (``queued.max.request.bytes``); a connection
      silent for ``connections.max.idle.ms``, even in the middle of a frame, is closed; a
      connection beyond ``max.connections`` or ``max.connections.per.ip`` is closed as it is
      accepted. While the process has no file descriptor left, accepting pauses (connections
      wait in the listen backlog) and is retried; each kind of refusal is logged once per
      interval, with the number refused since the previous line.
    * Handlers may ask :func:`current_connection` which connection their request came on (the
      controller binds a broker's registration to it).
    * Shutdown closes the listening sockets, then every connection; handlers in progress are
      cancelled. Nothing here uses threads (:mod:`rackwise.net.io_thread` runs a server on a
      thread of its own).

Algorithm
    One accept task per listening socket (``loop.sock_accept``), one task per connection:
    read the 4-byte size, check it, wait for the pool when the frame is large, read the body
    (a large one straight from the socket into a buffer of its own,
    :class:`~rackwise.net.frames.FrameStream`; every read counts as activity), decode it from
    that buffer: a ``Close`` ends the connection (logged
    at INFO, as Kafka logs a request it cannot parse), a ``Reply`` is written as is, a
    ``Request`` goes to the handler. The handler returns the response message (of the
    request's API and version), or :data:`NO_RESPONSE` to send nothing, or raises
    :class:`~rackwise.net.errors.CloseConnection`. The response goes straight to the socket
    while it takes it (``writev`` for buffers, ``sendfile`` for a file region); only when the
    socket is full does a 64 KiB piece wait with the transport (:func:`send_response`). A
    sweeper task closes idle connections.

Worked example
    ``server = await start_server(handler, Listener.CONTROLLER, port=0)`` binds a free port of
    127.0.0.1; ``server.port`` tells which. A peer sending the 15-byte frame
    ``00 00 00 0b 00 12 00 09 00 00 00 07 ff ff 00`` (ApiVersions v9) gets the v0
    UNSUPPORTED_VERSION reply of :mod:`rackwise.protocol.server` and stays connected; a peer
    announcing a frame of -1 bytes is disconnected; both leave other connections untouched.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import logging
import os
import socket
import struct
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Final

from rackwise.common.logsafe import loggable
from rackwise.net.errors import CloseConnection
from rackwise.net.frames import STAGING_BYTES, FrameStream
from rackwise.net.limits import ConnectionQuotas, LogThrottle, MemoryPool, ServerLimits
from rackwise.net.sockets import RESOURCE_ERRNOS, listen, peer_address
from rackwise.protocol import (
    DEFAULT_MAX_REQUEST_BYTES,
    Close,
    Listener,
    Reply,
    Request,
    api_name,
    decode_request,
    encode_response_buffers,
)
from rackwise.protocol.framing import size_refused
from rackwise.protocol.header import peek_api
from rackwise.storage.files import FileRegion, RegionUnavailable

LOG: Final = logging.getLogger("rackwise.net")
DEFAULT_HOST: Final = "127.0.0.1"
"""Where a listener without a host binds."""
ACCEPT_RETRY_DELAY_S: Final = 0.1
"""The pause before accepting again after the process ran out of file descriptors."""
SWEEP_MAX_INTERVAL_S: Final = 1.0
SWEEP_MIN_INTERVAL_S: Final = 0.01
"""Bounds of the idle sweeper's period (a quarter of the idle timeout, within them)."""
CLOSE_WAIT_S: Final = 1.0
MAX_WAITING_PRODUCES: Final = 5
"""Produce requests of one connection that may wait for their acknowledgements at once while
the connection's next request is read (Kafka's producers send at most 5 at a time by default,
``max.in.flight.requests.per.connection``)."""
_PRODUCE: Final = 0
_SIZE: Final = struct.Struct(">i")
_IOV_MAX: Final = os.sysconf("SC_IOV_MAX") if hasattr(os, "sysconf") else 16
QUEUED_PIECE_BYTES: Final = 65_536
"""What a response queues with the transport each time the socket is full."""


def _close_if_failed(stream: FrameStream, answer: asyncio.Task[bool]) -> None:
    """Close the connection when ``answer`` (a Produce request's, answered while the
    connection waits for its next request) says it must close."""
    if not answer.cancelled() and (answer.exception() is not None or not answer.result()):
        stream.close()


async def _after(previous: asyncio.Task[bool] | None) -> bool:
    """Whether the connection is still sound once ``previous`` (an earlier answer) is done."""
    if previous is None:
        return True
    await asyncio.wait([previous])
    return not previous.cancelled() and previous.exception() is None and previous.result()


def _send_at_once(transport: asyncio.BaseTransport, buffers: Sequence[Any]) -> list[Any]:
    """Hand ``buffers`` to the socket while it takes them and nothing is queued before them;
    give back what it did not take. Runs of buffers go in one ``writev`` each (the transport's
    own ``writelines`` joins them first: a copy of every response, most of whose bytes, a
    fetch's records, are already in their own buffers), a
    :class:`~rackwise.storage.files.FileRegion` with ``sendfile``. Raises
    :class:`~rackwise.storage.files.RegionUnavailable` when a region's file lost its bytes
    (the response cannot be completed: the caller closes the connection)."""
    if (
        transport.is_closing()
        or not hasattr(transport, "get_write_buffer_size")
        or transport.get_write_buffer_size()
        or transport.get_extra_info("socket") is None
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
    """Write one response's buffers and file regions in order, straight to the socket while
    it takes them (:func:`_send_at_once`). When it is full, the next
    :data:`QUEUED_PIECE_BYTES` are queued with the transport (a region's part read into
    bytes) and the rest waits until the transport has written them all; so a slow reader
    costs the server at most one such piece of memory and one copy per time the socket
    fills, not a copy of the whole response."""
    transport = stream.transport
    if transport.get_write_buffer_limits() != (0, 0):
        transport.set_write_buffer_limits(high=0)  # drain() then waits for an empty queue
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


_CURRENT: ContextVar[ClientConnection | None] = ContextVar("rackwise_connection", default=None)
_PARKED: ContextVar[asyncio.Future[None] | None] = ContextVar("rackwise_parked", default=None)


class _NoResponse:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NO_RESPONSE"


NO_RESPONSE: Final = _NoResponse()
"""What a handler returns for a request that gets no response (Produce with acks=0)."""

Handler = Callable[[Request], Awaitable[Any]]
"""``async def handler(request) -> response message | NO_RESPONSE``."""


@dataclass(eq=False, slots=True)
class ClientConnection:
    """A connection as its handlers see it; two are the same only if they are the same object
    (a reconnecting peer is a new connection)."""

    connection_id: int
    """Unique per server, in order of acceptance."""
    peer: str
    """``ip:port`` of the peer."""
    ip: str


def current_connection() -> ClientConnection | None:
    """The connection whose request the calling task is handling (None outside a handler)."""
    return _CURRENT.get()


def let_next_request_in() -> None:
    """Tell the server that the Produce request being handled has done all it does in order
    (its appends) and now only waits (for the followers, acks=all): its connection may read
    and start its next request. The responses are still written in the order of the requests.
    Does nothing outside a Produce handler."""
    parked = _PARKED.get()
    if parked is not None and not parked.done():
        parked.set_result(None)


@dataclass(eq=False, slots=True)
class _Client:
    """A connection's state as the server tracks it."""

    connection: ClientConnection
    last_active: float
    """Loop time of the last byte read or written."""
    busy: int = 0
    """Requests of this connection being handled (not idle while any is, whatever the time)."""
    frame_bytes: int = 0
    """The size of the frame being received (0 between frames)."""
    stream: FrameStream | None = field(default=None, repr=False)

    def idle_since(self) -> float:
        """Loop time of the last bytes received or sent."""
        if self.stream is None:
            return self.last_active
        return max(self.last_active, self.stream.last_read)


class KafkaServer:
    """One listener's server (see the module docstring). Build it with :func:`start_server`,
    or construct and :meth:`start`; :meth:`close` ends it. Usable as an async context manager."""

    def __init__(
        self,
        handler: Handler,
        listener: Listener,
        *,
        host: str = DEFAULT_HOST,
        port: int = 0,
        max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
        name: str | None = None,
        limits: ServerLimits | None = None,
    ) -> None:
        self.handler = handler
        self.listener = listener
        self.host = host or DEFAULT_HOST
        self.requested_port = port
        self.max_request_bytes = max_request_bytes
        self.name = name or listener.value
        self.limits = limits or ServerLimits()
        self.pool = MemoryPool(self.limits.queued_max_request_bytes)
        self._quotas = ConnectionQuotas(
            self.limits.max_connections, self.limits.max_connections_per_ip
        )
        self._throttle: LogThrottle | None = None
        self._sockets: list[socket.socket] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._clients: dict[asyncio.Task[None], _Client] = {}
        self._next_id = 0
        self._closed = asyncio.Event()

    # ---- lifecycle -----------------------------------------------------------------------

    async def start(self) -> None:
        """Bind and start accepting (raises OSError if the address is taken)."""
        if self._sockets:
            raise RuntimeError(f"BUG: the {self.name} server is already started")
        loop = asyncio.get_running_loop()
        self._throttle = LogThrottle(self.limits.log_interval_s, loop.time)
        self._sockets = await listen(self.host, self.requested_port)
        self._tasks = [loop.create_task(self._accept_loop(sock)) for sock in self._sockets]
        timeout_s = self.limits.idle_timeout_s
        if timeout_s is not None:
            self._tasks.append(loop.create_task(self._sweep_idle(timeout_s)))

    @property
    def port(self) -> int:
        """The port bound (the one the system chose when asked for 0)."""
        return self.address[1]

    @property
    def address(self) -> tuple[str, int]:
        """``(host, port)`` bound."""
        if not self._sockets:
            raise RuntimeError(f"BUG: the {self.name} server is not started")
        sockname = self._sockets[0].getsockname()
        return str(sockname[0]), int(sockname[1])

    @property
    def num_connections(self) -> int:
        return len(self._clients)

    async def close(self) -> None:
        """Stop accepting, close every connection (cancelling handlers in progress), and wait
        until all is closed. Calling it again does nothing."""
        if self._closed.is_set():
            return
        self._closed.set()
        tasks = self._tasks + list(self._clients)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        for sock in self._sockets:
            sock.close()

    async def wait_closed(self) -> None:
        """Return once :meth:`close` has been called."""
        await self._closed.wait()

    async def __aenter__(self) -> KafkaServer:
        if not self._sockets:
            await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ---- accepting -----------------------------------------------------------------------

    async def _accept_loop(self, sock: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                accepted, address = await loop.sock_accept(sock)
            except OSError as e:
                if self._closed.is_set():
                    return
                self._accept_failed(e)
                # Out of descriptors, Linux keeps the listener readable: pause, or it spins.
                await asyncio.sleep(ACCEPT_RETRY_DELAY_S if e.errno in RESOURCE_ERRNOS else 0)
                continue
            self._admit(accepted, address)

    def _accept_failed(self, error: OSError) -> None:
        unlogged = self._due(f"accept-{error.errno}")
        if unlogged is None:
            return
        if error.errno in RESOURCE_ERRNOS:
            LOG.warning(
                "%s: cannot accept connections: %s (errno %s); they wait in the listen "
                "backlog, accepting again every %.1f s%s",
                self.name,
                error.strerror,
                error.errno,
                ACCEPT_RETRY_DELAY_S,
                _since_last(unlogged, "failed attempts"),
            )
        else:
            LOG.warning(
                "%s: accept failed: %s%s", self.name, error, _since_last(unlogged, "failures")
            )

    def _admit(self, sock: socket.socket, address: Any) -> None:
        ip, peer = peer_address(address)
        if self._closed.is_set():
            sock.close()
            return
        refusal = self._quotas.try_open(ip)
        if refusal is not None:
            sock.close()
            unlogged = self._due("quota")
            if unlogged is not None:
                LOG.info(
                    "%s: rejected the connection from %s: %s%s",
                    self.name,
                    peer,
                    refusal,
                    _since_last(unlogged, "rejected"),
                )
            return
        self._next_id += 1
        connection = ClientConnection(self._next_id, peer, ip)
        loop = asyncio.get_running_loop()
        client = _Client(connection, loop.time())
        task = loop.create_task(self._run(sock, client))
        self._clients[task] = client

    def _due(self, kind: str) -> int | None:
        assert self._throttle is not None
        return self._throttle.due(kind)

    # ---- connections ---------------------------------------------------------------------

    async def _run(self, sock: socket.socket, client: _Client) -> None:
        _CURRENT.set(client.connection)
        peer = client.connection.peer
        stream: FrameStream | None = None
        try:
            _, stream = await asyncio.get_running_loop().connect_accepted_socket(FrameStream, sock)
            client.stream = stream
            await self._serve(stream, client)
        except asyncio.CancelledError:
            pass
        except (ConnectionError, OSError, asyncio.IncompleteReadError) as e:
            LOG.debug("%s: connection from %s lost: %s", self.name, peer, e)
        finally:
            task = asyncio.current_task()
            if task is not None:
                self._clients.pop(task, None)
            self._quotas.close(client.connection.ip)
            if stream is None:
                sock.close()
            else:
                stream.close()
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(stream.wait_closed(), CLOSE_WAIT_S)

    async def _serve(self, stream: FrameStream, client: _Client) -> None:
        loop = asyncio.get_running_loop()
        waiting: collections.deque[asyncio.Task[bool]] = collections.deque()
        """Produce requests answered after their followers, oldest first."""
        try:
            while True:
                while waiting and waiting[0].done():
                    if not waiting.popleft().result():
                        return
                if len(waiting) >= MAX_WAITING_PRODUCES:
                    await asyncio.wait([waiting[0]])
                    continue
                head = await _read_or_eof(stream, _SIZE.size)
                if head is None:
                    return
                client.last_active = loop.time()
                (size,) = _SIZE.unpack(head)
                refused = size_refused(size, self.max_request_bytes)
                if refused is not None:
                    self._log_close(client, Close(refused))
                    return
                client.frame_bytes = size
                granted = self.pool.needs_grant(size)
                if granted:
                    await self.pool.reserve(size)
                try:
                    body = await _read_body_or_eof(stream, size)
                    client.frame_bytes = 0
                except BaseException:
                    if granted:
                        self.pool.release(size)
                    raise
                if body is None:
                    if granted:
                        self.pool.release(size)
                    return
                previous = waiting[-1] if waiting else None
                prefix = peek_api(body)
                if prefix is not None and prefix[0] == _PRODUCE:
                    parked: asyncio.Future[None] = loop.create_future()
                    task = loop.create_task(
                        self._answer_in_turn(body, stream, client, previous, size, granted, parked)
                    )
                    del body
                    task.add_done_callback(functools.partial(_close_if_failed, stream))
                    waiting.append(task)
                    await parked  # appended (and waiting), or answered
                    if task.done():
                        waiting.clear()  # it was written after all of them
                        if not task.result():
                            return
                    # else the next request is read while this one waits
                else:
                    try:
                        if not await self._answer(body, stream, client, previous):
                            return
                    finally:
                        del body
                        if granted:
                            self.pool.release(size)
                    waiting.clear()  # its answer waited for theirs
                await asyncio.sleep(0)  # let the other connections take their turn
        finally:
            for task in waiting:
                task.cancel()

    async def _answer_in_turn(
        self,
        data: bytes | memoryview,
        stream: FrameStream,
        client: _Client,
        previous: asyncio.Task[bool] | None,
        size: int,
        granted: bool,
        parked: asyncio.Future[None],
    ) -> bool:
        """:meth:`_answer` for a Produce request, run as a task of its own so that it may
        wait for its acknowledgements while the next request is read (see
        :func:`let_next_request_in`)."""
        _PARKED.set(parked)
        try:
            return await self._answer(data, stream, client, previous)
        finally:
            if not parked.done():
                parked.set_result(None)
            if granted:
                self.pool.release(size)

    async def _answer(
        self,
        data: bytes | memoryview,
        stream: FrameStream,
        client: _Client,
        previous: asyncio.Task[bool] | None = None,
    ) -> bool:
        """Handle one frame and write its answer once ``previous`` (the answer to the request
        before it, if still waiting) has written its own; False when the connection must
        close."""
        outcome = decode_request(data, self.listener)
        del data
        if isinstance(outcome, Close):
            await _after(previous)  # the answers before it go out first, as they would have
            self._log_close(client, outcome)
            return False
        if isinstance(outcome, Reply):
            LOG.debug(
                "%s: %s from %s refused: %s",
                self.name,
                loggable(outcome.header),
                client.connection.peer,
                loggable(outcome.reason),
            )
            return await _after(previous) and await self._write(stream, client, [outcome.frame])
        client.busy += 1
        try:
            response = await self._handle(outcome, client.connection.peer)
        finally:
            client.busy -= 1
            client.last_active = asyncio.get_running_loop().time()
        if not await _after(previous) or response is None:
            return False
        if not isinstance(response, _NoResponse):
            return await self._write(stream, client, response)
        return True

    async def _write(self, stream: FrameStream, client: _Client, buffers: Sequence[Any]) -> bool:
        """Send a response; False when the connection must close (a file region of it lost
        its bytes after part of the response was sent)."""
        try:
            await send_response(stream, buffers)
        except RegionUnavailable as e:
            LOG.warning(
                "%s: closing the connection from %s: a response could not be completed: %s",
                self.name,
                client.connection.peer,
                e,
            )
            return False
        client.last_active = asyncio.get_running_loop().time()
        return True

    async def _handle(self, request: Request, peer: str) -> list[Any] | _NoResponse | None:
        """The response as buffers to write, NO_RESPONSE, or None to close."""
        what = f"{api_name(request.header.api_key)} v{request.header.api_version}"
        try:
            response = await self.handler(request)
            if isinstance(response, _NoResponse):
                return NO_RESPONSE
            return list(encode_response_buffers(request.header, response))
        except CloseConnection as e:
            LOG.info(
                "%s: closing the connection from %s after %s: %s",
                self.name,
                peer,
                what,
                loggable(e),
            )
        except asyncio.CancelledError:
            raise
        except Exception as e:
            LOG.error(
                "%s: error handling %s from %s (closing the connection): %s: %s",
                self.name,
                what,
                peer,
                type(e).__name__,
                loggable(" ".join(str(e).split())),
            )
        return None

    def _log_close(self, client: _Client, close: Close) -> None:
        LOG.info(
            "%s: closing the connection from %s: %s",
            self.name,
            client.connection.peer,
            loggable(close.reason),
        )

    # ---- idle connections ------------------------------------------------------------------

    async def _sweep_idle(self, timeout_s: float) -> None:
        """Close every connection silent for longer than ``timeout_s`` and not busy."""
        interval_s = min(SWEEP_MAX_INTERVAL_S, max(timeout_s / 4, SWEEP_MIN_INTERVAL_S))
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(interval_s)
            now = loop.time()
            for task, client in list(self._clients.items()):
                idle_s = now - client.idle_since()
                if client.busy or idle_s <= timeout_s:
                    continue
                if client.frame_bytes:
                    LOG.info(
                        "%s: closing the connection from %s: idle for %d ms in a frame of %d "
                        "bytes (connections.max.idle.ms=%d)",
                        self.name,
                        client.connection.peer,
                        idle_s * 1000,
                        client.frame_bytes,
                        self.limits.connections_max_idle_ms,
                    )
                else:
                    LOG.debug(
                        "%s: closing the idle connection from %s", self.name, client.connection.peer
                    )
                task.cancel()


async def start_server(
    handler: Handler,
    listener: Listener,
    *,
    host: str = DEFAULT_HOST,
    port: int = 0,
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
    name: str | None = None,
    limits: ServerLimits | None = None,
) -> KafkaServer:
    """A started :class:`KafkaServer` (see there)."""
    server = KafkaServer(
        handler,
        listener,
        host=host,
        port=port,
        max_request_bytes=max_request_bytes,
        name=name,
        limits=limits,
    )
    await server.start()
    return server


async def _read_or_eof(stream: FrameStream, size: int) -> bytes | None:
    try:
        return await stream.read_exactly(size)
    except asyncio.IncompleteReadError:
        return None


async def _read_body_or_eof(stream: FrameStream, size: int) -> bytes | memoryview | None:
    """The frame's ``size`` bytes (a large frame as a writable view of the buffer the socket
    was read into: the frame is this request's alone, and a Produce request's batches get
    their offsets written into it), or None when the peer closed first."""
    try:
        if size <= STAGING_BYTES:
            return await stream.read_exactly(size)
        return await stream.read_body(size, writable=True)
    except asyncio.IncompleteReadError:
        return None


def _since_last(unlogged: int, what: str) -> str:
    return f" ({unlogged} more {what} since the last line)" if unlogged else ""
