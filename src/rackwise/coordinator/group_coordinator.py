"""The group coordinator's partitions (Kafka's ``GroupCoordinatorService`` and its runtime):
which broker coordinates a group, the committed offsets and stored groups of the
``__consumer_offsets`` partitions this broker leads, loaded from their logs and appended to
them; the live groups' members are :mod:`rackwise.coordinator.membership`'s, which learns of
each load and of each partition dropped. The APIs over it are
:mod:`rackwise.coordinator.group_apis`.

Goals
    The coordinator of a group is the leader of its ``__consumer_offsets`` partition
    (:func:`~rackwise.groups.offsets.partition_for`), and what it answers is what that
    partition's log holds, across restarts and leader changes.

Constraints
    * ``__consumer_offsets`` is created by the first FindCoordinator for a group (whatever
      ``auto.create.topics.enable`` says, as Kafka), with ``offsets.topic.num.partitions``,
      ``offsets.topic.replication.factor`` and ``offsets.topic.segment.bytes``, compacted;
      until it has a leader the answer is COORDINATOR_NOT_AVAILABLE, which clients retry (the
      creation is asked for at most once a second: a cluster with fewer brokers than the
      replication factor refuses it, and says so in the log, each time). A group's partition
      is found with the topic's own partition count.
    * A partition's state belongs to one leader epoch: once this broker becomes its leader
      (or its epoch changes) the state is loaded from the log in the background, 1 MiB per
      turn of the event loop, as Kafka loads on election; a request that comes meanwhile
      waits up to :data:`LOAD_WAIT_S` for it, then gets COORDINATOR_LOAD_IN_PROGRESS
      (retriable). The state of a partition no longer led here is dropped. A record that
      does not parse is logged and skipped.
    * A commit is one batch appended with acks=all; it enters the state, and so OffsetFetch's
      answers, once the in-sync replicas have it. The append itself does not wait, so the
      log takes the commits in the order they come; they then wait for the high watermark
      together (the broker's purgatory, as Kafka's coordinator defers its writes' answers),
      and the state takes them in the log's order: a commit whose records are in waits for
      the ones before it. Each is answered within ``offsets.commit.timeout.ms`` of its
      append, however many wait on the partition. Append errors are answered as Kafka's
      coordinator maps them (NOT_ENOUGH_REPLICAS and REQUEST_TIMED_OUT:
      COORDINATOR_NOT_AVAILABLE; NOT_LEADER_OR_FOLLOWER: NOT_COORDINATOR). A write not
      acknowledged within the timeout is answered COORDINATOR_NOT_AVAILABLE but stays in the
      queue: the coordinator goes on waiting for its acks, and it enters the state once they
      are in, as Kafka's runtime commits a write whose answer timed out once the high
      watermark passes it (the request that sent it being cancelled changes nothing either).
      A write that failed after it reached the local log (the acks' error, or the partition
      no longer led here) is not replayed and drops the partition's state, so that the next
      request reloads it from the log rather than answer from a state that may lack it.
    * Clients may not write to ``__consumer_offsets`` themselves (INVALID_TOPIC_EXCEPTION, as
      Kafka; :mod:`rackwise.broker.data_apis`).
    * The coordinator writes tombstones of its own (:mod:`rackwise.groups.expiry`): every
      ``offsets.retention.check.interval.ms`` for the expired offsets and emptied groups of
      each partition led here, and, when an image no longer has a topic (by id), for that
      topic's offsets in every group of those partitions.

Algorithm
    :meth:`GroupCoordinator.state` maps a group to its partition and that partition to its
    loaded state (or the error); :meth:`GroupCoordinator.append` writes a batch of
    ``OffsetCommitKey``/``OffsetCommitValue`` records, queues it behind the partition's
    writes still waiting for their acks and, once its own acks are in, settles the queue from
    its head: each write whose outcome is known is replayed into the state (or, failed,
    drops it), in the log's order; loading replays the log from its start offset to its end.

Worked example
    On a 3-broker cluster, broker 2 leads ``__consumer_offsets-9``, the partition of
    ``billing``, and loads it as soon as it applies the image that says so; its answers about
    ``billing`` come from that state. ``kill -9`` of broker 2 moves the leadership to broker
    3, which loads the partition from its own replica and answers the same offsets.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any, Final, Protocol

from rackwise.common.error_codes import (
    COORDINATOR_LOAD_IN_PROGRESS,
    COORDINATOR_NOT_AVAILABLE,
    INVALID_REQUEST,
    NONE,
    NOT_COORDINATOR,
    REQUEST_TIMED_OUT,
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    UNKNOWN_SERVER_ERROR,
)
from rackwise.common.errors import RackwiseError
from rackwise.coordinator.consumer_groups import ConsumerGroupDriver
from rackwise.coordinator.membership import GroupMembership
from rackwise.groups.classic import EMPTY
from rackwise.groups.consumer_group import OwnershipConflict
from rackwise.groups.consumer_records import CONSUMER_GROUP_KEYS, key_kind
from rackwise.groups.consumer_types import ConsumerGroupConfig
from rackwise.groups.expiry import consumer_group_records, deleted_topics, expired
from rackwise.groups.offsets import (
    KEY_VERSION,
    OFFSETS_TOPIC,
    GroupOffsets,
    OffsetsFormatError,
    partition_for,
)
from rackwise.image import MetadataImage, TopicImage, endpoint_on
from rackwise.net import request_listener
from rackwise.node.data_config import DataPathConfig
from rackwise.records.batch_v2 import iter_headers
from rackwise.replica.manager import ReplicaManager
from rackwise.storage.batch import build_batch
from rackwise.storage.log import LogAppendInfo
from rackwise.storage.record_codec import iter_records

LOG: Final = logging.getLogger("rackwise.coordinator")


GROUP_KEY: Final = 0
TRANSACTION_KEY: Final = 1
NO_NODE: Final = {"node_id": -1, "host": "", "port": -1}
"""Kafka's ``Node.noNode()``, in an answer that names no coordinator."""
LOAD_CHUNK_BYTES: Final = 1 << 20
LOAD_WAIT_S: Final = 5.0
"""How long a request waits for its partitions to load before it is answered
COORDINATOR_LOAD_IN_PROGRESS."""
CREATE_INTERVAL_S: Final = 1.0
CONTROL_BATCH: Final = 0x20

_APPEND_ERRORS: Final = {
    # Kafka's CoordinatorRuntime / GroupCoordinatorService.normalizeException
    3: COORDINATOR_NOT_AVAILABLE,  # UNKNOWN_TOPIC_OR_PARTITION
    19: COORDINATOR_NOT_AVAILABLE,  # NOT_ENOUGH_REPLICAS
    20: COORDINATOR_NOT_AVAILABLE,  # NOT_ENOUGH_REPLICAS_AFTER_APPEND
    7: COORDINATOR_NOT_AVAILABLE,  # REQUEST_TIMED_OUT
    6: NOT_COORDINATOR,  # NOT_LEADER_OR_FOLLOWER
    56: NOT_COORDINATOR,  # KAFKA_STORAGE_ERROR
    10: UNKNOWN_SERVER_ERROR,  # MESSAGE_TOO_LARGE
    18: UNKNOWN_SERVER_ERROR,  # RECORD_LIST_TOO_LARGE
}


class PartitionWriter(Protocol):
    """How the coordinator writes ``__consumer_offsets``: through the broker's own append path
    (Kafka's ``CoordinatorPartitionWriter``), implemented by the broker's data APIs."""

    def append_now(
        self, topic: str, index: int, records: bytes
    ) -> tuple[int, LogAppendInfo | None]:
        """Append as the partition's leader with acks=all, without waiting: the error code
        and where the records went."""
        ...

    async def wait_acks(self, topic: str, index: int, info: LogAppendInfo, timeout_s: float) -> int:
        """Wait for the in-sync replicas to have the records appended at ``info``: NONE, the
        error, or REQUEST_TIMED_OUT after ``timeout_s``."""
        ...


class _Unacked:
    """A write in a partition's log, not settled yet (:meth:`GroupCoordinator.append`)."""

    __slots__ = ("code", "records", "settled", "state")

    def __init__(self, records: Sequence[tuple[bytes, bytes | None]], state: GroupOffsets) -> None:
        self.records = records
        self.state = state
        self.code: int | None = None
        """Its acks' outcome, once its wait is over."""
        self.settled: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        """Done once it has been replayed (or dropped the state) in the log's order."""

    def finish(self, code: int) -> None:
        if not self.settled.done():
            self.settled.set_result(code)


class TopicCreator(Protocol):
    """How the coordinator asks for ``__consumer_offsets`` when it is missing (the broker's
    auto-creation, which forwards CreateTopics to the controller)."""

    def create(
        self,
        name: str,
        num_partitions: int = ...,
        replication_factor: int = ...,
        configs: Mapping[str, str] | None = None,
    ) -> None:
        """Create ``name`` in the background."""
        ...


def consumer_config(config: DataPathConfig) -> ConsumerGroupConfig:
    """The ``group.consumer.*`` settings of the broker's configuration."""
    return ConsumerGroupConfig(
        heartbeat_interval_ms=config.group_consumer_heartbeat_interval_ms,
        session_timeout_ms=config.group_consumer_session_timeout_ms,
        max_size=config.group_consumer_max_size,
        assignors=config.group_consumer_assignors,
        leader_rack_damping_ms=config.group_consumer_leader_rack_change_delay_ms,
        migration_policy=config.group_consumer_migration_policy,
        classic_max_size=config.group_max_size,
    )


class GroupCoordinator:
    """This broker's part of the group coordinator (module docstring)."""

    def __init__(
        self,
        replicas: ReplicaManager,
        data_apis: PartitionWriter,
        image: Callable[[], MetadataImage],
        auto_create: TopicCreator,
        config: DataPathConfig,
        listener_name: str,
    ) -> None:
        self.replicas = replicas
        self.data_apis = data_apis
        self.image = image
        self.auto_create = auto_create
        self.config = config
        self.listener_name = listener_name
        self._states: dict[int, tuple[int, GroupOffsets]] = {}
        """Per partition of ``__consumer_offsets`` led here: the leader epoch it was loaded in."""
        self._loading: dict[int, asyncio.Task[None]] = {}
        self._unacked: dict[int, collections.deque[_Unacked]] = {}
        """Per partition: the writes waiting for their acks or to be replayed, in log order."""
        self._create_after = 0.0
        """Loop time before which ``__consumer_offsets`` is not asked for again."""
        self.membership = GroupMembership(config, self.append)
        """The classic groups' members, over the same partitions."""
        self.consumers = ConsumerGroupDriver(
            consumer_config(config), image, self._append_applied, self._drop, self.membership.adopt
        )
        """The KIP-848 consumer groups, over the same partitions."""
        self._known_topics: Mapping[uuid.UUID, TopicImage] | None = None
        """The image's topics when last looked at, to see which were deleted."""
        self._expiry: asyncio.TimerHandle | None = None
        self._cleanups: set[asyncio.Task[None]] = set()

    async def close(self) -> None:
        for task in list(self._loading.values()):
            task.cancel()
        for task in list(self._loading.values()):
            with contextlib.suppress(BaseException):
                await task
        self._loading.clear()
        if self._expiry is not None:
            self._expiry.cancel()
        for task in list(self._cleanups):
            task.cancel()
        await self.membership.close()
        self.consumers.close()

    def find(self, key_type: int, key: str) -> tuple[int, dict[str, Any]]:
        """(NONE, the coordinator's node id, host and port) for a FindCoordinator key, or the
        error with Kafka's ``Node.noNode()``; asks for ``__consumer_offsets`` when it is
        missing."""
        if key_type == TRANSACTION_KEY:
            return TRANSACTIONAL_ID_AUTHORIZATION_FAILED, NO_NODE
        if key_type != GROUP_KEY:
            return INVALID_REQUEST, NO_NODE
        image = self.image()
        topic = image.topic(OFFSETS_TOPIC)
        if topic is None:
            now = asyncio.get_running_loop().time()
            if now >= self._create_after:  # clients retry every 100 ms: ask once a second
                self._create_after = now + CREATE_INTERVAL_S
                self.auto_create.create(
                    OFFSETS_TOPIC,
                    self.config.offsets_topic_num_partitions,
                    self.config.offsets_topic_replication_factor,
                    {
                        "cleanup.policy": "compact",
                        "compression.type": "producer",
                        "segment.bytes": str(self.config.offsets_topic_segment_bytes),
                    },
                )
            return COORDINATOR_NOT_AVAILABLE, NO_NODE
        partition = topic.partitions[partition_for(key, len(topic.partitions))]
        broker = image.brokers.get(partition.leader)
        endpoint = (
            None
            if broker is None or broker.fenced
            else endpoint_on(broker, request_listener(self.listener_name))
        )
        if endpoint is None:
            return COORDINATOR_NOT_AVAILABLE, NO_NODE
        return NONE, {"node_id": partition.leader, "host": endpoint.host, "port": endpoint.port}

    # ---- state --------------------------------------------------------------------------------

    def _partition_of(self, group: str) -> int | None:
        topic = self.image().topic(OFFSETS_TOPIC)
        return None if topic is None else partition_for(group, len(topic.partitions))

    def state(self, group: str) -> tuple[int, GroupOffsets | None, int]:
        """(error, the group's partition state, the partition) for a request about ``group``."""
        index = self._partition_of(group)
        if index is None:
            return COORDINATOR_NOT_AVAILABLE, None, -1
        code, state = self.partition_state(index)
        return code, state, index

    def follow_leadership(self) -> None:
        """After a new image: start loading each ``__consumer_offsets`` partition this broker
        now leads (Kafka loads on election), and forget the ones it no longer leads."""
        topic = self.image().topic(OFFSETS_TOPIC)
        for index in range(len(topic.partitions) if topic is not None else 0):
            if self._leads(index):
                self.partition_state(index)
        for index in [i for i in self._states if not self._leads(i)]:
            self._drop(index)
        self._follow_topic_deletions()
        if self._expiry is None:
            self._schedule_expiry()

    # ---- what the coordinator removes on its own ------------------------------------------

    def _follow_topic_deletions(self) -> None:
        """Offsets of a topic deleted since the last image go too (Kafka's
        ``onPartitionsDeleted``)."""
        topics = self.image().topics_by_id
        before, self._known_topics = self._known_topics, topics
        if before is None or before is topics:
            return
        gone = sorted(t.name for topic_id, t in before.items() if topic_id not in topics)
        if gone:
            self._spawn(self._remove_topics(gone))

    async def _remove_topics(self, names: list[str]) -> None:
        for index, (_, state) in list(self._states.items()):
            records = deleted_topics(state, names)
            if records:
                code = await self.append(index, records, state)
                LOG.info(
                    "%s-%d: %s the offsets of %d partitions of deleted topics %s",
                    OFFSETS_TOPIC,
                    index,
                    "removed" if code == NONE else f"failed (error {code}) to remove",
                    len(records),
                    ", ".join(names),
                )

    def _schedule_expiry(self) -> None:
        def run() -> None:
            self._spawn(self._expire())
            self._schedule_expiry()

        interval_s = self.config.offsets_retention_check_interval_ms / 1000
        self._expiry = asyncio.get_running_loop().call_later(interval_s, run)

    async def _expire(self) -> None:
        """Every ``offsets.retention.check.interval.ms``: the expired offsets and the groups
        left with nothing, of each partition led here (:mod:`rackwise.groups.expiry`)."""
        now_ms = int(time.time() * 1000)
        retention_ms = self.config.offsets_retention_minutes * 60_000
        for index, (_, state) in list(self._states.items()):
            live = self.membership.live_groups(index, state)
            shard = self.consumers.shard(index, state)
            consumers = {} if shard is None else dict(shard.groups)
            records, gone = expired(state, live, now_ms, retention_ms, consumers)
            if not records:
                continue
            applied = []
            if shard is not None:  # consumer groups apply their records as they make them
                applied = list(consumer_group_records(records))
                for key, value in applied:
                    shard.replay(key, value)
            code = await self.append(index, records, state, applied=bool(applied))
            if code != NONE:
                LOG.warning("%s-%d: expiring offsets failed (error %d)", OFFSETS_TOPIC, index, code)
                continue
            if self._states.get(index, (None, None))[1] is not state:
                continue  # dropped meanwhile: its next load reads the tombstones
            for group in gone:
                still = live.get(group)
                if group not in consumers and (
                    still is None or (still.state == EMPTY and not still.members)
                ):
                    self.membership.forget(index, state, group)
            LOG.info(
                "%s-%d: removed %d expired offsets and %d groups",
                OFFSETS_TOPIC,
                index,
                sum(1 for key, _ in records if key_kind(key) <= KEY_VERSION),  # offsets' keys
                len(gone),
            )

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._cleanups.add(task)
        task.add_done_callback(self._cleanups.discard)

    def forget_partition(self, index: int) -> None:
        """Forget partition ``index``'s state: the next request loads it again from the log."""
        self._drop(index)

    def _drop(self, index: int) -> None:
        """Forget partition ``index``'s state, and so its live groups; the writes still
        queued on it end with what is known of them (their acks' outcome, when in)."""
        self._states.pop(index, None)
        for write in self._unacked.pop(index, ()):
            if write.code is not None:
                write.finish(write.code)
        self.membership.unloaded(index)
        self.consumers.unloaded(index)

    def _leads(self, index: int) -> bool:
        partition = self.replicas.partitions.get((OFFSETS_TOPIC, index))
        return partition is not None and partition.is_leader

    async def loaded_state(self, group: str) -> tuple[int, GroupOffsets | None, int]:
        """:meth:`state`, after waiting up to :data:`LOAD_WAIT_S` for the partition to load
        if it was loading (usually milliseconds: the first request after a leadership change
        is answered, rather than told to retry)."""
        code, state, index = self.state(group)
        task = self._loading.get(index) if code == COORDINATOR_LOAD_IN_PROGRESS else None
        if task is None:
            return code, state, index
        await asyncio.wait([task], timeout=LOAD_WAIT_S)
        return self.state(group)

    def partition_state(self, index: int) -> tuple[int, GroupOffsets | None]:
        """Partition ``index``'s state if this broker leads it and has loaded it in its current
        leader epoch; else the error, the load started if it was not running."""
        partition = self.replicas.partitions.get((OFFSETS_TOPIC, index))
        if partition is None or not partition.is_leader:
            return NOT_COORDINATOR, None
        epoch = partition.leader_epoch
        loaded = self._states.get(index)
        if loaded is not None and loaded[0] == epoch:
            return NONE, loaded[1]
        if index not in self._loading:
            self._drop(index)
            task = asyncio.create_task(self._load(index, epoch), name=f"load-offsets-{index}")
            self._loading[index] = task
            task.add_done_callback(lambda _: self._loading.pop(index, None))
        return COORDINATOR_LOAD_IN_PROGRESS, None

    async def led_groups(self) -> tuple[int, list[str]]:
        """(NONE, the groups of every partition led here), loading the ones not loaded yet for
        at most :data:`LOAD_WAIT_S`; (COORDINATOR_LOAD_IN_PROGRESS, []) if one still is."""
        topic = self.image().topic(OFFSETS_TOPIC)
        indexes = range(len(topic.partitions)) if topic is not None else range(0)
        codes = [self.partition_state(i)[0] for i in indexes]  # starts every load needed
        if COORDINATOR_LOAD_IN_PROGRESS in codes:
            loading = [t for i, t in self._loading.items() if i in indexes]
            if loading:
                await asyncio.wait(loading, timeout=LOAD_WAIT_S)
        groups: list[str] = []
        for index in indexes:
            code, state = self.partition_state(index)
            if code == COORDINATOR_LOAD_IN_PROGRESS:
                return code, []
            if state is not None:  # a live group whose first record is still on its way too
                live = self.membership.live_groups(index, state)
                consumers = self.consumers.group_ids(index, state)
                groups.extend(set(state.groups()) | set(live) | set(consumers))
        return NONE, groups

    async def _load(self, index: int, epoch: int) -> None:
        started = time.monotonic()
        state = GroupOffsets()
        consumers = self.consumers.new_shard()
        skipped = 0
        try:
            partition = self.replicas.get(OFFSETS_TOPIC, index)
            log = partition.log
            offset, end = log.log_start_offset, log.log_end_offset
            while offset < end:
                data = log.read(
                    offset, max_bytes=LOAD_CHUNK_BYTES, max_offset=end, min_one_batch=True
                )
                records = bytes(data.records)
                if not records:
                    break
                for header in iter_headers(records):
                    offset = header.base_offset + header.last_offset_delta + 1
                    if header.attributes & CONTROL_BATCH:
                        continue
                    for record in iter_records(records[header.position : header.end]):
                        try:
                            if (
                                record.key is not None
                                and key_kind(record.key) in CONSUMER_GROUP_KEYS
                            ):
                                consumers.replay(record.key, record.value)
                            else:
                                state.replay(record.key, record.value)
                        except (OffsetsFormatError, OwnershipConflict) as e:
                            skipped += 1
                            if skipped == 1:
                                LOG.warning(
                                    "%s-%d: skipping a record at offset %d: %s",
                                    OFFSETS_TOPIC,
                                    index,
                                    record.offset,
                                    e,
                                )
                await asyncio.sleep(0)  # the event loop belongs to everyone
        except RackwiseError as e:
            LOG.warning("%s-%d: loading the groups' offsets failed: %s", OFFSETS_TOPIC, index, e)
            return
        current = self.replicas.partitions.get((OFFSETS_TOPIC, index))
        if current is None or not current.is_leader or current.leader_epoch != epoch:
            return  # leadership moved on while loading: the next request loads again
        self._states[index] = (epoch, state)
        self.membership.loaded(index, state)
        self.consumers.loaded(index, state, consumers)
        LOG.info(
            "%s-%d: loaded the offsets of %d groups in %.0f ms (leader epoch %d%s)",
            OFFSETS_TOPIC,
            index,
            sum(1 for _ in state.groups()),
            (time.monotonic() - started) * 1000,
            epoch,
            f", {skipped} records skipped" if skipped else "",
        )

    async def append(
        self,
        index: int,
        records: Sequence[tuple[bytes, bytes | None]],
        state: GroupOffsets,
        *,
        applied: bool = False,
    ) -> int:
        """Append ``records`` to partition ``index`` at once and, once the in-sync replicas
        have them, replay them into ``state`` after the writes before them: the error code,
        within ``offsets.commit.timeout.ms`` (COORDINATOR_NOT_AVAILABLE if the write has not
        settled by then; it still settles once its acks are in). ``applied``: the caller's
        live groups hold the records already, so the state is dropped if they do not reach
        the log."""
        batch = build_batch(
            [(key, value, ()) for key, value in records], timestamp_ms=int(time.time() * 1000)
        )
        code, info = self.data_apis.append_now(OFFSETS_TOPIC, index, batch)
        if code != NONE or info is None:  # not in the log: nothing to settle
            if applied:
                self._drop(index)
            return _APPEND_ERRORS.get(code, code)
        write = _Unacked(records, state)
        self._unacked.setdefault(index, collections.deque()).append(write)
        self._spawn(self._await_acks(index, write, info))
        try:
            async with asyncio.timeout(self.config.offsets_commit_timeout_ms / 1000):
                # the writes before it end no later than it does
                code = await asyncio.shield(write.settled)
        except TimeoutError:
            code = REQUEST_TIMED_OUT
        return _APPEND_ERRORS.get(code, code)

    async def _append_applied(
        self, index: int, records: Sequence[tuple[bytes, bytes | None]], state: GroupOffsets
    ) -> int:
        """:meth:`append` for the consumer groups, which apply their records as they make
        them."""
        return await self.append(index, records, state, applied=True)

    async def _await_acks(self, index: int, write: _Unacked, info: LogAppendInfo) -> None:
        """Wait for ``write``'s acks for as long as it is queued on the partition's current
        state (a timed-out wait is not its outcome), then settle the queue."""
        timeout_s = self.config.offsets_commit_timeout_ms / 1000
        try:
            code = REQUEST_TIMED_OUT
            while code == REQUEST_TIMED_OUT and write in self._unacked.get(index, ()):
                code = await self.data_apis.wait_acks(OFFSETS_TOPIC, index, info, timeout_s)
        finally:  # also when cancelled (the coordinator closing): its request is answered
            write.code = code
            if write in self._unacked.get(index, ()):
                self._settle(index)
            else:  # dropped with its state meanwhile
                write.finish(code)

    def _settle(self, index: int) -> None:
        """Replay partition ``index``'s writes whose acks are in, from the head of its queue
        until one still waits; a write that failed may be in the log after all, so it drops
        the state (the next request loads it again) rather than being replayed."""
        queue = self._unacked.get(index)
        while queue:
            code = queue[0].code
            if code is None:
                break
            write = queue.popleft()
            if code != NONE:
                self._drop(index)  # ends the writes queued behind it too
                write.finish(code)
                return
            for key, value in write.records:
                write.state.replay(key, value)
            write.finish(code)
        if not queue:
            self._unacked.pop(index, None)
