"""The replication quota's arithmetic, as Kafka's SimpleRate over a SampledStat computes it:
golden steps, the throttled-replica lists as Kafka's broker parses them, and
properties of a sender held back by the quota: over any 10 s past the first window it sends
within two chunks and two steps of the bound, and after the wait the quota names it is
acceptable again."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackwise.replica.quota import (
    ALL_REPLICAS,
    UNBOUNDED,
    ReplicationQuota,
    WindowedRate,
    throttled_partitions,
)


class Clock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


def quota_of(bound: int, clock: Clock, samples: int = 11, window_s: int = 1) -> ReplicationQuota:
    return ReplicationQuota(lambda: bound, clock, samples=samples, window_s=window_s)


def test_the_worked_example() -> None:
    clock = Clock()
    quota = quota_of(1_000_000, clock)
    quota.record(1_000_000)
    assert quota.rate.rate(0) == 1_000_000
    assert not quota.is_exceeded()  # equal to the bound is acceptable
    clock.now = 10
    quota.record(1_000_000)
    assert quota.is_exceeded()
    assert quota.throttle_time_ms() == pytest.approx(1990.0)
    clock.now = 1500
    assert quota.is_exceeded()
    assert quota.throttle_time_ms() == pytest.approx(500.0)
    clock.now = 2000
    assert not quota.is_exceeded()
    assert quota.throttle_time_ms() == 0.0


def test_the_window_is_at_least_one_sample_and_samples_roll() -> None:
    rate = WindowedRate(samples=3, window_ms=1000)
    rate.record(100, 0)
    assert rate.window_size_ms(200) == 1000
    rate.record(100, 1000)  # a new sample: the first is a window old
    rate.record(100, 2000)
    assert rate.total(2000) == 300
    assert rate.window_size_ms(2500) == 2500
    rate.record(100, 3000)  # a fourth slot: the ring holds samples + 1
    assert rate.total(3000) == 300  # the first is three windows old: reset
    assert rate.window_size_ms(3000) == 2000
    rate.record(100, 4000)  # reuses the first slot
    assert rate.total(4000) == 300
    assert rate.window_size_ms(4000) == 2000


def test_idle_samples_expire() -> None:
    rate = WindowedRate(samples=11, window_ms=1000)
    rate.record(5_000, 0)
    assert rate.total(10_999) == 5_000
    assert rate.total(11_000) == 0
    assert rate.window_size_ms(11_000) == 1000


def test_unbounded_and_zero_bounds() -> None:
    clock = Clock()
    free = quota_of(UNBOUNDED, clock)
    free.record(10**12)
    assert not free.is_exceeded() and free.throttle_time_ms() == 0.0
    shut = quota_of(0, clock)
    assert not shut.is_exceeded()  # nothing counted yet: 0 is within 0
    shut.record(1)
    assert shut.is_exceeded() and shut.throttle_time_ms() == math.inf


def test_a_new_bound_applies_to_the_samples_already_counted() -> None:
    clock = Clock()
    bound = [1_000_000]
    quota = ReplicationQuota(lambda: bound[0], clock)
    quota.record(1_500_000)
    assert quota.is_exceeded()
    bound[0] = 2_000_000
    assert not quota.is_exceeded()


@pytest.mark.parametrize(
    ("value", "broker", "expected"),
    [
        ("*", 1, ALL_REPLICAS),
        (" * ", 7, ALL_REPLICAS),
        ("0:1,1:2,2:1", 1, frozenset({0, 2})),
        ("0:1,1:2,2:1", 2, frozenset({1})),
        ("0:1, 1:2", 2, frozenset({1})),
        ("0:1", 3, frozenset()),
        ("", 1, frozenset()),
        ("0:1,x:1,3", 1, frozenset({0})),
    ],
)
def test_throttled_partitions(value: str, broker: int, expected: frozenset[int]) -> None:
    assert throttled_partitions(value, broker) == expected


def test_is_throttled_and_removed() -> None:
    quota = quota_of(1, Clock())
    quota.mark_throttled("t", frozenset({0, 2}))
    quota.mark_throttled("all", ALL_REPLICAS)
    assert quota.is_throttled("t", 2) and not quota.is_throttled("t", 1)
    assert quota.is_throttled("all", 99) and not quota.is_throttled("u", 0)
    quota.remove_throttle("t")
    assert not quota.is_throttled("t", 2)


@settings(max_examples=40, deadline=None)
@given(
    bound=st.integers(min_value=100_000, max_value=10_000_000),
    chunk_share=st.floats(min_value=0.01, max_value=0.5),
    step_ms=st.integers(min_value=5, max_value=50),
    samples=st.integers(min_value=2, max_value=11),
)
def test_a_held_back_sender_keeps_to_the_bound(
    bound: int, chunk_share: float, step_ms: int, samples: int
) -> None:
    """A sender that sends a chunk whenever the quota is not exceeded, checking every step:
    over every 10 s past the first window it sends the bound's worth within two chunks and
    the steps the samples rolling off cost: a new sample starts at the first check after
    the last one's window, up to a step late, and the rate loses that step's worth in the
    share one sample has of the window, ten times in 10 s (at least two steps' worth)."""
    clock = Clock()
    quota = quota_of(bound, clock, samples=samples)
    chunk = max(1, int(bound * chunk_share))
    sent = [0]
    totals: list[tuple[int, int]] = []
    while clock.now <= 25_000:
        while not quota.is_exceeded():
            quota.record(chunk)
            sent[0] += chunk
        totals.append((clock.now, sent[0]))
        clock.now += step_ms
    slack = 2 * chunk + bound * step_ms / 1000 * max(2, 10 / samples)
    by_time = dict(totals)
    for t, total in totals:
        if t < 1000 or t + 10_000 not in by_time:
            continue
        moved = by_time[t + 10_000] - total
        assert abs(moved - bound * 10) <= slack + 1, (t, moved)


@settings(max_examples=100, deadline=None)
@given(
    bound=st.integers(min_value=1_000, max_value=10_000_000),
    records=st.lists(
        st.tuples(st.integers(min_value=0, max_value=3000), st.integers(1, 50_000_000)),
        min_size=1,
        max_size=30,
    ),
)
def test_the_throttle_time_is_the_wait_the_quota_needs(
    bound: int, records: list[tuple[int, int]]
) -> None:
    """After waiting the throttle time (with nothing more counted) the quota is acceptable, or,
    where a sample expired meanwhile, after waiting the new throttle time; a moment before, it
    is not (unless samples expired meanwhile)."""
    clock = Clock()
    quota = quota_of(bound, clock)
    for dt, value in records:
        clock.now += dt
        quota.record(value)
    wait = quota.throttle_time_ms()
    assert (wait > 0) == quota.is_exceeded()
    if wait == 0:
        return
    start = clock.now
    clock.now = start + math.ceil(wait) + 1
    if quota.is_exceeded():
        # A sample expired during the wait and took its part of the window with it, so the
        # rate divides by less time: only then is one wait short, and waiting again suffices.
        assert quota.rate.total(clock.now) < sum(v for _, v in records)
        clock.now += math.ceil(quota.throttle_time_ms()) + 1
        assert not quota.is_exceeded()
    clock.now = start + max(0, math.floor(wait) - 1)
    rate = quota.rate
    if rate.total(clock.now) == sum(v for _, v in records) and wait > 2:
        assert quota.is_exceeded()
