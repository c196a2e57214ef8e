"""The controller node in this process (a real log on disk, real sockets): a command that fails
with an untyped error fails alone, the others of its group commit; a failing metadata log
stops the node."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from rackwise.metalog import MetadataLogError
from rackwise.net import DisconnectException, KafkaConnection
from rackwise.node.config import NodeConfig
from rackwise.node.controller import ControllerNode
from tests.node.conftest import (
    controller_properties,
    create_topics,
    register,
    register_unfenced,
    run,
    topic,
)


async def started(tmp_path: Path) -> ControllerNode:
    node = ControllerNode(NodeConfig.from_properties(controller_properties(tmp_path)))
    await node.start()
    return node


async def connect(node: ControllerNode) -> KafkaConnection:
    conn = await KafkaConnection.connect("127.0.0.1", node.endpoint.port)
    await conn.negotiate_versions()
    return conn


def test_a_buggy_command_fails_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario() -> list[str]:
        node = await started(tmp_path)
        assert node.controller is not None
        real = node.controller.create_topics

        def create_topics_with_a_bug(topics: Any, **kw: Any) -> Any:
            if topics[0].name == "bug":
                raise KeyError("a bug")
            return real(topics, **kw)

        monkeypatch.setattr(node.controller, "create_topics", create_topics_with_a_bug)
        conns = [await connect(node) for _ in range(4)]
        await register_unfenced(conns[0], range(2, 3))
        names = ["a", "bug", "b", "c"]
        outcomes = await asyncio.gather(
            *(create_topics(c, topic(n, 1, 1)) for c, n in zip(conns, names, strict=True)),
            return_exceptions=True,
        )
        summary = [
            type(o).__name__ if isinstance(o, BaseException) else str(int(o.topics[0].error_code))
            for o in outcomes
        ]
        image_topics = sorted(t.name for t in node.controller.image.topics_by_id.values())
        for conn in conns:
            await conn.close()
        await node.close()
        return [*summary, *image_topics]

    assert run(scenario()) == ["0", "DisconnectException", "0", "0", "a", "b", "c"]


def test_a_failing_log_stops_the_node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario() -> tuple[bool, bool]:
        node = await started(tmp_path)
        assert node.log is not None

        def broken(*args: Any, **kwargs: Any) -> Any:
            raise MetadataLogError("disk on fire")

        monkeypatch.setattr(node.log, "append_batches", broken)
        conn = await connect(node)
        failed = False
        try:
            await register(conn, 3)  # writes a RegisterBrokerRecord
        except DisconnectException:
            failed = True
        await asyncio.wait_for(node.stopped.wait(), 5)
        await conn.close()
        await node.close()
        return failed, isinstance(node.fatal, MetadataLogError)

    assert run(scenario()) == (True, True)
