"""DescribeCluster on the controller listener (KIP-919): the controllers, the quorum's leader as
the controller, and Kafka's refusals of a request meant for a broker."""

from __future__ import annotations

from typing import Any

from rackwise.node.describe_cluster import (
    BROKER_ENDPOINT_TYPE,
    CLUSTER_OPERATIONS,
    CONTROLLER_ENDPOINT_TYPE,
    describe_cluster,
)
from rackwise.protocol import (
    Listener,
    Request,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    make,
    request_class,
)

CONTROLLERS = [
    {"broker_id": 3000, "host": "127.0.0.1", "port": 9093, "rack": None, "is_fenced": False},
    {"broker_id": 3001, "host": "127.0.0.1", "port": 9094, "rack": None, "is_fenced": False},
]


def _asked(version: int, leader: int = 3001, **values: Any) -> Any:
    fields = {"include_cluster_authorized_operations": False, "include_fenced_brokers": False}
    fields.update(values)
    body = make(request_class(60, version), fields)
    outcome = decode_request(encode_request(body, 7)[4:], Listener.CONTROLLER)
    assert isinstance(outcome, Request)
    answer = describe_cluster(
        outcome.body,
        serving=CONTROLLER_ENDPOINT_TYPE,
        cluster_id="MkU3OEVBNTcwNTJENDM2Qk",
        controller_id=leader,
        nodes=CONTROLLERS,
    )
    return decode_response(encode_response(outcome.header, answer)[4:], 60, version, 7)


def test_a_controller_lists_the_controllers_and_the_leader() -> None:
    answer = _asked(2, endpoint_type=CONTROLLER_ENDPOINT_TYPE)
    assert int(answer.error_code) == 0
    assert answer.cluster_id == "MkU3OEVBNTcwNTJENDM2Qk"
    assert answer.controller_id == 3001
    assert answer.endpoint_type == CONTROLLER_ENDPOINT_TYPE
    assert [(b.broker_id, b.port) for b in answer.brokers] == [(3000, 9093), (3001, 9094)]


def test_a_leader_it_cannot_name_is_minus_one_and_operations_when_asked() -> None:
    answer = _asked(
        1, leader=-1, endpoint_type=CONTROLLER_ENDPOINT_TYPE,
        include_cluster_authorized_operations=True,
    )  # fmt: skip
    assert answer.controller_id == -1
    assert answer.cluster_authorized_operations == CLUSTER_OPERATIONS


def test_a_request_for_brokers_is_refused_as_kafka_refuses_it() -> None:
    wrong = _asked(1, endpoint_type=BROKER_ENDPOINT_TYPE)
    assert int(wrong.error_code) == 114  # MISMATCHED_ENDPOINT_TYPE
    assert wrong.error_message == (
        "The request was sent to an endpoint of type CONTROLLER, but we wanted an endpoint of "
        "type BROKER"
    )
    assert list(wrong.brokers) == []
    # v0 has no endpoint type: it asks for brokers, and INVALID_REQUEST is all it can be told.
    assert int(_asked(0).error_code) == 42
    unknown = _asked(1, endpoint_type=9)
    assert (int(unknown.error_code), unknown.error_message) == (115, "Unsupported endpoint type 9")
