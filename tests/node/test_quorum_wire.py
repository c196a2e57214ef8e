"""The quorum's messages through Kafka's encoding and back, as a controller receives them."""

from __future__ import annotations

import pytest

from rackwise.node.quorum_wire import (
    parse_request,
    parse_response,
    request_for,
    response_for,
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
from rackwise.raft.messages import (
    Batch,
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    LeaderChangeMark,
    OffsetAndEpoch,
    VoteRequest,
    VoteResponse,
)
from tests.metalog.helpers import topic

FETCH = FetchRequest(2, 5, 40, 4)
SNAPSHOT = FetchSnapshotRequest(3, 5, OffsetAndEpoch(4, 30), 1024)
EXCHANGES = [
    (VoteRequest(6, 1, 5, 41, is_pre_vote=True), VoteResponse(0, -1, 5, True, True, 6)),
    (VoteRequest(6, 1, 5, 41), VoteResponse(74, 2, 7, False, False, 6)),
    (BeginQuorumEpochRequest(5, 1), BeginQuorumEpochResponse(0, 1, 5)),
    (EndQuorumEpochRequest(5, 1, (3, 2)), EndQuorumEpochResponse(0, 1, 5)),
    (FETCH, FetchResponse(0, 1, 5, 38, 40, 4, (Batch(40, 5, tuple(topic("t", 2))),))),
    (FETCH, FetchResponse(0, 1, 5, 38, 40, 4, diverging_epoch=OffsetAndEpoch(3, 35))),
    (FETCH, FetchResponse(0, 1, 5, 38, 40, 4, snapshot_id=OffsetAndEpoch(4, 30))),
    (FETCH, FetchResponse(74, 3, 6, 0, 40, 4)),
    (SNAPSHOT, FetchSnapshotResponse(0, 1, 5, OffsetAndEpoch(4, 30), 1024, 4096, b"x" * 100)),
    (SNAPSHOT, FetchSnapshotResponse(98, 1, 5, OffsetAndEpoch(4, 30), 1024, 0)),
]


def through_the_wire(request: object) -> Request:
    api_key, version, fields = request_for(request, "cluster-1")  # type: ignore[arg-type]
    frame = encode_request(make(request_class(api_key, version), fields), 7, "controller-1")
    received = decode_request(frame[4:], Listener.CONTROLLER)
    assert isinstance(received, Request)
    return received


@pytest.mark.parametrize(("request_", "response"), EXCHANGES)
def test_each_message_survives_the_wire(request_: object, response: object) -> None:
    received = through_the_wire(request_)
    source, parsed = parse_request(received.header.api_key, received.body)
    assert parsed == request_
    sender = ("replica_id", "candidate_id", "leader_id")
    assert source == next(getattr(request_, f) for f in sender if hasattr(request_, f))
    header = received.header
    frame = encode_response(header, response_for(header.api_key, header.api_version, response))
    body = decode_response(frame[4:], header.api_key, header.api_version, 7)
    assert parse_response(parsed, body) == response


def test_the_leaders_mark_travels_as_a_leader_change_control_batch() -> None:
    mark = FetchResponse(0, 1, 5, 0, 0, 0, (Batch(0, 5, (LeaderChangeMark(1, (1, 2, 3)),), True),))
    received = through_the_wire(FetchRequest(2, 5, 0, 0))
    header = received.header
    frame = encode_response(header, response_for(header.api_key, header.api_version, mark))
    body = decode_response(frame[4:], header.api_key, header.api_version, 7)
    parsed = parse_response(FetchRequest(2, 5, 0, 0), body)
    assert isinstance(parsed, FetchResponse)
    assert parsed.batches == mark.batches
    records = body.responses[0].partitions[0].records
    assert records[21:23] == b"\x00\x20"  # attributes: the control bit


def test_a_vote_is_kafkas_vote_v2_on_the_metadata_partition() -> None:
    received = through_the_wire(VoteRequest(6, 1, 5, 41, is_pre_vote=True))
    assert (received.header.api_key, received.header.api_version) == (52, 2)
    [topic_data] = received.body.topics
    assert topic_data.topic_name == "__cluster_metadata"
    assert received.body.cluster_id == "cluster-1"
