"""Requests that wait for a condition (Kafka's ``DelayedOperationPurgatory`` with
``DelayedProduce`` and ``DelayedFetch``).

Goals
    A request that cannot be answered yet (acks=all before the high watermark reaches its
    records, a Fetch with less than ``min_bytes`` available, a DeleteRecords before every
    replica has moved its log start) registers the condition that completes it under the keys
    whose changes may complete it (its partitions). Whoever changes a partition (an append, a
    follower's fetch moving the high watermark, a leadership change) calls :meth:`check` with
    its key; a timer answers the request at its deadline. Nothing polls.

Constraints
    One event loop; conditions are plain synchronous callables that must be cheap (they run on
    every change of their keys). A condition that raises has held (the caller recomputes its
    answer and meets the error there). A wait on several partitions gives each its own
    condition (:meth:`Purgatory.wait`): a change of one partition then
    costs one condition per waiter, not one per partition of each waiter (an acks=all
    produce to four partitions was checked about seven times per partition it waited on).

Worked example
    ``await purgatory.wait({("t", 0): lambda: log.high_watermark >= 10}, 30.0, every=True)``
    returns True as soon as an append or fetch that moves t-0's high watermark to 10 calls
    ``purgatory.check(("t", 0))``, or False after 30 s. ``await purgatory.wait({("t", 0):
    hw_reached_0, ("t", 1): hw_reached_1}, 30.0, every=True)`` returns True once a check of
    each key has found its condition held (a check of t-0 after that calls neither again).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable, Mapping
from typing import Final, TypeVar

Condition = Callable[[], bool]
K = TypeVar("K", bound=Hashable)

MAX_WAIT_S: Final = 300.0
"""No wait lasts longer, whatever the request asked."""


class _Waiter:
    __slots__ = ("every", "future", "keys", "pending")

    def __init__(
        self,
        pending: dict[Hashable, Condition],
        every: bool,
        future: asyncio.Future[bool],
    ):
        self.pending = pending
        """Each key's condition, until it has held (``every``) or the wait is done."""
        self.every = every
        self.future = future
        self.keys = tuple(pending)


class Purgatory:
    """Waiters keyed by what may complete them (module docstring)."""

    def __init__(self) -> None:
        self._watchers: dict[Hashable, set[_Waiter]] = {}

    def __len__(self) -> int:
        return len({w for ws in self._watchers.values() for w in ws})

    async def wait(
        self, conditions: Mapping[K, Condition], timeout_s: float, *, every: bool
    ) -> bool:
        """Whether, before ``timeout_s``, every key's condition held (``every``: each is
        checked only on a :meth:`check` of its own key, and not again once it has held, as
        Kafka's ``DelayedProduce`` stops checking a partition once its acks are in), or any
        key's did (not ``every``)."""
        pending: dict[Hashable, Condition]
        if every:
            pending = {k: c for k, c in conditions.items() if not _holds(c)}
            if not pending:
                return True
        else:
            pending = {k: c for k, c in conditions.items()}
            if any(_holds(c) for c in pending.values()):
                return True
        if timeout_s <= 0:
            return False
        loop = asyncio.get_running_loop()
        waiter = _Waiter(pending, every, loop.create_future())
        for key in waiter.keys:
            self._watchers.setdefault(key, set()).add(waiter)
        # The deadline sets the future's result itself: a timer handle rather than wait_for's
        # and shield's futures and callbacks (a follower's fetch waits here every round).
        deadline = loop.call_later(min(timeout_s, MAX_WAIT_S), _expire, waiter.future)
        try:
            return await waiter.future
        finally:
            deadline.cancel()
            self._forget(waiter)
            if not waiter.future.done():
                waiter.future.cancel()

    def check(self, key: Hashable) -> int:
        """Check the conditions ``key``'s waiters hold for it; complete the waiters they
        complete; how many."""
        waiters = self._watchers.get(key)
        if not waiters:
            return 0
        done = []
        for waiter in list(waiters):
            condition = waiter.pending.get(key)
            if condition is None or waiter.future.done() or not _holds(condition):
                continue
            if waiter.every:
                del waiter.pending[key]
                if waiter.pending:
                    continue
            done.append(waiter)
        for waiter in done:
            waiter.future.set_result(True)
            self._forget(waiter)
        return len(done)

    def check_all(self) -> int:
        """Check every key (after a metadata change that may affect any of them)."""
        return sum(self.check(key) for key in list(self._watchers))

    def _forget(self, waiter: _Waiter) -> None:
        for key in waiter.keys:
            watchers = self._watchers.get(key)
            if watchers is None:
                continue
            watchers.discard(waiter)
            if not watchers:
                del self._watchers[key]


def _expire(future: asyncio.Future[bool]) -> None:
    if not future.done():
        future.set_result(False)


def _holds(condition: Condition) -> bool:
    """Whether ``condition`` holds; one that raises counts as holding (its waiter then finds
    the error itself)."""
    try:
        return condition()
    except Exception:
        return True
