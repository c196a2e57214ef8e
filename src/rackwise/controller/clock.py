"""The controller's clock, injected: a monotonic time in milliseconds.

Leases are measured with it (Kafka's ``BrokerHeartbeatManager`` reads ``Time.nanoseconds()``,
monotonic); the process layer passes ``lambda: time.monotonic_ns() // 1_000_000`` and tests pass
a :class:`ManualClock`, which moves only when told to.
"""

from __future__ import annotations

from collections.abc import Callable

Clock = Callable[[], int]
"""A monotonic clock in milliseconds: never goes back."""


class ManualClock:
    """A clock that stands still until :meth:`advance` (Kafka's ``MockTime``)."""

    def __init__(self, now_ms: int = 0) -> None:
        self.now_ms = now_ms

    def __call__(self) -> int:
        return self.now_ms

    def advance(self, ms: int) -> int:
        """Move on by ``ms`` (not negative); the new time."""
        if ms < 0:
            raise ValueError(f"a monotonic clock cannot go back ({ms} ms)")
        self.now_ms += ms
        return self.now_ms
