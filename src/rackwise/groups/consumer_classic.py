"""Members of the classic protocol served inside a consumer group, pure (Kafka's
``classicGroupJoinToConsumerGroup``, ``classicGroupSyncToConsumerGroup``,
``classicGroupHeartbeatToConsumerGroup`` and ``classicGroupLeaveToConsumerGroup``): while a
group migrates, its kafka-python members keep their JoinGroup, SyncGroup, Heartbeat and
LeaveGroup, and the consumer group's target assignment is what they get.

Goals
    A classic member is a consumer group member with ``ClassicMemberMetadata``: its JoinGroup
    is a heartbeat that joins or rejoins (the subscription, rack and owned partitions read
    from the embedded protocol), answered with its member epoch as the generation and no
    leader, so it computes no assignment; its SyncGroup is answered with the partitions it
    owns after that step of reconciliation; its Heartbeat keeps its session running.

Constraints
    * Revoke before assign, as for every member: a classic member that must give partitions
      up is answered with what it keeps, then REBALANCE_IN_PROGRESS on its next Heartbeat; it
      rejoins, showing in its JoinGroup that it owns no more than it keeps (an eager client
      owns nothing when it rejoins), and only then do the partitions go to their new owner.
    * A Heartbeat is REBALANCE_IN_PROGRESS when the group epoch is ahead of the member's,
      when it has partitions to revoke, or when the partitions it waits for are free; a
      SyncGroup is REBALANCE_IN_PROGRESS when the group epoch is ahead and the member has
      nothing to revoke (``throwIfRebalanceInProgress``).
    * Kafka's checks and messages: UNKNOWN_MEMBER_ID for a member that is not in the group
      or does not use the classic protocol, FENCED_INSTANCE_ID, ILLEGAL_GENERATION for a
      generation other than the member epoch, INCONSISTENT_GROUP_PROTOCOL for a protocol
      type other than ``consumer`` or a name other than the one its JoinGroup was answered,
      and for protocols some classic member does not support; GROUP_MAX_SIZE_REACHED.
    * Kafka's timeouts for a classic member: its session (its own session timeout), a
      SyncGroup within its rebalance timeout of its JoinGroup's answer, and a JoinGroup within
      its rebalance timeout of the first Heartbeat that told it to rejoin; past one it is
      fenced, its partitions free for the others.
    * A static member's JoinGroup that replaces the group's last consumer-protocol member
      makes it a classic group, Stable, the joining member in it
      (:func:`rackwise.groups.online_migration.downgrade_replaced`).
    * A LeaveGroup removes the members and bumps the group epoch once; the group stays a
      consumer group (Kafka downgrades only when a consumer-protocol member leaves).
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

from rackwise.common.error_codes import (
    FENCED_INSTANCE_ID,
    GROUP_MAX_SIZE_REACHED,
    ILLEGAL_GENERATION,
    INCONSISTENT_GROUP_PROTOCOL,
    MEMBER_ID_REQUIRED,
    NONE,
    REBALANCE_IN_PROGRESS,
    UNKNOWN_MEMBER_ID,
)
from rackwise.groups.classic import CONSUMER_PROTOCOL_TYPE, UNKNOWN_MEMBER
from rackwise.groups.classic_effects import JoinRequest, join_answer, sync_answer
from rackwise.groups.consumer_coordinator import ConsumerGroups, Outcome, new_member_id
from rackwise.groups.consumer_group import ConsumerGroup
from rackwise.groups.consumer_member import (
    NO_OWNER,
    UNRELEASED_PARTITIONS,
    UNREVOKED_PARTITIONS,
    ConsumerMember,
    Owned,
    reconcile,
)
from rackwise.groups.consumer_protocol import (
    decode_subscription,
    encode_assignment,
    subscription_version,
)
from rackwise.groups.consumer_records import ClassicMeta, GroupEpoch, PartitionMetadata
from rackwise.groups.consumer_target import subscribed_topics, subscription_metadata
from rackwise.groups.consumer_types import (
    CLASSIC_JOIN,
    CLASSIC_SYNC,
    MEMBER_TIMERS,
    SESSION,
    GroupError,
    TopicsView,
)
from rackwise.groups.offsets import OffsetsFormatError
from rackwise.groups.online_migration import downgrade_replaced


def supports_protocols(group: ConsumerGroup, protocol_type: str, names: list[str]) -> bool:
    """Kafka's ``ConsumerGroup.supportsClassicProtocols``: type ``consumer``, and with
    classic members one of ``names`` that every classic member lists."""
    if protocol_type != CONSUMER_PROTOCOL_TYPE:
        return False
    classic = [m.classic for m in group.members.values() if m.classic is not None]
    if not classic:
        return bool(names)
    return any(all(n in {p for p, _ in c.protocols} for c in classic) for n in names)


def _owned(owned: tuple[tuple[str, tuple[int, ...]], ...], view: TopicsView) -> Owned:
    out = []
    for name, ids in owned:
        topic = view.topics.get(name)
        if topic is not None:
            out.append((topic.topic_id, ids))
    return tuple(out)


def join(
    groups: ConsumerGroups, request: JoinRequest, now_ms: int, view: TopicsView
) -> tuple[dict[str, Any], Outcome]:
    """A JoinGroup to the consumer group ``request.group_id`` (which has members)."""
    out = groups._begin()
    groups._now_ms = now_ms
    try:
        return _join(groups, request, now_ms, view), out
    except GroupError as e:
        return join_answer(e.code, request.member_id), out


def _join_member(groups: ConsumerGroups, group: ConsumerGroup, request: JoinRequest) -> str:
    """The member id the JoinGroup is for, after Kafka's size and protocol checks."""
    member_id = request.member_id or new_member_id()
    if len(group.members) >= groups.config.max_size and member_id not in group.members:
        raise GroupError(
            GROUP_MAX_SIZE_REACHED,
            "The consumer group has reached its maximum capacity of "
            f"{groups.config.max_size} members.",
        )
    names = [name for name, _ in request.protocols]
    if not supports_protocols(group, request.protocol_type, names):
        raise GroupError(
            INCONSISTENT_GROUP_PROTOCOL, f"Member {member_id}'s protocols are not supported."
        )
    return member_id


def _existing(
    groups: ConsumerGroups, group: ConsumerGroup, request: JoinRequest, member_id: str
) -> tuple[ConsumerMember, ConsumerMember | None]:
    """The member joining (known, a static member's replacement, or new) and the static
    member it replaced, if any."""
    if request.instance_id is not None:
        static = group.static_member(request.instance_id)
        if static is not None and static.member_id != member_id:
            if request.member_id != UNKNOWN_MEMBER:
                raise GroupError(
                    FENCED_INSTANCE_ID,
                    f"Static member {member_id} with instance id {request.instance_id} was "
                    f"fenced by member {static.member_id}.",
                )
            return groups._replace_static(group, static, member_id), static
    return group.members.get(member_id) or ConsumerMember(member_id), None


def _join(
    groups: ConsumerGroups, request: JoinRequest, now_ms: int, view: TopicsView
) -> dict[str, Any]:
    group = groups.groups[request.group_id]
    member_id = _join_member(groups, group, request)
    if request.member_id == UNKNOWN_MEMBER and request.version >= 4 and not request.instance_id:
        return join_answer(MEMBER_ID_REQUIRED, member_id)
    try:
        subscription = decode_subscription(request.protocols[0][1])
    except (OffsetsFormatError, IndexError):
        raise GroupError(
            INCONSISTENT_GROUP_PROTOCOL, "Malformed embedded consumer protocol."
        ) from None
    member, replaced = _existing(groups, group, request, member_id)
    group = groups.groups.get(group.group_id, group)
    is_new = member.member_id not in group.members
    updated = replace(
        member,
        instance_id=request.instance_id or member.instance_id,
        rack_id=subscription.rack_id or member.rack_id,
        rebalance_timeout_ms=request.rebalance_timeout_ms,
        topic_names=subscription.topics,
        client_id=request.client_id,
        client_host=request.client_host,
        classic=ClassicMeta(request.session_timeout_ms, request.protocols),
    )
    bump = groups._store_member(group, member, updated, joining=False)
    group = groups.groups[group.group_id]
    bump = groups._refresh_metadata(group, view, now_ms, bump)
    epoch = group.epoch + 1 if bump else group.epoch
    if bump:
        groups._emit(GroupEpoch(group.group_id, epoch))
    if epoch > group.target_epoch:
        groups._assign(group, view, epoch)
    before = group.members[member_id]
    after = before
    if group.target_epoch > 0:
        owned = _owned(subscription.owned, view)
        target = group.target(member_id)
        after = reconcile(before, group.target_epoch, target, group.partition_epoch, owned)
    if after != before or is_new:
        groups._emit(group.current_record(after))
    groups._rebalance_timer(group.group_id, after, now_ms)
    groups._timer(SESSION, group.group_id, member_id, now_ms + request.session_timeout_ms)
    # Kafka's join and sync timeouts: it rejoined; its SyncGroup is due within the timeout
    groups._rejoining.discard((group.group_id, member_id))
    groups._timer(CLASSIC_JOIN, group.group_id, member_id, None)
    deadline = now_ms + request.rebalance_timeout_ms
    groups._timer(CLASSIC_SYNC, group.group_id, member_id, deadline)
    if replaced is not None:  # the last consumer-protocol member replaced: a classic group
        group = groups.groups[group.group_id]
        found = downgrade_replaced(group, replaced, view, now_ms, groups.config)
        groups._to_classic(group, found, rebalance=False)
    return join_answer(
        NONE,
        member_id,
        generation_id=after.member_epoch,
        protocol_type=CONSUMER_PROTOCOL_TYPE,
        protocol_name=request.protocols[0][0],
    )


def _known(group: ConsumerGroup, member_id: str) -> ConsumerMember:
    """The dynamic member ``member_id`` (UNKNOWN_MEMBER_ID if the group has none)."""
    member = group.members.get(member_id)
    if member is None:
        raise GroupError(
            UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group.group_id}."
        )
    return member


def _check_classic(member: ConsumerMember) -> None:
    """Kafka's ``throwIfMemberDoesNotUseClassicProtocol``."""
    if member.classic is None:
        raise GroupError(
            UNKNOWN_MEMBER_ID, f"Member {member.member_id} does not use the classic protocol."
        )


def _classic_member(
    group: ConsumerGroup, member_id: str, instance_id: str | None, generation: int
) -> ConsumerMember:
    """Kafka's ``validateConsumerGroupMember``, ``throwIfMemberDoesNotUseClassicProtocol``
    and ``throwIfGenerationIdUnmatched``."""
    if instance_id is None:
        member = _known(group, member_id)
    else:
        found = group.static_member(instance_id)
        if found is None:
            raise GroupError(
                UNKNOWN_MEMBER_ID,
                f"Member with instance id {instance_id} is not a member of group {group.group_id}.",
            )
        if found.member_id != member_id:
            raise GroupError(
                FENCED_INSTANCE_ID,
                f"Static member {member_id} with instance id {instance_id} was fenced by "
                f"member {found.member_id}.",
            )
        member = found
    _check_classic(member)
    if generation != member.member_epoch:
        raise GroupError(
            ILLEGAL_GENERATION,
            f"The request generation id {generation} is not equal to the member epoch "
            f"{member.member_epoch} of member {member.member_id}.",
        )
    return member


def _names(view: TopicsView) -> dict[uuid.UUID, str]:
    return {t.topic_id: t.name for t in view.topics.values()}


def sync(
    groups: ConsumerGroups,
    group_id: str,
    member_id: str,
    instance_id: str | None,
    generation: int,
    protocol_type: str | None,
    protocol_name: str | None,
    now_ms: int,
    view: TopicsView,
) -> tuple[dict[str, Any], Outcome]:
    """A SyncGroup: the member's partitions as they are after its JoinGroup."""
    out = groups._begin()
    group = groups.groups[group_id]
    try:
        member = _classic_member(group, member_id, instance_id, generation)
        assert member.classic is not None
        name = member.classic.protocols[0][0]
        if protocol_type is not None and protocol_type != CONSUMER_PROTOCOL_TYPE:
            raise GroupError(
                INCONSISTENT_GROUP_PROTOCOL,
                f"The protocol type {protocol_type} from member {member_id} request is not "
                f"equal to the group protocol type {CONSUMER_PROTOCOL_TYPE}.",
            )
        if protocol_name is not None and protocol_name != name:
            raise GroupError(
                INCONSISTENT_GROUP_PROTOCOL,
                f"The protocol name {protocol_name} from member {member_id} request is not "
                f"equal to the protocol name {name} returned in the join response.",
            )
        if group.epoch > member.member_epoch and member.state != UNREVOKED_PARTITIONS:
            raise GroupError(
                REBALANCE_IN_PROGRESS,
                f"A new rebalance is triggered in group {group_id} and member {member_id} "
                "should rejoin to catch up.",
            )
    except GroupError as e:
        return sync_answer(e.code), out
    timeout = member.classic.session_timeout_ms
    groups._timer(SESSION, group_id, member.member_id, now_ms + timeout)
    groups._timer(CLASSIC_SYNC, group_id, member.member_id, None)
    names = _names(view)
    by_name = {names[t]: sorted(ps) for t, ps in member.assigned.items() if t in names}
    version = subscription_version(member.classic.protocols[0][1])
    answer = sync_answer(
        NONE,
        protocol_type=protocol_type,
        protocol_name=protocol_name,
        assignment=encode_assignment(version, by_name),
    )
    return answer, out


def waiting_on_unreleased(group: ConsumerGroup, member: ConsumerMember) -> bool:
    """Kafka's ``waitingOnUnreleasedPartition``: a partition of the member's target that it
    does not have is still owned by another member."""
    for topic_id, partitions in group.target(member.member_id).items():
        have = member.assigned.get(topic_id, frozenset())
        for p in partitions - have:
            if group.partition_epoch(topic_id, p) != NO_OWNER:
                return True
    return False


def heartbeat(
    groups: ConsumerGroups,
    group_id: str,
    member_id: str,
    instance_id: str | None,
    generation: int,
    now_ms: int,
) -> tuple[int, Outcome]:
    """A Heartbeat's error code: REBALANCE_IN_PROGRESS when the member must rejoin."""
    out = groups._begin()
    group = groups.groups[group_id]
    try:
        member = _classic_member(group, member_id, instance_id, generation)
    except GroupError as e:
        return e.code, out
    assert member.classic is not None
    groups._timer(SESSION, group_id, member.member_id, now_ms + member.classic.session_timeout_ms)
    if (
        member.member_epoch < group.epoch
        or member.state == UNREVOKED_PARTITIONS
        or (member.state == UNRELEASED_PARTITIONS and not waiting_on_unreleased(group, member))
    ):
        key = (group_id, member.member_id)
        if key not in groups._rejoining:  # scheduleConsumerGroupJoinTimeoutIfAbsent
            groups._rejoining.add(key)
            deadline = now_ms + member.rebalance_timeout_ms
            groups._timer(CLASSIC_JOIN, group_id, member.member_id, deadline)
        return REBALANCE_IN_PROGRESS, out
    return NONE, out


def leave(
    groups: ConsumerGroups, group_id: str, leaving: list[tuple[str, str | None]], view: TopicsView
) -> tuple[list[int], Outcome]:
    """Each leaving (member id, group.instance.id)'s error; the group epoch bumps once."""
    out = groups._begin()
    group = groups.groups[group_id]
    codes: list[int] = []
    removed: set[str] = set()
    for member_id, instance_id in leaving:
        try:
            member = _leaving_member(group, member_id, instance_id)
        except GroupError as e:
            codes.append(e.code)
            continue
        codes.append(NONE)
        if member.member_id in removed:
            continue
        removed.add(member.member_id)
        groups._remove(group, member.member_id)
        groups._rejoining.discard((group_id, member.member_id))
        for kind in MEMBER_TIMERS:
            groups._timer(kind, group_id, member.member_id, None)
    if removed:
        topics = subscribed_topics(group.members.values(), view)
        metadata = subscription_metadata(topics, view)
        if metadata != group.topics:
            groups._emit(PartitionMetadata(group_id, metadata))
        groups._emit(GroupEpoch(group_id, group.epoch + 1))
    return codes, out


def _leaving_member(
    group: ConsumerGroup, member_id: str, instance_id: str | None
) -> ConsumerMember:
    if instance_id is None:
        member = _known(group, member_id)
    else:
        found = group.static_member(instance_id)
        if found is None:
            raise GroupError(
                UNKNOWN_MEMBER_ID,
                f"Instance id {instance_id} is unknown.",
            )
        if member_id not in (UNKNOWN_MEMBER, found.member_id):
            raise GroupError(
                FENCED_INSTANCE_ID,
                f"Static member {member_id} with instance id {instance_id} was fenced by "
                f"member {found.member_id}.",
            )
        member = found
    _check_classic(member)
    return member
