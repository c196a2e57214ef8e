"""A response's buffers go to the socket in one ``writev`` when nothing is queued before them;
whatever the socket does not take (a small send buffer, a slow reader) is queued in order, so
the peer reads exactly the concatenation, byte for byte."""

from __future__ import annotations

import asyncio
import os
import socket

from rackwise.net.server import _send_at_once


async def _deliver(buffers: list[bytes], send_buffer: int, queued_first: bytes = b"") -> bytes:
    left, right = socket.socketpair()
    left.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_buffer)
    _, writer = await asyncio.open_connection(sock=left)
    peer_reader, peer_writer = await asyncio.open_connection(sock=right)
    try:
        if queued_first:
            # Fill the socket so that the transport queues; the next buffers must wait behind.
            writer.write(queued_first)
        rest = _send_at_once(writer.transport, buffers)
        if queued_first:
            assert rest is buffers  # nothing written past bytes already queued
        writer.writelines(rest)
        total = len(queued_first) + sum(len(b) for b in buffers)
        received = await asyncio.wait_for(peer_reader.readexactly(total), 10)
        await writer.drain()
        return received
    finally:
        for each in (writer, peer_writer):
            each.close()
            await each.wait_closed()


def test_partial_writev_sends_the_rest_in_order() -> None:
    buffers = [os.urandom(n) for n in (7, 300_000, 1, 65_536, 2_000_000, 13)]
    received = asyncio.run(_deliver(buffers, send_buffer=4096))
    assert received == b"".join(buffers)


def test_small_response_goes_whole() -> None:
    buffers = [b"\x00\x00\x00\x05", b"hello"]
    left, right = socket.socketpair()

    async def once() -> list[bytes]:
        _, writer = await asyncio.open_connection(sock=left)
        try:
            return list(_send_at_once(writer.transport, buffers))
        finally:
            writer.close()
            await writer.wait_closed()

    with right:
        assert asyncio.run(once()) == []
        assert right.recv(100) == b"\x00\x00\x00\x05hello"


def test_waits_behind_bytes_already_queued() -> None:
    first = os.urandom(8_000_000)
    buffers = [os.urandom(1000), os.urandom(50_000)]
    received = asyncio.run(_deliver(buffers, send_buffer=4096, queued_first=first))
    assert received == first + b"".join(buffers)
