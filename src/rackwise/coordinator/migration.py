"""A group changing protocol on a broker: the driver of :mod:`rackwise.groups.migration`'s
rules, called before a ConsumerGroupHeartbeat reaches the consumer groups and before a
JoinGroup reaches the classic ones; a classic group with members that converts online is
released by the classic groups (its waiting requests told to rejoin) and its members' records
are written with its tombstone, in one append.

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

from rackwise.common.error_codes import GROUP_ID_NOT_FOUND, NONE
from rackwise.coordinator.group_coordinator import GroupCoordinator
from rackwise.coordinator.timers import wall_clock_ms
from rackwise.groups.migration import Conversion, to_classic_group, to_consumer_group
from rackwise.groups.offsets import GroupOffsets, OffsetsFormatError

LOG: Final = logging.getLogger("rackwise.coordinator")


async def into_consumer_group(
    coordinator: GroupCoordinator, index: int, state: GroupOffsets, group_id: str, joining: bool
) -> Conversion:
    """Before a ConsumerGroupHeartbeat: an Empty classic group of that id gives way (its
    record tombstoned), one with members converts when the policy allows or refuses it."""
    classic = coordinator.membership.group(index, state, group_id)
    driver = coordinator.consumers
    shard = driver.shard(index, state)
    has_consumer_group = shard is not None and group_id in shard.groups
    config = driver.config
    conversion = to_consumer_group(
        group_id, classic, joining, has_consumer_group, config.migration_policy, config.max_size
    )
    if conversion.upgrade and shard is not None and classic is not None:
        try:
            out = shard.upgrade(classic, driver.view(), wall_clock_ms())
        except OffsetsFormatError:
            message = (
                f"Cannot upgrade the classic group {group_id} to consumer group because the "
                "embedded consumer protocol is malformed."
            )
            return Conversion(GROUP_ID_NOT_FOUND, message)
        coordinator.membership.upgraded(index, state, group_id)
        out.records[:0] = conversion.records
        code = await driver.run(index, state, out)
        if code != NONE:
            LOG.warning("group %s: the online upgrade was not written (error %d)", group_id, code)
            return Conversion(code)
        LOG.info("group %s: the classic group becomes a consumer group online", group_id)
        return Conversion()
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
