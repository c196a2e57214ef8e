"""One consumer group (KIP-848) as its records build it (Kafka's ``ConsumerGroup``): the group
epoch, the subscribed topics' metadata, the target assignment and its epoch, the members, and
which member epoch owns each partition.

Constraints
    * Changed only by :meth:`ConsumerGroup.replay` of the records in
      :mod:`rackwise.groups.consumer_records`, so a coordinator that loads them after a
      failover has the group its predecessor had.
    * A partition has at most one owner: replaying an assignment that gives a member a
      partition another member still owns raises :class:`OwnershipConflict` (Kafka throws
      ``IllegalStateException`` there); the coordinator never writes one.

States (Kafka's ``ConsumerGroupState``)
    ``Empty`` without members; ``Assigning`` while the group epoch is ahead of the target
    assignment's; ``Reconciling`` while a member is not yet at the target's epoch or still
    revoking or waiting for partitions; else ``Stable``.
"""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Final

from rackwise.common.java import java_hashmap_order, java_string_hash
from rackwise.groups.consumer_member import EMPTY, NO_OWNER, STABLE, ConsumerMember
from rackwise.groups.consumer_records import (
    CURRENT_ASSIGNMENT_KEY,
    GROUP_EPOCH_KEY,
    MEMBER_METADATA_KEY,
    PARTITION_METADATA_KEY,
    TARGET_MEMBER_KEY,
    TARGET_METADATA_KEY,
    CurrentAssignment,
    GroupEpoch,
    MemberMetadata,
    PartitionMetadata,
    Partitions,
    Record,
    TargetMember,
    TargetMetadata,
    Tombstone,
    TopicMetadata,
)

EMPTY_STATE: Final = "Empty"
ASSIGNING: Final = "Assigning"
RECONCILING: Final = "Reconciling"
STABLE_STATE: Final = "Stable"


class OwnershipConflict(Exception):
    """A record would give a partition to a second owner."""


@dataclass(eq=False, slots=True)
class ConsumerGroup:
    """A consumer group's state (module docstring)."""

    group_id: str
    epoch: int = 0
    target_epoch: int = 0
    topics: tuple[TopicMetadata, ...] = ()
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    targets: dict[str, Partitions] = field(default_factory=dict)
    owners: dict[tuple[uuid.UUID, int], tuple[str, int]] = field(default_factory=dict)
    """(topic id, partition) -> (member id, member epoch) of its owner."""

    # ---- reading ----------------------------------------------------------------------

    @property
    def state(self) -> str:
        if not self.members:
            return EMPTY_STATE
        if self.epoch > self.target_epoch:
            return ASSIGNING
        if any(not m.is_reconciled_to(self.target_epoch) for m in self.members.values()):
            return RECONCILING
        return STABLE_STATE

    def partition_epoch(self, topic_id: uuid.UUID, partition: int) -> int:
        owner = self.owners.get((topic_id, partition))
        return NO_OWNER if owner is None else owner[1]

    def static_member(self, instance_id: str) -> ConsumerMember | None:
        for member in self.members.values():
            if member.instance_id == instance_id:
                return member
        return None

    def target(self, member_id: str) -> Partitions:
        return self.targets.get(member_id, EMPTY)

    def preferred_assignor(self, default: str) -> str:
        """The server assignor most members name (Kafka's ``computePreferredServerAssignor``:
        the first of the most named in the order of Java's ``HashMap`` of the counts), else
        ``default``."""
        counts = Counter(
            m.server_assignor for m in self.members.values() if m.server_assignor is not None
        )
        if not counts:
            return default
        top = max(counts.values())
        order = java_hashmap_order(list(counts), java_string_hash, exact=False)
        return next(name for name in order if counts[name] == top)

    def subscribed_topic_names(self) -> Counter[str]:
        """Topic name -> how many members subscribe to it by name (regexes resolve apart)."""
        return Counter(t for m in self.members.values() for t in m.topic_names)

    # ---- replay -----------------------------------------------------------------------

    def replay(self, record: Record | Tombstone) -> None:
        """Apply one record (or tombstone) of this group."""
        match record:
            case GroupEpoch(_, epoch):
                self.epoch = epoch
            case PartitionMetadata(_, topics):
                self.topics = topics
            case MemberMetadata():
                self._replay_member(record)
            case TargetMetadata(_, epoch):
                self.target_epoch = epoch
            case TargetMember(_, member_id, partitions):
                self.targets[member_id] = partitions
            case CurrentAssignment():
                self._replay_assignment(record)
            case Tombstone():
                self._replay_tombstone(record)

    def _replay_member(self, r: MemberMetadata) -> None:
        old = self.members.get(r.member_id) or ConsumerMember(r.member_id)
        self.members[r.member_id] = replace(
            old,
            instance_id=r.instance_id,
            rack_id=r.rack_id,
            client_id=r.client_id,
            client_host=r.client_host,
            topic_names=r.topic_names,
            topic_regex=r.topic_regex,
            rebalance_timeout_ms=r.rebalance_timeout_ms,
            server_assignor=r.server_assignor,
            classic=r.classic,
        )

    def _replay_assignment(self, r: CurrentAssignment) -> None:
        old = self.members.get(r.member_id) or ConsumerMember(r.member_id)
        new = replace(
            old,
            member_epoch=r.member_epoch,
            previous_epoch=r.previous_epoch,
            state=r.state,
            assigned=r.assigned,
            revoking=r.revoking,
        )
        self._release(old)
        for key in new.owned_partitions():
            owner = self.owners.get(key)
            if owner is not None and owner[0] != new.member_id:
                raise OwnershipConflict(
                    f"partition {key[1]} of topic {key[0]} is owned by {owner[0]} at epoch "
                    f"{owner[1]}, so it cannot go to {new.member_id}"
                )
        for key in new.owned_partitions():
            self.owners[key] = (new.member_id, new.member_epoch)
        self.members[r.member_id] = new

    def _release(self, member: ConsumerMember) -> None:
        for key in member.owned_partitions():
            if self.owners.get(key, ("",))[0] == member.member_id:
                del self.owners[key]

    def _replay_tombstone(self, t: Tombstone) -> None:
        if t.kind == CURRENT_ASSIGNMENT_KEY:
            member = self.members.get(t.member_id)
            if member is not None:
                self._release(member)
                self.members[t.member_id] = replace(
                    member, member_epoch=-1, previous_epoch=-1, assigned=EMPTY, revoking=EMPTY
                )
        elif t.kind == TARGET_MEMBER_KEY:
            self.targets.pop(t.member_id, None)
        elif t.kind == MEMBER_METADATA_KEY:
            member = self.members.pop(t.member_id, None)
            if member is not None:
                self._release(member)
        elif t.kind == PARTITION_METADATA_KEY:
            self.topics = ()
        elif t.kind == TARGET_METADATA_KEY:
            self.target_epoch = 0
        elif t.kind == GROUP_EPOCH_KEY:
            self.epoch = -1  # the group is deleted; its holder drops it

    def current_record(self, member: ConsumerMember) -> CurrentAssignment:
        return CurrentAssignment(
            self.group_id,
            member.member_id,
            member.member_epoch,
            member.previous_epoch,
            member.state,
            member.assigned,
            member.revoking,
        )


def is_stable_member(member: ConsumerMember, target_epoch: int) -> bool:
    return member.state == STABLE and member.member_epoch == target_epoch
