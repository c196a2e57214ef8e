"""The controller quorum on the event loop: the replicated log's state machine driven by time,
by the quorum requests other controllers send, and by their answers to ours.

Goals
    Controllers of ``controller.quorum.voters`` elect a leader and replicate the metadata log
    over Kafka's own APIs (:mod:`rackwise.node.quorum_wire`), each answer reaching
    the state machine as soon as it arrives.

Constraints
    The state machine is called on the event loop only, one input at a time, and never
    waits: messages it sends to a peer go out on a task of their own over one connection per
    peer (opened when first needed, dropped on any error; the state machine's own timers
    retry). A request from a peer (another voter, or a broker following the log as an
    observer) is answered when the state machine sends the answer (a Fetch with nothing new
    may be held up to 500 ms); one that is never answered (the voter stopped leading
    meanwhile) gets an error answer after the request timeout. A request naming another
    cluster's id is refused with INCONSISTENT_CLUSTER_ID, as Kafka's raft client does.

Algorithm
    ``_timer_loop``: sleep until the state machine's next deadline (or until an input may have
    moved it), then ``tick``. ``_send``: an answer resolves the peer's waiting request (the
    newest, per peer and kind: an older one still waiting is answered with an error); a
    request is sent on a task, and its answer handed to the state machine.

Worked example
    Controller 2 follows 1. Its state machine sends ``FetchRequest(2, 4, 120, 4)``: a task
    sends Fetch v13 to controller 1, whose listener hands it to its driver; controller 1's
    state machine holds it, then, when a CreateTopics appends at 120, sends the answer with
    that batch; controller 1's driver answers the waiting Fetch, and controller 2's task hands
    the answer to its state machine, which appends and fsyncs the batch.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import Iterable, Mapping
from typing import Final

from rackwise.common.error_codes import INCONSISTENT_CLUSTER_ID, NOT_LEADER_OR_FOLLOWER
from rackwise.metalog.replicated import ReplicatedMetadataLog
from rackwise.net import KafkaConnection
from rackwise.node.quorum_wire import (
    RaftRequest,
    error_response,
    parse_request,
    parse_response,
    request_for,
    response_for,
)
from rackwise.protocol import Request, Response
from rackwise.raft.config import VoterEndpoint
from rackwise.raft.messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    Message,
    VoteRequest,
    VoteResponse,
)

LOG: Final = logging.getLogger("rackwise.quorum")
CONNECT_TIMEOUT_S: Final = 1.0
MAX_TIMER_SLEEP_S: Final = 0.5
ANSWER_TYPES: Final[Mapping[type, type]] = {
    VoteRequest: VoteResponse,
    BeginQuorumEpochRequest: BeginQuorumEpochResponse,
    EndQuorumEpochRequest: EndQuorumEpochResponse,
    FetchRequest: FetchResponse,
    FetchSnapshotRequest: FetchSnapshotResponse,
}


class QuorumDriver:
    """Drives ``log``'s state machine; ``voters`` maps each voter id to its address."""

    def __init__(
        self,
        log: ReplicatedMetadataLog,
        voters: Mapping[int, tuple[str, int]],
        *,
        cluster_id: str | None,
        request_timeout_ms: int,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.log = log
        self.tls = tls
        """The TLS of the controller listener (None: plaintext)."""
        self.voters = dict(voters)
        self.cluster_id = cluster_id
        self.request_timeout_s = request_timeout_ms / 1000
        self._waiting: dict[tuple[int, type], tuple[RaftRequest, asyncio.Future[Message]]] = {}
        self._connections: dict[int, KafkaConnection] = {}
        self._connecting: dict[int, asyncio.Lock] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._wake = asyncio.Event()
        self._timer: asyncio.Task[None] | None = None
        log.send = self._send

    async def start(self) -> None:
        self.log.start()
        self._timer = asyncio.get_running_loop().create_task(self._timer_loop())

    async def close(self, *, resign: bool = True) -> None:
        """Stop; a leader first resigns (EndQuorumEpoch), giving its answers a moment."""
        if resign and self.log.is_leader:
            self.log.resign()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._drain(), 0.5)
        if self._timer is not None:
            self._timer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._timer
        for task in list(self._tasks):
            task.cancel()
        for connection in list(self._connections.values()):
            await connection.close()
        self._connections.clear()

    async def _drain(self) -> None:
        while self._tasks:
            await asyncio.wait(list(self._tasks))

    # ---- time ----------------------------------------------------------------------------

    async def _timer_loop(self) -> None:
        while True:
            deadline = self.log.next_deadline_ms()
            now = self.log.clock()
            if deadline is not None and deadline <= now:
                self.log.tick()
                continue
            wait_s = MAX_TIMER_SLEEP_S
            if deadline is not None:
                wait_s = min(wait_s, (deadline - now) / 1000)
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait_s):
                    await self._wake.wait()

    # ---- outbound ------------------------------------------------------------------------

    def _send(self, destination: int, message: Message) -> None:
        """Called by the log while it carries out outputs (on the event loop)."""
        self._wake.set()
        answer_to = (destination, type(message))
        if answer_to in self._waiting:
            _, future = self._waiting.pop(answer_to)
            if not future.done():
                future.set_result(message)
            return
        if type(message) not in ANSWER_TYPES:
            return  # an answer whose request gave up waiting
        task = asyncio.get_running_loop().create_task(
            self._request(destination, message)  # type: ignore[arg-type]
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _request(self, destination: int, message: RaftRequest) -> None:
        connection = await self._connection(destination)
        if connection is None:
            return
        api_key, version, fields = request_for(message, self.cluster_id)
        try:
            body = await connection.request(
                api_key, fields, version=version, timeout_s=self.request_timeout_s
            )
        except Exception as e:
            LOG.debug("quorum request to %d failed: %s", destination, e)
            self._drop(destination, connection)
            return
        self.log.handle_message(destination, parse_response(message, body))
        self._wake.set()

    async def _connection(self, node_id: int) -> KafkaConnection | None:
        existing = self._connections.get(node_id)
        if existing is not None and not existing.is_closed:
            return existing
        lock = self._connecting.setdefault(node_id, asyncio.Lock())
        async with lock:
            existing = self._connections.get(node_id)
            if existing is not None and not existing.is_closed:
                return existing
            host, port = self.voters[node_id]
            try:
                connection = await KafkaConnection.connect(
                    host,
                    port,
                    timeout_s=CONNECT_TIMEOUT_S,
                    client_id=f"raft-client-{self.log.raft.node_id}",
                    request_timeout_s=self.request_timeout_s,
                    tls=self.tls,
                )
            except Exception as e:
                LOG.debug("no connection to voter %d at %s:%d: %s", node_id, host, port, e)
                return None
            self._connections[node_id] = connection
            return connection

    def _drop(self, node_id: int, connection: KafkaConnection) -> None:
        if self._connections.get(node_id) is connection:
            del self._connections[node_id]
        task = asyncio.get_running_loop().create_task(connection.close())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ---- inbound -------------------------------------------------------------------------

    async def handle(self, request: Request) -> Response:
        """The answer to a quorum request from another controller."""
        header = request.header
        cluster_id = getattr(request.body, "cluster_id", None)
        if self.cluster_id is not None and cluster_id is not None and cluster_id != self.cluster_id:
            return error_response(header.api_key, header.api_version, INCONSISTENT_CLUSTER_ID)
        source, message = parse_request(header.api_key, request.body)
        key = (source, ANSWER_TYPES[type(message)])
        superseded = self._waiting.pop(key, None)
        if superseded is not None and not superseded[1].done():
            superseded[1].set_result(self._give_up(*superseded))
        future: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        self._waiting[key] = (message, future)
        self.log.handle_message(source, message)
        self._wake.set()
        # asyncio.wait, not wait_for: Python 3.11's wait_for loses a cancellation that comes
        # as the answer does, and the server's close would then wait on this connection.
        await asyncio.wait({future}, timeout=self.request_timeout_s)
        if future.done():
            answer = future.result()
        else:
            if self._waiting.get(key, (None, None))[1] is future:
                del self._waiting[key]
            answer = self._give_up(message, future)
        return response_for(header.api_key, header.api_version, answer)

    def _give_up(self, request: RaftRequest, future: asyncio.Future[Message]) -> Message:
        """An error answer to a request the state machine did not answer."""
        raft = self.log.raft
        leader, epoch, error = raft.known_leader_id, raft.epoch, NOT_LEADER_OR_FOLLOWER
        if isinstance(request, FetchRequest):
            return FetchResponse(
                error,
                leader,
                epoch,
                raft.high_watermark,
                request.fetch_offset,
                request.last_fetched_epoch,
            )
        if isinstance(request, FetchSnapshotRequest):
            return FetchSnapshotResponse(error, leader, epoch, request.snapshot_id, 0, 0)
        if isinstance(request, VoteRequest):
            return VoteResponse(
                error, leader, epoch, False, request.is_pre_vote, request.candidate_epoch
            )
        if isinstance(request, BeginQuorumEpochRequest):
            return BeginQuorumEpochResponse(error, leader, epoch)
        return EndQuorumEpochResponse(error, leader, epoch)


def voter_addresses(voters: Iterable[VoterEndpoint]) -> dict[int, tuple[str, int]]:
    """``controller.quorum.voters`` (the node config's voters) as id -> (host, port)."""
    return {v.node_id: (v.host, v.port) for v in voters}
