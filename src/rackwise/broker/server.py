"""The broker process (KIP-631): register with the controller, heartbeat, follow the metadata
log, and serve Kafka clients on its listeners (Kafka's ``BrokerServer`` with its
``BrokerLifecycleManager``). The data the broker stores is :mod:`rackwise.broker.data_plane`'s.

Goals
    * Registration: BrokerRegistration with ``broker.rack``, the advertised listeners (ports as
      bound), one directory id per ``log.dirs`` entry and a new incarnation id per start,
      retried until the controller answers (a previous incarnation's live lease gives
      DUPLICATE_BROKER_REGISTRATION: retried too, until that lease runs out).
    * Heartbeats every ``broker.heartbeat.interval.ms``, carrying the offset of the last
      metadata record applied; the answers say whether the broker is fenced, and when it
      should shut down. A heartbeat refused as stale (the controller lost the registration)
      registers again, same incarnation. A refused registration or heartbeat is logged in one
      line with Kafka's error name and code (``INVALID_REGISTRATION (119)``); each change of
      the fenced flag in the heartbeat answers is logged once.
    * Clients are answered once the broker has caught up with the metadata log and been
      unfenced the first time (as Kafka enables request processing only then), each API by
      its entry of the dispatch table (:mod:`rackwise.broker.requests`): reads from the image
      (:mod:`rackwise.broker.metadata_apis`), writes forwarded to the controller
      (:mod:`rackwise.broker.forwarding`).
    * As the leader of partitions, it asks the controller to add caught-up replicas back to
      their ISRs (AlterPartition; :mod:`rackwise.broker.isr`).

Constraints
    Four connections to the controller, so that none waits on another: heartbeats, the
    metadata fetch (a long poll), forwarded writes and ISR changes. SIGTERM stops the broker
    promptly without unregistering (the controller fences it when its lease runs out). Its
    log directories and the cluster id it tells clients: :mod:`rackwise.node.meta_properties`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Final

from rackwise.broker import metadata_apis as broker_apis
from rackwise.broker.auto_create import AutoTopicCreator
from rackwise.broker.controller_channel import ControllerChannel
from rackwise.broker.data_apis import DataApis
from rackwise.broker.data_plane import DataPlane
from rackwise.broker.forwarding import Forwarder, ImagePredicate
from rackwise.broker.isr import IsrManager
from rackwise.broker.listeners import BrokerListeners
from rackwise.broker.log_dirs import DirectoryAssigner
from rackwise.broker.metadata_fetcher import MetadataFetcher
from rackwise.broker.metadata_follower import MetadataFollower
from rackwise.broker.metrics import report_bytes_out, serve_broker_metrics
from rackwise.broker.producer_ids import RpcProducerIdManager
from rackwise.broker.requests import BrokerApis, answer
from rackwise.common.error_codes import BROKER_ID_NOT_REGISTERED, NONE, STALE_BROKER_EPOCH
from rackwise.controller.controller import METADATA_VERSION_LEVEL
from rackwise.coordinator.group_coordinator import GroupCoordinator
from rackwise.image import MetadataImage
from rackwise.net import (
    KafkaConnection,
    KafkaServer,
    NetworkException,
    NoResponse,
    request_listener,
)
from rackwise.node.addresses import Endpoint
from rackwise.node.authorization import authorization_of
from rackwise.node.config import BROKER_ROLE, NodeConfig, load_node_config
from rackwise.node.data_config import DataPathConfig
from rackwise.node.dynamic_config import DynamicBrokerConfig
from rackwise.node.loop_thread import LoopThread, Signal
from rackwise.node.meta_properties import (
    LogDirectory,
    derived_cluster_id,
    ensure_log_dirs,
    stored_cluster_id,
)
from rackwise.node.metrics import MetricsServer, RequestMetrics
from rackwise.node.process import configure_logging, report_ready, run_until_stopped
from rackwise.node.properties_file import ConfigException
from rackwise.node.sasl_setup import set_node_logins
from rackwise.protocol import ApiKey, ProtocolError, Request, Response, error_name
from rackwise.raft.config import DEFAULT_QUORUM_FETCH_TIMEOUT_MS
from rackwise.raft.config import QUORUM_FETCH_TIMEOUT_MS_CONFIG as QUORUM_FETCH_TIMEOUT_MS
from rackwise.records import kafka_uuid
from rackwise.storage.records_kernel import load_in_background as load_compiled_record_walk

LOG: Final = logging.getLogger("rackwise.broker.server")

NO_EPOCH: Final = -1
"""``broker_epoch`` before the broker is registered."""
RETRY_BACKOFF_S: Final = 0.1
MAX_RETRY_BACKOFF_S: Final = 1.0
CONNECT_TIMEOUT_S: Final = 2.0
READY_WAIT_S: Final = 10.0
"""The longest a broker told it is unfenced waits for its image to show it before serving."""
SHUT_DOWN_WARNING_INTERVAL_S: Final = 60.0


def control_error(code: int) -> str:
    """A refused registration or heartbeat's error as a log line shows it: Kafka's name and
    the code (``INVALID_REGISTRATION (119)``)."""
    return f"{error_name(code)} ({code})"


def fencing_transition(was_fenced: bool, is_fenced: bool) -> str | None:
    """The log line for a heartbeat answer that changes whether this broker is fenced, or
    None when it does not."""
    if was_fenced == is_fenced:
        return None
    return "fenced by the controller" if is_fenced else "unfenced by the controller"


# ---- the broker --------------------------------------------------------------------------------


class Broker:
    """One broker process's state and tasks (see the module docstring)."""

    def __init__(self, config: NodeConfig, *, incarnation_id: uuid.UUID | None = None) -> None:
        if config.role != BROKER_ROLE:
            raise ConfigException(f"BUG: a {config.role}'s configuration given to a broker")
        self.config = config
        self.listeners = BrokerListeners(config)
        set_node_logins(config)
        self.node_id = config.node_id
        self.incarnation_id = incarnation_id or uuid.uuid4()
        # The configured (or stored) cluster id is what the controller is sent (None if
        # neither); clients are told it, or else one derived from the controller addresses.
        self.cluster_id = config.cluster_id or stored_cluster_id(config.log_dirs)
        self.client_cluster_id = self.cluster_id or derived_cluster_id(config.controller_addresses)
        self.controller_channel = ControllerChannel(
            config.controller_addresses,
            voters={v.node_id: (v.host, v.port) for v in config.voters},
            client_id=f"rackwise-broker-{self.node_id}",
            connect_timeout_s=CONNECT_TIMEOUT_S,
            tls=self.listeners.controller_tls,
        )
        self.log_dirs: list[LogDirectory] = []
        self.follower = MetadataFollower()
        self.broker_epoch = NO_EPOCH
        self.is_fenced = True
        self.ready = asyncio.Event()
        self.stopped = asyncio.Event()
        self.exit_status = 0
        self.fetcher = MetadataFetcher(
            self.follower,
            self._connect,
            node_id=self.node_id,
            cluster_id=self.cluster_id,
            voters={v.node_id: (v.host, v.port) for v in config.voters},
            connect_to=self.controller_channel.open,
            forget=self.controller_channel.forget_leader,
            fetch_timeout_ms=int(
                config.properties.get(QUORUM_FETCH_TIMEOUT_MS, DEFAULT_QUORUM_FETCH_TIMEOUT_MS)
            ),
            on_change=lambda _image: self._image_changed(),
        )
        # Heartbeats and the metadata fetch run on a loop of their own (loop_thread), so that
        # client requests never delay them; changes reach this loop through the signal.
        self.lifecycle_thread = LoopThread(f"broker-{self.node_id}-lifecycle")
        self._lifecycle_runs: list[asyncio.Future[None]] = []
        self._main_loop: asyncio.AbstractEventLoop | None = None
        self.image_signal: Signal | None = None
        self._asked_to_shut_down = False
        self._shut_down_warned = -SHUT_DOWN_WARNING_INTERVAL_S
        self.forwarder = Forwarder(self._connect, self._wait_applied)
        self.data_config = DataPathConfig.from_properties(config.properties)
        self.dynamic_config = DynamicBrokerConfig(
            self.node_id, config.properties, lambda: self.follower.image
        )
        self.data = DataPlane(
            self.node_id,
            list(config.log_dirs),
            dict(config.properties),
            self.data_config,
            connect_broker=self._connect_broker,
            broker_epoch=lambda: self.broker_epoch,
            assign_dirs=DirectoryAssigner(self.node_id, lambda: self.broker_epoch, self._connect),
        )
        self.data.on_dirs_failed = self._dirs_failed
        self.dynamic_config.on_change(self._dynamic_config_changed)
        self._online_dir_ids: tuple[uuid.UUID, ...] = ()
        self._offline_dir_ids: tuple[uuid.UUID, ...] = ()
        self._heartbeat_now = asyncio.Event()
        """Set, on the lifecycle loop, to send the next heartbeat without waiting out the
        interval: a directory failed."""
        self.isr = IsrManager(
            self.node_id,
            lambda: self.broker_epoch,
            lambda: self.follower.image,
            self._wait_applied,
            self._connect,
            planner=self.data.plan_isr,
        )
        self.data.isr_wake = self.isr.wake
        self.auto_create = AutoTopicCreator(self.forwarder.forward)
        self.producer_ids = RpcProducerIdManager(
            self.node_id, lambda: self.broker_epoch, self._connect
        )
        self.data_apis = DataApis(
            self.data.replicas,
            self.data.purgatory,
            lambda: self.follower.image,
            config.broker_endpoints[0].listener_name,
            self.data.selector,
            auto_create=self.auto_create if self.data_config.auto_create_topics_enable else None,
            on_change=self.data.on_change,
            leader_throttle=self.data.leader_throttle,
        )
        self.groups = GroupCoordinator(
            self.data.replicas,
            self.data_apis,
            lambda: self.follower.image,
            self.auto_create,
            self.data_config,
            config.broker_endpoints[0].listener_name,
        )
        self._tasks: list[asyncio.Task[None]] = []
        self.requests = RequestMetrics()
        self.metrics: MetricsServer | None = None
        self._readying: asyncio.Task[None] | None = None
        self._client_listener = config.broker_endpoints[0].listener_name
        self.apis = BrokerApis(
            image=lambda: self.follower.image,
            info=self.info,
            data_apis=self.data_apis,
            groups=self.groups,
            producer_ids=self.producer_ids,
            forwarder=self.forwarder,
            log_dirs=self.data.log_dirs,
            replicas=self.data.replicas,
            auto_create=self.auto_create if self.data_config.auto_create_topics_enable else None,
            authorization=authorization_of(config.properties),
        )
        # A registration not answered within the session is worth nothing. A heartbeat not
        # answered within half of it is sent again (over a new connection: the controller
        # notes a heartbeat on arrival), so that one stuck behind a long group on the controller
        # is followed by another while the lease from the first still runs.
        self._control_timeout_s = max(config.session_timeout_ms / 1000, 1.0)
        self._heartbeat_timeout_s = max(config.session_timeout_ms / 2000, 0.5)

    # ---- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Check the log directories, bind the listeners, and start registering and following
        the metadata log."""
        self.log_dirs = ensure_log_dirs(self.config.log_dirs, self.node_id, self.cluster_id)
        # Loaded now, beside the logs, rather than when the first large batch arrives, while
        # clients wait (rackwise.storage.records_kernel).
        load_compiled_record_walk()
        self.data.load({d.path: d.directory_id for d in self.log_dirs})
        self._online_dir_ids = tuple(self.data.online_dir_ids)
        self._offline_dir_ids = tuple(self.data.offline_dir_ids)
        await self.listeners.start(
            self.requests.wrap(self.handle), lambda: self.follower.image.scram_credentials
        )
        self._main_loop = asyncio.get_running_loop()
        self.image_signal = Signal(self._main_loop)
        self._lifecycle_runs = [
            self.lifecycle_thread.run(self.fetcher.run()),
            self.lifecycle_thread.run(self._lifecycle()),
        ]
        for run in self._lifecycle_runs:
            run.add_done_callback(self._lifecycle_ended)
        self._tasks = [
            asyncio.create_task(self.isr.run(), name="isr-changes"),
            asyncio.create_task(self._follow_images(), name="replica-states"),
        ]
        self.data.start()
        self._tasks.append(asyncio.create_task(report_bytes_out(self.data_apis), name="bytes-out"))
        self.metrics = serve_broker_metrics(
            self.config, self.data_apis, self.isr, self.requests, lambda: self.servers
        )
        LOG.info(
            "broker %d (incarnation %s) listening on %s",
            self.node_id,
            kafka_uuid(self.incarnation_id),
            ",".join(str(e) for e in self.bound_endpoints()),
        )

    @property
    def servers(self) -> list[KafkaServer]:
        return self.listeners.servers

    def bound_endpoints(self) -> list[Endpoint]:
        """The broker's client listeners as bound (:mod:`rackwise.broker.listeners`)."""
        return self.listeners.bound_endpoints()

    async def stop(self) -> None:
        """Stop serving and every task; no unregistration (the lease runs out)."""
        if self._readying is not None:
            self._tasks.append(self._readying)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self.lifecycle_thread.stop()
        for run in self._lifecycle_runs:
            run.cancel()
        await self.listeners.close()
        if self.metrics is not None:
            self.metrics.close()
        await self.groups.close()
        await self.auto_create.close()
        await self.producer_ids.close()
        await self.data.stop()
        await self.forwarder.close()
        self.stopped.set()

    def _lifecycle_ended(self, run: asyncio.Future[None]) -> None:
        """Following the metadata log and the lifecycle run until the broker stops; one that
        ends with an error stops the broker (exit status 1) rather than leave it serving an
        image that no longer moves."""
        if run.cancelled() or run.exception() is None or self.stopped.is_set():
            return
        error = run.exception()
        LOG.error("Shutdown broker because its metadata follower failed: %r", error)
        self.exit_status = 1
        self.stopped.set()

    def _dynamic_config_changed(self, _keys: frozenset[str]) -> None:
        """A dynamic broker configuration changed: what the data path reads as it goes (the
        mover's throttle, the delete delay) follows at once."""
        self.data.config = self.data_config.with_dynamic(self.dynamic_config)

    def _dirs_failed(self) -> None:
        """A log directory went offline: a heartbeat names it at once, and the next ones too
        (the controller takes its replicas out of their ISRs and moves their leaderships:
        Kafka's ``propagateDirectoryFailure``); with none left, the broker stops (KIP-112)."""
        self._online_dir_ids = tuple(self.data.online_dir_ids)
        self._offline_dir_ids = tuple(self.data.offline_dir_ids)
        with contextlib.suppress(RuntimeError):  # the lifecycle loop already closed
            self.lifecycle_thread.call(self._heartbeat_now.set)
        if all(not self.data.logs.is_online(d) for d in self.data.logs.log_dirs):
            LOG.error(
                "Shutdown broker because all log dirs in %s have failed",
                ", ".join(str(d) for d in self.data.logs.log_dirs),
            )
            self.exit_status = 1
            self.stopped.set()

    async def _connect(self) -> KafkaConnection:
        """A connection to the active controller (:mod:`rackwise.broker.controller_channel`)."""
        return await self.controller_channel.connect()

    async def _connect_broker(self, broker_id: int) -> KafkaConnection:
        """A connection to another broker on the inter-broker listener (a follower's fetches)."""
        listener = self.config.inter_broker_listener_name or self._client_listener
        registration = self.follower.image.brokers.get(broker_id)
        if registration is not None:
            for endpoint in registration.end_points:
                if endpoint.name == listener:
                    return await KafkaConnection.connect(
                        endpoint.host,
                        endpoint.port,
                        timeout_s=CONNECT_TIMEOUT_S,
                        client_id=f"rackwise-replica-fetcher-{self.node_id}",
                        tls=self.listeners.inter_broker_tls,
                    )
        raise NetworkException(f"broker {broker_id} has no {listener} endpoint in the metadata")

    async def _follow_images(self) -> None:
        """Apply every new image to the replicas, once this broker serves."""
        await self.ready.wait()
        while True:
            applied = self.follower.image
            self.data.apply(applied)
            self.groups.follow_leadership()
            self.dynamic_config.refresh()
            await self._wait_applied(_other_than(applied), 30.0)

    # ---- registration and heartbeats -------------------------------------------------------

    def registration_request(self) -> dict[str, Any]:
        """BrokerRegistration's fields, as plain values."""
        return {
            "broker_id": self.node_id,
            "cluster_id": self.cluster_id or "",
            "incarnation_id": self.incarnation_id,
            "listeners": self.listeners.registration(),
            "features": [
                {
                    "name": "metadata.version",
                    "min_supported_version": broker_apis.MIN_METADATA_VERSION_LEVEL,
                    "max_supported_version": METADATA_VERSION_LEVEL,
                }
            ],
            "rack": self.config.rack,
            "is_migrating_zk_broker": False,
            "log_dirs": list(self._online_dir_ids),
            "previous_broker_epoch": NO_EPOCH,
        }

    async def _lifecycle(self) -> None:
        """Register, then heartbeat until stopped; reconnect and re-register as needed."""
        connection: KafkaConnection | None = None
        backoff = RETRY_BACKOFF_S
        failures = 0
        interval_s = self.config.heartbeat_interval_ms / 1000
        try:
            while True:
                try:
                    if connection is None or connection.is_closed:
                        connection = await self._connect()
                        await connection.negotiate_versions()
                    if self.broker_epoch == NO_EPOCH:
                        await self._register(connection)
                    if self.broker_epoch != NO_EPOCH:
                        await self._heartbeat(connection)
                        if failures:
                            LOG.info("heartbeats resumed after %d failed attempts", failures)
                        backoff, failures = RETRY_BACKOFF_S, 0
                        await self._until_next_heartbeat(interval_s)
                    else:  # refused: retry soon (an old lease may be about to run out)
                        await asyncio.sleep(min(backoff, interval_s))
                        backoff = min(backoff * 2, MAX_RETRY_BACKOFF_S)
                except (NetworkException, ProtocolError) as e:
                    failures += 1
                    LOG.log(
                        logging.INFO if failures == 1 else logging.DEBUG,
                        "controller unreachable, retrying every %.1f s at most: %s",
                        MAX_RETRY_BACKOFF_S,
                        e,
                    )
                    if connection is not None:
                        await connection.close()
                    connection = None
                    await asyncio.sleep(backoff)
                    backoff = min(backoff * 2, MAX_RETRY_BACKOFF_S)
        finally:
            if connection is not None:
                await connection.close()

    async def _until_next_heartbeat(self, interval_s: float) -> None:
        """The heartbeat interval, cut short when a directory fails."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._heartbeat_now.wait(), interval_s)
        self._heartbeat_now.clear()

    async def _register(self, connection: KafkaConnection) -> None:
        response = await connection.request(
            ApiKey.BROKER_REGISTRATION,
            self.registration_request(),
            timeout_s=self._control_timeout_s,
        )
        error = int(response.error_code)
        if error != NONE:
            LOG.info("registration refused: %s; retrying", control_error(error))
            return
        self.broker_epoch = int(response.broker_epoch)
        LOG.info("registered with broker epoch %d", self.broker_epoch)

    async def _heartbeat(self, connection: KafkaConnection) -> None:
        response = await connection.request(
            ApiKey.BROKER_HEARTBEAT,
            timeout_s=self._heartbeat_timeout_s,
            broker_id=self.node_id,
            broker_epoch=self.broker_epoch,
            current_metadata_offset=self.follower.applied_offset,
            want_fence=False,
            want_shut_down=False,
            offline_log_dirs=list(self._offline_dir_ids),
        )
        error = int(response.error_code)
        if error in (STALE_BROKER_EPOCH, BROKER_ID_NOT_REGISTERED):
            LOG.warning("heartbeat refused: %s; registering again", control_error(error))
            self.broker_epoch = NO_EPOCH
            return
        if error != NONE:
            LOG.info("heartbeat refused: %s", control_error(error))
            return
        fenced = bool(response.is_fenced)
        transition = fencing_transition(self.is_fenced, fenced)
        if transition is not None:
            LOG.info("broker %d %s (broker epoch %d)", self.node_id, transition, self.broker_epoch)
        self.is_fenced = fenced
        if not fenced and self._readying is None:
            self._on_main_loop(self._start_readying)
        if response.should_shut_down:
            if self._asked_to_shut_down:
                LOG.info("the controller says to shut down")
                self._on_main_loop(self.stopped.set)
            else:
                # Kafka's broker acts on should_shut_down only after asking for a controlled
                # shutdown itself; a forged or stray answer must not stop it. Said once a minute.
                now = time.monotonic()
                if now - self._shut_down_warned < SHUT_DOWN_WARNING_INTERVAL_S:
                    return
                self._shut_down_warned = now
                LOG.warning(
                    "ignoring should_shut_down in a heartbeat answer: this broker did not ask "
                    "for a controlled shutdown"
                )

    # ---- the image ------------------------------------------------------------------------

    def _image_shows_unfenced(self, image: MetadataImage) -> bool:
        registration = image.brokers.get(self.node_id)
        return (
            registration is not None
            and registration.incarnation_id == self.incarnation_id
            and not registration.fenced
        )

    def _on_main_loop(self, fn: Callable[[], object]) -> None:
        """Run ``fn`` on the request loop (from the lifecycle thread)."""
        loop = self._main_loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(fn)

    def _image_changed(self) -> None:
        if self.image_signal is not None:
            self.image_signal.fire()

    def _start_readying(self) -> None:
        if self._readying is None:
            self._readying = asyncio.create_task(self._become_ready(), name="broker-ready")

    async def _become_ready(self) -> None:
        """Serve clients once this broker's own image shows it unfenced (the controller said
        so a moment before it reaches the image), so that its first answers list itself."""
        await self._wait_applied(self._image_shows_unfenced, READY_WAIT_S)
        self.ready.set()
        LOG.info("broker %d serves clients", self.node_id)

    async def _wait_applied(self, predicate: ImagePredicate, timeout_s: float) -> bool:
        """Wait on the request loop until ``predicate`` holds of the image."""
        assert self.image_signal is not None
        return await self.image_signal.wait_until(lambda: predicate(self.follower.image), timeout_s)

    def info(self) -> broker_apis.BrokerInfo:
        return broker_apis.BrokerInfo(
            node_id=self.node_id,
            cluster_id=self.client_cluster_id,
            listener_name=request_listener(self._client_listener),
            static_config=self.config.properties,
            applied_offset=self.follower.applied_offset,
        )

    # ---- clients ----------------------------------------------------------------------------

    async def handle(self, request: Request) -> Response | NoResponse:
        """Answer one client request, once this broker serves clients (ApiVersions at once),
        from :data:`rackwise.broker.requests.ENTRIES`."""
        return await answer(self.apis, request, self.ready)


def _other_than(seen: MetadataImage) -> ImagePredicate:
    return lambda image: image is not seen


async def run_broker(config: NodeConfig, stop: asyncio.Event) -> int:
    """Run a broker until ``stop`` is set (SIGTERM) or the controller tells it to shut down;
    prints the ready line once its listeners are bound. Exit status 0."""
    broker = Broker(config)
    await broker.start()
    report_ready(BROKER_ROLE, config.node_id, broker.bound_endpoints())
    stop_wait = asyncio.create_task(stop.wait())
    stopped_wait = asyncio.create_task(broker.stopped.wait())
    try:
        await asyncio.wait({stop_wait, stopped_wait}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (stop_wait, stopped_wait):
            task.cancel()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(broker.stop(), 5.0)
    LOG.info("broker %d stopped", config.node_id)
    return broker.exit_status


def main(config_path: str, overrides: Mapping[str, str] | None = None) -> int:
    """``rackwise broker start --config FILE``: load and check the configuration, then run
    the broker with logging on stderr; its exit status."""
    config = load_node_config(config_path, overrides)
    if not config.is_broker:
        raise ConfigException(
            f"{config_path} configures a {config.role} (process.roles); "
            "start it with rackwise controller start"
        )
    configure_logging(BROKER_ROLE, config.node_id)
    return run_until_stopped(lambda stop: run_broker(config, stop))
