"""Following the metadata log: batches applied incrementally, snapshots loaded, and the fetch
loop over a real socket against a stand-in controller serving FetchMetadataLog from a log."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from pathlib import Path
from typing import Any

import pytest

from rackwise.broker.metadata_follower import MetadataFetcher, MetadataFetchError, MetadataFollower
from rackwise.metalog import InMemoryMetadataLog, SnapshotId
from rackwise.metalog.snapshots import write_snapshot_file
from rackwise.net import KafkaConnection, start_server
from rackwise.protocol import ApiKey, Listener, Request, make, response_class
from rackwise.records import (
    FeatureLevelRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
    encode_batch,
    encode_frames,
)

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


def batch(base: int, records: list[Any], epoch: int = 1) -> bytes:
    return encode_batch(base, epoch, 0, encode_frames(records))


def test_batches_apply_in_order_and_skip_what_is_applied() -> None:
    follower = MetadataFollower()
    assert follower.applied_offset == -1
    assert follower.apply_batches(batch(0, RECORDS[:2]) + batch(2, RECORDS[2:4]), 5) == 4
    assert (follower.next_offset, follower.applied_offset, follower.is_caught_up) == (4, 3, False)
    # The answer starts at the batch holding offset 4 (base 2): records 2 and 3 are skipped.
    assert follower.apply_batches(batch(2, RECORDS[2:]), 5) == 1
    assert follower.next_offset == 5 and follower.is_caught_up
    assert sorted(follower.image.topic("t").partitions) == [0, 1]
    assert follower.image.brokers[1].rack == "/r1"


def test_a_gap_is_refused_and_changes_nothing() -> None:
    follower = MetadataFollower()
    follower.apply_batches(batch(0, RECORDS[:2]))
    before = follower.image
    with pytest.raises(MetadataFetchError, match="batch at offset 3 when offset 2"):
        follower.apply_batches(batch(3, RECORDS[3:]))
    assert follower.image is before and follower.next_offset == 2


def test_snapshot_loads_and_following_goes_on_after_it(tmp_path: Path) -> None:
    snapshot_id = SnapshotId(5, 1)
    path = write_snapshot_file(tmp_path, snapshot_id, RECORDS, 0)
    follower = MetadataFollower()
    follower.apply_batches(batch(0, RECORDS[:1]))
    assert follower.load_snapshot(snapshot_id, path.read_bytes()) == 5
    assert follower.next_offset == 5
    follower.apply_batches(batch(5, [partition(2)]))
    assert sorted(follower.image.topic("t").partitions) == [0, 1, 2]


def test_a_damaged_snapshot_is_refused(tmp_path: Path) -> None:
    snapshot_id = SnapshotId(5, 1)
    data = bytearray(write_snapshot_file(tmp_path, snapshot_id, RECORDS, 0).read_bytes())
    data[60] ^= 0x01
    follower = MetadataFollower()
    with pytest.raises(Exception, match="CRC32C mismatch"):
        follower.load_snapshot(snapshot_id, bytes(data))
    assert follower.next_offset == 0


class StandInController:
    """Serves FetchMetadataLog from an in-memory log (long polls wait for appends) and
    FetchMetadataSnapshot from a snapshot file, as the controller's listener does."""

    def __init__(self, log: InMemoryMetadataLog, snapshot: tuple[SnapshotId, bytes] | None) -> None:
        self.log = log
        self.snapshot = snapshot
        self.appended = asyncio.Event()
        self.fetch_offsets: list[int] = []

    async def handle(self, request: Request) -> Any:
        body = request.body
        key = request.header.api_key
        if key == ApiKey.API_VERSIONS:
            from rackwise.protocol import api_versions_response

            return api_versions_response(request.header.api_version, Listener.CONTROLLER)
        cls = response_class(key, 0)
        if key == ApiKey.FETCH_METADATA_SNAPSHOT:
            assert self.snapshot is not None
            snapshot_id, data = self.snapshot
            chunk = data[body.position : body.position + 100]  # small chunks on purpose
            return make(
                cls,
                throttle_time_ms=0,
                error_code=0,
                snapshot_end_offset=snapshot_id.end_offset,
                snapshot_epoch=snapshot_id.epoch,
                size=len(data),
                position=body.position,
                bytes=chunk,
            )
        self.fetch_offsets.append(body.fetch_offset)
        if self.snapshot is not None and body.fetch_offset < self.snapshot[0].end_offset:
            snapshot_id = self.snapshot[0]
            return make(
                cls,
                throttle_time_ms=0,
                error_code=0,
                high_watermark=self.log.end_offset,
                snapshot_end_offset=snapshot_id.end_offset,
                snapshot_epoch=snapshot_id.epoch,
                records=b"",
            )
        if body.fetch_offset >= self.log.end_offset:
            self.appended.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.appended.wait(), body.max_wait_ms / 1000)
        records = self.log.read_raw(body.fetch_offset, body.max_bytes)
        return make(
            cls,
            throttle_time_ms=0,
            error_code=0,
            high_watermark=self.log.end_offset,
            log_start_offset=self.log.start_offset,
            records=records,
        )


async def follow(log: InMemoryMetadataLog, snapshot: tuple[SnapshotId, bytes] | None) -> None:
    controller = StandInController(log, snapshot)
    server = await start_server(controller.handle, Listener.CONTROLLER, port=0)

    async def connect() -> KafkaConnection:
        return await KafkaConnection.connect("127.0.0.1", server.port, request_timeout_s=5)

    follower = MetadataFollower()
    seen: list[int] = []
    fetcher = MetadataFetcher(
        follower,
        connect,
        node_id=1,
        cluster_id="c",
        max_wait_ms=2000,
        on_change=lambda image: seen.append(image.num_partitions),
    )
    task = asyncio.create_task(fetcher.run())
    try:
        assert await fetcher.wait_until(lambda f: f.next_offset == log.end_offset, 5)
        assert sorted(follower.image.topic("t").partitions) == [0, 1]
        # A long poll is waiting; an append wakes it at once, well before max_wait_ms.
        log.append([partition(2)], 1)
        controller.appended.set()
        loop = asyncio.get_running_loop()
        started = loop.time()
        assert await fetcher.wait_until(lambda f: 2 in f.image.topic("t").partitions, 5)
        assert loop.time() - started < 1.5
        assert follower.applied_offset == log.end_offset - 1
        assert seen[-1] == 3
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await server.close()


def test_fetcher_follows_a_log_over_a_socket() -> None:
    log = InMemoryMetadataLog()
    log.append(RECORDS[:2], 1)
    log.append(RECORDS[2:], 1)
    asyncio.run(follow(log, None))


def test_fetcher_loads_the_snapshot_when_the_log_starts_later(tmp_path: Path) -> None:
    log = InMemoryMetadataLog()
    log.append(RECORDS, 1)
    snapshot_id = SnapshotId(5, 1)
    data = write_snapshot_file(tmp_path, snapshot_id, RECORDS, 0).read_bytes()
    assert len(data) > 200  # read in several chunks of 100 bytes
    asyncio.run(follow(log, (snapshot_id, data)))


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
