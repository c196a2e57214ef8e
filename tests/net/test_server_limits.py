"""The server under clients that take more than their share, over real sockets on 127.0.0.1:
a connection that pipelines as fast as it is answered does not starve a new one; a frame's body
waits for the memory pool while small frames go on; idle connections are closed, also in the
middle of a frame; connections over the limits are closed as they arrive, with one log line."""

from __future__ import annotations

import asyncio
import logging
import struct
import time
from typing import Any

import pytest

from rackwise.net import (
    ClientConnection,
    KafkaConnection,
    ServerLimits,
    current_connection,
    start_server,
)
from rackwise.net.frames import FrameStream
from rackwise.protocol import ApiKey, Listener, Request
from tests.net.helpers import describe_cluster_echo, run
from tests.net.test_server import create_topics_frame, topic

IDLE_MS = 300


async def probe(port: int, name: str = "probe", *, local_ip: str = "127.0.0.1") -> list[str]:
    """One CreateTopics on a new connection: the names echoed."""
    _, stream = await asyncio.get_running_loop().create_connection(
        FrameStream, "127.0.0.1", port, local_addr=(local_ip, 0)
    )
    conn = KafkaConnection(stream, address=("127.0.0.1", port))
    try:
        response = await conn.request(ApiKey.CREATE_TOPICS, version=7, topics=[topic(name)])
        return [t.name for t in response.topics]
    finally:
        await conn.close()


async def closed_within(reader: asyncio.StreamReader, timeout_s: float) -> bool:
    """Whether the server closes the connection (nothing sent) within ``timeout_s``."""
    try:
        return await asyncio.wait_for(reader.read(1), timeout_s) == b""
    except ConnectionError:
        return True
    except TimeoutError:
        return False


async def drain(reader: asyncio.StreamReader) -> None:
    with pytest.raises((ConnectionError, asyncio.CancelledError)):  # ended by the test
        while await reader.read(1 << 16):
            pass
        raise ConnectionResetError


def test_a_pipelining_connection_does_not_starve_a_new_one() -> None:
    async def scenario() -> tuple[int, int]:
        handled: list[str] = []
        flooding = asyncio.Event()

        async def handler(request: Request) -> Any:
            name = request.body.topics[0].name
            handled.append(name)
            if name == "flood":
                flooding.set()
            return await describe_cluster_echo(request)

        async with await start_server(handler, Listener.CONTROLLER) as server:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            reading = asyncio.ensure_future(drain(reader))
            writer.write(b"".join(create_topics_frame(i, "flood") for i in range(3000)))
            await flooding.wait()
            assert await probe(server.port) == ["probe"]
            position = handled.index("probe")
            writer.close()
            reading.cancel()
            await asyncio.gather(reading, return_exceptions=True)
        return position, handled.count("flood")

    position, flooded = run(scenario())
    # Without a turn per request the new connection would wait for every frame already read.
    assert position < 300, (position, flooded)


def test_a_large_frame_waits_for_the_pool_while_small_frames_go_on() -> None:
    big_topics = [f"t{i:05d}-{'x' * 80}" for i in range(2200)]
    large = create_topics_frame(9, *big_topics)
    assert 200_000 < len(large) < 1 << 20

    async def scenario() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        limits = ServerLimits(queued_max_request_bytes=1 << 20)
        async with await start_server(
            describe_cluster_echo, Listener.CONTROLLER, limits=limits
        ) as server:
            # A announces 2 MiB, sends half of it and stalls: granted, it holds the pool.
            _, stalled = await asyncio.open_connection("127.0.0.1", server.port)
            stalled.write(struct.pack(">i", 2 << 20) + b"\0" * (1 << 20))
            while server.pool.available >= 0:
                await asyncio.sleep(0.01)
            b_reader, b_writer = await asyncio.open_connection("127.0.0.1", server.port)
            b_writer.write(large)
            answer = asyncio.ensure_future(b_reader.readexactly(4))
            await asyncio.sleep(0.5)
            seen["large_answered_while_held"] = answer.done()
            seen["waiting"] = server.pool.num_waiting
            seen["small"] = await probe(server.port, "small")
            stalled.close()  # its frame ends unread: the pool is free again
            (size,) = struct.unpack(">i", await asyncio.wait_for(answer, 5))
            body = await b_reader.readexactly(size)
            seen["large_correlation_id"] = struct.unpack_from(">i", body)[0]
            b_writer.close()
            seen["available"] = server.pool.available
        return seen

    seen = run(scenario())
    assert seen["large_answered_while_held"] is False
    assert seen["waiting"] == 1
    assert seen["small"] == ["small"]
    assert seen["large_correlation_id"] == 9
    assert seen["available"] == 1 << 20


def test_idle_connections_are_closed_even_in_the_middle_of_a_frame(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def scenario() -> dict[str, Any]:
        seen: dict[str, Any] = {}

        async def handler(request: Request) -> Any:
            if request.body.topics[0].name == "slow":
                await asyncio.sleep(3 * IDLE_MS / 1000)  # busy: not idle
            return await describe_cluster_echo(request)

        limits = ServerLimits(connections_max_idle_ms=IDLE_MS)
        async with await start_server(handler, Listener.CONTROLLER, limits=limits) as server:
            began = time.monotonic()
            mid_reader, mid_writer = await asyncio.open_connection("127.0.0.1", server.port)
            mid_writer.write(struct.pack(">i", 1 << 20) + b"\0" * 100_000)
            silent_reader, silent_writer = await asyncio.open_connection("127.0.0.1", server.port)
            seen["mid_frame_closed"] = await closed_within(mid_reader, 3)
            seen["mid_frame_after_s"] = time.monotonic() - began
            seen["silent_closed"] = await closed_within(silent_reader, 3)
            mid_writer.close()
            silent_writer.close()
            async with await KafkaConnection.connect("127.0.0.1", server.port) as conn:
                slow = await conn.request(ApiKey.CREATE_TOPICS, version=7, topics=[topic("slow")])
                seen["slow"] = [t.name for t in slow.topics]
                for _ in range(6):  # active for twice the idle timeout
                    await asyncio.sleep(IDLE_MS / 1000 / 3)
                    await conn.request(ApiKey.CREATE_TOPICS, version=7, topics=[topic("tick")])
                seen["active_open"] = not conn.is_closed
            seen["open_after"] = server.num_connections
        return seen

    with caplog.at_level(logging.INFO, logger="rackwise.net"):
        seen = run(scenario())
    assert seen["mid_frame_closed"] and seen["silent_closed"]
    assert IDLE_MS / 1000 <= seen["mid_frame_after_s"] < 2.5
    assert seen["slow"] == ["slow"] and seen["active_open"]
    lines = [r.getMessage() for r in caplog.records if "in a frame of" in r.getMessage()]
    assert len(lines) == 1
    assert "in a frame of 1048576 bytes (connections.max.idle.ms=300)" in lines[0]


def test_connections_over_the_limits_are_closed_and_logged_once_per_interval(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def scenario() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        limits = ServerLimits(max_connections=3, max_connections_per_ip=2)
        async with await start_server(
            describe_cluster_echo, Listener.CONTROLLER, limits=limits
        ) as server:
            first = [await asyncio.open_connection("127.0.0.1", server.port) for _ in range(2)]
            refused = [await asyncio.open_connection("127.0.0.1", server.port) for _ in range(5)]
            seen["per_ip_refused"] = [await closed_within(r, 2) for r, _ in refused]
            seen["other_address"] = await probe(server.port, "other", local_ip="127.0.0.2")
            third = await asyncio.open_connection(
                "127.0.0.1", server.port, local_addr=("127.0.0.2", 0)
            )
            fourth, fourth_writer = await asyncio.open_connection(
                "127.0.0.1", server.port, local_addr=("127.0.0.3", 0)
            )
            seen["total_refused"] = await closed_within(fourth, 2)
            seen["first_still_open"] = not await closed_within(first[0][0], 0.2)
            first[0][1].close()
            await asyncio.sleep(0.2)
            seen["after_one_closed"] = await probe(server.port, "again")
            for _, writer in [*first, third, *refused, (fourth, fourth_writer)]:
                writer.close()
        return seen

    with caplog.at_level(logging.INFO, logger="rackwise.net"):
        seen = run(scenario())
    assert seen["per_ip_refused"] == [True] * 5
    assert seen["other_address"] == ["other"]
    assert seen["total_refused"] and seen["first_still_open"]
    assert seen["after_one_closed"] == ["again"]
    lines = [r.getMessage() for r in caplog.records if "rejected the connection" in r.getMessage()]
    assert len(lines) == 1, lines
    assert "Too many connections from 127.0.0.1 (maximum = 2)" in lines[0]


def test_a_handler_knows_the_connection_of_its_request() -> None:
    async def scenario() -> list[ClientConnection | None]:
        seen: list[ClientConnection | None] = []

        async def handler(request: Request) -> Any:
            seen.append(current_connection())
            return await describe_cluster_echo(request)

        async with await start_server(handler, Listener.CONTROLLER) as server:
            one = await KafkaConnection.connect("127.0.0.1", server.port)
            for _ in range(2):
                await one.request(ApiKey.CREATE_TOPICS, version=7, topics=[topic("a")])
            assert await probe(server.port) == ["probe"]
            await one.close()
        assert current_connection() is None
        return seen

    first, again, other = run(scenario())
    assert first is not None and other is not None
    assert first is again and first is not other
    assert first.ip == "127.0.0.1" and first.peer.startswith("127.0.0.1:")
    assert other.connection_id > first.connection_id
