"""rackwise's consumer partition assignors as kafka-python (3.x) assignment strategies.

Each class is kafka-python's ``AbstractPartitionAssignor`` around one of rackwise's assignors,
under the name Kafka's Java client uses for it, so a group may mix Python and Java members of
the same strategy. An instance knows its consumer's rack and sends it, with the partitions it
owns and its generation, in a version-3 ``ConsumerProtocolSubscription`` (KIP-881's
``RackId``). On the group leader, ``assign`` reads each partition's leader and replicas and the
racks of their brokers from kafka-python's ``ClusterMetadata`` and runs the assignor.

Usage: kafka-python takes instances as well as classes in ``partition_assignment_strategy``
(a class it instantiates without arguments, so it has no rack), so give it an instance per
consumer::

    from kafka import KafkaConsumer
    from rackwise.client.kafka_python import LeaderRackAwareRangeAssignor

    rack = "/dc1/r2"
    consumer = KafkaConsumer(
        "orders",
        group_id="billing",
        client_rack=rack,  # for the brokers (KIP-392); the assignor needs it too
        partition_assignment_strategy=[LeaderRackAwareRangeAssignor(rack=rack)],
    )

An instance remembers its last assignment and generation (from ``on_assignment``) to report
them at the next join, so do not share one instance between consumers.

Rebalance protocols: ``range``, ``sticky`` and ``leader-rack-aware-range`` are eager;
``cooperative-sticky``, ``leader-rack-aware-cooperative-sticky`` and ``rack-local-optimal`` are
cooperative (KIP-429), and kafka-python refuses to mix the two kinds in one consumer. Under the
cooperative protocol the leader never gives a member a partition that another member still
claims: the partition stays unassigned for one round, its owner revokes it and rejoins, and the
next assignment hands it over (Kafka's ``validateCooperativeAssignment`` rule).

Stickiness travels in the subscription's ``OwnedPartitions`` and ``GenerationId`` for every
strategy, ``sticky`` included (Kafka's eager ``StickyAssignor`` keeps it in its user data
instead; a mixed group stays valid, those members just count as owning nothing).

Replica lists: kafka-python 3.0 exposes a partition's leader (``leader_for_partition``) and
brokers with racks (``brokers()``) but its replica list only through ``is_replica_node``. The
leader reads the replica lists from the metadata it stores per partition when that is there
(``ClusterMetadata._partitions``, a ``MetadataResponsePartition`` with ``replica_nodes``), and
otherwise asks ``is_replica_node`` for every broker, which gives the same racks.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

from kafka.coordinator.assignors.abstract import AbstractPartitionAssignor, RebalanceProtocol
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)
from kafka.structs import TopicPartition as KafkaTopicPartition

from rackwise.assignors import create_assignor
from rackwise.assignors.model import (
    DEFAULT_GENERATION,
    Assignment,
    GroupSpec,
    Member,
    PartitionAssignor,
    PartitionInfo,
)
from rackwise.common import TopicPartition

SUBSCRIPTION_VERSION = 3
"""ConsumerProtocolSubscription v3: topics, user data, owned partitions, generation, rack."""

ASSIGNMENT_VERSION = 3
"""ConsumerProtocolAssignment version written (every version has the same fields)."""

NO_LEADER = -1
"""kafka-python's leader id for a partition without a leader."""


class RackwiseAssignor(AbstractPartitionAssignor):  # type: ignore[misc]
    """A rackwise assignor as a kafka-python assignment strategy (see the module)."""

    name: ClassVar[str]
    protocol: ClassVar[RebalanceProtocol]
    rack: str | None = None

    def __init__(self, rack: str | None = None) -> None:
        if rack is not None:
            self.rack = rack
        self.owned: tuple[TopicPartition, ...] = ()
        self.generation: int = DEFAULT_GENERATION
        self._assignor: PartitionAssignor = create_assignor(self.name)

    def supported_protocols(self) -> list[RebalanceProtocol]:
        return [self.protocol]

    def metadata(self, topics: Iterable[str]) -> ConsumerProtocolSubscription:
        """This member's subscription: topics, owned partitions, generation and rack (v3)."""
        return subscription(topics, self.owned, self.generation, self.rack)

    def on_assignment(self, assignment: ConsumerProtocolAssignment, generation: int) -> None:
        self.owned = tuple(TopicPartition(tp.topic, tp.partition) for tp in assignment.partitions())
        self.generation = generation

    def assign(self, cluster: Any, members: Sequence[Any]) -> dict[str, ConsumerProtocolAssignment]:
        """The group leader's assignment. ``members`` are kafka-python's
        ``JoinGroupResponseMember`` with ``metadata`` decoded to a subscription."""
        group = group_from_cluster(cluster, members)
        assignment = self._assignor.assign(group)
        if self.protocol == RebalanceProtocol.COOPERATIVE:
            assignment = without_claimed_by_others(assignment, group.members)
        return {
            member.member_id: protocol_assignment(assignment.get(member.member_id, []))
            for member in group.members
        }


class RangeAssignor(RackwiseAssignor):
    """Kafka's ``RangeAssignor`` with KIP-881 rack awareness (eager)."""

    name = "range"
    protocol = RebalanceProtocol.EAGER


class StickyAssignor(RackwiseAssignor):
    """Kafka's ``StickyAssignor`` with KIP-881 rack awareness (eager)."""

    name = "sticky"
    protocol = RebalanceProtocol.EAGER


class CooperativeStickyAssignor(RackwiseAssignor):
    """Kafka's ``CooperativeStickyAssignor`` with KIP-881 rack awareness (cooperative)."""

    name = "cooperative-sticky"
    protocol = RebalanceProtocol.COOPERATIVE


class LeaderRackAwareRangeAssignor(RackwiseAssignor):
    """The range assignor balancing on the leader's rack only (eager)."""

    name = "leader-rack-aware-range"
    protocol = RebalanceProtocol.EAGER


class LeaderRackAwareCooperativeStickyAssignor(RackwiseAssignor):
    """The cooperative sticky assignor balancing on the leader's rack only (cooperative)."""

    name = "leader-rack-aware-cooperative-sticky"
    protocol = RebalanceProtocol.COOPERATIVE


class RackLocalOptimalAssignor(RackwiseAssignor):
    """Balanced, then provably the most partitions in their leader's rack (cooperative)."""

    name = "rack-local-optimal"
    protocol = RebalanceProtocol.COOPERATIVE


ASSIGNOR_CLASSES: tuple[type[RackwiseAssignor], ...] = (
    RangeAssignor,
    StickyAssignor,
    CooperativeStickyAssignor,
    LeaderRackAwareRangeAssignor,
    LeaderRackAwareCooperativeStickyAssignor,
    RackLocalOptimalAssignor,
)


def subscription(
    topics: Iterable[str],
    owned: Iterable[TopicPartition],
    generation: int,
    rack: str | None,
) -> ConsumerProtocolSubscription:
    """A version-3 subscription, topics sorted and owned partitions grouped by topic."""
    by_topic: dict[str, list[int]] = defaultdict(list)
    for tp in sorted(owned):
        by_topic[tp.topic].append(tp.partition)
    owned_field = [
        ConsumerProtocolSubscription.TopicPartition(
            version=SUBSCRIPTION_VERSION, topic=topic, partitions=partitions
        )
        for topic, partitions in by_topic.items()
    ]
    return ConsumerProtocolSubscription(
        version=SUBSCRIPTION_VERSION,
        topics=sorted(set(topics)),
        user_data=None,
        owned_partitions=owned_field,
        generation_id=generation,
        rack_id=rack or None,
    )


def protocol_assignment(partitions: Iterable[TopicPartition]) -> ConsumerProtocolAssignment:
    """A member's assignment for the wire: topics sorted, partitions in the assignor's order."""
    by_topic: dict[str, list[int]] = defaultdict(list)
    for tp in partitions:
        by_topic[tp.topic].append(tp.partition)
    return ConsumerProtocolAssignment(
        version=ASSIGNMENT_VERSION,
        assigned_partitions=[
            ConsumerProtocolAssignment.TopicPartition(
                version=ASSIGNMENT_VERSION, topic=topic, partitions=by_topic[topic]
            )
            for topic in sorted(by_topic)
        ],
        user_data=None,
    )


def member_from_subscription(
    member_id: str, group_instance_id: str | None, sub: ConsumerProtocolSubscription
) -> Member:
    """A group member as rackwise's assignors see it. Fields a subscription's version lacks take
    Kafka's defaults: no owned partitions, ``DEFAULT_GENERATION``, no rack."""
    version = sub.version if sub.version is not None else SUBSCRIPTION_VERSION
    owned = (
        tuple(
            TopicPartition(tp.topic, p) for tp in sub.owned_partitions or () for p in tp.partitions
        )
        if version >= 1
        else ()
    )
    generation = sub.generation_id if version >= 2 and sub.generation_id is not None else -1
    rack = sub.rack_id if version >= 3 else None
    return Member(
        member_id=member_id,
        topics=tuple(sub.topics or ()),
        owned=owned,
        rack=rack or None,
        group_instance_id=group_instance_id,
        generation=generation,
    )


def group_from_cluster(cluster: Any, members: Sequence[Any]) -> GroupSpec:
    """The group as the leader sees it: every subscribed topic kafka-python has metadata for,
    each partition with its leader's rack first and then its other replicas' racks."""
    group_members = tuple(
        member_from_subscription(m.member_id, m.group_instance_id, _decoded(m.metadata))
        for m in members
    )
    topics = sorted({t for m in group_members for t in m.topics})
    racks = {b.node_id: b.rack or None for b in cluster.brokers()}
    partitions: dict[str, list[PartitionInfo]] = {}
    for topic in topics:
        ids = cluster.partitions_for_topic(topic)
        if not ids:
            continue
        partitions[topic] = [
            _partition_info(cluster, racks, KafkaTopicPartition(topic, p))
            for p in range(max(ids) + 1)
        ]
    return GroupSpec(partitions=partitions, members=group_members, prefer_rack_aware_logic=False)


def without_claimed_by_others(assignment: Assignment, members: Sequence[Member]) -> Assignment:
    """``assignment`` less every partition that a member other than its new one still claims
    (the cooperative protocol moves a partition only once its owner has revoked it)."""
    claimed: dict[TopicPartition, set[str]] = defaultdict(set)
    for member in members:
        for tp in member.owned:
            claimed[tp].add(member.member_id)
    return {
        member_id: [tp for tp in parts if not claimed.get(tp, set()) - {member_id}]
        for member_id, parts in assignment.items()
    }


def _decoded(metadata: Any) -> ConsumerProtocolSubscription:
    if isinstance(metadata, bytes | bytearray | memoryview):
        return ConsumerProtocolSubscription.decode(bytes(metadata))
    return metadata


def _partition_info(
    cluster: Any, racks: Mapping[int, str | None], tp: KafkaTopicPartition
) -> PartitionInfo:
    leader = cluster.leader_for_partition(tp)
    replicas = _replica_nodes(cluster, tp)
    if leader is None or leader == NO_LEADER:
        return PartitionInfo(tuple(racks.get(r) for r in replicas), has_leader=False)
    others = [r for r in replicas if r != leader]
    return PartitionInfo(tuple(racks.get(r) for r in [leader, *others]))


def _replica_nodes(cluster: Any, tp: KafkaTopicPartition) -> list[int]:
    stored = getattr(cluster, "_partitions", None)
    if isinstance(stored, dict):
        data = stored.get(tp.topic, {}).get(tp.partition)
        if data is not None and hasattr(data, "replica_nodes"):
            return list(data.replica_nodes)
    nodes = sorted(b.node_id for b in cluster.brokers())
    return [n for n in nodes if cluster.is_replica_node(tp, n) is not None]
