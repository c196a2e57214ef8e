"""ListOffsets and OffsetForLeaderEpoch on a broker: each asks the replica manager one question
per partition and answers every partition, an error in its own entry (Kafka's ``KafkaApis``
handlers for them).

Both walk a request the same way (:func:`_per_partition`): every topic and partition asked, in
the order asked, each answer starting from the API's "no answer" values (offset -1, epoch -1)
and carrying the error of the question that failed, so one unknown partition never fails the
rest of the request.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from rackwise.common.error_codes import NONE
from rackwise.common.errors import RackwiseError
from rackwise.protocol import ApiKey, Response, make, response_class
from rackwise.replica.manager import ReplicaManager

NO_OFFSET: Final = -1
NO_TIMESTAMP: Final = -1
NO_EPOCH: Final = -1

Answer = Callable[[str, Any], Mapping[str, Any]]
"""A partition's answer fields from its topic's name and the partition asked."""


def _per_partition(
    topics: Any, topic_key: str, index_key: str, empty: Mapping[str, Any], answer: Answer
) -> list[dict[str, Any]]:
    """The response's topics: for each partition asked, ``empty`` with its index and error
    code, updated with ``answer`` unless that raised (the error's code then)."""
    answered = []
    for topic in topics:
        name = str(getattr(topic, topic_key))
        partitions = []
        for p in topic.partitions:
            entry = {index_key: int(getattr(p, index_key)), "error_code": NONE, **empty}
            try:
                entry.update(answer(name, p))
            except RackwiseError as e:
                entry["error_code"] = int(e.error_code)
            partitions.append(entry)
        answered.append({topic_key: name, "partitions": partitions})
    return answered


def list_offsets(replicas: ReplicaManager, body: Any) -> Response:
    """ListOffsets (any version): each partition's offset for its timestamp (-1 latest, -2
    earliest, -3 max timestamp, -4 local log start, -5 tiered: answered by the log)."""
    replica_id = int(body.replica_id)

    def answer(topic: str, p: Any) -> Mapping[str, Any]:
        found = replicas.list_offset(
            topic,
            int(p.partition_index),
            int(p.timestamp),
            replica_id,
            int(getattr(p, "current_leader_epoch", NO_EPOCH)),
        )
        return {
            "offset": found.offset,
            "timestamp": found.timestamp,
            "leader_epoch": found.leader_epoch,
        }

    empty = {
        "timestamp": NO_TIMESTAMP,
        "offset": NO_OFFSET,
        "leader_epoch": NO_EPOCH,
        "old_style_offsets": [],
    }
    topics = _per_partition(body.topics, "name", "partition_index", empty, answer)
    version = int(type(body).__version__)
    return make(
        response_class(ApiKey.LIST_OFFSETS, version), {"throttle_time": 0, "topics": topics}
    )


def offset_for_leader_epoch(replicas: ReplicaManager, body: Any) -> Response:
    """OffsetForLeaderEpoch (any version): each partition's end offset of the asked epoch (the
    largest epoch at or below it, and where the next epoch began)."""
    replica_id = int(getattr(body, "replica_id", -1))

    def answer(topic: str, p: Any) -> Mapping[str, Any]:
        epoch, end = replicas.end_offset_for_epoch(
            topic,
            int(p.partition),
            int(p.leader_epoch),
            int(getattr(p, "current_leader_epoch", NO_EPOCH)),
            replica_id,
        )
        return {"leader_epoch": epoch, "end_offset": end}

    empty = {"leader_epoch": NO_EPOCH, "end_offset": NO_OFFSET}
    topics = _per_partition(body.topics, "topic", "partition", empty, answer)
    version = int(type(body).__version__)
    return make(
        response_class(ApiKey.OFFSET_FOR_LEADER_EPOCH, version),
        {"throttle_time": 0, "topics": topics},
    )
