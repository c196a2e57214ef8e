"""AlterPartition (KIP-497): a partition leader asks the controller to change its ISR (Kafka's
``ReplicationControlManager.alterPartition``).

Goals
    The leader of a partition is the one that knows which followers have caught up; it sends
    the ISR it wants, with the leader and partition epochs it last saw, and the controller
    writes the change (a PartitionChangeRecord from
    :func:`~rackwise.controller.partition_change.build_partition_change`) and answers each
    partition with its new state, or with why it refused.

Constraints
    * Request versions 2 and up only (topics named by id, unknown ids are UNKNOWN_TOPIC_ID,
      ineligible members INELIGIBLE_REPLICA); version 2 carries no broker epochs for the ISR
      members, which then are :data:`NO_BROKER_EPOCH` (not checked).
    * The requester's broker epoch must be its current registration's, or the whole request
      is refused with STALE_BROKER_EPOCH (raised, as Kafka throws it).
    * Per partition, in Kafka's order: unknown partition (UNKNOWN_TOPIC_OR_PARTITION); epochs
      ahead of the controller's (NOT_CONTROLLER: the requester has seen a newer controller);
      an older leader epoch (FENCED_LEADER_EPOCH); a requester that is not the leader
      (INVALID_REQUEST); an older partition epoch (INVALID_UPDATE_VERSION); an ISR with a
      non-replica or a duplicate, or without the leader, or a RECOVERING leader with more
      than itself, or a RECOVERED partition asked to go back to RECOVERING (INVALID_REQUEST);
      a member not registered, shutting down, fenced or of another broker epoch
      (INELIGIBLE_REPLICA). A refused partition writes nothing.
    * An accepted change that moves leadership (an ISR that completes a reassignment removing
      the leader, or a leader that may no longer lead) is written and answered
      NEW_LEADER_ELECTED. An ISR that holds every target replica of a reassignment completes
      it (:mod:`rackwise.controller.reassignment`).

Algorithm
    For each topic, then each partition: validate as above; build the change with the target
    ISR and leader recovery state asked for, the topic's election and effective minimum ISR;
    append the record if there is one and answer with the partition as merged with it
    (leader, leader epoch, ISR, recovery state, partition epoch: the partition epoch is one
    more when a record was written).

Worked example
    Replicas [1, 2, 3], ISR [1], leader 1 at leader epoch 2, partition epoch 5; broker 2 and 3
    unfenced. Broker 1 asks for ISR [1, 2, 3] at epochs (2, 5): ``PartitionChangeRecord(isr=[1,
    2, 3])``, answered ``(error 0, leader 1, leader epoch 2, ISR [1, 2, 3], partition epoch
    6)``. The same request again is now at an old partition epoch: INVALID_UPDATE_VERSION.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from rackwise.common.error_codes import (
    FENCED_LEADER_EPOCH,
    INELIGIBLE_REPLICA,
    INVALID_REQUEST,
    INVALID_UPDATE_VERSION,
    NEW_LEADER_ELECTED,
    NONE,
    NOT_CONTROLLER,
    UNKNOWN_TOPIC_ID,
    UNKNOWN_TOPIC_OR_PARTITION,
)
from rackwise.controller.brokers import leader_acceptor
from rackwise.controller.partition_change import Election
from rackwise.controller.reassignment import build_change
from rackwise.image import MetadataImage, PartitionRegistration
from rackwise.records.constants import (
    LEADER_RECOVERED,
    LEADER_RECOVERING,
    NO_LEADER,
    NO_LEADER_CHANGE,
)

NO_BROKER_EPOCH: Final = -1
"""An ISR member's broker epoch when the request does not say it (version 2): not checked."""
NO_EPOCH: Final = -1
"""A refused partition's leader epoch and partition epoch in the answer."""

TopicSettings = Callable[[MetadataImage, uuid.UUID], tuple[Election, int]]
"""A topic's election and effective minimum ISR (``ReplicationControl._topic_settings``)."""


@dataclass(frozen=True, slots=True)
class IsrMember:
    """One member of the ISR a leader asks for: the broker and the broker epoch the leader
    saw it at (:data:`NO_BROKER_EPOCH`: not checked)."""

    broker_id: int
    broker_epoch: int = NO_BROKER_EPOCH


@dataclass(frozen=True, slots=True)
class AlterPartitionData:
    """One partition of an AlterPartition: the epochs the leader last saw, the ISR it wants
    and its leader recovery state (0 RECOVERED, 1 RECOVERING)."""

    partition_index: int
    leader_epoch: int
    partition_epoch: int
    new_isr: tuple[IsrMember, ...]
    leader_recovery_state: int = LEADER_RECOVERED


@dataclass(frozen=True, slots=True)
class AlterPartitionTopic:
    topic_id: uuid.UUID
    partitions: tuple[AlterPartitionData, ...]


@dataclass(frozen=True, slots=True)
class AlterPartitionRequest:
    """Kafka's ``AlterPartitionRequestData`` from version 2: who asks (id and broker epoch)
    and the partitions it leads whose ISR it wants changed."""

    broker_id: int
    broker_epoch: int
    topics: tuple[AlterPartitionTopic, ...]


@dataclass(frozen=True, slots=True)
class AlterPartitionResult:
    """One partition's answer: its error code and, when it is NONE, the partition's state
    after the change."""

    partition_index: int
    error_code: int = NONE
    leader_id: int = NO_LEADER
    leader_epoch: int = NO_EPOCH
    isr: tuple[int, ...] = ()
    leader_recovery_state: int = LEADER_RECOVERED
    partition_epoch: int = NO_EPOCH


@dataclass(frozen=True, slots=True)
class AlterPartitionTopicResult:
    topic_id: uuid.UUID
    partitions: tuple[AlterPartitionResult, ...]


def ineligible_reason(image: MetadataImage, member: IsrMember) -> str | None:
    """Why ``member`` may not join an ISR (Kafka's ``ineligibleReplicasForIsr``), or None."""
    registration = image.brokers.get(member.broker_id)
    if registration is None:
        return "not registered"
    if registration.in_controlled_shutdown:
        return "shutting down"
    if registration.fenced:
        return "fenced"
    if member.broker_epoch not in (NO_BROKER_EPOCH, registration.broker_epoch):
        return (
            f"broker epoch mismatch: requested={member.broker_epoch} VS "
            f"expected={registration.broker_epoch}"
        )
    return None


def validate_alter_partition(
    image: MetadataImage,
    broker_id: int,
    partition: PartitionRegistration | None,
    data: AlterPartitionData,
) -> int:
    """The error code of one partition of an AlterPartition from ``broker_id`` (NONE if it
    may proceed), checked in Kafka's order (module docstring)."""
    if partition is None:
        return UNKNOWN_TOPIC_OR_PARTITION
    if data.leader_epoch > partition.leader_epoch:
        return NOT_CONTROLLER
    if data.partition_epoch > partition.partition_epoch:
        return NOT_CONTROLLER
    if data.leader_epoch < partition.leader_epoch:
        return FENCED_LEADER_EPOCH
    if broker_id != partition.leader:
        return INVALID_REQUEST
    if data.partition_epoch < partition.partition_epoch:
        return INVALID_UPDATE_VERSION
    new_isr = [m.broker_id for m in data.new_isr]
    if len(set(new_isr)) != len(new_isr) or not set(new_isr) <= set(partition.replicas):
        return INVALID_REQUEST
    if partition.leader not in new_isr:
        return INVALID_REQUEST
    if data.leader_recovery_state not in (LEADER_RECOVERED, LEADER_RECOVERING):
        return INVALID_REQUEST
    if data.leader_recovery_state == LEADER_RECOVERING and len(new_isr) > 1:
        return INVALID_REQUEST
    if (
        partition.leader_recovery_state == LEADER_RECOVERED
        and data.leader_recovery_state == LEADER_RECOVERING
    ):
        return INVALID_REQUEST
    if any(ineligible_reason(image, m) is not None for m in data.new_isr):
        return INELIGIBLE_REPLICA
    return NONE


def _answer(partition_index: int, partition: PartitionRegistration) -> AlterPartitionResult:
    return AlterPartitionResult(
        partition_index=partition_index,
        leader_id=partition.leader,
        leader_epoch=partition.leader_epoch,
        isr=tuple(partition.isr),
        leader_recovery_state=partition.leader_recovery_state,
        partition_epoch=partition.partition_epoch,
    )


def _merged(partition: PartitionRegistration, record: Any) -> PartitionRegistration:
    """``partition`` as replaying ``record`` leaves it (the fields an answer carries)."""
    changes: dict[str, Any] = {"partition_epoch": partition.partition_epoch + 1}
    if record.isr is not None:
        changes["isr"] = tuple(record.isr)
    if record.leader != NO_LEADER_CHANGE:
        changes["leader"] = record.leader
        changes["leader_epoch"] = partition.leader_epoch + 1
    if record.leader_recovery_state in (LEADER_RECOVERED, LEADER_RECOVERING):
        changes["leader_recovery_state"] = record.leader_recovery_state
    return dataclasses.replace(partition, **changes)


def alter_partition(
    image: MetadataImage,
    request: AlterPartitionRequest,
    records: list[Any],
    *,
    topic_settings: TopicSettings,
    elr_enabled: bool,
) -> list[AlterPartitionTopicResult]:
    """Validate and apply each partition of ``request`` (module docstring); the records of
    the accepted changes are appended to ``records``. The caller has checked the
    requester's broker epoch."""
    results: list[AlterPartitionTopicResult] = []
    for topic_data in request.topics:
        topic = image.topics_by_id.get(topic_data.topic_id)
        if topic is None:
            refused = tuple(
                AlterPartitionResult(p.partition_index, UNKNOWN_TOPIC_ID)
                for p in topic_data.partitions
            )
            results.append(AlterPartitionTopicResult(topic_data.topic_id, refused))
            continue
        answers: list[AlterPartitionResult] = []
        for data in topic_data.partitions:
            partition = topic.partitions.get(data.partition_index)
            error = validate_alter_partition(image, request.broker_id, partition, data)
            if error != NONE or partition is None:
                answers.append(AlterPartitionResult(data.partition_index, error))
                continue
            election, min_isr = topic_settings(image, topic.topic_id)
            record = build_change(  # completes a reassignment the new ISR allows
                partition,
                topic.topic_id,
                leader_acceptor(image, partition),
                target_isr=[m.broker_id for m in data.new_isr],
                election=election,
                elr_enabled=elr_enabled,
                min_isr=min_isr,
                target_leader_recovery_state=data.leader_recovery_state,
            )
            if record is not None:
                records.append(record)
                partition = _merged(partition, record)
                if record.leader not in (request.broker_id, NO_LEADER_CHANGE):
                    answers.append(AlterPartitionResult(data.partition_index, NEW_LEADER_ELECTED))
                    continue
            answers.append(_answer(data.partition_index, partition))
        results.append(AlterPartitionTopicResult(topic.topic_id, tuple(answers)))
    return results
