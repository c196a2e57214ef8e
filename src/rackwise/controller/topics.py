"""Building blocks of the topic commands: checking a manual assignment, the records of a new
partition, the request-level checks Kafka makes before the controller sees a request
(``ControllerApis``: duplicate names, the metadata topic), and the bound on the partitions one
request may create, checked before any work is done (Kafka's
``validateTotalNumberOfPartitions``: 10,000, POLICY_VIOLATION "Excessively large number of
partitions per request."). The bound counts what a request asks for, not what would succeed:
a topic's ``num_partitions`` (the default for -1) or the length of its manual assignment; for
CreatePartitions, each topic's new total less its current count; for KIP-879's
CreateReplicaPlacement, its ``NumPartitions``."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

from rackwise.common import InvalidRequestException
from rackwise.common.errors import InvalidTopicException, PolicyViolationException
from rackwise.controller.brokers import default_dir, is_active
from rackwise.controller.errors import ApiError, InvalidReplicaAssignmentException
from rackwise.controller.messages import USE_DEFAULT, CreatableTopic, CreatePartitionsTopic
from rackwise.controller.names import (
    CLUSTER_METADATA_TOPIC,
    has_collision_chars,
    unify_collision_chars,
    validate_topic_name,
)
from rackwise.image import MetadataImage
from rackwise.records.constants import LEADER_RECOVERED
from rackwise.records.metadata import PartitionRecord

DUPLICATE_NAME = "Duplicate topic name."
MAX_PARTITIONS_PER_REQUEST: Final = 10_000
"""Kafka's ``MAX_PARTITIONS_PER_BATCH``: the most partitions one request may create."""
EXCESSIVE_PARTITIONS: Final = "Excessively large number of partitions per request."


def check_partitions_per_request(num_partitions: int) -> None:
    """Refuse a request that would create more than :data:`MAX_PARTITIONS_PER_REQUEST`
    partitions (a POLICY_VIOLATION for the whole request, as Kafka's)."""
    if num_partitions > MAX_PARTITIONS_PER_REQUEST:
        raise PolicyViolationException(EXCESSIVE_PARTITIONS)


def requested_partitions(topics: Iterable[CreatableTopic], default_num_partitions: int) -> int:
    """The partitions a CreateTopics request asks for (Kafka's count: an assignment's length,
    else ``num_partitions``, the default for -1, nothing for an invalid count)."""
    total = 0
    for topic in topics:
        if topic.assignments:
            total += len(topic.assignments)
        elif topic.num_partitions == USE_DEFAULT:
            total += default_num_partitions
        elif topic.num_partitions > 0:
            total += topic.num_partitions
    return total


def added_partitions(image: MetadataImage, topics: Iterable[CreatePartitionsTopic]) -> int:
    """The partitions a CreatePartitions request would add: each existing topic's new count
    less its current one (unknown topics and decreases add none; a name given twice counts
    once, as it is answered once)."""
    total = 0
    seen: set[str] = set()
    for topic in topics:
        if topic.name in seen:
            continue
        seen.add(topic.name)
        current = image.topic(topic.name)
        if current is not None:
            total += max(topic.count - len(current.partitions), 0)
    return total


def request_level_errors(names: Iterable[str], *, creating: bool) -> dict[str, ApiError]:
    """Errors for names given more than once and, when ``creating``, for the metadata log's
    own name (Kafka's ``ControllerApis``)."""
    seen: set[str] = set()
    errors: dict[str, ApiError] = {}
    for name in names:
        if name in seen:
            errors[name] = ApiError(InvalidRequestException.error_code, DUPLICATE_NAME)
        seen.add(name)
    if creating and CLUSTER_METADATA_TOPIC in seen and CLUSTER_METADATA_TOPIC not in errors:
        errors[CLUSTER_METADATA_TOPIC] = ApiError(
            InvalidRequestException.error_code,
            f"Creation of internal topic {CLUSTER_METADATA_TOPIC} is prohibited.",
        )
    return errors


def check_new_topic_name(name: str, collisions: dict[str, set[str]]) -> None:
    """Kafka's ``validateNewTopicNames`` for one name: legal, and not colliding (through '.'
    and '_') with an existing topic."""
    validate_topic_name(name)
    if has_collision_chars(name):
        colliding = collisions.get(unify_collision_chars(name))
        if colliding:
            raise InvalidTopicException(
                f"Topic '{name}' collides with existing topic: {min(colliding)}"
            )


def check_manual_assignment(
    image: MetadataImage, replicas: Sequence[int], replication_factor: int | None
) -> None:
    """Kafka's ``validateManualPartitionAssignment``: replicas not empty, all registered, none
    twice, and as many as the other partitions have."""
    if not replicas:
        raise InvalidReplicaAssignmentException(
            "The manual partition assignment includes an empty replica list."
        )
    previous = None
    for broker in sorted(replicas):
        if broker not in image.brokers:
            raise InvalidReplicaAssignmentException(
                f"The manual partition assignment includes broker {broker}, but no such broker "
                "is registered."
            )
        if broker == previous:
            raise InvalidReplicaAssignmentException(
                f"The manual partition assignment includes the broker {broker} more than once."
            )
        previous = broker
    if replication_factor is not None and len(replicas) != replication_factor:
        raise InvalidReplicaAssignmentException(
            f"The manual partition assignment includes a partition with {len(replicas)} "
            "replica(s), but this is not consistent with previous partitions, which have "
            f"{replication_factor} replica(s)."
        )


def initial_isr(image: MetadataImage, replicas: Sequence[int]) -> list[int]:
    """A new partition's ISR: its active replicas, in replica order."""
    return [b for b in replicas if is_active(image, b)]


def partition_record(
    image: MetadataImage,
    topic_id: uuid.UUID,
    partition_id: int,
    replicas: Sequence[int],
    isr: Sequence[int],
    leader_order: Callable[[Sequence[int]], list[int]] | None = None,
) -> Any:
    """A new partition (Kafka's ``buildPartitionRegistration``): led by the first in-sync
    replica (with a ``leaders.preference``, the first in preference order), epochs 0, each
    replica in its broker's default directory."""
    return PartitionRecord(
        partition_id=partition_id,
        topic_id=topic_id,
        replicas=tuple(replicas),
        isr=tuple(isr),
        removing_replicas=(),
        adding_replicas=(),
        leader=isr[0] if leader_order is None else leader_order(isr)[0],
        leader_recovery_state=LEADER_RECOVERED,
        leader_epoch=0,
        partition_epoch=0,
        directories=tuple(default_dir(image, b) for b in replicas),
    )
