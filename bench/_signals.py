"""How a benchmark ends when it is stopped: SIGTERM and SIGINT unwind it like an exception,
so that every ``finally`` runs (the clusters and servers a benchmark starts are stopped in
one), and it exits 143 or 130 with one line on stderr, as rackwise's commands do.

A benchmark's script ends with ``raise SystemExit(stopping(main))``.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable
from types import FrameType


class Stopped(BaseException):
    """The benchmark was sent a signal: unwinds it as KeyboardInterrupt would."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _stop(signum: int, _frame: FrameType | None) -> None:
    raise Stopped(signum)


def stopping(main: Callable[[], int | None]) -> int:
    """``main()``'s exit status; 128 + the signal's number if SIGTERM or SIGINT stops it, once
    its ``finally`` blocks have run."""
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    try:
        return main() or 0
    except Stopped as stopped:
        print(f"error: stopped by {stopped}", file=sys.stderr)
        return 128 + stopped.signum
