"""Following the metadata log as an observer: only committed batches are applied, what is
pending is cut where the leader's log diverges, snapshots load; and the fetch loop over a real
socket against a controller node in this process (one voter), which lists the broker among
its observers."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest

from rackwise.broker.metadata_fetcher import MetadataFetcher
from rackwise.broker.metadata_follower import MetadataFetchError, MetadataFollower
from rackwise.controller_node import handlers
from rackwise.controller_node.node import ControllerNode
from rackwise.metalog import SnapshotId
from rackwise.metalog.snapshots import write_snapshot_file
from rackwise.net import KafkaConnection
from rackwise.node.config import NodeConfig
from rackwise.raft.messages import Batch, OffsetAndEpoch
from rackwise.records import FeatureLevelRecord, PartitionRecord, RegisterBrokerRecord, TopicRecord
from tests.processes import controller_properties, create_topics, register_unfenced, topic

T = uuid.UUID(int=5)


def register(broker_id: int) -> Any:
    return RegisterBrokerRecord(
        broker_id=broker_id,
        incarnation_id=uuid.UUID(int=broker_id),
        broker_epoch=broker_id,
        end_points=(),
        features=(),
        rack=f"/r{broker_id}",
    )


def partition(partition_id: int, topic_id: uuid.UUID = T) -> Any:
    return PartitionRecord(
        partition_id=partition_id,
        topic_id=topic_id,
        replicas=(1,),
        isr=(1,),
        removing_replicas=(),
        adding_replicas=(),
        leader=1,
        leader_epoch=0,
        partition_epoch=0,
        directories=(),
    )


RECORDS = [
    FeatureLevelRecord(name="metadata.version", feature_level=23),
    register(1),
    TopicRecord(name="t", topic_id=T),
    partition(0),
    partition(1),
]


def batch(base: int, records: list[Any], epoch: int = 1) -> Batch:
    return Batch(base, epoch, tuple(records))


def test_only_what_the_high_watermark_commits_is_applied() -> None:
    follower = MetadataFollower()
    assert (follower.applied_offset, follower.fetch_offset) == (-1, 0)
    assert follower.append((batch(0, RECORDS[:2]), batch(2, RECORDS[2:4])), 2) == 2
    assert (follower.next_offset, follower.fetch_offset, follower.is_caught_up) == (2, 4, True)
    assert follower.image.topics_by_name.get("t") is None  # offsets 2-3 wait for a commit
    # An answer that starts before the fetch offset is trimmed to it; 4 commits it all.
    assert follower.append((batch(2, RECORDS[2:]),), 5) == 3
    assert (follower.next_offset, follower.applied_offset, follower.pending) == (5, 4, [])
    assert sorted(follower.image.topic("t").partitions) == [0, 1]
    assert follower.image.brokers[1].rack == "/r1"


def test_a_gap_is_refused_and_changes_nothing() -> None:
    follower = MetadataFollower()
    follower.append((batch(0, RECORDS[:2]),), 2)
    before = follower.image
    with pytest.raises(MetadataFetchError, match="batch at offset 3 when offset 2"):
        follower.append((batch(3, RECORDS[3:]),), 5)
    assert follower.image is before and follower.fetch_offset == 2


def test_a_diverging_epoch_cuts_only_what_is_pending() -> None:
    follower = MetadataFollower()
    follower.append((batch(0, RECORDS[:2]), batch(2, RECORDS[2:3], 2), batch(3, RECORDS[3:], 3)), 2)
    # The new leader's epoch 2 ends at 3: the batch of epoch 3 goes, the one of epoch 2 stays.
    assert follower.truncate(OffsetAndEpoch(2, 3))
    assert (follower.fetch_offset, follower.last_fetched_epoch) == (3, 2)
    # Below what is applied: the quorum lost a committed record; start again from nothing.
    assert not follower.truncate(OffsetAndEpoch(0, 1))
    assert (follower.fetch_offset, follower.applied_offset) == (0, -1)


def test_snapshot_loads_and_following_goes_on_after_it(tmp_path: Path) -> None:
    snapshot_id = SnapshotId(5, 1)
    path = write_snapshot_file(tmp_path, snapshot_id, RECORDS, 0)
    follower = MetadataFollower()
    follower.append((batch(0, RECORDS[:1]),), 0)
    assert follower.load_snapshot(snapshot_id, path.read_bytes()) == 5
    assert (follower.next_offset, follower.last_fetched_epoch) == (5, 1)
    follower.append((batch(5, [partition(2)]),), 6)
    assert sorted(follower.image.topic("t").partitions) == [0, 1, 2]


def test_a_damaged_snapshot_is_refused(tmp_path: Path) -> None:
    snapshot_id = SnapshotId(5, 1)
    data = bytearray(write_snapshot_file(tmp_path, snapshot_id, RECORDS, 0).read_bytes())
    data[60] ^= 0x01
    follower = MetadataFollower()
    with pytest.raises(Exception, match="CRC32C mismatch"):
        follower.load_snapshot(snapshot_id, bytes(data))
    assert follower.next_offset == 0


async def follow(tmp_path: Path) -> None:
    node = ControllerNode(NodeConfig.from_properties(controller_properties(tmp_path)))
    await node.start()
    port = node.endpoint.port

    async def connect() -> KafkaConnection:
        return await KafkaConnection.connect("127.0.0.1", port, request_timeout_s=5)

    follower = MetadataFollower()
    seen: list[int] = []
    fetcher = MetadataFetcher(
        follower,
        connect,
        node_id=7,
        cluster_id=None,
        max_wait_ms=2000,
        on_change=lambda image: seen.append(image.num_partitions),
    )
    task = asyncio.create_task(fetcher.run())
    try:
        async with await connect() as admin:
            await admin.negotiate_versions()
            await register_unfenced(admin, range(2, 3))
            await create_topics(admin, topic("t", 2, 1))
            log = node.log
            assert log is not None
            assert await fetcher.wait_until(lambda f: f.next_offset == log.high_watermark, 5)
            assert sorted(follower.image.topic("t").partitions) == [0, 1]
            await asyncio.sleep(0.3)  # the fetch is held by the leader now
            loop = asyncio.get_running_loop()
            started = loop.time()
            await create_topics(admin, topic("u", 1, 1))
            assert await fetcher.wait_until(lambda f: f.image.topics_by_name.get("u"), 5)
            assert loop.time() - started < 1.5  # woken by the append, not the long poll's end
        assert follower.applied_offset == log.high_watermark - 1
        assert seen[-1] == 3

        def observers() -> list[tuple[int, int]]:
            described = handlers.describe_quorum(2, node.config, log, node.clock())
            part = described.topics[0].partitions[0]  # type: ignore[attr-defined]
            return [(o.replica_id, o.log_end_offset) for o in part.observers]

        async with asyncio.timeout(5):  # its next fetch, at the end it applied, is on its way
            while observers() != [(7, log.high_watermark)]:
                await asyncio.sleep(0.01)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await node.close()


def test_fetcher_follows_the_leader_over_a_socket(tmp_path: Path) -> None:
    asyncio.run(follow(tmp_path))


def test_fetcher_retries_until_the_controller_is_there() -> None:
    async def scenario() -> None:
        attempts = 0

        async def connect() -> KafkaConnection:
            nonlocal attempts
            attempts += 1
            return await KafkaConnection.connect("127.0.0.1", 1, timeout_s=0.5)

        fetcher = MetadataFetcher(MetadataFollower(), connect, node_id=1, cluster_id=None)
        task = asyncio.create_task(fetcher.run())
        await asyncio.sleep(0.5)
        assert not task.done()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        assert attempts >= 2

    asyncio.run(scenario())
