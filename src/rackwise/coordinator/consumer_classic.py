"""Classic members in a consumer group on a broker: JoinGroup, SyncGroup, Heartbeat and
LeaveGroup for a group that is a consumer group, driven through
:mod:`rackwise.groups.consumer_classic`'s rules.

Constraints
    * A JoinGroup goes to the consumer group of its id when it has members (Kafka's
      ``classicGroupJoin``: an empty one gives way to a classic group instead); a SyncGroup,
      Heartbeat or LeaveGroup goes to it whenever it exists and no classic group of that id
      has members. Each function answers None when the request is not the consumer group's.
    * A JoinGroup or LeaveGroup is answered once its records are in the in-sync replicas; a
      SyncGroup and a Heartbeat write nothing and are answered at once, their timers set.
"""

from __future__ import annotations

from typing import Any

from rackwise.common.error_codes import NONE
from rackwise.coordinator.group_coordinator import GroupCoordinator
from rackwise.coordinator.timers import wall_clock_ms
from rackwise.groups import consumer_classic
from rackwise.groups.classic_effects import JoinRequest, join_answer
from rackwise.groups.consumer_coordinator import ConsumerGroups
from rackwise.groups.offsets import GroupOffsets


def _shard(
    coordinator: GroupCoordinator, index: int, state: GroupOffsets, group_id: str, joining: bool
) -> ConsumerGroups | None:
    shard = coordinator.consumers.shard(index, state)
    group = None if shard is None else shard.groups.get(group_id)
    if group is None or (joining and not group.members):
        return None
    classic = coordinator.membership.group(index, state, group_id)
    if classic is not None and classic.members:
        return None
    return shard


async def join(
    coordinator: GroupCoordinator, index: int, state: GroupOffsets, request: JoinRequest
) -> dict[str, Any] | None:
    shard = _shard(coordinator, index, state, request.group_id, joining=True)
    if shard is None:
        return None
    driver = coordinator.consumers
    answer, out = consumer_classic.join(shard, request, wall_clock_ms(), driver.view())
    code = await driver.run(index, state, out)
    return answer if code == NONE else join_answer(code, request.member_id)


def sync(
    coordinator: GroupCoordinator,
    index: int,
    state: GroupOffsets,
    group_id: str,
    member: tuple[str, str | None, int],
    protocol: tuple[str | None, str | None],
) -> dict[str, Any] | None:
    """``member``: (member id, group.instance.id, generation); ``protocol``: (type, name)."""
    shard = _shard(coordinator, index, state, group_id, joining=False)
    if shard is None:
        return None
    driver = coordinator.consumers
    now, view = wall_clock_ms(), driver.view()
    answer, out = consumer_classic.sync(shard, group_id, *member, *protocol, now, view)
    driver.set_timers(index, state, out.timers)
    return answer


def heartbeat(
    coordinator: GroupCoordinator,
    index: int,
    state: GroupOffsets,
    group_id: str,
    member: tuple[str, str | None, int],
) -> int | None:
    shard = _shard(coordinator, index, state, group_id, joining=False)
    if shard is None:
        return None
    code, out = consumer_classic.heartbeat(shard, group_id, *member, wall_clock_ms())
    coordinator.consumers.set_timers(index, state, out.timers)
    return code


async def leave(
    coordinator: GroupCoordinator,
    index: int,
    state: GroupOffsets,
    group_id: str,
    leaving: list[tuple[str, str | None]],
) -> list[int] | None:
    shard = _shard(coordinator, index, state, group_id, joining=False)
    if shard is None:
        return None
    driver = coordinator.consumers
    codes, out = consumer_classic.leave(shard, group_id, leaving, driver.view())
    code = await driver.run(index, state, out)
    return codes if code == NONE else [code] * len(leaving)
