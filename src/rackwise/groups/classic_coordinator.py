"""The classic groups of one ``__consumer_offsets`` partition, pure (Kafka's
``GroupMetadataManager`` for classic groups, as run by its ``CoordinatorRuntime``): requests,
the time, loaded records, fired timers and finished writes in; answers, records to write and
timers to set out.

Goals
    :class:`ClassicGroups` is what a coordinator, or a simulation with its own clock, drives:
    JoinGroup, SyncGroup, Heartbeat and LeaveGroup (the rules of
    :mod:`rackwise.groups.classic_joins` and :mod:`rackwise.groups.classic_rebalance`), a
    partition's stored groups coming back when it loads (:meth:`ClassicGroups.load`), and
    its groups ending when it is no longer led here (:meth:`ClassicGroups.unload`).

Constraints
    * No clock, event loop or log here. Each call returns a :class:`ClassicOutcome`: the
      waiting requests to answer, the timers to set (a key and a delay; None cancels) and the
      records to append. The driver calls :meth:`ClassicGroups.fire` when a timer it set is
      due and :meth:`ClassicGroups.written` when a write's acks are in, with the time then.
    * A timer acts only if its group is still the live one of the partition (a group deleted
      and created again does not inherit its predecessor's timers); a write's continuation
      runs whatever became of the group, as its waiting requests expect an answer.
    * Waiting requests are opaque :data:`~rackwise.groups.classic_effects.Waiter` values;
      new members' ids take their UUID from ``new_uuid`` (random unless a simulation seeds it).

Worked example
    ``join(JoinRequest(group "billing", no member id, v9), w1, t)`` creates the group and
    answers ``w1`` MEMBER_ID_REQUIRED; the outcome also sets the timer
    ``("heartbeat", "billing", id)`` for the session, and writes the new group's
    ``GroupMetadataValue``. The join with that id sets ``("join", "billing")`` for
    ``group.initial.rebalance.delay.ms``; ``fire(("join", "billing"), t + delay)`` forms
    generation 1 and answers the second JoinGroup's waiter.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from rackwise.common.error_codes import REBALANCE_IN_PROGRESS
from rackwise.groups.classic import DEAD, ClassicGroup, restored
from rackwise.groups.classic_effects import (
    Answer,
    CancelTimer,
    Effect,
    JoinRequest,
    StartTimer,
    TimerKey,
    Waiter,
    join_answer,
    sync_answer,
)
from rackwise.groups.classic_joins import JoinRules
from rackwise.groups.classic_rebalance import Rebalancer
from rackwise.groups.group_metadata import decode_metadata
from rackwise.groups.offsets import OffsetsFormatError, encode_group_key

LOG: Final = logging.getLogger("rackwise.coordinator")

KeyValue = tuple[bytes, bytes | None]


@dataclass(frozen=True, slots=True)
class SetTimer:
    """Call :meth:`ClassicGroups.fire` with ``key`` after ``delay_ms`` (in place of the timer
    of the same key); None cancels the timer of ``key``."""

    key: TimerKey
    delay_ms: int | None


@dataclass(frozen=True, slots=True)
class Write:
    """Append ``records`` to the partition; then :meth:`ClassicGroups.written` with
    ``token`` and the error code."""

    token: int
    group_id: str
    records: tuple[KeyValue, ...]


@dataclass(slots=True)
class ClassicOutcome:
    """What one call decided (module docstring), each list in the order decided."""

    answers: list[tuple[Waiter, dict[str, Any]]] = field(default_factory=list)
    timers: list[SetTimer] = field(default_factory=list)
    writes: list[Write] = field(default_factory=list)


_Action = Callable[[int], list[Effect]]
_Then = Callable[[int, int], list[Effect]]


class ClassicGroups:
    """One partition's classic groups (module docstring)."""

    def __init__(
        self,
        initial_rebalance_delay_ms: int,
        max_size: int,
        new_uuid: Callable[[], uuid.UUID] = uuid.uuid4,
    ) -> None:
        self.groups: dict[str, ClassicGroup] = {}
        self._rebalancer = Rebalancer(initial_rebalance_delay_ms)
        self._joins = JoinRules(max_size, self._rebalancer, new_uuid)
        self._timers: dict[TimerKey, tuple[ClassicGroup, _Action]] = {}
        self._writes: dict[int, tuple[ClassicGroup, _Then]] = {}
        self._next_token = 0

    # ---- the partition ------------------------------------------------------------------------

    def load(self, stored: Mapping[str, bytes]) -> ClassicOutcome:
        """The groups a loaded partition stores (group id -> ``GroupMetadataValue``) come back,
        Stable or Empty, each member's session running from now; one that does not parse is
        logged and left out."""
        out = ClassicOutcome()
        for group_id, value in stored.items():
            try:
                group = restored(group_id, decode_metadata(value))
            except (OffsetsFormatError, ValueError) as e:
                LOG.warning("group %s: its stored metadata does not load: %s", group_id, e)
                continue
            self.groups[group_id] = group
            sessions: list[Effect] = [
                self._rebalancer.session(group, member.member_id, member.session_timeout_ms)
                for member in group.members.values()
            ]
            self._carry(group, sessions, out)
        return out

    def unload(self) -> ClassicOutcome:
        """The partition is no longer led here: every group ends (Dead, its waiting requests
        answered NOT_COORDINATOR) and every timer is cancelled."""
        out = ClassicOutcome()
        for group in self.groups.values():
            self._carry(group, self._rebalancer.ended(group), out)
        out.timers.extend(SetTimer(key, None) for key in self._timers)
        self._timers.clear()
        return out

    def forget(self, group_id: str) -> ClassicOutcome:
        """The group was deleted (DeleteGroups, or expired): Dead, its timers cancelled."""
        out = ClassicOutcome()
        group = self.groups.pop(group_id, None)
        if group is not None:
            group.state = DEAD
            for key in [k for k in self._timers if k[1] == group_id]:
                del self._timers[key]
                out.timers.append(SetTimer(key, None))
        return out

    def release(self, group_id: str) -> ClassicOutcome:
        """The group becomes a consumer group (Kafka's ``convertToConsumerGroup``): its
        waiting JoinGroups and SyncGroups are answered REBALANCE_IN_PROGRESS, so that the
        members rejoin the consumer group, and it is forgotten here."""
        group = self.groups.get(group_id)
        out = self.forget(group_id)
        for member in [] if group is None else group.members.values():
            for waiter, answer in (
                (member.join_waiter, join_answer(REBALANCE_IN_PROGRESS, member.member_id)),
                (member.sync_waiter, sync_answer(REBALANCE_IN_PROGRESS)),
            ):
                if waiter is not None:
                    out.answers.append((waiter, answer))
            member.join_waiter = member.sync_waiter = None
        return out

    def adopt(self, group: ClassicGroup, now_ms: int, rebalance: bool = True) -> ClassicOutcome:
        """A consumer group became ``group`` (Kafka's ``convertToClassicGroup``, its record
        written): each member's session runs and, after a member left (``rebalance``), a
        rebalance is prepared."""
        self.groups[group.group_id] = group
        effects: list[Effect] = [
            self._rebalancer.session(group, m.member_id, m.session_timeout_ms)
            for m in group.members.values()
        ]
        if rebalance:
            why = f"Downgrade group {group.group_id} from consumer to classic."
            effects += self._rebalancer.prepare_rebalance(group, why, now_ms)
        return self._carry(group, effects, ClassicOutcome())

    # ---- the requests -------------------------------------------------------------------------

    def join(self, request: JoinRequest, waiter: Waiter, now_ms: int) -> ClassicOutcome:
        """A JoinGroup; ``waiter`` is answered in this outcome or a later one."""
        current = self.groups.get(request.group_id)
        group, effects = self._joins.join(current, request, waiter, now_ms)
        if group is not None:
            self.groups[request.group_id] = group
        return self._carry(group, effects, ClassicOutcome())

    def sync(
        self,
        group_id: str,
        member_id: str,
        instance_id: str | None,
        generation: int,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: dict[str, bytes],
        waiter: Waiter,
    ) -> ClassicOutcome:
        """A SyncGroup; ``waiter`` is answered now, or once the leader's assignment is stored."""
        group = self.groups.get(group_id)
        effects = self._rebalancer.sync(
            group,
            member_id,
            instance_id,
            generation,
            protocol_type,
            protocol_name,
            assignments,
            waiter,
        )
        return self._carry(group, effects, ClassicOutcome())

    def heartbeat(
        self, group_id: str, member_id: str, instance_id: str | None, generation: int
    ) -> tuple[int, ClassicOutcome]:
        """A Heartbeat's error code; the member's session starts again."""
        group = self.groups.get(group_id)
        code, effects = self._rebalancer.heartbeat(group, member_id, instance_id, generation)
        return code, self._carry(group, effects, ClassicOutcome())

    def leave(
        self, group_id: str, leaving: list[tuple[str, str | None]], now_ms: int
    ) -> tuple[int, list[int], ClassicOutcome]:
        """(the group's error, each leaving member's error) for (member id, group.instance.id)
        pairs."""
        group = self.groups.get(group_id)
        code, codes, effects = self._rebalancer.leave(group, leaving, now_ms)
        return code, codes, self._carry(group, effects, ClassicOutcome())

    # ---- what the driver reports back ---------------------------------------------------------

    def fire(self, key: TimerKey, now_ms: int) -> ClassicOutcome:
        """The timer ``key`` is due: its action, if its group is still the live one."""
        out = ClassicOutcome()
        entry = self._timers.pop(key, None)
        if entry is None:
            return out
        group, action = entry
        if self.groups.get(group.group_id) is not group:
            return out
        return self._carry(group, action(now_ms), out)

    def written(self, token: int, code: int, now_ms: int) -> ClassicOutcome:
        """The write ``token`` ended with ``code``: what follows it."""
        entry = self._writes.pop(token, None)
        if entry is None:
            return ClassicOutcome()
        group, then = entry
        return self._carry(group, then(code, now_ms), ClassicOutcome())

    def pending_timers(self) -> dict[TimerKey, ClassicGroup]:
        """The timers set and not yet fired or cancelled, with their groups."""
        return {key: group for key, (group, _) in self._timers.items()}

    # ---- effects to outcome -------------------------------------------------------------------

    def _carry(
        self, group: ClassicGroup | None, effects: list[Effect], out: ClassicOutcome
    ) -> ClassicOutcome:
        """Keep the timers' actions and the writes' continuations of ``group``'s ``effects``;
        add to ``out`` what the driver does for them."""
        for effect in effects:
            if isinstance(effect, Answer):
                if effect.waiter is not None:
                    out.answers.append((effect.waiter, effect.values))
            elif isinstance(effect, CancelTimer):
                self._timers.pop(effect.key, None)
                out.timers.append(SetTimer(effect.key, None))
            elif group is None:  # a request to no group is only answered
                raise ValueError(f"{effect} for no group")
            elif isinstance(effect, StartTimer):
                self._timers[effect.key] = (group, effect.fire)
                out.timers.append(SetTimer(effect.key, effect.delay_ms))
            else:
                token = self._next_token
                self._next_token += 1
                self._writes[token] = (group, effect.then)
                record = (encode_group_key(effect.group_id), effect.record())
                out.writes.append(Write(token, effect.group_id, (record,)))
        return out
