"""The controller node in this process (a real log on disk, real sockets): a command that fails
with an untyped error fails alone, the others of its group commit; a failing metadata log
stops the node; a failed snapshot is logged and tried again, never fatal."""

from __future__ import annotations

import asyncio
import logging
import re
from pathlib import Path
from typing import Any

import pytest

from rackwise.controller_node.node import ControllerNode
from rackwise.metalog import MetadataLogError
from rackwise.net import DisconnectException, KafkaConnection
from rackwise.node.config import NodeConfig
from tests.processes import (
    QUORUM_IDS,
    controller_properties,
    create_topics,
    free_ports,
    register,
    register_unfenced,
    run,
    topic,
)


async def started(
    tmp_path: Path, voters: int = 1, **extra: str | int
) -> tuple[ControllerNode, list[ControllerNode]]:
    """The active controller, and every node started (one, or a quorum of three in this
    process)."""
    if voters == 1:
        node = ControllerNode(NodeConfig.from_properties(controller_properties(tmp_path, **extra)))
        await node.start()
        return node, [node]
    ports = dict(zip(QUORUM_IDS, free_ports(3), strict=True))
    quorum = ",".join(f"{i}@127.0.0.1:{p}" for i, p in ports.items())
    nodes = []
    for node_id, port in ports.items():
        props = controller_properties(tmp_path / f"c{node_id}", node_id, **extra)
        props["listeners"] = f"CONTROLLER://127.0.0.1:{port}"
        props["controller.quorum.voters"] = quorum
        nodes.append(ControllerNode(NodeConfig.from_properties(props)))
    for node in nodes:
        await node.start()
    async with asyncio.timeout(30):
        while not any(n.controller is not None for n in nodes):
            await asyncio.sleep(0.05)
    return next(n for n in nodes if n.controller is not None), nodes


async def close_all(nodes: list[ControllerNode]) -> None:
    for node in nodes:
        await node.close()


async def connect(node: ControllerNode) -> KafkaConnection:
    conn = await KafkaConnection.connect("127.0.0.1", node.endpoint.port)
    await conn.negotiate_versions()
    return conn


@pytest.mark.parametrize("voters", [1, 3])
def test_a_buggy_command_fails_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, voters: int
) -> None:
    async def scenario() -> list[str]:
        node, nodes = await started(tmp_path, voters)
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
        await close_all(nodes)
        return [*summary, *image_topics]

    assert run(scenario()) == ["0", "DisconnectException", "0", "0", "a", "b", "c"]


@pytest.mark.parametrize("voters", [1, 3])
def test_a_failing_log_stops_the_node(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, voters: int
) -> None:
    async def scenario() -> tuple[bool, bool]:
        node, nodes = await started(tmp_path, voters)
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
        await close_all(nodes)
        return failed, isinstance(node.fatal, MetadataLogError)

    assert run(scenario()) == (True, True)


@pytest.mark.parametrize("voters", [1, 3])
def test_a_failed_snapshot_is_logged_and_retried_at_the_next_threshold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, voters: int
) -> None:
    caplog.set_level(logging.INFO, logger="rackwise.controller")

    async def scenario() -> tuple[list[str], list[Any], bool]:
        node, nodes = await started(
            tmp_path, voters, metadata_log_max_record_bytes_between_snapshots=1500
        )
        log = node.log
        assert log is not None
        real = log.write_snapshot
        calls: list[int] = []

        def fails_once(records: Any, end_offset: int) -> Any:
            calls.append(end_offset)
            if len(calls) == 1:
                list(records)
                raise OSError(28, "No space left on device")
            return real(records, end_offset)

        monkeypatch.setattr(log, "write_snapshot", fails_once)
        conn = await connect(node)
        await register_unfenced(conn, range(2, 5))
        for i in range(30):
            await create_topics(conn, topic(f"t{i}", 4, 3))
            if log.snapshot_ids():
                break
            await asyncio.sleep(0.02)
        snapshots = log.snapshot_ids()
        await conn.close()
        await close_all(nodes)
        return [str(c) for c in calls], snapshots, node.fatal is None

    calls, snapshots, alive = run(scenario())
    assert alive
    assert len(calls) == 2 and int(calls[0]) < int(calls[1])
    assert [s.end_offset for s in snapshots] == [int(calls[1])]
    messages = [r.getMessage() for r in caplog.records if r.name == "rackwise.controller"]
    assert any(
        m.startswith(f"failed to write the snapshot ending at offset {calls[0]}, trying again")
        and m.endswith("OSError: [Errno 28] No space left on device")
        for m in messages
    ), messages
    assert any(
        re.match(rf"wrote snapshot \S+: end offset {calls[1]}, \d+ bytes", m) for m in messages
    )
