"""The rules of a classic group's JoinGroup (Kafka's ``GroupMetadataManager.classicGroupJoin``
and the helpers it calls), decided on values: the group is changed, and the
:mod:`~rackwise.groups.classic_effects` to carry out are returned, the rebalance they start being
:mod:`~rackwise.groups.classic_rebalance`'s.

Goals
    A member without an id gets one and joins; a known member joins again; either starts or
    completes a rebalance, and its JoinGroup waits for the generation it joins.

Constraints
    * ``now_ms`` is an argument, and the JoinGroup's waiter an opaque value kept on the
      member (answered through :class:`~rackwise.groups.classic_effects.Answer`).
    * A group holds at most ``group.max.size`` members (GROUP_MAX_SIZE_REACHED), a member
      must share a protocol with it (INCONSISTENT_GROUP_PROTOCOL) and a Dead group answers
      COORDINATOR_NOT_AVAILABLE.
    * JoinGroup v4+ from an unknown member is answered MEMBER_ID_REQUIRED with its new id,
      which it must join with before its session times out (KIP-394); a new member's
      JoinGroup waits at most 5 minutes (``classicGroupNewMemberJoinTimeoutMs``) for its
      generation.
    * Static members (``group.instance.id``, KIP-345) are kept across rebalances and fenced
      by id (FENCED_INSTANCE_ID); one that joins again with an unknown member id takes its
      old id's place, and in a Stable group whose protocol stays the same it keeps the
      generation and its assignment (stored first; the old id comes back if that fails).

Worked example
    A consumer sends JoinGroup v9 to group ``billing`` with no member id: the group is
    created (Empty, stored) and the answer is MEMBER_ID_REQUIRED with ``<client id>-<uuid>``,
    whose session starts. Its JoinGroup with that id adds it as a member and prepares the
    group's first rebalance, which waits ``group.initial.rebalance.delay.ms``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Final

from rackwise.common.error_codes import (
    COORDINATOR_NOT_AVAILABLE,
    FENCED_INSTANCE_ID,
    GROUP_MAX_SIZE_REACHED,
    INCONSISTENT_GROUP_PROTOCOL,
    MEMBER_ID_REQUIRED,
    NONE,
    REBALANCE_IN_PROGRESS,
    UNKNOWN_MEMBER_ID,
)
from rackwise.groups.classic import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    UNKNOWN_MEMBER,
    ClassicGroup,
    Member,
    Protocols,
    generate_member_id,
    stored,
)
from rackwise.groups.classic_effects import (
    Answer,
    CancelTimer,
    Effect,
    JoinRequest,
    Store,
    Waiter,
    join_answer,
    sync_answer,
)
from rackwise.groups.classic_rebalance import Rebalancer, generation_answer
from rackwise.groups.group_metadata import encode_metadata

LOG: Final = logging.getLogger("rackwise.coordinator")

NEW_MEMBER_JOIN_TIMEOUT_MS: Final = 5 * 60 * 1000
"""Kafka's ``classicGroupNewMemberJoinTimeoutMs``: how long a new member's JoinGroup may wait."""


class JoinRules:
    """The JoinGroup rules (module docstring), with ``group.max.size`` and the rebalances they
    start."""

    def __init__(
        self,
        max_size: int,
        rebalancer: Rebalancer,
        new_uuid: Callable[[], uuid.UUID] = uuid.uuid4,
    ) -> None:
        self.max_size = max_size
        self.new_uuid = new_uuid
        self.rebalancer = rebalancer

    def join(
        self, group: ClassicGroup | None, request: JoinRequest, waiter: Waiter, now_ms: int
    ) -> tuple[ClassicGroup | None, list[Effect]]:
        """A JoinGroup to ``group`` (None if its partition has no such group): the group it
        joins (a new one for a new member), and the effects; ``waiter`` is answered now or
        once the generation is formed."""
        unknown = request.member_id == UNKNOWN_MEMBER
        created = group is None
        if group is None:
            if not unknown:
                return None, [Answer(waiter, join_answer(UNKNOWN_MEMBER_ID, request.member_id))]
            group = ClassicGroup(request.group_id, state_timestamp_ms=now_ms)
        if not self._accepts(group, request.member_id):
            group.remove(request.member_id)
            return group, [Answer(waiter, join_answer(GROUP_MAX_SIZE_REACHED, UNKNOWN_MEMBER))]
        if unknown:
            effects = self._join_new(group, request, waiter, now_ms)
        else:
            effects = self._join_existing(group, request, waiter, now_ms)
        if created:
            effects.append(self.rebalancer.store(group, "a new group's metadata"))
        return group, effects

    def _accepts(self, group: ClassicGroup, member_id: str) -> bool:
        limit = self.max_size
        if group.state in (EMPTY, DEAD):
            return True
        member = group.members.get(member_id)
        if group.state == PREPARING_REBALANCE:
            return (
                member is not None and member.awaiting_join
            ) or group.awaiting_join_count < limit
        return member is not None or len(group.members) < limit

    def _join_new(
        self, group: ClassicGroup, request: JoinRequest, waiter: Waiter, now_ms: int
    ) -> list[Effect]:
        refused = _join_refusal(group, request)
        if refused != NONE:
            return [Answer(waiter, join_answer(refused, UNKNOWN_MEMBER))]
        member_id = generate_member_id(request.client_id, request.instance_id, self.new_uuid)
        if request.instance_id is not None:
            old = group.static_member_id(request.instance_id)
            if old is None:
                return self._add_member(group, request, member_id, waiter, now_ms)
            return self._replace_static(group, request, old, member_id, waiter, now_ms)
        if request.version >= 4:
            group.pending_join.add(member_id)
            session = self.rebalancer.session(group, member_id, request.session_timeout_ms)
            return [session, Answer(waiter, join_answer(MEMBER_ID_REQUIRED, member_id))]
        return self._add_member(group, request, member_id, waiter, now_ms)

    def _join_existing(
        self, group: ClassicGroup, request: JoinRequest, waiter: Waiter, now_ms: int
    ) -> list[Effect]:
        member_id = request.member_id
        refused = _join_refusal(group, request)
        if refused != NONE:
            return [Answer(waiter, join_answer(refused, member_id))]
        if member_id in group.pending_join:
            return self._add_member(group, request, member_id, waiter, now_ms)
        code = group.member_error(member_id, request.instance_id)
        if code != NONE:
            return [Answer(waiter, join_answer(code, member_id))]
        member = group.members[member_id]
        same = member.protocols == request.protocols
        if group.state == PREPARING_REBALANCE or (
            group.state in (COMPLETING_REBALANCE, STABLE)
            and (not same or (group.state == STABLE and group.is_leader(member_id)))
        ):
            return self._update_member(group, member, request, waiter, now_ms)
        if group.state in (COMPLETING_REBALANCE, STABLE):
            # The same metadata again (a lost answer, or a follower with nothing new): this
            # generation as it is.
            leader = group.is_leader(member_id) and group.state == COMPLETING_REBALANCE
            return [Answer(waiter, generation_answer(group, member_id, leader))]
        return [Answer(waiter, join_answer(UNKNOWN_MEMBER_ID, member_id))]  # Empty: start over

    def _add_member(
        self,
        group: ClassicGroup,
        request: JoinRequest,
        member_id: str,
        waiter: Waiter,
        now_ms: int,
    ) -> list[Effect]:
        member = Member(
            member_id,
            request.instance_id,
            request.client_id,
            request.client_host,
            request.rebalance_timeout_ms,
            request.session_timeout_ms,
            request.protocol_type,
            request.protocols,
            is_new=True,
        )
        if group.state == PREPARING_REBALANCE and group.previous_state == EMPTY:
            group.new_member_added = True
        group.add(member, waiter)
        effects: list[Effect] = [
            self.rebalancer.session(group, member_id, NEW_MEMBER_JOIN_TIMEOUT_MS)
        ]
        return effects + self.rebalancer.rebalance_or_complete(
            group, f"adding member {member_id}", now_ms
        )

    def _replace_static(
        self,
        group: ClassicGroup,
        request: JoinRequest,
        old_id: str,
        new_id: str,
        waiter: Waiter,
        now_ms: int,
    ) -> list[Effect]:
        """A known static member joins with an unknown member id: it takes over its old id's
        place (fencing the old id), and a Stable group whose protocol stays the same keeps its
        generation and assignment (Kafka's ``updateStaticMemberThenRebalanceOrCompleteJoin``)."""
        instance_id = request.instance_id
        assert instance_id is not None
        LOG.info(
            "group %s: static member %s joins again as %s, replacing %s",
            group.group_id,
            instance_id,
            new_id,
            old_id,
        )
        leader_before = group.leader
        member, old_join, old_sync = group.replace_static_member(instance_id, old_id, new_id)
        effects: list[Effect] = [
            Answer(old_join, join_answer(FENCED_INSTANCE_ID, old_id)),
            Answer(old_sync, sync_answer(FENCED_INSTANCE_ID)),
            CancelTimer(("heartbeat", group.group_id, old_id)),
            self.rebalancer.session(group, member.member_id, member.session_timeout_ms),
        ]
        before = (member.protocols, member.rebalance_timeout_ms, member.session_timeout_ms)
        group.update_member(
            member,
            request.protocols,
            request.rebalance_timeout_ms,
            request.session_timeout_ms,
            waiter,
        )
        why = f"static member {instance_id} joins as {new_id}"
        if group.state == STABLE:
            if group.protocol_name != group.select_protocol():
                return effects + self.rebalancer.rebalance_or_complete(
                    group, why + " with other protocols", now_ms
                )

            def record() -> bytes:
                assignment = {m.member_id: m.assignment for m in group.members.values()}
                return encode_metadata(stored(group, assignment))

            generation = group.generation

            def then(code: int, now_ms: int) -> list[Effect]:
                if group.members.get(member.member_id) is not member or (
                    group.state != STABLE or group.generation != generation
                ):
                    # replaced, removed or rebalanced meanwhile: its JoinGroup was answered
                    # then, or the rebalance it is part of answers it (and stores its id)
                    return []
                return self._static_stored(
                    group, request, old_id, member, before, leader_before, code
                )

            return [*effects, Store(group.group_id, record, then)]
        if group.state == COMPLETING_REBALANCE:
            # the leader may already hold the old id's subscription: assign again
            return effects + self.rebalancer.prepare_rebalance(group, why, now_ms)
        return effects + self.rebalancer.maybe_complete_join(group, now_ms)

    def _static_stored(
        self,
        group: ClassicGroup,
        request: JoinRequest,
        old_id: str,
        member: Member,
        before: tuple[Protocols, int, int],
        leader_before: str | None,
        code: int,
    ) -> list[Effect]:
        """A Stable group's replaced static member was stored (``code``): answer its JoinGroup
        with the current generation; if the store failed, put the old id back."""
        waiter = member.join_waiter
        if code != NONE:
            LOG.warning(
                "group %s: storing static member %s failed (error %d): %s is its id again",
                group.group_id,
                member.member_id,
                code,
                old_id,
            )
            effects: list[Effect] = []
            protocols, rebalance_ms, session_ms = before
            group.update_member(member, protocols, rebalance_ms, session_ms, None)
            if request.instance_id is not None and member.member_id in group.members:
                restored_member, _, _ = group.replace_static_member(
                    request.instance_id, member.member_id, old_id
                )
                effects.append(CancelTimer(("heartbeat", group.group_id, member.member_id)))
                effects.append(
                    self.rebalancer.session(
                        group, restored_member.member_id, restored_member.session_timeout_ms
                    )
                )
            answer = join_answer(
                code,
                UNKNOWN_MEMBER,
                generation_id=group.generation,
                protocol_type=group.protocol_type,
                protocol_name=group.protocol_name,
                leader=leader_before or "",
            )
            return [*effects, Answer(waiter, answer)]
        if waiter is None:
            return []  # the group moved on (a rebalance answered it)
        if request.version >= 9:  # KIP-814: the leader keeps its assignment, skipping it
            leader = group.is_leader(member.member_id)
            answer = generation_answer(group, member.member_id, leader)
            answer["skip_assignment"] = leader
        else:
            answer = generation_answer(group, member.member_id, False)
            answer["leader"] = leader_before or ""
        group.set_join_waiter(member, None)
        return [Answer(waiter, answer)]

    def _update_member(
        self,
        group: ClassicGroup,
        member: Member,
        request: JoinRequest,
        waiter: Waiter,
        now_ms: int,
    ) -> list[Effect]:
        effects: list[Effect] = []
        if member.awaiting_join:  # a JoinGroup sent again (on a new connection): the newer wins
            effects.append(
                Answer(member.join_waiter, join_answer(REBALANCE_IN_PROGRESS, member.member_id))
            )
            group.set_join_waiter(member, None)
        group.update_member(
            member,
            request.protocols,
            request.rebalance_timeout_ms,
            request.session_timeout_ms,
            waiter,
        )
        return effects + self.rebalancer.rebalance_or_complete(
            group, f"member {member.member_id} joins again", now_ms
        )


def _join_refusal(group: ClassicGroup, request: JoinRequest) -> int:
    """COORDINATOR_NOT_AVAILABLE for a Dead group, INCONSISTENT_GROUP_PROTOCOL for a member
    that shares no protocol with it, else NONE."""
    if group.state == DEAD:
        return COORDINATOR_NOT_AVAILABLE
    names = [name for name, _ in request.protocols]
    if not group.supports_protocols(request.protocol_type, names):
        return INCONSISTENT_GROUP_PROTOCOL
    return NONE
