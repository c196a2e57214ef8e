"""The codec's tolerance and its refusals: unknown tagged fields, damaged frames, bad values."""

from __future__ import annotations

import dataclasses
import io
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.serial import entity_reader, entity_writer

from rackwise.records import (
    RECORD_TYPES_BY_NAME,
    MetadataParseException,
    PartitionChangeRecord,
    PartitionRecord,
    RecordEncodeError,
    RegisterBrokerRecord,
    TopicRecord,
    decode_record,
    encode_record,
)
from rackwise.records.codec import read_uvarint, uvarint_bytes
from rackwise.records.metadata import PartitionRecordV0, RegisterBrokerRecordV0

U1 = uuid.UUID(int=1)
PARTITION = PartitionRecord(
    partition_id=3,
    topic_id=U1,
    replicas=(1, 2),
    isr=(1, 2),
    removing_replicas=(),
    adding_replicas=(),
    leader=1,
    leader_epoch=4,
    partition_epoch=6,
    directories=(U1, U1),
)


def test_unknown_tagged_fields_are_skipped() -> None:
    change = PartitionChangeRecord(partition_id=1, topic_id=U1, leader=2)
    frame = encode_record(change)
    assert frame.endswith(bytes.fromhex("01 01 04 00000002"))
    # A newer writer's record: the known tag 1 plus unknown tags 9 and 40 (3 and 0 bytes).
    newer = frame[:-7] + bytes.fromhex("03 01 04 00000002 09 03 aabbcc 28 00")
    assert decode_record(newer) == change
    with pytest.raises(KeyError, match="Unknown tagged field"):
        entity_reader(type(change))(newer[3:], 0)  # kio itself is not tolerant


def test_a_known_tag_must_fill_its_size() -> None:
    frame = encode_record(PartitionChangeRecord(partition_id=1, topic_id=U1, leader=2))
    bad = frame[:-5] + bytes.fromhex("05 00000002 00")  # tag 1 claims 5 bytes, holds 4
    with pytest.raises(MetadataParseException, match="Leader does not fill its size"):
        decode_record(bad)


@pytest.mark.parametrize("cut", range(len(encode_record(PARTITION))))
def test_every_truncation_is_refused(cut: int) -> None:
    with pytest.raises(MetadataParseException):
        decode_record(encode_record(PARTITION)[:cut])


def test_garbage_after_the_body_is_refused() -> None:
    with pytest.raises(
        MetadataParseException, match=r"Found 2 byte\(s\) of garbage after 3 \(PartitionRecord\)"
    ):
        decode_record(encode_record(PARTITION) + b"\x00\x00")


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        ("00 03 02", "with frame version 0. Note that upgrades from the preview release"),
        ("02 03 02", r"unknown frame version 2\(only frame version 1 is supported\)"),
        ("01 63 00", "Unknown metadata id 99"),
        ("01 03 07", "version 7 of PartitionRecord is not supported"),
        ("01 ffff03 00", "Value for type was too large."),
    ],
)
def test_bad_frame_headers(frame: str, message: str) -> None:
    with pytest.raises(MetadataParseException, match=message):
        decode_record(bytes.fromhex(frame) + b"\x00" * 40)


def test_an_empty_frame_is_refused() -> None:
    with pytest.raises(MetadataParseException, match="frame version: no bytes left"):
        decode_record(b"")


def test_null_in_a_non_nullable_string_is_refused() -> None:
    frame = bytes.fromhex("01 02 00 00") + U1.bytes + b"\x00"  # Name length 0 = null
    with pytest.raises(MetadataParseException, match="null found for non-nullable field Name"):
        decode_record(frame)


@pytest.mark.parametrize(
    ("position", "count", "message"),
    [
        (3 + 20, b"\x7f", "requires a buffer of at least 528 bytes"),  # Replicas: 126 ints
        (3 + 20, b"\xff\xff\x03", "requires a buffer of at least"),  # 65534 ints
        (3 + 52, b"\x7f", "requires a buffer of at least 2072 bytes"),  # Directories: 126 uuids
    ],
)
def test_an_impossible_array_count_is_refused(position: int, count: bytes, message: str) -> None:
    frame = encode_record(PARTITION)
    damaged = frame[:position] + count + frame[position + 1 :]
    with pytest.raises(MetadataParseException, match=message):
        decode_record(damaged)


def test_long_arrays_round_trip() -> None:
    replicas = tuple(range(300))  # counts of two varint bytes, past the prebuilt structs
    dirs = tuple(uuid.UUID(int=n) for n in range(300))
    record = dataclasses.replace(PARTITION, replicas=replicas, isr=replicas, directories=dirs)
    frame = encode_record(record)
    assert decode_record(frame) == record
    out = io.BytesIO()
    entity_writer(PartitionRecord)(out, record)
    assert out.getvalue() == frame[3:]


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (
            RegisterBrokerRecord(
                broker_id=1,
                incarnation_id=U1,
                broker_epoch=0,
                end_points=(
                    RegisterBrokerRecord.BrokerEndpoint(
                        name="PLAINTEXT", host="h", port=70000, security_protocol=0
                    ),
                ),
                features=(),
                rack=None,
            ),
            r"end_points\[0\].port = 70000 is outside the range of uint16",
        ),
        (
            TopicRecord(name=None, topic_id=U1),  # type: ignore[arg-type]
            "TopicRecordV0.name is null but the field is not nullable",
        ),
        (
            PartitionChangeRecord(partition_id=2**31, topic_id=U1),
            "partition_id = 2147483648 is outside the range of int32",
        ),
        (
            PartitionChangeRecord(partition_id=1, topic_id=U1, isr=("1",)),  # type: ignore[arg-type]
            r"isr\[0\] must be an integer, not '1'",
        ),
    ],
)
def test_encode_errors_name_the_field(record: object, message: str) -> None:
    with pytest.raises(RecordEncodeError, match=message):
        encode_record(record)


def test_older_versions_upgrade_to_the_latest_class() -> None:
    old = RegisterBrokerRecordV0(
        broker_id=4,
        incarnation_id=U1,
        broker_epoch=9,
        end_points=(
            RegisterBrokerRecordV0.BrokerEndpoint(
                name="PLAINTEXT", host="h", port=1, security_protocol=0
            ),
        ),
        features=(),
        rack="r",
        fenced=False,
    )
    new = RECORD_TYPES_BY_NAME["RegisterBrokerRecord"].upgrade(old)
    assert type(new) is RegisterBrokerRecord
    assert new.end_points == (
        RegisterBrokerRecord.BrokerEndpoint(
            name="PLAINTEXT", host="h", port=1, security_protocol=0
        ),
    )
    assert (new.in_controlled_shutdown, new.is_migrating_zk_broker, new.log_dirs) == (
        False,
        False,
        (),
    )
    assert (new.broker_id, new.rack, new.fenced) == (4, "r", False)
    partition = RECORD_TYPES_BY_NAME["PartitionRecord"].upgrade(
        PartitionRecordV0(
            partition_id=0,
            topic_id=U1,
            replicas=(1,),
            isr=(1,),
            removing_replicas=(),
            adding_replicas=(),
            leader=1,
            leader_epoch=0,
            partition_epoch=0,
        )
    )
    assert partition.directories == () and partition.eligible_leader_replicas is None


def test_decoded_uuids_are_shared() -> None:
    cache: dict[bytes, uuid.UUID] = {}
    first = decode_record(encode_record(PARTITION), uuids=cache)
    second = decode_record(encode_record(PARTITION), uuids=cache)
    assert first.topic_id is second.topic_id is first.directories[0] is second.directories[1]


@given(st.integers(0, 2**35 - 1))
def test_uvarint_round_trip(value: int) -> None:
    raw = uvarint_bytes(value)
    assert read_uvarint(raw + b"\xff", 0) == (value, len(raw))
    out = io.BytesIO()
    from kio.serial.writers import write_unsigned_varint

    write_unsigned_varint(out, value)  # type: ignore[arg-type]
    assert out.getvalue() == raw
