"""Replication quotas: the rate of the bytes a broker sends to or takes from throttled
replicas, measured over sliding windows, against ``leader.replication.throttled.rate`` or
``follower.replication.throttled.rate`` (Kafka's ``ReplicationQuotaManager`` over its
``SimpleRate`` metric), and the throttled-replica lists of the topic configs.

Goals
    * The same arithmetic as Kafka's metrics: the bytes are summed in ``replication.quota.
      window.num`` samples of ``replication.quota.window.size.seconds`` each; the rate is their
      sum over the time since the oldest sample started, never over less than one sample's
      length; the quota is exceeded when that rate is above the bound (a rate equal to it is
      still acceptable). A sample not written to for the whole span of the windows is reset,
      so an idle quota starts afresh.
    * The throttled-replica lists as Kafka's broker reads them: ``*`` throttles every
      partition of the topic on every broker; ``0:1,1:2`` throttles partition 0 on broker 1
      and partition 1 on broker 2; an empty list throttles nothing.
    * How long a held-back replica should wait before the rate is back within the bound
      (as Kafka's ``QuotaUtils.throttleTime``: the excess over the bound, as a share of the
      bound, times the window), so that the holding back is no coarser than it must be.

Constraints
    Pure: no clock of its own (time comes in as milliseconds from a callable), no I/O. The
    bound is read at every check, so a new rate applies at once while the samples already
    recorded stay (Kafka's ``updateQuota`` reconfigures the metric, it does not reset it).

Worked example
    Bound 1,000,000 B/s, 11 samples of 1 s. At t=0 ms 1 MB is recorded: the rate is 1 MB over
    max(0, 1000) ms = 1,000,000 B/s, not above the bound, so a second MB goes out at t=10:
    2,000,000 B/s, exceeded; the wait is 1990 ms (2 MB take 2000 ms at the bound, 10 have
    passed). At t=1500 the rate is 2 MB / 1.5 s, still exceeded, with 500 ms to wait; at
    t=2000 it is 1,000,000 B/s and the next MB goes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

UNBOUNDED: Final = 2**63 - 1
"""Kafka's default rate, ``Long.MAX_VALUE``: no throttle."""
DEFAULT_WINDOW_NUM: Final = 11
"""``replication.quota.window.num``'s default."""
DEFAULT_WINDOW_SIZE_S: Final = 1
"""``replication.quota.window.size.seconds``' default."""
ALL_REPLICAS: Final = frozenset({-1})
"""A topic throttled on every partition (the list ``*``; Kafka's ``AllReplicas``)."""


@dataclass(slots=True)
class _Sample:
    start_ms: int
    last_event_ms: int
    value: float = 0.0

    def reset(self, now_ms: int) -> None:
        self.start_ms = now_ms
        self.last_event_ms = now_ms
        self.value = 0.0


class WindowedRate:
    """A sum over ``samples`` windows of ``window_ms`` and its rate per second (Kafka's
    ``SampledStat`` with ``WindowedSum``, measured by ``SimpleRate``)."""

    def __init__(self, samples: int, window_ms: int) -> None:
        if samples < 1 or window_ms < 1:
            raise ValueError(f"BUG: {samples} samples of {window_ms} ms")
        self.samples = samples
        self.window_ms = window_ms
        self._ring: list[_Sample] = []
        self._current = 0

    def record(self, value: float, now_ms: int) -> None:
        """Add ``value`` at ``now_ms`` (a new sample once the current one is a window old)."""
        sample = self._current_sample(now_ms)
        if now_ms - sample.start_ms >= self.window_ms:
            sample = self._advance(now_ms)
        sample.value += value
        sample.last_event_ms = now_ms

    def total(self, now_ms: int) -> float:
        """The sum over the samples still in the window."""
        self._purge(now_ms)
        return sum(s.value for s in self._ring)

    def elapsed_ms(self, now_ms: int) -> int:
        """The time since the oldest sample started."""
        self._purge(now_ms)
        if not self._ring:
            self._ring.append(_Sample(now_ms, now_ms))
        return now_ms - min(s.start_ms for s in self._ring)

    def window_size_ms(self, now_ms: int) -> int:
        """The time the rate divides by: :meth:`elapsed_ms`, at least one window."""
        return max(self.elapsed_ms(now_ms), self.window_ms)

    def rate(self, now_ms: int) -> float:
        """The sum per second over the window."""
        value = self.total(now_ms)
        return value / (self.window_size_ms(now_ms) / 1000.0)

    def _current_sample(self, now_ms: int) -> _Sample:
        if not self._ring:
            self._ring.append(_Sample(now_ms, now_ms))
        return self._ring[self._current]

    def _advance(self, now_ms: int) -> _Sample:
        # one sample more than configured: the one that overlaps the window's start
        self._current = (self._current + 1) % (self.samples + 1)
        if self._current >= len(self._ring):
            sample = _Sample(now_ms, now_ms)
            self._ring.append(sample)
            return sample
        sample = self._ring[self._current]
        sample.reset(now_ms)
        return sample

    def _purge(self, now_ms: int) -> None:
        expire_age = self.samples * self.window_ms
        for sample in self._ring:
            if now_ms - sample.last_event_ms >= expire_age:
                sample.reset(now_ms)


class ReplicationQuota:
    """One direction's quota on one broker (the leader's or the follower's): the rate of the
    throttled partitions' bytes against ``bound()`` in bytes per second, and which
    partitions are throttled."""

    def __init__(
        self,
        bound: Callable[[], int],
        clock_ms: Callable[[], int],
        *,
        samples: int = DEFAULT_WINDOW_NUM,
        window_s: int = DEFAULT_WINDOW_SIZE_S,
    ) -> None:
        self.bound = bound
        self.clock_ms = clock_ms
        self.rate = WindowedRate(samples, window_s * 1000)
        self._throttled: dict[str, frozenset[int]] = {}

    # ---- the throttled partitions ----------------------------------------------------------

    def is_throttled(self, topic: str, partition: int) -> bool:
        """Whether ``topic``-``partition`` is on this quota's list."""
        partitions = self._throttled.get(topic)
        if partitions is None:
            return False
        return partitions is ALL_REPLICAS or partition in partitions

    def mark_throttled(self, topic: str, partitions: frozenset[int]) -> None:
        """Throttle these partitions of ``topic`` (:data:`ALL_REPLICAS` for all), replacing
        the topic's previous list."""
        self._throttled[topic] = partitions

    def remove_throttle(self, topic: str) -> None:
        self._throttled.pop(topic, None)

    @property
    def throttled_topics(self) -> Mapping[str, frozenset[int]]:
        return self._throttled

    # ---- the rate --------------------------------------------------------------------------

    def record(self, value: int) -> None:
        """Count ``value`` bytes of throttled partitions, whether or not the quota is
        exceeded (Kafka counts the in-sync replicas' bytes too)."""
        if value > 0:
            self.rate.record(float(value), self.clock_ms())

    def is_exceeded(self) -> bool:
        """Whether the rate is above the bound now (never, for :data:`UNBOUNDED`)."""
        bound = self.bound()
        if bound >= UNBOUNDED:
            return False
        return self.rate.rate(self.clock_ms()) > bound

    def throttle_time_ms(self) -> float:
        """How long until the rate is back within the bound if nothing more is recorded (0
        when it is within; infinite for a bound of 0 with bytes counted): the time the sum
        takes at the bound, less the time already elapsed. It is Kafka's
        ``QuotaUtils.throttleTime`` past the first window; within it Kafka's formula divides
        by the whole window and comes out short, so the elapsed time is taken instead."""
        bound = self.bound()
        if bound >= UNBOUNDED:
            return 0.0
        now = self.clock_ms()
        if self.rate.rate(now) <= bound:
            return 0.0
        if bound <= 0:
            return math.inf
        return max(self.rate.total(now) * 1000 / bound - self.rate.elapsed_ms(now), 0.0)


def _digits(text: str) -> bool:
    return bool(text) and all("0" <= c <= "9" for c in text)


def throttled_partitions(value: str, broker_id: int) -> frozenset[int]:
    """The partitions a topic's throttled-replica list throttles on ``broker_id`` (Kafka's
    ``parseThrottledPartitions``): :data:`ALL_REPLICAS` for ``*``; an item that is not
    ``partition:broker`` is skipped."""
    value = value.strip()
    if value == "*":
        return ALL_REPLICAS
    out = set()
    for item in value.split(","):
        partition, colon, broker = item.strip().partition(":")
        partition, broker = partition.strip(), broker.strip()
        if colon and _digits(partition) and _digits(broker) and int(broker) == broker_id:
            out.add(int(partition))
    return frozenset(out)
