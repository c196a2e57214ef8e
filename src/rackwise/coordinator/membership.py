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
    * The rules are the pure coordinator's
      (:class:`~rackwise.groups.classic_coordinator.ClassicGroups`, one for each partition);
      this module only drives it on the broker's event loop: each request's waiter is a
      future (a JoinGroup waits for the rebalance, a follower's SyncGroup for the leader's),
      the time is the wall clock's, the timers it sets are
      :class:`~rackwise.coordinator.timers.GroupTimers`', and the records it writes are
      appended to the partition, its continuation given the outcome.
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

from rackwise.common.error_codes import NONE, UNKNOWN_MEMBER_ID
from rackwise.coordinator.timers import Clock, GroupTimers, wall_clock_ms
from rackwise.groups.classic import ClassicGroup
from rackwise.groups.classic_coordinator import ClassicGroups, ClassicOutcome, SetTimer, Write
from rackwise.groups.classic_effects import JoinRequest
from rackwise.groups.offsets import GroupOffsets
from rackwise.node.data_config import DataPathConfig

LOG: Final = logging.getLogger("rackwise.coordinator")

Append = Callable[[int, list[tuple[bytes, bytes | None]], GroupOffsets], Coroutine[Any, Any, int]]
"""``GroupCoordinator.append``: records to a partition, acknowledged by the in-sync replicas."""

Waiter = asyncio.Future[dict[str, Any]]
"""A JoinGroup or SyncGroup waiting for its answer's values."""


class _Partition:
    """The live classic groups of one ``__consumer_offsets`` partition, for one loaded state."""

    def __init__(self, index: int, offsets: GroupOffsets, groups: ClassicGroups) -> None:
        self.index = index
        self.offsets = offsets
        self.groups = groups


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

    # ---- partitions ---------------------------------------------------------------------------

    def loaded(self, index: int, offsets: GroupOffsets) -> None:
        """A partition's state was loaded: its stored groups come back, each member's session
        running from now."""
        self.unloaded(index)
        groups = ClassicGroups(
            self.config.group_initial_rebalance_delay_ms, self.config.group_max_size
        )
        partition = _Partition(index, offsets, groups)
        self._partitions[index] = partition
        self._run(partition, groups.load(offsets.stored_metadata()))

    def unloaded(self, index: int) -> None:
        """This broker no longer holds the partition's state: its groups end (waiting requests
        are answered NOT_COORDINATOR)."""
        partition = self._partitions.pop(index, None)
        if partition is None:
            return
        out = partition.groups.unload()
        for key in [t.key for t in out.timers]:
            self._timers.cancel(key)
        for waiter, answer in out.answers:
            _complete(waiter, answer)

    def group(self, index: int, offsets: GroupOffsets, group_id: str) -> ClassicGroup | None:
        """The live classic group ``group_id`` of partition ``index`` (None if it has none)."""
        return self._partition(index, offsets).groups.groups.get(group_id)

    def live_groups(self, index: int, offsets: GroupOffsets) -> Mapping[str, ClassicGroup]:
        """Partition ``index``'s live classic groups."""
        return self._partition(index, offsets).groups.groups

    def forget(self, index: int, offsets: GroupOffsets, group_id: str) -> None:
        """The group was deleted (DeleteGroups)."""
        partition = self._partition(index, offsets)
        self._run(partition, partition.groups.forget(group_id))

    def upgraded(self, index: int, offsets: GroupOffsets, group_id: str) -> None:
        """The group became a consumer group: its waiting requests are told to rejoin."""
        partition = self._partition(index, offsets)
        self._run(partition, partition.groups.release(group_id))

    def adopt(
        self, index: int, offsets: GroupOffsets, group: ClassicGroup, rebalance: bool = True
    ) -> None:
        """A consumer group became the classic group ``group``, now served here (a rebalance
        prepared unless ``rebalance`` is False)."""
        partition = self._partition(index, offsets)
        self._run(partition, partition.groups.adopt(group, self._clock(), rebalance))

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
        self._run(partition, partition.groups.join(request, waiter, self._clock()))
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
        waiter: Waiter = asyncio.get_running_loop().create_future()
        out = partition.groups.sync(
            group_id,
            member_id,
            instance_id,
            generation,
            protocol_type,
            protocol_name,
            assignments,
            waiter,
        )
        self._run(partition, out)
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
        code, out = partition.groups.heartbeat(group_id, member_id, instance_id, generation)
        self._run(partition, out)
        return code

    def leave(
        self,
        index: int,
        offsets: GroupOffsets,
        group_id: str,
        leaving: list[tuple[str, str | None]],
    ) -> tuple[int, list[int]]:
        """(the group's error, each leaving member's error) for (member id, group.instance.id)
        pairs (:meth:`~rackwise.groups.classic_coordinator.ClassicGroups.leave`)."""
        partition = self._partition(index, offsets)
        code, codes, out = partition.groups.leave(group_id, leaving, self._clock())
        self._run(partition, out)
        if code == UNKNOWN_MEMBER_ID and offsets.has_group(group_id):
            # A group of committed offsets only is an Empty classic group to Kafka: each
            # member is unknown, the request itself is not failed.
            return NONE, [UNKNOWN_MEMBER_ID] * len(leaving)
        return code, codes

    # ---- carrying out an outcome --------------------------------------------------------------

    def _run(self, partition: _Partition, out: ClassicOutcome) -> None:
        """Answer, set the timers and start the writes ``out`` asks for; a partition no longer
        current here only answers (its timers and writes are its successor's business)."""
        for waiter, answer in out.answers:
            _complete(waiter, answer)
        if self._partitions.get(partition.index) is not partition:
            return
        for timer in out.timers:
            self._set(partition, timer)
        for write in out.writes:
            self._timers.spawn(self._write(partition, write))

    def _set(self, partition: _Partition, timer: SetTimer) -> None:
        if timer.delay_ms is None:
            self._timers.cancel(timer.key)
            return

        def still_current() -> bool:
            return self._partitions.get(partition.index) is partition

        def action() -> None:
            self._run(partition, partition.groups.fire(timer.key, self._clock()))

        self._timers.at(timer.key, timer.delay_ms, still_current, action)

    async def _write(self, partition: _Partition, write: Write) -> None:
        """Append the group's record; once acknowledged, carry out what follows."""
        code = await self._append(partition.index, list(write.records), partition.offsets)
        self._run(partition, partition.groups.written(write.token, code, self._clock()))


def _complete(waiter: Waiter | None, answer: dict[str, Any]) -> None:
    """Answer a waiting request, unless it has no waiter or was answered already."""
    if waiter is not None and not waiter.done():
        waiter.set_result(answer)
