"""How a consumer group's target assignment is computed (Kafka's ``TargetAssignmentBuilder``):
which topics each member subscribes to (by name, or by a regular expression matched against
every topic name, as Kafka matches a whole name), the subscribed topics' metadata the group
stores (``ConsumerGroupPartitionMetadata``, whose change bumps the group epoch: partitions
added, or the racks of a partition's replicas changed, KAFKA-17747), the leaders' racks a
leader-rack-aware assignor read, and the records of a new target.

Constraints
    * Pure; the assignor is :mod:`rackwise.assignors.server_registry`'s.
    * Members are handed to the assignor in the order of Java's ``HashMap`` of their ids and
      their current targets in Java's ``HashSet`` orders, as Kafka's builder hands them, so
      Kafka's ``uniform`` gives Kafka's answer.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from rackwise.assignors.server import PartitionAssignorException, ServerGroupSpec, ServerMember
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
from rackwise.groups.consumer_types import GroupError, TopicsView, compiled_regex

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
    out = []
    for name in sorted(topics):
        topic = view.topics[name]
        racks = tuple(tuple(sorted(p.racks)) for p in topic.partitions)
        if not any(racks):
            racks = ()
        out.append(TopicMetadata(topic.topic_id, name, len(topic.partitions), racks))
    return tuple(out)


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


def assignor_spec(group: ConsumerGroup, view: TopicsView) -> ServerGroupSpec:
    names = {t.topic_id: t.name for t in view.topics.values()}
    order = java_hashmap_order(list(group.members), java_string_hash, exact=False)
    members = []
    for member_id in order:
        m = group.members[member_id]
        members.append(
            ServerMember(
                member_id,
                member_topics(m, view),
                instance_id=m.instance_id,
                rack=m.rack_id,
                assigned=_java_ordered(group.target(member_id), names),
            )
        )
    subscribed = {t for m in members for t in m.topics}
    return ServerGroupSpec(
        tuple(members),
        {t: view.topics[t].partitions for t in subscribed},
        {t: view.topics[t].topic_id for t in subscribed},
    )


def new_target(group: ConsumerGroup, view: TopicsView, assignor: str, epoch: int) -> list[Record]:
    """The records of the target assignment for ``epoch``: one for each member whose target
    changed, then the target's epoch."""
    spec = assignor_spec(group, view)
    try:
        answer = create_server_assignor(assignor).assign(spec)
    except PartitionAssignorException as e:
        raise GroupError(
            UNKNOWN_SERVER_ERROR,
            f"Failed to compute a new target assignment for epoch {epoch}: {e}.",
        ) from None
    records: list[Record] = []
    for member in spec.members:
        target = {
            view.topics[t].topic_id: ps for t, ps in answer.get(member.member_id, {}).items() if ps
        }
        if target != dict(group.target(member.member_id)):
            records.append(TargetMember(group.group_id, member.member_id, target))
    records.append(TargetMetadata(group.group_id, epoch))
    return records
