"""ElectLeaders (api 43, KIP-460) in the controller: a preferred or an unclean election for
named partitions, or for every partition (Kafka's ``ReplicationControlManager.electLeaders``),
as ``kafka-leader-election.sh`` asks for it.

Goals
    * PREFERRED: a partition not led by its first replica (with a ``leaders.preference``, by
      the first in-sync replica of its most preferred domain) gets that replica as leader when
      it may lead (in the ISR, its broker unfenced and not shutting down, its directory online).
      UNCLEAN: a partition without a leader gets one, from the ISR if it can, else from any
      replica that may lead (the data the ISR had past that replica's log is lost, as
      ``unclean.leader.election.enable`` would lose it).
    * Per partition answers as Kafka's: ELECTION_NOT_NEEDED (84) when the partition already
      has what the election would give it; PREFERRED_LEADER_NOT_AVAILABLE (80) or
      ELIGIBLE_LEADERS_NOT_AVAILABLE (83) when no record could be written;
      UNKNOWN_TOPIC_OR_PARTITION (3) for a topic or partition the image lacks. With no
      partitions named, every partition is tried and those that needed nothing are left out.

Constraints
    Records only: the caller commits them (one user write, at most
    ``MAX_RECORDS_PER_USER_OP`` records).

Worked example
    t-0 has replicas [2, 1, 3], ISR [1, 2, 3] and leader 1 (broker 2 came back after a
    restart). A PREFERRED election for t-0 writes a PartitionChangeRecord with leader 2 and
    answers t-0 with NONE; asked again, it answers ELECTION_NOT_NEEDED.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import Any, Final

from rackwise.common.error_codes import (
    ELECTION_NOT_NEEDED,
    ELIGIBLE_LEADERS_NOT_AVAILABLE,
    NONE,
    PREFERRED_LEADER_NOT_AVAILABLE,
    UNKNOWN_TOPIC_OR_PARTITION,
)
from rackwise.common.errors import InvalidRequestException
from rackwise.controller.brokers import leader_acceptor
from rackwise.controller.partition_change import Election
from rackwise.controller.reassignment import build_change
from rackwise.controller.replication import ReplicationControl
from rackwise.controller.state import ControllerState
from rackwise.records.constants import NO_LEADER

MESSAGES: Final = {
    PREFERRED_LEADER_NOT_AVAILABLE: "The preferred leader was not available.",
    ELIGIBLE_LEADERS_NOT_AVAILABLE: "Eligible topic partition leaders are not available.",
    ELECTION_NOT_NEEDED: "Leader election not needed for topic partition.",
}
"""Kafka's own messages for these codes (``Errors``), which it sends with them."""

PartitionResult = tuple[int, int, str | None]
"""(partition id, error code, error message)."""


class ElectionType(enum.IntEnum):
    """The request's ``ElectionType`` (Kafka's ``org.apache.kafka.common.ElectionType``)."""

    PREFERRED = 0
    UNCLEAN = 1

    @classmethod
    def of(cls, value: int) -> ElectionType:
        try:
            return cls(value)
        except ValueError:
            raise InvalidRequestException(f"Unknown election type {value}") from None


ELECTIONS: Final = {
    ElectionType.PREFERRED: Election.PREFERRED,
    ElectionType.UNCLEAN: Election.UNCLEAN,
}
"""The partition change builder's election for each type."""


def elect_leaders(
    replication: ReplicationControl,
    state: ControllerState,
    election_type: ElectionType,
    partitions: Mapping[str, Sequence[int]] | None,
    records: list[Any],
) -> list[tuple[str, list[PartitionResult]]]:
    """Each topic's results, in the request's order (by name for every partition), and the
    records of the elections (module docstring)."""
    image = state.image
    results: list[tuple[str, list[PartitionResult]]] = []
    if partitions is None:
        for name in sorted(image.topics_by_name):
            topic = image.topics_by_name[name]
            tried = [
                _elect(replication, state, name, p, election_type, records)
                for p in sorted(topic.partitions)
            ]
            results.append((name, [r for r in tried if r[1] != ELECTION_NOT_NEEDED]))
        return results
    for name, ids in partitions.items():
        results.append(
            (name, [_elect(replication, state, name, p, election_type, records) for p in ids])
        )
    return results


def _elect(
    replication: ReplicationControl,
    state: ControllerState,
    name: str,
    partition_id: int,
    election_type: ElectionType,
    records: list[Any],
) -> PartitionResult:
    image = state.image
    topic = image.topic(name)
    if topic is None:
        return partition_id, UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {name}"
    partition = topic.partitions.get(partition_id)
    if partition is None:
        message = f"No such partition as {name}-{partition_id}"
        return partition_id, UNKNOWN_TOPIC_OR_PARTITION, message
    preferred = (
        replication.preferred_leader(image, topic.topic_id)(partition)
        if partition.replicas
        else NO_LEADER
    )
    if (election_type is ElectionType.PREFERRED and partition.leader == preferred) or (
        election_type is ElectionType.UNCLEAN and partition.leader != NO_LEADER
    ):
        return partition_id, ELECTION_NOT_NEEDED, MESSAGES[ELECTION_NOT_NEEDED]
    record = build_change(
        partition,
        topic.topic_id,
        leader_acceptor(image, partition),
        election=ELECTIONS[election_type],
        elr_enabled=replication.config.elr_enabled,
        min_isr=replication.min_isr(image, topic.topic_id),
        leader_order=replication.leader_order(image, topic.topic_id),
    )
    if record is None:
        code = (
            PREFERRED_LEADER_NOT_AVAILABLE
            if election_type is ElectionType.PREFERRED
            else ELIGIBLE_LEADERS_NOT_AVAILABLE
        )
        return partition_id, code, MESSAGES[code]
    records.append(record)
    return partition_id, NONE, None
