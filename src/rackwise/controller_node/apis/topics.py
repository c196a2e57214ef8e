"""CreateTopics, CreatePartitions, DeleteTopics and KIP-879's CreateReplicaPlacement: the admin
requests that make and remove topics and partitions, read into
:mod:`rackwise.controller.messages` and answered in the request's version
(:mod:`rackwise.controller_node.apis`). Kafka answers each per topic, so a request-wide error is
given to every topic the request names."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from rackwise.common.error_codes import NONE
from rackwise.controller import (
    ApiError,
    CreatableTopic,
    CreatableTopicResult,
    CreatePartitionsTopic,
    CreatePartitionsTopicResult,
    CreateReplicaPlacementRequest,
    CreateReplicaPlacementResponse,
    DeletableTopicResult,
)
from rackwise.controller_node.apis import response
from rackwise.protocol import ApiKey, Response, make, response_class
from rackwise.records import ZERO_UUID

# ---- topics ----------------------------------------------------------------------------------


def create_topics_args(body: Any) -> list[CreatableTopic]:
    topics = []
    for topic in body.topics:
        assignments = (
            {int(a.partition_index): tuple(int(b) for b in a.broker_ids) for a in topic.assignments}
            if topic.assignments
            else None
        )
        topics.append(
            CreatableTopic(
                name=str(topic.name),
                num_partitions=int(topic.num_partitions),
                replication_factor=int(topic.replication_factor),
                assignments=assignments,
                configs={str(c.name): c.value for c in topic.configs},
            )
        )
    return topics


def create_topics_response(body: Any, results: Sequence[CreatableTopicResult]) -> Response:
    return response(body, {"topics": [_topic_result(r) for r in results]})


def create_topics_error(body: Any, error: ApiError) -> Response:
    """Every topic of the request failed with ``error`` (Kafka answers per topic)."""
    return create_topics_response(body, [CreatableTopicResult(t.name, error) for t in body.topics])


def _topic_result(result: CreatableTopicResult) -> dict[str, Any]:
    return {
        "name": result.name,
        "topic_id": result.topic_id,
        "error_code": result.error.error_code,
        "error_message": result.error.message,
        "topic_config_error_code": NONE,
        "num_partitions": result.num_partitions,
        "replication_factor": result.replication_factor,
        "configs": [
            {
                "name": e.name,
                "value": e.value,
                "read_only": e.is_read_only,
                "config_source": int(e.source),
                "is_sensitive": e.is_sensitive,
            }
            for e in result.configs
        ],
    }


def create_partitions_args(body: Any) -> list[CreatePartitionsTopic]:
    return [
        CreatePartitionsTopic(
            name=str(t.name),
            count=int(t.count),
            assignments=(
                None
                if t.assignments is None
                else tuple(tuple(int(b) for b in a.broker_ids) for a in t.assignments)
            ),
        )
        for t in body.topics
    ]


def create_partitions_response(
    body: Any, results: Iterable[CreatePartitionsTopicResult]
) -> Response:
    return response(
        body,
        {
            "results": [
                {"name": r.name, "error_code": r.error.error_code, "error_message": r.error.message}
                for r in results
            ]
        },
    )


def create_partitions_error(body: Any, error: ApiError) -> Response:
    return create_partitions_response(
        body, [CreatePartitionsTopicResult(t.name, error) for t in body.topics]
    )


def delete_topics_args(body: Any) -> tuple[list[str], list[uuid.UUID]]:
    """The names and the ids to delete (before v6 every topic is named)."""
    if hasattr(body, "topic_names"):
        return [str(n) for n in body.topic_names], []
    names: list[str] = []
    ids: list[uuid.UUID] = []
    for topic in body.topics:
        if topic.name is not None:
            names.append(str(topic.name))
        elif topic.topic_id is not None:
            ids.append(topic.topic_id)
    return names, ids


def delete_topics_response(body: Any, results: Iterable[DeletableTopicResult]) -> Response:
    return response(
        body,
        {
            "responses": [
                {
                    "name": r.name,
                    "topic_id": r.topic_id,
                    "error_code": r.error.error_code,
                    "error_message": r.error.message,
                }
                for r in results
            ]
        },
    )


def delete_topics_error(body: Any, error: ApiError) -> Response:
    names, ids = delete_topics_args(body)
    results = [DeletableTopicResult(n, ZERO_UUID, error) for n in names]
    results += [DeletableTopicResult(None, i, error) for i in ids]
    return delete_topics_response(body, results)


# ---- placement (KIP-879) ---------------------------------------------------------------------


def replica_placement_args(body: Any) -> CreateReplicaPlacementRequest:
    return CreateReplicaPlacementRequest(
        num_partitions=int(body.num_partitions),
        replication_factor=int(body.replication_factor),
        force_simple_placement=bool(body.force_simple_placement),
        node_ids=tuple(int(n) for n in body.node_id),
    )


def replica_placement_response(body: Any, reply: CreateReplicaPlacementResponse) -> Response:
    return make(
        response_class(ApiKey.CREATE_REPLICA_PLACEMENT, int(type(body).__version__)),
        replica_placement=[
            {"partition_id": i, "replicas": list(replicas)}
            for i, replicas in enumerate(reply.placements)
        ],
        error_code=reply.error.error_code,
        error_message=reply.error.message,
        throttle_time_ms=0,
    )
