"""The replicas and initial ISR of new partitions: a new topic's, from its manual assignment or
from the placer (Kafka's ``ReplicationControlManager.createTopic``), and those CreatePartitions
adds after a topic's last one (Kafka's ``createPartitions``). Each partition starts with its
active replicas as its ISR; one with none active is refused, with Kafka's messages.

Constraints
    Pure functions of the image and the request: they raise the typed error Kafka answers
    with (INVALID_REQUEST, INVALID_REPLICA_ASSIGNMENT, INVALID_PARTITIONS,
    INVALID_REPLICATION_FACTOR) and write nothing; the topic commands of
    :class:`~rackwise.controller.replication.ReplicationControl` turn their rows into records.

Worked example
    CreateTopics of "t" with ``{0: [1, 2], 1: [2, 3]}``, replication factor and partition
    count -1, brokers 1-3 registered and broker 3 fenced: ``{0: ((1, 2), [1, 2]), 1: ((2, 3),
    [2])}``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rackwise.common import (
    InvalidPartitionsException,
    InvalidReplicationFactorException,
    InvalidRequestException,
)
from rackwise.controller.domains import LeaderOrder
from rackwise.controller.errors import (
    InvalidReplicaAssignmentException,
    UnknownTopicOrPartitionException,
)
from rackwise.controller.messages import USE_DEFAULT, CreatableTopic, CreatePartitionsTopic
from rackwise.controller.placing import place
from rackwise.controller.topics import check_manual_assignment, initial_isr, partition_record
from rackwise.image import MetadataImage
from rackwise.placement import ReplicaPlacer

NewPartitions = dict[int, tuple[tuple[int, ...], list[int]]]
"""Partition id -> (replicas, initial ISR)."""


def unable_to_replicate(replication_factor: int, reason: str) -> InvalidReplicationFactorException:
    return InvalidReplicationFactorException(
        f"Unable to replicate the partition {replication_factor} time(s): {reason}"
    )


def manual_partitions(image: MetadataImage, topic: CreatableTopic) -> NewPartitions:
    """A new topic's partitions as its request assigns them (partition count and replication
    factor must be -1, the partition ids 0 up)."""
    if topic.replication_factor != USE_DEFAULT:
        raise InvalidRequestException(
            "A manual partition assignment was specified, but replication factor was not set to -1."
        )
    if topic.num_partitions != USE_DEFAULT:
        raise InvalidRequestException(
            "A manual partition assignment was specified, but numPartitions was not set to -1."
        )
    assert topic.assignments is not None
    partitions: NewPartitions = {}
    replication_factor: int | None = None
    for pid, replicas in topic.assignments.items():
        check_manual_assignment(image, replicas, replication_factor)
        replication_factor = len(replicas)
        isr = initial_isr(image, replicas)
        if not isr:
            raise InvalidReplicaAssignmentException(
                f"All brokers specified in the manual partition assignment for partition "
                f"{pid} are fenced or in controlled shutdown."
            )
        partitions[pid] = (tuple(replicas), isr)
    if any(pid not in partitions for pid in range(len(partitions))):
        raise InvalidReplicaAssignmentException(
            "partitions should be a consecutive 0-based integer sequence"
        )
    return partitions


def placed_partitions(
    image: MetadataImage,
    topic: CreatableTopic,
    placer: ReplicaPlacer,
    *,
    default_num_partitions: int,
    default_replication_factor: int,
) -> NewPartitions:
    """A new topic's partitions as ``placer`` places them (-1: the configured default
    partition count or replication factor)."""
    rf, count = topic.replication_factor, topic.num_partitions
    if rf < USE_DEFAULT or rf == 0:
        raise InvalidReplicationFactorException(
            "Replication factor must be larger than 0, or -1 to use the default value."
        )
    if count < USE_DEFAULT or count == 0:
        raise InvalidPartitionsException(
            "Number of partitions was set to an invalid non-positive value."
        )
    count = default_num_partitions if count == USE_DEFAULT else count
    rf = default_replication_factor if rf == USE_DEFAULT else rf
    try:
        rows = place(placer, image, topic.name, count, rf)
    except InvalidReplicationFactorException as e:
        raise unable_to_replicate(rf, e.message) from e
    partitions = {}
    for pid, replicas in enumerate(rows):
        isr = initial_isr(image, replicas)
        if not isr:
            raise unable_to_replicate(
                rf, "All brokers are currently fenced or in controlled shutdown."
            )
        partitions[pid] = (tuple(replicas), isr)
    return partitions


def preferred_first(row: Sequence[int], leader_order: LeaderOrder | None) -> list[int]:
    """A placed row with its most preferred replica first (the rest in the placer's order)."""
    if leader_order is None or not row:
        return list(row)
    first = leader_order(row)[0]
    return [first, *(r for r in row if r != first)]


def added_partition_records(
    image: MetadataImage,
    request: CreatePartitionsTopic,
    placer: ReplicaPlacer,
    leader_order: LeaderOrder | None = None,
) -> list[Any]:
    """The PartitionRecords of the partitions ``request`` adds to its topic, after its last
    one: as the request assigns them, or placed with the topic's replication factor (with a
    ``leaders.preference``, its most preferred replica moved first: :func:`preferred_first`)."""
    topic = image.topic(request.name)
    if topic is None:
        raise UnknownTopicOrPartitionException()
    existing = len(topic.partitions)
    if request.count == existing:
        raise InvalidPartitionsException(f"Topic already has {existing} partition(s).")
    if request.count < existing:
        raise InvalidPartitionsException(
            f"The topic {request.name} currently has {existing} partition(s); "
            f"{request.count} would not be an increase."
        )
    additional = request.count - existing
    if request.assignments is not None and len(request.assignments) != additional:
        raise InvalidReplicaAssignmentException(
            f"Attempted to add {additional} additional partition(s), but only "
            f"{len(request.assignments)} assignment(s) were specified."
        )
    rf = len(topic.partitions[min(topic.partitions)].replicas)
    if request.assignments is not None:
        rows = [list(r) for r in request.assignments]
        for offset, replicas in enumerate(rows):
            check_manual_assignment(image, replicas, rf)
            if not initial_isr(image, replicas):
                raise InvalidReplicaAssignmentException(
                    "All brokers specified in the manual partition assignment for "
                    f"partition {existing + offset} are fenced or in controlled shutdown."
                )
    else:
        rows = place(placer, image, request.name, additional, rf, existing)
        rows = [preferred_first(row, leader_order) for row in rows]
    made = []
    for offset, replicas in enumerate(rows):
        isr = initial_isr(image, replicas)
        if not isr:
            raise unable_to_replicate(
                rf, "All brokers are currently fenced or in controlled shutdown."
            )
        made.append(
            partition_record(image, topic.topic_id, existing + offset, replicas, isr, leader_order)
        )
    return made
