"""The purgatory: waits complete on a check of their key, or at their deadline."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import hypothesis.strategies as st
from hypothesis import given, settings

from rackwise.replica.purgatory import Purgatory


def test_completes_on_check_of_its_key() -> None:
    async def scenario() -> None:
        purgatory = Purgatory()
        state = {"hw": 0}
        waiting = asyncio.create_task(
            purgatory.wait({("t", 0): lambda: state["hw"] >= 10}, 5.0, every=True)
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
        assert await purgatory.wait({("t", 0): lambda: False}, 0.05, every=True) is False
        assert asyncio.get_running_loop().time() - started >= 0.04
        assert len(purgatory) == 0

    asyncio.run(scenario())


def test_already_true_returns_at_once_and_errors_complete() -> None:
    async def scenario() -> None:
        purgatory = Purgatory()
        assert await purgatory.wait({("t", 0): lambda: True}, 0, every=True) is True

        def broken() -> bool:
            raise RuntimeError("boom")

        assert await purgatory.wait({("t", 0): broken}, 1.0, every=True) is True

    asyncio.run(scenario())


def test_one_wait_on_many_keys_is_completed_once() -> None:
    async def scenario() -> None:
        purgatory = Purgatory()
        ready = {"flag": False}
        either = dict.fromkeys([("a", 0), ("b", 0)], lambda: ready["flag"])
        waiting = asyncio.create_task(purgatory.wait(either, 5.0, every=False))
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
        waiting = asyncio.create_task(purgatory.wait({("t", 0): lambda: False}, 60, every=True))
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


def test_each_partition_is_checked_on_its_own_changes_and_not_again_once_in() -> None:
    async def scenario() -> None:
        purgatory = Purgatory()
        ready = {"a": False, "b": False}
        calls = {"a": 0, "b": 0}

        def condition(name: str) -> Callable[[], bool]:
            def holds() -> bool:
                calls[name] += 1
                return ready[name]

            return holds

        conditions = {("t", 0): condition("a"), ("t", 1): condition("b")}
        waiting = asyncio.create_task(purgatory.wait(conditions, 5.0, every=True))
        await asyncio.sleep(0.01)
        assert calls == {"a": 1, "b": 1}  # each checked once on arrival
        ready["a"] = True
        assert purgatory.check(("t", 1)) == 0  # b's key: only b's condition runs
        assert calls == {"a": 1, "b": 2}
        assert purgatory.check(("t", 0)) == 0  # a is in; b is not yet
        assert purgatory.check(("t", 0)) == 0
        assert calls == {"a": 2, "b": 2}  # a not called again once it held
        ready["b"] = True
        assert purgatory.check(("t", 1)) == 1
        assert await waiting is True
        assert len(purgatory) == 0

    asyncio.run(scenario())


def _flip(flags: list[bool], op: str, key: int) -> bool:
    """Set or clear ``flags[key]`` as ``op`` says; whether ``op`` is a check instead."""
    if op == "check":
        return True
    flags[key] = op == "set"
    return False


@settings(max_examples=200, deadline=None)
@given(
    every=st.booleans(),
    initial=st.lists(st.booleans(), min_size=1, max_size=4),
    steps=st.lists(st.tuples(st.sampled_from(["set", "clear", "check"]), st.integers(0, 3))),
)
def test_waits_complete_exactly_when_the_model_says(
    every: bool, initial: list[bool], steps: list[tuple[str, int]]
) -> None:
    """Model: with ``every``, done once each key's condition was true when it was checked
    (on arrival, or at a check of that key); without, done at the first such moment for any
    key. A condition once true for ``every`` is never consulted again."""
    keys = list(range(len(initial)))

    async def scenario() -> tuple[list[bool], bool]:
        purgatory = Purgatory()
        flags = list(initial)
        conditions = {k: (lambda k=k: flags[k]) for k in keys}
        waiting = asyncio.create_task(purgatory.wait(conditions, 5.0, every=every))
        await asyncio.sleep(0)
        seen = [waiting.done()]
        for op, index in steps:
            key = index % len(keys)
            if _flip(flags, op, key):
                purgatory.check(key)
            await asyncio.sleep(0)
            seen.append(waiting.done())
        if not waiting.done():
            waiting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await waiting
        return seen, len(purgatory) == 0

    flags = list(initial)
    held = list(flags)
    done = all(held) if every else any(held)
    expected = [done]
    for op, index in steps:
        key = index % len(keys)
        if _flip(flags, op, key) and not done and flags[key]:
            held[key] = True
            done = all(held) if every else True
        expected.append(done)
    seen, forgotten = asyncio.run(scenario())
    assert seen == expected
    assert forgotten
