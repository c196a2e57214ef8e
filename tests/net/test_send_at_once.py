"""A response's buffers go to the socket in one ``writev`` when nothing is queued before them,
and its file regions with ``sendfile``; whatever the socket does not take (a small send
buffer, a slow reader) is queued in order, so the peer reads exactly the concatenation, byte
for byte."""

from __future__ import annotations

import asyncio
import os
import socket
from pathlib import Path
from typing import Any

import pytest

from rackwise.net.frames import FrameStream
from rackwise.net.writer import _send_at_once, send_response
from rackwise.storage.files import FileCache, FileRegion, RegionUnavailable


async def _deliver(buffers: list[Any], send_buffer: int, queued_first: bytes = b"") -> bytes:
    left, right = socket.socketpair()
    left.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_buffer)
    _, writer = await asyncio.get_running_loop().connect_accepted_socket(FrameStream, left)
    peer_reader, peer_writer = await asyncio.open_connection(sock=right)
    try:
        if queued_first:
            # Fill the socket so that the transport queues; the next buffers must wait behind.
            writer.write(queued_first)
            assert _send_at_once(writer.transport, buffers) == buffers  # none sent past them
        sending = asyncio.create_task(send_response(writer, buffers))
        total = len(queued_first) + sum(len(b) for b in buffers)
        received = await asyncio.wait_for(peer_reader.readexactly(total), 10)
        await asyncio.wait_for(sending, 10)
        assert writer.transport.get_write_buffer_size() == 0
        return received
    finally:
        for each in (writer, peer_writer):
            each.transport.abort()  # a failed check must not wait for bytes nobody reads
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


def _regions(tmp_path: Path, sizes: list[int]) -> tuple[list[FileRegion], bytes]:
    """Regions of ``sizes`` bytes, one after another in one file, and the file's bytes."""
    data = os.urandom(sum(sizes) + 100)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    files = FileCache(4)
    regions, position = [], 50
    for size in sizes:
        regions.append(FileRegion(files, path, position, size))
        position += size
    return regions, data[50 : 50 + sum(sizes)]


@pytest.mark.parametrize("send_buffer", [4096, 4_000_000])
def test_file_regions_go_between_the_buffers_in_order(tmp_path: Path, send_buffer: int) -> None:
    # Runs of buffers and regions alternate; with a 4 KiB send buffer most of a region is
    # read and queued instead, and the peer still reads the same bytes.
    regions, file_bytes = _regions(tmp_path, [70_000, 5_000, 1_500_000])
    framing = [os.urandom(n) for n in (9, 3, 20, 1)]
    buffers = [framing[0], regions[0], framing[1], framing[2], regions[1], regions[2], framing[3]]
    received = asyncio.run(_deliver(buffers, send_buffer))
    expected = b"".join(bytes(b) for b in buffers)
    assert received == expected
    assert file_bytes in received.replace(framing[1] + framing[2], b"")


def test_regions_behind_queued_bytes_are_read_and_queued(tmp_path: Path) -> None:
    regions, file_bytes = _regions(tmp_path, [300_000])
    first = os.urandom(8_000_000)
    received = asyncio.run(_deliver([b"head", regions[0]], 4096, queued_first=first))
    assert received == first + b"head" + file_bytes


def test_a_region_whose_file_was_cut_cannot_be_sent(tmp_path: Path) -> None:
    regions, _ = _regions(tmp_path, [10_000])
    os.truncate(regions[0].path, 5_000)
    left, right = socket.socketpair()

    async def once() -> None:
        _, writer = await asyncio.open_connection(sock=left)
        try:
            with pytest.raises(RegionUnavailable, match="ends before"):
                _send_at_once(writer.transport, [b"head", regions[0]])
        finally:
            writer.close()
            await writer.wait_closed()

    with right:
        asyncio.run(once())
    regions[0].path.unlink()
    regions[0].files.close_all()
    with pytest.raises(RegionUnavailable, match="cannot be read"):
        regions[0].read()
