"""The records of classic groups: ``GroupMetadataValue`` byte for byte as Kafka writes it and
every version Kafka has written read back (checked against a writer built from Kafka's schema,
and for any value, hypothesis), and the topics of kafka-python's consumer subscriptions."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription

from rackwise.groups.group_metadata import (
    StoredGroup,
    StoredMember,
    decode_metadata,
    encode_metadata,
    subscription_topics,
)
from rackwise.groups.offsets import OffsetsFormatError

# ---- subscriptions ------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_subscribed_topics_from_kafka_pythons_subscriptions(version: int) -> None:
    encoded = ConsumerProtocolSubscription(
        topics=["orders", "payments"],
        user_data=b"x",
        owned_partitions=[],
        generation_id=4,
        rack_id="/dc1/r1",
    ).encode(version=version)
    assert subscription_topics(bytes(encoded)) == ["orders", "payments"]


# ---- GroupMetadataValue ----------------------------------------------------------------------


def _s(text: str | None) -> bytes:
    if text is None:
        return struct.pack(">h", -1)
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def _b(data: bytes) -> bytes:
    return struct.pack(">i", len(data)) + data


def _uv(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _cs(text: str | None) -> bytes:
    if text is None:
        return b"\x00"
    data = text.encode()
    return _uv(len(data) + 1) + data


def kafka_value(version: int, value: StoredGroup) -> bytes:
    """``GroupMetadataValue`` of ``version`` written field by field from Kafka's schema (its
    JSON: rebalanceTimeout from v1, currentStateTimestamp from v2, groupInstanceId from v3,
    flexible from v4)."""
    flexible = version >= 4
    s = _cs if flexible else _s
    out = struct.pack(">h", version) + s(value.protocol_type)
    out += struct.pack(">i", value.generation) + s(value.protocol) + s(value.leader)
    if version >= 2:
        out += struct.pack(">q", value.state_timestamp_ms)
    out += _uv(len(value.members) + 1) if flexible else struct.pack(">i", len(value.members))
    for m in value.members:
        out += s(m.member_id)
        if version >= 3:
            out += s(m.instance_id)
        out += s(m.client_id) + s(m.client_host)
        if version >= 1:
            out += struct.pack(">i", m.rebalance_timeout_ms)
        out += struct.pack(">i", m.session_timeout_ms)
        for data in (m.subscription, m.assignment):
            out += (_uv(len(data) + 1) + data) if flexible else _b(data)
        if flexible:
            out += b"\x00"
    if flexible:
        out += b"\x00"
    return out


EXAMPLE = StoredGroup(
    protocol_type="consumer",
    generation=7,
    protocol="range",
    leader="c-1",
    state_timestamp_ms=1_700_000_000_000,
    members=(
        StoredMember("c-1", None, "c", "/127.0.0.1", 300_000, 45_000, b"\x00\x01", b"\x00\x02"),
        StoredMember("p-2", "pod-2", "p", "/10.0.0.2", 60_000, 10_000, b"", b"\x09"),
    ),
)


def test_version_3_byte_for_byte() -> None:
    expected = (
        bytes.fromhex("0003")
        + _s("consumer")
        + bytes.fromhex("00000007")
        + _s("range")
        + _s("c-1")
        + struct.pack(">q", 1_700_000_000_000)
        + bytes.fromhex("00000002")
        + _s("c-1") + _s(None) + _s("c") + _s("/127.0.0.1")
        + struct.pack(">ii", 300_000, 45_000) + _b(b"\x00\x01") + _b(b"\x00\x02")
        + _s("p-2") + _s("pod-2") + _s("p") + _s("/10.0.0.2")
        + struct.pack(">ii", 60_000, 10_000) + _b(b"") + _b(b"\x09")
    )  # fmt: skip
    assert encode_metadata(EXAMPLE) == expected == kafka_value(3, EXAMPLE)
    assert decode_metadata(expected) == EXAMPLE


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_every_version_kafka_wrote_reads_back(version: int) -> None:
    read = decode_metadata(kafka_value(version, EXAMPLE))
    assert (read.protocol_type, read.generation, read.protocol, read.leader) == (
        "consumer",
        7,
        "range",
        "c-1",
    )
    assert read.state_timestamp_ms == (1_700_000_000_000 if version >= 2 else -1)
    assert [m.member_id for m in read.members] == ["c-1", "p-2"]
    assert [m.instance_id for m in read.members] == (
        [None, "pod-2"] if version >= 3 else [None, None]
    )
    # before v1 there is no rebalance timeout: the session timeout stands in, as in Kafka
    assert [m.rebalance_timeout_ms for m in read.members] == (
        [300_000, 60_000] if version >= 1 else [45_000, 10_000]
    )
    assert [(m.subscription, m.assignment) for m in read.members] == [
        (b"\x00\x01", b"\x00\x02"),
        (b"", b"\x09"),
    ]


def test_values_that_do_not_parse_are_named() -> None:
    with pytest.raises(OffsetsFormatError, match="unknown group metadata value version 5"):
        decode_metadata(b"\x00\x05")
    with pytest.raises(OffsetsFormatError, match="group metadata value is cut short"):
        decode_metadata(encode_metadata(EXAMPLE)[:-3])


texts = st.text(max_size=12)
stored_members = st.builds(
    StoredMember,
    member_id=texts,
    instance_id=st.none() | texts,
    client_id=texts,
    client_host=texts,
    rebalance_timeout_ms=st.integers(0, 2**31 - 1),
    session_timeout_ms=st.integers(0, 2**31 - 1),
    subscription=st.binary(max_size=20),
    assignment=st.binary(max_size=20),
)
stored_groups = st.builds(
    StoredGroup,
    protocol_type=texts,
    generation=st.integers(-(2**31), 2**31 - 1),
    protocol=st.none() | texts,
    leader=st.none() | texts,
    state_timestamp_ms=st.integers(-1, 2**62),
    members=st.lists(stored_members, max_size=4).map(tuple),
)


@given(stored_groups, st.sampled_from([3, 4]))
def test_any_value_reads_back(value: StoredGroup, version: int) -> None:
    assert decode_metadata(kafka_value(version, value)) == value
    if version == 3:
        assert decode_metadata(encode_metadata(value)) == value
