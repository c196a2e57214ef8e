"""Classic group membership: JoinGroup, SyncGroup, Heartbeat and LeaveGroup as Kafka's group
coordinator serves them (``GroupMetadataManager``'s classic group handlers), over the
``__consumer_offsets`` partitions this broker leads.

Goals
    Consumers that ``subscribe`` (kafka-python, confluent-kafka, aiokafka, any client of the
    classic protocol) form a group: its members join, the leader's assignment reaches every
    member, heartbeats keep them in, and a member that leaves, stops heartbeating or joins
    anew starts a rebalance. The group survives the coordinator: each generation's members
    and assignment are stored in ``__consumer_offsets`` and loaded by the next leader.

Constraints
    * The rules are :class:`~rackwise.groups.classic.ClassicGroup`'s; this module adds waiting
      and time, all on the broker's event loop: a JoinGroup waits for the rebalance, a
      follower's SyncGroup for the leader's, and timers expire sessions (each member's
      ``session.timeout.ms``; a new member's JoinGroup after 5 minutes), rebalances (the
      largest ``rebalance.timeout.ms``) and missing SyncGroups.
    * A new group's first rebalance waits ``group.initial.rebalance.delay.ms``, extended as
      members keep arriving, up to the rebalance timeout (Kafka's ``InitialDelayedJoin``).
    * JoinGroup v4+ from an unknown member is answered MEMBER_ID_REQUIRED with its new id,
      which it must join with before its session times out (KIP-394).
    * What is stored is Kafka's ``GroupMetadataValue`` (version 3): a new group, a group that
      becomes Empty, and each generation's assignment (the leader's SyncGroup, answered only
      once the in-sync replicas have it). As in Kafka, the records are not replayed into the
      live groups; they are read when a partition loads, and its groups start Stable (or
      Empty) with each member's session running.
    * A partition no longer led here ends its groups: waiting JoinGroups and SyncGroups are
      answered NOT_COORDINATOR, and the members find the new coordinator.
    * Static members (``group.instance.id``, KIP-345) are kept across rebalances and fenced
      by id (FENCED_INSTANCE_ID); one that joins again with an unknown member id takes its
      old id's place, and in a Stable group whose protocol stays the same it keeps the
      generation and its assignment (stored first; the old id comes back if that fails).

Worked example
    Two consumers subscribe to ``orders`` in group ``billing``. Each sends JoinGroup without a
    member id and gets MEMBER_ID_REQUIRED with ``<client id>-<uuid>``; they join again with
    it. The group, Empty, prepares its first rebalance and waits
    ``group.initial.rebalance.delay.ms`` (0 in ``rackwise cluster up``'s clusters, as in
    Kafka's sample ``server.properties``); then generation 1 is formed: the first to join
    leads and gets both members' subscriptions, computes the assignment and sends it in its
    SyncGroup; once stored, both SyncGroups are answered with their partitions.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, Final

from rackwise.coordinator.answers import (
    COORDINATOR_NOT_AVAILABLE,
    GROUP_MAX_SIZE_REACHED,
    MEMBER_ID_REQUIRED,
    NOT_COORDINATOR,
    REBALANCE_IN_PROGRESS,
    JoinRequest,
    complete,
    join_answer,
    sync_answer,
)
from rackwise.coordinator.timers import GroupTimers, TimerKey
from rackwise.groups.classic import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    FENCED_INSTANCE_ID,
    INCONSISTENT_GROUP_PROTOCOL,
    PREPARING_REBALANCE,
    STABLE,
    UNKNOWN_MEMBER,
    ClassicGroup,
    Member,
    Protocols,
    generate_member_id,
    restored,
    stored,
)
from rackwise.groups.group_metadata import decode_metadata, encode_metadata
from rackwise.groups.offsets import (
    NONE,
    UNKNOWN_MEMBER_ID,
    GroupOffsets,
    OffsetsFormatError,
    encode_group_key,
)
from rackwise.node.data_config import DataPathConfig

LOG: Final = logging.getLogger("rackwise.node.groups")

NEW_MEMBER_JOIN_TIMEOUT_MS: Final = 5 * 60 * 1000
"""Kafka's ``classicGroupNewMemberJoinTimeoutMs``: how long a new member's JoinGroup may wait."""

Append = Callable[[int, list[tuple[bytes, bytes | None]], GroupOffsets], Coroutine[Any, Any, int]]
"""``GroupCoordinator.append``: records to a partition, acknowledged by the in-sync replicas."""


class _Partition:
    """The live classic groups of one ``__consumer_offsets`` partition, for one loaded state."""

    def __init__(self, index: int, offsets: GroupOffsets) -> None:
        self.index = index
        self.offsets = offsets
        self.groups: dict[str, ClassicGroup] = {}


class GroupMembership:
    """The classic groups of the partitions this broker leads (module docstring)."""

    def __init__(self, config: DataPathConfig, append: Append) -> None:
        self.config = config
        self._append = append
        self._partitions: dict[int, _Partition] = {}
        self._timers = GroupTimers()

    # ---- partitions ---------------------------------------------------------------------------

    def loaded(self, index: int, offsets: GroupOffsets) -> None:
        """A partition's state was loaded: its stored groups come back, each member's session
        running from now."""
        self.unloaded(index)
        partition = _Partition(index, offsets)
        self._partitions[index] = partition
        for group_id, value in offsets.stored_metadata().items():
            try:
                group = restored(group_id, decode_metadata(value))
            except (OffsetsFormatError, ValueError) as e:
                LOG.warning("group %s: its stored metadata does not load: %s", group_id, e)
                continue
            partition.groups[group_id] = group
            for member in group.members.values():
                self._schedule_heartbeat(partition, group, member, member.session_timeout_ms)

    def unloaded(self, index: int) -> None:
        """This broker no longer holds the partition's state: its groups end (waiting requests
        are answered NOT_COORDINATOR)."""
        partition = self._partitions.pop(index, None)
        if partition is None:
            return
        for group in partition.groups.values():
            for member in group.members.values():
                complete(member.join_waiter, join_answer(NOT_COORDINATOR, member.member_id))
                complete(member.sync_waiter, sync_answer(NOT_COORDINATOR))
                member.join_waiter = member.sync_waiter = None
            group.state = DEAD
            self._timers.cancel_group(group.group_id)

    def group(self, index: int, offsets: GroupOffsets, group_id: str) -> ClassicGroup | None:
        """The live classic group ``group_id`` of partition ``index`` (None if it has none)."""
        partition = self._partition(index, offsets)
        return partition.groups.get(group_id)

    def live_groups(self, index: int, offsets: GroupOffsets) -> Mapping[str, ClassicGroup]:
        """Partition ``index``'s live classic groups."""
        return self._partition(index, offsets).groups

    def forget(self, index: int, offsets: GroupOffsets, group_id: str) -> None:
        """The group was deleted (DeleteGroups)."""
        group = self._partition(index, offsets).groups.pop(group_id, None)
        if group is not None:
            group.state = DEAD
            self._timers.cancel_group(group_id)

    def _partition(self, index: int, offsets: GroupOffsets) -> _Partition:
        partition = self._partitions.get(index)
        if partition is None or partition.offsets is not offsets:
            self.loaded(index, offsets)
            partition = self._partitions[index]
        return partition

    async def close(self) -> None:
        for index in list(self._partitions):
            self.unloaded(index)
        self._timers.close()

    # ---- JoinGroup ----------------------------------------------------------------------------

    async def join(self, index: int, offsets: GroupOffsets, request: JoinRequest) -> dict[str, Any]:
        partition = self._partition(index, offsets)
        group = partition.groups.get(request.group_id)
        unknown = request.member_id == UNKNOWN_MEMBER
        created = group is None
        if group is None:
            if not unknown:
                return join_answer(UNKNOWN_MEMBER_ID, request.member_id)
            group = ClassicGroup(request.group_id, state_timestamp_ms=_now_ms())
            partition.groups[request.group_id] = group
        if not self._accepts(group, request.member_id):
            group.remove(request.member_id)
            return join_answer(GROUP_MAX_SIZE_REACHED, UNKNOWN_MEMBER)
        waiter: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        if unknown:
            self._join_new(partition, group, request, waiter)
        else:
            self._join_existing(partition, group, request, waiter)
        if created:
            self._store(partition, group, "a new group's metadata")
        return await waiter

    def _accepts(self, group: ClassicGroup, member_id: str) -> bool:
        limit = self.config.group_max_size
        if group.state in (EMPTY, DEAD):
            return True
        member = group.members.get(member_id)
        if group.state == PREPARING_REBALANCE:
            return (
                member is not None and member.awaiting_join
            ) or group.awaiting_join_count < limit
        return member is not None or len(group.members) < limit

    def _join_new(
        self,
        partition: _Partition,
        group: ClassicGroup,
        request: JoinRequest,
        waiter: asyncio.Future[dict[str, Any]],
    ) -> None:
        refused = _join_refusal(group, request)
        if refused != NONE:
            waiter.set_result(join_answer(refused, UNKNOWN_MEMBER))
            return
        member_id = generate_member_id(request.client_id, request.instance_id)
        if request.instance_id is not None:
            old = group.static_member_id(request.instance_id)
            if old is None:
                self._add_member(partition, group, request, member_id, waiter)
            else:
                self._replace_static(partition, group, request, old, member_id, waiter)
        elif request.version >= 4:
            group.pending_join.add(member_id)
            self._schedule_session(partition, group, member_id, request.session_timeout_ms)
            waiter.set_result(join_answer(MEMBER_ID_REQUIRED, member_id))
        else:
            self._add_member(partition, group, request, member_id, waiter)

    def _join_existing(
        self,
        partition: _Partition,
        group: ClassicGroup,
        request: JoinRequest,
        waiter: asyncio.Future[dict[str, Any]],
    ) -> None:
        member_id = request.member_id
        refused = _join_refusal(group, request)
        if refused != NONE:
            waiter.set_result(join_answer(refused, member_id))
            return
        if member_id in group.pending_join:
            self._add_member(partition, group, request, member_id, waiter)
            return
        code = group.member_error(member_id, request.instance_id)
        if code != NONE:
            waiter.set_result(join_answer(code, member_id))
            return
        member = group.members[member_id]
        same = member.protocols == request.protocols
        if group.state == PREPARING_REBALANCE or (
            group.state in (COMPLETING_REBALANCE, STABLE)
            and (not same or (group.state == STABLE and group.is_leader(member_id)))
        ):
            self._update_member(partition, group, member, request, waiter)
        elif group.state in (COMPLETING_REBALANCE, STABLE):
            # The same metadata again (a lost answer, or a follower with nothing new): this
            # generation as it is.
            leader = group.is_leader(member_id) and group.state == COMPLETING_REBALANCE
            waiter.set_result(self._generation_answer(group, member_id, leader))
        else:  # Empty: the member should start over
            waiter.set_result(join_answer(UNKNOWN_MEMBER_ID, member_id))

    def _generation_answer(
        self, group: ClassicGroup, member_id: str, leader: bool
    ) -> dict[str, Any]:
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

    def _add_member(
        self,
        partition: _Partition,
        group: ClassicGroup,
        request: JoinRequest,
        member_id: str,
        waiter: asyncio.Future[dict[str, Any]],
    ) -> None:
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
        self._schedule_heartbeat(partition, group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._rebalance_or_complete(partition, group, f"adding member {member_id}")

    def _replace_static(
        self,
        partition: _Partition,
        group: ClassicGroup,
        request: JoinRequest,
        old_id: str,
        new_id: str,
        waiter: asyncio.Future[dict[str, Any]],
    ) -> None:
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
        complete(old_join, join_answer(FENCED_INSTANCE_ID, old_id))
        complete(old_sync, sync_answer(FENCED_INSTANCE_ID))
        self._timers.cancel(("heartbeat", group.group_id, old_id))
        self._schedule_heartbeat(partition, group, member, member.session_timeout_ms)
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
                self._rebalance_or_complete(partition, group, why + " with other protocols")
                return
            self._timers.spawn(
                self._store_static(partition, group, request, old_id, member, before, leader_before)
            )
        elif group.state == COMPLETING_REBALANCE:
            # the leader may already hold the old id's subscription: assign again
            self._prepare_rebalance(partition, group, why)
        else:
            self._maybe_complete_join(partition, group)

    async def _store_static(
        self,
        partition: _Partition,
        group: ClassicGroup,
        request: JoinRequest,
        old_id: str,
        member: Member,
        before: tuple[Protocols, int, int],
        leader_before: str | None,
    ) -> None:
        """Store a Stable group's replaced static member, then answer its JoinGroup with the
        current generation; if the store fails, put the old id back."""
        assignment = {m.member_id: m.assignment for m in group.members.values()}
        record = encode_metadata(stored(group, assignment))
        code = await self._append(
            partition.index, [(encode_group_key(group.group_id), record)], partition.offsets
        )
        waiter = member.join_waiter
        if code != NONE:
            LOG.warning(
                "group %s: storing static member %s failed (error %d): %s is its id again",
                group.group_id,
                member.member_id,
                code,
                old_id,
            )
            protocols, rebalance_ms, session_ms = before
            group.update_member(member, protocols, rebalance_ms, session_ms, None)
            if request.instance_id is not None and member.member_id in group.members:
                restored_member, _, _ = group.replace_static_member(
                    request.instance_id, member.member_id, old_id
                )
                self._timers.cancel(("heartbeat", group.group_id, member.member_id))
                self._schedule_heartbeat(
                    partition, group, restored_member, restored_member.session_timeout_ms
                )
            complete(
                waiter,
                join_answer(
                    code,
                    UNKNOWN_MEMBER,
                    generation_id=group.generation,
                    protocol_type=group.protocol_type,
                    protocol_name=group.protocol_name,
                    leader=leader_before or "",
                ),
            )
            return
        if waiter is None:
            return  # the group moved on (a rebalance answered it)
        if request.version >= 9:  # KIP-814: the leader keeps its assignment, skipping it
            leader = group.is_leader(member.member_id)
            answer = self._generation_answer(group, member.member_id, leader)
            answer["skip_assignment"] = leader
        else:
            answer = self._generation_answer(group, member.member_id, False)
            answer["leader"] = leader_before or ""
        complete(waiter, answer)
        group.set_join_waiter(member, None)

    def _update_member(
        self,
        partition: _Partition,
        group: ClassicGroup,
        member: Member,
        request: JoinRequest,
        waiter: asyncio.Future[dict[str, Any]],
    ) -> None:
        if member.awaiting_join:  # a JoinGroup sent again (on a new connection): the newer wins
            complete(member.join_waiter, join_answer(REBALANCE_IN_PROGRESS, member.member_id))
            group.set_join_waiter(member, None)
        group.update_member(
            member,
            request.protocols,
            request.rebalance_timeout_ms,
            request.session_timeout_ms,
            waiter,
        )
        self._rebalance_or_complete(partition, group, f"member {member.member_id} joins again")

    # ---- rebalances ---------------------------------------------------------------------------

    def _rebalance_or_complete(self, partition: _Partition, group: ClassicGroup, why: str) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(partition, group, why)
        else:
            self._maybe_complete_join(partition, group)

    def _maybe_complete_join(self, partition: _Partition, group: ClassicGroup) -> None:
        if (
            group.state == PREPARING_REBALANCE
            and group.previous_state != EMPTY  # the first rebalance waits for its delay
            and group.has_all_members_joined()
        ):
            self._complete_join(partition, group)

    def _prepare_rebalance(self, partition: _Partition, group: ClassicGroup, why: str) -> None:
        if group.state == COMPLETING_REBALANCE:
            self._propagate(partition, group, REBALANCE_IN_PROGRESS, reset=True)
        group.pending_sync.clear()
        self._timers.cancel(("sync", group.group_id))
        initial = group.state == EMPTY
        LOG.info(
            "group %s: preparing to rebalance in state %s with old generation %d (%s)",
            group.group_id,
            group.state,
            group.generation,
            why,
        )
        group.transition_to(PREPARING_REBALANCE, _now_ms())
        if initial:
            delay = self.config.group_initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            self._initial_delay(partition, group, delay, remaining)
        elif group.has_all_members_joined():
            self._complete_join(partition, group)
        else:
            self._schedule_join(partition, group)

    def _initial_delay(
        self, partition: _Partition, group: ClassicGroup, delay_ms: int, remaining_ms: int
    ) -> None:
        def fire() -> None:
            if group.new_member_added and remaining_ms != 0:
                group.new_member_added = False
                next_delay = min(self.config.group_initial_rebalance_delay_ms, remaining_ms)
                self._initial_delay(partition, group, next_delay, max(remaining_ms - delay_ms, 0))
            else:
                self._complete_join(partition, group)

        self._at(("join", group.group_id), delay_ms, partition, group, fire)

    def _schedule_join(self, partition: _Partition, group: ClassicGroup) -> None:
        self._at(
            ("join", group.group_id),
            group.rebalance_timeout_ms(),
            partition,
            group,
            lambda: self._complete_join(partition, group),
        )

    def _complete_join(self, partition: _Partition, group: ClassicGroup) -> None:
        self._timers.cancel(("join", group.group_id))
        gone = [m for m in group.not_yet_rejoined() if m.instance_id is None]
        for member in gone:
            group.remove(member.member_id)
            self._timers.cancel(("heartbeat", group.group_id, member.member_id))
        if gone:
            LOG.info(
                "group %s: removed members that did not join again: %s",
                group.group_id,
                ", ".join(m.member_id for m in gone),
            )
        if group.state == DEAD:
            return
        if not group.maybe_elect_new_joined_leader() and group.members:
            self._schedule_join(partition, group)  # nobody rejoined: wait for sessions to end
            return
        group.init_next_generation(_now_ms())
        if group.state == EMPTY:
            LOG.info("group %s: generation %d is empty", group.group_id, group.generation)
            self._store(partition, group, "an empty group's metadata")
            return
        LOG.info(
            "group %s: generation %d formed with %d members (protocol %s)",
            group.group_id,
            group.generation,
            len(group.members),
            group.protocol_name,
        )
        for member in list(group.members.values()):
            if member.join_waiter is not None:
                answer = self._generation_answer(
                    group, member.member_id, group.is_leader(member.member_id)
                )
                complete(member.join_waiter, answer)
                group.set_join_waiter(member, None)
            self._schedule_heartbeat(partition, group, member, member.session_timeout_ms)
            member.is_new = False
            group.pending_sync.add(member.member_id)
        generation = group.generation
        self._at(
            ("sync", group.group_id),
            group.rebalance_timeout_ms(),
            partition,
            group,
            lambda: self._expire_sync(partition, group, generation),
        )

    def _expire_sync(self, partition: _Partition, group: ClassicGroup, generation: int) -> None:
        if generation != group.generation or group.state not in (COMPLETING_REBALANCE, STABLE):
            return
        if not group.pending_sync:
            return
        missing = sorted(group.pending_sync)
        for member_id in missing:
            member = group.members.get(member_id)
            if member is not None:
                self._drop_member(group, member, UNKNOWN_MEMBER_ID)
        self._prepare_rebalance(
            partition, group, f"members {', '.join(missing)} sent no SyncGroup in time"
        )

    # ---- SyncGroup ----------------------------------------------------------------------------

    async def sync(
        self,
        index: int,
        offsets: GroupOffsets,
        group_id: str,
        member_id: str,
        instance_id: str | None,
        generation: int,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: dict[str, bytes],
    ) -> dict[str, Any]:
        partition = self._partition(index, offsets)
        group = partition.groups.get(group_id)
        if group is None or group.state == EMPTY:
            return sync_answer(UNKNOWN_MEMBER_ID)
        code = group.sync_error(member_id, instance_id, generation, protocol_type, protocol_name)
        if code != NONE:
            return sync_answer(code)
        member = group.members[member_id]
        if group.state == STABLE:
            self._synced(group, member_id)
            return self._assignment_answer(group, member)
        waiter: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        complete(member.sync_waiter, sync_answer(REBALANCE_IN_PROGRESS))
        member.sync_waiter = waiter
        self._synced(group, member_id)
        if group.is_leader(member_id):
            LOG.info(
                "group %s: assignment for generation %d received from the leader %s",
                group_id,
                generation,
                member_id,
            )
            full = {m: assignments.get(m, b"") for m in group.members}
            self._timers.spawn(self._store_assignment(partition, group, generation, full))
        return await waiter

    def _synced(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_sync.discard(member_id)
        if group.state in (DEAD, EMPTY, PREPARING_REBALANCE) or not group.pending_sync:
            self._timers.cancel(("sync", group.group_id))

    async def _store_assignment(
        self, partition: _Partition, group: ClassicGroup, generation: int, full: dict[str, bytes]
    ) -> None:
        record = encode_metadata(stored(group, full))
        code = await self._append(
            partition.index, [(encode_group_key(group.group_id), record)], partition.offsets
        )
        if group.state != COMPLETING_REBALANCE or group.generation != generation:
            return  # the group moved on while the record was written
        if code != NONE:
            LOG.warning(
                "group %s: storing generation %d failed (error %d): rebalancing",
                group.group_id,
                generation,
                code,
            )
            self._propagate(partition, group, code, reset=True)
            self._rebalance_or_complete(partition, group, "the assignment could not be stored")
            return
        for member_id, assignment in full.items():
            if member_id in group.members:
                group.members[member_id].assignment = assignment
        self._propagate(partition, group, NONE)
        group.transition_to(STABLE, _now_ms())

    def _propagate(
        self, partition: _Partition, group: ClassicGroup, code: int, *, reset: bool = False
    ) -> None:
        """Answer every waiting SyncGroup: the member's assignment, or ``code``."""
        for member in group.members.values():
            if reset:
                member.assignment = b""
            if member.sync_waiter is None:
                continue
            ok = code == NONE
            answer = self._assignment_answer(group, member) if ok else sync_answer(code)
            complete(member.sync_waiter, answer)
            member.sync_waiter = None
            self._schedule_heartbeat(partition, group, member, member.session_timeout_ms)

    @staticmethod
    def _assignment_answer(group: ClassicGroup, member: Member) -> dict[str, Any]:
        return sync_answer(
            NONE,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            assignment=member.assignment,
        )

    # ---- Heartbeat and LeaveGroup -------------------------------------------------------------

    def heartbeat(
        self,
        index: int,
        offsets: GroupOffsets,
        group_id: str,
        member_id: str,
        instance_id: str | None,
        generation: int,
    ) -> int:
        partition = self._partition(index, offsets)
        group = partition.groups.get(group_id)
        if group is None:
            return UNKNOWN_MEMBER_ID
        code = group.heartbeat_error(member_id, instance_id, generation)
        if code in (NONE, REBALANCE_IN_PROGRESS):
            member = group.members[member_id]
            self._schedule_heartbeat(partition, group, member, member.session_timeout_ms)
        return code

    def leave(
        self,
        index: int,
        offsets: GroupOffsets,
        group_id: str,
        leaving: list[tuple[str, str | None]],
    ) -> tuple[int, list[int]]:
        """(the group's error, each leaving member's error) for (member id, group.instance.id)
        pairs (Kafka's ``classicGroupLeaveToClassicGroup``)."""
        partition = self._partition(index, offsets)
        group = partition.groups.get(group_id)
        if group is None:
            return NONE, [UNKNOWN_MEMBER_ID] * len(leaving)
        if group.state == DEAD:
            return COORDINATOR_NOT_AVAILABLE, []
        codes: list[int] = []
        for member_id, instance_id in leaving:
            if member_id == UNKNOWN_MEMBER:
                static = group.static_member_id(instance_id) if instance_id is not None else None
                if static is None:
                    codes.append(UNKNOWN_MEMBER_ID)
                    continue
                member_id = static
            elif member_id in group.pending_join:
                group.remove(member_id)
                self._timers.cancel(("heartbeat", group_id, member_id))
                codes.append(NONE)
                continue
            else:
                code = group.member_error(member_id, instance_id)
                if code != NONE:
                    codes.append(code)
                    continue
            LOG.info("group %s: member %s leaves", group_id, member_id)
            self._drop_member(group, group.members[member_id], UNKNOWN_MEMBER_ID)
            codes.append(NONE)
        if NONE in codes:
            if group.state in (STABLE, COMPLETING_REBALANCE):
                self._rebalance_or_complete(partition, group, "members left")
            elif group.state == PREPARING_REBALANCE:
                self._maybe_complete_join(partition, group)
        return NONE, codes

    # ---- sessions -----------------------------------------------------------------------------

    def _schedule_heartbeat(
        self, partition: _Partition, group: ClassicGroup, member: Member, timeout_ms: int
    ) -> None:
        self._schedule_session(partition, group, member.member_id, timeout_ms)

    def _schedule_session(
        self, partition: _Partition, group: ClassicGroup, member_id: str, timeout_ms: int
    ) -> None:
        """Expire ``member_id`` (a member, or a pending one) ``timeout_ms`` from now unless
        this is called again for it first."""
        self._at(
            ("heartbeat", group.group_id, member_id),
            timeout_ms,
            partition,
            group,
            lambda: self._expire_member(partition, group, member_id),
        )

    def _expire_member(self, partition: _Partition, group: ClassicGroup, member_id: str) -> None:
        if group.state == DEAD:
            return
        if member_id in group.pending_join:
            LOG.info("group %s: pending member %s expired", group.group_id, member_id)
            group.remove(member_id)
            if group.state == PREPARING_REBALANCE and group.has_all_members_joined():
                self._complete_join(partition, group)
            return
        member = group.members.get(member_id)
        if member is None or member.has_satisfied_heartbeat():
            return
        LOG.info("group %s: member %s failed its session; removing it", group.group_id, member_id)
        self._drop_member(group, member, UNKNOWN_MEMBER_ID)
        if group.state in (STABLE, COMPLETING_REBALANCE):
            self._rebalance_or_complete(partition, group, f"member {member_id} expired")
        elif group.state == PREPARING_REBALANCE and group.has_all_members_joined():
            self._complete_join(partition, group)

    def _drop_member(self, group: ClassicGroup, member: Member, code: int) -> None:
        """Remove a member, answering its waiting JoinGroup or SyncGroup with ``code``."""
        if member.join_waiter is not None:
            complete(member.join_waiter, join_answer(code, UNKNOWN_MEMBER))
            group.set_join_waiter(member, None)
        complete(member.sync_waiter, sync_answer(code))
        member.sync_waiter = None
        group.remove(member.member_id)
        self._timers.cancel(("heartbeat", group.group_id, member.member_id))

    # ---- storing and timers -------------------------------------------------------------------

    def _store(self, partition: _Partition, group: ClassicGroup, what: str) -> None:
        record = encode_metadata(stored(group))

        async def write() -> None:
            code = await self._append(
                partition.index, [(encode_group_key(group.group_id), record)], partition.offsets
            )
            if code != NONE:
                LOG.warning("group %s: storing %s failed (error %d)", group.group_id, what, code)

        self._timers.spawn(write())

    def _at(
        self,
        key: TimerKey,
        delay_ms: int,
        partition: _Partition,
        group: ClassicGroup,
        action: Callable[[], None],
    ) -> None:
        """Run ``action`` after ``delay_ms`` if the group is still this partition's then."""

        def still_current() -> bool:
            return (
                self._partitions.get(partition.index) is partition
                and partition.groups.get(group.group_id) is group
            )

        self._timers.at(key, delay_ms, still_current, action)


def _join_refusal(group: ClassicGroup, request: JoinRequest) -> int:
    """COORDINATOR_NOT_AVAILABLE for a Dead group, INCONSISTENT_GROUP_PROTOCOL for a member
    that shares no protocol with it, else NONE."""
    if group.state == DEAD:
        return COORDINATOR_NOT_AVAILABLE
    names = [name for name, _ in request.protocols]
    if not group.supports_protocols(request.protocol_type, names):
        return INCONSISTENT_GROUP_PROTOCOL
    return NONE


def _now_ms() -> int:
    return int(time.time() * 1000)
