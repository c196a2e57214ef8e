"""A second event loop on its own thread, for a process's lifecycle traffic (Kafka runs its
broker heartbeats on their own thread, ``BrokerLifecycleManager``'s event queue, so that no
amount of client work delays them).

Goals
    Heartbeats and the metadata fetch they depend on never wait behind client requests: they
    run on a loop that client connections do not share. The GIL still interleaves the two
    threads, but Python hands it over every few milliseconds (``sys.getswitchinterval``), so a
    heartbeat is delayed by at most that, not by a queue of requests.

Constraints
    * Coroutines are submitted from the main loop with :meth:`LoopThread.run` (awaitable there)
      and cancelled with the thread's :meth:`LoopThread.stop`.
    * State shared between the loops is only read by one side and replaced whole by the other
      (an immutable image, an int epoch); a change is signalled to the main loop with
      :class:`Signal`, which is safe to fire from either thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Final, TypeVar

from rackwise.net import loops

T = TypeVar("T")
JOIN_TIMEOUT_S: Final = 5.0


class LoopThread:
    """An event loop running on a daemon thread of its own (module docstring)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.loop = loops.new_event_loop()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._started = False

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()
        # Cancel what is left, then close.
        pending = asyncio.all_tasks(self.loop)
        for task in pending:
            task.cancel()
        if pending:
            self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self.loop.close()

    def start(self) -> None:
        if not self._started:
            self._started = True
            self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> asyncio.Future[T]:
        """Run ``coro`` on this thread's loop; a future of the calling loop for its result."""
        self.start()
        return asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self.loop))

    def call(self, fn: Callable[[], object]) -> None:
        """Call ``fn`` on this thread's loop, soon."""
        self.loop.call_soon_threadsafe(fn)

    def stop(self) -> None:
        """Stop the loop (its tasks are cancelled) and wait for the thread."""
        if not self._started:
            self.loop.close()
            return
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(JOIN_TIMEOUT_S)


class Signal:
    """A change another thread can announce to waiters on one loop: :meth:`fire` from any
    thread; :meth:`wait_until` on the owning loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._event = asyncio.Event()

    def fire(self) -> None:
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            self._wake()
        else:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
                self.loop.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        event, self._event = self._event, asyncio.Event()
        event.set()

    async def wait_until(self, predicate: Callable[[], bool], timeout_s: float) -> bool:
        """Wait until ``predicate()`` holds (checked at each :meth:`fire`), at most
        ``timeout_s``; whether it holds."""
        deadline = self.loop.time() + timeout_s
        while not predicate():
            remaining = deadline - self.loop.time()
            if remaining <= 0:
                return False
            event = self._event
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), remaining)
        return True
