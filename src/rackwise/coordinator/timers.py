"""The timers, clock and background writes of the classic groups, on the broker's event loop.

A timer has a key (its kind, the group id, and a member id for a session) and replaces the
timer of the same key; it fires only if its guard still holds (the group is still the live
one of a partition still loaded here), and an action that raises is logged, never let out
into the event loop. Background writes (stores of group metadata) are tasks kept until they
end, so that closing cancels them. The rules are given the time by a :data:`Clock`, the wall
clock's milliseconds unless another is given."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any, Final

from rackwise.groups.classic_effects import TimerKey

LOG: Final = logging.getLogger("rackwise.coordinator")

Clock = Callable[[], int]
"""The time in milliseconds since the epoch, as the groups' records and states keep it."""


def wall_clock_ms() -> int:
    """The wall clock, in milliseconds since the epoch (Kafka's ``time.milliseconds()``)."""
    return int(time.time() * 1000)


class GroupTimers:
    """Keyed one-shot timers and background tasks (module docstring)."""

    def __init__(self) -> None:
        self._timers: dict[TimerKey, asyncio.TimerHandle] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def at(
        self,
        key: TimerKey,
        delay_ms: int,
        still_current: Callable[[], bool],
        action: Callable[[], None],
    ) -> None:
        """Run ``action`` after ``delay_ms``, replacing the timer of the same key, if
        ``still_current()`` then holds."""

        def fire() -> None:
            self._timers.pop(key, None)
            if not still_current():
                return
            try:
                action()
            except Exception:  # a bug here must not end the event loop's other work
                LOG.exception("group %s: timer %s failed", key[1], key[0])

        self.cancel(key)
        loop = asyncio.get_running_loop()
        self._timers[key] = loop.call_later(max(delay_ms, 0) / 1000, fire)

    def cancel(self, key: TimerKey) -> None:
        handle = self._timers.pop(key, None)
        if handle is not None:
            handle.cancel()

    def cancel_group(self, group_id: str) -> None:
        """Every timer of ``group_id``."""
        for key in [k for k in self._timers if k[1] == group_id]:
            self.cancel(key)

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` in the background until it ends or :meth:`close` cancels it."""
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for key in list(self._timers):
            self.cancel(key)
