"""Which committed offsets and groups Kafka's coordinator removes on its own: offsets past
``offsets.retention.minutes``, groups left with nothing, and the offsets of deleted topics
(Kafka's ``GroupCoordinatorShard.cleanupGroupMetadata`` and ``onPartitionsDeleted``).

Goals
    The tombstones the coordinator appends, as Kafka decides them, so that a consumer group
    that has been gone for a week leaves nothing behind, and a deleted topic's offsets do not
    come back to a topic created later under its name.

Constraints
    * Pure: the partition's state, its live groups and the time in; records out.
    * When an offset expires depends on its group (Kafka's ``offsetExpirationCondition``):
      a simple group (no protocol type: consumers that only commit) counts from each commit;
      an Empty classic group counts from when it became Empty (from the commit for a group
      stored before that time was kept); a Stable ``consumer`` group whose subscriptions are
      known counts from each commit, for topics no member subscribes to; any other group keeps
      its offsets. A commit that asked for its own retention (OffsetCommit v2-v4) expires at
      the time it asked for. Offsets of a topic a member subscribes to never expire.
    * A group whose offsets have all expired (or that has none) is deleted too, if it is
      Empty: its ``GroupMetadataKey`` tombstone.

Worked example
    With the default 7 days, a group whose consumers all left on Monday, and whose offsets
    were committed then, loses its offsets and itself at the first check after the next
    Monday; a group that only commits (``assign`` and ``commit``) loses each partition's offset
    7 days after its last commit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Final

from rackwise.groups.classic import CONSUMER_PROTOCOL_TYPE, EMPTY, STABLE, ClassicGroup
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

NO_TIMESTAMP: Final = -1


def _base(group: ClassicGroup | None) -> Base | None:
    """Kafka's ``offsetExpirationCondition`` of ``group`` (None: a group with offsets only)."""
    if group is None or not group.protocol_type:
        return lambda committed: committed.commit_timestamp_ms
    if group.state == EMPTY:
        since = group.state_timestamp_ms
        return lambda committed: since if since != NO_TIMESTAMP else committed.commit_timestamp_ms
    if (
        group.protocol_type == CONSUMER_PROTOCOL_TYPE
        and group.state == STABLE
        and group.subscribed_topics() is not None
    ):
        return lambda committed: committed.commit_timestamp_ms
    return None


def _expired(committed: CommittedOffset, base: Base, now_ms: int, retention_ms: int) -> bool:
    if committed.expire_timestamp_ms != NO_EXPIRE_TIMESTAMP:
        return now_ms >= committed.expire_timestamp_ms
    return now_ms - base(committed) >= retention_ms


def expired(
    state: GroupOffsets,
    live: Mapping[str, ClassicGroup],
    now_ms: int,
    retention_ms: int,
) -> tuple[list[Tombstone], list[str]]:
    """(the tombstones of every expired offset and deleted group, the groups deleted) of one
    ``__consumer_offsets`` partition, given its live classic groups."""
    records: list[Tombstone] = []
    deleted: list[str] = []
    for group_id in sorted(set(state.groups()) | set(live)):
        group = live.get(group_id)
        base = _base(group)
        if base is None:
            continue
        everything_expired = True
        for (topic, partition), committed in sorted(state.offsets(group_id).items()):
            if group is not None and group.is_subscribed_to(topic):
                everything_expired = False
            elif _expired(committed, base, now_ms, retention_ms):
                records.append((encode_key(group_id, topic, partition), None))
            else:
                everything_expired = False
        if everything_expired and (group is None or group.state == EMPTY):
            records.append((encode_group_key(group_id), None))
            deleted.append(group_id)
    return records, deleted


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
