"""What one listener may spend on its clients: connections, memory for requests in flight, time
a connection may stay idle (Kafka's ``SocketServer`` settings, its ``MemoryPool`` and its
``ConnectionQuotas``), and a log that speaks once per interval about a refusal that repeats.

Goals
    No client, however many connections it opens or however large the frames it announces,
    takes more than its share: a frame's body is read only once the memory pool grants its
    size, connections beyond ``max.connections`` (or ``max.connections.per.ip`` from one
    address) are closed as they arrive, and a refusal that repeats thousands of times a
    second (a full pool, a quota, no file descriptor left) writes one log line per interval.

Constraints
    * ``queued.max.request.bytes``: Kafka 4 defaults to -1 (no pool: every announced frame is
      read). rackwise defaults to 209715200 (twice ``socket.request.max.bytes``): a Python
      process turns a large frame into many times its size in objects, and two stalled frames
      of the largest size must not be able to grow it without bound (the idle timeout ends
      stalled frames). A value of 0 or below means no pool, as in Kafka.
    * The pool grants as Kafka's non-strict ``SimpleMemoryPool``: a request is granted whole
      as soon as any memory is free (the pool may go below zero), so a frame of the largest
      size is always read eventually; waiting requests are granted in arrival order. Frames
      that fit in one read (:data:`POOL_EXEMPT_BYTES`) never wait: their bytes are already in
      memory when their size is known, and small requests (heartbeats, ApiVersions) must not
      queue behind large ones.
    * ``connections.max.idle.ms`` (default 600000, Kafka's 10 minutes): a connection that has
      not sent or received a byte for that long is closed, also when it is in the middle of a
      frame; a connection whose request is being handled is not idle. Below 0: never.
    * ``max.connections`` and ``max.connections.per.ip`` (default 2147483647, Kafka's
      ``Integer.MAX_VALUE``): Kafka closes a connection over the per-address limit at once
      and stops accepting while the listener is full; rackwise closes both at once (an
      asyncio listener cannot leave connections in the backlog selectively).

Worked example
    A pool of 1000 bytes: a 600-byte grant leaves 400; a 900-byte grant still succeeds (-500);
    a third request waits until both are released. :class:`LogThrottle` with an interval of
    60 s: 1000 refusals in a second give one line, and the next line, a minute later, says
    999 more were refused meanwhile.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

CONNECTIONS_MAX_IDLE_MS: Final = "connections.max.idle.ms"
QUEUED_MAX_REQUEST_BYTES: Final = "queued.max.request.bytes"
MAX_CONNECTIONS: Final = "max.connections"
MAX_CONNECTIONS_PER_IP: Final = "max.connections.per.ip"
SERVER_LIMIT_KEYS: Final = frozenset(
    {CONNECTIONS_MAX_IDLE_MS, QUEUED_MAX_REQUEST_BYTES, MAX_CONNECTIONS, MAX_CONNECTIONS_PER_IP}
)
"""The configuration keys of :class:`ServerLimits`, as Kafka names them."""

NO_IDLE_TIMEOUT: Final = -1
"""``connections.max.idle.ms`` that never closes an idle connection."""
UNBOUNDED: Final = -1
"""``queued.max.request.bytes`` without a pool (Kafka's default)."""
UNLIMITED_CONNECTIONS: Final = 2_147_483_647
"""Kafka's ``Integer.MAX_VALUE``: the default of both connection limits."""
DEFAULT_CONNECTIONS_MAX_IDLE_MS: Final = 600_000
DEFAULT_QUEUED_MAX_REQUEST_BYTES: Final = 209_715_200
POOL_EXEMPT_BYTES: Final = 65_536
"""Frames of at most this many bytes (one read) never wait for the pool."""
DEFAULT_LOG_INTERVAL_S: Final = 60.0
"""How often a repeated refusal is logged."""


@dataclass(frozen=True, slots=True)
class ServerLimits:
    """One listener's limits (module docstring); the defaults are rackwise's."""

    connections_max_idle_ms: int = DEFAULT_CONNECTIONS_MAX_IDLE_MS
    """Milliseconds without a byte in either direction before a connection is closed;
    :data:`NO_IDLE_TIMEOUT` never."""
    queued_max_request_bytes: int = DEFAULT_QUEUED_MAX_REQUEST_BYTES
    """Bytes of request frames in flight on the listener; 0 or below (:data:`UNBOUNDED`):
    no pool."""
    max_connections: int = UNLIMITED_CONNECTIONS
    """Open connections on the listener."""
    max_connections_per_ip: int = UNLIMITED_CONNECTIONS
    """Open connections from one address."""
    log_interval_s: float = DEFAULT_LOG_INTERVAL_S
    """Seconds between two log lines about the same repeated refusal."""

    @property
    def idle_timeout_s(self) -> float | None:
        """The idle timeout in seconds, or None when connections never idle out."""
        if self.connections_max_idle_ms < 0:
            return None
        return self.connections_max_idle_ms / 1000


class MemoryPool:
    """Kafka's non-strict ``SimpleMemoryPool`` over one event loop (module docstring):
    :meth:`reserve` waits for a grant, :meth:`release` gives the bytes back."""

    def __init__(self, size_bytes: int) -> None:
        self.size_bytes = size_bytes
        self._available = size_bytes
        self._waiters: collections.deque[tuple[int, asyncio.Future[None]]] = collections.deque()

    @property
    def is_bounded(self) -> bool:
        return self.size_bytes > 0

    @property
    def available(self) -> int:
        """Bytes free (below zero after a grant larger than what was free)."""
        return self._available

    @property
    def num_waiting(self) -> int:
        return len(self._waiters)

    def needs_grant(self, num_bytes: int) -> bool:
        """Whether a frame of ``num_bytes`` must be granted before it is read."""
        return self.is_bounded and num_bytes > POOL_EXEMPT_BYTES

    async def reserve(self, num_bytes: int) -> None:
        """Wait until ``num_bytes`` are granted: at once when some memory is free and nobody
        waits, else in turn. Cancelled while waiting, nothing stays granted."""
        if not self.is_bounded:
            return
        if not self._waiters and self._available > 0:
            self._available -= num_bytes
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiter = (num_bytes, future)
        self._waiters.append(waiter)
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self.release(num_bytes)  # granted just before the cancellation
            else:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(waiter)
                self._grant()
            raise

    def release(self, num_bytes: int) -> None:
        """Give back what :meth:`reserve` granted."""
        if not self.is_bounded:
            return
        self._available += num_bytes
        self._grant()

    def _grant(self) -> None:
        while self._waiters and self._available > 0:
            num_bytes, future = self._waiters.popleft()
            if future.done():
                continue
            self._available -= num_bytes
            future.set_result(None)


class ConnectionQuotas:
    """Counts of open connections, in total and per address (Kafka's ``ConnectionQuotas``)."""

    def __init__(self, max_connections: int, max_connections_per_ip: int) -> None:
        self.max_connections = max_connections
        self.max_connections_per_ip = max_connections_per_ip
        self.total = 0
        self._by_ip: dict[str, int] = {}

    def count(self, ip: str) -> int:
        return self._by_ip.get(ip, 0)

    def try_open(self, ip: str) -> str | None:
        """Count a new connection from ``ip``; None, or why it must be closed (and is not
        counted)."""
        if self.total >= self.max_connections:
            return f"the listener already has the configured maximum of {self.total} connections"
        count = self._by_ip.get(ip, 0)
        if count >= self.max_connections_per_ip:
            return f"Too many connections from {ip} (maximum = {self.max_connections_per_ip})"
        self._by_ip[ip] = count + 1
        self.total += 1
        return None

    def close(self, ip: str) -> None:
        """Uncount a connection :meth:`try_open` counted."""
        count = self._by_ip.get(ip, 0)
        if count <= 1:
            self._by_ip.pop(ip, None)
        else:
            self._by_ip[ip] = count - 1
        self.total = max(self.total - 1, 0)


class LogThrottle:
    """Decides when a refusal that repeats is logged again: at most once per ``interval_s``
    per kind, and each line can tell how many were left unlogged since the previous one.
    ``clock`` defaults to the running event loop's, looked up at each decision, so a throttle
    can be made before its loop runs."""

    def __init__(self, interval_s: float, clock: Callable[[], float] | None = None) -> None:
        self.interval_s = interval_s
        self.clock = clock
        self._last: dict[str, float] = {}
        self._unlogged: dict[str, int] = {}

    def due(self, kind: str) -> int | None:
        """None when a line about ``kind`` was written less than an interval ago (this one is
        counted); otherwise the number of ``kind`` events left unlogged since the last line
        (the caller writes one now)."""
        now = self.clock() if self.clock is not None else asyncio.get_running_loop().time()
        last = self._last.get(kind)
        if last is not None and now - last < self.interval_s:
            self._unlogged[kind] = self._unlogged.get(kind, 0) + 1
            return None
        self._last[kind] = now
        return self._unlogged.pop(kind, 0)


def since_last(unlogged: int, what: str) -> str:
    """The end of a throttled line: `` (N more WHAT since the last line)``, or nothing when
    :meth:`LogThrottle.due` left none unlogged."""
    return f" ({unlogged} more {what} since the last line)" if unlogged else ""
