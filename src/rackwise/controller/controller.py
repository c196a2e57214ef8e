"""The controller: commands in, records to the log, replies out (Kafka's ``QuorumController``,
without its threads; the network layer calls one method at a time).

Goals
    Every change to the cluster's metadata is a command that reads the current image and produces
    records and a reply; the records are appended to the metadata log, durably, then replayed into
    the image, and only then is the reply given. A controller that opens a log recovers the image
    from it (newest snapshot, then the records after it) through the same replay, and writes a
    snapshot whenever ``metadata.log.max.record.bytes.between.snapshots`` bytes have been appended
    since the last: inline by default, or, with ``is_snapshot_deferred``, by its caller (a process
    writes it on a worker thread, off the request path, as Kafka's snapshot generator does): the
    controller hands out a :class:`SnapshotJob` (the immutable image and the end offset it is as of)
    and is told when it was written or failed.

Constraints
    A failed append changes nothing (the command raises, the image stays as it was). No
    command writes more than :data:`MAX_RECORDS_PER_USER_OP` records for a user (Kafka refuses
    larger batches with POLICY_VIOLATION). Time comes only from the injected clock and
    randomness (topic ids, the placer's draws) only from the injected source.

Algorithm
    ``_commit(batches)``: ``log.append_batches(batches, epoch)`` (one flush for all), then
    :meth:`ControllerState.replay_batches` from the offset the first batch got, then the
    heartbeat tracker follows the replayed registrations, then a snapshot if one is due.
    Fencing stale brokers commits one batch per broker, so each fencing's elections see the
    brokers fenced before it. Under :meth:`Controller.group_commit` the replay comes first and
    the append of every batch of the group comes at its end, with one flush (the network
    layer holds the replies until then); a failed append takes the controller back to the
    state before the group.
    Preferred leaders (Kafka's scheduling of ``maybeBalancePartitionLeaders``): after every
    commit, if ``auto.leader.rebalance.enable`` is on, no run is scheduled and some partition
    is not led by its first replica, a run is scheduled ``leader.imbalance.check.interval.seconds``
    later, or :data:`BALANCE_RETRY_MS` later if the last run stopped at its bound. The caller
    asks :meth:`Controller.next_balance_time_ms` and calls
    :meth:`Controller.maybe_balance_partition_leaders` when due; its records are one commit.
    Deferred snapshots: :meth:`Controller.maybe_begin_snapshot` returns a job when the
    threshold is crossed and no job is out; at most one is out at a time. A failed job is
    retried only once another threshold's worth of bytes has been appended.

Worked example
    On an empty log the controller writes ``FeatureLevelRecord(metadata.version)`` at offset 0.
    Broker 1 registers: ``RegisterBrokerRecord(broker_epoch=1, fenced=True)`` at offset 1. Its
    heartbeat reporting offset 1 applied unfences it: a BrokerRegistrationChangeRecord at
    offset 2, and the reply ``is_fenced=False``. A CreateTopics of "t" (1 partition, RF 1)
    appends TopicRecord and PartitionRecord at offsets 3 and 4; the reply carries the topic id.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final, Protocol

from rackwise.common import JavaRandom
from rackwise.common.collector import paused_gc
from rackwise.common.errors import PolicyViolationException, RackwiseError
from rackwise.controller import acls, scram
from rackwise.controller.alter_partition import AlterPartitionRequest, AlterPartitionTopicResult
from rackwise.controller.clock import Clock
from rackwise.controller.cluster import ClusterControl
from rackwise.controller.config import ControllerConfig
from rackwise.controller.configs import ConfigControl
from rackwise.controller.directories import Assignment, assign_replicas_to_dirs
from rackwise.controller.domains import RackRule
from rackwise.controller.elections import ElectionType, PartitionResult, elect_leaders
from rackwise.controller.heartbeat import BrokerHeartbeatTracker
from rackwise.controller.log import MetadataLogLike
from rackwise.controller.messages import (
    AlterableConfig,
    AlterConfigsResourceResult,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    CreatableTopic,
    CreatableTopicResult,
    CreatePartitionsTopic,
    CreatePartitionsTopicResult,
    CreateReplicaPlacementRequest,
    CreateReplicaPlacementResponse,
    DeletableTopicResult,
    DescribeConfigsResult,
    ListPartitionReassignmentsTopic,
    OngoingTopicReassignment,
    ReassignableTopic,
    ReassignableTopicResult,
)
from rackwise.controller.placing import create_replica_placement
from rackwise.controller.producer_ids import ProducerIdControl, ProducerIdsBlock
from rackwise.controller.reassignment import list_partition_reassignments
from rackwise.controller.recovery import recover
from rackwise.controller.replication import ReplicationControl
from rackwise.controller.state import ControllerState, ReplayBatch
from rackwise.image import ConfigResource, MetadataImage
from rackwise.placement import create_placer
from rackwise.records import ZERO_UUID, kafka_uuid
from rackwise.records.constants import METADATA_VERSION_FEATURE
from rackwise.records.metadata import FeatureLevelRecord

MAX_RECORDS_PER_USER_OP: Final = 10_000
"""Kafka's ``MAX_RECORDS_PER_USER_OP``: the most records one user command may write."""
BALANCE_RETRY_MS: Final = 10
"""How soon a preferred-leader run that stopped at its bound is run again (Kafka's 10 ms)."""
METADATA_VERSION_LEVEL: Final = 23
"""The ``metadata.version`` the controller writes (Kafka's 4.0-IV1): PartitionRecord and
PartitionChangeRecord v2 (with KIP-966's ELR fields), RegisterBrokerRecord v3 (log dirs)."""
METADATA_TOPIC_ID: Final = uuid.UUID(int=1)
"""Kafka's ``Uuid.METADATA_TOPIC_ID``, never a topic's id."""


class RandomBits(Protocol):
    """A source of random bits (``random.Random``, ``random.SystemRandom``)."""

    def getrandbits(self, k: int, /) -> int: ...


@dataclass(frozen=True, slots=True)
class SnapshotJob:
    """A snapshot to write: ``image`` is the image of every record below ``end_offset`` (images
    are immutable, so it may be written out on another thread while commits go on)."""

    image: MetadataImage
    end_offset: int


class Controller:
    """The active controller over ``log`` (see the module docstring). ``random`` draws topic ids
    and seeds the placer: a process passes ``random.SystemRandom()`` (Kafka's ``Uuid.randomUuid``
    draws from the operating system's entropy), a test a seeded ``random.Random``."""

    def __init__(
        self,
        log: MetadataLogLike,
        clock: Clock,
        config: ControllerConfig | None = None,
        *,
        random: RandomBits,
        is_snapshot_deferred: bool = False,
    ) -> None:
        self.log = log
        self.is_snapshot_deferred = is_snapshot_deferred
        self._snapshot_job: SnapshotJob | None = None
        self._snapshot_retry_bytes = 0
        """Bytes since the last snapshot below which no job is handed out (0, or after a
        failed job: the bytes then plus the threshold)."""
        self.clock = clock
        self.config = config if config is not None else ControllerConfig()
        self._random = random
        self._pending: list[list[Any]] | None = None
        self._balance_due_ms: int | None = None
        """When the next preferred-leader run is due (clock ms); None: none is scheduled."""
        self._is_balance_unfinished = False
        """Whether the last preferred-leader run stopped at its bound."""
        self.state = ControllerState()
        self.tracker = BrokerHeartbeatTracker(self.config.session_timeout_ms)
        placer_random = JavaRandom(self._bits(48))
        self.placer = create_placer(self.config.replica_placer, random=placer_random)
        self.simple_placer = create_placer("rack-unaware", random=placer_random)
        self.configs = ConfigControl(self.config)
        self.replication = ReplicationControl(
            self.config, self.configs, self.placer, self._new_topic_id
        )
        self.state.preferred_leader = self.replication.preferred_leader
        self.cluster = ClusterControl(self.config, self.tracker, self.replication)
        self.producer_ids = ProducerIdControl()
        self.recovery = recover(self.log, self.state)
        self.epoch = max(log.latest_epoch, 0) + 1
        self.cluster.activate(self.state.image, self.clock())
        if METADATA_VERSION_FEATURE not in self.state.image.features:
            level = FeatureLevelRecord(
                name=METADATA_VERSION_FEATURE, feature_level=METADATA_VERSION_LEVEL
            )
            self._commit([[level]])
        self._maybe_schedule_balance()

    # ---- state -----------------------------------------------------------------------------

    @property
    def image(self) -> MetadataImage:
        """The image of every record durably appended so far (inside a group commit, and of
        the group's records so far)."""
        return self.state.image

    @property
    def end_offset(self) -> int:
        return self.state.end_offset

    def _bits(self, k: int) -> int:
        return self._random.getrandbits(k)

    def _new_topic_id(self) -> uuid.UUID:
        """A random version-4 id that is not reserved and whose Kafka form does not start
        with '-' (Kafka's ``Uuid.randomUuid``)."""
        while True:
            candidate = uuid.UUID(int=self._bits(128), version=4)
            if candidate in (ZERO_UUID, METADATA_TOPIC_ID) or kafka_uuid(candidate)[0] == "-":
                continue
            if candidate not in self.state.image.topics_by_id:
                return candidate

    def _commit(self, batches: Sequence[list[Any]]) -> int:
        """Append the non-empty batches durably, replay them, snapshot if due (inside
        :meth:`group_commit`: replay now, append when the group ends). Returns the offset of
        the last record afterwards."""
        batches = [b for b in batches if b]
        if not batches:
            return self.state.end_offset - 1
        if self._pending is not None:
            self._replay(batches)
            self._pending.extend(batches)
            self._maybe_schedule_balance()
            return self.state.end_offset - 1
        self._append(batches, self.state.end_offset)
        self._replay(batches)
        self._maybe_schedule_balance()
        self._maybe_snapshot()
        return self.state.end_offset - 1

    def _append(self, batches: Sequence[list[Any]], base: int) -> None:
        """Append durably; the first batch must land at ``base``."""
        if self.log.end_offset != base:
            raise RackwiseError(
                f"BUG: the log ends at offset {self.log.end_offset}, the records start at {base}"
            )
        last_offsets = self.log.append_batches(batches, self.epoch)
        for records, last in zip(batches, last_offsets, strict=True):
            base += len(records)
            if last != base - 1:
                raise RackwiseError(f"BUG: a batch ended at offset {last}, expected {base - 1}")

    def _replay(self, batches: Sequence[list[Any]]) -> None:
        base = self.state.end_offset
        replay: list[ReplayBatch] = []
        for records in batches:
            replay.append((records, base, None))
            base += len(records)
        old = self.state.replay_batches(replay)
        now = self.clock()
        for records in batches:
            self.cluster.observe(records, old, self.state.image, now)

    def _maybe_snapshot(self) -> None:
        if self.is_snapshot_deferred:
            return
        job = self.maybe_begin_snapshot()
        if job is not None:
            try:
                with paused_gc():
                    self.log.write_snapshot(job.image.to_records(), job.end_offset)
            except BaseException:
                self.snapshot_failed(job)
                raise
            self.snapshot_written(job)

    # ---- snapshots -------------------------------------------------------------------------

    def maybe_begin_snapshot(self) -> SnapshotJob | None:
        """The snapshot to write now, or None: none is due, one is already out, or the last
        one failed and another threshold's worth of bytes has not been appended since. Outside
        a group commit only (the image must be durable). The caller writes ``job.image`` as
        of ``job.end_offset`` and then calls :meth:`snapshot_written` or
        :meth:`snapshot_failed`."""
        if self._pending is not None:
            raise RackwiseError("BUG: a snapshot begun inside a group commit")
        if self._snapshot_job is not None or not self.log.snapshot_due():
            return None
        if self._snapshot_retry_bytes and self.log.bytes_since_snapshot < (
            self._snapshot_retry_bytes
        ):
            return None
        self._snapshot_job = SnapshotJob(self.state.image, self.state.end_offset)
        return self._snapshot_job

    def snapshot_written(self, job: SnapshotJob) -> None:
        """``job`` is stored: the next snapshot is due a threshold after its end offset."""
        self._end_job(job)
        self._snapshot_retry_bytes = 0

    def snapshot_failed(self, job: SnapshotJob) -> None:
        """``job`` failed (nothing of it is visible): retry at the next threshold."""
        self._end_job(job)
        self._snapshot_retry_bytes = (
            self.log.bytes_since_snapshot + self.log.max_record_bytes_between_snapshots
        )

    def _end_job(self, job: SnapshotJob) -> None:
        if job is not self._snapshot_job:
            raise RackwiseError(f"BUG: snapshot job at offset {job.end_offset} is not the one out")
        self._snapshot_job = None

    @contextmanager
    def group_commit(self) -> Iterator[None]:
        """Commit every command of the block with one append and one flush (Kafka's
        controller pipelines its writes the same way). Inside the block each command is
        replayed at once, so the next one sees it, but nothing is durable: the caller must
        hold the replies until the block ends. If the append fails, the controller goes back
        to the state before the block (every broker's lease starts afresh, as after a
        failover) and the error propagates: every reply of the block is void."""
        if self._pending is not None:
            raise RackwiseError("BUG: group commits do not nest")
        checkpoint = self.state.checkpoint()
        self._pending = []
        try:
            yield
            batches = self._pending
            self._pending = None
            if batches:
                self._append(batches, checkpoint[1])
                self._maybe_snapshot()
        except BaseException:
            self._pending = None
            self.state.restore(checkpoint)
            self.cluster.activate(self.state.image, self.clock())
            raise

    def _user_write(self, records: list[Any], *, validate_only: bool = False) -> None:
        if len(records) > MAX_RECORDS_PER_USER_OP:
            raise PolicyViolationException("Unable to perform excessively large batch operation.")
        if not validate_only:
            self._commit([records])

    def alter_user_scram_credentials(self, request: scram.AlterScram) -> list[scram.UserResult]:
        """AlterUserScramCredentials (:mod:`rackwise.controller.scram`), in one batch."""
        records: list[Any] = []
        results = scram.alter_user_scram_credentials(self.image, *request, records)
        self._user_write(records)
        return results

    # ---- brokers ---------------------------------------------------------------------------

    def register_broker(
        self, request: BrokerRegistrationRequest, *, session: object | None = None
    ) -> BrokerRegistrationResponse:
        """BrokerRegistration (``session``: the connection it came on); raises the typed error
        of a refused registration."""
        records: list[Any] = []
        response = self.cluster.handle_broker_registration(
            self.state,
            request,
            records,
            next_offset=self.state.end_offset,
            now_ms=self.clock(),
            session=session,
        )
        self._commit([records])
        return response

    def broker_heartbeat(
        self, request: BrokerHeartbeatRequest, *, session: object | None = None
    ) -> BrokerHeartbeatResponse:
        """BrokerHeartbeat; raises StaleBrokerEpochException for an unknown registration (or
        a fence or shutdown asked outside the registration's ``session``)."""
        records: list[Any] = []
        response = self.cluster.handle_broker_heartbeat(
            self.state, request, records, now_ms=self.clock(), session=session
        )
        last = self._commit([records])
        if response.is_in_controlled_shutdown:
            self.tracker.start_controlled_shutdown(request.broker_id, last)
        return response

    def assign_replicas_to_dirs(
        self, broker_id: int, broker_epoch: int, assignments: list[Assignment]
    ) -> dict[tuple[uuid.UUID, int], int]:
        """AssignReplicasToDirs (KIP-858); raises StaleBrokerEpochException for a stale epoch."""
        self.cluster.check_broker_epoch(self.state.image, broker_id, broker_epoch)
        records: list[Any] = []
        codes = assign_replicas_to_dirs(
            self.replication, self.state, broker_id, assignments, records
        )
        if records:
            self._commit([records])
        return codes

    def elect_leaders(
        self, election_type: ElectionType, partitions: Mapping[str, Sequence[int]] | None
    ) -> list[tuple[str, list[PartitionResult]]]:
        """ElectLeaders (KIP-460): each topic's per-partition results, the elections committed
        as one user write (:mod:`rackwise.controller.elections`)."""
        records: list[Any] = []
        results = elect_leaders(self.replication, self.state, election_type, partitions, records)
        self._user_write(records)
        return results

    def unregister_broker(self, broker_id: int) -> None:
        """UnregisterBroker."""
        records: list[Any] = []
        self.cluster.handle_unregister_broker(self.state, broker_id, records)
        self._user_write(records)

    def maybe_fence_stale_brokers(
        self,
        now_ms: int | None = None,
        *,
        heard: Mapping[int, tuple[int, int]] | None = None,
    ) -> list[int]:
        """Fence every broker whose lease has run out at ``now_ms`` (default: the clock), one
        commit each, after counting ``heard`` (broker id -> epoch and arrival time of
        heartbeats that arrived and may wait to be processed); the ids fenced, in order."""
        now = self.clock() if now_ms is None else now_ms
        self.cluster.note_heartbeats(self.state.image, heard or {})
        fenced: list[int] = []
        while True:
            records: list[Any] = []
            broker_id = self.cluster.maybe_fence_one_stale_broker(self.state, records, now_ms=now)
            if broker_id is None:
                return fenced
            self._commit([records])
            fenced.append(broker_id)

    def next_check_time_ms(self) -> int | None:
        """When :meth:`maybe_fence_stale_brokers` next has work if no broker heartbeats."""
        return self.tracker.next_check_time_ms()

    # ---- preferred leaders ----------------------------------------------------------------

    def _maybe_schedule_balance(self) -> None:
        config = self.config
        if self._balance_due_ms is not None or not config.auto_leader_rebalance_enable:
            return
        if not self.replication.are_partition_leaders_imbalanced(self.state):
            return
        if self._is_balance_unfinished:
            delay_ms = BALANCE_RETRY_MS
        else:
            delay_ms = config.leader_imbalance_check_interval_s * 1000
        self._balance_due_ms = self.clock() + delay_ms

    def next_balance_time_ms(self) -> int | None:
        """When :meth:`maybe_balance_partition_leaders` is next due; None: not scheduled
        (disabled, or every partition was led by its first replica after the last commit)."""
        return self._balance_due_ms

    def maybe_balance_partition_leaders(self, now_ms: int | None = None) -> int:
        """If a run is due at ``now_ms`` (default: the clock), elect the preferred replicas
        that may lead (at most ``MAX_ELECTIONS_PER_IMBALANCE`` records, one commit) and
        schedule the next run; the number of records written (0 if none was due)."""
        now = self.clock() if now_ms is None else now_ms
        if self._balance_due_ms is None or now < self._balance_due_ms:
            return 0
        self._balance_due_ms = None
        records: list[Any] = []
        self._is_balance_unfinished = self.replication.maybe_balance_partition_leaders(
            self.state, records
        )
        self._commit([records])
        self._maybe_schedule_balance()
        return len(records)

    def alter_partition(self, request: AlterPartitionRequest) -> list[AlterPartitionTopicResult]:
        """AlterPartition (KIP-497) from a partition leader; raises StaleBrokerEpochException
        for a requester that is not the current registration."""
        self.cluster.check_broker_epoch(self.image, request.broker_id, request.broker_epoch)
        records: list[Any] = []
        results = self.replication.alter_partition(self.state, request, records)
        self._commit([records])
        return results

    def allocate_producer_ids(self, broker_id: int, broker_epoch: int) -> ProducerIdsBlock:
        """AllocateProducerIds: the next block of producer ids for a broker, written to the
        log; raises StaleBrokerEpochException for a requester that is not the current
        registration."""
        records: list[Any] = []
        block = self.producer_ids.handle_allocate_producer_ids(
            self.state, broker_id, broker_epoch, records
        )
        self._commit([records])
        return block

    # ---- topics ----------------------------------------------------------------------------

    def create_topics(
        self, topics: Sequence[CreatableTopic], *, validate_only: bool = False
    ) -> list[CreatableTopicResult]:
        records: list[Any] = []
        results = self.replication.create_topics(self.state, topics, records)
        self._user_write(records, validate_only=validate_only)
        return results

    def create_partitions(
        self, topics: Sequence[CreatePartitionsTopic], *, validate_only: bool = False
    ) -> list[CreatePartitionsTopicResult]:
        records: list[Any] = []
        results = self.replication.create_partitions(self.state, topics, records)
        self._user_write(records, validate_only=validate_only)
        return results

    def delete_topics(
        self, names: Sequence[str] = (), topic_ids: Sequence[uuid.UUID] = ()
    ) -> list[DeletableTopicResult]:
        records: list[Any] = []
        results = self.replication.delete_topics(self.state, names, topic_ids, records)
        self._user_write(records)
        return results

    def alter_partition_reassignments(
        self,
        topics: Sequence[ReassignableTopic],
        *,
        allow_replication_factor_change: bool = True,
    ) -> list[ReassignableTopicResult]:
        """AlterPartitionReassignments (KIP-455): start or cancel moving partitions' replicas
        (:mod:`rackwise.controller.reassignment`); one commit for the accepted ones."""
        records: list[Any] = []
        results = self.replication.alter_partition_reassignments(
            self.state,
            topics,
            records,
            allow_replication_factor_change=allow_replication_factor_change,
        )
        self._user_write(records)
        return results

    def list_partition_reassignments(
        self, topics: Sequence[ListPartitionReassignmentsTopic] | None
    ) -> list[OngoingTopicReassignment]:
        """ListPartitionReassignments: the reassignments in progress (all: ``topics`` None)."""
        return list_partition_reassignments(self.image, topics)

    def create_replica_placement(
        self, request: CreateReplicaPlacementRequest
    ) -> CreateReplicaPlacementResponse:
        """KIP-879's CreateReplicaPlacement: an assignment, nothing written; held to the
        cluster's default ``min.insync.racks``."""
        defaults = {e.name: e.value for e in self.configs.effective_topic_configs(self.image, {})}
        return create_replica_placement(
            self.placer, self.simple_placer, self.image, request, RackRule.of(defaults)
        )

    def create_acls(self, bindings: Sequence[Any]) -> list[acls.Outcome]:
        """CreateAcls (:mod:`rackwise.controller.acls`), one commit."""
        records: list[Any] = []
        results = acls.create_acls(self.image, bindings, self._bits, records)
        self._user_write(records)
        return results

    def delete_acls(self, filters: Sequence[Any]) -> list[tuple[acls.Outcome, list[Any]]]:
        """DeleteAcls (:mod:`rackwise.controller.acls`), one commit."""
        records: list[Any] = []
        results = acls.delete_acls(self.image, filters, records)
        self._user_write(records)
        return results

    # ---- configs ---------------------------------------------------------------------------

    def incremental_alter_configs(
        self,
        changes: Mapping[ConfigResource, Sequence[AlterableConfig]],
        *,
        validate_only: bool = False,
    ) -> list[AlterConfigsResourceResult]:
        records: list[Any] = []
        results = self.configs.incremental_alter_configs(self.image, changes, records)
        self._user_write(records, validate_only=validate_only)
        return results

    def alter_configs(
        self,
        configs: Mapping[ConfigResource, Mapping[str, str]],
        *,
        validate_only: bool = False,
    ) -> list[AlterConfigsResourceResult]:
        records: list[Any] = []
        results = self.configs.alter_configs(self.image, configs, records)
        self._user_write(records, validate_only=validate_only)
        return results

    def describe_configs(
        self, resources: Mapping[ConfigResource, Sequence[str] | None]
    ) -> list[DescribeConfigsResult]:
        return self.configs.describe_configs(self.image, resources)
