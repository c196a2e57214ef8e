"""FrameStream over real socket pairs: whatever way the peer cuts its writes, the owner reads
exactly the frames sent, small ones as bytes and large ones as read-only views (writable
when the owner asks); at most
STAGING_BYTES are read ahead of the owner; a peer that closes mid-frame ends the read with
IncompleteReadError, and writing to a lost connection fails ConnectionResetError."""

from __future__ import annotations

import asyncio
import socket
import struct

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

from rackwise.net.frames import STAGING_BYTES, FrameStream


async def _pair() -> tuple[FrameStream, socket.socket]:
    left, right = socket.socketpair()
    right.setblocking(False)
    _, stream = await asyncio.get_running_loop().connect_accepted_socket(FrameStream, left)
    return stream, right


async def _read_frame(stream: FrameStream) -> bytes | memoryview:
    (size,) = struct.unpack(">i", await stream.read_exactly(4))
    if size <= STAGING_BYTES:
        return await stream.read_exactly(size)
    return await stream.read_body(size)


async def _send_in_pieces(peer: socket.socket, data: bytes, cuts: list[int]) -> None:
    loop = asyncio.get_running_loop()
    start = 0
    for cut in [*sorted(c % (len(data) + 1) for c in cuts), len(data)]:
        if cut > start:
            await loop.sock_sendall(peer, data[start:cut])
            await asyncio.sleep(0)  # let the stream read each piece on its own
            start = cut


frame_sizes = st.one_of(
    st.integers(0, 200),
    st.integers(STAGING_BYTES - 8, STAGING_BYTES + 8),
    st.integers(STAGING_BYTES, 600_000),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sizes=st.lists(frame_sizes, min_size=1, max_size=6),
    cuts=st.lists(st.integers(0, 1 << 22), max_size=12),
    seed=st.integers(0, 255),
)
def test_the_frames_read_are_the_frames_sent(sizes: list[int], cuts: list[int], seed: int) -> None:
    frames = [bytes((seed + i + j) % 251 for j in range(size)) for i, size in enumerate(sizes)]
    wire = b"".join(struct.pack(">i", len(f)) + f for f in frames)

    async def scenario() -> list[tuple[bytes, bool]]:
        stream, peer = await _pair()
        try:
            sending = asyncio.create_task(_send_in_pieces(peer, wire, cuts))
            got = []
            for _ in frames:
                frame = await asyncio.wait_for(_read_frame(stream), 10)
                readonly = isinstance(frame, memoryview) and frame.readonly
                got.append((bytes(frame), readonly))
            await sending
            return got
        finally:
            peer.close()
            stream.close()

    got = asyncio.run(scenario())
    assert [g for g, _ in got] == frames
    assert [large for _, large in got] == [len(f) > STAGING_BYTES for f in frames]


def test_a_body_read_writable_is_the_owners_to_write_into() -> None:
    data = bytes(range(256)) * 1024  # 256 KiB: read through read_body

    async def scenario() -> tuple[memoryview, memoryview]:
        stream, peer = await _pair()
        try:
            sending = asyncio.create_task(asyncio.get_running_loop().sock_sendall(peer, data * 2))
            writable = await asyncio.wait_for(stream.read_body(len(data), writable=True), 10)
            readonly = await asyncio.wait_for(stream.read_body(len(data)), 10)
            await sending
            return writable, readonly
        finally:
            peer.close()
            stream.close()

    writable, readonly = asyncio.run(scenario())
    assert bytes(writable) == data and bytes(readonly) == data
    assert not writable.readonly and readonly.readonly
    writable[:8] = b"\xff" * 8
    assert bytes(writable[:8]) == b"\xff" * 8 and bytes(readonly[:8]) == data[:8]


def test_reading_pauses_when_the_owner_reads_nothing() -> None:
    async def scenario() -> tuple[bool, int, bytes]:
        stream, peer = await _pair()
        try:
            peer.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 65_536)
            data = bytes(range(256)) * 16_384  # 4 MiB, far more than the socket buffers hold
            sending = asyncio.create_task(asyncio.get_running_loop().sock_sendall(peer, data))
            await asyncio.sleep(0.3)
            reading = stream.transport.is_reading()
            staged = stream._end - stream._start
            first = await stream.read_exactly(16)
            await stream.read_body(len(data) - 16)  # the rest, once the owner reads
            await asyncio.wait_for(sending, 10)
            return reading, staged, first
        finally:
            peer.close()
            stream.close()

    reading, staged, first = asyncio.run(scenario())
    assert not reading
    assert staged == STAGING_BYTES
    assert first == bytes(range(16))


def test_a_peer_closing_mid_frame_ends_the_read() -> None:
    async def scenario(sent: bytes, large: bool) -> asyncio.IncompleteReadError:
        stream, peer = await _pair()
        try:
            await asyncio.get_running_loop().sock_sendall(peer, sent)
            peer.close()
            try:
                if large:
                    await stream.read_body(STAGING_BYTES * 3)
                else:
                    await stream.read_exactly(100)
            except asyncio.IncompleteReadError as e:
                return e
            raise AssertionError("the read did not fail")
        finally:
            stream.close()

    small = asyncio.run(scenario(b"x" * 10, large=False))
    assert (small.partial, small.expected) == (b"x" * 10, 100)
    large = asyncio.run(scenario(b"y" * 100_000, large=True))
    assert (large.partial, large.expected) == (b"y" * 100_000, STAGING_BYTES * 3)
    empty = asyncio.run(scenario(b"", large=False))
    assert empty.partial == b""


def test_drain_fails_once_the_connection_is_lost() -> None:
    async def scenario() -> bool:
        stream, peer = await _pair()
        peer.close()
        with pytest.raises(asyncio.IncompleteReadError):
            await stream.read_exactly(1)
        for _ in range(50):  # the peer's reset reaches the transport on a later write
            stream.write(b"z" * 65_536)
            try:
                await stream.drain()
            except ConnectionResetError:
                await stream.wait_closed()
                return True
            await asyncio.sleep(0.01)
        return False

    assert asyncio.run(scenario())
