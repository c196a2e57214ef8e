"""The quorum's messages on Kafka's wire: :mod:`rackwise.raft.messages` to and from Vote (52),
BeginQuorumEpoch (53), EndQuorumEpoch (54), Fetch (1) and FetchSnapshot (59), for the one
partition KRaft replicates, ``__cluster_metadata-0``.

Goals
    Controllers talk to each other with Kafka's own APIs and field names, at versions Kafka
    4.x speaks: Vote v2 (with ``PreVote``, KIP-996), BeginQuorumEpoch v0, EndQuorumEpoch v0,
    Fetch v13 (topic ids; the metadata topic's id is Kafka's ``METADATA_TOPIC_ID``) and
    FetchSnapshot v0. Brokers follow the log with the same Fetch and FetchSnapshot, as the
    quorum's observers (:mod:`rackwise.broker.metadata_fetcher`), which is why this module is
    shared by both processes. A request refused as a whole (another cluster's id) gets its
    error at the top of the answer (:func:`error_response`).

Constraints
    A Fetch answer carries whole record batches as the metadata log encodes them (Kafka's v2
    batches); the leader's mark at the start of its epoch travels as Kafka's
    LeaderChangeMessage control batch. What an answer does not carry
    but the state machine reads (the position fetched, whether a vote was a pre-vote) is
    taken from the request it answers.

Algorithm
    One function each way per direction: :func:`request_for` (a state machine request to
    the api key, version and fields of the Kafka request), :func:`parse_request` (a Kafka
    request to the sender's id and the state machine's request), :func:`response_for` and
    :func:`parse_response` likewise for answers.

Worked example
    ``VoteRequest(candidate_epoch=3, candidate_id=1, last_offset_epoch=2, last_offset=40,
    is_pre_vote=True)`` goes out as Vote v2 with one topic ``__cluster_metadata``, partition 0,
    ``replica_epoch=3, replica_id=1, last_offset_epoch=2, last_offset=40, pre_vote=true``.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any, Final

from rackwise.common.error_codes import NONE
from rackwise.metalog.replicated import raft_batch, stored_records
from rackwise.protocol import ApiKey, Response, make, response_class
from rackwise.raft.messages import (
    NO_LEADER,
    Batch,
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    Message,
    OffsetAndEpoch,
    VoteRequest,
    VoteResponse,
)
from rackwise.records.batch import encode_records, iter_batches

METADATA_TOPIC: Final = "__cluster_metadata"
METADATA_TOPIC_ID: Final = uuid.UUID(int=1)
"""Kafka's ``Uuid.METADATA_TOPIC_ID`` (``AAAAAAAAAAAAAAAAAAAAAQ``)."""
METADATA_PARTITION: Final = 0
VERSIONS: Final = {
    ApiKey.VOTE: 2,
    ApiKey.BEGIN_QUORUM_EPOCH: 0,
    ApiKey.END_QUORUM_EPOCH: 0,
    ApiKey.FETCH: 13,
    ApiKey.FETCH_SNAPSHOT: 0,
}
FETCH_MAX_BYTES: Final = 8 * 1024 * 1024
SNAPSHOT_MAX_BYTES: Final = 8 * 1024 * 1024
NO_OFFSET: Final = -1
"""Kafka's -1 in an offset or epoch field that does not apply."""
RaftRequest = (
    VoteRequest
    | BeginQuorumEpochRequest
    | EndQuorumEpochRequest
    | FetchRequest
    | FetchSnapshotRequest
)


def _topic(partition: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"topic_name": METADATA_TOPIC, "partitions": [partition]}]


def request_for(message: RaftRequest, cluster_id: str | None) -> tuple[ApiKey, int, dict[str, Any]]:
    """The Kafka request carrying ``message``: its api key, version and fields."""
    if isinstance(message, VoteRequest):
        part: dict[str, Any] = {
            "partition_index": METADATA_PARTITION,
            "replica_epoch": message.candidate_epoch,
            "replica_id": message.candidate_id,
            "last_offset_epoch": message.last_offset_epoch,
            "last_offset": message.last_offset,
            "pre_vote": message.is_pre_vote,
            "replica_directory_id": None,
            "voter_directory_id": None,
        }
        fields = {"cluster_id": cluster_id, "voter_id": NO_LEADER, "topics": _topic(part)}
        return ApiKey.VOTE, VERSIONS[ApiKey.VOTE], fields
    if isinstance(message, BeginQuorumEpochRequest):
        part = {
            "partition_index": METADATA_PARTITION,
            "leader_id": message.leader_id,
            "leader_epoch": message.leader_epoch,
        }
        key = ApiKey.BEGIN_QUORUM_EPOCH
        return key, VERSIONS[key], {"cluster_id": cluster_id, "topics": _topic(part)}
    if isinstance(message, EndQuorumEpochRequest):
        part = {
            "partition_index": METADATA_PARTITION,
            "leader_id": message.leader_id,
            "leader_epoch": message.leader_epoch,
            "preferred_successors": list(message.preferred_successors),
        }
        key = ApiKey.END_QUORUM_EPOCH
        return key, VERSIONS[key], {"cluster_id": cluster_id, "topics": _topic(part)}
    if isinstance(message, FetchRequest):
        return ApiKey.FETCH, VERSIONS[ApiKey.FETCH], _fetch_fields(message, cluster_id)
    sid = message.snapshot_id
    part = {
        "partition": METADATA_PARTITION,
        "current_leader_epoch": message.current_leader_epoch,
        "snapshot_id": {"end_offset": sid.offset, "epoch": sid.epoch},
        "position": message.position,
    }
    fields = {
        "cluster_id": cluster_id,
        "replica_id": message.replica_id,
        "max_bytes": SNAPSHOT_MAX_BYTES,
        "topics": [{"name": METADATA_TOPIC, "partitions": [part]}],
    }
    return ApiKey.FETCH_SNAPSHOT, VERSIONS[ApiKey.FETCH_SNAPSHOT], fields


def _fetch_fields(message: FetchRequest, cluster_id: str | None) -> dict[str, Any]:
    part: dict[str, Any] = {
        "partition": METADATA_PARTITION,
        "current_leader_epoch": message.current_leader_epoch,
        "fetch_offset": message.fetch_offset,
        "last_fetched_epoch": message.last_fetched_epoch,
        "log_start_offset": NO_OFFSET,
        "partition_max_bytes": FETCH_MAX_BYTES,
    }
    return {
        "cluster_id": cluster_id,
        "replica_id": message.replica_id,
        "max_wait": message.max_wait_ms,
        "min_bytes": 1,
        "max_bytes": FETCH_MAX_BYTES,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": NO_OFFSET,
        "topics": [{"topic_id": METADATA_TOPIC_ID, "partitions": [part]}],
        "forgotten_topics_data": [],
        "rack_id": "",
    }


def parse_request(api_key: int, body: Any) -> tuple[int, RaftRequest]:
    """The sender's id and the state machine's request in a Kafka request ``body``."""
    if api_key == ApiKey.FETCH:
        part = body.topics[0].partitions[0]
        request = FetchRequest(
            int(body.replica_id),
            int(part.current_leader_epoch),
            int(part.fetch_offset),
            int(part.last_fetched_epoch),
            _ms(body.max_wait),
        )
        return request.replica_id, request
    if api_key == ApiKey.FETCH_SNAPSHOT:
        part = body.topics[0].partitions[0]
        sid = OffsetAndEpoch(int(part.snapshot_id.epoch), int(part.snapshot_id.end_offset))
        snapshot_request = FetchSnapshotRequest(
            int(body.replica_id), int(part.current_leader_epoch), sid, int(part.position)
        )
        return snapshot_request.replica_id, snapshot_request
    part = body.topics[0].partitions[0]
    if api_key == ApiKey.VOTE:
        vote = VoteRequest(
            int(part.replica_epoch),
            int(part.replica_id),
            int(part.last_offset_epoch),
            int(part.last_offset),
            bool(getattr(part, "pre_vote", False)),
        )
        return vote.candidate_id, vote
    if api_key == ApiKey.BEGIN_QUORUM_EPOCH:
        begin = BeginQuorumEpochRequest(int(part.leader_epoch), int(part.leader_id))
        return begin.leader_id, begin
    if api_key == ApiKey.END_QUORUM_EPOCH:
        successors = tuple(int(s) for s in part.preferred_successors)
        end = EndQuorumEpochRequest(int(part.leader_epoch), int(part.leader_id), successors)
        return end.leader_id, end
    raise ValueError(f"BUG: api key {api_key} is not one of the quorum's")


def _ms(value: Any) -> int:
    """A duration field (kio gives a timedelta) in ms."""
    if isinstance(value, timedelta):
        return round(value.total_seconds() * 1000)
    return int(value)


def encode_batches(batches: tuple[Batch, ...]) -> bytes:
    """Batches as the metadata log encodes them (the epoch mark as a control batch)."""
    return b"".join(encode_records(b.base_offset, b.epoch, 0, stored_records(b)) for b in batches)


def decode_batches(data: bytes) -> tuple[Batch, ...]:
    return tuple(raft_batch(b) for b in iter_batches(data))


def response_for(api_key: int, version: int, message: Message) -> Response:
    """The Kafka response carrying the state machine's answer ``message``."""
    cls = response_class(api_key, version)
    if isinstance(message, VoteResponse):
        part: dict[str, Any] = {
            "partition_index": METADATA_PARTITION,
            "error_code": message.error_code,
            "leader_id": message.leader_id,
            "leader_epoch": message.leader_epoch,
            "vote_granted": message.vote_granted,
        }
        return make(cls, error_code=NONE, topics=_topic(part), node_endpoints=[])
    if isinstance(message, BeginQuorumEpochResponse | EndQuorumEpochResponse):
        part = {
            "partition_index": METADATA_PARTITION,
            "error_code": message.error_code,
            "leader_id": message.leader_id,
            "leader_epoch": message.leader_epoch,
        }
        return make(cls, error_code=NONE, topics=_topic(part))
    if isinstance(message, FetchResponse):
        return make(cls, _fetch_response_fields(message))
    if isinstance(message, FetchSnapshotResponse):
        sid = message.snapshot_id
        part = {
            "index": METADATA_PARTITION,
            "error_code": message.error_code,
            "snapshot_id": {"end_offset": sid.offset, "epoch": sid.epoch},
            "current_leader": {
                "leader_id": message.leader_id,
                "leader_epoch": message.leader_epoch,
            },
            "size": message.size,
            "position": message.position,
            "unaligned_records": message.chunk,
        }
        topics = [{"name": METADATA_TOPIC, "partitions": [part]}]
        return make(cls, throttle_time=0, error_code=NONE, topics=topics)
    raise ValueError(f"BUG: {type(message).__name__} is not an answer")


def error_response(api_key: int, version: int, error_code: int) -> Response:
    """A Kafka response to a quorum request refused as a whole (INCONSISTENT_CLUSTER_ID): the
    error at its top and no partition."""
    cls = response_class(api_key, version)
    if api_key == ApiKey.FETCH:
        return make(cls, throttle_time=0, error_code=error_code, session_id=0, responses=[])
    if api_key == ApiKey.FETCH_SNAPSHOT:
        return make(cls, throttle_time=0, error_code=error_code, topics=[])
    if api_key == ApiKey.VOTE:
        return make(cls, error_code=error_code, topics=[], node_endpoints=[])
    return make(cls, error_code=error_code, topics=[])


def _leader(leader_id: int, epoch: int) -> dict[str, int]:
    return {"leader_id": leader_id, "leader_epoch": epoch}


def _fetch_response_fields(message: FetchResponse) -> dict[str, Any]:
    diverging = message.diverging_epoch or OffsetAndEpoch(NO_OFFSET, NO_OFFSET)
    snapshot = message.snapshot_id or OffsetAndEpoch(NO_OFFSET, NO_OFFSET)
    part: dict[str, Any] = {
        "partition_index": METADATA_PARTITION,
        "error_code": message.error_code,
        "high_watermark": message.high_watermark,
        "last_stable_offset": message.high_watermark,
        "log_start_offset": NO_OFFSET,
        "diverging_epoch": {"epoch": diverging.epoch, "end_offset": diverging.offset},
        "current_leader": _leader(message.leader_id, message.leader_epoch),
        "snapshot_id": {"end_offset": snapshot.offset, "epoch": snapshot.epoch},
        "aborted_transactions": None,
        "preferred_read_replica": NO_LEADER,
        "records": encode_batches(message.batches),
    }
    return {
        "throttle_time": 0,
        "error_code": NONE,
        "session_id": 0,
        "responses": [{"topic_id": METADATA_TOPIC_ID, "partitions": [part]}],
    }


def parse_response(request: RaftRequest, body: Any) -> Message:
    """The state machine's answer in the Kafka response ``body`` to ``request``."""
    if isinstance(request, FetchRequest):
        part = body.responses[0].partitions[0]
        diverging = part.diverging_epoch
        snapshot = part.snapshot_id
        return FetchResponse(
            int(part.error_code),
            int(part.current_leader.leader_id),
            int(part.current_leader.leader_epoch),
            int(part.high_watermark),
            request.fetch_offset,
            request.last_fetched_epoch,
            decode_batches(bytes(part.records or b"")),
            None
            if int(diverging.epoch) < 0
            else OffsetAndEpoch(int(diverging.epoch), int(diverging.end_offset)),
            None
            if int(snapshot.end_offset) < 0
            else OffsetAndEpoch(int(snapshot.epoch), int(snapshot.end_offset)),
        )
    if isinstance(request, FetchSnapshotRequest):
        part = body.topics[0].partitions[0]
        return FetchSnapshotResponse(
            int(part.error_code),
            int(part.current_leader.leader_id),
            int(part.current_leader.leader_epoch),
            request.snapshot_id,
            int(part.position),
            int(part.size),
            bytes(part.unaligned_records or b""),
        )
    part = body.topics[0].partitions[0]
    error, leader_id, epoch = int(part.error_code), int(part.leader_id), int(part.leader_epoch)
    if isinstance(request, VoteRequest):
        granted = bool(part.vote_granted)
        return VoteResponse(
            error, leader_id, epoch, granted, request.is_pre_vote, request.candidate_epoch
        )
    if isinstance(request, BeginQuorumEpochRequest):
        return BeginQuorumEpochResponse(error, leader_id, epoch)
    return EndQuorumEpochResponse(error, leader_id, epoch)
