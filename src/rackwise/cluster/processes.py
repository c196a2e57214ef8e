"""The processes of a local cluster: starting a node detached, telling whether a pid is still
that node, stopping it, and the ports and signals around them. :mod:`rackwise.cluster.local`
decides which nodes to start and stop.

Constraints
    * A pid counts as a running node only while that process still runs with that node's config
      file on its command line (``/proc/PID/cmdline``), so a recycled pid is not taken for a
      node.
    * While ``cluster up`` starts nodes, SIGINT and SIGTERM raise :class:`Interrupted` in the
      main thread (:func:`interruptible`), except inside :meth:`Signals.held`, where they wait
      for its end: a node spawned there is recorded before the signal acts, so that whatever
      handles the interruption knows every process it started.

Worked example
    ``with interruptible() as signals:`` then ``with signals.held(): pid = start_node(d, node)``
    and a record of ``pid``; a Ctrl-C during the spawn raises ``Interrupted(SIGINT)`` once the
    ``held`` block ends, never between the spawn and the record.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import signal
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Final

from rackwise.cluster.plan import HOST, ClusterError, NodeSpec

PROPERTIES_FILE: Final = "server.properties"
LOG_FILE: Final = "server.log"
POLL_INTERVAL_S: Final = 0.1
STOP_SIGNALS: Final = (signal.SIGINT, signal.SIGTERM)


# -- ports -------------------------------------------------------------------------------------


EPHEMERAL_RANGE_FILE: Final = Path("/proc/sys/net/ipv4/ip_local_port_range")
LISTEN_PORTS_SPAN: Final = 12_000
"""How many ports below the kernel's ephemeral range :func:`free_ports` draws from."""


def _listen_ports() -> range:
    """The ports just below the kernel's ephemeral range, or none if it cannot be read.

    The kernel gives an outgoing connection, or a bind to port 0, a port of its ephemeral
    range (``ip_local_port_range``), so a port picked there may be taken by any client's
    connection between the pick and the node's bind. A port below that range is only ever
    taken by a bind that names it."""
    try:
        low = int(EPHEMERAL_RANGE_FILE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return range(0)
    return range(max(1024, low - LISTEN_PORTS_SPAN), low)


_TURN = itertools.count(os.getpid() * 7919)
"""Where :func:`free_ports` tries next in :func:`_listen_ports` (modulo its length): from a
place set by this process's id, so two processes picking at once start far apart, and in
turn, so one process hands a port out again only after the whole span."""


def _bound(host: str, port: int) -> socket.socket | None:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind((host, port))
    except OSError:
        s.close()
        return None
    return s


def free_ports(count: int, host: str = HOST) -> list[int]:
    """``count`` distinct ports of ``host`` that nothing is bound to right now, below the
    kernel's ephemeral range where it can be read (see :func:`_listen_ports`), else any the
    kernel gives."""
    ports = _listen_ports()
    sockets: list[socket.socket] = []
    try:
        for _ in range(len(ports)):
            if len(sockets) == count:
                break
            if (s := _bound(host, ports[next(_TURN) % len(ports)])) is not None:
                sockets.append(s)
        while len(sockets) < count:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sockets.append(s)
            s.bind((host, 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def address_in_use(node: NodeSpec) -> bool:
    """Whether ``node``'s listener could not bind its address now, as its server binds it
    (``SO_REUSEADDR``, so a port left in TIME_WAIT by a stopped node is not in use)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((node.host, node.port))
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                return True
            raise
    return False


# -- processes ---------------------------------------------------------------------------------


def config_path(directory: Path, node: NodeSpec) -> Path:
    return directory / node.name / PROPERTIES_FILE


def log_path(directory: Path, node: NodeSpec) -> Path:
    return directory / node.name / LOG_FILE


def is_running(pid: int | None, config: Path) -> bool:
    """Whether ``pid`` is a live process started with ``config`` on its command line."""
    if pid is None:
        return False
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reap it if it is our own exited child
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return False
    except OSError:
        return _pid_exists(pid)
    return str(config).encode() in cmdline.split(b"\0")


def _pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError as e:
        return e.errno == errno.EPERM
    return True


def start_node(directory: Path, node: NodeSpec) -> int:
    """Start ``node`` as a detached process (its own session) logging to its ``server.log``."""
    config = config_path(directory, node)
    log = log_path(directory, node)
    with open(log, "a", encoding="utf-8") as f:
        f.write(f"--- rackwise cluster up: starting {node.name} at {time.ctime()} ---\n")
    argv = [sys.executable, "-m", "rackwise.cli.main", node.role, "start", "--config", str(config)]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, str(log), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644),
        (os.POSIX_SPAWN_DUP2, 1, 2),
    ]
    return os.posix_spawn(sys.executable, argv, env, file_actions=actions, setsid=True)


def stop_node(pid: int, config: Path, grace_s: float) -> str:
    """SIGTERM, then SIGKILL if it still runs after ``grace_s``: "stopped" or "killed"."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    if _wait_gone(pid, config, grace_s):
        return "stopped"
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    if _wait_gone(pid, config, 5.0):
        return "killed"
    raise ClusterError(f"process {pid} survived SIGKILL")


def _wait_gone(pid: int, config: Path, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while is_running(pid, config):
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_INTERVAL_S)
    return True


# -- signals -----------------------------------------------------------------------------------


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived while ``cluster up`` started nodes. A BaseException, as
    KeyboardInterrupt is, so that no ``except Exception`` on the way swallows it; the exit
    status is ``128 + signum`` (130, 143)."""

    def __init__(self, signum: int, message: str | None = None) -> None:
        self.signum = signum
        word = "terminated" if signum == signal.SIGTERM else "interrupted"
        super().__init__(word if message is None else f"{word}: {message}")

    @property
    def exit_status(self) -> int:
        return 128 + self.signum


class Signals:
    """Turns SIGINT and SIGTERM into :class:`Interrupted` (module docstring)."""

    def __init__(self) -> None:
        self._holding = 0
        self._pending: int | None = None
        self.ignoring = False

    def handle(self, signum: int, frame: FrameType | None) -> None:
        if self.ignoring:
            return
        if self._holding:
            self._pending = signum
            return
        raise Interrupted(signum)

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """A block no signal interrupts; one that arrived meanwhile acts at its end."""
        self._holding += 1
        try:
            yield
        finally:
            self._holding -= 1
        if not self._holding and self._pending is not None and not self.ignoring:
            signum, self._pending = self._pending, None
            raise Interrupted(signum)

    @contextlib.contextmanager
    def ignored(self) -> Iterator[None]:
        """A block that runs to its end whatever arrives (the clean-up after a signal)."""
        before, self.ignoring = self.ignoring, True
        try:
            yield
        finally:
            self.ignoring = before


@contextlib.contextmanager
def interruptible() -> Iterator[Signals]:
    """SIGINT and SIGTERM raise :class:`Interrupted` for the block, then the handlers that were
    there before come back. Off the main thread (where Python cannot set handlers) signals are
    left as they are."""
    signals = Signals()
    try:
        previous = {signum: signal.signal(signum, signals.handle) for signum in STOP_SIGNALS}
    except ValueError:  # not the main thread
        yield signals
        return
    try:
        yield signals
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
