"""Frames over TLS as librdkafka writes them: a frame of many small TLS records (about one
per record of a batch: 1 KiB records come as TLS records of 1.1 to 1.4 KiB) arrives whole and
in order, on asyncio's loop and on uvloop, whether it is staged (small frames) or read into a
body of its own (a frame over the staging buffer), the frames' boundaries inside records."""

from __future__ import annotations

import asyncio
import ssl
import struct
from collections.abc import Callable

import pytest
import uvloop

from rackwise.cluster.certificates import ensure_ca, save_ca, write_node_keystore
from rackwise.net.frames import STAGING_BYTES, FrameStream
from rackwise.net.tls import client_context, server_context
from rackwise.security.ssl_config import ssl_settings

PASSWORD = "secret-pw"
PIECE = 1100
"""Bytes per client write, each its own TLS record."""


@pytest.fixture(scope="module")
def contexts(tmp_path_factory: pytest.TempPathFactory) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    directory = tmp_path_factory.mktemp("tls-records")
    ca = ensure_ca(directory)
    save_ca(ca)
    write_node_keystore(ca, directory / "node.p12", "broker-1", PASSWORD)
    server = ssl_settings(
        {
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": str(directory / "node.p12"),
            "ssl.keystore.password": PASSWORD,
        },
        "SSL",
    )
    client = ssl_settings(
        {"ssl.truststore.type": "PEM", "ssl.truststore.location": str(ca.pem_path)}
    )
    return server_context(server), client_context(client)


def frames() -> list[bytes]:
    """A small frame, a large one (four staging buffers) and a small one again, each body a
    pattern that shows a byte out of place."""
    sizes = [300, 4 * STAGING_BYTES + 12_345, 50]
    return [bytes((i * 7 + n) % 251 for i in range(n)) for n in sizes]


async def scenario(contexts: tuple[ssl.SSLContext, ssl.SSLContext]) -> list[bytes]:
    server_tls, client_tls = contexts
    loop = asyncio.get_running_loop()
    received: asyncio.Future[list[bytes]] = loop.create_future()
    streams: list[FrameStream] = []
    readers: list[asyncio.Task[None]] = []

    def made() -> FrameStream:
        stream = FrameStream()
        streams.append(stream)

        async def read_all() -> None:
            bodies = []
            for _ in frames():
                (size,) = struct.unpack(">i", await stream.read_exactly(4))
                if size <= STAGING_BYTES:
                    bodies.append(await stream.read_exactly(size))
                else:
                    bodies.append(bytes(await stream.read_body(size)))
            received.set_result(bodies)

        loop.call_soon(lambda: readers.append(loop.create_task(read_all())))
        return stream

    server = await loop.create_server(made, "127.0.0.1", 0, ssl=server_tls)
    port = server.sockets[0].getsockname()[1]
    _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client_tls)
    stream = b"".join(struct.pack(">i", len(f)) + f for f in frames())
    for start in range(0, len(stream), PIECE):
        writer.write(stream[start : start + PIECE])  # one TLS record each
    await writer.drain()
    bodies = await asyncio.wait_for(received, 20)
    writer.close()
    for each in streams:
        each.close()
    server.close()
    await server.wait_closed()
    return bodies


@pytest.mark.parametrize("new_loop", [asyncio.new_event_loop, uvloop.new_event_loop])
def test_a_frame_of_many_small_tls_records_arrives_whole(
    contexts: tuple[ssl.SSLContext, ssl.SSLContext],
    new_loop: Callable[[], asyncio.AbstractEventLoop],
) -> None:
    with asyncio.Runner(loop_factory=new_loop) as runner:
        assert runner.run(scenario(contexts)) == frames()
