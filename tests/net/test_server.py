"""The server over real sockets on 127.0.0.1: requests reach the handler and are answered in
order; malformed frames get Kafka's answer (an error response or a closed connection) and the
server goes on serving other connections; a failing handler closes only its connection."""

from __future__ import annotations

import asyncio
import logging
import struct
from typing import Any

import pytest

from rackwise.net import (
    NO_RESPONSE,
    CloseConnection,
    KafkaConnection,
    let_next_request_in,
    start_server,
)
from rackwise.net.pipelining import MAX_WAITING_PRODUCES
from rackwise.protocol import (
    ApiKey,
    Listener,
    Request,
    encode_request,
    make,
    request_class,
    response_class,
)
from tests.net.helpers import describe_cluster_echo, exchange, framed, header, run


def topic(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "num_partitions": 1,
        "replication_factor": 1,
        "assignments": [],
        "configs": [],
    }


def create_topics_frame(correlation_id: int, *names: str) -> bytes:
    body = make(
        request_class(ApiKey.CREATE_TOPICS, 7),
        topics=[topic(n) for n in names],
        timeout=1000,
    )
    return encode_request(body, correlation_id, "raw")


async def still_serves(port: int) -> bool:
    async with await KafkaConnection.connect("127.0.0.1", port) as conn:
        response = await conn.request(ApiKey.CREATE_TOPICS, version=7, topics=[topic("ok")])
        return [t.name for t in response.topics] == ["ok"]


def test_requests_of_one_connection_are_answered_in_order() -> None:
    async def scenario() -> list[int]:
        async def slow_first(request: Request) -> Any:
            if request.body.topics[0].name == "slow":
                await asyncio.sleep(0.2)
            return await describe_cluster_echo(request)

        async with await start_server(slow_first, Listener.CONTROLLER) as server:
            data = create_topics_frame(1, "slow") + create_topics_frame(2, "fast")
            received, closed = await exchange(server.port, data, wait_s=1.0)
        assert not closed
        ids = []
        while received:
            (size,) = struct.unpack_from(">i", received)
            ids.append(struct.unpack_from(">i", received, 4)[0])
            received = received[4 + size :]
        return ids

    assert run(scenario()) == [1, 2]


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("negative size", struct.pack(">i", -1)),
        ("size above the maximum", struct.pack(">i", 200_000_000)),
        ("unknown api key", framed(header(777, 0, 5, flexible=False))),
        ("unsupported version", framed(header(ApiKey.CREATE_TOPICS, 99, 5, flexible=True))),
        ("api not served on this listener", framed(header(ApiKey.METADATA, 12, 5, True))),
        ("truncated body", framed(create_topics_frame(5, "t")[4:-6])),
        ("header too short", framed(b"\x00\x13\x00")),
        ("empty frame", framed(b"")),
    ],
)
def test_a_malformed_frame_closes_only_its_connection(name: str, data: bytes) -> None:
    async def scenario() -> tuple[bytes, bool, bool]:
        async with await start_server(describe_cluster_echo, Listener.CONTROLLER) as server:
            bystander = await KafkaConnection.connect("127.0.0.1", server.port)
            received, closed = await exchange(server.port, data)
            response = await bystander.request(ApiKey.CREATE_TOPICS, version=7, topics=[topic("b")])
            await bystander.close()
            return (
                received,
                closed,
                [t.name for t in response.topics] == ["b"] and (await still_serves(server.port)),
            )

    received, closed, others_served = run(scenario())
    assert (received, closed) == (b"", True), name
    assert others_served


def test_api_versions_of_an_unsupported_version_is_answered_and_the_connection_stays() -> None:
    async def scenario() -> tuple[bytes, bool]:
        async with await start_server(describe_cluster_echo, Listener.CONTROLLER) as server:
            data = framed(header(ApiKey.API_VERSIONS, 9, 7, flexible=False)[:8] + b"\xff\xff\x00")
            return await exchange(server.port, data, wait_s=0.5)

    received, closed = run(scenario())
    assert not closed
    assert received == bytes.fromhex("00000010 00000007 0023 00000001 0012 0000 0004")


def test_a_handler_that_raises_closes_its_connection_with_one_log_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def failing(request: Request) -> Any:
        if request.body.topics[0].name == "boom":
            raise KeyError("boom")
        return await describe_cluster_echo(request)

    async def scenario() -> tuple[bytes, bool, bool]:
        async with await start_server(failing, Listener.CONTROLLER) as server:
            received, closed = await exchange(server.port, create_topics_frame(3, "boom"))
            return received, closed, await still_serves(server.port)

    with caplog.at_level(logging.INFO, logger="rackwise.net"):
        received, closed, served = run(scenario())
    assert (received, closed, served) == (b"", True, True)
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1
    assert "CreateTopics v7" in errors[0]
    assert "KeyError" in errors[0]


def test_close_connection_and_no_response() -> None:
    async def handler(request: Request) -> Any:
        name = request.body.topics[0].name
        if name == "close":
            raise CloseConnection("asked to")
        if name == "silent":
            return NO_RESPONSE
        return await describe_cluster_echo(request)

    async def scenario() -> tuple[tuple[bytes, bool], tuple[bytes, bool]]:
        async with await start_server(handler, Listener.CONTROLLER) as server:
            closed = await exchange(server.port, create_topics_frame(1, "close"))
            silent = await exchange(
                server.port,
                create_topics_frame(1, "silent") + create_topics_frame(2, "x"),
                wait_s=0.5,
            )
            return closed, silent

    closed, silent = run(scenario())
    assert closed == (b"", True)
    received, was_closed = silent
    assert not was_closed
    assert struct.unpack_from(">i", received, 4)[0] == 2  # only the second one answered


def test_close_ends_open_connections_and_frees_the_port() -> None:
    async def scenario() -> tuple[int, bool]:
        never = asyncio.Event()

        async def hangs(request: Request) -> Any:
            await never.wait()

        server = await start_server(hangs, Listener.CONTROLLER)
        port = server.port
        conn = await KafkaConnection.connect("127.0.0.1", port)
        pending = asyncio.ensure_future(
            conn.request(ApiKey.CREATE_TOPICS, version=7, topics=[topic("t")])
        )
        await asyncio.sleep(0.1)
        count = server.num_connections
        await server.close()
        try:
            await pending
        except Exception as e:
            failed = type(e).__name__ == "DisconnectException"
        else:
            failed = False
        again = await start_server(hangs, Listener.CONTROLLER, port=port)
        await again.close()
        return count, failed

    count, failed = run(scenario())
    assert count == 1
    assert failed


def test_a_port_in_use_is_an_os_error() -> None:
    async def scenario() -> None:
        async with await start_server(describe_cluster_echo, Listener.CONTROLLER) as server:
            await start_server(describe_cluster_echo, Listener.CONTROLLER, port=server.port)

    with pytest.raises(OSError):
        run(scenario())


def test_response_class_of_another_api_closes_the_connection() -> None:
    async def wrong(request: Request) -> Any:
        return make(response_class(ApiKey.DELETE_TOPICS, 6))

    async def scenario() -> tuple[bytes, bool]:
        async with await start_server(wrong, Listener.CONTROLLER) as server:
            return await exchange(server.port, create_topics_frame(1, "t"))

    assert run(scenario()) == (b"", True)


# ---- Produce requests waiting for their followers ------------------------------------------


def produce_frame(correlation_id: int) -> bytes:
    body = make(
        request_class(ApiKey.PRODUCE, 9),
        acks=-1,
        timeout=1000,
        topic_data=[{"name": "t", "partition_data": [{"index": 0, "records": None}]}],
    )
    return encode_request(body, correlation_id, "raw")


def produce_answer(request: Request) -> Any:
    return make(
        response_class(ApiKey.PRODUCE, request.header.api_version),
        responses=[],
        throttle_time=0,
    )


async def read_answers(reader: asyncio.StreamReader, count: int) -> list[int]:
    ids = []
    for _ in range(count):
        (size,) = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), 5.0))
        body = await reader.readexactly(size)
        ids.append(struct.unpack_from(">i", body)[0])
    return ids


class Gates:
    """A Produce handler that records each request as it starts, lets the next one in (as the
    broker does once it has appended) unless told not to, and answers when its gate opens."""

    def __init__(self, *, let_in: bool = True, failing: int | None = None) -> None:
        self.started: list[int] = []
        self.gates: dict[int, asyncio.Event] = {}
        self.let_in = let_in
        self.failing = failing

    def gate(self, correlation_id: int) -> asyncio.Event:
        return self.gates.setdefault(correlation_id, asyncio.Event())

    async def handler(self, request: Request) -> Any:
        correlation_id = request.header.correlation_id
        self.started.append(correlation_id)
        if self.let_in:
            let_next_request_in()
        await self.gate(correlation_id).wait()
        if correlation_id == self.failing:
            raise RuntimeError("a broken handler")
        return produce_answer(request)

    async def until_started(self, count: int) -> None:
        for _ in range(500):
            if len(self.started) >= count:
                return
            await asyncio.sleep(0.01)
        raise AssertionError(f"only {self.started} started")


def test_produces_waiting_for_followers_let_the_next_requests_in_and_answer_in_order() -> None:
    async def scenario() -> None:
        gates = Gates()
        async with await start_server(gates.handler, Listener.BROKER) as server:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(b"".join(produce_frame(i) for i in range(1, 8)))
            await gates.until_started(MAX_WAITING_PRODUCES)
            await asyncio.sleep(0.2)
            assert gates.started == [1, 2, 3, 4, 5]  # no more than five wait at once
            for i in (5, 4, 3, 2):  # later ones finish first: their answers wait their turn
                gates.gate(i).set()
            await asyncio.sleep(0.2)
            assert gates.started == [1, 2, 3, 4, 5]
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(reader.readexactly(1), 0.2)
            gates.gate(1).set()
            assert await read_answers(reader, 5) == [1, 2, 3, 4, 5]
            await gates.until_started(7)
            gates.gate(7).set()
            gates.gate(6).set()
            assert await read_answers(reader, 2) == [6, 7]
            writer.close()

    run(scenario())


def test_a_produce_that_does_not_let_the_next_request_in_holds_it() -> None:
    async def scenario() -> None:
        gates = Gates(let_in=False)
        async with await start_server(gates.handler, Listener.BROKER) as server:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(produce_frame(1) + produce_frame(2))
            await gates.until_started(1)
            await asyncio.sleep(0.2)
            assert gates.started == [1]
            gates.gate(2).set()
            gates.gate(1).set()
            assert await read_answers(reader, 2) == [1, 2]
            writer.close()

    run(scenario())


def test_a_failing_produce_closes_the_connection_before_the_answers_behind_it() -> None:
    async def scenario() -> None:
        gates = Gates(failing=1)
        async with await start_server(gates.handler, Listener.BROKER) as server:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(produce_frame(1) + produce_frame(2))
            await gates.until_started(2)
            gates.gate(2).set()  # answered first, written only after the first: never
            await asyncio.sleep(0.1)
            gates.gate(1).set()
            assert await asyncio.wait_for(reader.read(), 5.0) == b""  # closed, nothing sent
            writer.close()
        assert gates.started == [1, 2]

    run(scenario())


def test_a_malformed_frame_behind_a_waiting_produce_closes_after_its_answer() -> None:
    async def scenario() -> None:
        gates = Gates()
        async with await start_server(gates.handler, Listener.BROKER) as server:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(produce_frame(1) + framed(header(777, 0, 2, flexible=False)))
            await gates.until_started(1)
            await asyncio.sleep(0.1)
            gates.gate(1).set()
            assert await read_answers(reader, 1) == [1]  # answered as if read in turn
            assert await asyncio.wait_for(reader.read(), 5.0) == b""  # then closed
            writer.close()

    run(scenario())


def test_a_large_frame_reaches_the_handler_whole() -> None:
    """A frame longer than one read is gathered and decoded from a view of its buffer."""
    records = bytes(range(256)) * 1200  # 300 KiB, several reads
    seen: list[tuple[str, bytes]] = []

    async def handler(request: Request) -> Any:
        data = request.body.topic_data[0].partition_data[0].records
        seen.append((request.header.client_id, bytes(data)))
        return produce_answer(request)

    async def scenario() -> list[int]:
        body = make(
            request_class(ApiKey.PRODUCE, 9),
            acks=1,
            timeout=1000,
            topic_data=[{"name": "t", "partition_data": [{"index": 0, "records": records}]}],
        )
        async with await start_server(handler, Listener.BROKER) as server:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(encode_request(body, 3, "producer-é"))
            answers = await read_answers(reader, 1)
            writer.close()
        return answers

    assert run(scenario()) == [3]
    assert seen == [("producer-é", records)]
