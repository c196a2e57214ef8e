"""The partitions this broker hosts, following the metadata image: which it holds, as leader
or follower, where their logs are, and which are offline (the image side of Kafka's
``ReplicaManager``: ``applyDelta``, ``becomeLeaderOrFollower``, ``handleLogDirFailure``).

Goals
    * Follow the image (Kafka's ``ReplicaManager.applyDelta``): a partition assigned to this
      broker gets a log (created, or found on disk after a restart) and becomes leader or
      follower at the image's epochs; a partition no longer assigned here, or whose topic was
      deleted (or recreated under another id), has its replica removed and its log deleted.
    * Log directories (KIP-858): a new replica goes to the directory the image names for it
      when that directory is online here, else where the :class:`LogManager` chooses; where
      the log really is differs from the image, :attr:`HostedReplicas.dirs_to_assign` says so,
      for the broker to tell the controller. A replica whose directory failed, or whom the
      image places in a directory this broker does not have online, is offline: requests for
      it get KAFKA_STORAGE_ERROR and it is not created again elsewhere.
    * Say what changed (:class:`Transition`), so that waiting requests are checked
      (:class:`~rackwise.replica.purgatory.Purgatory` keys are ``(topic, partition)``) and the
      fetchers follow the right leaders (:attr:`HostedReplicas.followed`).
    * The leaders' ISR: the ISR each leader wants (:meth:`HostedReplicas.isr_wanted`) and its
      high watermark after the ISR changed.

Constraints
    Single-threaded (the broker's request loop); no sockets; the clock is injected. A lookup
    of a replica that is not here raises Kafka's error for why (:meth:`HostedReplicas.get`).

Worked example
    An image in which broker 2 holds t-0 (replicas [1, 2, 3], leader 1, epoch 4): after
    :meth:`~HostedReplicas.apply_image`, ``followed[("t", 0)] == 1`` and the transition's
    ``became_follower`` is ``[("t", 0)]``. In the next image the leader is 2 at epoch 5:
    ``followed`` loses t-0, ``became_leader`` is ``[("t", 0)]`` and the leader epoch cache gets
    (5, log end).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Final

from rackwise.image import MetadataImage
from rackwise.records.constants import DIRECTORY_MIGRATING, DIRECTORY_UNASSIGNED
from rackwise.replica.errors import NotLeaderOrFollowerException, UnknownTopicOrPartitionException
from rackwise.replica.partition import NO_LEADER, Partition, PartitionState
from rackwise.storage.errors import KafkaStorageException
from rackwise.storage.log import LogConfig, PartitionLog
from rackwise.storage.manager import LogManager
from rackwise.topology import count_domains

LOG: Final = logging.getLogger("rackwise.replica")

UNKNOWN_EPOCH: Final = -1

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class ReplicaConfig:
    """The broker settings the replicas use (Kafka's names in the docstrings)."""

    broker_id: int
    replica_lag_time_max_ms: int = 30_000
    """``replica.lag.time.max.ms``."""


@dataclass(frozen=True, slots=True)
class TopicSettings:
    """A topic's effective log settings, ``min.insync.replicas``, and ``min.insync.racks``
    with its ``min.insync.racks.level`` (how many failure domains of that level of the rack
    tree an acks=all write's ISR must span)."""

    log_config: LogConfig
    min_insync_replicas: int
    min_insync_racks: int = 1
    min_insync_racks_level: int = 1


@dataclass(slots=True)
class Transition:
    """What one :meth:`HostedReplicas.apply_image` changed."""

    became_leader: list[TopicPartition] = field(default_factory=list)
    became_follower: list[TopicPartition] = field(default_factory=list)
    removed: list[TopicPartition] = field(default_factory=list)
    offline: list[TopicPartition] = field(default_factory=list)
    read_replica: list[TopicPartition] = field(default_factory=list)
    """Followers that joined or left the ISR, or that a reassignment started removing: a
    consumer's waiting fetch there is answered again (it may have to go to the leader)."""

    @property
    def changed(self) -> list[TopicPartition]:
        return [
            *self.became_leader,
            *self.became_follower,
            *self.removed,
            *self.offline,
            *self.read_replica,
        ]


class HostedReplicas:
    """This broker's partitions as the image assigns them (module docstring)."""

    def __init__(
        self,
        config: ReplicaConfig,
        logs: LogManager,
        settings: Callable[[MetadataImage, str], TopicSettings],
        clock: Callable[[], int],
    ) -> None:
        self.config = config
        self.broker_id = config.broker_id
        self.logs = logs
        self.settings = settings
        self.clock = clock
        self.partitions: dict[TopicPartition, Partition] = {}
        self.topic_settings: dict[str, TopicSettings] = {}
        self.followed: dict[TopicPartition, int] = {}
        """The leader each follower partition fetches from."""
        self.offline: set[TopicPartition] = set()
        """Partitions assigned here whose log directory is offline (module docstring)."""
        self.dirs_to_assign: dict[TopicPartition, tuple[uuid.UUID, uuid.UUID]] = {}
        """(topic id, directory id) of replicas whose directory the image does not know yet."""
        self.image = MetadataImage()
        self._eligible: frozenset[int] | None = None
        self.racks: dict[int, str | None] = {}
        """Each registered broker's ``broker.rack``, from the image."""

    def isr_domains(self, partition: Partition, settings: TopicSettings) -> int:
        """How many failure domains at ``min.insync.racks.level`` ``partition``'s ISR spans
        (not counted, 1, when ``min.insync.racks`` is 1: any ISR meets it)."""
        if settings.min_insync_racks <= 1:
            return 1
        return count_domains(partition.state.isr, self.racks, settings.min_insync_racks_level)

    # ---- the image ------------------------------------------------------------------------

    def apply_image(self, image: MetadataImage) -> Transition:
        """Become leader or follower of every partition ``image`` assigns to this broker, and
        drop the others (module docstring)."""
        now = self.clock()
        transition = Transition()
        assigned: set[TopicPartition] = set()
        self.topic_settings = {}
        eligible = frozenset(
            b
            for b, registration in image.brokers.items()
            if not registration.fenced and not registration.in_controlled_shutdown
        )
        self._eligible = eligible
        self.racks = {b: registration.rack for b, registration in image.brokers.items()}
        for partition in self.partitions.values():
            partition.eligible = eligible
        for topic, registration in image.iter_partitions():
            if self.broker_id not in registration.replicas:
                continue
            key = (topic.name, registration.partition_id)
            assigned.add(key)
            settings = self.topic_settings.get(topic.name)
            if settings is None:
                settings = self.settings(image, topic.name)
                self.topic_settings[topic.name] = settings
            directory = DIRECTORY_UNASSIGNED
            for replica, known in zip(
                registration.replicas, registration.directories, strict=False
            ):
                if replica == self.broker_id:
                    directory = known
            state = PartitionState(
                topic_id=topic.topic_id,
                replicas=tuple(registration.replicas),
                isr=tuple(registration.isr),
                leader=registration.leader,
                leader_epoch=registration.leader_epoch,
                partition_epoch=registration.partition_epoch,
                removing=tuple(registration.removing_replicas),
            )
            if key in self.offline:
                continue
            self._apply_partition(key, state, settings, now, transition, directory)
        for key in [k for k in self.partitions if k not in assigned]:
            self._remove(key)
            transition.removed.append(key)
        self.offline &= assigned
        for key in [k for k in self.dirs_to_assign if k not in assigned]:
            del self.dirs_to_assign[key]
        self.image = image
        return transition

    def _apply_partition(
        self,
        key: TopicPartition,
        state: PartitionState,
        settings: TopicSettings,
        now: int,
        transition: Transition,
        directory: uuid.UUID,
    ) -> None:
        partition = self.partitions.get(key)
        if partition is not None and partition.state.topic_id != state.topic_id:
            self._remove(key)  # the topic was deleted and created again under the same name
            partition = None
        if partition is None:
            log = self._open_log(key, state.topic_id, settings.log_config, directory)
            if log is None:
                self.offline.add(key)
                transition.offline.append(key)
                return
            previous = PartitionState(state.topic_id, (), (), NO_LEADER, -1, -1)
            partition = Partition(
                key[0],
                key[1],
                self.broker_id,
                log,
                previous,
                lag_max_ms=self.config.replica_lag_time_max_ms,
                eligible=self._eligible,
            )
            self.partitions[key] = partition
        elif partition.log.config != settings.log_config:
            partition.log.update_config(settings.log_config)
        was_leader = partition.is_leader
        old_leader, old_epoch = partition.state.leader, partition.state.leader_epoch
        me = self.broker_id
        was_valid = me in partition.state.isr and me not in partition.state.removing
        became_leader = partition.apply_registration(state, now)
        if not partition.is_leader and was_valid != (me in state.isr and me not in state.removing):
            transition.read_replica.append(key)
        if became_leader:
            transition.became_leader.append(key)
            self.followed.pop(key, None)
            LOG.info(
                "%s-%d: leader at epoch %d from offset %d (high watermark %d)",
                key[0],
                key[1],
                state.leader_epoch,
                partition.log_end_offset,
                partition.high_watermark,
            )
        elif not partition.is_leader and (
            was_leader or old_leader != state.leader or old_epoch != state.leader_epoch
        ):
            transition.became_follower.append(key)
            if state.leader >= 0:
                self.followed[key] = state.leader
            else:
                self.followed.pop(key, None)

    def _open_log(
        self, key: TopicPartition, topic_id: uuid.UUID, config: LogConfig, directory: uuid.UUID
    ) -> PartitionLog | None:
        """The replica's log (module docstring); None if it is offline."""
        placeholder = directory in (DIRECTORY_UNASSIGNED, DIRECTORY_MIGRATING)
        target = None if placeholder else self.logs.dir_of(directory)
        offline_target = target is None or not self.logs.is_online(target)
        if not placeholder and offline_target and self.logs.get(*key) is None:
            LOG.error("%s-%d: its log dir %s is offline here", key[0], key[1], directory)
            return None
        if key in {(tp.topic, tp.partition) for tp in self.logs.duplicates}:
            self.logs.resolve_duplicate(key[0], key[1], target)
        try:
            log = self.logs.get_or_create(
                key[0], key[1], topic_id=topic_id, config=config, preferred_dir=target
            )
        except KafkaStorageException as e:
            LOG.error("%s-%d: %s", key[0], key[1], e)
            return None
        actual = self.logs.dir_ids.get(log.directory.parent)
        future = self.logs.future(*key)
        moving_to_image_dir = future is not None and future.directory.parent == target
        if actual is not None and actual != directory and not moving_to_image_dir:
            # (a move the controller already recorded resumes after a restart: not undone)
            self.dirs_to_assign[key] = (topic_id, actual)
        return log

    def take_offline(self, keys: Iterable[TopicPartition]) -> list[TopicPartition]:
        """The replicas of a failed log directory stop (KIP-112); the ones that were here.

        A directory not yet reported for one of them stays in :attr:`dirs_to_assign`: the
        controller finds a failed directory's replicas by the directories it has recorded, so
        without that report the replica would keep its ISR place (and perhaps its leadership)
        though it is gone. Kafka's controller takes such a late assignment to an offline
        directory as the replica going offline."""
        gone = []
        for key in keys:
            if self.partitions.pop(key, None) is not None:
                gone.append(key)
            self.followed.pop(key, None)
            self.offline.add(key)
        return gone

    def _remove(self, key: TopicPartition) -> None:
        partition = self.partitions.pop(key)
        self.followed.pop(key, None)
        self.logs.delete(partition.topic, partition.index)
        LOG.info("%s-%d: replica removed and its log deleted", key[0], key[1])

    # ---- lookups ------------------------------------------------------------------------------

    def get(self, topic: str, index: int) -> Partition:
        """This broker's replica of the partition; UNKNOWN_TOPIC_OR_PARTITION when the image
        has no such partition, NOT_LEADER_OR_FOLLOWER when it is not assigned here."""
        partition = self.partitions.get((topic, index))
        if partition is not None:
            return partition
        if (topic, index) in self.offline:
            raise KafkaStorageException(
                f"Partition {topic}-{index} is in an offline log directory on broker "
                f"{self.broker_id}"
            )
        known = self.image.topic(topic)
        if known is not None and index in known.partitions:
            raise NotLeaderOrFollowerException(
                f"Broker {self.broker_id} holds no replica of {topic}-{index}"
            )
        raise UnknownTopicOrPartitionException(
            f"This server does not host this topic-partition: {topic}-{index}"
        )

    def leader_of(self, topic: str, index: int) -> tuple[int, int]:
        """(leader id, leader epoch) of the partition in the image, (-1, -1) if unknown."""
        known = self.image.topic(topic)
        if known is None or index not in known.partitions:
            return NO_LEADER, UNKNOWN_EPOCH
        registration = known.partitions[index]
        return registration.leader, registration.leader_epoch

    # ---- the ISR -------------------------------------------------------------------------------

    def isr_wanted(self, eligible: Iterable[int]) -> dict[TopicPartition, tuple[int, ...]]:
        """For each partition led here whose ISR should change, the ISR wanted."""
        now = self.clock()
        ok = tuple(eligible)
        wanted = {}
        for key, partition in self.partitions.items():
            if not partition.is_leader:
                continue
            isr = partition.isr_plan(now, self.config.replica_lag_time_max_ms, ok)
            if isr != partition.state.isr:
                wanted[key] = isr
        return wanted

    def maybe_increment_high_watermarks(self) -> list[TopicPartition]:
        """Recompute every leader's high watermark (after the ISR changed)."""
        now = self.clock()
        moved = []
        for key, partition in self.partitions.items():
            if partition.maybe_increment_high_watermark(now, self.config.replica_lag_time_max_ms):
                moved.append(key)
        return moved

    def topic_name(self, topic_id: uuid.UUID | None) -> str | None:
        """The name of the topic with ``topic_id`` in the applied image (None if unknown)."""
        topic = self.image.topics_by_id.get(topic_id) if topic_id is not None else None
        return None if topic is None else topic.name

    def topic_id(self, name: str) -> uuid.UUID | None:
        """The id of topic ``name`` in the applied image (None if unknown)."""
        topic = self.image.topics_by_name.get(name)
        return None if topic is None else topic.topic_id
