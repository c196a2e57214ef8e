"""How a consumer group's target assignment is computed (Kafka's ``TargetAssignmentBuilder``):
which topics each member subscribes to (by name, or by a regular expression matched against
every topic name, as Kafka matches a whole name), the subscribed topics' metadata the group
stores (``ConsumerGroupPartitionMetadata``, whose change bumps the group epoch: partitions
added, or the racks of a partition's replicas changed, KAFKA-17747), the leaders' racks a
leader-rack-aware assignor read, and the records of a new target.

A target is computed in three steps, so that the middle one can run away from the
coordinator's loop: :func:`assignment_job` takes the inputs from the group (the spec in Java's
orders), :func:`compute` runs the assignor on them alone, and :func:`target_records` turns its
answer into the records that differ from the group's current target.

Constraints
    * Pure; the assignor is :mod:`rackwise.assignors.server_registry`'s. A job holds frozen
      values and plain mappings only, so it can be handed to a thread while the group moves on.
    * Members are handed to the assignor in the order of Java's ``HashMap`` of their ids and
      their current targets in Java's ``HashSet`` orders, as Kafka's builder hands them, so
      Kafka's ``uniform`` gives Kafka's answer.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from rackwise.assignors.server import (
    PartitionAssignorException,
    ServerAssignment,
    ServerGroupSpec,
    ServerMember,
)
from rackwise.assignors.server_registry import create_server_assignor
from rackwise.assignors.server_uniform import java_uuid_hash
from rackwise.common.error_codes import UNKNOWN_SERVER_ERROR
from rackwise.common.java import java_hashmap_order, java_string_hash
from rackwise.groups.consumer_group import ConsumerGroup
from rackwise.groups.consumer_member import ConsumerMember
from rackwise.groups.consumer_records import (
    Partitions,
    Record,
    TargetMember,
    TargetMetadata,
    TopicMetadata,
)
from rackwise.groups.consumer_types import GroupError, TopicsView, TopicView, compiled_regex

LeaderRacks = tuple[tuple[str, tuple[str | None, ...]], ...]


def member_topics(member: ConsumerMember, view: TopicsView) -> frozenset[str]:
    """The topics ``member`` subscribes to that exist, by name and by regex."""
    topics = {t for t in member.topic_names if t in view.topics}
    if member.topic_regex is not None:
        pattern = compiled_regex(member.topic_regex)
        topics.update(t for t in view.topics if pattern.fullmatch(t))
    return frozenset(topics)


def subscribed_topics(members: Iterable[ConsumerMember], view: TopicsView) -> set[str]:
    out: set[str] = set()
    for m in members:
        out |= member_topics(m, view)
    return out


def subscription_metadata(topics: Iterable[str], view: TopicsView) -> tuple[TopicMetadata, ...]:
    """``ConsumerGroupPartitionMetadata``'s topics: id, name, partition count and each
    partition's replica racks (sorted; none stored when no replica has a rack)."""
    return tuple(topic_metadata(view.topics[name]) for name in sorted(topics))


_METADATA: dict[uuid.UUID, tuple[TopicView, TopicMetadata]] = {}
"""Topic id -> the last view of the topic asked for and its metadata."""


def topic_metadata(topic: TopicView) -> TopicMetadata:
    """One topic's metadata, made once for each :class:`TopicView` (every heartbeat that
    changes a group's members asks again, and a large topic has thousands of partitions)."""
    found = _METADATA.get(topic.topic_id)
    if found is not None and found[0] is topic:
        return found[1]
    racks = tuple(tuple(sorted(p.racks)) for p in topic.partitions)
    if not any(racks):
        racks = ()
    made = TopicMetadata(topic.topic_id, topic.name, len(topic.partitions), racks)
    if len(_METADATA) > 10_000:
        _METADATA.clear()
    _METADATA[topic.topic_id] = (topic, made)
    return made


def leader_racks(topics: Iterable[str], view: TopicsView) -> LeaderRacks:
    """Each subscribed topic's partitions' leader racks, for the leader-rack-aware assignors."""
    return tuple(
        (t, tuple(p.leader_rack for p in view.topics[t].partitions))
        for t in sorted(topics)
        if t in view.topics
    )


def _java_ordered(
    partitions: Partitions, names: dict[uuid.UUID, str]
) -> dict[str, tuple[int, ...]]:
    ordered: dict[str, tuple[int, ...]] = {}
    for topic_id in java_hashmap_order(list(partitions), java_uuid_hash, exact=False):
        if topic_id in names:
            ps = sorted(partitions[topic_id])
            ordered[names[topic_id]] = tuple(java_hashmap_order(ps, int, exact=False))
    return ordered


def assignor_spec(
    members: Mapping[str, ConsumerMember], targets: Mapping[str, Partitions], view: TopicsView
) -> ServerGroupSpec:
    names = {t.topic_id: t.name for t in view.topics.values()}
    order = java_hashmap_order(list(members), java_string_hash, exact=False)
    described = []
    for member_id in order:
        m = members[member_id]
        described.append(
            ServerMember(
                member_id,
                member_topics(m, view),
                instance_id=m.instance_id,
                rack=m.rack_id,
                assigned=_java_ordered(targets.get(member_id, {}), names),
            )
        )
    subscribed = {t for m in described for t in m.topics}
    return ServerGroupSpec(
        tuple(described),
        {t: view.topics[t].partitions for t in subscribed},
        {t: view.topics[t].topic_id for t in subscribed},
    )


@dataclass(frozen=True, slots=True)
class AssignmentJob:
    """The inputs of one target computation: the group and the group epoch it is for, the
    assignor, and copies of the members and their current targets (whose values are frozen)
    with the topics as they were, so that the group can move on meanwhile."""

    group_id: str
    epoch: int
    assignor: str
    members: Mapping[str, ConsumerMember]
    targets: Mapping[str, Partitions]
    view: TopicsView
    partitions: int
    """How many partitions the members subscribe to (what the computation's cost grows with)."""


@dataclass(frozen=True, slots=True)
class AssignmentResult:
    """What :func:`compute` made of a job: the spec it gave the assignor, the leaders' racks
    it read, and the assignment or the assignor's error."""

    job: AssignmentJob
    spec: ServerGroupSpec
    leaders: LeaderRacks
    assignment: ServerAssignment | None
    error: str | None = None


def assignment_job(
    group: ConsumerGroup, view: TopicsView, assignor: str, epoch: int
) -> AssignmentJob:
    return AssignmentJob(
        group.group_id,
        epoch,
        assignor,
        dict(group.members),
        dict(group.targets),
        view,
        sum(t.num_partitions for t in group.topics),
    )


def compute(job: AssignmentJob) -> AssignmentResult:
    """Build the spec and run the job's assignor on it (reads nothing but the job)."""
    spec = assignor_spec(job.members, job.targets, job.view)
    leaders = leader_racks(spec.partitions, job.view)
    try:
        assignment = create_server_assignor(job.assignor).assign(spec)
    except PartitionAssignorException as e:
        return AssignmentResult(job, spec, leaders, None, str(e))
    return AssignmentResult(job, spec, leaders, assignment)


def failed(job: AssignmentJob, error: str) -> AssignmentResult:
    """The result of a job whose computation broke with ``error``."""
    return AssignmentResult(job, ServerGroupSpec((), {}, {}), (), None, error)


def target_records(group: ConsumerGroup, result: AssignmentResult) -> list[Record]:
    """The records of ``result``'s target: one for each member whose target changed, then the
    target's epoch (a GroupError when the assignor failed)."""
    job = result.job
    if result.assignment is None:
        raise GroupError(
            UNKNOWN_SERVER_ERROR,
            f"Failed to compute a new target assignment for epoch {job.epoch}: {result.error}.",
        )
    records: list[Record] = []
    ids = result.spec.topic_ids
    for member in result.spec.members:
        answer = result.assignment.get(member.member_id, {})
        target = {ids[t]: ps for t, ps in answer.items() if ps}
        if target != dict(group.target(member.member_id)):
            records.append(TargetMember(group.group_id, member.member_id, target))
    records.append(TargetMetadata(group.group_id, job.epoch))
    return records


def new_target(group: ConsumerGroup, view: TopicsView, assignor: str, epoch: int) -> list[Record]:
    """The records of the target assignment for ``epoch``, computed here and now."""
    return target_records(group, compute(assignment_job(group, view, assignor, epoch)))
