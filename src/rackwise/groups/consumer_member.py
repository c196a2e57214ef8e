"""A member of a consumer group (KIP-848) and how it moves towards its target assignment
(Kafka's ``ConsumerGroupMember`` and ``CurrentAssignmentBuilder``).

Constraints
    * Pure values: a member is frozen; a heartbeat or a new target gives a new member.
    * Revoke first: a partition of the target goes to the member only when no other member
      owns it (its partition epoch is -1), so no partition has two owners at once.

Algorithm (``reconcile``)
    ``STABLE`` with an epoch behind the target's: the next assignment is computed. Partitions
    the member holds and the target keeps stay; those it holds and the target drops are to be
    revoked; those the target adds are given when free and otherwise wait. With partitions to
    revoke the member is ``UNREVOKED_PARTITIONS`` and keeps its epoch until a heartbeat shows
    it no longer owns them; then (its epoch raised by one) the next assignment is computed
    again. With none to revoke it takes the target's epoch, and is ``UNRELEASED_PARTITIONS``
    while some target partition is still owned by another member, ``STABLE`` once it has all.

Worked example
    Target epoch 3 gives member ``a`` partitions {0, 1}; ``a`` at epoch 2 owns {0, 1, 2}, and 2
    goes to ``b``. ``a`` becomes ``UNREVOKED_PARTITIONS`` at epoch 2 with {2} to revoke; ``b``
    is ``UNRELEASED_PARTITIONS`` at epoch 3 without 2. When ``a`` heartbeats owning {0, 1} it
    becomes ``STABLE`` at epoch 3, partition 2 is free, and ``b``'s next heartbeat takes it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Final

from rackwise.groups.consumer_records import ClassicMeta, MemberMetadata, Partitions

STABLE: Final = 0
UNREVOKED_PARTITIONS: Final = 1
UNRELEASED_PARTITIONS: Final = 2
UNKNOWN: Final = 127
STATE_NAMES: Final = {
    STABLE: "STABLE",
    UNREVOKED_PARTITIONS: "UNREVOKED_PARTITIONS",
    UNRELEASED_PARTITIONS: "UNRELEASED_PARTITIONS",
    UNKNOWN: "UNKNOWN",
}

LEAVE_GROUP_EPOCH: Final = -1
LEAVE_GROUP_STATIC_EPOCH: Final = -2
NO_OWNER: Final = -1

EMPTY: Partitions = MappingProxyType({})

Owned = tuple[tuple[uuid.UUID, tuple[int, ...]], ...]
"""The partitions a heartbeat says the member owns, by topic id."""


class FencedMemberEpoch(Exception):
    """FENCED_MEMBER_EPOCH with Kafka's message."""


@dataclass(frozen=True, slots=True)
class ConsumerMember:
    """One member of a consumer group."""

    member_id: str
    member_epoch: int = 0
    previous_epoch: int = 0
    state: int = STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    topic_names: tuple[str, ...] = ()
    topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    classic: ClassicMeta | None = None
    """Set for a member of the classic protocol served in the consumer group."""
    assigned: Partitions = field(default_factory=dict)
    revoking: Partitions = field(default_factory=dict)

    def is_reconciled_to(self, target_epoch: int) -> bool:
        return self.state == STABLE and self.member_epoch == target_epoch

    def owned_partitions(self) -> Iterable[tuple[uuid.UUID, int]]:
        """Every partition the member holds: assigned and still to be revoked."""
        for source in (self.assigned, self.revoking):
            for topic_id, partitions in source.items():
                for p in partitions:
                    yield topic_id, p

    def subscription(self) -> tuple[tuple[str, ...], str | None]:
        return self.topic_names, self.topic_regex


def is_subset(owned: Owned | None, target: Partitions) -> bool:
    """Whether every partition of ``owned`` is in ``target`` (Kafka's ``isSubset``)."""
    if owned is None:
        return False
    for topic_id, partitions in owned:
        have = target.get(topic_id)
        if have is None or any(p not in have for p in partitions):
            return False
    return True


def check_epoch(member: ConsumerMember, received: int, owned: Owned | None) -> None:
    """Kafka's ``throwIfConsumerGroupMemberEpochIsInvalid``: a member a step behind whose
    owned partitions are a subset of its assignment lost the answer that raised its epoch."""
    if received > member.member_epoch:
        raise FencedMemberEpoch(
            f"The consumer group member has a greater member epoch ({received}) than the one "
            f"known by the group coordinator ({member.member_epoch}). The member must abandon "
            "all its partitions and rejoin."
        )
    if received < member.member_epoch and (
        received != member.previous_epoch or not is_subset(owned, member.assigned)
    ):
        raise FencedMemberEpoch(
            f"The consumer group member has a smaller member epoch ({received}) than the one "
            f"known by the group coordinator ({member.member_epoch}). The member must abandon "
            "all its partitions and rejoin."
        )


def _owns_any(owned: Owned | None, partitions: Partitions) -> bool:
    if owned is None:
        return True
    return any(p in partitions.get(t, ()) for t, ps in owned for p in ps)


def _with_epoch(member: ConsumerMember, epoch: int, **changes: object) -> ConsumerMember:
    return replace(member, member_epoch=epoch, previous_epoch=member.member_epoch, **changes)  # type: ignore[arg-type]


def _next(
    member: ConsumerMember,
    epoch: int,
    target_epoch: int,
    target: Partitions,
    partition_epoch: Callable[[uuid.UUID, int], int],
    owned: Owned | None,
) -> ConsumerMember:
    unreleased = False
    assigned: dict[uuid.UUID, frozenset[int]] = {}
    revoking: dict[uuid.UUID, frozenset[int]] = {}
    pending: dict[uuid.UUID, frozenset[int]] = {}
    for topic_id in target.keys() | member.assigned.keys():
        want = target.get(topic_id, frozenset())
        have = member.assigned.get(topic_id, frozenset())
        keep = have & want
        adding = want - keep
        free = frozenset(p for p in adding if partition_epoch(topic_id, p) == NO_OWNER)
        unreleased = unreleased or free != adding
        if keep:
            assigned[topic_id] = keep
        if have - keep:
            revoking[topic_id] = have - keep
        if free:
            pending[topic_id] = free
    if revoking and _owns_any(owned, revoking):
        return _with_epoch(
            member, epoch, state=UNREVOKED_PARTITIONS, assigned=assigned, revoking=revoking
        )
    for topic_id, free in pending.items():
        assigned[topic_id] = assigned.get(topic_id, frozenset()) | free
    state = UNRELEASED_PARTITIONS if unreleased else STABLE
    return _with_epoch(member, target_epoch, state=state, assigned=assigned, revoking=EMPTY)


def reconcile(
    member: ConsumerMember,
    target_epoch: int,
    target: Partitions,
    partition_epoch: Callable[[uuid.UUID, int], int],
    owned: Owned | None,
) -> ConsumerMember:
    """The member after one step towards ``target`` (``CurrentAssignmentBuilder.build``);
    ``partition_epoch`` gives the epoch of a partition's owner, -1 for none."""
    if member.is_reconciled_to(target_epoch):
        return member
    if member.state == STABLE:
        if member.member_epoch == target_epoch:
            return member
        return _next(member, member.member_epoch, target_epoch, target, partition_epoch, owned)
    if member.state == UNREVOKED_PARTITIONS:
        if _owns_any(owned, member.revoking):
            return member
        epoch = member.member_epoch + 1
        return _next(member, epoch, target_epoch, target, partition_epoch, owned)
    if member.state == UNRELEASED_PARTITIONS:
        return _next(member, member.member_epoch, target_epoch, target, partition_epoch, owned)
    if owned is None or owned:
        raise FencedMemberEpoch(
            "The consumer group member is in a unknown state. "
            "The member must abandon all its partitions and rejoin."
        )
    return _next(member, target_epoch, target_epoch, target, partition_epoch, owned)


def metadata_record(group_id: str, m: ConsumerMember) -> MemberMetadata:
    """The ``ConsumerGroupMemberMetadata`` record of ``m``."""
    return MemberMetadata(
        group_id,
        m.member_id,
        m.instance_id,
        m.rack_id,
        m.client_id,
        m.client_host,
        m.topic_names,
        m.topic_regex,
        m.rebalance_timeout_ms,
        m.server_assignor,
        m.classic,
    )
