"""make(): messages of any version from plain values."""

from __future__ import annotations

import datetime

import pytest

from rackwise.protocol import MessageEncodeError, field_names, make, millis, response_class
from rackwise.protocol.bodies import write_body
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
