"""A controller process in a quorum of 3 or 5 (``controller.quorum.voters``): the active
controller is the Raft leader (Kafka's KRaft, KIP-631 on KIP-595).

Goals
    Every controller keeps a replica of the metadata log; the leader runs the
    :class:`~rackwise.controller.Controller` and answers writes once a majority holds their
    records; the others answer controller requests with NOT_CONTROLLER (41). Brokers' metadata
    fetches are served by any controller, up to what it knows is committed.

Constraints
    * A new leader first waits until its own epoch's first record is committed (then every
      record before it is too), then builds its controller from the whole log (snapshot and
      records, through the one replay), and only then answers; its brokers' leases start
      afresh (heartbeat times are soft state, not in the log).
    * A leader that loses its epoch drops its controller at once (its image may hold records
      the next leader cuts) and answers every write waiting for a majority with NOT_CONTROLLER;
      the broker retries, and a retried write is refused if it was applied after all
      (TOPIC_ALREADY_EXISTS for a CreateTopics), as Kafka's controller does.
    * The quorum's own requests (Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch,
      FetchSnapshot) go to
      :class:`~rackwise.controller_node.quorum_driver.QuorumDriver`; DescribeQuorum is answered
      from the leader's view of the voters.
    * Quorum settings are Kafka's keys (``controller.quorum.election.timeout.ms``,
      ``controller.quorum.election.backoff.max.ms``, ``controller.quorum.fetch.timeout.ms``,
      ``controller.quorum.request.timeout.ms``, ``controller.quorum.retry.backoff.ms``).

Algorithm
    ``_on_leader_change``: on a new epoch, deactivate (drop the controller, stop its timers,
    fail waiting writes). ``_on_commit(hw)``: wake the brokers' fetches; answer the writes
    whose group ends at or below ``hw``; if leading and ``hw`` passed the epoch's start
    offset and no controller is active, activate.

Worked example
    Voters 1, 2, 3; 1 leads epoch 4 from offset 200. A CreateTopics reaches 1: its records are
    appended at 200-203 and fsynced; the answer waits. Voters 2 and 3 fetch at 200, flush,
    fetch at 204; the high watermark becomes 204 and the CreateTopics is answered. Controller
    1 is killed: 2 and 3 time out, 2 wins epoch 5, appends its mark at 204; once 205 is
    committed it builds its controller from offsets 0-204 and answers.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Final

from rackwise.controller import ApiError, Controller
from rackwise.controller_node.commit_loop import Command, answer
from rackwise.controller_node.node import ControllerNode
from rackwise.controller_node.quorum_driver import QuorumDriver, voter_addresses
from rackwise.controller_node.requests import ENTRIES, describe_quorum_response
from rackwise.metalog.replicated import NotControllerException, ReplicatedMetadataLog
from rackwise.net import CloseConnection
from rackwise.node.config import NodeConfig
from rackwise.protocol import ApiKey, Request
from rackwise.raft import QuorumConfig
from rackwise.raft.config import (
    QUORUM_ELECTION_BACKOFF_MAX_MS_CONFIG,
    QUORUM_ELECTION_TIMEOUT_MS_CONFIG,
    QUORUM_FETCH_TIMEOUT_MS_CONFIG,
    QUORUM_REQUEST_TIMEOUT_MS_CONFIG,
    QUORUM_RETRY_BACKOFF_MS_CONFIG,
)

LOG: Final = logging.getLogger("rackwise.controller")
NOT_CONTROLLER: Final = 41
NOT_LEADER_OR_FOLLOWER: Final = 6
QUORUM_APIS: Final = frozenset(
    {
        ApiKey.VOTE,
        ApiKey.BEGIN_QUORUM_EPOCH,
        ApiKey.END_QUORUM_EPOCH,
        ApiKey.FETCH,
        ApiKey.FETCH_SNAPSHOT,
    }
)
NO_TIMESTAMP: Final = -1
NO_OFFSET: Final = -1
"""A voter's log end offset before it fetched in the leader's epoch (Kafka's -1)."""


def quorum_config(properties: Any) -> QuorumConfig:
    """The ``controller.quorum.*`` timings of a node's properties (Kafka's defaults)."""
    keys = {
        "election_timeout_ms": QUORUM_ELECTION_TIMEOUT_MS_CONFIG,
        "election_backoff_max_ms": QUORUM_ELECTION_BACKOFF_MAX_MS_CONFIG,
        "fetch_timeout_ms": QUORUM_FETCH_TIMEOUT_MS_CONFIG,
        "request_timeout_ms": QUORUM_REQUEST_TIMEOUT_MS_CONFIG,
        "retry_backoff_ms": QUORUM_RETRY_BACKOFF_MS_CONFIG,
    }
    values = {field: int(properties[key]) for field, key in keys.items() if key in properties}
    return QuorumConfig(**values)


class QuorumControllerNode(ControllerNode):
    """A controller process that is one voter of ``config.voters``."""

    def __init__(self, config: NodeConfig, **kwargs: Any) -> None:
        super().__init__(config, **kwargs)
        self.quorum_config = quorum_config(config.properties)
        self.driver: QuorumDriver | None = None
        self._awaiting: list[tuple[int, list[tuple[Command, Any]]]] = []
        self._active_tasks: list[asyncio.Task[None]] = []

    @property
    def replicated_log(self) -> ReplicatedMetadataLog:
        log = self.log
        assert isinstance(log, ReplicatedMetadataLog)
        return log

    # ---- lifecycle -----------------------------------------------------------------------

    def open(self) -> None:
        directory = self.config.metadata_log_dir
        assert directory is not None
        log = ReplicatedMetadataLog(
            directory,
            self.config.node_id,
            sorted(self.config.voter_ids),
            self.quorum_config,
            random=self.rng,
            clock=self.clock,
            send=lambda destination, message: None,
            segment_bytes=self.config.metadata_log_segment_bytes,
            max_record_bytes_between_snapshots=self.config.max_record_bytes_between_snapshots,
        )
        log.on_commit = self._on_commit
        log.on_leader_change = self._on_leader_change
        self.log = log  # type: ignore[assignment]
        LOG.info(
            "opened the metadata log in %s: offsets %d to %d, epoch %d; voters %s",
            directory,
            log.start_offset,
            log.end_offset,
            log.epoch,
            ",".join(str(v) for v in sorted(self.config.voter_ids)),
        )

    async def start(self) -> None:
        if self.log is None:
            self.open()
        log = self.replicated_log
        self.driver = QuorumDriver(
            log,
            voter_addresses(self.config.voters),
            cluster_id=self.config.cluster_id,
            request_timeout_ms=self.quorum_config.request_timeout_ms,
        )
        await self._start_server()
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._commit_loop())]
        await self.driver.start()

    async def close(self) -> None:
        if self.driver is not None:
            await self.driver.close(resign=True)
        self._deactivate("shutting down")
        await super().close()

    # ---- leadership ----------------------------------------------------------------------

    def _on_leader_change(self, leader_id: int, epoch: int) -> None:
        LOG.info("quorum epoch %d: leader %s", epoch, leader_id if leader_id >= 0 else "none")
        if self.controller is not None:
            self._deactivate(f"epoch {epoch} began (leader {leader_id})")

    def _on_commit(self, high_watermark: int) -> None:
        self._wake_fetchers()
        ready = [group for group in self._awaiting if group[0] <= high_watermark]
        self._awaiting = [group for group in self._awaiting if group[0] > high_watermark]
        for _, outcomes in ready:
            answer(outcomes)
        log = self.replicated_log
        start = log.epoch_start_offset
        if self.controller is None and start is not None and high_watermark > start:
            self._activate()

    def _activate(self) -> None:
        log = self.replicated_log
        started = time.monotonic()
        self.controller = Controller(
            log,
            self.clock,
            self.config.controller_config(),
            random=self.rng,
            is_snapshot_deferred=True,
        )
        self._publish_features()
        LOG.info(
            "active controller of epoch %d: replayed offsets %d to %d in %.3f s",
            log.epoch,
            log.start_offset,
            log.end_offset,
            time.monotonic() - started,
        )
        loop = asyncio.get_running_loop()
        self._active_tasks = [
            loop.create_task(self._fence_loop()),
            loop.create_task(self._balance_loop()),
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

    # ---- writes --------------------------------------------------------------------------

    def _not_controller(self) -> ApiError:
        log = self.replicated_log
        return ApiError.of(
            NotControllerException(
                f"controller {self.config.node_id} is not the active controller; the leader "
                f"of epoch {log.epoch} is {log.leader_id}",
                log.leader_id,
                log.epoch,
            )
        )

    def _commit_group(self, commands: list[Command]) -> None:
        if self.controller is None:
            error = self._not_controller()
            for command in commands:
                if not command.future.done():
                    command.future.set_result(command.fail(error))
            return
        super()._commit_group(commands)

    def _answer_group(self, outcomes: list[tuple[Command, Any]]) -> None:
        log = self.replicated_log
        end = log.end_offset
        if log.high_watermark >= end:
            super()._answer_group(outcomes)
        else:
            self._awaiting.append((end, outcomes))

    def committed_end_offset(self) -> int:
        return self.replicated_log.high_watermark

    def _maybe_start_snapshot(self) -> None:
        if self.controller is None:
            return
        if not self._snapshots.busy:
            self.replicated_log.snapshot_epoch = self.replicated_log.epoch
        super()._maybe_start_snapshot()

    # ---- requests ------------------------------------------------------------------------

    async def handle(self, request: Request) -> Any:
        key = request.header.api_key
        if key in QUORUM_APIS:
            assert self.driver is not None
            return await self.driver.handle(request)
        if key == ApiKey.DESCRIBE_QUORUM:
            return self._describe_quorum(request.header.api_version)
        if key == ApiKey.FETCH_METADATA_LOG:
            return await self._fetch_log(request.body)
        if key == ApiKey.FETCH_METADATA_SNAPSHOT:
            return self._fetch_snapshot(request.body)
        if self.controller is None:
            return await self._refuse(request)
        return await super().handle(request)

    async def _refuse(self, request: Request) -> Any:
        """NOT_CONTROLLER, in the shape of the request's own answer."""
        key, error = request.header.api_key, self._not_controller()
        entry = ENTRIES.get(key)
        if entry is not None:
            return entry.error(request.body, error)
        raise CloseConnection(f"{error.message} (no error answer for api key {key})")

    def _describe_quorum(self, version: int) -> Any:
        log = self.replicated_log
        raft = log.raft
        leader = raft.leader
        voters: list[dict[str, Any]] = []
        if leader is not None:
            now, wall = self.clock(), time.time_ns() // 1_000_000
            voters = [
                {
                    "replica_id": voter,
                    "replica_directory_id": None,
                    "log_end_offset": NO_OFFSET if p.end_offset is None else p.end_offset,
                    "last_fetch_timestamp": wall
                    if voter == leader.local_id
                    else _wall(p.last_fetch_time_ms, now, wall),
                    "last_caught_up_timestamp": wall
                    if voter == leader.local_id
                    else _wall(p.last_caught_up_time_ms, now, wall),
                }
                for voter in leader.voters
                for p in (leader.replicas[voter],)
            ]
        return describe_quorum_response(
            version,
            self.config,
            leader_id=raft.known_leader_id,
            leader_epoch=raft.epoch,
            high_watermark=log.high_watermark,
            voters=voters,
            error_code=0 if leader is not None else NOT_LEADER_OR_FOLLOWER,
        )


def _wall(monotonic: int | None, now_monotonic: int, now_wall: int) -> int:
    """A time of the monotonic clock as ms since the epoch (-1 for never)."""
    if monotonic is None:
        return NO_TIMESTAMP
    return now_wall - (now_monotonic - monotonic)


__all__ = ["QuorumControllerNode", "quorum_config"]
