"""This broker's replicas: which partitions it holds, as leader or follower, following the
metadata image; appends, reads and offsets for the request handlers (Kafka's
``ReplicaManager``, without its network side).

Goals
    * Follow the image (Kafka's ``ReplicaManager.applyDelta``): a partition assigned to this
      broker gets a log (created, or found on disk after a restart) and becomes leader or
      follower at the image's epochs; a partition no longer assigned here, or whose topic was
      deleted (or recreated under another id), has its replica removed and its log deleted.
    * Serve the handlers: :meth:`append` (Produce), :meth:`read` (Fetch, for consumers up to the
      high watermark and for followers up to the log end), :meth:`list_offset`,
      :meth:`end_offset_for_epoch`, :meth:`delete_records`.
    * Log directories (KIP-858): a new replica goes to the directory the image names for it
      when that directory is online here, else where the :class:`LogManager` chooses; where
      the log really is differs from the image, :attr:`dirs_to_assign` says so, for the
      broker to tell the controller. A replica whose directory failed, or whom the image
      places in a directory this broker does not have online, is offline: requests for it
      get KAFKA_STORAGE_ERROR and it is not created again elsewhere.
    * Say what changed, so that waiting requests are checked (:class:`Purgatory` keys are
      ``(topic, partition)``) and the fetchers follow the right leaders (:attr:`followed`).

Constraints
    Single-threaded (the broker's request loop); no sockets; the clock is injected. Errors are
    raised as typed exceptions carrying Kafka's codes; the handlers turn them into per-partition
    error codes.

Worked example
    An image in which broker 2 holds t-0 (replicas [1, 2, 3], leader 1, epoch 4): after
    :meth:`apply_image`, ``followed[("t", 0)] == 1`` and broker 2's fetcher for broker 1 fetches
    t-0 from 2's log end. In the next image the leader is 2 at epoch 5: ``followed`` loses t-0,
    the leader epoch cache gets (5, log end), and :meth:`append` accepts client batches.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Final

from rackwise.image import MetadataImage
from rackwise.records.constants import DIRECTORY_MIGRATING, DIRECTORY_UNASSIGNED
from rackwise.replica.errors import (
    NotLeaderOrFollowerException,
    OffsetNotAvailableException,
    OffsetOutOfRangeError,
    UnknownTopicOrPartitionException,
)
from rackwise.replica.partition import NO_LEADER, Partition, PartitionState
from rackwise.replica.selector import (
    ClientMetadata,
    PartitionView,
    ReplicaSelector,
    ReplicaView,
)
from rackwise.storage.errors import KafkaStorageException
from rackwise.storage.files import FileRegion
from rackwise.storage.log import LogAppendInfo, LogConfig, PartitionLog
from rackwise.storage.manager import LogManager

LOG: Final = logging.getLogger("rackwise.replica")

LATEST_TIMESTAMP: Final = -1
EARLIEST_TIMESTAMP: Final = -2
MAX_TIMESTAMP: Final = -3
EARLIEST_LOCAL_TIMESTAMP: Final = -4
LATEST_TIERED_TIMESTAMP: Final = -5
CONSUMER_REPLICA_ID: Final = -1
"""A Fetch's or ListOffsets' replica id when a client, not a follower, sends it."""
DEBUG_REPLICA_ID: Final = -2
NO_PREFERRED_REPLICA: Final = -1
UNKNOWN_EPOCH: Final = -1
UNKNOWN_OFFSET: Final = -1
READ_UNCOMMITTED: Final = 0

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class ReplicaConfig:
    """The broker settings the replicas use (Kafka's names in the docstrings)."""

    broker_id: int
    replica_lag_time_max_ms: int = 30_000
    """``replica.lag.time.max.ms``."""


@dataclass(frozen=True, slots=True)
class TopicSettings:
    """A topic's effective log settings and ``min.insync.replicas``."""

    log_config: LogConfig
    min_insync_replicas: int


@dataclass(frozen=True, slots=True)
class ReadResult:
    """One partition's part of a Fetch answer."""

    records: bytes | FileRegion
    """The batches, or where they lie in a segment file when the read was zero-copy."""
    high_watermark: int
    log_start_offset: int
    log_end_offset: int
    preferred_read_replica: int = NO_PREFERRED_REPLICA
    diverging_epoch: tuple[int, int] | None = None
    """(epoch, end offset) when a follower's last fetched epoch diverges from the leader."""


@dataclass(frozen=True, slots=True)
class OffsetAnswer:
    """ListOffsets for one partition: offset, timestamp, leader epoch (unknown: -1)."""

    offset: int
    timestamp: int
    leader_epoch: int


@dataclass(slots=True)
class Transition:
    """What one :meth:`ReplicaManager.apply_image` changed."""

    became_leader: list[TopicPartition] = field(default_factory=list)
    became_follower: list[TopicPartition] = field(default_factory=list)
    removed: list[TopicPartition] = field(default_factory=list)
    offline: list[TopicPartition] = field(default_factory=list)

    @property
    def changed(self) -> list[TopicPartition]:
        return [*self.became_leader, *self.became_follower, *self.removed, *self.offline]


class ReplicaManager:
    """This broker's partitions (module docstring)."""

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
        became_leader = partition.apply_registration(state, now)
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

    # ---- Produce ------------------------------------------------------------------------------

    def append(
        self, topic: str, index: int, records: bytes | memoryview, required_acks: int
    ) -> LogAppendInfo:
        """Append a client's batches to the leader's log (errors as typed exceptions)."""
        partition = self.get(topic, index)
        settings = self.topic_settings[topic]
        return partition.append_as_leader(
            records,
            required_acks=required_acks,
            min_insync_replicas=settings.min_insync_replicas,
            now_ms=self.clock(),
        )

    def acks_all_outcome(self, topic: str, index: int, required_offset: int) -> int | None:
        """None while an acks=all write ending before ``required_offset`` waits, else its
        error code."""
        partition = self.partitions.get((topic, index))
        if partition is None:
            return NotLeaderOrFollowerException.error_code
        return partition.acks_all_outcome(
            required_offset, self.topic_settings[topic].min_insync_replicas
        )

    # ---- the follower's side -------------------------------------------------------------------

    def append_as_follower(
        self,
        topic: str,
        index: int,
        records: bytes | memoryview,
        leader_high_watermark: int,
        leader_log_start_offset: int,
    ) -> bool:
        """Append batches fetched from the leader, take its high watermark (bounded by the
        local log end) and its log start offset (DeleteRecords and retention on the leader
        move the followers' too, as Kafka's ``processPartitionData``); whether the local high
        watermark or log start moved."""
        partition = self.partitions.get((topic, index))
        if partition is None or partition.is_leader:
            return False
        log = partition.log
        if records:
            log.append_as_follower(records)
        before = (log.high_watermark, log.log_start_offset)
        log.update_high_watermark(min(leader_high_watermark, log.log_end_offset))
        if log.log_start_offset < leader_log_start_offset <= log.high_watermark:
            log.maybe_increment_log_start_offset(leader_log_start_offset)
        return (log.high_watermark, log.log_start_offset) != before

    def truncate(self, topic: str, index: int, offset: int) -> None:
        """Truncate a follower's log to ``offset`` (a diverging epoch, or a leader whose log
        ends earlier). At or beyond the log end no record goes, but the leader epochs that
        start there do: a broker that led an epoch without appending to it keeps that epoch
        at its log end, and until it drops it the leader answers every fetch with the same
        diverging epoch (Kafka's ``truncateTo`` truncates the epoch cache either way)."""
        partition = self.partitions.get((topic, index))
        if partition is None or partition.is_leader:
            return
        if offset < partition.log_end_offset:
            LOG.info(
                "%s-%d: truncating from %d to %d to match the leader",
                topic,
                index,
                partition.log_end_offset,
                offset,
            )
        partition.log.truncate_to(offset)

    def reset_to(self, topic: str, index: int, offset: int) -> None:
        """Empty a follower's log and start it at ``offset`` (the leader's log starts later
        than this one ends)."""
        partition = self.partitions.get((topic, index))
        if partition is None or partition.is_leader:
            return
        LOG.info("%s-%d: log restarted at the leader's start offset %d", topic, index, offset)
        partition.log.truncate_fully_and_start_at(offset)

    # ---- Fetch -------------------------------------------------------------------------------

    def read(
        self,
        topic: str,
        index: int,
        *,
        fetch_offset: int,
        max_bytes: int,
        replica_id: int,
        current_leader_epoch: int,
        last_fetched_epoch: int,
        log_start_offset: int,
        min_one_batch: bool,
        client: ClientMetadata | None,
        selector: ReplicaSelector | None,
        zero_copy: bool = False,
    ) -> ReadResult:
        """One partition's records for a Fetch: from the leader for a follower (its fetch is
        also its progress report), from any replica for a consumer up to the high watermark,
        with a preferred read replica when the selector names another broker; ``zero_copy``
        asks for a file region to ``sendfile`` where one pays (``PartitionLog.read``)."""
        partition = self.get(topic, index)
        is_follower = replica_id >= 0
        if is_follower or client is None or not client.rack_id:
            partition.require_leader()
        partition.check_leader_epoch(current_leader_epoch)
        log = partition.log
        if is_follower:
            diverging = self._diverging_epoch(partition, last_fetched_epoch, fetch_offset)
            if diverging is not None:
                return self._result(partition, b"", diverging_epoch=diverging)
            partition.update_follower(
                replica_id,
                fetch_offset=fetch_offset,
                log_start_offset=log_start_offset,
                now_ms=self.clock(),
                lag_max_ms=self.config.replica_lag_time_max_ms,
            )
            bound = log.log_end_offset
        else:
            if partition.is_leader and client is not None and selector is not None:
                preferred = self._preferred_replica(partition, client, selector, fetch_offset)
                if preferred != self.broker_id:
                    return self._result(partition, b"", preferred_read_replica=preferred)
            bound = log.high_watermark
        if fetch_offset < log.log_start_offset or fetch_offset > log.log_end_offset:
            raise OffsetOutOfRangeError(
                f"Received request for offset {fetch_offset} for partition {topic}-{index}, "
                f"but we only have log segments in the range {log.log_start_offset} to "
                f"{log.log_end_offset}."
            )
        if fetch_offset > bound:  # a consumer ahead of the high watermark: nothing yet
            return self._result(partition, b"")
        chunk = log.read(
            fetch_offset,
            max_bytes=max_bytes,
            max_offset=bound,
            min_one_batch=min_one_batch,
            zero_copy=zero_copy,
        )
        return self._result(partition, chunk.records)

    def _result(
        self, partition: Partition, records: bytes | FileRegion, **extra: object
    ) -> ReadResult:
        log = partition.log
        return ReadResult(
            records=records,
            high_watermark=log.high_watermark,
            log_start_offset=log.log_start_offset,
            log_end_offset=log.log_end_offset,
            **extra,  # type: ignore[arg-type]
        )

    def _diverging_epoch(
        self, partition: Partition, last_fetched_epoch: int, fetch_offset: int
    ) -> tuple[int, int] | None:
        """Kafka's check in ``Partition.fetchRecords``: the follower's last fetched epoch ends
        earlier here (or is unknown), so it must truncate to (epoch, end offset) first."""
        if last_fetched_epoch < 0:
            return None
        epoch, end = partition.log.epochs.end_offset_for(
            last_fetched_epoch, partition.log.log_end_offset
        )
        if epoch < last_fetched_epoch or end < fetch_offset:
            return epoch, end
        return None

    def _preferred_replica(
        self,
        partition: Partition,
        client: ClientMetadata,
        selector: ReplicaSelector,
        fetch_offset: int,
    ) -> int:
        views = []
        leader_view: ReplicaView | None = None
        for replica in partition.state.replicas:
            registration = self.image.brokers.get(replica)
            if registration is None or registration.fenced:
                continue
            if replica == self.broker_id:
                view = ReplicaView(
                    replica,
                    registration.rack,
                    partition.log_end_offset,
                    self.clock(),
                    True,
                )
                leader_view = view
            else:
                follower = partition.followers.get(replica)
                if follower is None or follower.log_end_offset < fetch_offset:
                    continue
                if follower.log_start_offset > fetch_offset:
                    continue
                view = ReplicaView(
                    replica,
                    registration.rack,
                    follower.log_end_offset,
                    follower.last_caught_up_ms,
                    replica in partition.state.isr,
                )
            views.append(view)
        if leader_view is None:
            return self.broker_id
        chosen = selector.select(PartitionView(leader_view, tuple(views)), client)
        return chosen if any(v.broker_id == chosen for v in views) else self.broker_id

    def bytes_available(self, topic: str, index: int, fetch_offset: int, is_follower: bool) -> bool:
        """Whether a fetch from ``fetch_offset`` would get records now (a long poll's check)."""
        partition = self.partitions.get((topic, index))
        if partition is None:
            return True
        bound = partition.log_end_offset if is_follower else partition.high_watermark
        return bound > fetch_offset or fetch_offset > partition.log_end_offset

    # ---- ListOffsets, OffsetForLeaderEpoch, DeleteRecords -----------------------------------

    def list_offset(
        self, topic: str, index: int, timestamp: int, replica_id: int, current_leader_epoch: int
    ) -> OffsetAnswer:
        """ListOffsets for one partition, as Kafka's ``fetchOffsetForTimestamp`` (a client reads
        up to the high watermark; a follower up to the log end)."""
        partition = self.get(topic, index)
        partition.require_leader()
        partition.check_leader_epoch(current_leader_epoch)
        log = partition.log
        bound = log.log_end_offset if replica_id >= 0 else log.high_watermark
        epoch = partition.leader_epoch
        if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
            start = log.log_start_offset
            return OffsetAnswer(start, -1, _epoch_at(partition, start))
        if timestamp in (LATEST_TIMESTAMP, LATEST_TIERED_TIMESTAMP):
            if replica_id < 0 and self._high_watermark_behind_epoch_start(partition):
                raise OffsetNotAvailableException(
                    f"Failed to fetch offsets for partition {topic}-{index} with leader "
                    f"epoch {epoch} as this partition's high watermark is behind the start "
                    "of the current leader epoch"
                )
            return OffsetAnswer(bound, -1, _epoch_at(partition, bound - 1))
        if timestamp == MAX_TIMESTAMP:
            found = log.max_timestamp_offset()
            if found is None or found[0] >= bound:
                return OffsetAnswer(UNKNOWN_OFFSET, -1, UNKNOWN_EPOCH)
            return OffsetAnswer(found[0], found[1], found[2])
        found = log.offset_for_timestamp(timestamp)
        if found is None or found[0] >= bound:
            return OffsetAnswer(UNKNOWN_OFFSET, -1, UNKNOWN_EPOCH)
        return OffsetAnswer(found[0], found[1], found[2])

    @staticmethod
    def _high_watermark_behind_epoch_start(partition: Partition) -> bool:
        for epoch, start in reversed(partition.log.epochs.epoch_entries):
            if epoch == partition.leader_epoch:
                return partition.high_watermark < start
        return False

    def end_offset_for_epoch(
        self, topic: str, index: int, epoch: int, current_leader_epoch: int, replica_id: int
    ) -> tuple[int, int]:
        """OffsetForLeaderEpoch: (epoch, end offset) for the requested epoch, from the leader
        (a follower's request) or any replica (a consumer's), as Kafka answers."""
        partition = self.get(topic, index)
        if replica_id >= 0:
            partition.require_leader()
        partition.check_leader_epoch(current_leader_epoch)
        log = partition.log
        return log.epochs.end_offset_for(epoch, log.log_end_offset)

    def delete_records(self, topic: str, index: int, offset: int) -> int:
        """DeleteRecords on the leader: move the log start offset to ``offset`` (-1: the high
        watermark); the new low watermark follows once the followers move theirs."""
        partition = self.get(topic, index)
        partition.require_leader()
        log = partition.log
        target = log.high_watermark if offset == UNKNOWN_OFFSET else offset
        if target < 0 or target > log.high_watermark:
            raise OffsetOutOfRangeError(
                f"Cannot increment the log start offset to {target} of partition "
                f"{topic}-{index} since it is larger than the high watermark "
                f"{log.high_watermark}"
            )
        log.maybe_increment_log_start_offset(target)
        return target

    def low_watermark(self, topic: str, index: int) -> int:
        partition = self.get(topic, index)
        alive = [b for b, r in self.image.brokers.items() if not r.fenced]
        return partition.low_watermark(alive)

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


def _epoch_at(partition: Partition, offset: int) -> int:
    if offset < 0:
        return UNKNOWN_EPOCH
    epoch = partition.log.epochs.epoch_for_offset(offset)
    return UNKNOWN_EPOCH if epoch is None else epoch
