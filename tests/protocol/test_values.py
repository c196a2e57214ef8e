"""make(): messages of any version from plain values."""

from __future__ import annotations

import datetime
import uuid
from typing import Any

import pytest

from rackwise.protocol import (
    MessageEncodeError,
    field_names,
    make,
    message_class,
    millis,
    request_class,
    response_class,
)
from rackwise.protocol.bodies import read_body, write_body
from rackwise.protocol.messages import CreateReplicaPlacementResponse

BROKER = {"node_id": 1, "host": "h", "port": 9092, "rack": "/dc1/r1"}


def test_one_call_serves_every_version() -> None:
    """Fields a version lacks are dropped: Metadata v0 has no rack, no controller id."""
    v0 = make(response_class(3, 0), brokers=[BROKER], controller_id=1, topics=[])
    assert "rack" not in field_names(type(v0.brokers[0]))
    assert not hasattr(v0, "controller_id")
    v12 = make(
        response_class(3, 12),
        brokers=[BROKER],
        controller_id=1,
        topics=[],
        cluster_id=None,
        throttle_time=5,
    )
    assert v12.brokers[0].rack == "/dc1/r1"
    assert v12.controller_id == 1


def test_plain_values_become_kios() -> None:
    response = make(
        response_class(19, 7),
        throttle_time=250,
        topics=[
            {
                "name": "t",
                "topic_id": None,
                "error_code": 36,
                "error_message": "exists",
                "num_partitions": 1,
                "replication_factor": 1,
                "configs": None,
            }
        ],
    )
    assert response.throttle_time == datetime.timedelta(milliseconds=250)
    assert millis(response.throttle_time) == 250
    assert response.topics[0].error_code == 36
    assert response.topics[0].error_code.name == "topic_already_exists"
    assert isinstance(response.topics, tuple)
    assert write_body(response)[:4] == bytes.fromhex("000000fa")


def test_mappings_and_keywords_merge_and_keywords_win() -> None:
    message = make(
        CreateReplicaPlacementResponse, {"replica_placement": [], "error_code": 1}, error_code=38
    )
    assert message.error_code == 38


def test_our_own_messages_take_the_same_calls() -> None:
    message = make(
        CreateReplicaPlacementResponse,
        replica_placement=[{"partition_id": 0, "replicas": [1, 2]}],
    )
    assert message.replica_placement[0].replicas == (1, 2)


def test_a_missing_required_field_names_the_class_and_version() -> None:
    with pytest.raises(MessageEncodeError, match=r"MetadataResponse v12: .*missing .* 'brokers'"):
        make(response_class(3, 12), topics=[])


def test_an_unknown_error_code_is_refused() -> None:
    with pytest.raises(MessageEncodeError, match=r"CreatePartitionsResponse v3: .*12345"):
        make(response_class(37, 3), throttle_time=0, results=[{"name": "t", "error_code": 12345}])


def test_a_value_outside_its_field_is_refused_when_encoding() -> None:
    message = make(
        response_class(3, 12),
        brokers=[{**BROKER, "port": 2**40}],
        topics=[],
        cluster_id=None,
        controller_id=1,
        throttle_time=0,
    )
    with pytest.raises(MessageEncodeError, match="MetadataResponse v12"):
        write_body(message)


def test_record_batches_stay_as_given_whatever_their_buffer_type() -> None:
    """A memoryview is a Sequence; it must not become a tuple of ints."""
    view = memoryview(b"\x00\x01batch")
    cls = response_class(1, 12)
    partition = {
        "partition_index": 0,
        "error_code": 0,
        "high_watermark": 1,
        "aborted_transactions": None,
        "records": view,
    }
    response = make(
        cls, throttle_time=0, error_code=0, responses=[{"topic": "t", "partitions": [partition]}]
    )
    assert response.responses[0].partitions[0].records is view
    produce = make(
        request_class(0, 9),
        acks=-1,
        timeout=100,
        topic_data=[{"name": "t", "partition_data": [{"index": 0, "records": bytearray(b"ab")}]}],
    )
    assert produce.topic_data[0].partition_data[0].records == bytearray(b"ab")


NEW_APIS = [
    (
        0,
        13,
        "response",
        {
            "throttle_time": 5,
            "responses": [
                {
                    "topic_id": uuid.UUID(int=3),
                    "partition_responses": [
                        {
                            "index": 0,
                            "error_code": 6,
                            "base_offset": -1,
                            "log_append_time": -1,
                            "record_errors": [{"batch_index": 0, "batch_index_error_message": "x"}],
                            "error_message": "not the leader",
                            "current_leader": {"leader_id": 2, "leader_epoch": 7},
                        },
                        {
                            "index": 1,
                            "error_code": 0,
                            "base_offset": 10,
                            "log_append_time": 1_700_000_000_123,
                            "record_errors": [],
                        },
                    ],
                }
            ],
            "node_endpoints": [{"node_id": 2, "host": "h", "port": 9092, "rack": "r"}],
        },
    ),
    (
        0,
        3,
        "request",
        {
            "acks": -1,
            "timeout": 100,
            "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": b"batch"}]}],
        },
    ),
    (
        2,
        10,
        "response",
        {
            "throttle_time": 0,
            "topics": [
                {"name": "t", "partitions": [{"partition_index": 0, "error_code": 0, "offset": 4}]}
            ],
        },
    ),
    (
        23,
        4,
        "response",
        {
            "throttle_time": 0,
            "topics": [
                {"topic": "t", "partitions": [{"partition": 0, "error_code": 0, "end_offset": 9}]}
            ],
        },
    ),
    (
        21,
        2,
        "response",
        {
            "throttle_time": 0,
            "topics": [
                {
                    "name": "t",
                    "partitions": [{"partition_index": 0, "low_watermark": 3, "error_code": 0}],
                }
            ],
        },
    ),
    (
        22,
        5,
        "response",
        {"throttle_time": 0, "error_code": 0, "producer_id": 7, "producer_epoch": 0},
    ),
    (
        67,
        0,
        "response",
        {"throttle_time": 0, "error_code": 0, "producer_id_start": 0, "producer_id_len": 1000},
    ),
]


@pytest.mark.parametrize(
    ("api_key", "version", "kind", "values"),
    NEW_APIS,
    ids=[f"{key}-v{version}-{kind}" for key, version, kind, _ in NEW_APIS],
)
def test_the_data_path_apis_from_plain_values(
    api_key: int, version: int, kind: str, values: dict[str, Any]
) -> None:
    """Nested entities, tagged fields, timestamps and records bytes, through bytes and back."""
    cls = message_class(api_key, version, kind)
    message = make(cls, values)
    assert read_body(cls, write_body(message))[0] == message


def test_timestamps_are_milliseconds_and_minus_one_is_none() -> None:
    response = make(response_class(0, 13), NEW_APIS[0][3])
    first, second = response.responses[0].partition_responses
    assert first.log_append_time is None
    assert second.log_append_time == datetime.datetime(
        2023, 11, 14, 22, 13, 20, 123000, tzinfo=datetime.UTC
    )
    assert first.current_leader.leader_epoch == 7
    raw = write_body(response)
    assert (1_700_000_000_123).to_bytes(8, "big") in raw
