"""Produce, Fetch and ListOffsets over the wire against real broker processes, for what real
clients rarely send: corrupt and oversized batches (answered with Kafka's codes, nothing
written), a produce to a follower (NOT_LEADER_OR_FOLLOWER with the leader and its endpoint,
KIP-951), acks=all below ``min.insync.replicas``, a fetch past the log end, and topic ids in
Fetch v13+."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest

from rackwise.protocol import ApiKey
from rackwise.storage.batch import build_batch
from tests.broker.test_broker_processes import Cluster, call, eventually, topic_metadata

CORRUPT_MESSAGE = 2
NOT_LEADER_OR_FOLLOWER = 6
MESSAGE_TOO_LARGE = 10
NOT_ENOUGH_REPLICAS = 19
OFFSET_OUT_OF_RANGE = 1
INVALID_REQUIRED_ACKS = 21


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = Cluster(tmp_path_factory.mktemp("data-apis"))
    try:
        running.start()
        yield running
    finally:
        running.close()


def create(cluster: Cluster, name: str, rf: int = 3, **configs: str) -> dict[int, Any]:
    response = call(
        cluster.brokers[1].port,
        ApiKey.CREATE_TOPICS,
        topics=[
            {
                "name": name,
                "num_partitions": 1,
                "replication_factor": rf,
                "assignments": [],
                "configs": [{"name": k, "value": v} for k, v in configs.items()],
            }
        ],
        timeout=30000,
        validate_only=False,
    )
    assert int(response.topics[0].error_code) == 0

    def ready() -> Any:
        topic = topic_metadata(cluster.brokers[1].port, name)
        (partition,) = topic.partitions
        return partition if len(partition.isr_nodes) == rf and partition.leader_id >= 0 else None

    return eventually(ready, timeout_s=30)


def produce(port: int, topic: str, records: bytes, acks: int = 1, timeout_ms: int = 5000) -> Any:
    response = call(
        port,
        ApiKey.PRODUCE,
        transactional_id=None,
        acks=acks,
        timeout=timeout_ms,
        topic_data=[
            {
                "name": topic,
                "topic_id": topic_metadata(port, topic).topic_id,  # Produce v13 names ids
                "partition_data": [{"index": 0, "records": records}],
            }
        ],
    )
    (topic_response,) = response.responses
    (partition,) = topic_response.partition_responses
    return partition, response


def end_offset(port: int, topic: str) -> int:
    response = call(
        port,
        ApiKey.LIST_OFFSETS,
        replica_id=-1,
        isolation_level=0,
        timeout=30000,
        topics=[
            {
                "name": topic,
                "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}],
            }
        ],
    )
    return int(response.topics[0].partitions[0].offset)


def batch(n: int, size: int = 10) -> bytes:
    return build_batch(
        [(None, b"x" * size, ()) for _ in range(n)], timestamp_ms=int(time.time() * 1000)
    )


def test_corrupt_and_oversized_batches_are_refused_and_not_written(cluster: Cluster) -> None:
    leader = create(cluster, "bad-input").leader_id
    port = cluster.brokers[leader].port
    good, _ = produce(port, "bad-input", batch(3))
    assert (int(good.error_code), int(good.base_offset)) == (0, 0)
    flipped = bytearray(batch(3))
    flipped[-2] ^= 0x01  # inside the records: the CRC32C no longer matches
    bad, _ = produce(port, "bad-input", bytes(flipped))
    assert int(bad.error_code) == CORRUPT_MESSAGE
    large, _ = produce(port, "bad-input", batch(1, size=1_100_000))
    assert int(large.error_code) == MESSAGE_TOO_LARGE
    acks, _ = produce(port, "bad-input", batch(1), acks=2)
    assert int(acks.error_code) == INVALID_REQUIRED_ACKS
    # ListOffsets (read uncommitted) answers the high watermark: it reaches 3 once both
    # followers have fetched the good batch and come back; the next append at 3 shows that
    # nothing else was written.
    eventually(lambda: end_offset(port, "bad-input") == 3, timeout_s=10)
    after, _ = produce(port, "bad-input", batch(2))
    assert (int(after.error_code), int(after.base_offset)) == (0, 3)


def test_a_follower_answers_not_leader_with_the_leader_and_its_endpoint(cluster: Cluster) -> None:
    leader = create(cluster, "redirect").leader_id
    follower = next(b for b in cluster.brokers if b != leader)
    partition, response = produce(cluster.brokers[follower].port, "redirect", batch(1))
    assert int(partition.error_code) == NOT_LEADER_OR_FOLLOWER
    assert int(partition.current_leader.leader_id) == leader
    endpoints = {int(e.node_id): int(e.port) for e in response.node_endpoints}
    assert endpoints == {leader: cluster.brokers[leader].port}


def test_acks_all_below_min_insync_is_refused_before_the_append(cluster: Cluster) -> None:
    partition = create(cluster, "min-isr", **{"min.insync.replicas": "3"})
    leader = partition.leader_id
    port = cluster.brokers[leader].port
    ok, _ = produce(port, "min-isr", batch(2), acks=-1)
    assert int(ok.error_code) == 0
    victim = next(b for b in partition.replica_nodes if b != leader)
    cluster.brokers[victim].stop(signal.SIGKILL)
    try:
        eventually(
            lambda: len(topic_metadata(port, "min-isr").partitions[0].isr_nodes) == 2,
            timeout_s=20,
        )
        refused, _ = produce(port, "min-isr", batch(2), acks=-1)
        assert int(refused.error_code) == NOT_ENOUGH_REPLICAS
        assert end_offset(port, "min-isr") == 2
        accepted, _ = produce(port, "min-isr", batch(2), acks=1)
        assert int(accepted.error_code) == 0
    finally:
        cluster.brokers[victim].start()


def test_fetch_past_the_end_and_by_topic_id(cluster: Cluster) -> None:
    partition = create(cluster, "fetching")
    port = cluster.brokers[partition.leader_id].port
    produce(port, "fetching", batch(5))
    topic_id = topic_metadata(port, "fetching").topic_id

    def fetch(offset: int) -> Any:
        response = call(
            port,
            ApiKey.FETCH,
            replica_id=-1,
            replica_state={"replica_id": -1, "replica_epoch": -1},
            max_wait=100,
            min_bytes=1,
            max_bytes=1 << 20,
            isolation_level=0,
            session_id=0,
            session_epoch=-1,
            topics=[
                {
                    "topic": "fetching",
                    "topic_id": topic_id,
                    "partitions": [
                        {
                            "partition": 0,
                            "current_leader_epoch": -1,
                            "fetch_offset": offset,
                            "last_fetched_epoch": -1,
                            "log_start_offset": -1,
                            "partition_max_bytes": 1 << 20,
                        }
                    ],
                }
            ],
            forgotten_topics_data=[],
            rack_id="",
        )
        return response.responses[0].partitions[0]

    eventually(lambda: int(fetch(0).high_watermark) == 5, timeout_s=10)
    data = fetch(0)
    assert int(data.error_code) == 0 and len(bytes(data.records)) > 0
    assert int(fetch(99).error_code) == OFFSET_OUT_OF_RANGE
    empty = fetch(5)
    assert int(empty.error_code) == 0 and not bytes(empty.records or b"")
