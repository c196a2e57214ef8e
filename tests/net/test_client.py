"""The client connection over real sockets: version negotiation, pipelined requests matched by
correlation id, timeouts that close the connection, a refused connection."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import pytest

from rackwise.net import (
    ConnectionSlot,
    DisconnectException,
    KafkaConnection,
    RequestTimedOutException,
    start_server,
)
from rackwise.protocol import (
    ApiKey,
    Listener,
    Request,
    UnsupportedVersionException,
    api_versions_response,
    apis_for,
)
from tests.net.helpers import describe_cluster_echo, run
from tests.net.test_server import topic


async def with_api_versions(request: Request) -> Any:
    if request.header.api_key == ApiKey.API_VERSIONS:
        return api_versions_response(request.header.api_version, Listener.CONTROLLER)
    name = request.body.topics[0].name
    if name.startswith("sleep-"):
        await asyncio.sleep(float(name.removeprefix("sleep-")))
    return await describe_cluster_echo(request)


def test_negotiation_learns_the_listeners_apis() -> None:
    async def scenario() -> tuple[dict[int, tuple[int, int]], int]:
        async with (
            await start_server(with_api_versions, Listener.CONTROLLER) as server,
            await KafkaConnection.connect("127.0.0.1", server.port) as conn,
        ):
            await conn.negotiate_versions()
            return dict(conn.api_versions), conn.version_for(ApiKey.CREATE_TOPICS)

    versions, create_topics = run(scenario())
    expected = {k: (s.min_version, s.max_version) for k, s in apis_for(Listener.CONTROLLER).items()}
    assert versions == expected
    assert create_topics == 7


def test_an_api_the_peer_lacks_is_unsupported() -> None:
    async def scenario() -> None:
        async with (
            await start_server(with_api_versions, Listener.CONTROLLER) as server,
            await KafkaConnection.connect("127.0.0.1", server.port) as conn,
        ):
            await conn.negotiate_versions()
            conn.version_for(ApiKey.METADATA)

    with pytest.raises(UnsupportedVersionException, match="METADATA"):
        run(scenario())


def test_pipelined_requests_get_their_own_responses() -> None:
    async def scenario() -> list[list[str]]:
        async with (
            await start_server(with_api_versions, Listener.CONTROLLER) as server,
            await KafkaConnection.connect("127.0.0.1", server.port) as conn,
        ):
            await conn.negotiate_versions()
            responses = await asyncio.gather(
                *(conn.request(ApiKey.CREATE_TOPICS, topics=[topic(f"t{i}")]) for i in range(50))
            )
            return [[t.name for t in r.topics] for r in responses]

    assert run(scenario()) == [[f"t{i}"] for i in range(50)]


def test_a_timeout_closes_the_connection_and_fails_what_waits() -> None:
    async def scenario() -> tuple[str, str, bool]:
        async with (
            await start_server(with_api_versions, Listener.CONTROLLER) as server,
            await KafkaConnection.connect("127.0.0.1", server.port) as conn,
        ):
            slow = conn.request(
                ApiKey.CREATE_TOPICS, version=7, topics=[topic("sleep-2")], timeout_s=0.2
            )
            behind = conn.request(ApiKey.CREATE_TOPICS, version=7, topics=[topic("t")], timeout_s=5)
            outcomes = await asyncio.gather(slow, behind, return_exceptions=True)
            return type(outcomes[0]).__name__, type(outcomes[1]).__name__, conn.is_closed

    assert run(scenario()) == ("RequestTimedOutException", "DisconnectException", True)


def test_a_closed_connection_refuses_new_requests() -> None:
    async def scenario() -> None:
        async with await start_server(with_api_versions, Listener.CONTROLLER) as server:
            conn = await KafkaConnection.connect("127.0.0.1", server.port)
            await conn.close()
            await conn.request(ApiKey.CREATE_TOPICS, version=7, topics=[topic("t")])

    with pytest.raises(DisconnectException, match="closed"):
        run(scenario())


def test_a_refused_connection_is_a_disconnect() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: connections are refused
        with pytest.raises(DisconnectException, match=f"^Connection to 127.0.0.1:{port} refused$"):
            run(KafkaConnection.connect("127.0.0.1", port, timeout_s=2))


def test_timeout_errors_are_retriable() -> None:
    assert RequestTimedOutException.retriable
    assert RequestTimedOutException.error_code == 7
    assert DisconnectException.error_code == 13


def test_a_connection_slot_opens_once_and_again_after_a_close() -> None:
    async def scenario() -> tuple[int, int, int, bool]:
        opened: list[KafkaConnection] = []
        async with await start_server(with_api_versions, Listener.CONTROLLER) as server:

            async def connect() -> KafkaConnection:
                conn = await KafkaConnection.connect("127.0.0.1", server.port)
                opened.append(conn)
                return conn

            slot = ConnectionSlot(connect, negotiate_timeout_s=5.0)
            first = await asyncio.gather(*(slot.get() for _ in range(5)))
            shared = len({id(c) for c in first})
            negotiated = first[0].version_for(ApiKey.CREATE_TOPICS)
            await slot.drop(only_if_closed=True)  # open: left alone
            kept = slot.current is first[0]
            await first[0].close()
            second = await slot.get()
            await slot.drop()
            return shared, negotiated, len(opened), kept and second is not first[0]

    shared, negotiated, opened, replaced = run(scenario())
    assert (shared, negotiated, opened, replaced) == (1, 7, 2, True)
