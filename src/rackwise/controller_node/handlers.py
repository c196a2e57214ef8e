"""The requests the controller node answers itself rather than through the dispatch table
(:mod:`rackwise.controller_node.requests`): the brokers' lifecycle (BrokerRegistration,
BrokerHeartbeat, AllocateProducerIds), which the node logs and its fencing follows;
DescribeQuorum, from the Raft leader's view of its voters and observers (the brokers, which
follow the metadata log with the voters' own Fetch and FetchSnapshot); NOT_CONTROLLER from a
voter that is not the active controller; and ApiVersions, answered on the listener's thread.

Constraints
    * A write is answered only once its records are durable: the lifecycle handlers hand their
      command to the node's group commit (``submit``) and return its response.
    * A registration naming another cluster's id is refused with INCONSISTENT_CLUSTER_ID.
    * Logged, one line each: registrations, brokers unfenced (caught up) and fenced at their
      own request, producer id blocks handed out, refused registrations, heartbeats and
      producer id requests with Kafka's error name and code. Incarnation ids are in Kafka's
      base64 form, as the brokers log them; values from requests are escaped
      (:func:`~rackwise.common.logsafe.loggable`).

Worked example
    A broker connects, sends ApiVersions, BrokerRegistration (epoch 2: the offset of its
    RegisterBrokerRecord on a fresh log, after the leader's mark at 0 and ``metadata.version``
    at 1), Fetch from 0 as an observer (records 0-2, high watermark 3), then
    BrokerHeartbeat with offset 2: it is unfenced (a record at offset 3) and the reply says
    ``is_fenced=False``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, Protocol, TypeVar

from rackwise.common.error_codes import (
    INCONSISTENT_CLUSTER_ID,
    NOT_LEADER_OR_FOLLOWER,
)
from rackwise.common.logsafe import loggable
from rackwise.controller import METADATA_VERSION_LEVEL, ApiError, Controller
from rackwise.controller_node.apis import brokers
from rackwise.controller_node.requests import ENTRIES, Entry, describe_quorum_response
from rackwise.metalog.replicated import ReplicatedMetadataLog
from rackwise.net import CloseConnection, current_connection
from rackwise.node.config import NodeConfig
from rackwise.node.describe_cluster import CONTROLLER_ENDPOINT_TYPE
from rackwise.node.describe_cluster import describe_cluster as node_describe_cluster
from rackwise.protocol import (
    FinalizedFeature,
    Listener,
    Request,
    Response,
    SupportedFeature,
    api_versions_response,
)
from rackwise.raft.leader import ReplicaProgress
from rackwise.records import kafka_uuid
from rackwise.records.constants import METADATA_VERSION_FEATURE

LOG: Final = logging.getLogger("rackwise.controller")
MIN_METADATA_VERSION_LEVEL: Final = 7
"""The lowest ``metadata.version`` this software supports (3.3-IV3, Kafka's KRaft minimum)."""

# Kafka's error codes these answers use.
NO_TIMESTAMP: Final = -1
NO_OFFSET: Final = -1
"""A voter's log end offset before it fetched in the leader's epoch (Kafka's -1)."""

T = TypeVar("T")
"""What a command returns: a response, or what a timer's command reports."""


class Submit(Protocol):
    """The node's group commit: queue ``run`` (``fail`` for its typed error); its response once
    durable."""

    def __call__(self, run: Callable[[], T], fail: Callable[[ApiError], T], /) -> Awaitable[T]:
        """What ``run`` (or ``fail``) returned, once the group is committed."""
        ...


Features = tuple[tuple[tuple[str, int], ...], int]
"""The finalized features of the last commit and their epoch."""


def cluster_id_mismatch(expected: str | None, cluster_id: str | None) -> str | None:
    """Why a request naming ``cluster_id`` is not for this cluster, or None."""
    if expected is None or cluster_id is None or cluster_id == expected:
        return None
    return f"cluster id {cluster_id} is not this cluster's ({expected})"


# ---- the brokers' lifecycle ------------------------------------------------------------------


async def register(
    controller: Controller, request: Request, submit: Submit, *, cluster_id: str | None
) -> Response:
    """BrokerRegistration, answered once its record is durable."""
    body = request.body
    registration = brokers.registration_args(body)
    session = current_connection()
    incarnation = kafka_uuid(registration.incarnation_id)

    def fail(error: ApiError) -> Response:
        LOG.warning(
            "refused the registration of broker %d (incarnation %s): %s",
            registration.broker_id,
            incarnation,
            loggable(brokers.describe_error(error)),
        )
        return brokers.registration_response(body, None, error)

    mismatch = cluster_id_mismatch(cluster_id, getattr(body, "cluster_id", None))
    if mismatch is not None:
        return fail(ApiError(INCONSISTENT_CLUSTER_ID, mismatch))

    def run() -> Response:
        reply = controller.register_broker(registration, session=session)
        LOG.info(
            "registered broker %d (rack %s, incarnation %s) with epoch %d",
            registration.broker_id,
            loggable(registration.rack),
            incarnation,
            reply.broker_epoch,
        )
        return brokers.registration_response(body, reply)

    return await submit(run, fail)


async def heartbeat(controller: Controller, request: Request, submit: Submit) -> Response:
    """BrokerHeartbeat, answered once its records (if any) are durable."""
    body = request.body
    beat = brokers.heartbeat_args(body)
    session = current_connection()

    def run() -> Response:
        before = controller.image.brokers.get(beat.broker_id)
        reply = controller.broker_heartbeat(beat, session=session)
        if before is not None and before.fenced and not reply.is_fenced:
            LOG.info(
                "unfenced broker %d (epoch %d): caught up, it applied offset %d",
                beat.broker_id,
                beat.broker_epoch,
                beat.current_metadata_offset,
            )
        elif before is not None and not before.fenced and reply.is_fenced:
            LOG.info(
                "fenced broker %d (epoch %d): %s",
                beat.broker_id,
                beat.broker_epoch,
                "it is shutting down" if beat.want_shut_down else "it asked to be fenced",
            )
        return brokers.heartbeat_response(body, reply)

    def fail(error: ApiError) -> Response:
        LOG.warning(
            "refused a heartbeat of broker %d (epoch %d): %s",
            beat.broker_id,
            beat.broker_epoch,
            loggable(brokers.describe_error(error)),
        )
        return brokers.heartbeat_response(body, None, error)

    return await submit(run, fail)


async def allocate_producer_ids(
    controller: Controller, request: Request, submit: Submit
) -> Response:
    """A block of producer ids for a broker, answered once its record is durable."""
    body = request.body
    broker_id, broker_epoch = brokers.allocate_producer_ids_args(body)

    def run() -> Response:
        block = controller.allocate_producer_ids(broker_id, broker_epoch)
        LOG.info(
            "producer ids %d-%d to broker %d (epoch %d)",
            block.first_producer_id,
            block.last_producer_id,
            broker_id,
            broker_epoch,
        )
        return brokers.allocate_producer_ids_response(body, block)

    def fail(error: ApiError) -> Response:
        LOG.warning(
            "refused producer ids to broker %d (epoch %d): %s",
            broker_id,
            broker_epoch,
            brokers.describe_error(error),
        )
        return brokers.allocate_producer_ids_error(body, error)

    return await submit(run, fail)


# ---- the quorum and the features -------------------------------------------------------------


def describe_cluster(body: Any, config: NodeConfig, log: ReplicatedMetadataLog) -> Response:
    """DescribeCluster on the controller listener (KIP-919), from any controller: the
    controllers of ``controller.quorum.voters`` (this one alone if it names none) on this
    listener, and the quorum's leader as the controller."""
    endpoint = config.controller_endpoint
    voters = [(v.node_id, v.host, v.port) for v in config.voters] or [
        (config.node_id, endpoint.host, endpoint.port)
    ]
    return node_describe_cluster(
        body,
        serving=CONTROLLER_ENDPOINT_TYPE,
        cluster_id=config.cluster_id,
        controller_id=log.raft.known_leader_id,
        nodes=[
            {"broker_id": node_id, "host": host, "port": port, "rack": None, "is_fenced": False}
            for node_id, host, port in voters
        ],
    )


def describe_quorum(
    version: int, config: NodeConfig, log: ReplicatedMetadataLog, now_monotonic_ms: int
) -> Response:
    """DescribeQuorum from the Raft leader's view of the voters (one voter or several) and of
    the observers, the brokers fetching the log (forgotten after five minutes without a
    fetch, as Kafka's leader forgets them); a voter that does not lead answers
    NOT_LEADER_OR_FOLLOWER with the leader it knows. Times are wall-clock ms (-1: not since
    this epoch began); the leader's own are now."""
    raft = log.raft
    leader = raft.leader
    voters: list[dict[str, Any]] = []
    observers: list[dict[str, Any]] = []
    if leader is not None:
        wall = time.time_ns() // 1_000_000

        def state(replica_id: int, p: ReplicaProgress) -> dict[str, Any]:
            local = replica_id == leader.local_id
            return {
                "replica_id": replica_id,
                "replica_directory_id": None,
                "log_end_offset": NO_OFFSET if p.end_offset is None else p.end_offset,
                "last_fetch_timestamp": wall
                if local
                else _wall(p.last_fetch_time_ms, now_monotonic_ms, wall),
                "last_caught_up_timestamp": wall
                if local
                else _wall(p.last_caught_up_time_ms, now_monotonic_ms, wall),
            }

        voters = [state(voter, leader.replicas[voter]) for voter in leader.voters]
        observers = [state(r, p) for r, p in leader.observers(now_monotonic_ms).items()]
    return describe_quorum_response(
        version,
        config,
        leader_id=raft.known_leader_id,
        leader_epoch=raft.epoch,
        high_watermark=log.high_watermark,
        voters=voters,
        observers=observers,
        error_code=0 if leader is not None else NOT_LEADER_OR_FOLLOWER,
    )


def _wall(monotonic: int | None, now_monotonic: int, now_wall: int) -> int:
    """A time of the monotonic clock as ms since the epoch (-1 for never)."""
    if monotonic is None:
        return NO_TIMESTAMP
    return now_wall - (now_monotonic - monotonic)


def refuse(request: Request, error: ApiError, entries: Mapping[int, Entry] = ENTRIES) -> Response:
    """NOT_CONTROLLER (``error``), in the shape of the request's own answer."""
    key = request.header.api_key
    entry = entries.get(key)
    if entry is not None:
        return entry.error(request, error)
    raise CloseConnection(f"{error.message} (no error answer for api key {key})")


def api_versions(version: int, features: Features | None) -> Response:
    """ApiVersions from the features as of the last commit (None: no controller, a quorum
    voter that does not lead)."""
    if features is None:
        return api_versions_response(version, Listener.CONTROLLER)
    finalized, epoch = features
    return api_versions_response(
        version,
        Listener.CONTROLLER,
        supported_features=[
            SupportedFeature(
                METADATA_VERSION_FEATURE, MIN_METADATA_VERSION_LEVEL, METADATA_VERSION_LEVEL
            )
        ],
        finalized_features=[FinalizedFeature(n, level) for n, level in finalized],
        finalized_features_epoch=epoch,
    )
