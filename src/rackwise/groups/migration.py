"""A group changing protocol, pure: what a ConsumerGroupHeartbeat does to a classic group of
the same id, and a JoinGroup to a consumer group (Kafka's ``GroupMetadataManager``:
``getOrMaybeCreateConsumerGroup`` with ``maybeDeleteEmptyClassicGroup``, and
``classicGroupJoin`` with ``maybeDeleteEmptyConsumerGroup``).

Goals
    A group moves from one protocol to the other without losing its committed offsets: the
    offsets are records of their own, which neither conversion touches; only the old
    protocol's group records are tombstoned, so that a coordinator loading the partition
    finds one group of that id.

Constraints
    * An empty group converts whatever ``group.consumer.migration.policy`` says, as in Kafka:
      a joining ConsumerGroupHeartbeat (member epoch 0) to an Empty classic group writes the
      tombstone of its ``GroupMetadataValue`` and creates the consumer group; a JoinGroup to a
      consumer group without members writes the tombstones of its epoch, subscription
      metadata and target assignment epoch and is served by a new classic group.
    * A group with members converts online when ``group.consumer.migration.policy`` allows
      it (:mod:`rackwise.groups.online_migration`): a joining ConsumerGroupHeartbeat to a
      classic group with members writes the same tombstone and the consumer group made of
      its members (``upgrade``); where the policy or the group does not allow it, and for a
      heartbeat that does not join (epoch other than 0), it is GROUP_ID_NOT_FOUND ("Group g
      is not a consumer group."). A JoinGroup to a consumer group with members is served in
      it (:mod:`rackwise.groups.consumer_classic`), so :func:`to_classic_group` only sees
      one without.

Worked example
    kafka-python's consumers of ``billing`` commit and close: the classic group is Empty,
    its offsets committed. A librdkafka consumer with ``group.protocol=consumer`` sends
    ConsumerGroupHeartbeat(epoch 0): :func:`to_consumer_group` answers with the
    ``GroupMetadataKey("billing")`` tombstone, and the consumer group that replaces the
    classic one reads from the committed offsets.
"""

from __future__ import annotations

from dataclasses import dataclass

from rackwise.common.error_codes import GROUP_ID_NOT_FOUND, INCONSISTENT_GROUP_PROTOCOL, NONE
from rackwise.groups.classic import EMPTY, ClassicGroup
from rackwise.groups.consumer_records import (
    GROUP_EPOCH_KEY,
    PARTITION_METADATA_KEY,
    TARGET_METADATA_KEY,
    Tombstone,
    encode_tombstone,
)
from rackwise.groups.consumer_types import INT32_MAX
from rackwise.groups.offsets import encode_group_key
from rackwise.groups.online_migration import DEFAULT_POLICY, can_upgrade

KeyValue = tuple[bytes, bytes | None]


@dataclass(frozen=True, slots=True)
class Conversion:
    """What a request to a group of the other protocol gets: refused with ``code`` and
    ``message``, or served once ``records`` (the old group's tombstones, maybe none) are
    written."""

    code: int = NONE
    message: str | None = None
    records: tuple[KeyValue, ...] = ()
    upgrade: bool = False
    """The classic group has members, which the consumer group takes over."""

    @property
    def refused(self) -> bool:
        return self.code != NONE


def to_consumer_group(
    group_id: str,
    classic: ClassicGroup | None,
    joining: bool,
    has_consumer_group: bool,
    policy: str = DEFAULT_POLICY,
    max_size: int = INT32_MAX,
) -> Conversion:
    """A ConsumerGroupHeartbeat to ``group_id`` (``joining``: member epoch 0), given the
    classic group of that id, if any, whether a consumer group of that id exists, the
    migration policy and ``group.consumer.max.size``."""
    if classic is None or (has_consumer_group and classic.state == EMPTY):
        return Conversion()
    tombstone = ((encode_group_key(group_id), None),)
    if joining and classic.state == EMPTY:
        return Conversion(records=tombstone)
    if joining and can_upgrade(classic, policy, max_size):
        return Conversion(records=tombstone, upgrade=True)
    return Conversion(GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")


def to_classic_group(group_id: str, consumer_members: int | None) -> Conversion:
    """A JoinGroup to ``group_id``, given how many members its consumer group has (None if
    there is none)."""
    if consumer_members is None:
        return Conversion()
    if consumer_members:
        return Conversion(INCONSISTENT_GROUP_PROTOCOL)
    kinds = (TARGET_METADATA_KEY, PARTITION_METADATA_KEY, GROUP_EPOCH_KEY)
    return Conversion(
        records=tuple((encode_tombstone(Tombstone(k, group_id)), None) for k in kinds)
    )
