"""Replication throttles on real brokers, measured from outside: one partition reassigned from
broker 1 to brokers 1 and 2 under ``leader.replication.throttled.rate`` and
``follower.replication.throttled.rate`` (the cluster default), beside an unthrottled one moved
at the same time; the new replicas' sizes are read from broker 2's DescribeLogDirs.

* The throttled copy keeps to the rate within 5% over every 10 s window that starts a
  second or more after its first bytes. Kafka's quota divides by at least one window (1 s),
  so the first second may carry a second's worth of bytes at once, and then nothing until
  the rest of that second has passed: windows starting in it come out short, as on Kafka.
* The unthrottled partition copies at full speed meanwhile.
* Raising the rate mid-move applies without a restart: the rest goes at once.
* Once the new replica is in the ISR, nothing holds it back: acks=all writes go at full
  speed under a throttle far below their rate.

The brokers fetch at most 256 KiB per partition (``replica.fetch.max.bytes``), so that one
answer is a small share of a window's 20 MiB; with Kafka's 1 MiB one answer more or less in
a window is already 5%.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient
from kafka import TopicPartition as KafkaTopicPartition

from rackwise.net import KafkaConnection
from rackwise.protocol import ApiKey
from tests.broker.test_broker_processes import call
from tests.interop.conftest import eventually, rackwise

pytestmark = pytest.mark.slow  # two broker processes copying 70 MB

MIB = 1 << 20
RATE = 2 * MIB
FAST_RATE = 64 * MIB
SLOW_BYTES = 40 * MIB
FAST_BYTES = 30 * MIB
RAISE_AFTER_S = 13.5
RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")


@pytest.fixture(scope="module")
def brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[int, int]]:
    directory = tmp_path_factory.mktemp("throttle")
    up = rackwise(
        "cluster",
        "up",
        "--dir",
        str(directory),
        "--brokers",
        "2",
        "--json",
        "--override",
        f"replica.fetch.max.bytes={256 * 1024}",
        "--override",
        "log.segment.bytes=16777216",
    )
    try:
        assert up.returncode == 0, up.stderr
        nodes = json.loads(up.stdout)["nodes"]
        yield {int(n["id"]): int(n["port"]) for n in nodes if n["role"] == "broker"}
    finally:
        rackwise("cluster", "down", "--dir", str(Path(directory)))


def bootstrap(brokers: dict[int, int]) -> str:
    return ",".join(f"127.0.0.1:{port}" for port in brokers.values())


def set_rates(port: int, rate: int) -> None:
    """Both rates on the cluster default (the BROKER resource "", ``--entity-default``)."""

    async def send() -> Any:
        async with await KafkaConnection.connect("127.0.0.1", port) as connection:
            await connection.negotiate_versions()
            return await connection.request(
                ApiKey.INCREMENTAL_ALTER_CONFIGS,
                resources=[
                    {
                        "resource_type": 4,
                        "resource_name": "",
                        "configs": [
                            {"name": key, "config_operation": 0, "value": str(rate)}
                            for key in RATES
                        ],
                    }
                ],
                validate_only=False,
            )

    (result,) = asyncio.run(asyncio.wait_for(send(), 60)).responses
    assert int(result.error_code) == 0, result.error_message


def sizes(port: int) -> dict[str, int]:
    """The size of each partition-0 replica on the broker at ``port``, by topic."""
    response = call(port, ApiKey.DESCRIBE_LOG_DIRS, topics=None)
    return {
        str(t.name): int(p.partition_size)
        for d in response.results
        for t in d.topics
        for p in t.partitions
        if int(p.partition_index) == 0
    }


def produce(servers: str, topic: str, total: int, acks: str = "1") -> float:
    """``total`` bytes of 64 KiB values into partition 0; the seconds it took."""
    producer = Producer(
        {
            "bootstrap.servers": servers,
            "acks": acks,
            "linger.ms": 5,
            "batch.size": 1_000_000,
            "compression.type": "none",
        }
    )
    value = bytes(range(256)) * 256
    started = time.monotonic()
    for _ in range(total // len(value)):
        while True:
            try:
                producer.produce(topic, value, partition=0)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(60) == 0
    return time.monotonic() - started


def windows(samples: list[tuple[float, int]], start: float, end: float) -> list[float]:
    """The rate over every 10 s between the samples taken from ``start`` to ``end``."""
    out = []
    for i, (t0, s0) in enumerate(samples):
        if t0 < start:
            continue
        later = [(t, s) for t, s in samples[i:] if t >= t0 + 10.0]
        if not later or later[0][0] > end:
            break
        t1, s1 = later[0]
        out.append((s1 - s0) / (t1 - t0))
    return out


def test_a_throttled_move_keeps_to_the_rate_and_the_rest_do_not_wait(
    brokers: dict[int, int],
) -> None:
    servers = bootstrap(brokers)
    admin = AdminClient({"bootstrap.servers": servers})
    throttled = {
        "leader.replication.throttled.replicas": "0:1",
        "follower.replication.throttled.replicas": "0:2",
    }
    futures = admin.create_topics(
        [
            NewTopic("slow", 1, replica_assignment=[[1]], config=throttled),
            NewTopic("fast", 1, replica_assignment=[[1]]),
        ]
    )
    for future in futures.values():
        future.result(30)
    produce(servers, "slow", SLOW_BYTES)
    produce(servers, "fast", FAST_BYTES)
    held = sizes(brokers[1])
    set_rates(brokers[1], RATE)
    kafka_admin = KafkaAdminClient(bootstrap_servers=servers)
    try:
        moves = {KafkaTopicPartition(t, 0): [1, 2] for t in ("slow", "fast")}
        assert kafka_admin.alter_partition_reassignments(moves) == dict.fromkeys(moves)
        samples: list[tuple[float, dict[str, int]]] = []
        raised_at = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            now = sizes(brokers[2])
            samples.append((time.monotonic(), now))
            if now.get("slow", 0) >= held["slow"]:
                break
            first = next((t for t, s in samples if s.get("slow", 0) > 0), None)
            if raised_at is None and first is not None and time.monotonic() > first + RAISE_AFTER_S:
                set_rates(brokers[1], FAST_RATE)
                raised_at = time.monotonic()
            time.sleep(0.1)
        assert raised_at is not None and samples[-1][1].get("slow") == held["slow"]
        slow = [(t, s.get("slow", 0)) for t, s in samples]
        fast = [(t, s.get("fast", 0)) for t, s in samples]
        begun = next(t for t, s in slow if s > 0)
        rates = windows(slow, begun + 1.0, raised_at)
        assert len(rates) >= 15, rates
        assert all(abs(r - RATE) <= 0.05 * RATE for r in rates), [round(r / MIB, 3) for r in rates]
        # the unthrottled partition: done at full speed while the other was held back
        fast_done = next(t for t, s in fast if s >= held["fast"])
        assert held["fast"] / (fast_done - samples[0][0]) > 5 * RATE
        assert fast_done < begun + 10
        # the raise: the rest, about 10 MiB, goes at once, not at 2 MiB/s
        assert samples[-1][0] - raised_at < 4.0
    finally:
        kafka_admin.close()
    eventually(lambda: not kafka_admin_reassigning(servers), 30)
    # in the ISR now: acks=all writes are not held back by a rate far below theirs
    set_rates(brokers[1], 256 * 1024)
    assert produce(servers, "slow", 8 * MIB, acks="all") < 5.0


def kafka_admin_reassigning(servers: str) -> bool:
    admin = KafkaAdminClient(bootstrap_servers=servers)
    try:
        return bool(admin.list_partition_reassignments())
    finally:
        admin.close()
