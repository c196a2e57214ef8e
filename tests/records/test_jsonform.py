"""Records as Kafka's dump tool prints them."""

from __future__ import annotations

import uuid

import pytest

from rackwise.records import (
    PartitionChangeRecord,
    RegisterBrokerRecord,
    kafka_uuid,
    parse_kafka_uuid,
    record_json,
)


def test_kafka_uuid_strings() -> None:
    # Kafka's Uuid.toString of new Uuid(0, 1) and of the all-ones uuid.
    assert kafka_uuid(uuid.UUID(int=1)) == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert kafka_uuid(uuid.UUID(int=2**128 - 1)) == "_____________________w"
    value = uuid.UUID("5f4b6b8f-0c3a-4d1e-9a2b-3c4d5e6f7a8b")
    assert parse_kafka_uuid(kafka_uuid(value)) == value
    with pytest.raises(ValueError, match="not a Kafka uuid"):
        parse_kafka_uuid("short")


def test_record_json_omits_default_tags_and_nests_structs() -> None:
    change = PartitionChangeRecord(partition_id=2, topic_id=uuid.UUID(int=1), leader=3)
    assert record_json(change) == {
        "type": "PARTITION_CHANGE_RECORD",
        "version": 2,
        "data": {"partitionId": 2, "topicId": "AAAAAAAAAAAAAAAAAAAAAQ", "leader": 3},
    }
    broker = RegisterBrokerRecord(
        broker_id=1,
        incarnation_id=uuid.UUID(int=1),
        broker_epoch=5,
        end_points=(
            RegisterBrokerRecord.BrokerEndpoint(
                name="PLAINTEXT", host="h", port=9092, security_protocol=0
            ),
        ),
        features=(),
        rack=None,
    )
    data = record_json(broker)["data"]
    assert data["endPoints"] == [
        {"name": "PLAINTEXT", "host": "h", "port": 9092, "securityProtocol": 0}
    ]
    assert data["rack"] is None and data["fenced"] is True and "logDirs" not in data
