"""Golden bytes: every record type's frame written out by hand from its schema, field by field,
and held against both our codec and kio's ``entity_writer`` (the wire protocol's codec)."""

from __future__ import annotations

import io
import uuid
from typing import Any

import pytest
from kio.serial import entity_writer

from rackwise.records import (
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    FeatureLevelRecord,
    FenceBrokerRecord,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
    decode_record,
    encode_record,
)
from rackwise.records.metadata import PartitionRecordV0, RegisterBrokerRecordV0

U1 = uuid.UUID(int=1)
U5 = uuid.UUID(int=5)
INCARNATION = uuid.UUID("0102030405060708090a0b0c0d0e0f10")
D1, D2, D3 = (uuid.UUID(int=n) for n in (0x11, 0x22, 0x33))


def h(*parts: str) -> bytes:
    """Hex pieces (one per field, spaces ignored) as bytes."""
    return bytes.fromhex("".join(parts).replace(" ", ""))


UUID_1 = "00000000 00000000 00000000 00000001"
UUID_5 = "00000000 00000000 00000000 00000005"

CASES: list[tuple[str, Any, bytes]] = [
    (
        "RegisterBrokerRecord v3",
        RegisterBrokerRecord(
            broker_id=1,
            incarnation_id=INCARNATION,
            broker_epoch=10,
            end_points=(
                RegisterBrokerRecord.BrokerEndpoint(
                    name="PLAINTEXT", host="localhost", port=9092, security_protocol=0
                ),
            ),
            features=(),
            rack="/dc1/r1",
            log_dirs=(D1, D2),
        ),
        h(
            "01 00 03",  # frame version 1, api key 0, version 3
            "00000001",  # BrokerId
            "00",  # IsMigratingZkBroker false (v2+)
            "0102030405060708090a0b0c0d0e0f10",  # IncarnationId
            "000000000000000a",  # BrokerEpoch 10
            "02",  # EndPoints: 1 element (count + 1)
            "0a 504c41494e54455854",  # Name "PLAINTEXT" (length + 1 = 10)
            "0a 6c6f63616c686f7374",  # Host "localhost"
            "2384",  # Port 9092 (uint16)
            "0000",  # SecurityProtocol 0
            "00",  # the endpoint's tagged fields: none
            "01",  # Features: empty
            "08 2f6463312f7231",  # Rack "/dc1/r1"
            "01",  # Fenced true
            "00",  # InControlledShutdown false (v1+)
            "01",  # tagged fields: 1
            "00 21",  # tag 0 (LogDirs), 33 bytes
            "03",  # 2 uuids
            "00000000000000000000000000000011",
            "00000000000000000000000000000022",
        ),
    ),
    (
        "RegisterBrokerRecord v0",
        RegisterBrokerRecordV0(
            broker_id=2,
            incarnation_id=U1,
            broker_epoch=0,
            end_points=(),
            features=(
                RegisterBrokerRecordV0.BrokerFeature(
                    name="metadata.version", min_supported_version=1, max_supported_version=21
                ),
            ),
            rack=None,
        ),
        h(
            "01 00 00",
            "00000002",
            UUID_1,
            "0000000000000000",
            "01",  # EndPoints: empty
            "02",  # Features: 1
            "11 6d657461646174612e76657273696f6e",  # "metadata.version"
            "0001 0015",  # Min 1, Max 21
            "00",  # the feature's tagged fields
            "00",  # Rack null
            "01",  # Fenced (default true)
            "00",  # no tagged fields
        ),
    ),
    (
        "UnregisterBrokerRecord v0",
        UnregisterBrokerRecord(broker_id=3, broker_epoch=42),
        h("01 01 00", "00000003", "000000000000002a", "00"),
    ),
    (
        "TopicRecord v0",
        TopicRecord(name="foo", topic_id=U1),
        h("01 02 00", "04 666f6f", UUID_1, "00"),
    ),
    (
        "PartitionRecord v2",
        PartitionRecord(
            partition_id=7,
            topic_id=U1,
            replicas=(1, 2, 3),
            isr=(1, 2),
            removing_replicas=(),
            adding_replicas=(),
            leader=1,
            leader_epoch=5,
            partition_epoch=9,
            directories=(D1, D2, D3),
        ),
        h(
            "01 03 02",
            "00000007",  # PartitionId
            UUID_1,  # TopicId
            "04 00000001 00000002 00000003",  # Replicas
            "03 00000001 00000002",  # Isr
            "01",  # RemovingReplicas: empty
            "01",  # AddingReplicas: empty
            "00000001",  # Leader
            "00000005",  # LeaderEpoch
            "00000009",  # PartitionEpoch
            "04",  # Directories: 3
            "00000000000000000000000000000011",
            "00000000000000000000000000000022",
            "00000000000000000000000000000033",
            "00",  # tagged: LeaderRecoveryState 0 and ELR null are defaults, not written
        ),
    ),
    (
        "PartitionRecord v2 with tagged fields",
        PartitionRecord(
            partition_id=0,
            topic_id=U1,
            replicas=(4,),
            isr=(),
            removing_replicas=(),
            adding_replicas=(),
            leader=-1,
            leader_recovery_state=1,
            leader_epoch=0,
            partition_epoch=0,
            directories=(D1,),
            eligible_leader_replicas=(4,),
        ),
        h(
            "01 03 02",
            "00000000",
            UUID_1,
            "02 00000004",
            "01",
            "01",
            "01",
            "ffffffff",  # Leader -1
            "00000000",
            "00000000",
            "02 00000000000000000000000000000011",
            "02",  # 2 tagged fields, by tag
            "00 01 01",  # tag 0 LeaderRecoveryState, 1 byte: 1
            "01 05 02 00000004",  # tag 1 EligibleLeaderReplicas, 5 bytes: [4]
        ),
    ),
    (
        "PartitionRecord v0",
        PartitionRecordV0(
            partition_id=1,
            topic_id=U1,
            replicas=(1,),
            isr=(1,),
            removing_replicas=(),
            adding_replicas=(),
            leader=1,
            leader_epoch=0,
            partition_epoch=0,
        ),
        h(
            "01 03 00",
            "00000001",
            UUID_1,
            "02 00000001",
            "02 00000001",
            "01",
            "01",
            "00000001",
            "00000000",
            "00000000",
            "00",  # no Directories before version 1
        ),
    ),
    (
        "ConfigRecord v0",
        ConfigRecord(resource_type=2, resource_name="t", name="retention.ms", value="1000"),
        h("01 04 00", "02", "02 74", "0d 726574656e74696f6e2e6d73", "05 31303030", "00"),
    ),
    (
        "ConfigRecord v0 deleting a key",
        ConfigRecord(resource_type=4, resource_name="", name="x", value=None),
        h("01 04 00", "04", "01", "02 78", "00", "00"),
    ),
    (
        "PartitionChangeRecord v2",
        PartitionChangeRecord(partition_id=7, topic_id=U1, isr=(1,), leader=1, directories=(D1,)),
        h(
            "01 05 02",
            "00000007",
            UUID_1,
            "03",  # 3 tagged fields, in tag order 0, 1, 8
            "00 05 02 00000001",  # tag 0 Isr [1]
            "01 04 00000001",  # tag 1 Leader 1
            "08 11 02 00000000000000000000000000000011",  # tag 8 Directories [D1]
        ),
    ),
    (
        "PartitionChangeRecord v2, leader only",
        PartitionChangeRecord(partition_id=0, topic_id=U1, leader=-1),
        h("01 05 02", "00000000", UUID_1, "01", "01 04 ffffffff"),
    ),
    (
        "FenceBrokerRecord v0",
        FenceBrokerRecord(id=1, epoch=10),
        h("01 07 00", "00000001", "000000000000000a", "00"),
    ),
    (
        "UnfenceBrokerRecord v0",
        UnfenceBrokerRecord(id=1, epoch=10),
        h("01 08 00", "00000001", "000000000000000a", "00"),
    ),
    (
        "RemoveTopicRecord v0",
        RemoveTopicRecord(topic_id=U5),
        h("01 09 00", UUID_5, "00"),
    ),
    (
        "FeatureLevelRecord v0",
        FeatureLevelRecord(name="metadata.version", feature_level=21),
        h("01 0c 00", "11 6d657461646174612e76657273696f6e", "0015", "00"),
    ),
    (
        "BrokerRegistrationChangeRecord v2",
        BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=10, fenced=-1, log_dirs=(U5,)),
        h(
            "01 11 02",  # api key 17
            "00000001",
            "000000000000000a",
            "02",  # tags 0 and 2; InControlledShutdown (tag 1) is 0, the default
            "00 01 ff",  # Fenced -1: unfenced
            "02 11 02",  # LogDirs, 17 bytes, 1 uuid
            UUID_5,
        ),
    ),
    (
        "ProducerIdsRecord v0",
        ProducerIdsRecord(broker_id=1, broker_epoch=10, next_producer_id=2000),
        h("01 0f 00", "00000001", "000000000000000a", "00000000000007d0", "00"),
    ),
    (
        "ProducerIdsRecord v0, as a snapshot writes it",
        ProducerIdsRecord(broker_id=-1, broker_epoch=-1, next_producer_id=1000),
        h("01 0f 00", "ffffffff", "ffffffffffffffff", "00000000000003e8", "00"),
    ),
    ("NoOpRecord v0", NoOpRecord(), h("01 14 00", "00")),
]


@pytest.mark.parametrize(("name", "record", "expected"), CASES, ids=[c[0] for c in CASES])
def test_frame_matches_hand_written_bytes(name: str, record: Any, expected: bytes) -> None:
    assert encode_record(record).hex(" ") == expected.hex(" ")
    assert decode_record(expected) == record


@pytest.mark.parametrize(("name", "record", "expected"), CASES, ids=[c[0] for c in CASES])
def test_kio_writes_the_same_body(name: str, record: Any, expected: bytes) -> None:
    out = io.BytesIO()
    entity_writer(type(record))(out, record)
    assert out.getvalue() == expected[3:]


def test_long_string_length_is_a_multi_byte_varint() -> None:
    name = "t" * 200
    frame = encode_record(TopicRecord(name=name, topic_id=U1))
    assert frame[:6] == h("01 02 00", "c9 01", "74")  # 201 = 0xc9 0x01
    assert decode_record(frame).name == name
