"""Writes acknowledged in two data centres, and leaders pinned to one, on a real cluster: four
brokers on ``/dc1/r1``, ``/dc1/r2``, ``/dc2/r1``, ``/dc2/r2`` and one controller, shared by the
module's tests.

* ``min.insync.racks=2`` with ``min.insync.replicas=2`` at RF 4: the data centre 2 followers
  are stopped (SIGSTOP) one by one under an idempotent acks=all producer; a probe producer
  without retries sees the writes refused (NOT_ENOUGH_REPLICAS) exactly when the ISR is left
  with data centre 1 only, though it still has two members; the segment files of the stopped
  followers, read by ``rackwise dump-log`` while they are stopped, hold every record the
  producer had acknowledged.
* ``leaders.preference=ordered_racks:/dc1,/dc2``: killing a data centre 1 broker moves its
  leaderships to the other one, killing both moves them to data centre 2, and when they come
  back the leaderships return to data centre 1 (the time it takes is printed).
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError as RdKafkaError
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from kafka import KafkaProducer
from kafka.errors import KafkaError

from tests.broker.test_jbod import Ledger, Writer
from tests.interop.conftest import eventually, rackwise

pytestmark = pytest.mark.slow  # five processes, brokers stopped and killed

RACKS = ("/dc1/r1", "/dc1/r2", "/dc2/r1", "/dc2/r2")
PAYLOAD = re.compile(r"\| offset: (\d+) .* payload: (\S+)")


class Cluster:
    def __init__(self, directory: Path, nodes: list[dict[str, Any]]) -> None:
        self.directory = directory
        self.brokers = {n["id"]: n for n in nodes if n["role"] == "broker"}
        self.bootstrap = self.address(self.brokers)
        self.via(list(self.brokers))

    def address(self, brokers: Any) -> str:
        return ",".join(f"{self.brokers[b]['host']}:{self.brokers[b]['port']}" for b in brokers)

    def via(self, brokers: list[int]) -> None:
        """Ask ``brokers`` only for metadata (a stopped broker would stall the question)."""
        self.asked = self.address(brokers)
        self.admin = AdminClient({"bootstrap.servers": self.asked})

    def in_dc(self, dc: str) -> list[int]:
        return sorted(b for b, n in self.brokers.items() if n["rack"].startswith(dc + "/"))

    def partitions(self, topic: str) -> dict[int, Any]:
        """The topic's partitions from Metadata. librdkafka learns every broker from the first
        answer and may send a later question to a stopped one, which accepts the connection
        and never answers; a new client starts again from the brokers in ``via``."""
        for _ in range(2):
            try:
                return self._partitions(topic)
            except KafkaException as e:
                if e.args[0].code() != RdKafkaError._TIMED_OUT:
                    raise
                self.admin = AdminClient({"bootstrap.servers": self.asked})
        return self._partitions(topic)

    def _partitions(self, topic: str) -> dict[int, Any]:
        return dict(self.admin.list_topics(topic, timeout=10).topics[topic].partitions)

    def signal(self, broker: int, signum: int) -> None:
        os.kill(int(self.brokers[broker]["pid"]), signum)

    def create(self, topic: NewTopic) -> None:
        self.admin.create_topics([topic])[topic.topic].result(30)

    def restart(self) -> None:
        again = rackwise("cluster", "up", "--dir", str(self.directory), "--json")
        assert again.returncode == 0, again.stderr
        for node in json.loads(again.stdout)["nodes"]:
            if node["role"] == "broker":
                self.brokers[node["id"]] = node


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    directory = tmp_path_factory.mktemp("domains") / "cluster"
    up = rackwise(
        "cluster", "up", "--dir", str(directory), "--brokers", "4", "--racks", ",".join(RACKS),
        "--controllers", "1", "--placer", "multi-level", "--json",
        "--override", "replica.lag.time.max.ms=2000",
        "--override", "leader.imbalance.check.interval.seconds=1",
    )  # fmt: skip
    assert up.returncode == 0, up.stderr
    try:
        yield Cluster(directory, json.loads(up.stdout)["nodes"])
    finally:
        rackwise("cluster", "down", "--dir", str(directory))


def _probe(cluster: Cluster, topic: str) -> str:
    """One acks=all write with no retries: "ok" or the broker's error name."""
    producer = KafkaProducer(
        bootstrap_servers=cluster.asked, acks="all", retries=0, request_timeout_ms=10_000
    )
    try:
        producer.send(topic, b"probe", partition=0).get(timeout=15)
        return "ok"
    except KafkaError as e:
        return type(e).__name__
    finally:
        producer.close(5)


def _segment_values(cluster: Cluster, broker: int, topic: str) -> dict[int, bytes]:
    """The records in ``broker``'s segment files of ``topic``-0, read by ``rackwise dump-log``
    in its own process (not through any broker)."""
    folder = cluster.directory / f"broker-{broker}" / "data" / f"{topic}-0"
    files = ",".join(str(p) for p in sorted(folder.glob("*.log")))
    dumped = rackwise("dump-log", "--files", files, "--print-data-log")
    assert dumped.returncode == 0, dumped.stderr
    return {int(m[1]): m[2].encode() for m in PAYLOAD.finditer(dumped.stdout)}


def _isr(cluster: Cluster, topic: str) -> list[int]:
    return sorted(cluster.partitions(topic)[0].isrs)


def test_acks_all_writes_need_the_isr_in_two_data_centres(cluster: Cluster) -> None:
    topic = "acked"
    dc1, dc2 = cluster.in_dc("/dc1"), cluster.in_dc("/dc2")
    configs = {"min.insync.replicas": "2", "min.insync.racks": "2"}
    cluster.create(NewTopic(topic, 1, replica_assignment=[[*dc1, *dc2]], config=configs))
    eventually(lambda: _isr(cluster, topic) == sorted(dc1 + dc2), 30)
    resource = ConfigResource("topic", topic)
    described = cluster.admin.describe_configs([resource])[resource].result(10)
    shown = {k: (v.value, v.is_default) for k, v in described.items() if "racks" in k}
    assert shown == {"min.insync.racks": ("2", False), "min.insync.racks.level": ("1", True)}
    ledger = Ledger()
    writer = Writer(cluster.bootstrap, [(topic, 1)], ledger, timeout_ms=120_000)
    writer.start()
    cluster.via(dc1)
    stopped: list[int] = []
    try:
        eventually(lambda: len(ledger.acked) > 100, 30)
        assert _probe(cluster, topic) == "ok"
        for broker in dc2:
            cluster.signal(broker, signal.SIGSTOP)
            stopped.append(broker)
            eventually(lambda b=broker: b not in _isr(cluster, topic), 30)
            in_dc2 = [b for b in _isr(cluster, topic) if b in dc2]
            expected = "ok" if in_dc2 else "NotEnoughReplicasError"
            assert _probe(cluster, topic) == expected, _isr(cluster, topic)
        assert _isr(cluster, topic) == dc1  # two in sync: min.insync.replicas alone would pass
        under = rackwise("topics", "--bootstrap-server", cluster.asked.split(",")[0],
                         "--describe", "--under-min-isr-partitions")  # fmt: skip
        assert under.returncode == 0, under.stderr
        assert re.findall(r"Topic: (\S+)\s+Partition: (\d+)", under.stdout) == [(topic, "0")]
        with ledger.lock:
            acked = {offset: value for (_, _, offset), value in ledger.acked.items()}
        on_dc2: dict[int, bytes] = {}
        for broker in dc2:  # the stopped followers' files, as they are
            on_dc2.update(_segment_values(cluster, broker, topic))
        missing = sorted(set(acked) - set(on_dc2))
        assert not missing, f"{len(missing)} acknowledged records not in dc2, e.g. {missing[:3]}"
        assert all(on_dc2[o][:9] == acked[o][:9] for o in acked)
        on_dc1 = _segment_values(cluster, dc1[0], topic)
        assert set(acked) <= set(on_dc1)
    finally:
        for broker in stopped:
            cluster.signal(broker, signal.SIGCONT)
        writer.stop_event.set()
        writer.join(150)
    eventually(lambda: _isr(cluster, topic) == sorted(dc1 + dc2), 60)
    assert _probe(cluster, topic) == "ok"
    assert ledger.errors == []


def _leaders(cluster: Cluster, topic: str) -> dict[int, int]:
    return {p: m.leader for p, m in cluster.partitions(topic).items()}


def test_pinned_leaders_fail_over_by_preference_and_return(cluster: Cluster) -> None:
    topic = "pinned"
    dc1, dc2 = cluster.in_dc("/dc1"), cluster.in_dc("/dc2")
    config = {"leaders.preference": "ordered_racks:/dc1,/dc2"}
    cluster.create(NewTopic(topic, 4, 3, config=config))
    eventually(lambda: set(_leaders(cluster, topic).values()) <= set(dc1), 30)
    eventually(lambda: all(len(m.isrs) == 3 for m in cluster.partitions(topic).values()), 30)
    counts = {b: list(_leaders(cluster, topic).values()).count(b) for b in dc1}
    first = max(counts, key=lambda b: counts[b])
    other = next(b for b in dc1 if b != first)
    assert counts[first] > 0
    cluster.via(dc2)
    cluster.signal(first, signal.SIGKILL)
    # Each partition with a replica on the other dc1 broker goes to it, the rest to dc2.
    replicas = {p: m.replicas for p, m in cluster.partitions(topic).items()}
    wanted = {p: other if other in r else -2 for p, r in replicas.items()}

    def failed_over() -> bool:
        leaders = _leaders(cluster, topic)
        return all(leaders[p] == w if w > 0 else leaders[p] in dc2 for p, w in wanted.items())

    eventually(failed_over, 30)
    cluster.signal(other, signal.SIGKILL)
    eventually(lambda: set(_leaders(cluster, topic).values()) <= set(dc2), 30)
    started = time.monotonic()
    cluster.restart()
    ready = time.monotonic()
    eventually(lambda: set(_leaders(cluster, topic).values()) <= set(dc1), 60)
    took = time.monotonic() - started
    cluster.via(list(cluster.brokers))
    print(
        f"pinned leadership back in /dc1 {took:.2f} s after the restart began, "
        f"{time.monotonic() - ready:.2f} s after the brokers were ready"
    )
    assert took < 60
