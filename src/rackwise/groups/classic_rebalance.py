"""The rules of a classic group's rebalances, SyncGroups, sessions, Heartbeats and LeaveGroups
(Kafka's ``GroupMetadataManager``: ``prepareRebalance``, ``completeClassicGroupJoin``,
``classicGroupSync``, ``classicGroupHeartbeat``, ``classicGroupLeave`` and their timers),
decided on values: each rule changes the group and returns the
:mod:`~rackwise.groups.classic_effects` to carry out, and is given the time it runs at.

Goals
    A rebalance ends with a generation every rejoined member is answered, its leader with the
    members' subscriptions; the leader's assignment reaches every member once stored; a
    member that stops heartbeating, or sends no SyncGroup in time, leaves the group and starts
    a rebalance.

Constraints
    * No clock and no event loop here: ``now_ms`` is an argument; waiting requests are
      opaque waiters, answered through :class:`~rackwise.groups.classic_effects.Answer`; timers
      are :class:`~rackwise.groups.classic_effects.StartTimer` values whose action is a rule.
    * A new group's first rebalance waits ``group.initial.rebalance.delay.ms``, extended as
      members keep arriving, up to the rebalance timeout (Kafka's ``InitialDelayedJoin``);
      any other waits until every member has rejoined or the largest
      ``rebalance.timeout.ms`` ran out, and then drops the members that did not rejoin
      (static members stay).
    * Each member's session (``session.timeout.ms``) runs from its last Heartbeat, JoinGroup
      answer or SyncGroup answer; a member waiting on a JoinGroup or SyncGroup counts as alive
      unless it is new (Kafka's ``hasSatisfiedHeartbeat``).
    * The leader's SyncGroup stores the generation's assignment (``GroupMetadataValue``);
      the waiting SyncGroups are answered once the in-sync replicas have it, or, if it fails,
      with its error and a rebalance.

Algorithm
    :meth:`Rebalancer.prepare_rebalance` moves the group to PreparingRebalance and starts the
    ``join`` timer (or completes at once if everyone has joined);
    :meth:`Rebalancer.complete_join` forms the next generation, answers each waiting
    JoinGroup and starts the ``sync`` timer; the SyncGroups and the stored assignment make it
    Stable.

Worked example
    Generation 3 of ``billing`` has members ``a`` (leader) and ``b``; ``b``'s session runs
    out. Its timer fires :meth:`Rebalancer.expire_member`: ``b`` is dropped and the group
    prepares a rebalance. ``a`` rejoins on its next Heartbeat's REBALANCE_IN_PROGRESS; as it
    is the only member, the join completes at once: generation 4 with ``a`` alone.
"""

from __future__ import annotations

import logging
from typing import Any, Final

from rackwise.common.error_codes import (
    COORDINATOR_NOT_AVAILABLE,
    NONE,
    NOT_COORDINATOR,
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
    stored,
)
from rackwise.groups.classic_effects import (
    Answer,
    CancelTimer,
    Effect,
    StartTimer,
    Store,
    Waiter,
    join_answer,
    sync_answer,
)
from rackwise.groups.group_metadata import encode_metadata

LOG: Final = logging.getLogger("rackwise.coordinator")


class Rebalancer:
    """The rebalance, sync, session and leave rules (module docstring), with the
    ``group.initial.rebalance.delay.ms`` they wait for a new group's first rebalance."""

    def __init__(self, initial_delay_ms: int) -> None:
        self.initial_delay_ms = initial_delay_ms

    # ---- rebalances ---------------------------------------------------------------------------

    def rebalance_or_complete(self, group: ClassicGroup, why: str, now_ms: int) -> list[Effect]:
        if group.can_rebalance():
            return self.prepare_rebalance(group, why, now_ms)
        return self.maybe_complete_join(group, now_ms)

    def maybe_complete_join(self, group: ClassicGroup, now_ms: int) -> list[Effect]:
        if (
            group.state == PREPARING_REBALANCE
            and group.previous_state != EMPTY  # the first rebalance waits for its delay
            and group.has_all_members_joined()
        ):
            return self.complete_join(group, now_ms)
        return []

    def prepare_rebalance(self, group: ClassicGroup, why: str, now_ms: int) -> list[Effect]:
        effects: list[Effect] = []
        if group.state == COMPLETING_REBALANCE:
            effects += self.propagate(group, REBALANCE_IN_PROGRESS, reset=True)
        group.pending_sync.clear()
        effects.append(CancelTimer(("sync", group.group_id)))
        initial = group.state == EMPTY
        LOG.info(
            "group %s: preparing to rebalance in state %s with old generation %d (%s)",
            group.group_id,
            group.state,
            group.generation,
            why,
        )
        group.transition_to(PREPARING_REBALANCE, now_ms)
        if initial:
            delay = self.initial_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            effects.append(self._initial_delay(group, delay, remaining))
        elif group.has_all_members_joined():
            effects += self.complete_join(group, now_ms)
        else:
            effects.append(self._join_deadline(group))
        return effects

    def _initial_delay(self, group: ClassicGroup, delay_ms: int, remaining_ms: int) -> StartTimer:
        def fire(now_ms: int) -> list[Effect]:
            if group.new_member_added and remaining_ms != 0:
                group.new_member_added = False
                next_delay = min(self.initial_delay_ms, remaining_ms)
                return [self._initial_delay(group, next_delay, max(remaining_ms - delay_ms, 0))]
            return self.complete_join(group, now_ms)

        return StartTimer(("join", group.group_id), delay_ms, fire)

    def _join_deadline(self, group: ClassicGroup) -> StartTimer:
        return StartTimer(
            ("join", group.group_id),
            group.rebalance_timeout_ms(),
            lambda now_ms: self.complete_join(group, now_ms),
        )

    def complete_join(self, group: ClassicGroup, now_ms: int) -> list[Effect]:
        effects: list[Effect] = [CancelTimer(("join", group.group_id))]
        gone = [m for m in group.not_yet_rejoined() if m.instance_id is None]
        for member in gone:
            group.remove(member.member_id)
            effects.append(CancelTimer(("heartbeat", group.group_id, member.member_id)))
        if gone:
            LOG.info(
                "group %s: removed members that did not join again: %s",
                group.group_id,
                ", ".join(m.member_id for m in gone),
            )
        if group.state == DEAD:
            return effects
        if not group.maybe_elect_new_joined_leader() and group.members:
            effects.append(self._join_deadline(group))  # nobody rejoined: wait for sessions
            return effects
        group.init_next_generation(now_ms)
        if group.state == EMPTY:
            LOG.info("group %s: generation %d is empty", group.group_id, group.generation)
            effects.append(self.store(group, "an empty group's metadata"))
            return effects
        LOG.info(
            "group %s: generation %d formed with %d members (protocol %s)",
            group.group_id,
            group.generation,
            len(group.members),
            group.protocol_name,
        )
        for member in list(group.members.values()):
            if member.join_waiter is not None:
                answer = generation_answer(
                    group, member.member_id, group.is_leader(member.member_id)
                )
                effects.append(Answer(member.join_waiter, answer))
                group.set_join_waiter(member, None)
            effects.append(self.session(group, member.member_id, member.session_timeout_ms))
            member.is_new = False
            group.pending_sync.add(member.member_id)
        generation = group.generation
        effects.append(
            StartTimer(
                ("sync", group.group_id),
                group.rebalance_timeout_ms(),
                lambda now_ms: self._expire_sync(group, generation, now_ms),
            )
        )
        return effects

    def _expire_sync(self, group: ClassicGroup, generation: int, now_ms: int) -> list[Effect]:
        if generation != group.generation or group.state not in (COMPLETING_REBALANCE, STABLE):
            return []
        if not group.pending_sync:
            return []
        missing = sorted(group.pending_sync)
        effects: list[Effect] = []
        for member_id in missing:
            member = group.members.get(member_id)
            if member is not None:
                effects += self.drop_member(group, member, UNKNOWN_MEMBER_ID)
        return effects + self.prepare_rebalance(
            group, f"members {', '.join(missing)} sent no SyncGroup in time", now_ms
        )

    # ---- SyncGroup ----------------------------------------------------------------------------

    def sync(
        self,
        group: ClassicGroup | None,
        member_id: str,
        instance_id: str | None,
        generation: int,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: dict[str, bytes],
        waiter: Waiter,
    ) -> list[Effect]:
        """A SyncGroup: ``waiter`` answered now, or kept as the member's until the leader's
        assignment is stored."""
        if group is None or group.state == EMPTY:
            return [Answer(waiter, sync_answer(UNKNOWN_MEMBER_ID))]
        code = group.sync_error(member_id, instance_id, generation, protocol_type, protocol_name)
        if code != NONE:
            return [Answer(waiter, sync_answer(code))]
        member = group.members[member_id]
        if group.state == STABLE:
            effects = self._synced(group, member_id)
            return [*effects, Answer(waiter, assignment_answer(group, member))]
        effects = [Answer(member.sync_waiter, sync_answer(REBALANCE_IN_PROGRESS))]
        member.sync_waiter = waiter
        effects += self._synced(group, member_id)
        if group.is_leader(member_id):
            LOG.info(
                "group %s: assignment for generation %d received from the leader %s",
                group.group_id,
                generation,
                member_id,
            )
            full = {m: assignments.get(m, b"") for m in group.members}
            effects.append(
                Store(
                    group.group_id,
                    lambda: encode_metadata(stored(group, full)),
                    lambda code, now_ms: self._assignment_stored(
                        group, generation, full, code, now_ms
                    ),
                )
            )
        return effects

    @staticmethod
    def _synced(group: ClassicGroup, member_id: str) -> list[Effect]:
        group.pending_sync.discard(member_id)
        if group.state in (DEAD, EMPTY, PREPARING_REBALANCE) or not group.pending_sync:
            return [CancelTimer(("sync", group.group_id))]
        return []

    def _assignment_stored(
        self, group: ClassicGroup, generation: int, full: dict[str, bytes], code: int, now_ms: int
    ) -> list[Effect]:
        if group.state != COMPLETING_REBALANCE or group.generation != generation:
            return []  # the group moved on while the record was written
        if code != NONE:
            LOG.warning(
                "group %s: storing generation %d failed (error %d): rebalancing",
                group.group_id,
                generation,
                code,
            )
            effects = self.propagate(group, code, reset=True)
            return effects + self.rebalance_or_complete(
                group, "the assignment could not be stored", now_ms
            )
        for member_id, assignment in full.items():
            if member_id in group.members:
                group.members[member_id].assignment = assignment
        effects = self.propagate(group, NONE)
        group.transition_to(STABLE, now_ms)
        return effects

    def propagate(self, group: ClassicGroup, code: int, *, reset: bool = False) -> list[Effect]:
        """Answer every waiting SyncGroup: the member's assignment, or ``code``."""
        effects: list[Effect] = []
        for member in group.members.values():
            if reset:
                member.assignment = b""
            if member.sync_waiter is None:
                continue
            ok = code == NONE
            answer = assignment_answer(group, member) if ok else sync_answer(code)
            effects.append(Answer(member.sync_waiter, answer))
            member.sync_waiter = None
            effects.append(self.session(group, member.member_id, member.session_timeout_ms))
        return effects

    # ---- Heartbeat and LeaveGroup -------------------------------------------------------------

    def heartbeat(
        self, group: ClassicGroup | None, member_id: str, instance_id: str | None, generation: int
    ) -> tuple[int, list[Effect]]:
        """A Heartbeat's error code; a member's session starts again."""
        if group is None:
            return UNKNOWN_MEMBER_ID, []
        code = group.heartbeat_error(member_id, instance_id, generation)
        if code in (NONE, REBALANCE_IN_PROGRESS):
            member = group.members[member_id]
            return code, [self.session(group, member_id, member.session_timeout_ms)]
        return code, []

    def leave(
        self, group: ClassicGroup | None, leaving: list[tuple[str, str | None]], now_ms: int
    ) -> tuple[int, list[int], list[Effect]]:
        """(the group's error, each leaving member's error) for (member id, group.instance.id)
        pairs (Kafka's ``classicGroupLeaveToClassicGroup``)."""
        if group is None:  # Kafka: UnknownMemberIdException("Group ... not found."), no members
            return UNKNOWN_MEMBER_ID, [], []
        if group.state == DEAD:
            return COORDINATOR_NOT_AVAILABLE, [], []
        codes: list[int] = []
        effects: list[Effect] = []
        for member_id, instance_id in leaving:
            if member_id == UNKNOWN_MEMBER:
                static = group.static_member_id(instance_id) if instance_id is not None else None
                if static is None:
                    codes.append(UNKNOWN_MEMBER_ID)
                    continue
                member_id = static
            elif member_id in group.pending_join:
                group.remove(member_id)
                effects.append(CancelTimer(("heartbeat", group.group_id, member_id)))
                codes.append(NONE)
                continue
            else:
                code = group.member_error(member_id, instance_id)
                if code != NONE:
                    codes.append(code)
                    continue
            LOG.info("group %s: member %s leaves", group.group_id, member_id)
            effects += self.drop_member(group, group.members[member_id], UNKNOWN_MEMBER_ID)
            codes.append(NONE)
        if NONE in codes:
            if group.state in (STABLE, COMPLETING_REBALANCE):
                effects += self.rebalance_or_complete(group, "members left", now_ms)
            elif group.state == PREPARING_REBALANCE:
                effects += self.maybe_complete_join(group, now_ms)
        return NONE, codes, effects

    # ---- sessions -----------------------------------------------------------------------------

    def session(self, group: ClassicGroup, member_id: str, timeout_ms: int) -> StartTimer:
        """Expire ``member_id`` (a member, or a pending one) ``timeout_ms`` from now unless
        its session starts again first."""
        return StartTimer(
            ("heartbeat", group.group_id, member_id),
            timeout_ms,
            lambda now_ms: self.expire_member(group, member_id, now_ms),
        )

    def expire_member(self, group: ClassicGroup, member_id: str, now_ms: int) -> list[Effect]:
        if group.state == DEAD:
            return []
        if member_id in group.pending_join:
            LOG.info("group %s: pending member %s expired", group.group_id, member_id)
            group.remove(member_id)
            if group.state == PREPARING_REBALANCE and group.has_all_members_joined():
                return self.complete_join(group, now_ms)
            return []
        member = group.members.get(member_id)
        if member is None or member.has_satisfied_heartbeat():
            return []
        LOG.info("group %s: member %s failed its session; removing it", group.group_id, member_id)
        effects = self.drop_member(group, member, UNKNOWN_MEMBER_ID)
        if group.state in (STABLE, COMPLETING_REBALANCE):
            effects += self.rebalance_or_complete(group, f"member {member_id} expired", now_ms)
        elif group.state == PREPARING_REBALANCE and group.has_all_members_joined():
            effects += self.complete_join(group, now_ms)
        return effects

    @staticmethod
    def drop_member(group: ClassicGroup, member: Member, code: int) -> list[Effect]:
        """Remove a member, answering its waiting JoinGroup or SyncGroup with ``code``."""
        effects: list[Effect] = []
        if member.join_waiter is not None:
            effects.append(Answer(member.join_waiter, join_answer(code, UNKNOWN_MEMBER)))
            group.set_join_waiter(member, None)
        effects.append(Answer(member.sync_waiter, sync_answer(code)))
        member.sync_waiter = None
        group.remove(member.member_id)
        effects.append(CancelTimer(("heartbeat", group.group_id, member.member_id)))
        return effects

    @staticmethod
    def ended(group: ClassicGroup) -> list[Effect]:
        """The group's partition is no longer loaded here: it is Dead, and its waiting
        requests are answered NOT_COORDINATOR."""
        effects: list[Effect] = []
        for member in group.members.values():
            effects.append(
                Answer(member.join_waiter, join_answer(NOT_COORDINATOR, member.member_id))
            )
            effects.append(Answer(member.sync_waiter, sync_answer(NOT_COORDINATOR)))
            member.join_waiter = member.sync_waiter = None
        group.state = DEAD
        return effects

    # ---- storing ------------------------------------------------------------------------------

    @staticmethod
    def store(group: ClassicGroup, what: str) -> Store:
        """Store the group as it is now; a failure is only logged."""
        record = encode_metadata(stored(group))

        def then(code: int, now_ms: int) -> list[Effect]:
            if code != NONE:
                LOG.warning("group %s: storing %s failed (error %d)", group.group_id, what, code)
            return []

        return Store(group.group_id, lambda: record, then)


def generation_answer(group: ClassicGroup, member_id: str, leader: bool) -> dict[str, Any]:
    """The JoinGroup answer of the group's current generation; the leader's lists the members
    with their metadata."""
    members = [
        {"member_id": m, "group_instance_id": i, "metadata": data}
        for m, i, data in (group.joined_members() if leader else [])
    ]
    return join_answer(
        NONE,
        member_id,
        generation_id=group.generation,
        protocol_type=group.protocol_type,
        protocol_name=group.protocol_name,
        leader=group.leader or "",
        members=members,
    )


def assignment_answer(group: ClassicGroup, member: Member) -> dict[str, Any]:
    """The SyncGroup answer with the member's assignment."""
    return sync_answer(
        NONE,
        protocol_type=group.protocol_type,
        protocol_name=group.protocol_name,
        assignment=member.assignment,
    )
