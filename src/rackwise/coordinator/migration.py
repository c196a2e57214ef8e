"""A group changing protocol on a broker: the driver of :mod:`rackwise.groups.migration`'s
rules, called before a ConsumerGroupHeartbeat reaches the consumer groups and before a
JoinGroup reaches the classic ones.

Constraints
    * The old group goes from memory before its tombstones are appended (nothing else can
      join it meanwhile, and the log has the tombstones before any record of the new group),
      as the consumer groups apply their records when they make them; if the append fails,
      the partition's state is dropped, to be loaded again from what the log holds.
    * The committed offsets are not touched: they are records of their own.
"""

from __future__ import annotations

import logging
from typing import Final

from rackwise.common.error_codes import NONE
from rackwise.coordinator.group_coordinator import GroupCoordinator
from rackwise.groups.migration import Conversion, to_classic_group, to_consumer_group
from rackwise.groups.offsets import GroupOffsets

LOG: Final = logging.getLogger("rackwise.coordinator")


async def into_consumer_group(
    coordinator: GroupCoordinator, index: int, state: GroupOffsets, group_id: str, joining: bool
) -> Conversion:
    """Before a ConsumerGroupHeartbeat: an Empty classic group of that id gives way (its
    record tombstoned), one with members refuses it."""
    classic = coordinator.membership.group(index, state, group_id)
    shard = coordinator.consumers.shard(index, state)
    has_consumer_group = shard is not None and group_id in shard.groups
    conversion = to_consumer_group(group_id, classic, joining, has_consumer_group)
    if conversion.records:
        coordinator.membership.forget(index, state, group_id)
        code = await _write(coordinator, index, state, conversion)
        if code != NONE:
            return Conversion(code)
        LOG.info("group %s: the empty classic group becomes a consumer group", group_id)
    return conversion


async def into_classic_group(
    coordinator: GroupCoordinator, index: int, state: GroupOffsets, group_id: str
) -> Conversion:
    """Before a JoinGroup: a consumer group of that id without members gives way (its
    records tombstoned), one with members refuses it."""
    shard = coordinator.consumers.shard(index, state)
    found = None if shard is None else shard.groups.get(group_id)
    conversion = to_classic_group(group_id, None if found is None else len(found.members))
    if conversion.records and shard is not None:
        for key, value in conversion.records:
            shard.replay(key, value)
        code = await _write(coordinator, index, state, conversion)
        if code != NONE:
            return Conversion(code)
        LOG.info("group %s: the empty consumer group becomes a classic group", group_id)
    return conversion


async def _write(
    coordinator: GroupCoordinator, index: int, state: GroupOffsets, conversion: Conversion
) -> int:
    code = await coordinator.append(index, list(conversion.records), state)
    if code != NONE:
        LOG.warning("a group conversion's tombstones were not written (error %d)", code)
        coordinator.forget_partition(index)
    return code
