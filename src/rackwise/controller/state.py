"""The controller's view of the log: the image, plus what it derives from the records.

:meth:`ControllerState.replay` is the controller's one way to apply records, for the live log,
recovery and snapshot loading alike: the image through :class:`rackwise.image.MetadataDelta`
(whose dispatch refuses a record it does not know), then the derived views. They are hard
state, rebuilt from the same records after a restart:

* the offset of each broker's RegisterBrokerRecord (Kafka's ``registerBrokerRecordOffsets``):
  a broker is unfenced once it has applied that offset. Records from a snapshot count as at the
  snapshot's last offset, as in Kafka;
* :class:`PartitionIndex`: for each broker the partitions with it in the ISR and in the ELR, the
  leaderless partitions (Kafka's ``BrokersToIsrs`` / ``BrokersToElrs``), so that fencing a
  broker looks at its partitions only, and the partitions not led by their preferred (first)
  replica (Kafka's ``imbalancedPartitions``; with a ``leaders.preference``, not led where
  :attr:`ControllerState.preferred_leader` says: a change of the preference touches the topic's
  partitions). Built on first use from the image, then kept up to date;
* the names of topics with '.' or '_', by their unified form, for Kafka's collision check.
  Also built on first use.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from rackwise.controller.names import has_collision_chars, unify_collision_chars
from rackwise.image import MetadataDelta, MetadataImage, PartitionRegistration
from rackwise.records.constants import NO_LEADER
from rackwise.records.registry import RECORD_TYPES_BY_NAME

TopicIdPartition = tuple[uuid.UUID, int]
LeaderOf = Callable[[PartitionRegistration], int]
PreferredLeader = Callable[[MetadataImage, uuid.UUID], LeaderOf]
"""For a topic, where each of its partitions' leadership belongs (default: the first replica).
Asked once per topic in a build or an update: a topic's configs are read once, not once per
partition."""
ReplayBatch = tuple[Sequence[Any], int, "int | None"]
"""Records, the offset of the first, and the offset they all count as if from a snapshot."""


def record_classes(*names: str) -> frozenset[type]:
    """The classes of every version of the named record types."""
    return frozenset(cls for name in names for cls in RECORD_TYPES_BY_NAME[name].classes.values())


REGISTER_BROKER = record_classes("RegisterBrokerRecord")
UNREGISTER_BROKER = record_classes("UnregisterBrokerRecord")
TOPIC = record_classes("TopicRecord")
REMOVE_TOPIC = record_classes("RemoveTopicRecord")
PARTITION_CHANGES = record_classes("PartitionRecord", "PartitionChangeRecord")
CONFIG = record_classes("ConfigRecord")
LEADERS_PREFERENCE = "leaders.preference"
DEFAULT_LEADERS_PREFERENCE = "default.leaders.preference"


class PartitionIndex:
    """Which partitions each broker is in the ISR / ELR of, which have no leader, and which are
    not led by their preferred replica."""

    def __init__(self, preferred: PreferredLeader | None = None) -> None:
        self.preferred = preferred
        self.isr: dict[int, set[TopicIdPartition]] = {}
        self.elr: dict[int, set[TopicIdPartition]] = {}
        self.leaderless: set[TopicIdPartition] = set()
        self.imbalanced: set[TopicIdPartition] = set()

    @staticmethod
    def build(image: MetadataImage, preferred: PreferredLeader | None = None) -> PartitionIndex:
        index = PartitionIndex(preferred)
        for topic_id, topic in image.topics_by_id.items():
            leader_of = None if preferred is None else preferred(image, topic_id)
            for partition_id, partition in topic.partitions.items():
                index._add((topic_id, partition_id), partition, leader_of)
        return index

    def _add(
        self, key: TopicIdPartition, partition: PartitionRegistration, leader_of: LeaderOf | None
    ) -> None:
        for broker in partition.isr:
            self.isr.setdefault(broker, set()).add(key)
        for broker in partition.eligible_leader_replicas or ():
            self.elr.setdefault(broker, set()).add(key)
        if partition.leader == NO_LEADER:
            self.leaderless.add(key)
        if not partition.replicas:
            self.imbalanced.add(key)
        elif leader_of is None:
            if partition.leader != partition.replicas[0]:
                self.imbalanced.add(key)
        elif partition.leader != leader_of(partition):
            self.imbalanced.add(key)

    def _remove(self, key: TopicIdPartition, partition: PartitionRegistration) -> None:
        for broker in partition.isr:
            _discard(self.isr, broker, key)
        for broker in partition.eligible_leader_replicas or ():
            _discard(self.elr, broker, key)
        self.leaderless.discard(key)
        self.imbalanced.discard(key)

    def update(
        self,
        old: MetadataImage,
        new: MetadataImage,
        touched: Iterable[TopicIdPartition],
        removed_topics: Iterable[uuid.UUID],
    ) -> None:
        """Move the index from ``old`` to ``new``, given what the records between touched."""
        for topic_id in removed_topics:
            topic = old.topics_by_id.get(topic_id)
            if topic is not None:
                for partition_id, partition in topic.partitions.items():
                    self._remove((topic_id, partition_id), partition)
        leaders_of: dict[uuid.UUID, LeaderOf | None] = {}
        for key in touched:
            before = _partition(old, key)
            if before is not None:
                self._remove(key, before)
            after = _partition(new, key)
            if after is not None:
                if key[0] not in leaders_of:
                    preferred = self.preferred
                    leaders_of[key[0]] = None if preferred is None else preferred(new, key[0])
                self._add(key, after, leaders_of[key[0]])

    def partitions_with_isr(self, broker_id: int) -> list[TopicIdPartition]:
        return sorted(self.isr.get(broker_id, ()))

    def partitions_with_elr(self, broker_id: int) -> list[TopicIdPartition]:
        return sorted(self.elr.get(broker_id, ()))

    def leaderless_partitions(self) -> list[TopicIdPartition]:
        return sorted(self.leaderless)

    def imbalanced_partitions(self) -> list[TopicIdPartition]:
        """The partitions whose leader is not their first replica (leaderless ones too)."""
        return sorted(self.imbalanced)


def _discard(index: dict[int, set[TopicIdPartition]], broker: int, key: TopicIdPartition) -> None:
    keys = index.get(broker)
    if keys is not None:
        keys.discard(key)
        if not keys:
            del index[broker]


def _partition(image: MetadataImage, key: TopicIdPartition) -> PartitionRegistration | None:
    topic = image.topics_by_id.get(key[0])
    return None if topic is None else topic.partitions.get(key[1])


class ControllerState:
    """The image and its derived views (see the module docstring): the image of every
    committed record, plus, inside a group commit, of the group's records so far.
    ``end_offset`` is the offset after the last record applied."""

    def __init__(self, image: MetadataImage | None = None, end_offset: int = 0) -> None:
        self.image = image if image is not None else MetadataImage()
        self.end_offset = end_offset
        self.register_offsets: dict[int, int] = {}
        self._index: PartitionIndex | None = None
        self._collisions: dict[str, set[str]] | None = None
        self.preferred_leader: PreferredLeader | None = None
        """Where leadership belongs, for the index's imbalanced partitions (None: the first
        replica, Kafka's); set before the index is first used."""

    def checkpoint(self) -> tuple[MetadataImage, int, dict[int, int]]:
        """What :meth:`restore` needs to undo replays made after this call."""
        return self.image, self.end_offset, dict(self.register_offsets)

    def restore(self, checkpoint: tuple[MetadataImage, int, dict[int, int]]) -> None:
        """Go back to a :meth:`checkpoint` (the lazily built views are built again)."""
        self.image, self.end_offset, offsets = checkpoint
        self.register_offsets = dict(offsets)
        self._index = None
        self._collisions = None

    @property
    def partition_index(self) -> PartitionIndex:
        if self._index is None:
            self._index = PartitionIndex.build(self.image, self.preferred_leader)
        return self._index

    @property
    def collision_names(self) -> dict[str, set[str]]:
        """Existing topic names with '.' or '_', by unified name."""
        if self._collisions is None:
            self._collisions = {}
            for name in self.image.topics_by_name:
                if has_collision_chars(name):
                    self._collisions.setdefault(unify_collision_chars(name), set()).add(name)
        return self._collisions

    def replay(
        self, records: Sequence[Any], base_offset: int, *, snapshot_offset: int | None = None
    ) -> MetadataImage:
        """Apply ``records``, the first at offset ``base_offset``; records of a snapshot all
        count as at ``snapshot_offset``. Returns the image before."""
        return self.replay_batches([(records, base_offset, snapshot_offset)])

    def replay_batches(self, batches: Iterable[ReplayBatch]) -> MetadataImage:
        """Apply several batches through one delta (recovery replays a whole snapshot and log
        this way). Returns the image before."""
        old = self.image
        delta = MetadataDelta(old)
        seen = _Seen()
        for records, base_offset, snapshot_offset in batches:
            delta.replay_all(records)
            self._observe(records, base_offset, snapshot_offset, old, seen)
            if snapshot_offset is None:
                self.end_offset = base_offset + len(records)
            else:
                self.end_offset = snapshot_offset + 1
        self.image = delta.apply()
        if seen.preferences_changed:
            self._index = None  # a default leaders.preference changed: built again on use
        for name in seen.preference_topics:
            topic = self.image.topics_by_name.get(name)
            if topic is not None and self._index is not None:
                seen.touched.update((topic.topic_id, p) for p in topic.partitions)
        if self._index is not None and (seen.touched or seen.removed):
            self._index.update(old, self.image, seen.touched, seen.removed)
        return old

    def _observe(
        self,
        records: Sequence[Any],
        base_offset: int,
        snapshot_offset: int | None,
        old: MetadataImage,
        seen: _Seen,
    ) -> None:
        for position, record in enumerate(records):
            kind = type(record)
            if kind in PARTITION_CHANGES:
                if self._index is not None:
                    seen.touched.add((record.topic_id, record.partition_id))
            elif kind in CONFIG and record.name == LEADERS_PREFERENCE:
                seen.preference_topics.add(record.resource_name)
            elif kind in CONFIG and record.name == DEFAULT_LEADERS_PREFERENCE:
                seen.preferences_changed = True
            elif kind in REGISTER_BROKER:
                offset = base_offset + position if snapshot_offset is None else snapshot_offset
                self.register_offsets[record.broker_id] = offset
            elif kind in UNREGISTER_BROKER:
                self.register_offsets.pop(record.broker_id, None)
            elif kind in TOPIC:
                seen.created[record.topic_id] = record.name
                self._note_topic(record.name, added=True)
            elif kind in REMOVE_TOPIC:
                seen.removed.append(record.topic_id)
                topic = old.topics_by_id.get(record.topic_id)
                name = seen.created.pop(record.topic_id, None) if topic is None else topic.name
                if name is not None:
                    self._note_topic(name, added=False)

    def _note_topic(self, name: str, *, added: bool) -> None:
        if self._collisions is None or not has_collision_chars(name):
            return
        names = self._collisions.setdefault(unify_collision_chars(name), set())
        if added:
            names.add(name)
        else:
            names.discard(name)
            if not names:
                del self._collisions[unify_collision_chars(name)]


class _Seen:
    """What a run of batches touched, for the derived views."""

    def __init__(self) -> None:
        self.touched: set[TopicIdPartition] = set()
        self.removed: list[uuid.UUID] = []
        self.created: dict[uuid.UUID, str] = {}
        self.preference_topics: set[str] = set()
        self.preferences_changed = False
