"""The purgatory: waits complete on a check of their key, or at their deadline."""

from __future__ import annotations

import asyncio

from rackwise.replica.purgatory import Purgatory


def test_completes_on_check_of_its_key() -> None:
    async def scenario() -> None:
        purgatory = Purgatory()
        state = {"hw": 0}
        waiting = asyncio.create_task(
            purgatory.wait([("t", 0)], lambda: state["hw"] >= 10, timeout_s=5.0)
        )
        await asyncio.sleep(0.01)
        assert len(purgatory) == 1
        state["hw"] = 10
        assert purgatory.check(("t", 1)) == 0  # another key: not checked
        assert not waiting.done()
        assert purgatory.check(("t", 0)) == 1
        assert await waiting is True
        assert len(purgatory) == 0

    asyncio.run(scenario())


def test_times_out_and_forgets() -> None:
    async def scenario() -> None:
        purgatory = Purgatory()
        started = asyncio.get_running_loop().time()
        assert await purgatory.wait([("t", 0)], lambda: False, timeout_s=0.05) is False
        assert asyncio.get_running_loop().time() - started >= 0.04
        assert len(purgatory) == 0

    asyncio.run(scenario())


def test_already_true_returns_at_once_and_errors_complete() -> None:
    async def scenario() -> None:
        purgatory = Purgatory()
        assert await purgatory.wait([("t", 0)], lambda: True, timeout_s=0) is True

        def broken() -> bool:
            raise RuntimeError("boom")

        assert await purgatory.wait([("t", 0)], broken, timeout_s=1.0) is True

    asyncio.run(scenario())


def test_one_wait_on_many_keys_is_completed_once() -> None:
    async def scenario() -> None:
        purgatory = Purgatory()
        ready = {"flag": False}
        waiting = asyncio.create_task(
            purgatory.wait([("a", 0), ("b", 0)], lambda: ready["flag"], timeout_s=5.0)
        )
        await asyncio.sleep(0.01)
        ready["flag"] = True
        assert purgatory.check_all() == 1
        assert await waiting is True
        assert purgatory.check(("b", 0)) == 0

    asyncio.run(scenario())


def test_a_cancelled_wait_is_forgotten_and_its_deadline_dropped() -> None:
    async def scenario() -> None:
        purgatory = Purgatory()
        loop = asyncio.get_running_loop()
        waiting = asyncio.create_task(purgatory.wait([("t", 0)], lambda: False, timeout_s=60))
        await asyncio.sleep(0.01)
        timers = len(loop._scheduled)  # type: ignore[attr-defined]
        waiting.cancel()
        try:
            await waiting
        except asyncio.CancelledError:
            pass
        else:
            raise AssertionError("the wait was not cancelled")
        assert len(purgatory) == 0
        assert purgatory.check(("t", 0)) == 0
        # The deadline's timer is cancelled with it (asyncio drops it from its heap lazily:
        # count the live ones).
        live = [h for h in loop._scheduled if not h.cancelled()]  # type: ignore[attr-defined]
        assert len(live) < timers

    asyncio.run(scenario())
