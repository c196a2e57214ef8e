"""Which committed offsets and groups Kafka's coordinator removes on its own: offsets past
``offsets.retention.minutes``, groups left with nothing, and the offsets of deleted topics
(Kafka's ``GroupCoordinatorShard.cleanupGroupMetadata``, ``OffsetMetadataManager
.cleanupExpiredOffsets`` and ``onPartitionsDeleted``).

Goals
    The tombstones the coordinator appends, as Kafka decides them, so that a group that has
    been gone for a week leaves nothing behind, a group that still reads a topic keeps its
    offsets of it, and a deleted topic's offsets do not come back to a topic created later
    under its name.

Constraints
    * Pure: the partition's state, its live classic and consumer groups and the time in;
      records out.
    * When an offset expires depends on its group (Kafka's ``offsetExpirationCondition``):
      a simple group (no protocol type: consumers that only commit) counts from each commit;
      an Empty classic group counts from when it became Empty (from the commit for a group
      stored before that time was kept); a Stable classic ``consumer`` group whose
      subscriptions are known counts from each commit, for topics no member subscribes to;
      any other classic group keeps its offsets. A consumer-protocol (KIP-848) group always
      counts from each commit (``ConsumerGroup.offsetExpirationCondition``). A commit that
      asked for its own retention (OffsetCommit v2-v4) expires at the time it asked for.
    * Offsets of a topic the group is subscribed to never expire (``isSubscribedToTopic``):
      for a classic group, a topic in a member's subscription; for a consumer group, a topic
      a member names or whose regular expression matches it. An Empty group is subscribed to
      nothing, so its offsets go a retention after their commits (or after it became Empty).
    * A group whose offsets have all expired (or that has none) is deleted too, if it is
      Empty (``maybeDeleteGroup``): a classic or simple group by its ``GroupMetadataKey``
      tombstone, a consumer group by the tombstones of its target assignment epoch, its
      subscription metadata and its epoch (``ConsumerGroup.createGroupTombstoneRecords``;
      an Empty group has no member records left).

Worked example
    With the default 7 days, a group whose consumers all left on Monday, and whose offsets
    were committed then, loses its offsets and itself at the first check after the next
    Monday; a group that only commits (``assign`` and ``commit``) loses each partition's offset
    7 days after its last commit; a consumer group whose members still subscribe to
    ``orders`` keeps its offsets of ``orders`` however old, and loses those of a topic it
    stopped reading a week after their last commit.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Final

from rackwise.groups.classic import CONSUMER_PROTOCOL_TYPE, EMPTY, STABLE, ClassicGroup
from rackwise.groups.consumer_group import ConsumerGroup
from rackwise.groups.consumer_records import (
    GROUP_EPOCH_KEY,
    PARTITION_METADATA_KEY,
    TARGET_METADATA_KEY,
    encode_tombstone,
    key_kind,
)
from rackwise.groups.consumer_records import Tombstone as GroupTombstone
from rackwise.groups.offsets import (
    NO_EXPIRE_TIMESTAMP,
    CommittedOffset,
    GroupOffsets,
    encode_group_key,
    encode_key,
)

Tombstone = tuple[bytes, None]
Base = Callable[[CommittedOffset], int]
"""The time an offset's retention counts from."""
Subscribed = Callable[[str], bool]
"""Whether the group is subscribed to a topic."""

NO_TIMESTAMP: Final = -1

_CONSUMER_GROUP_KEYS: Final = (TARGET_METADATA_KEY, PARTITION_METADATA_KEY, GROUP_EPOCH_KEY)
"""The group-level records of a consumer group, tombstoned in Kafka's order."""


def _commit_time(committed: CommittedOffset) -> int:
    return committed.commit_timestamp_ms


def _base(group: ClassicGroup | None) -> Base | None:
    """Kafka's ``ClassicGroup.offsetExpirationCondition`` (None: keep every offset)."""
    if group is None or not group.protocol_type:
        return _commit_time
    if group.state == EMPTY:
        since = group.state_timestamp_ms
        return lambda committed: since if since != NO_TIMESTAMP else committed.commit_timestamp_ms
    if (
        group.protocol_type == CONSUMER_PROTOCOL_TYPE
        and group.state == STABLE
        and group.subscribed_topics() is not None
    ):
        return _commit_time
    return None


def _consumer_subscribed(group: ConsumerGroup) -> Subscribed:
    """``ModernGroup.isSubscribedToTopic``: a topic a member names, or whose name its regular
    expression matches (a regular expression that does not compile matches nothing)."""
    names = set(group.subscribed_topic_names())
    patterns: list[re.Pattern[str]] = []
    for member in group.members.values():
        if member.topic_regex is not None:
            try:
                patterns.append(re.compile(member.topic_regex))
            except re.error:
                continue
    return lambda topic: topic in names or any(p.fullmatch(topic) for p in patterns)


def _expired(committed: CommittedOffset, base: Base, now_ms: int, retention_ms: int) -> bool:
    if committed.expire_timestamp_ms != NO_EXPIRE_TIMESTAMP:
        return now_ms >= committed.expire_timestamp_ms
    return now_ms - base(committed) >= retention_ms


def _offsets(
    state: GroupOffsets,
    group_id: str,
    base: Base,
    subscribed: Subscribed,
    now_ms: int,
    retention_ms: int,
    records: list[Tombstone],
) -> bool:
    """Append the tombstones of ``group_id``'s expired offsets: whether all of them expired
    (Kafka's ``cleanupExpiredOffsets``)."""
    everything = True
    for (topic, partition), committed in sorted(state.offsets(group_id).items()):
        if subscribed(topic) or not _expired(committed, base, now_ms, retention_ms):
            everything = False
        else:
            records.append((encode_key(group_id, topic, partition), None))
    return everything


def expired(
    state: GroupOffsets,
    live: Mapping[str, ClassicGroup],
    now_ms: int,
    retention_ms: int,
    consumers: Mapping[str, ConsumerGroup] | None = None,
) -> tuple[list[Tombstone], list[str]]:
    """(the tombstones of every expired offset and deleted group, the groups deleted) of one
    ``__consumer_offsets`` partition, given its live classic and consumer groups."""
    consumers = consumers or {}
    records: list[Tombstone] = []
    deleted: list[str] = []
    for group_id in sorted(set(state.groups()) | set(live) | set(consumers)):
        consumer = consumers.get(group_id)
        if consumer is not None:
            subscribed = _consumer_subscribed(consumer)
            everything = _offsets(
                state, group_id, _commit_time, subscribed, now_ms, retention_ms, records
            )
            if everything and not consumer.members:
                records.extend(consumer_group_tombstones(group_id))
                deleted.append(group_id)
            continue
        group = live.get(group_id)
        base = _base(group)
        if base is None:
            continue
        classic = (lambda _: False) if group is None else group.is_subscribed_to
        everything = _offsets(state, group_id, base, classic, now_ms, retention_ms, records)
        if everything and (group is None or group.state == EMPTY):
            records.append((encode_group_key(group_id), None))
            deleted.append(group_id)
    return records, deleted


def consumer_group_tombstones(group_id: str) -> list[Tombstone]:
    """The tombstones that delete an Empty consumer group (module docstring)."""
    return [
        (encode_tombstone(GroupTombstone(kind, group_id)), None) for kind in _CONSUMER_GROUP_KEYS
    ]


def consumer_group_records(records: Iterable[Tombstone]) -> list[Tombstone]:
    """The consumer groups' records among ``records`` (which their live groups replay)."""
    return [(key, value) for key, value in records if key_kind(key) in _CONSUMER_GROUP_KEYS]


def deleted_topics(state: GroupOffsets, topics: Iterable[str]) -> list[Tombstone]:
    """Tombstones for every offset any group of the partition holds for ``topics`` (Kafka's
    ``onPartitionsDeleted``: a deleted topic's offsets go with it)."""
    gone = set(topics)
    return [
        (encode_key(group_id, topic, partition), None)
        for group_id in sorted(state.groups())
        for topic, partition in sorted(state.offsets(group_id))
        if topic in gone
    ]
