"""The event loop every broker and controller process runs its connections on.

Goals
    A broker spends a good part of its time in the event loop itself: waking on sockets,
    calling the transports' callbacks, scheduling the tasks of each request. uvloop (libuv
    under asyncio's interface) does that work in C; at acks=1 the same broker spent 13% less
    CPU per byte on it than on asyncio's own loop (BENCHMARKS.md, the data path).

Constraints
    * Everything above the loop is plain asyncio: transports, protocols, tasks, futures. The
      code relies on no type of asyncio's own transports (uvloop's are not subclasses of them)
      and on nothing uvloop lacks.
    * ``RACKWISE_EVENT_LOOP=asyncio`` in a process's environment gives it asyncio's own loop
      (to compare, or to debug with asyncio's debug mode); ``uvloop`` (the default) is the
      other value. Anything else is refused naming the value.
    * Tests that start a server inside their own loop run on asyncio's loop, processes on
      uvloop: the network layer is exercised on both.

Worked example
    ``run(main())`` runs ``main()`` on a new uvloop loop and closes it, as ``asyncio.run``
    does; ``new_event_loop()`` makes one for a thread of its own.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Coroutine
from typing import Any, Final, TypeVar

import uvloop

from rackwise.common.errors import RackwiseError

T = TypeVar("T")
ENVIRONMENT_VARIABLE: Final = "RACKWISE_EVENT_LOOP"
LOOPS: Final = ("uvloop", "asyncio")


class EventLoopChoiceException(RackwiseError, ValueError):
    """``RACKWISE_EVENT_LOOP`` names no event loop rackwise runs on."""


def loop_kind() -> str:
    """The event loop this process's environment asks for (``uvloop`` when it asks none)."""
    kind = os.environ.get(ENVIRONMENT_VARIABLE, "uvloop").strip() or "uvloop"
    if kind not in LOOPS:
        raise EventLoopChoiceException(
            f"{ENVIRONMENT_VARIABLE}={kind!r} names no event loop: use one of {', '.join(LOOPS)}"
        )
    return kind


def new_event_loop() -> asyncio.AbstractEventLoop:
    """A new event loop of the kind :func:`loop_kind` names."""
    if loop_kind() == "asyncio":
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def run(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coro)`` on a loop from :func:`new_event_loop`."""
    try:
        loop_kind()
    except EventLoopChoiceException:
        coro.close()  # never run: no "never awaited" warning after the error
        raise
    with asyncio.Runner(loop_factory=new_event_loop) as runner:
        return runner.run(coro)
