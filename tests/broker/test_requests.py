"""The broker's dispatch table: ApiVersions alone is answered before the broker serves, every
forwarded API goes to the controller, and an API without an entry closes the connection only
once the broker serves."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from rackwise.broker.forwarding import FORWARDED
from rackwise.broker.requests import ENTRIES, answer
from rackwise.net import CloseConnection
from rackwise.protocol import ApiKey


def test_only_api_versions_is_answered_before_ready() -> None:
    assert [key for key, entry in ENTRIES.items() if entry.before_ready] == [ApiKey.API_VERSIONS]


def test_forwarded_apis_go_to_the_controller() -> None:
    forwarded: list[Any] = []

    async def forward(body: Any) -> str:
        forwarded.append(body)
        return "answer"

    apis: Any = SimpleNamespace(forwarder=SimpleNamespace(forward=forward), check=lambda: None)
    ready = asyncio.Event()
    ready.set()
    for key in sorted(FORWARDED):
        request: Any = SimpleNamespace(header=SimpleNamespace(api_key=key), body=key)
        assert asyncio.run(answer(apis, request, ready)) == "answer"
    assert forwarded == sorted(FORWARDED)


def test_an_api_without_an_entry_waits_for_ready_then_closes() -> None:
    request: Any = SimpleNamespace(header=SimpleNamespace(api_key=9999), body=None)

    async def run() -> None:
        ready = asyncio.Event()
        apis: Any = SimpleNamespace()
        task = asyncio.create_task(answer(apis, request, ready))
        await asyncio.sleep(0.01)
        assert not task.done()
        ready.set()
        with pytest.raises(CloseConnection, match="api key 9999 is not served by a broker"):
            await task

    asyncio.run(run())
