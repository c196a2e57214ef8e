"""Building blocks of the topic commands: checking a manual assignment, the records of a new
partition, and the request-level checks Kafka makes before the controller sees a request
(``ControllerApis``: duplicate names, the metadata topic)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from rackwise.common import InvalidRequestException
from rackwise.controller.brokers import default_dir, is_active
from rackwise.controller.errors import (
    ApiError,
    InvalidReplicaAssignmentException,
    InvalidTopicException,
)
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
) -> Any:
    """A new partition (Kafka's ``buildPartitionRegistration``): led by the first in-sync
    replica, epochs 0, each replica in its broker's default directory."""
    return PartitionRecord(
        partition_id=partition_id,
        topic_id=topic_id,
        replicas=tuple(replicas),
        isr=tuple(isr),
        removing_replicas=(),
        adding_replicas=(),
        leader=isr[0],
        leader_recovery_state=LEADER_RECOVERED,
        leader_epoch=0,
        partition_epoch=0,
        directories=tuple(default_dir(image, b) for b in replicas),
    )
