"""The consumer group records in Kafka's formats: golden bytes and round trips."""

from __future__ import annotations

import uuid

import pytest

from rackwise.groups.consumer_records import (
    CurrentAssignment,
    GroupEpoch,
    MemberMetadata,
    PartitionMetadata,
    TargetMember,
    TargetMetadata,
    Tombstone,
    TopicMetadata,
    decode,
    encode,
    encode_tombstone,
)
from rackwise.groups.offsets import GroupOffsets, OffsetsFormatError, decode_key

T = uuid.UUID(int=1)


def test_group_epoch_bytes() -> None:
    key, value = encode(GroupEpoch("g", 1))
    assert key == bytes.fromhex("0003 0001 67")
    assert value == bytes.fromhex("0000 00000001 00")


def test_target_member_bytes() -> None:
    key, value = encode(TargetMember("g", "m", {T: frozenset({2, 0})}))
    assert key == bytes.fromhex("0007 0001 67 0001 6d")
    # version 0; one topic: its id, two partitions (0, 2), an empty tag buffer; the tags
    assert value == bytes.fromhex("0000 02" + T.bytes.hex() + "03 00000000 00000002 00 00")


RECORDS = [
    GroupEpoch("g", 7),
    PartitionMetadata("g", (TopicMetadata(T, "t", 2, (("/dc1/r1", "/dc2/r1"), ("/dc1/r2",))),)),
    PartitionMetadata("g", (TopicMetadata(T, "t", 3),)),
    MemberMetadata("g", "m", "i", "/dc1/r1", "c", "/127.0.0.1", ("a", "b"), None, 5000, "range"),
    MemberMetadata("g", "m", None, None, "c", "h", (), "t.*", -1, None),
    TargetMetadata("g", 7),
    TargetMember("g", "m", {T: frozenset({0, 1})}),
    CurrentAssignment("g", "m", 7, 6, 1, {T: frozenset({0})}, {T: frozenset({1})}),
]


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: type(r).__name__)
def test_round_trip(record: object) -> None:
    key, value = encode(record)  # type: ignore[arg-type]
    assert decode(key, value) == record


@pytest.mark.parametrize("kind", [3, 4, 5, 6, 7, 8])
def test_tombstones_round_trip(kind: int) -> None:
    member = "m" if kind in (5, 7, 8) else ""
    tombstone = Tombstone(kind, "g", member)
    assert decode(encode_tombstone(tombstone), None) == tombstone


def test_the_offsets_state_skips_consumer_group_records() -> None:
    offsets = GroupOffsets()
    for record in RECORDS:
        key, value = encode(record)  # type: ignore[arg-type]
        assert decode_key(key) is None
        offsets.replay(key, value)
    assert not offsets.has_group("g")


def test_a_cut_value_is_a_format_error() -> None:
    key, value = encode(RECORDS[3])
    with pytest.raises(OffsetsFormatError, match="a consumer group value"):
        decode(key, value[:-5])
