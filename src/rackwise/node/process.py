"""What every rackwise process shares: logging to stderr, the one ready line on stdout, and a
clean stop on SIGTERM or SIGINT.

Constraints
    * Log lines go to stderr, one event per line: ``<UTC time> <LEVEL> <role> <node id>
      <logger>: <message>``. stdout carries exactly one line, the ready line, so that whoever
      started the process can wait for it.
    * The ready line is ``rackwise <role> <node id> ready pid=<pid> listeners=<listener URL>,...``
      (e.g. ``rackwise controller 1 ready pid=4242 listeners=CONTROLLER://127.0.0.1:9093``);
      :func:`parse_ready_line` reads it back. Listeners show the port actually bound (a
      configured port 0 shows the one the system chose).
    * SIGTERM and SIGINT set the stop event given to the process' main coroutine, which then
      closes its listeners and files and returns its exit status (0 for a clean stop).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Final

from rackwise.net import loops
from rackwise.node.addresses import Endpoint

LOG_FORMAT: Final = "%(asctime)s %(levelname)s {role} {node_id} %(name)s: %(message)s"
READY_WORD: Final = "ready"


class _UtcFormatter(logging.Formatter):
    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        return f"{stamp}.{int(record.msecs):03d}Z"


def configure_logging(role: str, node_id: int, level: int = logging.INFO) -> None:
    """Send the ``rackwise`` loggers to stderr, one line per event."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_UtcFormatter(LOG_FORMAT.format(role=role, node_id=node_id)))
    root = logging.getLogger("rackwise")
    root.handlers[:] = [handler]
    root.setLevel(level)
    root.propagate = False


def ready_line(role: str, node_id: int, listeners: Sequence[Endpoint]) -> str:
    urls = ",".join(str(e) for e in listeners)
    return f"rackwise {role} {node_id} {READY_WORD} pid={os.getpid()} listeners={urls}"


@dataclass(frozen=True, slots=True)
class ReadyLine:
    """What a ready line says."""

    role: str
    node_id: int
    pid: int
    listeners: tuple[Endpoint, ...]


def parse_ready_line(line: str) -> ReadyLine | None:
    """The ready line's contents, or None if ``line`` is not a ready line."""
    parts = line.split()
    if len(parts) != 6 or parts[0] != "rackwise" or parts[3] != READY_WORD:
        return None
    try:
        pid = int(parts[4].removeprefix("pid="))
        endpoints = []
        for url in parts[5].removeprefix("listeners=").split(","):
            name, _, address = url.partition("://")
            host, _, port = address.rpartition(":")
            endpoints.append(Endpoint(name, host, int(port)))
        return ReadyLine(parts[1], int(parts[2]), pid, tuple(endpoints))
    except ValueError:
        return None


def report_ready(role: str, node_id: int, listeners: Sequence[Endpoint]) -> None:
    """Print the ready line on stdout, flushed at once."""
    print(ready_line(role, node_id, listeners), flush=True)


def run_until_stopped(main: Callable[[asyncio.Event], Awaitable[int]]) -> int:
    """Run ``main(stop)`` on a new event loop, with SIGTERM and SIGINT setting ``stop``;
    its return value is the exit status."""

    async def runner() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        try:
            return await main(stop)
        finally:
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(signum)

    return loops.run(runner())
