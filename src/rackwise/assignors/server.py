"""Server-side assignors for KIP-848 consumer groups: what the group coordinator runs when a
group's target assignment must change, chosen by the members' ``group.remote.assignor``
among the broker's ``group.consumer.assignors``.

Names
    ``uniform`` and ``range`` are Kafka's (:mod:`rackwise.assignors.server_uniform`, and
    :class:`RangeServerAssignor` here). ``rack-aware-uniform`` balances as ``uniform`` does,
    then gives each partition to a member nearest to one of its replicas in the rack tree.
    ``leader-rack-aware-range``, ``leader-rack-aware-cooperative-sticky`` and
    ``rack-local-optimal`` are the client-side assignors of the same names
    (:mod:`rackwise.assignors`) run by the coordinator: one library, two callers, so a group's
    target equals what ``rackwise assign`` computes for the same members and partitions.

Constraints
    * Pure and deterministic: the same :class:`ServerGroupSpec` gives the same answer.
    * Every member is in the answer, and no partition goes to two members.
    * ``uses_leader_racks``: the assignor reads the leaders' racks, so the coordinator computes
      a new target when a subscribed partition's leader moves to another rack.

Worked example
    Members ``a`` and ``b`` subscribe to ``t`` (3 partitions); ``range`` gives ``a`` {0, 1} and
    ``b`` {2} (members sorted by instance id, then member id; the first takes the extra).
"""

from __future__ import annotations

import uuid
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from rackwise.assignors import create_assignor
from rackwise.assignors.model import GroupSpec, Member, PartitionAssignor, PartitionInfo
from rackwise.assignors.sticky import LeaderRackAwareCooperativeStickyPartitionAssignor
from rackwise.common import TopicPartition

ServerAssignment = dict[str, dict[str, frozenset[int]]]
"""Member id -> topic name -> partition ids."""


@dataclass(frozen=True, slots=True)
class ServerMember:
    """A member as the coordinator describes it to the assignor."""

    member_id: str
    topics: frozenset[str]
    instance_id: str | None = None
    rack: str | None = None
    assigned: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    """The member's current target assignment, in the order the coordinator iterates it."""


@dataclass(frozen=True, slots=True)
class ServerGroupSpec:
    """The members (in the coordinator's order) and every subscribed topic's partitions."""

    members: tuple[ServerMember, ...]
    partitions: Mapping[str, Sequence[PartitionInfo]]
    topic_ids: Mapping[str, uuid.UUID]

    @property
    def homogeneous(self) -> bool:
        return len({m.topics for m in self.members}) <= 1


class PartitionAssignorException(Exception):
    """Kafka's ``PartitionAssignorException``: the assignor cannot assign this group."""


class ServerAssignor(ABC):
    name: ClassVar[str]
    uses_leader_racks: ClassVar[bool] = False

    @abstractmethod
    def assign(self, spec: ServerGroupSpec) -> ServerAssignment:
        """The target assignment of every member."""


def member_order(members: Sequence[ServerMember]) -> list[ServerMember]:
    """Kafka's ``RangeAssignor.sortMemberIds``: members with an instance id first, by it; then
    the others by member id."""
    return sorted(
        members,
        key=lambda m: (0, m.instance_id, "") if m.instance_id is not None else (1, "", m.member_id),
    )


class RangeServerAssignor(ServerAssignor):
    """Kafka's server-side ``range``: for each topic, its subscribers in
    :func:`member_order` take consecutive ranges, the first ones one partition more."""

    name = "range"

    def assign(self, spec: ServerGroupSpec) -> ServerAssignment:
        members = member_order(spec.members)
        subscribers: dict[str, int] = {}
        for m in members:
            for t in m.topics:
                if t not in spec.partitions:
                    raise PartitionAssignorException("Member is subscribed to a non-existent topic")
                subscribers[t] = subscribers.get(t, 0) + 1
        next_start = dict.fromkeys(subscribers, 0)
        extra = {t: len(spec.partitions[t]) % n for t, n in subscribers.items()}
        out: ServerAssignment = {}
        for m in members:
            mine: dict[str, frozenset[int]] = {}
            for t in m.topics:
                count = len(spec.partitions[t])
                quota = count // subscribers[t]
                if extra[t] > 0:
                    quota += 1
                    extra[t] -= 1
                start = next_start[t]
                end = min(start + quota, count)
                next_start[t] = end
                if start < end:
                    mine[t] = frozenset(range(start, end))
            out[m.member_id] = mine
        return out


class LibraryServerAssignor(ServerAssignor):
    """A client-side assignor of :mod:`rackwise.assignors` run on the server: the members'
    current targets are their owned partitions, so the sticky ones stay sticky."""

    def __init__(self, assignor: PartitionAssignor) -> None:
        self._assignor = assignor

    def assign(self, spec: ServerGroupSpec) -> ServerAssignment:
        group = group_spec(spec)
        answer = self._assignor.assign(group)
        out: ServerAssignment = {}
        for member_id, tps in answer.items():
            mine: dict[str, set[int]] = {}
            for tp in tps:
                mine.setdefault(tp.topic, set()).add(tp.partition)
            out[member_id] = {t: frozenset(ps) for t, ps in mine.items()}
        return out


def group_spec(spec: ServerGroupSpec) -> GroupSpec:
    """The client-side library's view of ``spec`` (what ``rackwise assign`` reads)."""
    members = tuple(
        Member(
            m.member_id,
            tuple(sorted(m.topics)),
            owned=tuple(
                TopicPartition(t, p) for t in sorted(m.assigned) for p in sorted(m.assigned[t])
            ),
            rack=m.rack,
            group_instance_id=m.instance_id,
            generation=1 if m.assigned else -1,
        )
        for m in spec.members
    )
    return GroupSpec(partitions=spec.partitions, members=members, prefer_rack_aware_logic=False)


class _ByName(LibraryServerAssignor):
    uses_leader_racks = True

    def __init__(self) -> None:
        super().__init__(create_assignor(self.name))


class LeaderRackAwareRangeServerAssignor(_ByName):
    name = "leader-rack-aware-range"


class _EagerLeaderRackAwareSticky(LeaderRackAwareCooperativeStickyPartitionAssignor):
    """The cooperative assignor's answer before it withholds the partitions that change owner:
    on the server, the coordinator itself revokes before it assigns."""

    cooperative = False


class LeaderRackAwareStickyServerAssignor(LibraryServerAssignor):
    name = "leader-rack-aware-cooperative-sticky"
    uses_leader_racks = True

    def __init__(self) -> None:
        super().__init__(_EagerLeaderRackAwareSticky())


class RackLocalOptimalServerAssignor(_ByName):
    name = "rack-local-optimal"
