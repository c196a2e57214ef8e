"""The listener's limits as values: the memory pool grants as Kafka's non-strict pool does and
in arrival order, connection counts, and the throttle that logs a repeated refusal once per
interval."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rackwise.net.limits import (
    POOL_EXEMPT_BYTES,
    UNBOUNDED,
    ConnectionQuotas,
    LogThrottle,
    MemoryPool,
    ServerLimits,
    since_last,
)
from tests.net.helpers import run


def test_defaults_are_kafkas_except_the_pool() -> None:
    limits = ServerLimits()
    assert limits.connections_max_idle_ms == 600_000
    assert limits.idle_timeout_s == 600.0
    assert limits.max_connections == limits.max_connections_per_ip == 2**31 - 1
    assert limits.queued_max_request_bytes == 2 * 104_857_600
    assert ServerLimits(connections_max_idle_ms=-1).idle_timeout_s is None


def test_a_grant_may_overdraw_but_the_next_one_waits_in_order() -> None:
    async def scenario() -> list[str]:
        pool = MemoryPool(1000)
        order: list[str] = []
        await pool.reserve(600)
        await pool.reserve(900)  # granted while anything is free: Kafka's non-strict pool
        assert pool.available == -500

        async def wait(name: str, size: int) -> None:
            await pool.reserve(size)
            order.append(name)

        first = asyncio.ensure_future(wait("first", 300))
        await asyncio.sleep(0)
        second = asyncio.ensure_future(wait("second", 10))
        await asyncio.sleep(0.01)
        assert order == [] and pool.num_waiting == 2
        pool.release(600)  # 100 free: the first in line gets its 300
        await asyncio.sleep(0.01)
        assert order == ["first"] and pool.available == -200
        pool.release(900)
        await asyncio.gather(first, second)
        assert pool.available == 690
        return order

    assert run(scenario()) == ["first", "second"]


def test_a_cancelled_waiter_holds_nothing() -> None:
    async def scenario() -> int:
        pool = MemoryPool(100)
        await pool.reserve(100)
        waiting = asyncio.ensure_future(pool.reserve(50))
        await asyncio.sleep(0.01)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        pool.release(100)
        return pool.available

    assert run(scenario()) == 100


def test_no_pool_never_waits_and_small_frames_are_exempt() -> None:
    async def scenario() -> int:
        pool = MemoryPool(UNBOUNDED)
        for _ in range(3):
            await pool.reserve(10**9)
        return pool.available

    assert run(scenario()) == UNBOUNDED
    bounded = MemoryPool(10)
    assert not bounded.needs_grant(POOL_EXEMPT_BYTES)
    assert bounded.needs_grant(POOL_EXEMPT_BYTES + 1)
    assert not MemoryPool(0).needs_grant(10**9)


@given(st.lists(st.integers(1, 5000), min_size=1, max_size=30))
def test_every_grant_comes_back_and_nobody_waits_forever(sizes: list[int]) -> None:
    async def scenario() -> tuple[int, int]:
        pool = MemoryPool(4096)
        granted: list[int] = []

        async def use(size: int) -> None:
            await pool.reserve(size)
            granted.append(size)
            # Each grant starts with something free: the pool is overdrawn by less than the
            # largest grant.
            assert 4096 - pool.available < 4096 + max(sizes)
            await asyncio.sleep(0)
            pool.release(size)

        await asyncio.gather(*(use(size) for size in sizes))
        return len(granted), pool.available

    assert run(scenario()) == (len(sizes), 4096)


def test_connection_quotas_count_per_address_and_in_total() -> None:
    quotas = ConnectionQuotas(max_connections=3, max_connections_per_ip=2)
    assert quotas.try_open("10.0.0.1") is None
    assert quotas.try_open("10.0.0.1") is None
    assert quotas.try_open("10.0.0.1") == "Too many connections from 10.0.0.1 (maximum = 2)"
    assert quotas.try_open("10.0.0.2") is None
    assert quotas.try_open("10.0.0.3") == (
        "the listener already has the configured maximum of 3 connections"
    )
    quotas.close("10.0.0.1")
    assert (quotas.count("10.0.0.1"), quotas.total) == (1, 2)
    assert quotas.try_open("10.0.0.3") is None


def test_log_throttle_speaks_once_per_interval_and_counts_the_rest() -> None:
    now = [0.0]
    throttle = LogThrottle(60.0, lambda: now[0])
    assert throttle.due("quota") == 0
    assert [throttle.due("quota") for _ in range(999)] == [None] * 999
    assert throttle.due("accept-24") == 0  # another kind has its own interval
    now[0] = 59.9
    assert throttle.due("quota") is None
    now[0] = 60.0
    assert throttle.due("quota") == 1000
    assert throttle.due("quota") is None


def test_log_throttle_without_a_clock_keeps_the_running_loops_time() -> None:
    throttle = LogThrottle(60.0)  # made before any loop runs, as a server's are

    async def twice() -> tuple[int | None, int | None]:
        return throttle.due("failed"), throttle.due("failed")

    assert run(twice()) == (0, None)
    with pytest.raises(RuntimeError, match="no running event loop"):
        throttle.due("failed")


def test_since_last_names_what_went_unlogged_only_when_something_did() -> None:
    assert since_last(0, "failed") == ""
    assert since_last(3, "failed attempts") == " (3 more failed attempts since the last line)"
