"""DescribeQuorum answers read as Kafka's ``QuorumInfo`` and printed as Kafka's
MetadataQuorumCommand prints them, line for line."""

from __future__ import annotations

import uuid

import pytest

from rackwise.client.quorum import (
    QuorumError,
    QuorumInfo,
    ReplicaState,
    quorum_info,
    replication_table,
    status_text,
)
from rackwise.protocol import make, response_class

ZERO = uuid.UUID(int=0)
INFO = QuorumInfo(
    leader_id=3001,
    leader_epoch=4,
    high_watermark=120,
    voters=(
        ReplicaState(3000, ZERO, 118, 1000, 900),
        ReplicaState(3001, ZERO, 120, 1500, 1500),
        ReplicaState(3002, ZERO, 120, 1490, 1490),
    ),
    observers=(),
    endpoints={3000: ("CONTROLLER://127.0.0.1:9093",), 3001: ("CONTROLLER://[::1]:9094",)},
)


def test_status_prints_kafkas_summary() -> None:
    assert status_text("c-1", INFO).split("\n") == [
        "ClusterId:              c-1",
        "LeaderId:               3001",
        "LeaderEpoch:            4",
        "HighWatermark:          120",
        "MaxFollowerLag:         2",
        "MaxFollowerLagTimeMs:   600",
        'CurrentVoters:          [{"id": 3000, "directoryId": null, "endpoints": '
        '["CONTROLLER://127.0.0.1:9093"]}, {"id": 3001, "directoryId": null, "endpoints": '
        '["CONTROLLER://[::1]:9094"]}, {"id": 3002, "directoryId": null}]',
        "CurrentObservers:       []",
    ]


def test_replication_prints_kafkas_table_leader_first() -> None:
    lines = replication_table(INFO, human_readable=False, now_ms=2000).split("\n")
    assert lines == [
        "NodeId\tDirectoryId           \tLogEndOffset\tLag\tLastFetchTimestamp\t"
        "LastCaughtUpTimestamp\tStatus  \t",
        "3001  \tAAAAAAAAAAAAAAAAAAAAAA\t120         \t0  \t1500              \t"
        "1500                 \tLeader  \t",
        "3000  \tAAAAAAAAAAAAAAAAAAAAAA\t118         \t2  \t1000              \t"
        "900                  \tFollower\t",
        "3002  \tAAAAAAAAAAAAAAAAAAAAAA\t120         \t0  \t1490              \t"
        "1490                 \tFollower\t",
    ]
    human = replication_table(INFO, human_readable=True, now_ms=2000).split("\n")
    assert human[2].split("\t")[4:6] == ["1000 ms ago       ", "1100 ms ago          "]


def test_a_describe_quorum_answer_reads_as_quorum_info() -> None:
    part = {
        "partition_index": 0,
        "error_code": 0,
        "error_message": None,
        "leader_id": 3001,
        "leader_epoch": 4,
        "high_watermark": 120,
        "current_voters": [
            {
                "replica_id": 3000,
                "replica_directory_id": None,
                "log_end_offset": 118,
                "last_fetch_timestamp": 1000,
                "last_caught_up_timestamp": 900,
            }
        ],
        "observers": [],
    }
    nodes = [{"node_id": 3000, "listeners": [{"name": "CONTROLLER", "host": "h", "port": 1}]}]
    response = make(
        response_class(55, 2),
        error_code=0,
        error_message=None,
        topics=[{"topic_name": "__cluster_metadata", "partitions": [part]}],
        nodes=nodes,
    )
    info = quorum_info(response)
    assert info.voters == (ReplicaState(3000, ZERO, 118, 1000, 900),)
    assert info.endpoints == {3000: ("CONTROLLER://h:1",)}
    failed = make(
        response_class(55, 2),
        error_code=0,
        error_message=None,
        topics=[{"topic_name": "__cluster_metadata", "partitions": [{**part, "error_code": 6}]}],
        nodes=[],
    )
    with pytest.raises(QuorumError, match="DescribeQuorum failed: error 6"):
        quorum_info(failed)
