"""The client side: what a broker sends the controller and reads back, through the same frames
the server side reads and writes."""

from __future__ import annotations

import uuid

import pytest

from rackwise.protocol import (
    ApiKey,
    CorrelationIdMismatchException,
    FrameDecoder,
    Listener,
    MalformedResponseError,
    Reply,
    Request,
    advertised_versions,
    api_versions_response,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    make,
    negotiate_with,
    request_class,
    response_class,
)
from rackwise.protocol.bodies import write_body
from rackwise.protocol.header import encode_request_header
from rackwise.protocol.messages import CreateReplicaPlacementRequest


def _one_frame(wire: bytes) -> bytes:
    frames = FrameDecoder().feed(wire)
    assert frames.close is None and len(frames.frames) == 1
    return frames.frames[0]


def _registration() -> object:
    return make(
        request_class(ApiKey.BROKER_REGISTRATION, 4),
        broker_id=3,
        cluster_id="c",
        incarnation_id=uuid.UUID(int=7),
        listeners=[
            {"name": "PLAINTEXT", "host": "127.0.0.1", "port": 9093, "security_protocol": 0}
        ],
        features=[],
        rack="/dc1/r2",
        log_dirs=[],
    )


def test_a_broker_registers_with_the_controller() -> None:
    body = _registration()
    frame = _one_frame(encode_request(body, correlation_id=12))
    outcome = decode_request(frame, Listener.CONTROLLER)
    assert isinstance(outcome, Request)
    assert outcome.body == body
    assert (outcome.header.header_version, outcome.header.client_id) == (2, "rackwise")
    response = make(response_class(62, 4), throttle_time=0, error_code=0, broker_epoch=99)
    answer = decode_response(_one_frame(encode_response(outcome.header, response)), 62, 4, 12)
    assert answer == response
    assert answer.broker_epoch == 99


def test_non_flexible_requests_use_header_v1_and_a_null_client_id_is_sent_as_null() -> None:
    body = make(request_class(ApiKey.CREATE_TOPICS, 4), topics=[], timeout=100, validate_only=False)
    frame = _one_frame(encode_request(body, correlation_id=1, client_id=None))
    assert frame[:10] == bytes.fromhex("0013 0004 00000001 ffff")
    outcome = decode_request(frame, Listener.CONTROLLER)
    assert isinstance(outcome, Request)
    assert outcome.header.header_version == 1


def test_our_own_request_travels_like_kafkas() -> None:
    body = CreateReplicaPlacementRequest(num_partitions=2, replication_factor=1, node_id=(4,))
    outcome = decode_request(_one_frame(encode_request(body, 5)), Listener.BROKER)
    assert isinstance(outcome, Request)
    assert outcome.body == body


def test_only_request_classes_can_be_sent() -> None:
    response = make(response_class(62, 4), throttle_time=0, error_code=0, broker_epoch=1)
    with pytest.raises(ValueError, match="BUG: BrokerRegistrationResponse is not a request"):
        encode_request(response, 1)
    with pytest.raises(ValueError, match="BUG: dict is not a request message class"):
        encode_request({"api_key": 3}, 1)


def test_a_response_to_another_request_is_kafkas_correlation_mismatch() -> None:
    response = make(
        response_class(63, 1),
        throttle_time=0,
        error_code=0,
        is_caught_up=True,
        is_fenced=False,
        should_shut_down=False,
    )
    header = decode_request(
        encode_request_header(63, 1, 8, "b", 2) + bytes(30), Listener.CONTROLLER
    )
    assert isinstance(header, Request)
    frame = _one_frame(encode_response(header.header, response))
    with pytest.raises(CorrelationIdMismatchException) as caught:
        decode_response(frame, 63, 1, 9)
    assert str(caught.value) == "Correlation id for response (8) does not match request (9)"


@pytest.mark.parametrize("cut", [0, 2, 4, 6, 9])
def test_a_truncated_response_is_malformed(cut: int) -> None:
    response = make(response_class(62, 4), throttle_time=0, error_code=0, broker_epoch=1)
    outcome = decode_request(_one_frame(encode_request(_registration(), 4)), Listener.CONTROLLER)
    assert isinstance(outcome, Request)
    frame = _one_frame(encode_response(outcome.header, response))
    with pytest.raises(MalformedResponseError):
        decode_response(frame[:cut], 62, 4, 4)


def test_api_versions_negotiation_against_an_older_server() -> None:
    """We ask with v9; the answer is Kafka's v0 UNSUPPORTED_VERSION, which we read as v0 and
    which tells us to retry with v4."""
    reply = decode_request(encode_request_header(18, 9, 3, "rackwise", 2), Listener.CONTROLLER)
    assert isinstance(reply, Reply)
    answer = decode_response(_one_frame(reply.frame), 18, 4, 3)
    assert answer.error_code == 35
    assert advertised_versions(answer) == {18: (0, 4)}
    assert negotiate_with(ApiKey.API_VERSIONS, advertised_versions(answer)) == 4


def test_api_versions_then_negotiation_of_every_controller_api() -> None:
    request = make(
        request_class(18, 3), client_software_name="rackwise", client_software_version="0.1.0"
    )
    outcome = decode_request(_one_frame(encode_request(request, 1)), Listener.CONTROLLER)
    assert isinstance(outcome, Request)
    response = api_versions_response(3, Listener.CONTROLLER)
    advertised = advertised_versions(
        decode_response(_one_frame(encode_response(outcome.header, response)), 18, 3, 1)
    )
    assert negotiate_with(ApiKey.BROKER_REGISTRATION, advertised) == 4
    assert negotiate_with(ApiKey.BROKER_HEARTBEAT, advertised) == 1
    assert negotiate_with(ApiKey.FETCH_SNAPSHOT, advertised) == 1


def test_an_api_versions_answer_that_only_parses_as_v0_is_read_as_v0() -> None:
    """Kafka's ApiVersionsResponse.parse falls back to v0 when the request's version fails."""
    v0 = make(
        response_class(18, 0),
        error_code=0,
        api_keys=[{"api_key": 18, "min_version": 0, "max_version": 2}],
    )
    frame = bytes.fromhex("00000001") + write_body(v0)
    answer = decode_response(frame, 18, 3, 1)
    assert type(answer).__version__ == 0
    assert advertised_versions(answer) == {18: (0, 2)}
    with pytest.raises(MalformedResponseError, match="an API_VERSIONS response does not decode"):
        decode_response(bytes.fromhex("00000001 00"), 18, 3, 1)
