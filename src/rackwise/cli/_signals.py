"""Running a command's coroutine so that SIGTERM and Ctrl-C end it cleanly.

SIGTERM cancels the command's task from the event loop (``loop.add_signal_handler``), so the
command's own ``finally`` blocks run and its connections close in order: an exception raised
from a plain ``signal.signal`` handler lands wherever the interpreter happens to be, which may
be inside a transport's ``send``, where asyncio takes it for a socket error. A SIGTERM that
arrives before the loop runs is kept and acted on as soon as it does.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Coroutine
from typing import Any, Final

EXIT_INTERRUPTED: Final = 128 + signal.SIGINT
EXIT_TERMINATED: Final = 128 + signal.SIGTERM


class _Terminated(Exception):
    """The command's task was cancelled by SIGTERM."""


def run_signalled(main: Coroutine[Any, Any, int]) -> int:
    """Run ``main`` to its status; Ctrl-C gives ``error: interrupted`` and 130, SIGTERM
    ``error: terminated`` and 143, each after ``main`` has cleaned up."""
    import asyncio  # noqa: PLC0415  (kept out of the command's start-up)

    if threading.current_thread() is not threading.main_thread():
        return asyncio.run(main)  # signals go to the main thread only
    early: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, _frame: early.append(signum))
    terminated: list[bool] = []

    async def guarded() -> int:
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()

        def on_term() -> None:
            terminated.append(True)
            task.cancel()

        loop.add_signal_handler(signal.SIGTERM, on_term)
        if early:
            on_term()
        try:
            status = await main
        except asyncio.CancelledError:
            if terminated:
                raise _Terminated from None
            raise
        finally:
            loop.remove_signal_handler(signal.SIGTERM)
        if terminated:  # the cancel came as main was finishing, and was lost in a callee
            raise _Terminated
        return status

    try:
        return asyncio.run(guarded())
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED
    except _Terminated:
        print("error: terminated", file=sys.stderr, flush=True)
        return EXIT_TERMINATED
    finally:
        signal.signal(signal.SIGTERM, previous)
