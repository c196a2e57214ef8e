"""A listener served on a thread of its own, its requests handled on the loop that started it
(Kafka's network threads, apart from its request handler threads).

Goals
    A process whose event loop may be busy for a while (the controller running a large command
    in one piece) keeps reading its connections: frames are read, decoded, and seen by an
    ``on_arrival`` hook on the I/O thread at once, whatever the other loop is doing. The
    controller records there that a broker's heartbeat arrived, so that a lease is never lost
    to the controller's own slowness (Kafka's controller likewise notes a heartbeat's contact
    time without waiting for its event queue, KAFKA-17793).

Constraints
    * The handler runs on the caller's loop, exactly as with :func:`~rackwise.net.start_server`:
      the I/O thread hands it each request and waits for its answer, so a connection still has
      one request in processing at a time. A handler cancelled on the I/O side (its connection
      closed) is cancelled on the caller's loop too.
    * :func:`~rackwise.net.current_connection` works in the handler: the request is handed
      over in the context of its connection's task.
    * ``on_arrival`` runs on the I/O thread: it must be quick and touch only state made for
      sharing (a dict behind a lock). So does ``answer_on_io``, which may answer a request
      there and then (the controller's ApiVersions, so that a broker reconnecting while the
      loop is busy gets to send its heartbeat).
    * :meth:`ThreadedKafkaServer.close` closes the server on its thread, then stops the thread.

Worked example
    ``server = await start_threaded_server(handler, Listener.CONTROLLER, port=0,
    on_arrival=note)``: ``server.port`` is bound; a heartbeat frame reaches ``note(request)`` on
    the I/O thread while the caller's loop sleeps in a long synchronous call, and
    ``handler(request)`` runs on the caller's loop once it is free.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Final, TypeVar

from rackwise.net import loops
from rackwise.net.limits import ServerLimits
from rackwise.net.pipelining import Handler
from rackwise.net.sasl import SaslServerConfig
from rackwise.net.server import DEFAULT_HOST, KafkaServer
from rackwise.net.tls import ListenerSecurity
from rackwise.protocol import DEFAULT_MAX_REQUEST_BYTES, Listener, Request

T = TypeVar("T")
JOIN_TIMEOUT_S: Final = 5.0

ArrivalHook = Callable[[Request], None]
"""Called on the I/O thread with every request, before it is handed to the handler."""

AnswerHook = Callable[[Request], Any]
"""Called on the I/O thread after the arrival hook: the response to send without waiting for
the caller's loop, or None to hand the request over."""


class ThreadedKafkaServer:
    """A :class:`~rackwise.net.KafkaServer` on a thread of its own (module docstring). Build it
    with :func:`start_threaded_server`; :meth:`close` ends it."""

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
        on_arrival: ArrivalHook | None = None,
        answer_on_io: AnswerHook | None = None,
        sasl: SaslServerConfig | None = None,
        security: ListenerSecurity | None = None,
    ) -> None:
        self.handler = handler
        self.on_arrival = on_arrival
        self.answer_on_io = answer_on_io
        self.name = name or listener.value
        self.server = KafkaServer(
            self._hand_over,
            listener,
            host=host,
            port=port,
            max_request_bytes=max_request_bytes,
            name=name,
            limits=limits,
            sasl=sasl,
            security=security,
        )
        self.io_loop = loops.new_event_loop()
        self._thread = threading.Thread(target=self._main, name=f"{self.name} io", daemon=True)
        self._caller: asyncio.AbstractEventLoop | None = None
        self._closed = False

    def _main(self) -> None:
        asyncio.set_event_loop(self.io_loop)
        try:
            self.io_loop.run_forever()
        finally:
            self.io_loop.close()

    async def start(self) -> None:
        """Start the thread and bind (raises OSError if the address is taken)."""
        self._caller = asyncio.get_running_loop()
        self._thread.start()
        try:
            await self._on_io(self.server.start())
        except BaseException:
            self._stop_thread()
            raise

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def address(self) -> tuple[str, int]:
        return self.server.address

    @property
    def num_connections(self) -> int:
        return self.server.num_connections

    async def close(self) -> None:
        """Close every connection and the listener on the I/O thread, then stop the thread.
        Calling it again does nothing."""
        if self._closed:
            return
        self._closed = True
        if self._thread.is_alive():
            with contextlib.suppress(RuntimeError):
                await self._on_io(self.server.close())
            self._stop_thread()
            await asyncio.to_thread(self._thread.join, JOIN_TIMEOUT_S)

    async def __aenter__(self) -> ThreadedKafkaServer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _stop_thread(self) -> None:
        with contextlib.suppress(RuntimeError):
            self.io_loop.call_soon_threadsafe(self.io_loop.stop)

    async def _on_io(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` on the I/O loop; its result, awaited on the caller's loop."""
        future = asyncio.run_coroutine_threadsafe(coroutine, self.io_loop)
        return await asyncio.wrap_future(future)

    async def _hand_over(self, request: Request) -> Any:
        """On the I/O thread: note the arrival, then have the handler answer on the caller's
        loop (in this connection's context) and wait for it."""
        if self.on_arrival is not None:
            self.on_arrival(request)
        if self.answer_on_io is not None:
            response = self.answer_on_io(request)
            if response is not None:
                return response
        caller = self._caller
        assert caller is not None
        # run_coroutine_threadsafe schedules the handler in a copy of this task's context, so
        # that current_connection() names the connection on the caller's loop too.
        future = asyncio.run_coroutine_threadsafe(self._handle(request), caller)
        return await asyncio.wrap_future(future)

    async def _handle(self, request: Request) -> Any:
        return await self.handler(request)


async def start_threaded_server(
    handler: Handler,
    listener: Listener,
    *,
    host: str = DEFAULT_HOST,
    port: int = 0,
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
    name: str | None = None,
    limits: ServerLimits | None = None,
    on_arrival: ArrivalHook | None = None,
    answer_on_io: AnswerHook | None = None,
    sasl: SaslServerConfig | None = None,
    security: ListenerSecurity | None = None,
) -> ThreadedKafkaServer:
    """A started :class:`ThreadedKafkaServer` (see there)."""
    server = ThreadedKafkaServer(
        handler,
        listener,
        host=host,
        port=port,
        max_request_bytes=max_request_bytes,
        name=name,
        limits=limits,
        on_arrival=on_arrival,
        answer_on_io=answer_on_io,
        sasl=sasl,
        security=security,
    )
    await server.start()
    return server
