"""A listener on a thread of its own, over real sockets: requests are seen on arrival by the I/O
thread even while the caller's loop is blocked, handled on the caller's loop with their
connection known, cancelled there when their connection goes, and closing stops the thread."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from rackwise.net import (
    ClientConnection,
    KafkaConnection,
    current_connection,
    start_threaded_server,
)
from rackwise.protocol import ApiKey, Listener, Request, api_versions_response
from tests.net.helpers import describe_cluster_echo, run
from tests.net.test_server import topic


def test_arrivals_are_seen_while_the_callers_loop_is_blocked() -> None:
    arrived = threading.Event()
    seen: dict[str, Any] = {}

    def on_arrival(request: Request) -> None:
        seen["arrival_thread"] = threading.get_ident()
        arrived.set()

    async def handler(request: Request) -> Any:
        seen["handler_thread"] = threading.get_ident()
        seen["connection"] = current_connection()
        return await describe_cluster_echo(request)

    async def scenario() -> list[str]:
        seen["caller_thread"] = threading.get_ident()
        async with await start_threaded_server(
            handler, Listener.CONTROLLER, on_arrival=on_arrival
        ) as server:
            conn = await KafkaConnection.connect("127.0.0.1", server.port)
            pending = asyncio.ensure_future(
                conn.request(ApiKey.CREATE_TOPICS, version=7, topics=[topic("t")])
            )
            await asyncio.sleep(0.05)  # the request is written
            began = time.monotonic()
            seen["arrived_while_blocked"] = arrived.wait(5)  # blocks this loop
            seen["blocked_s"] = time.monotonic() - began
            response = await pending
            await conn.close()
        return [t.name for t in response.topics]

    assert run(scenario()) == ["t"]
    assert seen["arrived_while_blocked"] is True
    assert seen["arrival_thread"] != seen["caller_thread"]
    assert seen["handler_thread"] == seen["caller_thread"]
    connection = seen["connection"]
    assert isinstance(connection, ClientConnection) and connection.ip == "127.0.0.1"


def test_a_request_answered_on_the_io_thread_needs_no_free_callers_loop() -> None:
    """A client negotiates its versions while the caller's loop sleeps in a synchronous call:
    ``answer_on_io`` answers ApiVersions, the handler never sees it."""
    handled: list[int] = []

    async def handler(request: Request) -> Any:
        handled.append(request.header.api_key)
        return await describe_cluster_echo(request)

    def answer_on_io(request: Request) -> Any:
        if request.header.api_key != ApiKey.API_VERSIONS:
            return None
        return api_versions_response(request.header.api_version, Listener.CONTROLLER)

    def negotiate(port: int, out: dict[str, Any]) -> None:
        async def go() -> None:
            conn = await KafkaConnection.connect("127.0.0.1", port)
            try:
                out["response"] = await conn.negotiate_versions(timeout_s=5)
                out["heartbeat"] = conn.version_for(ApiKey.BROKER_HEARTBEAT)
            finally:
                await conn.close()

        asyncio.run(go())

    async def scenario() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with await start_threaded_server(
            handler, Listener.CONTROLLER, answer_on_io=answer_on_io
        ) as server:
            client = threading.Thread(target=negotiate, args=(server.port, out))
            began = time.monotonic()
            client.start()
            client.join(10)  # blocks the caller's loop until the client is done
            out["blocked_s"] = time.monotonic() - began
        return out

    out = run(scenario())
    assert int(out["response"].error_code) == 0
    assert out["heartbeat"] >= 0
    assert out["blocked_s"] < 10
    assert handled == []


def test_a_closed_connection_cancels_its_handler_and_close_stops_the_thread() -> None:
    async def scenario() -> tuple[bool, bool, int]:
        started = asyncio.Event()
        cancelled = asyncio.Event()

        async def hangs(request: Request) -> Any:
            started.set()
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                cancelled.set()
                raise

        server = await start_threaded_server(hangs, Listener.CONTROLLER)
        port = server.port
        conn = await KafkaConnection.connect("127.0.0.1", port)
        pending = asyncio.ensure_future(
            conn.request(ApiKey.CREATE_TOPICS, version=7, topics=[topic("t")])
        )
        await asyncio.wait_for(started.wait(), 5)
        await server.close()
        await asyncio.wait_for(cancelled.wait(), 5)
        failed = False
        try:
            await pending
        except Exception as e:
            failed = type(e).__name__ == "DisconnectException"
        await conn.close()
        again = await start_threaded_server(hangs, Listener.CONTROLLER, port=port)
        await again.close()
        io_threads = [t for t in threading.enumerate() if t.name.endswith(" io")]
        return cancelled.is_set(), failed, len(io_threads)

    was_cancelled, failed, io_threads = run(scenario())
    assert was_cancelled and failed
    assert io_threads == 0  # both servers' I/O threads are gone
