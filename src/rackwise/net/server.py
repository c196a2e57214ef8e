"""An asyncio server speaking Kafka's protocol on one listener (Kafka's ``SocketServer`` with
its ``Processor``s and the request channel, in one event loop).

Goals
    Accept connections on ``host:port`` (127.0.0.1 unless told otherwise), cut each stream into
    frames, turn each frame into an outcome with :func:`rackwise.protocol.decode_request`, hand
    a :class:`~rackwise.protocol.Request` to the handler and send back what it returns. Bad
    input never takes the server down: what the protocol layer says to close is closed, a
    handler that raises closes its connection (one log line), and every other connection keeps
    being served.

Constraints
    * Requests of one connection are handled one at a time and answered in order: as Kafka
      mutes a channel while its request is in flight, the next frame is not decoded before the
      previous response is written. Concurrency comes from connections: a peer that wants a
      long poll (FetchMetadataLog) and heartbeats at once opens two.
    * Bounded buffering: a connection holds at most one frame being received (at most
      ``max_request_bytes``, Kafka's ``socket.request.max.bytes``) plus one read chunk, and
      reading stops while a request is handled or a response waits for the peer to drain it.
    * Shutdown closes the listening socket, then every connection; handlers in progress are
      cancelled. Nothing here uses threads.

Algorithm
    One task per connection: read a chunk, feed the :class:`~rackwise.protocol.FrameDecoder`;
    for each frame, decode it: a ``Close`` ends the connection (logged at INFO, as Kafka logs a
    request it cannot parse), a ``Reply`` is written as is, a ``Request`` goes to the handler.
    The handler returns the response message (of the request's API and version), or
    :data:`NO_RESPONSE` to send nothing, or raises :class:`~rackwise.net.errors.CloseConnection`.

Worked example
    ``server = await start_server(handler, Listener.CONTROLLER, port=0)`` binds a free port of
    127.0.0.1; ``server.port`` tells which. A peer sending the 15-byte frame
    ``00 00 00 0b 00 12 00 09 00 00 00 07 ff ff 00`` (ApiVersions v9) gets the v0
    UNSUPPORTED_VERSION reply of :mod:`rackwise.protocol.server` and stays connected; a peer
    announcing a frame of -1 bytes is disconnected; both leave other connections untouched.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final

from rackwise.net.errors import CloseConnection
from rackwise.protocol import (
    DEFAULT_MAX_REQUEST_BYTES,
    Close,
    FrameDecoder,
    Listener,
    Reply,
    Request,
    api_name,
    decode_request,
    encode_response,
)

LOG: Final = logging.getLogger("rackwise.net")
DEFAULT_HOST: Final = "127.0.0.1"
"""Where a listener without a host binds."""
READ_CHUNK_BYTES: Final = 65_536
"""The most bytes read from a connection at once."""


class _NoResponse:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NO_RESPONSE"


NO_RESPONSE: Final = _NoResponse()
"""What a handler returns for a request that gets no response (Produce with acks=0)."""

Handler = Callable[[Request], Awaitable[Any]]
"""``async def handler(request) -> response message | NO_RESPONSE``."""


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
    ) -> None:
        self.handler = handler
        self.listener = listener
        self.host = host or DEFAULT_HOST
        self.requested_port = port
        self.max_request_bytes = max_request_bytes
        self.name = name or listener.value
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._closed = asyncio.Event()

    # ---- lifecycle -----------------------------------------------------------------------

    async def start(self) -> None:
        """Bind and start accepting (raises OSError if the address is taken)."""
        if self._server is not None:
            raise RuntimeError(f"BUG: the {self.name} server is already started")
        self._server = await asyncio.start_server(
            self._accept, self.host, self.requested_port, reuse_address=True
        )

    @property
    def port(self) -> int:
        """The port bound (the one the system chose when asked for 0)."""
        return self.address[1]

    @property
    def address(self) -> tuple[str, int]:
        """``(host, port)`` bound."""
        if self._server is None or not self._server.sockets:
            raise RuntimeError(f"BUG: the {self.name} server is not started")
        sockname = self._server.sockets[0].getsockname()
        return str(sockname[0]), int(sockname[1])

    @property
    def num_connections(self) -> int:
        return len(self._connections)

    async def close(self) -> None:
        """Stop accepting, close every connection (cancelling handlers in progress), and wait
        until all is closed. Calling it again does nothing."""
        if self._closed.is_set():
            return
        self._closed.set()
        if self._server is not None:
            self._server.close()
        tasks = list(self._connections)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 5.0)

    async def wait_closed(self) -> None:
        """Return once :meth:`close` has been called."""
        await self._closed.wait()

    async def __aenter__(self) -> KafkaServer:
        if self._server is None:
            await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ---- connections ---------------------------------------------------------------------

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is None or self._closed.is_set():
            writer.close()
            return
        self._connections.add(task)
        peer = _peer(writer)
        try:
            await self._serve(reader, writer, peer)
        except asyncio.CancelledError:
            pass
        except (ConnectionError, OSError) as e:
            LOG.debug("%s: connection from %s lost: %s", self.name, peer, e)
        finally:
            self._connections.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(writer.wait_closed(), 1.0)

    async def _serve(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: str
    ) -> None:
        decoder = FrameDecoder(self.max_request_bytes)
        while True:
            chunk = await reader.read(READ_CHUNK_BYTES)
            if not chunk:
                return
            frames = decoder.feed(chunk)
            for data in frames.frames:
                if not await self._answer(data, writer, peer):
                    return
            if frames.close is not None:
                self._log_close(peer, frames.close)
                return

    async def _answer(self, data: bytes, writer: asyncio.StreamWriter, peer: str) -> bool:
        """Handle one frame; False when the connection must close."""
        outcome = decode_request(data, self.listener)
        if isinstance(outcome, Close):
            self._log_close(peer, outcome)
            return False
        if isinstance(outcome, Reply):
            LOG.debug("%s: %s from %s refused: %s", self.name, outcome.header, peer, outcome.reason)
            writer.write(outcome.frame)
            await writer.drain()
            return True
        response = await self._handle(outcome, peer)
        if response is None:
            return False
        if isinstance(response, bytes):
            writer.write(response)
            await writer.drain()
        return True

    async def _handle(self, request: Request, peer: str) -> bytes | _NoResponse | None:
        """The response frame, NO_RESPONSE, or None to close."""
        what = f"{api_name(request.header.api_key)} v{request.header.api_version}"
        try:
            response = await self.handler(request)
            if isinstance(response, _NoResponse):
                return NO_RESPONSE
            data: bytes = encode_response(request.header, response)
            return data
        except CloseConnection as e:
            LOG.info("%s: closing the connection from %s after %s: %s", self.name, peer, what, e)
        except asyncio.CancelledError:
            raise
        except Exception as e:
            LOG.error(
                "%s: error handling %s from %s (closing the connection): %s: %s",
                self.name,
                what,
                peer,
                type(e).__name__,
                " ".join(str(e).split()),
            )
        return None

    def _log_close(self, peer: str, close: Close) -> None:
        LOG.info("%s: closing the connection from %s: %s", self.name, peer, close.reason)


async def start_server(
    handler: Handler,
    listener: Listener,
    *,
    host: str = DEFAULT_HOST,
    port: int = 0,
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
    name: str | None = None,
) -> KafkaServer:
    """A started :class:`KafkaServer` (see there)."""
    server = KafkaServer(
        handler,
        listener,
        host=host,
        port=port,
        max_request_bytes=max_request_bytes,
        name=name,
    )
    await server.start()
    return server


def _peer(writer: asyncio.StreamWriter) -> str:
    peer = writer.get_extra_info("peername")
    if isinstance(peer, tuple) and len(peer) >= 2:
        return f"{peer[0]}:{peer[1]}"
    return str(peer)
