"""DescribeTopicPartitions (api 75, KIP-966): a topic's partitions in pages, as Kafka's
``DescribeTopicPartitionsRequestHandler`` and ``KRaftMetadataCache`` answer it from the image.

Goals
    * Every requested topic (none: every topic) from the cursor on, in name order, at most
      ``response_partition_limit`` partitions in one answer (bounded by 2,000, Kafka's
      ``max.request.partition.size.limit``, and at least 1); ``next_cursor`` names the first
      partition left out, so that Kafka's ``kafka-topics --describe`` and kafka-python's
      ``describe_topic_partitions`` page through a topic of any size.
    * Each partition as Metadata shows it, with the leader only when its broker has the
      listener the request came in on, the offline replicas, and the eligible leader replicas
      (rackwise does not keep ELR: both ELR lists are empty, as Kafka's are with
      ``eligible.leader.replicas.version`` off).

Constraints
    Pure. A named topic the image lacks is UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION
    for a name Kafka refuses); with no topics named, topics that do not exist are not listed.
    A cursor whose topic is not among those named, or whose partition is negative, fails the
    request: every named topic gets INVALID_REQUEST, as Kafka's ``getErrorResponse``.

Worked example
    Topics ``a`` (3 partitions) and ``b`` (2), limit 4: partitions a-0, a-1, a-2 and b-0, then
    ``next_cursor`` (``b``, 1). The next request with that cursor answers b-1 alone and no
    cursor.
"""

from __future__ import annotations

from typing import Any, Final

from rackwise.broker.metadata_apis import INTERNAL_TOPICS, TOPIC_OPERATIONS, is_replica_offline
from rackwise.common.acl import OPERATIONS_NOT_ASKED
from rackwise.common.error_codes import (
    INVALID_REQUEST,
    INVALID_TOPIC_EXCEPTION,
    NONE,
    UNKNOWN_TOPIC_OR_PARTITION,
)
from rackwise.controller.names import invalid_topic_reason
from rackwise.image import MetadataImage, PartitionRegistration, endpoint_on
from rackwise.protocol import ApiKey, Response, make, response_class
from rackwise.records import ZERO_UUID
from rackwise.records.constants import NO_LEADER

MAX_PARTITIONS: Final = 2_000
"""Kafka's ``max.request.partition.size.limit`` default: the most partitions one answer holds."""


def describe_topic_partitions(body: Any, image: MetadataImage, listener: str) -> Response:
    """The response to ``body`` (module docstring)."""
    version = int(type(body).__version__)
    named = [str(t.name) for t in body.topics]
    cursor = body.cursor
    after = str(cursor.topic_name) if cursor is not None else ""
    every = not named
    wanted = sorted({n for n in (image.topics_by_name if every else named) if n >= after})
    if cursor is not None and (
        (not every and str(cursor.topic_name) not in wanted) or int(cursor.partition_index) < 0
    ):
        return _answer(version, [_request_error(name, INVALID_REQUEST) for name in named], None)
    remaining = max(min(MAX_PARTITIONS, int(body.response_partition_limit)), 1)
    topics: list[dict[str, Any]] = []
    next_cursor = None
    for name in wanted:
        if remaining == 0:
            next_cursor = {"topic_name": name, "partition_index": 0}
            break
        topic = image.topic(name)
        if topic is None:
            if not every:
                invalid = invalid_topic_reason(name)
                topics.append(
                    _topic(name, INVALID_TOPIC_EXCEPTION if invalid else UNKNOWN_TOPIC_OR_PARTITION)
                )
            continue
        start = int(cursor.partition_index) if cursor is not None and name == after else 0
        end = min(len(topic.partitions), start + remaining)
        partitions = [
            _partition(image, topic.partitions[p], listener)
            for p in range(start, end)
            if p in topic.partitions
        ]
        topics.append(_topic(name, NONE, topic_id=topic.topic_id, partitions=partitions))
        if end < len(topic.partitions):
            next_cursor = {"topic_name": name, "partition_index": end}
            break
        remaining -= len(partitions)
    return _answer(version, topics, next_cursor)


def _topic(
    name: str,
    error: int,
    *,
    topic_id: Any = ZERO_UUID,
    partitions: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return {
        "error_code": error,
        "name": name,
        "topic_id": topic_id,
        "is_internal": name in INTERNAL_TOPICS,
        "partitions": partitions or [],
        "topic_authorized_operations": TOPIC_OPERATIONS,
    }


def _request_error(name: str, error: int) -> dict[str, Any]:
    """A named topic of a request that failed as a whole (Kafka's ``getErrorResponse``)."""
    return {
        "error_code": error,
        "name": name,
        "topic_id": ZERO_UUID,
        "is_internal": False,
        "partitions": [],
        "topic_authorized_operations": OPERATIONS_NOT_ASKED,
    }


def _partition(image: MetadataImage, partition: PartitionRegistration, listener: str) -> Any:
    leader = image.brokers.get(partition.leader)
    has_endpoint = leader is not None and endpoint_on(leader, listener) is not None
    return {
        "error_code": NONE,
        "partition_index": partition.partition_id,
        "leader_id": partition.leader if has_endpoint else NO_LEADER,
        "leader_epoch": partition.leader_epoch,
        "replica_nodes": list(partition.replicas),
        "isr_nodes": list(partition.isr),
        "eligible_leader_replicas": [],
        "last_known_elr": [],
        "offline_replicas": [
            r for r in partition.replicas if is_replica_offline(image, partition, r, listener)
        ],
    }


def _answer(version: int, topics: list[dict[str, Any]], next_cursor: Any) -> Response:
    return make(
        response_class(ApiKey.DESCRIBE_TOPIC_PARTITIONS, version),
        throttle_time=0,
        topics=topics,
        next_cursor=next_cursor,
    )
