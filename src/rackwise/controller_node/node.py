"""The controller node (KIP-631): a :class:`~rackwise.controller.Controller` over the metadata
log replicated by a Raft quorum (:class:`~rackwise.metalog.replicated.ReplicatedMetadataLog`,
driven by :class:`~rackwise.controller_node.quorum_driver.QuorumDriver`), served on the
controller listener; the process around it is :mod:`rackwise.controller_node.server`. A single
controller is the one voter of its quorum (Kafka's KRaft, KIP-631 on KIP-595): it leads at
once and its writes commit on its own fsync; in a quorum of 3 or 5 the active controller is
the leader and a write commits once a majority holds it.

Goals
    Brokers register (BrokerRegistration), heartbeat (BrokerHeartbeat), change the ISRs of
    the partitions they lead (AlterPartition, through the same group commit as every write),
    take blocks of producer ids for their idempotent producers (AllocateProducerIds, likewise)
    and follow the metadata log as the quorum's observers (the voters' Fetch, long-polled,
    and FetchSnapshot when what they need is only in a snapshot); they forward admin
    writes (CreateTopics, CreatePartitions, DeleteTopics, IncrementalAlterConfigs) and
    KIP-879's CreateReplicaPlacement as the same requests; DescribeConfigs is answered from
    the controller's image. A timer fences brokers whose lease ran out; another moves
    leadership back to preferred replicas (``auto.leader.rebalance.enable``, every
    ``leader.imbalance.check.interval.seconds`` while some partition needs it). A write is answered
    only once its records are committed: fsynced by a majority of the voters (the only voter's
    own fsync, for a single controller).

Constraints
    * The pure controller is driven one call at a time, on the event loop: every command that
      may write goes through one queue, and the commands queued together are committed as a
      group (:mod:`rackwise.controller_node.commit_loop`): one append, one fsync, then every
      reply. Reads (placement, fetches) run between groups, so they only ever see durable
      records.
    * The listener's sockets are served on a thread of their own (:mod:`rackwise.net.io_thread`):
      a heartbeat's arrival renews its broker's lease at once, even while a long group holds
      the loop, so that no broker is fenced for the controller's own slowness (as Kafka's
      controller notes a heartbeat before queueing it, KAFKA-17793). ApiVersions is answered
      there too, from the features of the last commit, so that a broker whose heartbeat timed
      out reconnects and heartbeats again while the group goes on.
    * The metadata log failing (a write or fsync error) is fatal: every waiting command fails,
      the node logs one line and sets :attr:`ControllerNode.stopped`, as Kafka's controller
      stops on a fault in its log. Recovery happens at the next start.
    * What the log found when it opened (a torn tail truncated, a corrupt snapshot set aside)
      is logged as warnings, one line each, by the log (``rackwise.metalog``).
    * A snapshot never stalls the event loop: it is written on a worker thread, at most one at
      a time, while commits go on (:mod:`rackwise.controller_node.snapshots`); it holds only
      committed records.
    * A new leader first waits until its own epoch's first record (its mark) is committed
      (then every record before it is too), then builds its controller from the whole log
      (snapshot and records, through the one replay), and only then answers; its brokers'
      leases start afresh (heartbeat times are soft state, not in the log). The only voter
      does this within :meth:`ControllerNode.start`, before its listener is bound.
    * A leader that loses its epoch drops its controller at once (its image may hold records
      the next leader cuts) and answers every write waiting for a majority with
      NOT_CONTROLLER; the broker retries, and a retried write is refused if it was applied
      after all (TOPIC_ALREADY_EXISTS for a CreateTopics), as Kafka's controller does. A voter
      that is not the active controller answers controller requests with NOT_CONTROLLER (41);
      brokers fetch the metadata log from the quorum's leader, as observers: another voter
      answers NOT_LEADER_OR_FOLLOWER naming the leader it knows.
    * The quorum's own requests (Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch,
      FetchSnapshot) go to the driver; the only voter of its quorum has no other voter to
      hear them from and closes the connection, but for the brokers' Fetch and
      FetchSnapshot. DescribeQuorum is answered from the leader's view of the voters and
      the observers (:func:`~rackwise.controller_node.handlers.describe_quorum`).
    * Quorum settings are Kafka's keys (``controller.quorum.election.timeout.ms`` and the
      rest, :func:`rackwise.raft.config.quorum_config`).
    * Logged, one line each: the log opened, each quorum epoch and its leader, becoming and
      ceasing to be the active controller, the recovery (the log's opening and the replay,
      as of the activation), brokers fenced (lease expired) and preferred-leader runs that
      wrote records; what the requests log is in
      :mod:`rackwise.controller_node.handlers`.

Algorithm
    ``_commit_loop``: take the next group (the first queued command, then every one already
    queued); commit it; answer it once the high watermark reaches its end (at once when the
    only voter's fsync moved it); start a snapshot on a worker thread if one is due and none
    is being written. ``_on_leader_change``: on a new epoch, deactivate (drop the controller,
    stop its timers, fail waiting writes). ``_on_commit(hw)``: wake the brokers' fetches;
    answer the writes whose group ends at or below ``hw``; if leading and ``hw`` passed the
    epoch's start offset and no controller is active, activate, starting its timers
    (:mod:`rackwise.controller_node.timers`). A fetch at the log's end is held by the
    state machine until there is more to send, or its fetch max wait.

Worked example
    A single controller starts on an empty directory: it stands at once, leads epoch 1 and
    appends its mark at offset 0; its fsync commits it, and it builds its controller before
    the listener is bound. Voters 1, 2, 3; 1 leads epoch 4 from offset 200. A CreateTopics
    reaches 1: its records are appended at 201-204 and fsynced; the answer waits. Voters 2 and
    3 fetch at 201, flush, fetch at 205; the high watermark becomes 205 and the CreateTopics
    is answered. Controller 1 is killed: 2 and 3 time out, 2 wins epoch 5, appends its mark at
    205; once 206 is committed it builds its controller from offsets 0-205 and answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import threading
import time
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, Final, TypeVar

from rackwise.common.error_codes import NOT_CONTROLLER
from rackwise.common.errors import RackwiseError
from rackwise.controller import ApiError, Controller
from rackwise.controller_node import authorize, handlers
from rackwise.controller_node.commit_loop import Command, answer, next_group, try_group
from rackwise.controller_node.quorum_driver import QuorumDriver, voter_addresses
from rackwise.controller_node.requests import AUTHORIZER_ENTRIES, ENTRIES
from rackwise.controller_node.snapshots import SnapshotWorker
from rackwise.controller_node.timers import balance_loop, fence_loop
from rackwise.image import MetadataImage
from rackwise.metalog.replicated import NotControllerException, ReplicatedMetadataLog
from rackwise.net import CloseConnection, ThreadedKafkaServer, start_threaded_server
from rackwise.node.addresses import Endpoint
from rackwise.node.authorization import authorization_of
from rackwise.node.config import NodeConfig
from rackwise.node.metrics import RequestMetrics
from rackwise.node.properties_file import ConfigException
from rackwise.node.sasl_setup import listener_sasl, set_node_logins
from rackwise.node.tls_setup import client_tls, listener_security
from rackwise.protocol import ApiKey, Listener, Request, Response, api_name
from rackwise.raft.config import quorum_config

LOG: Final = logging.getLogger("rackwise.controller")
T = TypeVar("T")
"""What a command submitted to the group commit returns (a response, or a timer's value)."""
QUORUM_APIS: Final = frozenset(
    {
        ApiKey.VOTE,
        ApiKey.BEGIN_QUORUM_EPOCH,
        ApiKey.END_QUORUM_EPOCH,
        ApiKey.FETCH,
        ApiKey.FETCH_SNAPSHOT,
    }
)
OBSERVER_APIS: Final = frozenset({ApiKey.FETCH, ApiKey.FETCH_SNAPSHOT})
"""What brokers send too: they follow the metadata log as observers of the quorum."""


def monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class ControllerNode:
    """The controller process' state and service, one voter of ``config.voters`` (see the
    module docstring)."""

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
        self._authorization = authorization_of(config.properties)
        self._entries = ENTRIES if self._authorization is None else AUTHORIZER_ENTRIES
        self._acl_image = MetadataImage()
        self.clock = clock
        self.rng = rng if rng is not None else random.Random()
        self.quorum_config = quorum_config(config.properties)
        self.log: ReplicatedMetadataLog | None = None
        self.driver: QuorumDriver | None = None
        self.controller: Controller | None = None
        self.server: ThreadedKafkaServer | None = None
        self.fatal: BaseException | None = None
        self.stopped = asyncio.Event()
        self._queue: asyncio.Queue[Command] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        self._active_tasks: list[asyncio.Task[None]] = []
        self._awaiting: list[tuple[int, list[tuple[Command, Any]]]] = []
        self._open_s = 0.0  # the log's opening, counted in the first recovery's time
        self._snapshots = SnapshotWorker()
        self._heard: dict[int, tuple[int, int]] = {}  # broker id -> (epoch, arrival ms)
        self._heard_lock = threading.Lock()  # _heard is filled on the listener's thread
        # ApiVersions is answered on the listener's thread, from the features as of the last
        # commit: (finalized features, their epoch), or None when there is no controller.
        self._features: handlers.Features | None = None
        self.requests = RequestMetrics()
        """The requests answered on the controller listener, for the metrics."""

    # ---- lifecycle -----------------------------------------------------------------------

    def open(self) -> None:
        """Open (and recover) this voter's replica of the metadata log."""
        directory = self.config.metadata_log_dir
        assert directory is not None
        started = time.monotonic()
        voters = sorted(self.config.voter_ids or {self.config.node_id})
        log = ReplicatedMetadataLog(
            directory,
            self.config.node_id,
            voters,
            self.quorum_config,
            random=self.rng,
            clock=self.clock,
            send=lambda destination, message: None,
            segment_bytes=self.config.metadata_log_segment_bytes,
            max_record_bytes_between_snapshots=self.config.max_record_bytes_between_snapshots,
        )
        log.on_commit = self._on_commit
        log.on_leader_change = self._on_leader_change
        self.log = log
        self._open_s = time.monotonic() - started
        LOG.info(
            "opened the metadata log in %s: offsets %d to %d, epoch %d; voters %s",
            directory,
            log.start_offset,
            log.end_offset,
            log.epoch,
            ",".join(str(v) for v in voters),
        )

    async def start(self) -> None:
        """Join the quorum (the only voter leads and activates at once), listen on the
        controller listener and start the commit loop."""
        if self.log is None:
            self.open()
        log = self.log
        assert log is not None
        set_node_logins(self.config)
        self.driver = QuorumDriver(
            log,
            voter_addresses(self.config.voters),
            cluster_id=self.config.cluster_id,
            request_timeout_ms=self.quorum_config.request_timeout_ms,
            tls=client_tls(self.config, self.config.controller_endpoint.listener_name),
        )
        await self.driver.start()
        await self._start_server()
        self._tasks = [asyncio.get_running_loop().create_task(self._commit_loop())]

    async def _start_server(self) -> None:
        """The controller listener, its sockets on a thread of their own."""
        endpoint = self.config.controller_endpoint
        self.server = await start_threaded_server(
            self.requests.wrap(self.handle),
            Listener.CONTROLLER,
            host=endpoint.host,
            port=endpoint.port,
            max_request_bytes=self.config.socket_request_max_bytes,
            name=f"controller {self.config.node_id} {endpoint.listener_name}",
            limits=self.config.server_limits(),
            on_arrival=self._note_arrival,
            answer_on_io=self._answer_on_io,
            security=listener_security(self.config, endpoint.listener_name),
            sasl=listener_sasl(self.config, endpoint.listener_name, self._scram_credentials),
        )

    def _scram_credentials(self) -> Mapping[tuple[str, int], Any]:
        """The committed image's SCRAM credentials (read on the listener's thread)."""
        controller = self.controller
        return {} if controller is None else controller.image.scram_credentials

    @property
    def endpoint(self) -> Endpoint:
        """The controller listener as bound."""
        assert self.server is not None
        name = self.config.controller_endpoint.listener_name
        host, port = self.server.address
        return Endpoint(name, host, port)

    async def close(self) -> None:
        """Resign, stop serving, fail what waits, close the log."""
        if self.driver is not None:
            await self.driver.close(resign=True)
        self._deactivate("shutting down")
        if self.server is not None:
            await self.server.close()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        await self._snapshots.wait()
        while not self._queue.empty():
            command = self._queue.get_nowait()
            if not command.future.done():
                command.future.set_exception(RackwiseError("the controller is shutting down"))
        self._publish_features()
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

    # ---- leadership ----------------------------------------------------------------------

    def _on_leader_change(self, leader_id: int, epoch: int) -> None:
        LOG.info("quorum epoch %d: leader %s", epoch, leader_id if leader_id >= 0 else "none")
        if self.controller is not None:
            self._deactivate(f"epoch {epoch} began (leader {leader_id})")

    def _on_commit(self, high_watermark: int) -> None:
        self._publish_features()
        ready = [group for group in self._awaiting if group[0] <= high_watermark]
        self._awaiting = [group for group in self._awaiting if group[0] > high_watermark]
        for _, outcomes in ready:
            answer(outcomes)
        log = self.log
        assert log is not None
        start = log.epoch_start_offset
        if self.controller is None and start is not None and high_watermark > start:
            self._activate(log)

    def _activate(self, log: ReplicatedMetadataLog) -> None:
        started = time.monotonic()
        self.controller = controller = Controller(
            log,
            self.clock,
            self.config.controller_config(),
            random=self.rng,
            is_snapshot_deferred=True,
        )
        self._publish_features()
        recovery = controller.recovery
        snapshot = (
            "no snapshot"
            if recovery.snapshot_end_offset is None
            else f"snapshot ending at offset {recovery.snapshot_end_offset}"
        )
        LOG.info("active controller of epoch %d", log.epoch)
        LOG.info(
            "recovered the metadata log in %s in %.3f s: %s (%d records) and %d records after "
            "it; log offsets %d to %d",
            log.directory,
            self._open_s + time.monotonic() - started,
            snapshot,
            recovery.num_snapshot_records,
            recovery.num_log_records,
            log.start_offset,
            log.end_offset,
        )
        self._open_s = 0.0
        loop = asyncio.get_running_loop()
        self._active_tasks = [
            loop.create_task(
                fence_loop(
                    controller,
                    self.submit,
                    self.clock,
                    self._take_heard,
                    self.config.session_timeout_ms,
                )
            ),
            loop.create_task(balance_loop(controller, self.submit, self.clock)),
        ]

    def _deactivate(self, reason: str) -> None:
        if self.controller is not None:
            LOG.info("no longer the active controller: %s", reason)
        self.controller = None
        self._publish_features()
        for task in self._active_tasks:
            task.cancel()
        self._active_tasks = []
        awaiting, self._awaiting = self._awaiting, []
        error = ApiError(NOT_CONTROLLER, f"the active controller changed: {reason}")
        for _, outcomes in awaiting:
            for command, _ in outcomes:
                if not command.future.done():
                    command.future.set_result(command.fail(error))

    def _not_controller(self) -> ApiError:
        log = self.log
        assert log is not None
        return ApiError.of(
            NotControllerException(
                f"controller {self.config.node_id} is not the active controller; the leader "
                f"of epoch {log.epoch} is {log.leader_id}",
                log.leader_id,
                log.epoch,
            )
        )

    # ---- the write path ------------------------------------------------------------------

    async def submit(self, run: Callable[[], T], fail: Callable[[ApiError], T]) -> T:
        """Queue a command for the next group commit; its response once committed."""
        if self.fatal is not None:
            raise RackwiseError(f"the controller stopped: {self.fatal}")
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(Command(run, fail, future))
        return await future

    async def _commit_loop(self) -> None:
        while True:
            self._commit_group(await next_group(self._queue))
            if self.fatal is not None:
                return
            self._maybe_start_snapshot()
            await asyncio.sleep(0)  # answers and reads go out before the next group

    def _commit_group(self, commands: list[Command]) -> None:
        """Commit ``commands`` as one group and answer them once committed (:func:`try_group`:
        a command that fails with anything but a typed error fails alone, the others are
        committed again without it; a failing log is fatal). Without an active controller
        every command is answered NOT_CONTROLLER."""
        log, controller = self.log, self.controller
        assert log is not None
        if controller is None:
            error = self._not_controller()
            for command in commands:
                if not command.future.done():
                    command.future.set_result(command.fail(error))
            return
        pending = commands
        while pending:
            attempt = try_group(controller, pending)
            if attempt.fatal is not None:
                self._die(attempt.fatal)
            elif attempt.outcomes is not None:
                if log.high_watermark >= log.end_offset:
                    answer(attempt.outcomes)
                else:
                    self._awaiting.append((log.end_offset, attempt.outcomes))
            pending = attempt.retry

    def _maybe_start_snapshot(self) -> None:
        controller, log = self.controller, self.log
        if controller is None or log is None:
            return
        if not self._snapshots.busy:
            log.snapshot_epoch = log.epoch
        self._snapshots.maybe_start(controller, log)

    # ---- the listener's thread -----------------------------------------------------------

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

    def _answer_on_io(self, request: Request) -> Response | None:
        """On the listener's thread: ApiVersions needs nothing from the loop, so a broker that
        reconnects while a long group holds the loop still gets to send its heartbeat."""
        if request.header.api_key == ApiKey.API_VERSIONS:
            return handlers.api_versions(request.header.api_version, self._features)
        return None

    def _publish_features(self) -> None:
        """Keep the finalized features of the last commit for ApiVersions."""
        controller = self.controller
        if controller is None:
            self._features = None
            return
        features = controller.image.features
        epoch = controller.end_offset - 1 if features else -1
        self._features = (tuple(sorted(features.items())), epoch)

    # ---- requests ------------------------------------------------------------------------

    async def handle(self, request: Request, *, judged: bool = False) -> Response:
        """The response to one request on the controller listener, judged first by the
        authorizer when there is one (:mod:`rackwise.controller_node.authorize`)."""
        if not judged and self._authorization is not None:
            if self.controller is not None:
                self._acl_image = self.controller.image
            verdict = authorize.verdict(self._authorization, self._acl_image, request)
            if verdict is not None:
                allowed = partial(self.handle, judged=True)
                return await authorize.answer(verdict, request, allowed, self._entries)
        key = request.header.api_key
        log = self.log
        assert log is not None
        if key in OBSERVER_APIS and self.driver is not None:
            return await self.driver.handle(request)  # a broker following the log, or a voter
        if key in QUORUM_APIS:
            if self.driver is None or self.config.voter_ids <= {self.config.node_id}:
                # From a controller that takes this one for a member of a larger quorum.
                raise CloseConnection(
                    f"{api_name(key)} is between the voters of a quorum; controller "
                    f"{self.config.node_id} is the only voter of its own"
                )
            return await self.driver.handle(request)
        if key == ApiKey.DESCRIBE_QUORUM:
            return handlers.describe_quorum(
                request.header.api_version, self.config, log, self.clock()
            )
        if key == ApiKey.DESCRIBE_CLUSTER:
            return handlers.describe_cluster(request.body, self.config, log)
        controller = self.controller
        if controller is None:
            return handlers.refuse(request, self._not_controller(), self._entries)
        if key == ApiKey.BROKER_REGISTRATION:
            return await handlers.register(
                controller, request, self.submit, cluster_id=self.config.cluster_id
            )
        if key == ApiKey.BROKER_HEARTBEAT:
            return await handlers.heartbeat(controller, request, self.submit)
        if key == ApiKey.ALLOCATE_PRODUCER_IDS:
            return await handlers.allocate_producer_ids(controller, request, self.submit)
        entry = self._entries.get(key)
        if entry is None or entry.answer is None:
            raise CloseConnection(f"{api_name(key)} is not answered on the controller listener")
        run = partial(entry.answer, controller, request)
        fail = partial(entry.error, request)
        if entry.writes:
            return await self.submit(run, fail)
        try:
            return run()
        except RackwiseError as e:
            return fail(ApiError.of(e))
