"""The values a consumer partition assignor works on: immutable, and the same for every assignor.

A group is what the group leader knows when it assigns: the partitions of every subscribed topic
with the racks of their replicas (the leader's first), and each member's subscription (topics,
rack, owned partitions, generation). An assignor maps it to the partitions of each member.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Final

from rackwise.common import TopicPartition

DEFAULT_GENERATION: Final = -1
"""Kafka's ``DEFAULT_GENERATION``: the member sent no generation (a version-0 subscription)."""


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    """One partition as the group leader sees it in the cluster metadata.

    ``replica_racks`` holds the rack of each replica's broker in replica order, ``None`` for a
    broker without a rack. When ``has_leader`` is true the first entry is the leader's rack; a
    partition without a leader (Kafka's leader -1) has ``has_leader`` false and no leader rack.
    """

    replica_racks: tuple[str | None, ...]
    has_leader: bool = True

    @property
    def leader_rack(self) -> str | None:
        """The rack of the leader's broker; ``None`` without a leader or without a rack."""
        if not self.has_leader or not self.replica_racks:
            return None
        return self.replica_racks[0]

    @property
    def racks(self) -> frozenset[str]:
        """The distinct racks that hold a replica (brokers without a rack do not count)."""
        return frozenset(r for r in self.replica_racks if r is not None)


@dataclass(frozen=True, slots=True)
class Member:
    """A member's subscription (Kafka's ``ConsumerPartitionAssignor.Subscription``)."""

    member_id: str
    topics: tuple[str, ...]
    owned: tuple[TopicPartition, ...] = ()
    rack: str | None = None
    group_instance_id: str | None = None
    generation: int = DEFAULT_GENERATION


@dataclass(frozen=True, slots=True)
class GroupSpec:
    """Everything an assignor is given for one rebalance.

    ``partitions`` maps each topic that exists to its partitions, indexed by partition id; a
    topic a member subscribes to that is missing here does not exist (yet). ``members`` keeps the
    order in which the coordinator listed them (Kafka's assignors sort where they need an order).
    ``prefer_rack_aware_logic`` is Kafka's internal switch that lets rack awareness apply when
    some racks match; rack awareness still needs racks on both sides.
    """

    partitions: Mapping[str, Sequence[PartitionInfo]]
    members: tuple[Member, ...]
    prefer_rack_aware_logic: bool = True
    options: Mapping[str, object] = field(default_factory=dict)

    def partition_count(self, topic: str) -> int:
        """The number of partitions of ``topic``, 0 when it does not exist."""
        return len(self.partitions.get(topic, ()))


Assignment = dict[str, list[TopicPartition]]
"""Member id -> the partitions it is assigned, in the assignor's order."""


class PartitionAssignor(ABC):
    """A consumer partition assignor (Kafka's ``ConsumerPartitionAssignor``), pure.

    ``assign`` must return every member of the group (an empty list for one with nothing) and
    must never give a partition to two members.
    """

    name: ClassVar[str]

    @abstractmethod
    def assign(self, group: GroupSpec) -> Assignment:
        """Assign the partitions of ``group``'s subscribed topics to its members."""
