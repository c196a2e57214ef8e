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
    * The rules are :mod:`~rackwise.coordinator.joins`' and
      :mod:`~rackwise.coordinator.rebalance`'s (over
      :class:`~rackwise.groups.classic.ClassicGroup`), given the time; this module adds the
      waiting, the clock and the timers, all on the broker's event loop: a JoinGroup waits
      for the rebalance, a follower's SyncGroup for the leader's, and the rules'
      :mod:`~rackwise.coordinator.effects` are carried out here, in order (answers, timers
      of :class:`~rackwise.coordinator.timers.GroupTimers`, records appended).
    * A timer fires only while its group is still the live one of a partition still loaded
      here; a write's continuation runs once the in-sync replicas answered, with the time
      then.
    * What is stored is Kafka's ``GroupMetadataValue`` (version 3): a new group, a group that
      becomes Empty, and each generation's assignment (the leader's SyncGroup, answered only
      once the in-sync replicas have it). As in Kafka, the records are not replayed into the
      live groups; they are read when a partition loads, and its groups start Stable (or
      Empty) with each member's session running.
    * A partition no longer led here ends its groups: waiting JoinGroups and SyncGroups are
      answered NOT_COORDINATOR, and the members find the new coordinator.

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
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, Final

from rackwise.coordinator.answers import JoinRequest, Waiter
from rackwise.coordinator.effects import Answer, CancelTimer, Effect, StartTimer, Store
from rackwise.coordinator.joins import JoinRules
from rackwise.coordinator.rebalance import Rebalancer
from rackwise.coordinator.timers import Clock, GroupTimers, wall_clock_ms
from rackwise.groups.classic import DEAD, ClassicGroup, restored
from rackwise.groups.group_metadata import decode_metadata
from rackwise.groups.offsets import GroupOffsets, OffsetsFormatError, encode_group_key
from rackwise.node.data_config import DataPathConfig

LOG: Final = logging.getLogger("rackwise.coordinator")

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

    def __init__(
        self, config: DataPathConfig, append: Append, clock: Clock = wall_clock_ms
    ) -> None:
        self.config = config
        self._append = append
        self._clock = clock
        self._partitions: dict[int, _Partition] = {}
        self._timers = GroupTimers()
        self._rebalancer = Rebalancer(config.group_initial_rebalance_delay_ms)
        self._joins = JoinRules(config.group_max_size, self._rebalancer)

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
            sessions: list[Effect] = [
                self._rebalancer.session(group, member.member_id, member.session_timeout_ms)
                for member in group.members.values()
            ]
            self._apply(partition, group, sessions)

    def unloaded(self, index: int) -> None:
        """This broker no longer holds the partition's state: its groups end (waiting requests
        are answered NOT_COORDINATOR)."""
        partition = self._partitions.pop(index, None)
        if partition is None:
            return
        for group in partition.groups.values():
            self._apply(partition, group, self._rebalancer.ended(group))
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

    # ---- the requests -------------------------------------------------------------------------

    async def join(self, index: int, offsets: GroupOffsets, request: JoinRequest) -> dict[str, Any]:
        """A JoinGroup's answer, once the rules give it (at once, or when the generation it
        joins is formed)."""
        partition = self._partition(index, offsets)
        waiter: Waiter = asyncio.get_running_loop().create_future()
        current = partition.groups.get(request.group_id)
        group, effects = self._joins.join(current, request, waiter, self._clock())
        if group is not None:
            partition.groups[request.group_id] = group
            self._apply(partition, group, effects)
        else:
            _answer_all(effects)
        return await waiter

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
        """A SyncGroup's answer, once the rules give it (at once, or when the leader's
        assignment is stored)."""
        partition = self._partition(index, offsets)
        group = partition.groups.get(group_id)
        waiter: Waiter = asyncio.get_running_loop().create_future()
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
        if group is not None:
            self._apply(partition, group, effects)
        else:
            _answer_all(effects)
        return await waiter

    def heartbeat(
        self,
        index: int,
        offsets: GroupOffsets,
        group_id: str,
        member_id: str,
        instance_id: str | None,
        generation: int,
    ) -> int:
        """A Heartbeat's error code."""
        partition = self._partition(index, offsets)
        group = partition.groups.get(group_id)
        code, effects = self._rebalancer.heartbeat(group, member_id, instance_id, generation)
        if group is not None:
            self._apply(partition, group, effects)
        return code

    def leave(
        self,
        index: int,
        offsets: GroupOffsets,
        group_id: str,
        leaving: list[tuple[str, str | None]],
    ) -> tuple[int, list[int]]:
        """(the group's error, each leaving member's error) for (member id, group.instance.id)
        pairs (:meth:`~rackwise.coordinator.rebalance.Rebalancer.leave`)."""
        partition = self._partition(index, offsets)
        group = partition.groups.get(group_id)
        code, codes, effects = self._rebalancer.leave(group, leaving, self._clock())
        if group is not None:
            self._apply(partition, group, effects)
        return code, codes

    # ---- carrying out the rules' effects -----------------------------------------------------

    def _apply(self, partition: _Partition, group: ClassicGroup, effects: list[Effect]) -> None:
        """Carry out ``effects``, in order, for ``group`` of ``partition``."""
        for effect in effects:
            if isinstance(effect, Answer):
                _complete(effect.waiter, effect.values)
            elif isinstance(effect, CancelTimer):
                self._timers.cancel(effect.key)
            elif isinstance(effect, StartTimer):
                self._start(partition, group, effect)
            else:
                self._timers.spawn(self._write(partition, group, effect))

    def _start(self, partition: _Partition, group: ClassicGroup, timer: StartTimer) -> None:
        """Start ``timer``; when it fires, if the group is still this partition's then, its
        action's effects are carried out."""

        def still_current() -> bool:
            return (
                self._partitions.get(partition.index) is partition
                and partition.groups.get(group.group_id) is group
            )

        def action() -> None:
            self._apply(partition, group, timer.fire(self._clock()))

        self._timers.at(timer.key, timer.delay_ms, still_current, action)

    async def _write(self, partition: _Partition, group: ClassicGroup, store: Store) -> None:
        """Append the group's record; once acknowledged, carry out what follows."""
        record = store.record()
        code = await self._append(
            partition.index, [(encode_group_key(store.group_id), record)], partition.offsets
        )
        self._apply(partition, group, store.then(code, self._clock()))


def _answer_all(effects: list[Effect]) -> None:
    """The answers of a request to a group that does not exist (there is nothing else)."""
    for effect in effects:
        assert isinstance(effect, Answer)
        _complete(effect.waiter, effect.values)


def _complete(waiter: Waiter | None, answer: dict[str, Any]) -> None:
    """Answer a waiting request, unless it has no waiter or was answered already."""
    if waiter is not None and not waiter.done():
        waiter.set_result(answer)
