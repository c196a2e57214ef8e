"""The request decoder: every frame ends as a Request, a Reply or a Close, as Kafka's
SocketServer decides, and malformed input never raises."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.protocol.admin import CreateTopicsRequest
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest

from rackwise.protocol import (
    ApiKey,
    Close,
    Listener,
    Reply,
    Request,
    decode_request,
    encode_request,
    encode_response,
    make,
    request_class,
    response_class,
)
from rackwise.protocol.bodies import write_body
from rackwise.protocol.header import encode_request_header
from rackwise.protocol.messages import CreateReplicaPlacementRequest
from tests.protocol.helpers import to_future


def _kafka_python(request: object, correlation_id: int = 5) -> bytes:
    """The frame kafka-python sends for ``request``, without its size prefix."""
    request.with_header(correlation_id=correlation_id, client_id="kp")  # type: ignore[attr-defined]
    return bytes(request.encode(header=True))  # type: ignore[attr-defined]


def _create_topics(version: int) -> bytes:
    topic = CreateTopicsRequest.CreatableTopic(
        name="orders",
        num_partitions=3,
        replication_factor=2,
        assignments=[],
        configs=[CreateTopicsRequest.CreatableTopic.CreatableTopicConfig(name="a", value="b")],
    )
    request = CreateTopicsRequest(topics=[topic], timeout_ms=30000, validate_only=True)
    request.API_VERSION = version
    return _kafka_python(request)


def test_a_valid_request_is_handed_to_its_handler() -> None:
    outcome = decode_request(_create_topics(7), Listener.BROKER)
    assert isinstance(outcome, Request)
    assert (outcome.header.api_key, outcome.header.api_version) == (19, 7)
    assert (outcome.header.correlation_id, outcome.header.client_id) == (5, "kp")
    assert outcome.api.name == "CreateTopics"
    topic = outcome.body.topics[0]
    assert (topic.name, topic.num_partitions, topic.replication_factor) == ("orders", 3, 2)
    assert outcome.body.validate_only is True


def test_api_versions_of_an_unsupported_version_gets_kafkas_v0_answer() -> None:
    """KIP-511: UNSUPPORTED_VERSION in a v0 response listing ApiVersions' own range; the body
    of the request is not read."""
    frame = encode_request_header(18, 9, 7, None, 2) + b"garbage that is not a body"
    outcome = decode_request(frame, Listener.BROKER)
    assert isinstance(outcome, Reply)
    assert outcome.error_code == 35
    assert outcome.frame == bytes.fromhex(
        "00000010"  # 16 bytes follow
        "00000007"  # correlation id (response header v0)
        "0023"  # error code 35
        "00000001"  # one entry (a v0 array: int32 count)
        "0012 0000 0004"  # ApiVersions 0-4
    )
    # kafka-python reads it as Kafka's would be read, and retries with v4.
    answer = ApiVersionsResponse.decode(outcome.frame, version=4, header=True, framed=True)
    assert answer.error_code == 35
    assert [(k.api_key, k.min_version, k.max_version) for k in answer.api_keys] == [(18, 0, 4)]


def test_only_an_unsupported_api_versions_request_is_answered_in_v0() -> None:
    request = ApiVersionsRequest(version=3, client_software_name="a", client_software_version="1")
    outcome = decode_request(_kafka_python(request), Listener.BROKER)
    assert isinstance(outcome, Request)
    v0_answer = make(response_class(ApiKey.API_VERSIONS, 0), error_code=35, api_keys=[])
    with pytest.raises(ValueError, match="BUG: a version 0 response to a version 3 request"):
        encode_response(outcome.header, v0_answer)


def test_api_versions_of_a_negative_version_is_answered_too() -> None:
    outcome = decode_request(encode_request_header(18, -1, 3, "c", 1), Listener.CONTROLLER)
    assert isinstance(outcome, Reply)
    assert outcome.error_code == 35


def test_api_versions_with_a_malformed_software_name_is_invalid_request() -> None:
    request = ApiVersionsRequest(
        version=3, client_software_name="no spaces!", client_software_version="1"
    )
    outcome = decode_request(_kafka_python(request), Listener.BROKER)
    assert isinstance(outcome, Reply)
    assert outcome.error_code == 42
    assert outcome.frame == bytes.fromhex(
        "0000000c 00000005"  # 12 bytes; correlation id 5 (header v0)
        "002a"  # INVALID_REQUEST
        "01"  # no api keys (compact array)
        "00000000"  # throttle time
        "00"  # no tagged fields
    )


@pytest.mark.parametrize(
    ("frame", "listener", "reason"),
    [
        (
            encode_request_header(4242, 0, 9, "c", 1),
            Listener.BROKER,
            "Error parsing request header. Our best guess of the apiKey is: 4242",
        ),
        (
            encode_request_header(24, 4, 9, "c", 2),  # AddPartitionsToTxn: no transactions
            Listener.BROKER,
            "Received request api key ADD_PARTITIONS_TO_TXN with version 4 which is not enabled",
        ),
        (
            encode_request_header(0, 2, 9, "c", 1),
            Listener.BROKER,
            "Received request api key PRODUCE with version 2 which is not enabled",
        ),
        (
            encode_request_header(0, 9, 9, "c", 2),
            Listener.CONTROLLER,
            "Received request api key PRODUCE with version 9 which is not enabled",
        ),
        (
            encode_request_header(3, 12, 9, "c", 2),
            Listener.CONTROLLER,
            "Received request api key METADATA with version 12 which is not enabled",
        ),
        (
            encode_request_header(63, 1, 9, "c", 2),
            Listener.BROKER,
            "Received request api key BROKER_HEARTBEAT with version 1 which is not enabled",
        ),
        (
            encode_request_header(3, 14, 9, "c", 2),
            Listener.BROKER,
            "Received request api key METADATA with version 14 which is not enabled",
        ),
        (
            encode_request_header(19, 1, 9, "c", 1),
            Listener.BROKER,
            "Received request api key CREATE_TOPICS with version 1 which is not enabled",
        ),
    ],
    ids=[
        "unknown-key",
        "kafka-key-not-served",
        "produce-advertised-from-0-accepted-from-3",
        "data-api-on-controller",
        "broker-api-on-controller",
        "controller-api-on-broker",
        "version-too-new",
        "version-too-old",
    ],
)
def test_requests_we_do_not_serve_close_the_connection(
    frame: bytes, listener: Listener, reason: str
) -> None:
    outcome = decode_request(frame + b"\x00" * 20, listener)
    assert isinstance(outcome, Close)
    assert outcome.reason == reason
    assert outcome.correlation_id == 9


@pytest.mark.parametrize("version", [2, 4, 5, 7], ids=lambda v: f"v{v}")
def test_every_truncation_closes_the_connection(version: int) -> None:
    frame = _create_topics(version)
    assert isinstance(decode_request(frame, Listener.BROKER), Request)
    header_size = 12 if version < 5 else 13  # client id "kp"
    for cut in range(len(frame)):
        outcome = decode_request(frame[:cut], Listener.BROKER)
        assert isinstance(outcome, Close), cut
        if cut >= header_size:
            assert outcome.reason.startswith(
                f"Error getting request for apiKey: CREATE_TOPICS, apiVersion: {version}: "
            )
        elif cut >= 8:
            assert outcome.reason.startswith("Error parsing request header. Our best guess")


def test_an_empty_frame_closes_the_connection() -> None:
    outcome = decode_request(b"", Listener.BROKER)
    assert outcome == Close("Error parsing request header: the request is 0 bytes long")


def test_a_null_in_a_non_nullable_field_closes_the_connection() -> None:
    # CreateTopics v7: topics = one topic whose name (a compact string) is null (0).
    body = bytes.fromhex("02 00")
    frame = encode_request_header(19, 7, 1, "c", 2) + body
    outcome = decode_request(frame, Listener.BROKER)
    assert isinstance(outcome, Close)
    assert "apiVersion: 7" in outcome.reason


def test_invalid_utf8_in_a_body_string_closes_the_connection() -> None:
    """The documented deviation: Kafka would read U+FFFD, kio refuses the string."""
    body = bytes.fromhex("03 ff fe") + bytes.fromhex("03 31 2e 30 00")
    frame = encode_request_header(18, 3, 1, "c", 2) + body
    outcome = decode_request(frame, Listener.BROKER)
    assert isinstance(outcome, Close)
    assert outcome.reason.startswith(
        "Error getting request for apiKey: API_VERSIONS, apiVersion: 3"
    )


def test_bytes_after_the_body_are_ignored_as_kafka_ignores_them() -> None:
    frame = _kafka_python(MetadataRequest(version=12, topics=None, allow_auto_topic_creation=False))
    plain = decode_request(frame, Listener.BROKER)
    padded = decode_request(frame + b"\x01\x02\x03", Listener.BROKER)
    assert isinstance(plain, Request)
    assert isinstance(padded, Request)
    assert padded.body == plain.body


def test_unknown_tagged_fields_in_the_header_and_at_every_depth_of_the_body() -> None:
    cls = request_class(ApiKey.CREATE_TOPICS, 7)
    message = make(
        cls,
        topics=[
            {
                "name": "t",
                "num_partitions": 1,
                "replication_factor": 1,
                "assignments": [{"partition_index": 0, "broker_ids": [1]}],
                "configs": [],
            }
        ],
        timeout=1000,
        validate_only=False,
    )
    header = encode_request_header(19, 7, 11, "c", 1) + bytes.fromhex("01 07 02 aabb")
    outcome = decode_request(header + write_body(to_future(message, b"\x99")), Listener.BROKER)
    assert isinstance(outcome, Request)
    assert outcome.body == message


def test_unknown_tagged_fields_in_our_own_message() -> None:
    message = CreateReplicaPlacementRequest(num_partitions=3, replication_factor=2, node_id=(1, 2))
    body = write_body(message)[:-1] + bytes.fromhex("01 09 01 ff")  # one unknown tag: 9
    frame = encode_request_header(1000, 0, 1, "c", 2) + body
    outcome = decode_request(frame, Listener.CONTROLLER)
    assert isinstance(outcome, Request)
    assert outcome.body == message


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=64), listener=st.sampled_from(list(Listener)))
def test_random_bytes_never_raise(data: bytes, listener: Listener) -> None:
    assert isinstance(decode_request(data, listener), Request | Reply | Close)


VALID = [
    _create_topics(7),
    _create_topics(4),
    _kafka_python(
        MetadataRequest(version=12, topics=[MetadataRequest.MetadataRequestTopic(name="t")])
    ),
    _kafka_python(
        ApiVersionsRequest(version=4, client_software_name="a", client_software_version="1")
    ),
]


@settings(max_examples=300, deadline=None)
@given(
    which=st.sampled_from(range(len(VALID))),
    flips=st.lists(st.tuples(st.integers(0, 200), st.integers(0, 255)), min_size=1, max_size=4),
)
def test_damaged_requests_never_raise(which: int, flips: list[tuple[int, int]]) -> None:
    frame = bytearray(VALID[which])
    for position, value in flips:
        frame[position % len(frame)] = value
    assert isinstance(decode_request(bytes(frame), Listener.BROKER), Request | Reply | Close)


def test_a_response_must_answer_its_request() -> None:
    outcome = decode_request(_create_topics(7), Listener.BROKER)
    assert isinstance(outcome, Request)
    wrong_api = make(response_class(ApiKey.DELETE_TOPICS, 6), responses=[], throttle_time=0)
    with pytest.raises(
        ValueError, match="BUG: DeleteTopicsResponse is not a response to api key 19"
    ):
        encode_response(outcome.header, wrong_api)
    wrong_version = make(response_class(ApiKey.CREATE_TOPICS, 6), topics=[], throttle_time=0)
    with pytest.raises(ValueError, match="BUG: a version 6 response to a version 7 request"):
        encode_response(outcome.header, wrong_version)
    v0_answer = make(response_class(ApiKey.API_VERSIONS, 0), error_code=35, api_keys=[])
    with pytest.raises(
        ValueError, match="BUG: ApiVersionsResponse is not a response to api key 19"
    ):
        encode_response(outcome.header, v0_answer)
    right = make(response_class(ApiKey.CREATE_TOPICS, 7), topics=[], throttle_time=0)
    assert encode_response(outcome.header, right) == struct.pack(">i", 11) + bytes.fromhex(
        "00000005 00"  # correlation id, header v1's tagged fields
        "00000000 01 00"  # throttle time, no topics, no tagged fields
    )


@pytest.mark.parametrize(
    ("api_key", "version", "listener", "body"),
    [
        (3, 12, Listener.BROKER, "ffffffff0f 00 00 00"),  # compact count 2**32 - 2
        (3, 4, Listener.BROKER, "7fffffff 00"),  # int32 count 2**31 - 1
        (1000, 0, Listener.BROKER, "00000003 0002 00 ffffffff0f"),  # our own message
        (
            63,
            1,
            Listener.CONTROLLER,
            "00000001 0000000000000001 0000000000000001 00 00 01 00 05 ffffffff0f",
        ),
    ],
    ids=["flexible", "legacy", "own-message", "inside-a-tagged-field"],
)
def test_an_array_claiming_more_items_than_bytes_closes_at_once(
    api_key: int, version: int, listener: Listener, body: str
) -> None:
    """kio's native reader would reserve room for the claimed items first (and abort the
    process when that fails); the count is refused instead."""
    frame = encode_request_header(
        api_key, version, 1, "c", 2 if version >= 9 or api_key > 60 else 1
    )
    outcome = decode_request(frame + bytes.fromhex(body), listener)
    assert isinstance(outcome, Close)
    assert "claims" in outcome.reason
    assert "bytes are left" in outcome.reason


def _produce(records: bytes | None) -> bytes:
    body = make(
        request_class(ApiKey.PRODUCE, 9),
        acks=-1,
        timeout=1000,
        topic_data=[{"name": "t", "partition_data": [{"index": 0, "records": records}]}],
    )
    return encode_request(body, 9, "client")[4:]


def _view(data: bytes) -> memoryview:
    """``data`` as a server gathers a large frame: a read-only view of a bytearray."""
    return memoryview(bytearray(data)).toreadonly()


@pytest.mark.parametrize(
    "frame",
    [_create_topics(7), _produce(b"\x01" * 70_000), _produce(None), _produce(b"")],
    ids=["create topics", "produce", "null records", "empty records"],
)
def test_a_read_only_view_of_a_frame_decodes_as_its_bytes(frame: bytes) -> None:
    from_bytes = decode_request(frame, Listener.BROKER)
    from_view = decode_request(_view(frame), Listener.BROKER)
    assert isinstance(from_view, Request) and from_view == from_bytes


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=120))
def test_a_view_of_any_bytes_gets_the_same_outcome_as_the_bytes(data: bytes) -> None:
    assert decode_request(_view(data), Listener.BROKER) == decode_request(data, Listener.BROKER)
