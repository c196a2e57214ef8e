"""AlterPartition (KIP-497), AlterPartitionReassignments, ListPartitionReassignments and
ElectLeaders (KIP-460): the requests about a partition's replicas and leader, read into
:mod:`rackwise.controller.messages` and answered in the request's version
(:mod:`rackwise.controller_node.apis`). A request-wide error goes to the top-level error code
and, where Kafka's ``getErrorResponse`` does so, to every partition named."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from rackwise.common.error_codes import NONE
from rackwise.controller import ApiError
from rackwise.controller.alter_partition import (
    AlterPartitionData,
    AlterPartitionRequest,
    AlterPartitionTopic,
    AlterPartitionTopicResult,
    IsrMember,
)
from rackwise.controller.elections import ElectionType
from rackwise.controller.messages import (
    ListPartitionReassignmentsTopic,
    OngoingTopicReassignment,
    ReassignablePartition,
    ReassignablePartitionResult,
    ReassignableTopic,
    ReassignableTopicResult,
)
from rackwise.controller_node.apis import response
from rackwise.protocol import Response
from rackwise.records import ZERO_UUID

# ---- partitions (KIP-497) ------------------------------------------------------------------


def alter_partition_args(body: Any) -> AlterPartitionRequest:
    """An AlterPartition v2 or v3 (v2's ISR members have no broker epochs)."""
    topics = []
    for topic in body.topics:
        partitions = []
        for p in topic.partitions:
            if hasattr(p, "new_isr_with_epochs"):
                isr = tuple(
                    IsrMember(int(m.broker_id), int(m.broker_epoch)) for m in p.new_isr_with_epochs
                )
            else:
                isr = tuple(IsrMember(int(b)) for b in p.new_isr)
            partitions.append(
                AlterPartitionData(
                    partition_index=int(p.partition_index),
                    leader_epoch=int(p.leader_epoch),
                    partition_epoch=int(p.partition_epoch),
                    new_isr=isr,
                    leader_recovery_state=int(p.leader_recovery_state),
                )
            )
        topics.append(AlterPartitionTopic(topic.topic_id or ZERO_UUID, tuple(partitions)))
    return AlterPartitionRequest(int(body.broker_id), int(body.broker_epoch), tuple(topics))


def alter_partition_response(body: Any, results: Iterable[AlterPartitionTopicResult]) -> Response:
    return response(
        body,
        {
            "error_code": NONE,
            "topics": [
                {
                    "topic_id": t.topic_id,
                    "partitions": [
                        {
                            "partition_index": p.partition_index,
                            "error_code": p.error_code,
                            "leader_id": p.leader_id,
                            "leader_epoch": p.leader_epoch,
                            "isr": list(p.isr),
                            "leader_recovery_state": p.leader_recovery_state,
                            "partition_epoch": p.partition_epoch,
                        }
                        for p in t.partitions
                    ],
                }
                for t in results
            ],
        },
    )


def alter_partition_error(body: Any, error: ApiError) -> Response:
    """The whole request refused (Kafka's ``AlterPartitionRequest.getErrorResponse``): the
    error at the top level, no topics."""
    return response(body, {"error_code": error.error_code, "topics": []})


# ---- partition reassignment -------------------------------------------------------------------


def alter_partition_reassignments_args(body: Any) -> tuple[list[ReassignableTopic], bool]:
    """The topics and KIP-860's ``allow_replication_factor_change`` (true before v1)."""
    topics = [
        ReassignableTopic(
            name=str(t.name),
            partitions=tuple(
                ReassignablePartition(
                    int(p.partition_index),
                    None if p.replicas is None else tuple(int(b) for b in p.replicas),
                )
                for p in t.partitions
            ),
        )
        for t in body.topics
    ]
    return topics, bool(getattr(body, "allow_replication_factor_change", True))


def alter_partition_reassignments_response(
    body: Any, results: Iterable[ReassignableTopicResult], error: ApiError | None = None
) -> Response:
    """Per partition results; ``error`` (a request-wide failure) goes to the top-level error
    and every partition, as Kafka's ``getErrorResponse`` does."""
    top = error or ApiError()
    return response(
        body,
        {
            "allow_replication_factor_change": bool(
                getattr(body, "allow_replication_factor_change", True)
            ),
            "error_code": top.error_code,
            "error_message": top.message,
            "responses": [
                {
                    "name": r.name,
                    "partitions": [
                        {
                            "partition_index": p.partition_index,
                            "error_code": p.error.error_code,
                            "error_message": p.error.message,
                        }
                        for p in r.partitions
                    ],
                }
                for r in results
            ],
        },
    )


def alter_partition_reassignments_error(body: Any, error: ApiError) -> Response:
    results = [
        ReassignableTopicResult(
            str(t.name),
            tuple(ReassignablePartitionResult(int(p.partition_index), error) for p in t.partitions),
        )
        for t in body.topics
    ]
    return alter_partition_reassignments_response(body, results, error)


def list_partition_reassignments_args(body: Any) -> list[ListPartitionReassignmentsTopic] | None:
    """The topics asked about; None lists every reassignment in progress."""
    if body.topics is None:
        return None
    return [
        ListPartitionReassignmentsTopic(str(t.name), tuple(int(p) for p in t.partition_indexes))
        for t in body.topics
    ]


def list_partition_reassignments_response(
    body: Any, topics: Iterable[OngoingTopicReassignment], error: ApiError | None = None
) -> Response:
    top = error or ApiError()
    return response(
        body,
        {
            "error_code": top.error_code,
            "error_message": top.message,
            "topics": [
                {
                    "name": t.name,
                    "partitions": [
                        {
                            "partition_index": p.partition_index,
                            "replicas": list(p.replicas),
                            "adding_replicas": list(p.adding_replicas),
                            "removing_replicas": list(p.removing_replicas),
                        }
                        for p in t.partitions
                    ],
                }
                for t in topics
            ],
        },
    )


def list_partition_reassignments_error(body: Any, error: ApiError) -> Response:
    return list_partition_reassignments_response(body, [], error)


# ---- leader elections (KIP-460) ---------------------------------------------------------------


def elect_leaders_args(body: Any) -> tuple[ElectionType, dict[str, list[int]] | None]:
    """The election (PREFERRED before v1, which has no ``election_type``) and the partitions
    named by topic; None for every partition."""
    election = ElectionType.of(int(getattr(body, "election_type", ElectionType.PREFERRED)))
    if body.topic_partitions is None:
        return election, None
    topics: dict[str, list[int]] = {}
    for topic in body.topic_partitions:
        topics.setdefault(str(topic.topic), []).extend(int(p) for p in topic.partitions)
    return election, topics


def elect_leaders_response(
    body: Any,
    results: Iterable[tuple[str, Sequence[tuple[int, int, str | None]]]],
    error: ApiError | None = None,
) -> Response:
    return response(
        body,
        {
            "error_code": error.error_code if error is not None else NONE,
            "replica_election_results": [
                {
                    "topic": topic,
                    "partition_result": [
                        {"partition_id": p, "error_code": code, "error_message": message}
                        for p, code, message in partitions
                    ],
                }
                for topic, partitions in results
            ],
        },
    )


def elect_leaders_error(body: Any, error: ApiError) -> Response:
    """Every named partition with ``error``, and ``error`` at the top (Kafka's
    ``ElectLeadersRequest.getErrorResponse``)."""
    results = [
        (str(t.topic), [(int(p), error.error_code, error.message) for p in t.partitions])
        for t in body.topic_partitions or ()
    ]
    return elect_leaders_response(body, results, error)
