"""Consumers leave a follower that may be stale, on a real cluster whose racks are paths: four
brokers on ``/dc1/r1``, ``/dc1/r2``, ``/dc2/r1``, ``/dc2/r2`` and one controller, the multi-level
replica selector, ``replica.lag.time.max.ms=1500``, shared by the module's tests. A partition
is led from ``/dc2/r1`` with followers on ``/dc1/r1`` and ``/dc1/r2``; a librdkafka consumer with
``client.rack=/dc1/r1`` reads it from the follower in its own rack while a paced idempotent
producer writes numbered values.

* The follower in the consumer's rack is stopped (SIGSTOP): the consumer's fetch to it times
  out (``socket.timeout.ms`` + ``fetch.wait.max.ms``), the leader, which stopped naming it
  when it fell out of sync, sends the consumer to ``/dc1/r2``; when the follower resumes and is
  back in the ISR, the replica on ``/dc1/r2`` sends the consumer back to it.
* A reassignment moves the follower to ``/dc2/r2``: the consumer moves to ``/dc1/r2``.

Where the consumer reads is checked on the brokers, by the record bytes each sends to consumers
of the topic (``kafka_server_brokertopicmetrics_bytesout``, scraped over HTTP); what it reads is
checked against what the producer had acknowledged, offset for offset and value for value.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import threading
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient
from kafka.structs import TopicPartition as KafkaTopicPartition
from prometheus_client.parser import text_string_to_metric_families

from tests.interop.conftest import eventually, rackwise

pytestmark = pytest.mark.slow  # five processes, a broker stopped

RACKS = ("/dc1/r1", "/dc1/r2", "/dc2/r1", "/dc2/r2")
CONSUMER_RACK = "/dc1/r1"
LAG_MS = 1500
SOCKET_TIMEOUT_MS = 4000
SERVED = re.compile(r"metrics served on http://([\d.]+):(\d+)/metrics")
BYTES_OUT = "kafka_server_brokertopicmetrics_bytesout_total"


@dataclass
class Cluster:
    dir: Path
    brokers: dict[int, dict[str, Any]]
    metrics: dict[int, int]

    def by_rack(self, rack: str) -> int:
        return next(b for b, n in self.brokers.items() if n["rack"] == rack)

    def address(self, *brokers: int) -> str:
        chosen = brokers or tuple(self.brokers)
        return ",".join(f"{self.brokers[b]['host']}:{self.brokers[b]['port']}" for b in chosen)

    def signal(self, broker: int, signum: int) -> None:
        os.kill(int(self.brokers[broker]["pid"]), signum)

    def bytes_out(self, broker: int, topic: str) -> float:
        url = f"http://127.0.0.1:{self.metrics[broker]}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            text = response.read().decode()
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == BYTES_OUT and sample.labels.get("topic") == topic:
                    return float(sample.value)
        return 0.0

    def serving(self, topic: str, brokers: list[int], window_s: float = 1.0) -> set[int]:
        """The brokers of ``brokers`` that sent consumers records of ``topic`` in a window."""
        before = {b: self.bytes_out(b, topic) for b in brokers}
        time.sleep(window_s)
        return {b for b in brokers if self.bytes_out(b, topic) > before[b]}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    directory = tmp_path_factory.mktemp("stale") / "cluster"
    up = rackwise(
        "cluster", "up", "--dir", str(directory), "--brokers", "4", "--racks", ",".join(RACKS),
        "--controllers", "1", "--placer", "multi-level", "--json",
        "--override", "replica.selector.class=multi-level",
        "--override", f"replica.lag.time.max.ms={LAG_MS}",
        "--override", "metrics.http.port=0",
    )  # fmt: skip
    try:
        assert up.returncode == 0, up.stderr
        brokers = {n["id"]: n for n in json.loads(up.stdout)["nodes"] if n["role"] == "broker"}
        metrics = {}
        for broker in brokers:
            log = (directory / f"broker-{broker}" / "server.log").read_text("utf-8")
            match = SERVED.search(log)
            assert match, log[-2000:]
            metrics[broker] = int(match.group(2))
        yield Cluster(directory, brokers, metrics)
    finally:
        if (directory / "cluster.json").exists():
            for node in json.loads((directory / "cluster.json").read_text())["nodes"]:
                with contextlib.suppress(OSError, KeyError, TypeError, ValueError):
                    os.kill(int(node["pid"]), signal.SIGCONT)
            rackwise("cluster", "down", "--dir", str(directory))


@dataclass
class Ledger:
    acked: dict[int, bytes] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


class Feed(threading.Thread):
    """An idempotent acks=all producer writing a numbered value every few milliseconds."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.topic, self.ledger = topic, Ledger()
        self.stop_event = threading.Event()
        self.producer = Producer(
            {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True}
        )

    def _report(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.ledger.errors.append(str(err))
        else:
            self.ledger.acked[msg.offset()] = msg.value()

    def run(self) -> None:
        n = 0
        while not self.stop_event.is_set():
            value = f"{n:09d}".encode() + b"." * 200
            self.producer.produce(self.topic, value, partition=0, on_delivery=self._report)
            n += 1
            self.producer.poll(0.004)
        self.producer.flush(30)


class Reader(threading.Thread):
    """A librdkafka consumer with ``client.rack`` reading partition 0 from offset 0; its
    statistics say which broker it fetches from (``broker`` of the partition)."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.topic = topic
        self.read: list[tuple[int, bytes]] = []
        self.errors: list[str] = []
        self.fetching_from = -1
        self.moves: list[tuple[float, int]] = []
        """(monotonic time, broker) each time the broker it fetches from changed."""
        self.stop_event = threading.Event()
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"stale-{uuid.uuid4()}",
                "client.rack": CONSUMER_RACK,
                "enable.auto.commit": False,
                "auto.offset.reset": "error",
                "socket.timeout.ms": SOCKET_TIMEOUT_MS,
                "statistics.interval.ms": 100,
                "stats_cb": self._stats,
            }
        )

    def _stats(self, text: str) -> None:
        partition = json.loads(text).get("topics", {}).get(self.topic, {}).get("partitions", {})
        broker = int(partition.get("0", {}).get("broker", -1))
        if broker != self.fetching_from:
            self.fetching_from = broker
            self.moves.append((time.monotonic(), broker))

    def run(self) -> None:
        self.consumer.assign([TopicPartition(self.topic, 0, 0)])
        while not self.stop_event.is_set():
            message = self.consumer.poll(0.1)
            if message is None:
                continue
            if message.error():
                self.errors.append(str(message.error()))
                continue
            self.read.append((message.offset(), message.value()))
        self.consumer.close()


def _isr(admin: AdminClient, topic: str) -> list[int]:
    """The ISR of ``topic``-0; empty when the question timed out (asked of a stopped broker,
    which the client then leaves for another)."""
    try:
        described = admin.list_topics(topic, timeout=SOCKET_TIMEOUT_MS / 1000)
    except KafkaException:
        return []
    return sorted(described.topics[topic].partitions[0].isrs)


def _admin(cluster: Cluster, *brokers: int) -> AdminClient:
    return AdminClient(
        {"bootstrap.servers": cluster.address(*brokers), "socket.timeout.ms": SOCKET_TIMEOUT_MS}
    )


def _start(cluster: Cluster, topic: str, replicas: list[int]) -> tuple[Feed, Reader]:
    admin = _admin(cluster)
    admin.create_topics([NewTopic(topic, 1, replica_assignment=[replicas])])[topic].result(30)
    eventually(lambda: _isr(admin, topic) == sorted(replicas), 30)
    feed, reader = Feed(cluster.address(), topic), Reader(cluster.address(), topic)
    feed.start()
    reader.start()
    return feed, reader


def _finish(feed: Feed, reader: Reader) -> None:
    """Stop writing, let the consumer read to the end, and check it read every acknowledged
    record once, in order, with the value acknowledged at its offset."""
    feed.stop_event.set()
    feed.join(60)
    assert feed.ledger.errors == []
    end = len(feed.ledger.acked)
    assert sorted(feed.ledger.acked) == list(range(end))
    eventually(lambda: len(reader.read) >= end, 30)
    reader.stop_event.set()
    reader.join(30)
    assert reader.errors == []
    assert [offset for offset, _ in reader.read] == list(range(end))
    assert all(value == feed.ledger.acked[offset] for offset, value in reader.read)


def _moved_to(reader: Reader, broker: int, since: float) -> float:
    """Seconds from ``since`` until the consumer fetched from ``broker``."""
    at = eventually(
        lambda: next((t for t, b in reader.moves if t >= since and b == broker), None), 30
    )
    return at - since


def test_a_stopped_follower_loses_its_consumer_and_gets_it_back(cluster: Cluster) -> None:
    topic = "lagging"
    near, next_near = cluster.by_rack("/dc1/r1"), cluster.by_rack("/dc1/r2")
    leader = cluster.by_rack("/dc2/r1")
    running = [leader, next_near, cluster.by_rack("/dc2/r2")]
    feed, reader = _start(cluster, topic, [leader, near, next_near])
    admin = _admin(cluster, leader)
    try:
        eventually(lambda: reader.fetching_from == near, 30)
        assert eventually(lambda: cluster.serving(topic, [*running, near]) == {near}, 20)
        stopped = time.monotonic()
        cluster.signal(near, signal.SIGSTOP)
        left_s = _moved_to(reader, next_near, stopped)
        # The fetch to the stopped broker timed out; the leader names the next nearest.
        assert left_s < (SOCKET_TIMEOUT_MS + 500) / 1000 + 3, reader.moves
        assert eventually(lambda: cluster.serving(topic, running) == {next_near}, 20)
        eventually(lambda: _isr(admin, topic) and near not in _isr(admin, topic), 20)
        resumed = time.monotonic()
        cluster.signal(near, signal.SIGCONT)
        eventually(lambda: near in _isr(admin, topic), 30)
        back_s = _moved_to(reader, near, resumed)
        # Once the leader had stopped naming it, the consumer was not sent back to it.
        assert near not in [b for t, b in reader.moves if stopped < t < resumed], reader.moves
        assert eventually(lambda: cluster.serving(topic, [*running, near]) == {near}, 20)
        print(f"left the stopped follower in {left_s:.2f} s, back {back_s:.2f} s after SIGCONT")
        _finish(feed, reader)
    finally:
        cluster.signal(near, signal.SIGCONT)
        feed.stop_event.set()
        reader.stop_event.set()


def test_a_reassignment_that_moves_the_follower_away_moves_its_consumer(
    cluster: Cluster,
) -> None:
    topic = "moved"
    near, next_near = cluster.by_rack("/dc1/r1"), cluster.by_rack("/dc1/r2")
    leader, spare = cluster.by_rack("/dc2/r1"), cluster.by_rack("/dc2/r2")
    feed, reader = _start(cluster, topic, [leader, near, next_near])
    admin = KafkaAdminClient(bootstrap_servers=cluster.address())
    try:
        eventually(lambda: reader.fetching_from == near, 30)
        started = time.monotonic()
        moves = {KafkaTopicPartition(topic, 0): [leader, spare, next_near]}
        assert admin.alter_partition_reassignments(moves) == dict.fromkeys(moves)
        moved_s = _moved_to(reader, next_near, started)
        everyone = list(cluster.brokers)
        assert eventually(lambda: cluster.serving(topic, everyone) == {next_near}, 20)
        eventually(lambda: dict(admin.list_partition_reassignments()) == {}, 30)
        print(f"left the follower moved away in {moved_s:.2f} s")
        _finish(feed, reader)
    finally:
        feed.stop_event.set()
        reader.stop_event.set()
        admin.close()
