"""Three controller processes in a quorum: the leader answers, the others refuse with
NOT_CONTROLLER, and killing the leader (SIGKILL) loses no acknowledged topic."""

from __future__ import annotations

import asyncio
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rackwise.broker.controller_channel import ControllerChannel
from rackwise.cluster.processes import free_ports
from rackwise.net import KafkaConnection
from rackwise.protocol import ApiKey
from rackwise.records import iter_batches
from tests.processes import (
    ControllerProcess,
    create_topics,
    fetch_log,
    register,
    register_unfenced,
    run,
    topic,
)

NOT_CONTROLLER = 41
TOPIC_ALREADY_EXISTS = 36


@pytest.fixture
def quorum(tmp_path: Path) -> Iterator[dict[int, ControllerProcess]]:
    ports = dict(zip((1, 2, 3), free_ports(3), strict=True))
    voters = ",".join(f"{i}@127.0.0.1:{p}" for i, p in ports.items())
    processes = {}
    for node_id, port in ports.items():
        directory = tmp_path / f"c{node_id}"
        directory.mkdir()
        props = {
            "node.id": str(node_id),
            "process.roles": "controller",
            "listeners": f"CONTROLLER://127.0.0.1:{port}",
            "controller.listener.names": "CONTROLLER",
            "controller.quorum.voters": voters,
            "metadata.log.dir": str(directory / "meta"),
        }
        processes[node_id] = ControllerProcess(directory, props)
    for process in processes.values():
        process.start()
    yield processes
    for process in processes.values():
        process.close()


async def describe(process: ControllerProcess) -> Any:
    conn = await process.connect()
    try:
        response = await conn.request(
            ApiKey.DESCRIBE_QUORUM,
            topics=[{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}],
        )
        return response.topics[0].partitions[0]
    finally:
        await conn.close()


async def leader_id(processes: dict[int, ControllerProcess], timeout_s: float = 15) -> int:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for process in processes.values():
            if process.proc is None:
                continue
            try:
                part = await describe(process)
            except Exception:
                continue
            if int(part.error_code) == 0:
                return int(part.leader_id)
        await asyncio.sleep(0.1)
    raise AssertionError("no leader")


SECURITY_DISABLED = 54
ANY_ACL = {"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
           "principal_filter": None, "host_filter": None, "operation": 1,
           "permission_type": 1}  # fmt: skip


async def active_leader(processes: dict[int, ControllerProcess], timeout_s: float = 20) -> int:
    """The leader once it acts as the controller: a new leader answers NOT_CONTROLLER until
    the first entry of its epoch commits. Probed with broker 4's registration, which the
    tests make next anyway (registering an incarnation again is allowed)."""
    deadline = time.monotonic() + timeout_s
    while True:
        leader = await leader_id(processes)
        conn = await processes[leader].connect()
        try:
            response = await register(conn, 4, incarnation=uuid.UUID(int=5, version=4), rack="/r1")
        finally:
            await conn.close()
        if int(response.error_code) != NOT_CONTROLLER:
            return leader
        assert time.monotonic() < deadline, "the leader never became the active controller"
        await asyncio.sleep(0.1)


async def create_topic(conn: KafkaConnection, name: str) -> int:
    response = await create_topics(conn, topic(name, 3, 3))
    return int(response.topics[0].error_code)


async def kill_the_leader(processes: dict[int, ControllerProcess]) -> None:
    first = await active_leader(processes)
    follower = next(p for i, p in processes.items() if i != first)
    conn = await follower.connect()
    assert await create_topic(conn, "refused") == NOT_CONTROLLER
    described = await conn.request(
        ApiKey.DESCRIBE_CONFIGS,
        resources=[{"resource_type": 2, "resource_name": "t", "configuration_keys": None}],
        include_synonyms=False,
        include_documentation=False,
    )
    assert [int(r.error_code) for r in described.results] == [NOT_CONTROLLER]
    # with no authorizer, the ACL APIs need no active controller: every one says so itself
    refused_acls = await conn.request(ApiKey.DELETE_ACLS, filters=[ANY_ACL])
    assert [int(r.error_code) for r in refused_acls.filter_results] == [SECURITY_DISABLED]
    await conn.close()
    conn = await processes[first].connect()
    await register_unfenced(conn, range(4, 7))
    assert await create_topic(conn, "kept") == 0
    await conn.close()
    processes[first].stop(signal.SIGKILL)
    killed = time.monotonic()
    second = await leader_id({i: p for i, p in processes.items() if i != first})
    assert second != first
    conn = await processes[second].connect()
    while (code := await create_topic(conn, "after")) == NOT_CONTROLLER:
        await asyncio.sleep(0.05)
    assert code == 0
    took_s = time.monotonic() - killed
    assert await create_topic(conn, "kept") == TOPIC_ALREADY_EXISTS
    data = (await fetch_log(conn, 0)).records
    await conn.close()
    assert b"kept" in data and b"after" in data and b"refused" not in data
    assert took_s < 10


@pytest.mark.slow(reason="three controller processes and an election, 7-10 s")
def test_killing_the_leader_loses_no_acknowledged_topic(
    quorum: dict[int, ControllerProcess],
) -> None:
    run(kill_the_leader(quorum), 60)


async def follow_the_leader(processes: dict[int, ControllerProcess]) -> None:
    first = await active_leader(processes)
    addresses = {i: ("127.0.0.1", p.port) for i, p in processes.items()}
    channel = ControllerChannel(
        list(addresses.values()), voters=addresses, client_id="test", connect_timeout_s=2
    )
    conn = await channel.connect()
    assert conn.address == addresses[first]
    await conn.negotiate_versions()
    await register_unfenced(conn, range(4, 7))
    await conn.close()
    follower = next(i for i in processes if i != first)
    stray = await channel.open(addresses[follower])
    await stray.negotiate_versions()
    assert await create_topic(stray, "t") == NOT_CONTROLLER
    assert stray.is_closed  # it closed itself: the next request reconnects
    processes[first].stop(signal.SIGKILL)
    deadline = time.monotonic() + 15
    while True:
        conn = await channel.connect()
        await conn.negotiate_versions()
        code = await create_topic(conn, "t")
        await conn.close()
        if code == 0:
            break
        assert time.monotonic() < deadline, code
        await asyncio.sleep(0.1)
    assert channel.leader is not None and channel.leader != addresses[first]


@pytest.mark.slow(reason="three controller processes and an election, 7-10 s")
def test_the_controller_channel_follows_the_leader(
    quorum: dict[int, ControllerProcess],
) -> None:
    run(follow_the_leader(quorum), 60)


async def pause_the_leader(processes: dict[int, ControllerProcess]) -> None:
    """A leader stopped past the election timeout comes back as a follower, and the write it
    took alone is never committed."""
    first = await active_leader(processes)
    conn = await processes[first].connect()
    await register_unfenced(conn, range(4, 7))
    await conn.close()
    assert processes[first].proc is not None
    processes[first].proc.send_signal(signal.SIGSTOP)
    others = {i: p for i, p in processes.items() if i != first}
    second = await leader_id(others)
    conn = await processes[second].connect()
    while await create_topic(conn, "while-paused") == NOT_CONTROLLER:
        await asyncio.sleep(0.05)
    await conn.close()
    processes[first].proc.send_signal(signal.SIGCONT)
    await asyncio.sleep(3)  # it catches up as a follower
    part = await describe(processes[second])
    assert int(part.error_code) == 0 and int(part.leader_id) == second
    part = await describe(processes[first])
    assert int(part.error_code) == 6 and int(part.leader_id) == second
    # Only the leader serves the log (Fetch); the follower's own copy is read from its files.
    segments = sorted(processes[first].metadata_dir.rglob("*.log"))
    assert b"while-paused" in b"".join(path.read_bytes() for path in segments)


@pytest.mark.slow(reason="three controller processes and an election, 7-10 s")
def test_a_paused_leader_comes_back_as_a_follower(
    quorum: dict[int, ControllerProcess],
) -> None:
    run(pause_the_leader(quorum), 60)


def decoded(data: bytes) -> list[tuple[int, Any]]:
    return [
        (b.base_offset + i, record)
        for b in iter_batches(bytes(data))
        for i, record in enumerate(b.records)
    ]


async def restart_everyone(processes: dict[int, ControllerProcess]) -> None:
    first = await active_leader(processes)
    conn = await processes[first].connect()
    await register_unfenced(conn, range(4, 7))
    for name in ("a", "b", "c"):
        assert await create_topic(conn, name) == 0
    before = (await fetch_log(conn, 0)).records
    await conn.close()
    for process in processes.values():
        process.stop(signal.SIGKILL)
    for process in processes.values():
        process.start()
    leader = await leader_id(processes)
    conn = await processes[leader].connect()
    deadline = time.monotonic() + 15
    while (code := await create_topic(conn, "a")) == NOT_CONTROLLER:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.1)
    assert code == TOPIC_ALREADY_EXISTS
    after = (await fetch_log(conn, 0)).records
    await conn.close()
    records_before, records_after = decoded(before), decoded(after)
    assert records_after[: len(records_before)] == records_before
    assert len(records_after) > len(records_before)  # the new epochs' marks


@pytest.mark.slow(reason="three controller processes and an election, 7-10 s")
def test_restarting_every_controller_recovers_the_committed_log(
    quorum: dict[int, ControllerProcess],
) -> None:
    run(restart_everyone(quorum), 90)
