"""Shared by the network tests: run a coroutine with a deadline, raw socket exchanges."""

from __future__ import annotations

import asyncio
import struct
import uuid
from collections.abc import Coroutine
from typing import Any, Final, TypeVar

from rackwise.protocol import ApiKey, Request, make, response_class

T = TypeVar("T")
DEADLINE_S: Final = 20.0


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` on a fresh event loop, failing the test after DEADLINE_S."""

    async def bounded() -> T:
        return await asyncio.wait_for(coroutine, DEADLINE_S)

    return asyncio.run(bounded())


def header(api_key: int, version: int, correlation_id: int, flexible: bool) -> bytes:
    """A request header v1 (or v2 when ``flexible``) with client id "raw"."""
    head = struct.pack(">hhih", api_key, version, correlation_id, 3) + b"raw"
    return head + (b"\x00" if flexible else b"")


def framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


async def exchange(port: int, data: bytes, *, wait_s: float = 2.0) -> tuple[bytes, bool]:
    """Send ``data`` on a new connection; what came back before the server closed the
    connection or ``wait_s`` passed, and whether it closed."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    await writer.drain()
    received = b""
    closed = False
    try:
        while True:
            chunk = await asyncio.wait_for(reader.read(65536), wait_s)
            if not chunk:
                closed = True
                break
            received += chunk
    except TimeoutError:
        pass
    finally:
        writer.close()
    return received, closed


async def describe_cluster_echo(request: Request) -> Any:
    """A handler answering ApiVersions-free requests it knows: CreateTopics with its topic
    names echoed (error 0)."""
    version = request.header.api_version
    if request.header.api_key == ApiKey.CREATE_TOPICS:
        return make(
            response_class(ApiKey.CREATE_TOPICS, version),
            throttle_time=0,
            topics=[
                {
                    "name": t.name,
                    "topic_id": uuid.UUID(int=0),
                    "error_code": 0,
                    "error_message": None,
                    "num_partitions": 1,
                    "replication_factor": 1,
                    "configs": [],
                }
                for t in request.body.topics
            ],
        )
    raise RuntimeError(f"no handler for api key {request.header.api_key}")
