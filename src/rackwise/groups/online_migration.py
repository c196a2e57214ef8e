"""A group with members changing protocol, pure (Kafka's online migration,
``GroupMetadataManager``'s ``validateOnlineUpgrade`` / ``convertToConsumerGroup`` and
``validateOnlineDowngradeWithFencedMember`` / ``convertToClassicGroup``, with
``ConsumerGroup.fromClassicGroup`` and ``ClassicGroup.fromConsumerGroup``).

Goals
    A classic group whose members move to ``group.protocol=consumer`` one by one becomes a
    consumer group when the first of them joins, its classic members then served inside it
    (:mod:`rackwise.groups.consumer_classic`); when the last consumer-protocol member leaves,
    the classic members left become a classic group again. Committed offsets are records of
    their own and neither conversion touches them.

Constraints
    * ``group.consumer.migration.policy`` (:data:`POLICIES`, Kafka's default
      ``bidirectional``) allows an upgrade, a downgrade, both or neither; a name Kafka does
      not know reads as ``disabled`` (``ConsumerGroupMigrationPolicy.parse``). An empty group
      converts whatever the policy (:mod:`rackwise.groups.migration`).
    * Upgrade only a group of protocol type ``consumer`` of at most
      ``group.consumer.max.size`` members; downgrade only when every member left uses the
      classic protocol, at least one is left and at most ``group.max.size``; or when a static
      member's classic JoinGroup replaces the last member of the consumer protocol
      (``validateOnlineDowngradeWithReplacedMember``), the joining member then in the group.
    * The consumer group made from a classic group has its generation as group epoch and
      target epoch; each member is Stable at that epoch with the partitions of its last
      assignment as both its target and its assignment (topics no longer in the image
      dropped), its subscription and rack from its JoinGroup metadata, and its
      ``ClassicMemberMetadata`` (session timeout, protocols). The records are Kafka's
      ``createConsumerGroupRecords``: every member's metadata, the epoch, every target, the
      target epoch, every current assignment.
    * The classic group made from a consumer group is Stable at the group epoch, protocol
      type ``consumer``, its protocol chosen by the members' votes, each member's assignment
      its target written in the version of its subscription; its ``GroupMetadataValue`` is
      written with the consumer group's tombstones (Kafka's ``createGroupTombstoneRecords``)
      and, after a member left, a rebalance is prepared, so the members rejoin (after a
      replacement the group stays Stable, as Kafka's, the joining member synced next).

Worked example
    Classic group ``billing`` at generation 4, members ``a`` (``t-0``, ``t-1``) and ``b``
    (``t-2``, ``t-3``). A ConsumerGroupHeartbeat joins: :func:`consumer_records_of` gives the
    group at epoch 4 with ``a`` and ``b`` Stable at epoch 4 owning what they owned; the joining
    member bumps the epoch to 5 and the new target takes partitions from ``a`` and ``b``,
    which are told REBALANCE_IN_PROGRESS on their next Heartbeat and revoke them by rejoining.
"""

from __future__ import annotations

import uuid
from typing import Final

from rackwise.groups.classic import CONSUMER_PROTOCOL_TYPE, STABLE, ClassicGroup, Member
from rackwise.groups.consumer_group import ConsumerGroup
from rackwise.groups.consumer_member import STABLE as MEMBER_STABLE
from rackwise.groups.consumer_member import ConsumerMember
from rackwise.groups.consumer_protocol import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    subscription_version,
)
from rackwise.groups.consumer_records import (
    CURRENT_ASSIGNMENT_KEY,
    GROUP_EPOCH_KEY,
    MEMBER_METADATA_KEY,
    PARTITION_METADATA_KEY,
    TARGET_MEMBER_KEY,
    TARGET_METADATA_KEY,
    ClassicMeta,
    CurrentAssignment,
    GroupEpoch,
    MemberMetadata,
    Partitions,
    Record,
    TargetMember,
    TargetMetadata,
    Tombstone,
)
from rackwise.groups.consumer_types import ConsumerGroupConfig, TopicsView
from rackwise.groups.offsets import OffsetsFormatError

BIDIRECTIONAL: Final = "bidirectional"
UPGRADE: Final = "upgrade"
DOWNGRADE: Final = "downgrade"
DISABLED: Final = "disabled"
POLICIES: Final = (BIDIRECTIONAL, UPGRADE, DOWNGRADE, DISABLED)
DEFAULT_POLICY: Final = BIDIRECTIONAL
"""Kafka's ``group.consumer.migration.policy`` default."""


def parse_policy(name: str | None) -> str:
    """Kafka's ``ConsumerGroupMigrationPolicy.parse``: case-insensitive, unknown is disabled."""
    found = (name or "").strip().lower()
    return found if found in POLICIES else DISABLED


def upgrade_enabled(policy: str) -> bool:
    return policy in (BIDIRECTIONAL, UPGRADE)


def downgrade_enabled(policy: str) -> bool:
    return policy in (BIDIRECTIONAL, DOWNGRADE)


# ---- classic to consumer ------------------------------------------------------------------


def can_upgrade(classic: ClassicGroup, policy: str, consumer_max_size: int) -> bool:
    """Kafka's ``validateOnlineUpgrade``."""
    return (
        upgrade_enabled(policy)
        and classic.protocol_type == CONSUMER_PROTOCOL_TYPE
        and len(classic.members) <= consumer_max_size
    )


def _by_id(partitions: dict[str, tuple[int, ...]], view: TopicsView) -> Partitions:
    out: dict[uuid.UUID, frozenset[int]] = {}
    for name, ids in partitions.items():
        topic = view.topics.get(name)
        if topic is not None:
            out[topic.topic_id] = frozenset(ids)
    return out


def consumer_records_of(classic: ClassicGroup, view: TopicsView) -> list[Record]:
    """The records of the consumer group made from ``classic`` (module docstring); raises
    :class:`OffsetsFormatError` when a member's subscription or assignment does not parse."""
    group_id, epoch = classic.group_id, classic.generation
    metadata: list[Record] = []
    targets: list[Record] = []
    current: list[Record] = []
    for m in classic.members.values():
        if classic.protocol_name is None:
            raise OffsetsFormatError(f"group {group_id} has chosen no protocol")
        subscription = decode_subscription(m.metadata(classic.protocol_name))
        assigned = _by_id(decode_assignment(m.assignment), view)
        meta = ClassicMeta(m.session_timeout_ms, m.protocols)
        metadata.append(
            MemberMetadata(
                group_id,
                m.member_id,
                m.instance_id,
                subscription.rack_id,
                m.client_id,
                m.client_host,
                subscription.topics,
                topic_regex=None,
                rebalance_timeout_ms=m.rebalance_timeout_ms,
                server_assignor=None,
                classic=meta,
            )
        )
        targets.append(TargetMember(group_id, m.member_id, assigned))
        current.append(
            CurrentAssignment(group_id, m.member_id, epoch, epoch, MEMBER_STABLE, assigned, {})
        )
    return [
        *metadata,
        GroupEpoch(group_id, epoch),
        *targets,
        TargetMetadata(group_id, epoch),
        *current,
    ]


# ---- consumer to classic ------------------------------------------------------------------


def can_downgrade(group: ConsumerGroup, leaving: str, policy: str, classic_max_size: int) -> bool:
    """Kafka's ``validateOnlineDowngradeWithFencedMember``: every member but ``leaving`` uses
    the classic protocol (and ``leaving`` does not), one is left, the policy allows it and
    the classic group would not be too large."""
    member = group.members.get(leaving)
    rest = [m for m in group.members.values() if m.member_id != leaving]
    return (
        member is not None
        and member.classic is None
        and all(m.classic is not None for m in rest)
        and len(rest) >= 1
        and downgrade_enabled(policy)
        and len(rest) <= classic_max_size
    )


def can_downgrade_replaced(
    group: ConsumerGroup, replaced: ConsumerMember, policy: str, classic_max_size: int
) -> bool:
    """Kafka's ``validateOnlineDowngradeWithReplacedMember``, ``group`` holding the joining
    static member in the place of ``replaced``: ``replaced`` used the consumer protocol, every
    member now uses the classic one, the policy allows it and the classic group would not be
    too large."""
    return (
        replaced.classic is None
        and all(m.classic is not None for m in group.members.values())
        and downgrade_enabled(policy)
        and len(group.members) <= classic_max_size
    )


def tombstones(group: ConsumerGroup) -> list[Tombstone]:
    """Kafka's ``ConsumerGroup.createGroupTombstoneRecords``, in its order."""
    g, members = group.group_id, list(group.members)
    return [
        *(Tombstone(CURRENT_ASSIGNMENT_KEY, g, m) for m in members),
        *(Tombstone(TARGET_MEMBER_KEY, g, m) for m in members),
        Tombstone(TARGET_METADATA_KEY, g),
        *(Tombstone(MEMBER_METADATA_KEY, g, m) for m in members),
        Tombstone(PARTITION_METADATA_KEY, g),
        Tombstone(GROUP_EPOCH_KEY, g),
    ]


def classic_group_of(
    group: ConsumerGroup, leaving: str | None, view: TopicsView, now_ms: int
) -> ClassicGroup:
    """The classic group of ``group``'s members but ``leaving`` (module docstring)."""
    names = {t.topic_id: t.name for t in view.topics.values()}
    classic = ClassicGroup(
        group.group_id,
        state=STABLE,
        generation=group.epoch,
        protocol_type=CONSUMER_PROTOCOL_TYPE,
        state_timestamp_ms=now_ms,
    )
    for m in group.members.values():
        if m.member_id == leaving or m.classic is None:
            continue
        timeouts = (m.rebalance_timeout_ms, m.classic.session_timeout_ms)
        member = Member(
            m.member_id, m.instance_id, m.client_id, m.client_host, *timeouts,
            CONSUMER_PROTOCOL_TYPE, m.classic.protocols,
        )  # fmt: skip
        classic.add(member)
    classic.protocol_name = classic.select_protocol()
    for member in classic.members.values():
        target = group.target(member.member_id)
        by_name = {names[t]: sorted(ps) for t, ps in target.items() if t in names}
        version = subscription_version(member.metadata(classic.protocol_name))
        member.assignment = encode_assignment(version, by_name)
    return classic


def downgrade(
    group: ConsumerGroup, leaving: str, view: TopicsView, now_ms: int, config: ConsumerGroupConfig
) -> tuple[list[Tombstone], ClassicGroup] | None:
    """The consumer group's tombstones and the classic group that replaces it once
    ``leaving`` is fenced, or None when it stays a consumer group (module docstring)."""
    if not can_downgrade(group, leaving, config.migration_policy, config.classic_max_size):
        return None
    return _converted(group, leaving, view, now_ms)


def downgrade_replaced(
    group: ConsumerGroup,
    replaced: ConsumerMember,
    view: TopicsView,
    now_ms: int,
    config: ConsumerGroupConfig,
) -> tuple[list[Tombstone], ClassicGroup] | None:
    """As :func:`downgrade`, once a static member's classic JoinGroup has taken the place of
    ``replaced`` in ``group`` (Kafka's ``createGroupTombstoneRecordsWithReplacedMember``: the
    tombstones name the joining member)."""
    policy, size = config.migration_policy, config.classic_max_size
    if not can_downgrade_replaced(group, replaced, policy, size):
        return None
    return _converted(group, None, view, now_ms)


def _converted(
    group: ConsumerGroup, leaving: str | None, view: TopicsView, now_ms: int
) -> tuple[list[Tombstone], ClassicGroup] | None:
    try:
        classic = classic_group_of(group, leaving, view, now_ms)
    except (ValueError, OffsetsFormatError):
        return None  # protocols the members do not share, or metadata that does not parse
    return tombstones(group), classic
