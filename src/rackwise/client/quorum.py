"""What ``kafka-metadata-quorum.sh describe`` asks a cluster and makes of its answer (Kafka's
``MetadataQuorumCommand``): DescribeQuorum (api 55), which a broker forwards to the active
controller, and DescribeCluster for the cluster id, read as the admin client's ``QuorumInfo``
and printed as the tool prints it (``--status``: a summary; ``--replication``: a table, leader
first, then the followers and the observers). A request that fails raises
:class:`QuorumError`, one line.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from rackwise.common.errors import RackwiseError
from rackwise.net import KafkaConnection, NetworkException
from rackwise.protocol import ApiKey
from rackwise.records import kafka_uuid

METADATA_TOPIC: Final = "__cluster_metadata"
DESCRIBE_QUORUM_VERSION: Final = 2
CONNECT_TIMEOUT_S: Final = 10.0
NO_TIMESTAMP: Final = -1
UNKNOWN_LAG_MS: Final = -1
"""MaxFollowerLagTimeMs when a caught-up time is missing (as Kafka prints it)."""
ZERO_DIRECTORY_ID: Final = uuid.UUID(int=0)


class QuorumError(RackwiseError):
    """No broker answered, or DescribeQuorum answered with an error."""


@dataclass(frozen=True, slots=True)
class ReplicaState:
    """One voter or observer as the leader reports it; times in ms since the epoch, -1 for
    never."""

    replica_id: int
    directory_id: uuid.UUID
    log_end_offset: int
    last_fetch_timestamp: int
    last_caught_up_timestamp: int


@dataclass(frozen=True, slots=True)
class QuorumInfo:
    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: tuple[ReplicaState, ...]
    observers: tuple[ReplicaState, ...]
    endpoints: dict[int, tuple[str, ...]]
    """Each node's listeners as ``NAME://host:port``."""


async def describe_quorum(
    servers: str,
    *,
    cluster_id: bool = True,
    controller: bool = False,
    timeout_s: float = CONNECT_TIMEOUT_S,
) -> tuple[str | None, QuorumInfo]:
    """The cluster id and the quorum, from the first of ``servers`` (``HOST:PORT,...``,
    checked by the caller) that answers: DescribeCluster (for the controllers' endpoints
    when ``controller``: ``--bootstrap-controller``, KIP-919), then DescribeQuorum. A server
    that does not serve DescribeCluster gives no id; with ``cluster_id`` it is refused by
    name."""
    failure: Exception | None = None
    for entry in (e.strip() for e in servers.split(",") if e.strip()):
        host, _, port = entry.rpartition(":")
        try:
            connection = await KafkaConnection.connect(
                host.strip("[]"),
                int(port),
                timeout_s=timeout_s,
                client_id="rackwise-metadata-quorum",
            )
        except NetworkException as e:
            failure = e
            continue
        try:
            await connection.negotiate_versions()
            served = ApiKey.DESCRIBE_CLUSTER in connection.api_versions
            if cluster_id and not served:
                raise QuorumError(
                    f"{entry} does not serve DescribeCluster, which --status needs for the "
                    "cluster id: ask a broker with --bootstrap-server"
                )
            cluster = None
            if served:
                cluster = await connection.request(
                    ApiKey.DESCRIBE_CLUSTER,
                    include_cluster_authorized_operations=False,
                    include_fenced_brokers=False,
                    endpoint_type=2 if controller else 1,
                )
            quorum = await connection.request(
                ApiKey.DESCRIBE_QUORUM,
                version=DESCRIBE_QUORUM_VERSION,
                topics=[{"topic_name": METADATA_TOPIC, "partitions": [{"partition_index": 0}]}],
            )
        finally:
            await connection.close()
        return None if cluster is None else str(cluster.cluster_id), quorum_info(quorum)
    raise QuorumError(f"no broker of {servers} could be reached: {failure}")


def quorum_info(response: Any) -> QuorumInfo:
    """The DescribeQuorum answer as Kafka's admin client's ``QuorumInfo``."""
    if int(response.error_code) != 0:
        raise QuorumError(f"DescribeQuorum failed: error {int(response.error_code)}")
    part = response.topics[0].partitions[0]
    if int(part.error_code) != 0:
        raise QuorumError(f"DescribeQuorum failed: error {int(part.error_code)}")
    endpoints = {
        int(node.node_id): tuple(
            f"{lst.name}://{_host(str(lst.host))}:{int(lst.port)}" for lst in node.listeners
        )
        for node in getattr(response, "nodes", None) or ()
    }
    return QuorumInfo(
        int(part.leader_id),
        int(part.leader_epoch),
        int(part.high_watermark),
        tuple(_replica(r) for r in part.current_voters),
        tuple(_replica(r) for r in part.observers),
        endpoints,
    )


def _host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _replica(state: Any) -> ReplicaState:
    directory = getattr(state, "replica_directory_id", None) or ZERO_DIRECTORY_ID
    return ReplicaState(
        int(state.replica_id),
        directory,
        int(state.log_end_offset),
        int(state.last_fetch_timestamp),
        int(state.last_caught_up_timestamp),
    )


def _node(info: QuorumInfo, replica: ReplicaState) -> str:
    directory = (
        "null"
        if replica.directory_id == ZERO_DIRECTORY_ID
        else f'"{kafka_uuid(replica.directory_id)}"'
    )
    text = f'{{"id": {replica.replica_id}, "directoryId": {directory}'
    endpoints = info.endpoints.get(replica.replica_id, ())
    if endpoints:
        text += ', "endpoints": [' + ", ".join(f'"{e}"' for e in endpoints) + "]"
    return text + "}"


def status_text(cluster_id: str, info: QuorumInfo) -> str:
    """What ``kafka-metadata-quorum.sh describe --status`` prints."""
    leader = next(v for v in info.voters if v.replica_id == info.leader_id)
    laggard = min(info.voters, key=lambda v: v.log_end_offset)
    max_lag = leader.log_end_offset - laggard.log_end_offset
    if laggard is leader:
        lag_time_ms = 0
    elif NO_TIMESTAMP not in (leader.last_caught_up_timestamp, laggard.last_caught_up_timestamp):
        lag_time_ms = leader.last_caught_up_timestamp - laggard.last_caught_up_timestamp
    else:
        lag_time_ms = UNKNOWN_LAG_MS
    voters = "[" + ", ".join(_node(info, v) for v in info.voters) + "]"
    observers = "[" + ", ".join(_node(info, o) for o in info.observers) + "]"
    return (
        f"ClusterId:              {cluster_id}\n"
        f"LeaderId:               {info.leader_id}\n"
        f"LeaderEpoch:            {info.leader_epoch}\n"
        f"HighWatermark:          {info.high_watermark}\n"
        f"MaxFollowerLag:         {max_lag}\n"
        f"MaxFollowerLagTimeMs:   {lag_time_ms}\n"
        f"CurrentVoters:          {voters}\n"
        f"CurrentObservers:       {observers}"
    )


def replication_table(info: QuorumInfo, human_readable: bool, now_ms: int) -> str:
    """What ``kafka-metadata-quorum.sh describe --replication`` prints (Kafka's
    ``ToolsUtils.prettyPrintTable``: columns padded to their widest value, each followed by a
    tab)."""
    leader = next(v for v in info.voters if v.replica_id == info.leader_id)
    rows = [_row(leader, leader, "Leader", human_readable, now_ms)]
    rows += [
        _row(leader, v, "Follower", human_readable, now_ms) for v in info.voters if v is not leader
    ]
    rows += [_row(leader, o, "Observer", human_readable, now_ms) for o in info.observers]
    headers = [
        "NodeId",
        "DirectoryId",
        "LogEndOffset",
        "Lag",
        "LastFetchTimestamp",
        "LastCaughtUpTimestamp",
        "Status",
    ]
    return pretty_table(headers, rows)


def _row(
    leader: ReplicaState, info: ReplicaState, status: str, human: bool, now_ms: int
) -> list[str]:
    def when(timestamp: int) -> str:
        if timestamp == NO_TIMESTAMP:
            return str(NO_TIMESTAMP)
        return f"{now_ms - timestamp} ms ago" if human else str(timestamp)

    return [
        str(info.replica_id),
        kafka_uuid(info.directory_id),
        str(info.log_end_offset),
        str(leader.log_end_offset - info.log_end_offset),
        when(info.last_fetch_timestamp),
        when(info.last_caught_up_timestamp),
        status,
    ]


def pretty_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(v)) for w, v in zip(widths, row, strict=True)]
    lines = [
        "".join(v.ljust(w) + "\t" for v, w in zip(line, widths, strict=True))
        for line in (headers, *rows)
    ]
    return "\n".join(lines)
