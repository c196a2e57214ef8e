"""The event loop of the processes: uvloop unless the environment asks for asyncio's own,
anything else refused naming the value; a process started as the nodes start runs on it."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest
import uvloop

from rackwise.net import loops


@pytest.mark.parametrize(
    ("value", "kind"),
    [(None, "uvloop"), ("", "uvloop"), ("uvloop", "uvloop"), ("asyncio", "asyncio")],
)
def test_the_environment_chooses_the_loop(
    monkeypatch: pytest.MonkeyPatch, value: str | None, kind: str
) -> None:
    if value is None:
        monkeypatch.delenv(loops.ENVIRONMENT_VARIABLE, raising=False)
    else:
        monkeypatch.setenv(loops.ENVIRONMENT_VARIABLE, value)
    assert loops.loop_kind() == kind
    loop = loops.new_event_loop()
    try:
        assert isinstance(loop, uvloop.Loop) == (kind == "uvloop")
    finally:
        loop.close()

    async def which() -> type:
        return type(asyncio.get_running_loop())

    assert issubclass(loops.run(which()), uvloop.Loop) == (kind == "uvloop")


def test_an_unknown_loop_is_refused_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(loops.ENVIRONMENT_VARIABLE, "trio")
    with pytest.raises(loops.EventLoopChoiceException, match="RACKWISE_EVENT_LOOP='trio'"):
        loops.new_event_loop()

    async def never() -> None:
        raise AssertionError("run")

    coro = never()
    with pytest.raises(loops.EventLoopChoiceException):
        loops.run(coro)
    assert coro.cr_frame is None  # closed, not left to warn that it was never awaited


def test_a_node_process_runs_its_main_and_its_threads_on_uvloop() -> None:
    program = """
import asyncio
from rackwise.node.loop_thread import LoopThread
from rackwise.node.process import run_until_stopped

async def main(stop):
    thread = LoopThread("probe")
    thread.start()
    print(type(asyncio.get_running_loop()).__module__, type(thread.loop).__module__)
    thread.stop()
    return 0

raise SystemExit(run_until_stopped(main))
"""
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.split() == ["uvloop", "uvloop"]
