"""Frames: a size-prefixed stream cut at arbitrary points always yields the same frames, and a
size below 0 or above the maximum ends the stream with Kafka's message."""

from __future__ import annotations

import itertools
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackwise.protocol import DEFAULT_MAX_REQUEST_BYTES, Close, FrameDecoder, frame

PAYLOADS = st.lists(st.binary(max_size=300), max_size=12)


def _cut(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    bounds = [0, *points, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


def test_the_default_maximum_is_kafkas_socket_request_max_bytes() -> None:
    assert DEFAULT_MAX_REQUEST_BYTES == 104857600
    assert FrameDecoder().max_size == 104857600


def test_a_frame_is_its_size_then_its_bytes() -> None:
    assert frame(b"abc") == b"\x00\x00\x00\x03abc"
    assert frame(b"") == b"\x00\x00\x00\x00"


@settings(max_examples=200, deadline=None)
@given(payloads=PAYLOADS, cuts=st.lists(st.integers(0, 10_000), max_size=40))
def test_any_chunking_yields_the_frames_in_order(payloads: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(frame(p) for p in payloads)
    decoder = FrameDecoder(max_size=300)
    received: list[bytes] = []
    for chunk in _cut(stream, cuts):
        result = decoder.feed(chunk)
        assert result.close is None
        received.extend(result.frames)
    assert received == payloads
    assert decoder.buffered == 0


@settings(max_examples=100, deadline=None)
@given(payloads=PAYLOADS, tail=st.binary(min_size=1, max_size=3))
def test_an_incomplete_frame_waits_for_the_rest(payloads: list[bytes], tail: bytes) -> None:
    """A partial size prefix or body is held back, byte for byte."""
    stream = b"".join(frame(p) for p in payloads)
    decoder = FrameDecoder(max_size=300)
    assert list(decoder.feed(stream + tail[:3]).frames) == payloads
    assert decoder.buffered == len(tail[:3])


def test_one_byte_at_a_time() -> None:
    decoder = FrameDecoder()
    stream = frame(b"hello") + frame(b"") + frame(b"world")
    frames = [f for byte in stream for f in decoder.feed(bytes([byte])).frames]
    assert frames == [b"hello", b"", b"world"]


@pytest.mark.parametrize(
    ("size", "reason"),
    [
        (-1, "Invalid receive (size = -1)"),
        (-(2**31), "Invalid receive (size = -2147483648)"),
        (1001, "Invalid receive (size = 1001 larger than 1000)"),
        (2**31 - 1, "Invalid receive (size = 2147483647 larger than 1000)"),
    ],
)
def test_a_bad_size_closes_the_stream(size: int, reason: str) -> None:
    decoder = FrameDecoder(max_size=1000)
    result = decoder.feed(frame(b"first") + struct.pack(">i", size) + b"more bytes")
    assert result.frames == (b"first",)
    assert result.close == Close(reason)
    assert decoder.closed == Close(reason)
    # Nothing is read after the break, and nothing is kept.
    again = decoder.feed(frame(b"later"))
    assert again.frames == ()
    assert again.close == Close(reason)
    assert decoder.buffered == 0


def test_a_frame_of_exactly_the_maximum_is_accepted() -> None:
    decoder = FrameDecoder(max_size=1000)
    payload = bytes(range(250)) * 4
    assert decoder.feed(frame(payload)).frames == (payload,)


def test_a_bad_size_is_refused_before_its_bytes_arrive() -> None:
    """The size alone decides: no body bytes are buffered for an oversized frame."""
    decoder = FrameDecoder()
    result = decoder.feed(struct.pack(">i", DEFAULT_MAX_REQUEST_BYTES + 1))
    assert result.close is not None
    assert result.close.reason == (
        f"Invalid receive (size = {DEFAULT_MAX_REQUEST_BYTES + 1} larger than 104857600)"
    )


def test_large_frames_in_many_chunks_are_reassembled() -> None:
    payload = bytes(i % 251 for i in range(200_000))
    stream = frame(payload) * 2
    decoder = FrameDecoder()
    frames = []
    for start in range(0, len(stream), 4093):
        frames.extend(decoder.feed(stream[start : start + 4093]).frames)
    assert frames == [payload, payload]
    assert decoder.buffered == 0


def test_a_negative_maximum_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 0, not -1"):
        FrameDecoder(max_size=-1)
