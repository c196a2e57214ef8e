"""A broker under a full produce and fetch load stays in charge of itself: while other
connections produce as fast as it answers and a consumer fetches everything back, it stays
unfenced, and ApiVersions on a fresh connection is answered within 100 ms at p99."""

from __future__ import annotations

import asyncio
import multiprocessing
import re
import struct
import threading
import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, TopicPartition

from rackwise.net import KafkaConnection
from rackwise.protocol import ApiKey, encode_request, make, request_class
from rackwise.storage.batch import build_batch
from tests.broker.test_broker_processes import Cluster, alive_brokers, call, eventually

TOPIC = "loaded"
LOAD_SECONDS = 8.0


@pytest.fixture
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = Cluster(tmp_path_factory.mktemp("fair"))
    try:
        running.start()
        yield running
    finally:
        running.close()


def produce_frame() -> bytes:
    batch = build_batch([(None, b"v" * 1024, ()) for _ in range(64)], timestamp_ms=0)
    body = make(
        request_class(ApiKey.PRODUCE, 9),
        {
            "transactional_id": None,
            "acks": 1,
            "timeout": 30_000,
            "topic_data": [
                {
                    "name": TOPIC,
                    "partition_data": [{"index": p, "records": batch} for p in range(2)],
                }
            ],
        },
    )
    return encode_request(body, 0, "load")


async def flood(port: int, frame: bytes, until: float, window: int = 5) -> int:
    """Produce ``frame`` over one connection, ``window`` in flight, until ``until``."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    template = bytearray(frame)
    in_flight = asyncio.Semaphore(window)
    sent = 0

    async def answers() -> None:
        while True:
            (size,) = struct.unpack(">i", await reader.readexactly(4))
            await reader.readexactly(size)
            in_flight.release()

    reading = asyncio.create_task(answers())
    try:
        while time.monotonic() < until:
            await in_flight.acquire()
            sent += 1
            struct.pack_into(">i", template, 8, sent)
            writer.write(bytes(template))
            await writer.drain()
    finally:
        reading.cancel()
        writer.close()
    return sent


async def probe_api_versions(port: int, until: float) -> list[float]:
    """ApiVersions on a fresh connection, every 50 ms: the seconds from connecting to the
    answer (closing is the client's own time)."""
    latencies = []
    while time.monotonic() < until:
        started = time.monotonic()
        connection = await KafkaConnection.connect("127.0.0.1", port, timeout_s=5)
        try:
            await connection.negotiate_versions(timeout_s=5)
            latencies.append(time.monotonic() - started)
        finally:
            await connection.close()
        await asyncio.sleep(0.05)
    return latencies


def probe_in_own_process(port: int, seconds: float) -> list[float]:
    """:func:`probe_api_versions` for ``seconds`` from a process of its own, so that what it
    measures is the broker, not this process's loop, busy with the floods' frames."""
    return asyncio.run(probe_api_versions(port, time.monotonic() + seconds))


def consume(bootstrap: str, stop: threading.Event, counts: list[int]) -> None:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "fair", "fetch.wait.max.ms": 10}
    )
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(2)])
    try:
        while not stop.is_set():
            counts[0] += len([m for m in consumer.consume(1000, 0.2) if not m.error()])
    finally:
        consumer.close()


@pytest.mark.slow
def test_a_loaded_broker_stays_unfenced_and_answers_new_connections(cluster: Cluster) -> None:
    broker = cluster.brokers[1]
    response = call(
        broker.port,
        ApiKey.CREATE_TOPICS,
        topics=[
            {
                "name": TOPIC,
                "num_partitions": -1,
                "replication_factor": -1,
                "assignments": [{"partition_index": p, "broker_ids": [1]} for p in range(2)],
                "configs": [],
            }
        ],
        timeout=30000,
        validate_only=False,
    )
    assert int(response.topics[0].error_code) == 0
    time.sleep(1.0)
    frame = produce_frame()
    stop = threading.Event()
    counts = [0]
    reader = threading.Thread(target=consume, args=(cluster.bootstrap, stop, counts), daemon=True)
    reader.start()

    async def load() -> list[int]:
        until = time.monotonic() + LOAD_SECONDS
        return list(await asyncio.gather(*(flood(broker.port, frame, until) for _ in range(3))))

    with multiprocessing.get_context("spawn").Pool(1) as pool:
        probing = pool.apply_async(probe_in_own_process, (broker.port, LOAD_SECONDS))
        try:
            sent = asyncio.run(load())
            latencies = probing.get(LOAD_SECONDS + 30)
        finally:
            stop.set()
            reader.join(10)
    assert sum(sent) > 100, sent  # the load was real
    assert counts[0] > 0
    latencies.sort()
    p99 = latencies[min(int(0.99 * len(latencies)), len(latencies) - 1)]
    assert p99 < 0.100, f"ApiVersions p99 {p99 * 1000:.1f} ms under load"
    assert 1 in alive_brokers(cluster.brokers[2].port)
    assert not re.search(r"(?<!un)fenced broker 1\b", cluster.controller.stderr())
    eventually(lambda: 1 in alive_brokers(broker.port))
