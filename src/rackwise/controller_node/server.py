"""The controller process (KIP-631): a :class:`~rackwise.controller.Controller` over a
:class:`~rackwise.metalog.FileMetadataLog`, served on the controller listener.

Goals
    Brokers register (BrokerRegistration), heartbeat (BrokerHeartbeat), change the ISRs of
    the partitions they lead (AlterPartition, through the same group commit as every write),
    take blocks of producer ids for their idempotent producers (AllocateProducerIds, likewise)
    and follow the metadata log (FetchMetadataLog, with a long poll, and
    FetchMetadataSnapshot when what they need is only in a snapshot); they forward admin
    writes (CreateTopics, CreatePartitions, DeleteTopics, IncrementalAlterConfigs) and
    KIP-879's CreateReplicaPlacement as the same requests; DescribeConfigs is answered from
    the controller's image. A timer fences brokers whose lease ran out; another moves
    leadership back to preferred replicas (``auto.leader.rebalance.enable``, every
    ``leader.imbalance.check.interval.seconds`` while some partition needs it). A write is answered
    only once its records are fsynced.

Constraints
    * The pure controller is driven one call at a time, on the event loop: every command that
      may write goes through one queue, and the commands queued together are committed as a
      group (:meth:`Controller.group_commit`): one append, one fsync, then every reply. Reads
      (placement, fetches) run between groups, so they only ever see durable records. A group
      holds at most :data:`MAX_COMMANDS_PER_GROUP` commands and the loop yields between groups.
    * The listener's sockets are served on a thread of their own (:mod:`rackwise.net.io_thread`):
      a heartbeat's arrival renews its broker's lease at once, even while a long group holds
      the loop, so that no broker is fenced for the controller's own slowness (as Kafka's
      controller notes a heartbeat before queueing it, KAFKA-17793). ApiVersions is answered
      there too, from the features of the last commit, so that a broker whose heartbeat timed
      out reconnects and heartbeats again while the group goes on. Values from requests are
      escaped in log lines (:func:`~rackwise.common.logsafe.loggable`).
    * The metadata log failing (a write or fsync error) is fatal: every waiting command fails,
      the process logs one line and exits with status 1, as Kafka's controller does on a fault
      in its log. Recovery happens at the next start.
    * What the log found when it opened (a torn tail truncated, a corrupt snapshot set aside)
      is logged as warnings, one line each, by the log (``rackwise.metalog``).
    * A snapshot never stalls the event loop: the controller hands out the immutable image as
      of the snapshot's end offset and it is listed, encoded, written and flushed on a worker
      thread, at most one at a time, while commits go on (heartbeats keep being answered, so
      no healthy broker's lease runs out). Segments it frees are deleted only after its
      rename. A failed snapshot is logged and tried again at the next threshold; it is never
      fatal and never visible (its ``.part`` file is deleted).
    * Logged, one line each: registrations, brokers fenced (lease expired) and unfenced
      (caught up), producer id blocks handed out, preferred-leader runs that wrote records,
      refused registrations, heartbeats and producer id requests with Kafka's error name and
      code, and snapshots written (end offset, bytes, seconds). Incarnation ids are in Kafka's
      base64 form, as the brokers log them.

Algorithm
    ``_commit_loop``: take the first queued command, then every one already queued; run them
    all inside ``group_commit`` (each command's typed error becomes its error response); wake
    the fetchers waiting for new records; start a snapshot on a worker thread if one is due
    and none is being written. ``_fence_loop``: sleep until
    ``next_check_time_ms`` (at most :data:`FENCE_CHECK_MAX_INTERVAL_S`), then queue
    ``maybe_fence_stale_brokers``. ``_balance_loop``: the same over ``next_balance_time_ms``
    and ``maybe_balance_partition_leaders``. A fetch at the log's end waits for the next
    commit, or ``MaxWaitMs``.

Worked example
    A broker connects, sends ApiVersions, BrokerRegistration (epoch 1: the offset of its
    RegisterBrokerRecord on a fresh log), FetchMetadataLog from 0 (records 0-1 as raw batches,
    high watermark 2), then BrokerHeartbeat with offset 1: it is unfenced (a record at offset
    2) and the reply says ``is_fenced=False``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Final

from rackwise.common.collector import paused_gc
from rackwise.common.errors import RackwiseError
from rackwise.common.logsafe import loggable
from rackwise.controller import METADATA_VERSION_LEVEL, ApiError, Controller, SnapshotJob
from rackwise.controller_node.apis import brokers
from rackwise.controller_node.requests import ENTRIES, describe_quorum_response
from rackwise.metalog import FileMetadataLog, OffsetOutOfRangeException, SnapshotId
from rackwise.net import (
    CloseConnection,
    ThreadedKafkaServer,
    current_connection,
    start_threaded_server,
)
from rackwise.node.config import ConfigException, Endpoint, NodeConfig, load_node_config
from rackwise.node.process import configure_logging, report_ready, run_until_stopped
from rackwise.protocol import (
    ApiKey,
    FinalizedFeature,
    Listener,
    Request,
    SupportedFeature,
    api_name,
    api_versions_response,
    make,
    response_class,
)
from rackwise.records import kafka_uuid
from rackwise.records.constants import METADATA_VERSION_FEATURE

LOG: Final = logging.getLogger("rackwise.controller")
FENCE_CHECK_MAX_INTERVAL_S: Final = 0.25
"""The longest the fencing timer sleeps (a registration may bring its next check closer)."""
MAX_COMMANDS_PER_GROUP: Final = 64
"""The most commands one group commit runs before the loop serves others."""
MIN_METADATA_VERSION_LEVEL: Final = 7
"""The lowest ``metadata.version`` this software supports (3.3-IV3, Kafka's KRaft minimum)."""
MAX_SNAPSHOT_CHUNK_BYTES: Final = 16 << 20
"""The most snapshot bytes one FetchMetadataSnapshot response carries."""
MAX_FETCH_WAIT_MS: Final = 60_000

# Kafka's error codes these answers use.
OFFSET_OUT_OF_RANGE: Final = 1
INVALID_REQUEST: Final = 42
SNAPSHOT_NOT_FOUND: Final = 98
POSITION_OUT_OF_RANGE: Final = 99
INCONSISTENT_CLUSTER_ID: Final = 104


def monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


@dataclass(slots=True)
class _Command:
    """A command waiting for the next group commit: ``run`` returns the response message,
    ``fail`` builds the error response of a typed error."""

    run: Callable[[], Any]
    fail: Callable[[ApiError], Any]
    future: asyncio.Future[Any] = field(repr=False)


class _RolledBack(Exception):
    """Aborts a group commit whose command failed with an untyped error."""


def _fail(command: _Command, error: BaseException) -> None:
    if not command.future.done():
        command.future.set_exception(error)


class ControllerNode:
    """The controller process' state and service (see the module docstring)."""

    def __init__(
        self,
        config: NodeConfig,
        *,
        clock: Callable[[], int] = monotonic_ms,
        rng: random.Random | None = None,
    ) -> None:
        if not config.is_controller or config.metadata_log_dir is None:
            raise ConfigException(
                f"node {config.node_id} is a {config.role}: start it with rackwise {config.role}"
            )
        self.config = config
        self.clock = clock
        self.rng = rng if rng is not None else random.Random()
        self.log: FileMetadataLog | None = None
        self.controller: Controller | None = None
        self.server: ThreadedKafkaServer | None = None
        self.fatal: BaseException | None = None
        self.stopped = asyncio.Event()
        self._queue: asyncio.Queue[_Command] = asyncio.Queue()
        self._committed = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._snapshot_task: asyncio.Task[None] | None = None
        self._heard: dict[int, tuple[int, int]] = {}  # broker id -> (epoch, arrival ms)
        self._heard_lock = threading.Lock()  # _heard is filled on the listener's thread
        # ApiVersions is answered on the listener's thread, from the features as of the last
        # commit: (finalized features, their epoch), or None when there is no controller.
        self._features: tuple[tuple[tuple[str, int], ...], int] | None = None

    # ---- lifecycle -----------------------------------------------------------------------

    def open(self) -> None:
        """Open (and recover) the metadata log and the controller over it."""
        directory = self.config.metadata_log_dir
        assert directory is not None
        started = time.monotonic()
        log = FileMetadataLog(
            directory,
            segment_bytes=self.config.metadata_log_segment_bytes,
            max_record_bytes_between_snapshots=self.config.max_record_bytes_between_snapshots,
        )
        self.log = log
        try:
            self.controller = Controller(
                log,
                self.clock,
                self.config.controller_config(),
                random=self.rng,
                is_snapshot_deferred=True,
            )
        except BaseException:
            log.close()
            raise
        self._publish_features()
        recovery = self.controller.recovery
        snapshot = (
            "no snapshot"
            if recovery.snapshot_end_offset is None
            else f"snapshot ending at offset {recovery.snapshot_end_offset}"
        )
        LOG.info(
            "recovered the metadata log in %s in %.3f s: %s (%d records) and %d records after "
            "it; log offsets %d to %d",
            directory,
            time.monotonic() - started,
            snapshot,
            recovery.num_snapshot_records,
            recovery.num_log_records,
            log.start_offset,
            log.end_offset,
        )

    async def start(self) -> None:
        """Listen on the controller listener and start the commit and fencing loops."""
        if self.controller is None:
            self.open()
        endpoint = self.config.controller_endpoint
        self.server = await start_threaded_server(
            self.handle,
            Listener.CONTROLLER,
            host=endpoint.host,
            port=endpoint.port,
            max_request_bytes=self.config.socket_request_max_bytes,
            name=f"controller {self.config.node_id} {endpoint.listener_name}",
            limits=self.config.server_limits(),
            on_arrival=self._note_arrival,
            answer_on_io=self._answer_on_io,
        )
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._commit_loop()),
            loop.create_task(self._fence_loop()),
            loop.create_task(self._balance_loop()),
        ]

    @property
    def endpoint(self) -> Endpoint:
        """The controller listener as bound."""
        assert self.server is not None
        name = self.config.controller_endpoint.listener_name
        host, port = self.server.address
        return Endpoint(name, host, port)

    async def close(self) -> None:
        """Stop serving, fail what waits, close the log."""
        if self.server is not None:
            await self.server.close()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        if self._snapshot_task is not None:
            await asyncio.shield(self._snapshot_task)  # the thread cannot be interrupted
        while not self._queue.empty():
            command = self._queue.get_nowait()
            if not command.future.done():
                command.future.set_exception(RackwiseError("the controller is shutting down"))
        self._wake_fetchers()
        if self.log is not None:
            self.log.close()
            self.log = None

    def _die(self, error: BaseException) -> None:
        LOG.critical(
            "the metadata log failed, stopping: %s: %s",
            type(error).__name__,
            " ".join(str(error).split()),
        )
        self.fatal = error
        self.stopped.set()

    # ---- the write path ------------------------------------------------------------------

    async def submit(self, run: Callable[[], Any], fail: Callable[[ApiError], Any]) -> Any:
        """Queue a command for the next group commit; its response once durable."""
        if self.fatal is not None:
            raise RackwiseError(f"the controller stopped: {self.fatal}")
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(_Command(run, fail, future))
        return await future

    async def _commit_loop(self) -> None:
        while True:
            commands = [await self._queue.get()]
            while not self._queue.empty() and len(commands) < MAX_COMMANDS_PER_GROUP:
                commands.append(self._queue.get_nowait())
            self._commit_group(commands)
            if self.fatal is not None:
                return
            self._maybe_start_snapshot()
            await asyncio.sleep(0)  # answers and reads go out before the next group

    # ---- snapshots -----------------------------------------------------------------------

    def _maybe_start_snapshot(self) -> None:
        controller = self.controller
        assert controller is not None
        if self._snapshot_task is not None:
            return
        job = controller.maybe_begin_snapshot()
        if job is not None:
            self._snapshot_task = asyncio.get_running_loop().create_task(self._write_snapshot(job))

    async def _write_snapshot(self, job: SnapshotJob) -> None:
        """Write ``job`` on a worker thread; log the outcome (never fatal)."""
        controller, log = self.controller, self.log
        assert controller is not None and log is not None
        started = time.monotonic()
        try:
            snapshot_id, size = await asyncio.to_thread(_write_snapshot, log, job)
        except Exception as e:
            controller.snapshot_failed(job)
            LOG.error(
                "failed to write the snapshot ending at offset %d, trying again at the next "
                "threshold: %s: %s",
                job.end_offset,
                type(e).__name__,
                " ".join(str(e).split()),
            )
        else:
            controller.snapshot_written(job)
            LOG.info(
                "wrote snapshot %s: end offset %d, %d bytes, %.3f s",
                snapshot_id.file_name(),
                snapshot_id.end_offset,
                size,
                time.monotonic() - started,
            )
        finally:
            self._snapshot_task = None

    def _commit_group(self, commands: list[_Command]) -> None:
        """Commit ``commands`` as one group and answer them. A command that fails with
        anything but a typed error is a bug: the group is rolled back, that command fails (its
        connection closes) and the others are committed again without it."""
        log = self.log
        assert log is not None
        before = log.end_offset
        pending = commands
        while pending:
            pending = self._try_group(pending)
        if log.end_offset != before:
            self._wake_fetchers()

    def _try_group(self, commands: list[_Command]) -> list[_Command]:
        """Run, commit and answer ``commands``; the ones to run again after a bug."""
        controller = self.controller
        assert controller is not None
        outcomes: list[tuple[_Command, Any]] = []
        culprit: tuple[int, Exception] | None = None
        try:
            with controller.group_commit():
                for i, command in enumerate(commands):
                    try:
                        outcomes.append((command, command.run()))
                    except RackwiseError as e:
                        outcomes.append((command, command.fail(ApiError.of(e))))
                    except Exception as e:
                        culprit = (i, e)
                        raise _RolledBack from e
        except _RolledBack:
            assert culprit is not None
            index, error = culprit
            LOG.error("BUG: a command failed, its group is rolled back: %r", error)
            _fail(commands[index], error)
            return commands[:index] + commands[index + 1 :]
        except Exception as e:
            for command in commands:
                _fail(command, e)
            self._die(e)
            return []
        self._answer_group(outcomes)
        return []

    def _answer_group(self, outcomes: list[tuple[_Command, Any]]) -> None:
        """Answer a committed group (a quorum answers once a majority holds it)."""
        for command, response in outcomes:
            if not command.future.done():
                command.future.set_result(response)

    def _note_arrival(self, request: Request) -> None:
        """On the listener's thread: a heartbeat arrived (its lease counts from now)."""
        if request.header.api_key == ApiKey.BROKER_HEARTBEAT:
            arrival = (int(request.body.broker_epoch), self.clock())
            with self._heard_lock:
                self._heard[int(request.body.broker_id)] = arrival

    def _take_heard(self) -> dict[int, tuple[int, int]]:
        with self._heard_lock:
            heard, self._heard = self._heard, {}
        return heard

    def _answer_on_io(self, request: Request) -> Any:
        """On the listener's thread: ApiVersions needs nothing from the loop, so a broker that
        reconnects while a long group holds the loop still gets to send its heartbeat."""
        if request.header.api_key == ApiKey.API_VERSIONS:
            return self._api_versions(request.header.api_version)
        return None

    def _publish_features(self) -> None:
        """Keep the finalized features of the last commit for :meth:`_api_versions`."""
        controller = self.controller
        if controller is None:
            self._features = None
            return
        features = controller.image.features
        epoch = controller.end_offset - 1 if features else -1
        self._features = (tuple(sorted(features.items())), epoch)

    def _wake_fetchers(self) -> None:
        self._publish_features()
        self._committed.set()
        self._committed = asyncio.Event()

    async def _fence_loop(self) -> None:
        controller = self.controller
        assert controller is not None
        while True:
            due = controller.next_check_time_ms()
            now = self.clock()
            if due is not None and due <= now:
                fenced = await self.submit(
                    lambda: controller.maybe_fence_stale_brokers(heard=self._take_heard()),
                    lambda error: error,
                )
                if isinstance(fenced, list) and fenced:
                    for broker_id in fenced:
                        LOG.info(
                            "fenced broker %d: lease expired (no heartbeat for %d ms)",
                            broker_id,
                            self.config.session_timeout_ms,
                        )
                    continue
            wait_s = FENCE_CHECK_MAX_INTERVAL_S
            if due is not None and due > now:
                wait_s = min(wait_s, (due - now) / 1000)
            await asyncio.sleep(wait_s)

    async def _balance_loop(self) -> None:
        controller = self.controller
        assert controller is not None
        while True:
            due = controller.next_balance_time_ms()
            now = self.clock()
            if due is not None and due <= now:
                written = await self.submit(
                    controller.maybe_balance_partition_leaders, lambda error: error
                )
                if isinstance(written, int) and written:
                    LOG.info(
                        "preferred leader election: %d partition change record(s) written",
                        written,
                    )
                continue
            wait_s = FENCE_CHECK_MAX_INTERVAL_S
            if due is not None:
                wait_s = min(wait_s, (due - now) / 1000)
            await asyncio.sleep(wait_s)

    # ---- requests ------------------------------------------------------------------------

    async def handle(self, request: Request) -> Any:
        """The response to one request on the controller listener."""
        key = request.header.api_key
        body = request.body
        controller = self.controller
        assert controller is not None
        if key == ApiKey.BROKER_REGISTRATION:
            return await self._register(body)
        if key == ApiKey.BROKER_HEARTBEAT:
            return await self._heartbeat(body)
        if key == ApiKey.ALLOCATE_PRODUCER_IDS:
            return await self._allocate_producer_ids(body)
        if key == ApiKey.FETCH_METADATA_LOG:
            return await self._fetch_log(body)
        if key == ApiKey.FETCH_METADATA_SNAPSHOT:
            return self._fetch_snapshot(body)
        if key == ApiKey.DESCRIBE_QUORUM:
            return self._describe_quorum(request.header.api_version)
        entry = ENTRIES.get(key)
        if entry is None or entry.answer is None:
            # Vote, Fetch and the rest of Raft's own APIs, from a controller that takes this
            # one for a member of a larger quorum: this one is its only voter.
            raise CloseConnection(
                f"{api_name(key)} is between the voters of a quorum; controller "
                f"{self.config.node_id} is the only voter of its own"
            )
        answer = partial(entry.answer, controller, body)
        fail = partial(entry.error, body)
        if entry.writes:
            return await self.submit(answer, fail)
        try:
            return answer()
        except RackwiseError as e:
            return fail(ApiError.of(e))

    def _describe_quorum(self, version: int) -> Any:
        """The quorum of a controller that is its only voter: it leads, at its log's epoch, and
        what it has written is committed."""
        log = self.log
        assert log is not None
        now = time.time_ns() // 1_000_000
        voter = {
            "replica_id": self.config.node_id,
            "replica_directory_id": None,
            "log_end_offset": log.end_offset,
            "last_fetch_timestamp": now,
            "last_caught_up_timestamp": now,
        }
        return describe_quorum_response(
            version,
            self.config,
            leader_id=self.config.node_id,
            leader_epoch=max(log.latest_epoch, 0),
            high_watermark=self._committed_end_offset(),
            voters=[voter],
        )

    def _api_versions(self, version: int) -> Any:
        """On the listener's thread (:meth:`_answer_on_io`): only published state is read."""
        published = self._features
        if published is None:  # no controller: a quorum voter that does not lead
            return api_versions_response(version, Listener.CONTROLLER)
        features, epoch = published
        return api_versions_response(
            version,
            Listener.CONTROLLER,
            supported_features=[
                SupportedFeature(
                    METADATA_VERSION_FEATURE, MIN_METADATA_VERSION_LEVEL, METADATA_VERSION_LEVEL
                )
            ],
            finalized_features=[FinalizedFeature(n, level) for n, level in features],
            finalized_features_epoch=epoch,
        )

    def _cluster_id_mismatch(self, cluster_id: str | None) -> str | None:
        expected = self.config.cluster_id
        if expected is None or cluster_id is None or cluster_id == expected:
            return None
        return f"cluster id {cluster_id} is not this cluster's ({expected})"

    async def _register(self, body: Any) -> Any:
        controller = self.controller
        assert controller is not None
        request = brokers.registration_args(body)
        session = current_connection()
        incarnation = kafka_uuid(request.incarnation_id)
        mismatch = self._cluster_id_mismatch(getattr(body, "cluster_id", None))
        if mismatch is not None:
            error = ApiError(INCONSISTENT_CLUSTER_ID, mismatch)
            LOG.warning(
                "refused the registration of broker %d (incarnation %s): %s",
                request.broker_id,
                incarnation,
                loggable(brokers.describe_error(error)),
            )
            return brokers.registration_response(body, None, error)

        def run() -> Any:
            reply = controller.register_broker(request, session=session)
            LOG.info(
                "registered broker %d (rack %s, incarnation %s) with epoch %d",
                request.broker_id,
                loggable(request.rack),
                incarnation,
                reply.broker_epoch,
            )
            return brokers.registration_response(body, reply)

        def fail(error: ApiError) -> Any:
            LOG.warning(
                "refused the registration of broker %d (incarnation %s): %s",
                request.broker_id,
                incarnation,
                loggable(brokers.describe_error(error)),
            )
            return brokers.registration_response(body, None, error)

        return await self.submit(run, fail)

    async def _heartbeat(self, body: Any) -> Any:
        controller = self.controller
        assert controller is not None
        request = brokers.heartbeat_args(body)
        session = current_connection()

        def run() -> Any:
            before = controller.image.brokers.get(request.broker_id)
            reply = controller.broker_heartbeat(request, session=session)
            if before is not None and before.fenced and not reply.is_fenced:
                LOG.info(
                    "unfenced broker %d (epoch %d): caught up, it applied offset %d",
                    request.broker_id,
                    request.broker_epoch,
                    request.current_metadata_offset,
                )
            elif before is not None and not before.fenced and reply.is_fenced:
                LOG.info(
                    "fenced broker %d (epoch %d): %s",
                    request.broker_id,
                    request.broker_epoch,
                    "it is shutting down" if request.want_shut_down else "it asked to be fenced",
                )
            return brokers.heartbeat_response(body, reply)

        def fail(error: ApiError) -> Any:
            LOG.warning(
                "refused a heartbeat of broker %d (epoch %d): %s",
                request.broker_id,
                request.broker_epoch,
                loggable(brokers.describe_error(error)),
            )
            return brokers.heartbeat_response(body, None, error)

        return await self.submit(run, fail)

    async def _allocate_producer_ids(self, body: Any) -> Any:
        """A block of producer ids for a broker, answered once its record is durable."""
        controller = self.controller
        assert controller is not None
        broker_id, broker_epoch = brokers.allocate_producer_ids_args(body)

        def run() -> Any:
            block = controller.allocate_producer_ids(broker_id, broker_epoch)
            LOG.info(
                "producer ids %d-%d to broker %d (epoch %d)",
                block.first_producer_id,
                block.last_producer_id,
                broker_id,
                broker_epoch,
            )
            return brokers.allocate_producer_ids_response(body, block)

        def fail(error: ApiError) -> Any:
            LOG.warning(
                "refused producer ids to broker %d (epoch %d): %s",
                broker_id,
                broker_epoch,
                brokers.describe_error(error),
            )
            return brokers.allocate_producer_ids_error(body, error)

        return await self.submit(run, fail)

    # ---- the metadata log, for brokers ---------------------------------------------------

    def _fetch_log_response(self, **values: Any) -> Any:
        log = self.log
        assert log is not None
        fields: dict[str, Any] = {
            "throttle_time_ms": 0,
            "error_code": 0,
            "error_message": None,
            "high_watermark": self._committed_end_offset(),
            "log_start_offset": log.start_offset,
            "snapshot_end_offset": -1,
            "snapshot_epoch": -1,
            "records": b"",
        }
        fields.update(values)
        return make(response_class(ApiKey.FETCH_METADATA_LOG, 0), fields)

    async def _fetch_log(self, body: Any) -> Any:
        mismatch = self._cluster_id_mismatch(body.cluster_id)
        if mismatch is not None:
            return self._fetch_log_response(
                error_code=INCONSISTENT_CLUSTER_ID, error_message=mismatch
            )
        log = self.log
        assert log is not None
        offset = int(body.fetch_offset)
        if offset < log.start_offset:
            snapshot = log.latest_snapshot_id()
            if snapshot is None:
                return self._fetch_log_response(
                    error_code=OFFSET_OUT_OF_RANGE,
                    error_message=f"offset {offset} is before the log's start and no snapshot",
                )
            return self._fetch_log_response(
                snapshot_end_offset=snapshot.end_offset, snapshot_epoch=snapshot.epoch
            )
        if offset > log.end_offset:
            return self._fetch_log_response(
                error_code=OFFSET_OUT_OF_RANGE,
                error_message=f"offset {offset} is past the log's end {log.end_offset}",
            )
        wait_ms = min(max(int(body.max_wait_ms), 0), MAX_FETCH_WAIT_MS)
        if offset >= self._committed_end_offset() and wait_ms > 0:
            committed = self._committed
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(committed.wait(), wait_ms / 1000)
            log = self.log
            if log is None:
                raise RackwiseError("the controller is shutting down")
        if offset < log.start_offset:  # a snapshot moved the log's start while waiting
            return await self._fetch_log(body)
        try:
            data = (
                log.read_raw(offset, max(int(body.max_bytes), 1))
                if offset < self._committed_end_offset()
                else b""
            )
        except OffsetOutOfRangeException:
            return await self._fetch_log(body)
        return self._fetch_log_response(records=data)

    def _committed_end_offset(self) -> int:
        """The end of what brokers may read: every durable record (a quorum: the high
        watermark)."""
        log = self.log
        assert log is not None
        return log.end_offset

    def _fetch_snapshot(self, body: Any) -> Any:
        log = self.log
        assert log is not None
        snapshot_id = SnapshotId(int(body.snapshot_end_offset), int(body.snapshot_epoch))
        values: dict[str, Any] = {
            "throttle_time_ms": 0,
            "error_code": 0,
            "error_message": None,
            "snapshot_end_offset": snapshot_id.end_offset,
            "snapshot_epoch": snapshot_id.epoch,
            "size": -1,
            "position": -1,
            "bytes": b"",
        }
        cls = response_class(ApiKey.FETCH_METADATA_SNAPSHOT, 0)
        path = Path(log.directory) / snapshot_id.file_name()
        try:
            with path.open("rb") as f:
                size = f.seek(0, 2)
                position = int(body.position)
                if not 0 <= position <= size:
                    values.update(
                        error_code=POSITION_OUT_OF_RANGE,
                        error_message=f"position {position} is outside the snapshot's {size} bytes",
                    )
                    return make(cls, values)
                f.seek(position)
                chunk = f.read(min(max(int(body.max_bytes), 1), MAX_SNAPSHOT_CHUNK_BYTES))
        except FileNotFoundError:
            values.update(
                error_code=SNAPSHOT_NOT_FOUND,
                error_message=f"snapshot {snapshot_id.file_name()} does not exist",
            )
            return make(cls, values)
        values.update(size=size, position=position, bytes=chunk)
        return make(cls, values)


def _write_snapshot(log: FileMetadataLog, job: SnapshotJob) -> tuple[SnapshotId, int]:
    """On a worker thread: the job's image as records, written as a snapshot; its id and
    size in bytes. The cyclic collector is paused meanwhile (the records are millions of
    objects without cycles, and a full collection would hold the interpreter for seconds)."""
    with paused_gc():
        snapshot_id = log.write_snapshot(job.image.to_records(), job.end_offset)
    return snapshot_id, (Path(log.directory) / snapshot_id.file_name()).stat().st_size


# ---- the process -----------------------------------------------------------------------------


def _quorum_node(config: NodeConfig) -> ControllerNode:
    # Imported here: the quorum's node is built on this module's.
    from rackwise.controller_node.quorum_controller import QuorumControllerNode  # noqa: PLC0415

    return QuorumControllerNode(config)


def run_controller(config_path: str, overrides: Mapping[str, str] | None = None) -> int:
    """``rackwise controller start --config FILE [--override KEY=VALUE]``: serve until SIGTERM
    or SIGINT."""
    config = load_node_config(config_path, overrides)
    if not config.is_controller:
        raise ConfigException(
            f"{config_path}: process.roles={config.role}; start it with rackwise {config.role} "
            "start"
        )
    configure_logging("controller", config.node_id)

    async def main(stop: asyncio.Event) -> int:
        node = ControllerNode(config) if len(config.voters) <= 1 else _quorum_node(config)
        node.open()
        try:
            await node.start()
            report_ready("controller", config.node_id, [node.endpoint])
            LOG.info("serving on %s", node.endpoint)
            stopping = asyncio.ensure_future(stop.wait())
            dying = asyncio.ensure_future(node.stopped.wait())
            await asyncio.wait([stopping, dying], return_when=asyncio.FIRST_COMPLETED)
            stopping.cancel()
            dying.cancel()
        finally:
            await node.close()
        if node.fatal is not None:
            return 1
        LOG.info("stopped")
        return 0

    return run_until_stopped(main)
