"""A connection's requests, one in processing at a time and answered in order (Kafka's muted
channel), but for Produce requests that only wait for their followers: the handler's side of
the server, from a frame to the response written.

Goals
    Turn each frame into an outcome with :func:`rackwise.protocol.decode_request`, hand a
    :class:`~rackwise.protocol.Request` to the handler and write back what it returns. Bad
    input never takes the server down: what the protocol layer says to close is closed, a
    handler that raises closes its connection (one log line), and every other connection keeps
    being served.

Constraints
    * One request per connection in processing: as Kafka mutes a channel while its request is
      in flight, the next frame is not read before the previous response is written.
      Concurrency comes from connections: a peer that wants a long poll (a broker's Fetch of
      the metadata log) and heartbeats at once opens two. One exception, for throughput at
      acks=all: a Produce handler that has appended and only waits for the followers calls
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
    * The loop never spends seconds on one message: a request frame over
      :data:`~rackwise.net.framing.OFF_LOOP_BYTES` (but Produce and Fetch) is decoded, and its
      response encoded, on a worker thread (:func:`~rackwise.net.framing.decodes_off_the_loop`),
      so a 3 MB CreateTopics leaves the other connections answered meanwhile.
    * Bounded: a request holds its frame's grant of the listener's memory pool until its
      handler is done with the bytes (:mod:`rackwise.net.framing`).

Algorithm
    For each frame (:func:`~rackwise.net.framing.read_frame`): a ``Close`` ends the
    connection (logged at INFO, as Kafka logs a request it cannot parse), a ``Reply`` is
    written as is, a ``Request`` goes to the handler. The handler returns the response
    message (of the request's API and version), or :data:`NO_RESPONSE` to send nothing, or
    raises :class:`~rackwise.net.errors.CloseConnection`; the response is written with
    :func:`~rackwise.net.writer.send_response`. A Produce request runs as a task of its own,
    and the connection waits until its handler lets the next request in (or it is answered);
    each answer waits for the one before it (:func:`_after`) before it is written.

Worked example
    A producer sends Produce requests A and B (acks=all) and Metadata C on one connection. A's
    handler appends and calls :func:`let_next_request_in`; B is read, appends and waits too;
    C is handled at once, but its answer waits until A's and B's are written, and the
    connection's waiting list is empty again after it.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import logging
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from typing import Any, Final

from rackwise.common.logsafe import loggable
from rackwise.net.admission import ClientState
from rackwise.net.errors import CloseConnection
from rackwise.net.frames import FrameStream
from rackwise.net.framing import decodes_off_the_loop, is_produce, read_frame
from rackwise.net.limits import MemoryPool
from rackwise.net.sasl import Answer, Pass, Refuse, SaslGate, SaslServerConfig
from rackwise.net.writer import send_response
from rackwise.protocol import (
    Close,
    Listener,
    Reply,
    Request,
    api_name,
    decode_request,
    encode_response_buffers,
)
from rackwise.storage.files import RegionUnavailable

LOG: Final = logging.getLogger("rackwise.net")
MAX_WAITING_PRODUCES: Final = 5
"""Produce requests of one connection that may wait for their acknowledgements at once while
the connection's next request is read (Kafka's producers send at most 5 at a time by default,
``max.in.flight.requests.per.connection``)."""

_PARKED: ContextVar[asyncio.Future[None] | None] = ContextVar("rackwise_parked", default=None)


class NoResponse:
    """The type of :data:`NO_RESPONSE`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NO_RESPONSE"


NO_RESPONSE: Final = NoResponse()
"""What a handler returns for a request that gets no response (Produce with acks=0)."""

Handler = Callable[[Request], Awaitable[Any]]
"""``async def handler(request) -> response message | NO_RESPONSE``."""


def let_next_request_in() -> None:
    """Tell the server that the Produce request being handled has done all it does in order
    (its appends) and now only waits (for the followers, acks=all): its connection may read
    and start its next request. The responses are still written in the order of the requests.
    Does nothing outside a Produce handler."""
    parked = _PARKED.get()
    if parked is not None and not parked.done():
        parked.set_result(None)


def _close_if_failed(stream: FrameStream, answer: asyncio.Task[bool]) -> None:
    """Close the connection when ``answer`` (a Produce request's, answered while the
    connection waits for its next request) says it must close."""
    if not answer.cancelled() and (answer.exception() is not None or not answer.result()):
        stream.close()


def _encoded(request: Request, response: Any) -> list[Any]:
    return list(encode_response_buffers(request.header, response))


async def _after(previous: asyncio.Task[bool] | None) -> bool:
    """Whether the connection is still sound once ``previous`` (an earlier answer) is done."""
    if previous is None:
        return True
    await asyncio.wait([previous])
    return not previous.cancelled() and previous.exception() is None and previous.result()


class RequestPipeline:
    """One listener's way from a connection's frames to its answers (module docstring)."""

    def __init__(
        self,
        handler: Handler,
        listener: Listener,
        name: str,
        pool: MemoryPool,
        max_request_bytes: int,
        sasl: SaslServerConfig | None = None,
    ) -> None:
        self.handler = handler
        self.sasl = sasl
        self.listener = listener
        self.name = name
        self.pool = pool
        self.max_request_bytes = max_request_bytes

    async def serve(self, stream: FrameStream, client: ClientState) -> None:
        """Read, handle and answer the connection's requests until it must close."""
        loop = asyncio.get_running_loop()
        pool = self.pool
        waiting: collections.deque[asyncio.Task[bool]] = collections.deque()
        """Produce requests answered after their followers, oldest first."""
        gate = SaslGate(self.sasl, client.connection, self.name)
        try:
            while True:
                while waiting and waiting[0].done():
                    if not waiting.popleft().result():
                        return
                if len(waiting) >= MAX_WAITING_PRODUCES:
                    await asyncio.wait([waiting[0]])
                    continue
                body = await self._read(stream, client, gate)
                if body is None:
                    return
                if isinstance(body, Close):
                    self._log_close(client, body)
                    return
                size = len(body)
                granted = pool.needs_grant(size)
                previous = waiting[-1] if waiting else None
                if is_produce(body):
                    parked: asyncio.Future[None] = loop.create_future()
                    task = loop.create_task(
                        self._answer_in_turn(
                            body, stream, client, gate, previous, size, granted, parked
                        )
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
                        if not await self._answer(body, stream, client, gate, previous):
                            return
                    finally:
                        del body
                        if granted:
                            pool.release(size)
                    waiting.clear()  # its answer waited for theirs
                await asyncio.sleep(0)  # let the other connections take their turn
        finally:
            for task in waiting:
                task.cancel()

    async def _read(
        self, stream: FrameStream, client: ClientState, gate: SaslGate
    ) -> bytes | memoryview | Close | None:
        """The next frame; before authentication a smaller one, within the time left to
        authenticate (None once it ran out: the connection closes)."""
        deadline = gate.deadline()
        if deadline is None:
            return await read_frame(stream, client, self.pool, self.max_request_bytes)
        try:
            async with asyncio.timeout_at(deadline):
                return await read_frame(
                    stream, client, self.pool, gate.max_receive(self.max_request_bytes)
                )
        except TimeoutError:
            LOG.info(
                "%s: closing the connection from %s: it did not authenticate in time",
                self.name,
                client.connection.peer,
            )
            return None

    async def _answer_in_turn(
        self,
        data: bytes | memoryview,
        stream: FrameStream,
        client: ClientState,
        gate: SaslGate,
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
            return await self._answer(data, stream, client, gate, previous)
        finally:
            if not parked.done():
                parked.set_result(None)
            if granted:
                self.pool.release(size)

    async def _answer(
        self,
        data: bytes | memoryview,
        stream: FrameStream,
        client: ClientState,
        gate: SaslGate,
        previous: asyncio.Task[bool] | None = None,
    ) -> bool:
        """Handle one frame and write its answer once ``previous`` (the answer to the request
        before it, if still waiting) has written its own; False when the connection must
        close."""
        off_loop = decodes_off_the_loop(data)
        if off_loop:  # seconds of decoding for a huge admin request: the loop goes on
            outcome = await asyncio.to_thread(decode_request, data, self.listener)
        else:
            outcome = decode_request(data, self.listener)
        del data
        if isinstance(outcome, Close):
            await _after(previous)  # the answers before it go out first, as they would have
            self._log_close(client, outcome)
            return False
        if isinstance(outcome, Reply):
            if not gate.admit_reply(outcome.header.api_key):
                await _after(previous)
                self._log_close(client, Close(f"{outcome.reason} (before authenticating)"))
                return False
            LOG.debug(
                "%s: %s from %s refused: %s",
                self.name,
                loggable(outcome.header),
                client.connection.peer,
                loggable(outcome.reason),
            )
            return await _after(previous) and await self._write(stream, client, [outcome.frame])
        verdict = gate.admit(outcome)
        if not isinstance(verdict, Pass):
            return await self._gate_answer(verdict, outcome, stream, client, previous)
        client.busy += 1
        try:
            response = await self._handle(outcome, client.connection.peer, off_loop=off_loop)
        finally:
            client.busy -= 1
            client.last_active = asyncio.get_running_loop().time()
        if not await _after(previous) or response is None:
            return False
        if not isinstance(response, NoResponse):
            return await self._write(stream, client, response)
        return True

    async def _gate_answer(
        self,
        verdict: Answer | Refuse,
        request: Request,
        stream: FrameStream,
        client: ClientState,
        previous: asyncio.Task[bool] | None,
    ) -> bool:
        """Write what the authentication answered (:mod:`rackwise.net.sasl`); False when the
        connection must close."""
        if isinstance(verdict, Refuse):
            await _after(previous)
            self._log_close(client, Close(verdict.reason))
            return False
        if verdict.delay_s > 0:  # a failed login: answered later, at the cost of a timer
            await asyncio.sleep(verdict.delay_s)
        written = await _after(previous) and await self._write(
            stream, client, _encoded(request, verdict.response)
        )
        return written and not verdict.close

    async def _write(
        self, stream: FrameStream, client: ClientState, buffers: Sequence[Any]
    ) -> bool:
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

    async def _handle(
        self, request: Request, peer: str, *, off_loop: bool = False
    ) -> list[Any] | NoResponse | None:
        """The response as buffers to write, NO_RESPONSE, or None to close; encoded on a
        worker thread when ``off_loop`` (the request was one of those decoded there)."""
        what = f"{api_name(request.header.api_key)} v{request.header.api_version}"
        try:
            response = await self.handler(request)
            if isinstance(response, NoResponse):
                return NO_RESPONSE
            if off_loop:
                return await asyncio.to_thread(_encoded, request, response)
            return _encoded(request, response)
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

    def _log_close(self, client: ClientState, close: Close) -> None:
        LOG.info(
            "%s: closing the connection from %s: %s",
            self.name,
            client.connection.peer,
            loggable(close.reason),
        )
