"""``rackwise metadata-quorum --bootstrap-server HOST:PORT describe --status | --replication``:
the controller quorum as ``kafka-metadata-quorum.sh`` prints it (Kafka's
``MetadataQuorumCommand``): DescribeQuorum (api 55), which a broker forwards to the active
controller, and DescribeCluster for the cluster id."""

from __future__ import annotations

import argparse
import asyncio
import base64
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from rackwise.cli._servers import check_bootstrap_servers
from rackwise.cli.errors import CommandError
from rackwise.net import KafkaConnection, NetworkException
from rackwise.protocol import ApiKey

METADATA_TOPIC: Final = "__cluster_metadata"
DESCRIBE_QUORUM_VERSION: Final = 2
CONNECT_TIMEOUT_S: Final = 10.0
NO_TIMESTAMP: Final = -1
UNKNOWN_LAG_MS: Final = -1
"""MaxFollowerLagTimeMs when a caught-up time is missing (as Kafka prints it)."""
ZERO_DIRECTORY_ID: Final = uuid.UUID(int=0)


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


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--bootstrap-server", required=True, metavar="HOST:PORT", help="a broker to ask"
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", parser_class=type(parser))
    actions.required = True
    describe = actions.add_parser("describe", help="describe the metadata quorum")
    describe.add_argument(
        "--status",
        action="store_true",
        help="A short summary of the quorum status and the other provides detailed "
        "information about the status of replication.",
    )
    describe.add_argument(
        "--replication",
        action="store_true",
        help="Detailed information about the status of replication",
    )
    describe.add_argument(
        "--human-readable",
        action="store_true",
        help="Human-readable output (relative times) with --replication",
    )
    describe.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.status and args.replication:
        raise CommandError(
            "Only one of --status or --replication should be specified with describe sub-command"
        )
    if not (args.status or args.replication):
        raise CommandError(
            "One of --status or --replication must be specified with describe sub-command"
        )
    if args.status and args.human_readable:
        raise CommandError("The option --human-readable is only supported along with --replication")
    servers = check_bootstrap_servers(args.bootstrap_server)
    cluster_id, info = asyncio.run(_describe(servers))
    if args.status:
        print(status_text(cluster_id, info))
    else:
        print(replication_table(info, args.human_readable, time.time_ns() // 1_000_000))
    return 0


async def _describe(servers: str) -> tuple[str, QuorumInfo]:
    failure: Exception | None = None
    for entry in (e.strip() for e in servers.split(",") if e.strip()):
        host, _, port = entry.rpartition(":")
        try:
            connection = await KafkaConnection.connect(
                host.strip("[]"),
                int(port),
                timeout_s=CONNECT_TIMEOUT_S,
                client_id="rackwise-metadata-quorum",
            )
        except NetworkException as e:
            failure = e
            continue
        try:
            await connection.negotiate_versions()
            cluster = await connection.request(
                ApiKey.DESCRIBE_CLUSTER,
                include_cluster_authorized_operations=False,
                include_fenced_brokers=False,
                endpoint_type=1,
            )
            quorum = await connection.request(
                ApiKey.DESCRIBE_QUORUM,
                version=DESCRIBE_QUORUM_VERSION,
                topics=[{"topic_name": METADATA_TOPIC, "partitions": [{"partition_index": 0}]}],
            )
        finally:
            await connection.close()
        return str(cluster.cluster_id), quorum_info(quorum)
    raise CommandError(f"no broker of {servers} could be reached: {failure}")


def quorum_info(response: Any) -> QuorumInfo:
    """The DescribeQuorum answer as Kafka's admin client's ``QuorumInfo``."""
    if int(response.error_code) != 0:
        raise CommandError(f"DescribeQuorum failed: error {int(response.error_code)}")
    part = response.topics[0].partitions[0]
    if int(part.error_code) != 0:
        raise CommandError(f"DescribeQuorum failed: error {int(part.error_code)}")
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


def kafka_uuid(value: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString``: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


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
