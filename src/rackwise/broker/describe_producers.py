"""DescribeProducers: the idempotent producers a replica keeps state for, per partition, as
Kafka's broker answers ``kafka-transactions.sh describe-producers``.

Goals
    An operator can see, on any replica of a partition, which producer ids have written to it,
    with their epoch, last sequence and last timestamp: the state that decides whether a
    retried batch is a duplicate and whether the next one is in sequence.

Constraints
    * As Kafka's ``handleDescribeProducersRequest``: a topic name Kafka refuses is
      INVALID_TOPIC_EXCEPTION with Kafka's message, a topic the image does not have is
      UNKNOWN_TOPIC_OR_PARTITION with the error's default message, both for every partition
      asked for; otherwise each partition is answered by this broker's replica of it, leader
      or follower (``ReplicaManager.activeProducerState``): NOT_LEADER_OR_FOLLOWER where it
      holds none, KAFKA_STORAGE_ERROR where its directory failed, UNKNOWN_TOPIC_OR_PARTITION
      for a partition the topic does not have, with no message.
    * rackwise has no transactions, so every coordinator epoch and transaction start offset
      is -1, as Kafka reports them for an idempotent producer.
    * Producers are listed by producer id; Kafka lists them in its hash map's order, which is
      the same for ids below the map's size.

Worked example
    A producer with id 4000 and epoch 0 has sent batches with sequences 0-99 to ``orders``-0:
    ``{"name": "orders", "partitions": [{"partition_index": 0, "error_code": 0,
    "active_producers": [{"producer_id": 4000, "producer_epoch": 0, "last_sequence": 99,
    "last_timestamp": <its last batch's max timestamp>, "coordinator_epoch": -1,
    "current_txn_start_offset": -1}]}]}``.
"""

from __future__ import annotations

from typing import Any, Final

from rackwise.common.error_codes import NONE, UNKNOWN_TOPIC_OR_PARTITION
from rackwise.common.errors import RackwiseError
from rackwise.controller.names import validate_topic_name
from rackwise.image import MetadataImage
from rackwise.protocol import Response, response_to
from rackwise.replica.manager import ReplicaManager

UNKNOWN_TOPIC_MESSAGE: Final = "This server does not host this topic-partition."
"""Kafka's default message of UNKNOWN_TOPIC_OR_PARTITION (``Errors``)."""


def _topic_error(name: str, image: MetadataImage) -> tuple[int, str] | None:
    try:
        validate_topic_name(name)
    except RackwiseError as e:
        return e.error_code, str(e)
    if image.topic(name) is None:
        return UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_MESSAGE
    return None


def _partition(replicas: ReplicaManager, topic: str, index: int) -> dict[str, Any]:
    try:
        log = replicas.get(topic, index).log
    except RackwiseError as e:
        return {"partition_index": index, "error_code": e.error_code, "active_producers": []}
    producers = [
        {
            "producer_id": entry.producer_id,
            "producer_epoch": entry.producer_epoch,
            "last_sequence": entry.last_seq,
            "last_timestamp": entry.last_timestamp,
            "coordinator_epoch": entry.coordinator_epoch,
            "current_txn_start_offset": entry.current_txn_first_offset,
        }
        for entry in log.active_producers()
    ]
    return {"partition_index": index, "error_code": NONE, "active_producers": producers}


def describe_producers(body: Any, image: MetadataImage, replicas: ReplicaManager) -> Response:
    """The answer to one DescribeProducers request (module docstring)."""
    topics = []
    for topic in body.topics:
        name = str(topic.name)
        error = _topic_error(name, image)
        if error is None:
            partitions = [_partition(replicas, name, int(p)) for p in topic.partition_indexes]
        else:
            code, message = error
            partitions = [
                {
                    "partition_index": int(p),
                    "error_code": code,
                    "error_message": message,
                    "active_producers": [],
                }
                for p in topic.partition_indexes
            ]
        topics.append({"name": name, "partitions": partitions})
    return response_to(body, {"throttle_time": 0, "topics": topics})
