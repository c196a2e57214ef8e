"""Committed offsets of simple groups: the partition Kafka picks for a group (Java's hashCode,
checked against Java 17), the __consumer_offsets records byte for byte, and the commit rules
Kafka applies to a group without members."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rackwise.common.error_codes import (
    GROUP_ID_NOT_FOUND,
    ILLEGAL_GENERATION,
    NONE,
    UNKNOWN_MEMBER_ID,
)
from rackwise.common.java import java_string_hash
from rackwise.groups.offsets import (
    CommittedOffset,
    GroupOffsets,
    OffsetsFormatError,
    decode_key,
    decode_value,
    encode_group_key,
    encode_key,
    encode_value,
    partition_for,
)

# (group id, String.hashCode(), partition of 50) as Java 17 computes them;
# "polygenelubricants" hashes to Integer.MIN_VALUE, which Kafka's Utils.abs makes 0.
JAVA = [
    ("my-group", -1906497762, 12),
    ("", 0, 0),
    ("test-group", 627841412, 12),
    ("grüße-😀", 347391577, 27),
    ("perf-consumer-1", -706043522, 22),
    ("polygenelubricants", -2147483648, 0),
]


@pytest.mark.parametrize(("group", "hashed", "partition"), JAVA)
def test_the_partition_of_a_group_is_kafkas(group: str, hashed: int, partition: int) -> None:
    assert java_string_hash(group) == hashed
    assert partition_for(group, 50) == partition


@given(st.text(), st.integers(min_value=1, max_value=1000))
def test_every_group_has_a_partition(group: str, partitions: int) -> None:
    assert 0 <= partition_for(group, partitions) < partitions


def test_records_are_written_as_kafka_writes_them() -> None:
    # OffsetCommitKey v1: version, group, topic (int16-length strings), partition.
    assert encode_key("g", "t", 0) == bytes.fromhex("0001 0001 67 0001 74 00000000")
    # OffsetCommitValue v3: version, offset, leader epoch, metadata, commit timestamp.
    value = encode_value(CommittedOffset(42, 5, "m", 1_700_000_000_000))
    assert value == (
        bytes.fromhex("0003 000000000000002a 00000005 0001 6d")
        + struct.pack(">q", 1_700_000_000_000)
    )
    # With an expiry (OffsetCommit v2-v4 asked for a retention time): version 1.
    expiring = encode_value(CommittedOffset(42, -1, "", 10, 20))
    assert expiring == bytes.fromhex("0001 000000000000002a 0000 000000000000000a 0000000000000014")


def test_every_value_version_kafka_wrote_is_read() -> None:
    v0 = bytes.fromhex("0000 0000000000000007 0002 6869 0000000000000009")
    assert decode_value(v0) == CommittedOffset(7, -1, "hi", 9)
    v1 = bytes.fromhex("0001 0000000000000007 0000 0000000000000009 000000000000000b")
    assert decode_value(v1) == CommittedOffset(7, -1, "", 9, 11)
    v2 = bytes.fromhex("0002 0000000000000007 0000 0000000000000009")
    assert decode_value(v2) == CommittedOffset(7, -1, "", 9)
    # v4 is flexible: a compact string (length + 1) and tagged fields (one unknown, skipped).
    v4 = bytes.fromhex("0004 0000000000000007 00000003 03 6869 0000000000000009 01 05 02 abcd")
    assert decode_value(v4) == CommittedOffset(7, 3, "hi", 9)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (bytes.fromhex("0005 00"), "unknown offset commit value version 5"),
        (bytes.fromhex("0003 0000000000000007"), "cut short"),
        (bytes.fromhex("0003 0000000000000007 00000000 ffff 0000000000000009"), "null string"),
        (bytes.fromhex("0003 0000000000000007 00000000 0001 ff 0000000000000009"), "not UTF-8"),
    ],
)
def test_a_value_that_does_not_parse_says_why(value: bytes, message: str) -> None:
    with pytest.raises(OffsetsFormatError, match=message):
        decode_value(value)


def test_keys_of_other_kinds_are_skipped() -> None:
    assert decode_key(encode_key("g", "t", 3)) == ("g", "t", 3)
    assert decode_key(bytes.fromhex("0000 0001 67 0001 74 00000003")) == ("g", "t", 3)  # v0
    assert decode_key(bytes.fromhex("0003 0001 67")) is None  # ConsumerGroupMetadataKey
    state = GroupOffsets()
    state.replay(bytes.fromhex("0003 0001 67"), b"\x00\x00anything")
    assert not state.has_group("g")


def test_deleting_a_group_writes_kafkas_tombstones() -> None:
    assert encode_group_key("g") == bytes.fromhex("0002 0001 67")  # GroupMetadataKey v2
    assert decode_key(encode_group_key("g")) == "g"
    state = GroupOffsets()
    for partition in (1, 0):
        state.replay(encode_key("g", "t", partition), encode_value(CommittedOffset(9)))
    state.replay(encode_key("other", "t", 0), encode_value(CommittedOffset(4)))
    deletion = state.deletion("g")
    assert deletion == [
        (encode_key("g", "t", 0), None),
        (encode_key("g", "t", 1), None),
        (encode_group_key("g"), None),
    ]
    for key, value in deletion:
        state.replay(key, value)
    assert not state.has_group("g")
    assert state.offsets("other") == {("t", 0): CommittedOffset(4)}
    # A group's metadata written by Kafka (a group with members once) makes the group exist.
    state.replay(encode_group_key("classic"), b"\x00\x03...")
    assert state.has_group("classic") and state.offsets("classic") == {}


@given(
    st.text(),
    st.text(),
    st.integers(0, 2**31 - 1),
    st.integers(-1, 2**63 - 1),
    st.integers(-1, 2**31 - 1),
    st.text(max_size=50),
    st.integers(0, 2**62),
    st.sampled_from([-1, 86_400_000]),
)
def test_what_is_written_reads_back(
    group: str,
    topic: str,
    partition: int,
    offset: int,
    epoch: int,
    metadata: str,
    when: int,
    retention: int,
) -> None:
    expire = -1 if retention < 0 else when + retention
    committed = CommittedOffset(offset, epoch if expire < 0 else -1, metadata, when, expire)
    assert decode_key(encode_key(group, topic, partition)) == (group, topic, partition)
    assert decode_value(encode_value(committed)) == committed


def test_replay_keeps_the_last_commit_and_a_tombstone_removes_it() -> None:
    state = GroupOffsets()
    key = encode_key("billing", "orders", 0)
    state.replay(key, encode_value(CommittedOffset(1)))
    state.replay(key, encode_value(CommittedOffset(5, 2, "x", 3)))
    state.replay(encode_key("billing", "orders", 1), encode_value(CommittedOffset(9)))
    assert state.offsets("billing") == {
        ("orders", 0): CommittedOffset(5, 2, "x", 3),
        ("orders", 1): CommittedOffset(9),
    }
    state.replay(key, None)
    assert dict(state.offsets("billing")) == {("orders", 1): CommittedOffset(9)}
    assert state.offsets("other") == {}
    with pytest.raises(OffsetsFormatError, match="without a key"):
        state.replay(None, b"")


@pytest.mark.parametrize(
    ("exists", "generation", "version", "error"),
    [
        (False, -1, 9, NONE),  # a simple consumer creates its group
        (True, -1, 2, NONE),
        (False, 3, 8, ILLEGAL_GENERATION),  # no such group, before v9
        (False, 3, 9, GROUP_ID_NOT_FOUND),  # from v9
        (True, 0, 9, UNKNOWN_MEMBER_ID),  # the group has no member of any generation
    ],
)
def test_commit_rules_of_a_group_without_members(
    exists: bool, generation: int, version: int, error: int
) -> None:
    state = GroupOffsets()
    if exists:
        state.replay(encode_key("g", "t", 0), encode_value(CommittedOffset(1)))
    assert state.commit_error("g", generation, version) == error


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["g1", "g2"]),
            st.sampled_from(["t1", "t2"]),
            st.integers(0, 2),
            st.none() | st.integers(0, 1000),
        ),
        max_size=40,
    )
)
def test_replaying_a_log_leaves_the_last_commit_of_each_partition(
    log: list[tuple[str, str, int, int | None]],
) -> None:
    state = GroupOffsets()
    model: dict[str, dict[tuple[str, int], int]] = {}
    for group, topic, partition, offset in log:
        key = encode_key(group, topic, partition)
        if offset is None:
            state.replay(key, None)
            model.get(group, {}).pop((topic, partition), None)
        else:
            state.replay(key, encode_value(CommittedOffset(offset)))
            model.setdefault(group, {})[(topic, partition)] = offset
    for group in ("g1", "g2"):
        assert {k: v.offset for k, v in state.offsets(group).items()} == model.get(group, {})
        # A group exists once it committed, even if tombstones removed every offset since.
        assert state.has_group(group) == (group in model)
