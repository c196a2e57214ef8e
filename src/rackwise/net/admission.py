"""Who a listener lets in and keeps: accepting connections within Kafka's connection quotas,
the connections it tracks, and the sweeper that closes the idle ones (Kafka's ``Acceptor``
with its ``ConnectionQuotas``, and the idle check of its ``Selector``).

Goals
    Accept every connection the limits allow (:mod:`rackwise.net.limits`) and hand it to the
    server's connection task; refuse the others at once; close a connection silent for
    ``connections.max.idle.ms``, even in the middle of a frame. Each kind of refusal is logged
    once per interval, with the number refused since the previous line.

Constraints
    * A connection beyond ``max.connections`` or ``max.connections.per.ip`` is closed as it is
      accepted (an asyncio listener cannot leave connections in the backlog selectively).
    * While the process has no file descriptor left, accepting pauses (connections wait in the
      listen backlog) and is retried every :data:`ACCEPT_RETRY_DELAY_S`: Linux keeps the
      listener readable, so retrying at once would spin.
    * A connection whose request is being handled is not idle, whatever the time
      (:attr:`ClientState.busy`); every read and write counts as activity.
    * Handlers may ask :func:`current_connection` which connection their request came on (the
      controller binds a broker's registration to it); the connection task says which with
      :func:`enter_connection`.

Algorithm
    One accept task per listening socket (``loop.sock_accept``) counts each connection with
    the quotas and starts the server's task for it; that task uncounts it when it ends
    (:meth:`Admission.discharge`). The sweeper wakes every quarter of the idle timeout (within
    :data:`SWEEP_MIN_INTERVAL_S` and :data:`SWEEP_MAX_INTERVAL_S`) and cancels the task of each
    connection idle for longer.

Worked example
    With ``max.connections.per.ip=2``, a third connection from 127.0.0.1 is closed as it is
    accepted and logged as ``rejected the connection from 127.0.0.1:50312: Too many
    connections from 127.0.0.1 (maximum = 2)``; a thousand more within the log interval give
    no line, and the next line says ``(1000 more rejected since the last line)``.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable, Coroutine
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Final

from rackwise.net.frames import FrameStream
from rackwise.net.limits import ConnectionQuotas, LogThrottle, ServerLimits, since_last
from rackwise.net.sockets import RESOURCE_ERRNOS, peer_address
from rackwise.security import ANONYMOUS, KafkaPrincipal
from rackwise.security.protocols import PLAINTEXT

LOG: Final = logging.getLogger("rackwise.net")
ACCEPT_RETRY_DELAY_S: Final = 0.1
"""The pause before accepting again after the process ran out of file descriptors."""
SWEEP_MAX_INTERVAL_S: Final = 1.0
SWEEP_MIN_INTERVAL_S: Final = 0.01
"""Bounds of the idle sweeper's period (a quarter of the idle timeout, within them)."""

_CURRENT: ContextVar[ClientConnection | None] = ContextVar("rackwise_connection", default=None)


@dataclass(eq=False, slots=True)
class ClientConnection:
    """A connection as its handlers see it; two are the same only if they are the same object
    (a reconnecting peer is a new connection)."""

    connection_id: int
    """Unique per server, in order of acceptance."""
    peer: str
    """``ip:port`` of the peer."""
    ip: str
    listener_name: str = PLAINTEXT
    """The listener the connection came in on (Kafka's listener name, ``PLAINTEXT``,
    ``CONTROLLER``...): answers that list endpoints list this listener's."""
    security_protocol: str = PLAINTEXT
    """What the listener speaks: ``PLAINTEXT``, ``SSL``, ``SASL_PLAINTEXT`` or ``SASL_SSL``."""
    principal: KafkaPrincipal = ANONYMOUS
    """Who the peer authenticated as (set by the listener's authentication; :data:`ANONYMOUS`
    until then and on a PLAINTEXT listener)."""


def current_connection() -> ClientConnection | None:
    """The connection whose request the calling task is handling (None outside a handler)."""
    return _CURRENT.get()


def request_listener(default: str) -> str:
    """The listener name of the connection whose request the calling task is handling, or
    ``default`` outside a handler."""
    connection = _CURRENT.get()
    return default if connection is None else connection.listener_name


def enter_connection(connection: ClientConnection) -> None:
    """Make ``connection`` what :func:`current_connection` tells the calling task (a
    connection's task, and the handlers it runs) from now on."""
    _CURRENT.set(connection)


@dataclass(eq=False, slots=True)
class ClientState:
    """A connection's state as the server tracks it: written by the connection's task as it
    reads, handles and writes, read by the idle sweeper."""

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


ConnectionTask = Callable[[socket.socket, ClientState], Coroutine[Any, Any, None]]
"""What serves an accepted connection, from its socket to its end."""


class Admission:
    """One listener's accepting, quotas and idle sweeping (module docstring); ``serve`` runs
    each admitted connection."""

    def __init__(
        self,
        name: str,
        limits: ServerLimits,
        serve: ConnectionTask,
        *,
        listener_name: str = PLAINTEXT,
        security_protocol: str = PLAINTEXT,
    ) -> None:
        self.name = name
        self.listener_name = listener_name
        self.security_protocol = security_protocol
        self.limits = limits
        self.serve = serve
        self.quotas = ConnectionQuotas(limits.max_connections, limits.max_connections_per_ip)
        self.clients: dict[asyncio.Task[None], ClientState] = {}
        """The connections open, by their task."""
        self.closed = False
        """Whether the server closed (:meth:`close`): nothing more is admitted."""
        self._throttle = LogThrottle(limits.log_interval_s)
        self._next_id = 0

    def close(self) -> None:
        """Admit nothing more (the server is closing)."""
        self.closed = True

    # ---- accepting -----------------------------------------------------------------------

    async def accept_loop(self, sock: socket.socket) -> None:
        """Accept connections on ``sock`` until the server closes."""
        loop = asyncio.get_running_loop()
        while True:
            try:
                accepted, address = await loop.sock_accept(sock)
            except OSError as e:
                if self.closed:
                    return
                self._accept_failed(e)
                # Out of descriptors, Linux keeps the listener readable: pause, or it spins.
                await asyncio.sleep(ACCEPT_RETRY_DELAY_S if e.errno in RESOURCE_ERRNOS else 0)
                continue
            self._admit(accepted, address)

    def _accept_failed(self, error: OSError) -> None:
        unlogged = self._throttle.due(f"accept-{error.errno}")
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
                since_last(unlogged, "failed attempts"),
            )
        else:
            LOG.warning(
                "%s: accept failed: %s%s", self.name, error, since_last(unlogged, "failures")
            )

    def _admit(self, sock: socket.socket, address: Any) -> None:
        ip, peer = peer_address(address)
        if self.closed:
            sock.close()
            return
        refusal = self.quotas.try_open(ip)
        if refusal is not None:
            sock.close()
            unlogged = self._throttle.due("quota")
            if unlogged is not None:
                LOG.info(
                    "%s: rejected the connection from %s: %s%s",
                    self.name,
                    peer,
                    refusal,
                    since_last(unlogged, "rejected"),
                )
            return
        self._next_id += 1
        connection = ClientConnection(
            self._next_id, peer, ip, self.listener_name, self.security_protocol
        )
        loop = asyncio.get_running_loop()
        client = ClientState(connection, loop.time())
        task = loop.create_task(self.serve(sock, client))
        self.clients[task] = client

    def discharge(self, client: ClientState) -> None:
        """Forget a connection whose task ends (called from that task)."""
        task = asyncio.current_task()
        if task is not None:
            self.clients.pop(task, None)
        self.quotas.close(client.connection.ip)

    # ---- idle connections ------------------------------------------------------------------

    async def sweep_idle(self, timeout_s: float) -> None:
        """Close every connection silent for longer than ``timeout_s`` and not busy."""
        interval_s = min(SWEEP_MAX_INTERVAL_S, max(timeout_s / 4, SWEEP_MIN_INTERVAL_S))
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(interval_s)
            now = loop.time()
            for task, client in list(self.clients.items()):
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
