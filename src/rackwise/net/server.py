"""An asyncio server speaking Kafka's protocol on one listener (Kafka's ``SocketServer`` with
its ``Acceptor``, ``Processor``s and the request channel, in one event loop).

Goals
    Accept connections on ``host:port`` (127.0.0.1 unless told otherwise), cut each stream into
    frames, hand each request to the handler and send back what it returns, with no client
    getting more than its share (:mod:`rackwise.net.limits`). :class:`KafkaServer` composes
    the parts, each in a module of its own:

    * :mod:`rackwise.net.admission`: accepting within the connection quotas, the connections
      tracked, the idle sweeper, :func:`~rackwise.net.admission.current_connection`;
    * :mod:`rackwise.net.framing`: a frame's size checked and its memory granted before its
      body is read;
    * :mod:`rackwise.net.pipelining`: one request per connection in processing (Produce
      requests waiting for their followers aside), the answers in order, the handler's
      outcomes;
    * :mod:`rackwise.net.writer`: a response's buffers and file regions straight to the
      socket (``writev``, ``sendfile``).

Constraints
    * Everything runs on one event loop and nothing here uses threads
      (:mod:`rackwise.net.io_thread` runs a server on a thread of its own); each connection
      yields to the others after each request (:mod:`rackwise.net.pipelining`).
    * Shutdown closes the listening sockets, then every connection; handlers in progress are
      cancelled.

Algorithm
    One accept task per listening socket, one task per connection (:meth:`KafkaServer._connection`):
    the accepted socket becomes a :class:`~rackwise.net.frames.FrameStream`, the pipeline
    serves it until it must close, and the connection is uncounted and closed. A sweeper task
    closes idle connections.

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
import socket
import ssl
from typing import Final

from rackwise.net.admission import Admission, ClientState, enter_connection
from rackwise.net.frames import FrameStream
from rackwise.net.limits import LogThrottle, MemoryPool, ServerLimits, since_last
from rackwise.net.pipelining import Handler, RequestPipeline
from rackwise.net.sasl import FAILURE_LOG_INTERVAL_S, SaslServerConfig
from rackwise.net.sockets import listen
from rackwise.net.tls import ListenerSecurity
from rackwise.protocol import DEFAULT_MAX_REQUEST_BYTES, Listener
from rackwise.security import KafkaPrincipal

LOG: Final = logging.getLogger("rackwise.net")
DEFAULT_HOST: Final = "127.0.0.1"
"""Where a listener without a host binds."""
PRINCIPALS_LOGGED: Final = 1000
"""A TLS listener logs the first connection of each principal, up to this many principals."""
CLOSE_WAIT_S: Final = 1.0
"""How long a closing connection waits for its transport to close."""


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
        sasl: SaslServerConfig | None = None,
        security: ListenerSecurity | None = None,
    ) -> None:
        self.handler = handler
        self.security = security or ListenerSecurity()
        self.listener = listener
        self.host = host or DEFAULT_HOST
        self.requested_port = port
        self.max_request_bytes = max_request_bytes
        self.name = name or listener.value
        self.limits = limits or ServerLimits()
        self.pool = MemoryPool(self.limits.queued_max_request_bytes)
        self._admission = Admission(
            self.name,
            self.limits,
            self._connection,
            listener_name=self.security.listener_name,
            security_protocol=self.security.security_protocol,
        )
        self._principals_seen: set[KafkaPrincipal] = set()
        self.failed_handshakes = 0
        """TLS handshakes refused or timed out on this listener (not those whose peer went
        away), and TLS peers no principal mapping rule names."""
        self.transport_authentications = 0
        """Connections whose transport authenticated them on a listener without SASL: each
        PLAINTEXT connection, each TLS one with its principal."""
        self._failure_log = LogThrottle(FAILURE_LOG_INTERVAL_S)
        self.sasl = sasl
        self._pipeline = RequestPipeline(
            handler, listener, self.name, self.pool, max_request_bytes, sasl
        )
        self._sockets: list[socket.socket] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._closed = asyncio.Event()

    # ---- lifecycle -----------------------------------------------------------------------

    async def start(self) -> None:
        """Bind and start accepting (raises OSError if the address is taken)."""
        if self._sockets:
            raise RuntimeError(f"BUG: the {self.name} server is already started")
        loop = asyncio.get_running_loop()
        self._sockets = await listen(self.host, self.requested_port)
        self._tasks = [
            loop.create_task(self._admission.accept_loop(sock)) for sock in self._sockets
        ]
        timeout_s = self.limits.idle_timeout_s
        if timeout_s is not None:
            self._tasks.append(loop.create_task(self._admission.sweep_idle(timeout_s)))

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
        return len(self._admission.clients)

    async def close(self) -> None:
        """Stop accepting, close every connection (cancelling handlers in progress), and wait
        until all is closed. Calling it again does nothing."""
        if self._closed.is_set():
            return
        self._closed.set()
        self._admission.close()
        tasks = self._tasks + list(self._admission.clients)
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

    # ---- connections ---------------------------------------------------------------------

    async def _connection(self, sock: socket.socket, client: ClientState) -> None:
        """An admitted connection's task, from its socket to its end."""
        enter_connection(client.connection)
        peer = client.connection.peer
        stream: FrameStream | None = None
        try:
            stream = await self._open(sock, client)
            if stream is None:
                return
            client.stream = stream
            await self._pipeline.serve(stream, client)
        except asyncio.CancelledError:
            pass
        except (ConnectionError, OSError, asyncio.IncompleteReadError) as e:
            LOG.debug("%s: connection from %s lost: %s", self.name, peer, e)
        finally:
            self._admission.discharge(client)
            if stream is None:
                sock.close()
            else:
                stream.close()
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(stream.wait_closed(), CLOSE_WAIT_S)

    async def _open(self, sock: socket.socket, client: ClientState) -> FrameStream | None:
        """The accepted socket as a stream, after the TLS handshake on a TLS listener (None
        when it fails: counted and logged, the socket closed by the caller)."""
        loop = asyncio.get_running_loop()
        tls = self.security.tls
        if tls is None:
            plain = (await loop.connect_accepted_socket(FrameStream, sock))[1]
            if self.sasl is None:
                self.transport_authentications += 1
            return plain
        # Bounded by the handshake timeout and by connections.max.idle.ms (the idle sweeper
        # cancels a connection that sends nothing, handshaking or not).
        timeout_s = self.security.handshake_timeout_s
        stream = FrameStream()  # uvloop answers with its TLS protocol, not this one
        try:
            transport, _ = await loop.connect_accepted_socket(
                lambda: stream, sock, ssl=tls, ssl_handshake_timeout=timeout_s
            )
        except (OSError, ssl.SSLError, ConnectionError) as e:
            # A peer gone before finishing (a port probe, a client giving up) is no failed
            # authentication; a refused certificate or protocol, or a stall, is.
            if isinstance(e, ssl.SSLError | TimeoutError):
                self.failed_handshakes += 1
                reason = str(e) or type(e).__name__
                self._log_failure(_failure_kind(e), client, f"SSL handshake failed: {reason}")
            else:
                peer = client.connection.peer
                LOG.debug("%s: TLS peer %s gone mid-handshake: %s", self.name, peer, e)
            return None
        try:
            client.connection.principal = self.security.principal(transport)
        except ValueError as e:  # no principal mapping rule applies
            self.failed_handshakes += 1
            self._log_failure("no principal", client, str(e))
            stream.close()
            return None
        if self.sasl is None:
            self.transport_authentications += 1
        principal = client.connection.principal
        if (
            principal not in self._principals_seen
            and len(self._principals_seen) < PRINCIPALS_LOGGED
        ):
            self._principals_seen.add(principal)
            LOG.info("%s: %s authenticated as %s", self.name, client.connection.peer, principal)
        return stream

    def _log_failure(self, kind: str, client: ClientState, reason: str) -> None:
        """One line for a failed TLS authentication, at most one per kind of failure every
        :data:`~rackwise.net.sasl.FAILURE_LOG_INTERVAL_S`, telling how many went unlogged
        since the last (a flood of refused handshakes costs the log a line per interval)."""
        unlogged = self._failure_log.due(kind)
        if unlogged is None:
            return
        LOG.info(
            "%s: Failed authentication with %s (%s)%s",
            self.name,
            client.connection.peer,
            reason,
            since_last(unlogged, "failed"),
        )

    @property
    def authentications(self) -> tuple[int, int, int]:
        """``(successful, failed, reauthentications)`` on this listener, as Kafka's
        ``socket-server-metrics`` count them: a connection is authenticated by its transport
        (PLAINTEXT; TLS with a principal) or, on a SASL listener, by its SASL login; a failed
        TLS handshake or SASL login is a failure; a SASL session renewed within its
        ``connections.max.reauth.ms`` is a re-authentication."""
        sasl = self.sasl
        if sasl is None:
            return self.transport_authentications, self.failed_handshakes, 0
        return sasl.successes, self.failed_handshakes + sasl.failures, sasl.reauthentications


def _failure_kind(error: BaseException) -> str:
    """What a failed handshake's log line is throttled by: OpenSSL's reason and, for a refused
    certificate, its verification code (each a short, fixed set: ``CERTIFICATE_VERIFY_FAILED``
    10 is an expired certificate), or the error's type."""
    reason = getattr(error, "reason", None)
    if not isinstance(reason, str):
        return type(error).__name__
    code = getattr(error, "verify_code", None)
    return f"{reason} {code}" if isinstance(code, int) else reason


async def start_server(
    handler: Handler,
    listener: Listener,
    *,
    host: str = DEFAULT_HOST,
    port: int = 0,
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
    name: str | None = None,
    limits: ServerLimits | None = None,
    sasl: SaslServerConfig | None = None,
    security: ListenerSecurity | None = None,
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
        sasl=sasl,
        security=security,
    )
    await server.start()
    return server
