"""Consumer groups on a live cluster, with real librdkafka members (confluent-kafka) on
127.0.0.1 against a rackwise cluster of three brokers this module starts:

  rebalance   how long a group of ``--consumers`` members over ``--partitions`` partitions
              takes to become stable after one more member joins, for the classic protocol
              with eager ``range`` and with ``cooperative-sticky``, and for KIP-848's
              (``group.protocol=consumer``, the broker's default assignor ``uniform``); each
              client and broker with its defaults (classic heartbeats every 3 s,
              ``group.consumer.heartbeat.interval.ms`` 5 s), as Kafka compares them
  commits     offset commits per second on one coordinator: ``--committers`` groups whose
              ``__consumer_offsets`` partition is the same, each committing one offset at a
              time (acks from the in-sync replicas), against the same groups spread over every
              coordinator (the peer: the ratio shows what one coordinator costs)
  failover    how long a group of three members takes to resume after ``kill -9`` of its
              coordinator's broker, for the classic protocol (``cooperative-sticky``) and
              KIP-848's, while a producer writes on (``__consumer_offsets`` and the topic at
              replication factor 3)

Stable, precisely: the members' assignments as librdkafka reports them
(``Consumer.assignment()``, read by each member's thread after each poll, 50 ms at most apart,
sampled every 20 ms), taken together, cover every partition exactly once, and each member
holds floor(P/N) or ceil(P/N) of them. So the joiner has its share and
no member still holds a partition it must give up (under KIP-848 a partition being revoked
stays its owner's until it says so; under eager, every member holds nothing meanwhile). The
time runs from the joiner's ``subscribe``.

Resumed, precisely: every partition has delivered to the group a record produced after the
kill, and a member's commit has been accepted by the new coordinator. The time runs from the
kill; it includes the controller fencing the dead broker and moving its leaders (the
``broker.session.timeout.ms`` of the cluster), which the consumers wait for like the producer.

    .venv/bin/python bench/groups.py --live [--consumers 100] [--partitions 1000]
        [--committers 8] [--seconds 5] [--json]
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from data_path import BenchCluster, create_topic, rackwise
from rackwise.groups.offsets import partition_for

OFFSETS_PARTITIONS = 12
PROTOCOLS: dict[str, dict[str, str]] = {
    "classic eager (range)": {
        "group.protocol": "classic",
        "partition.assignment.strategy": "range",
    },
    "classic cooperative-sticky": {
        "group.protocol": "classic",
        "partition.assignment.strategy": "cooperative-sticky",
    },
    "KIP-848 (consumer, uniform)": {"group.protocol": "consumer"},
}


def progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class Members:
    """The members of one group, each polled by a thread of its own."""

    def __init__(self, bootstrap: str, group: str, topic: str, conf: dict[str, str]) -> None:
        self.conf = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": "false",
            "auto.offset.reset": "earliest",
            "log_level": 2,  # the failover's refused connections are expected
            **conf,
        }
        self.topic = topic
        self.consumers: list[Consumer] = []
        self._assigned: list[set[int]] = []
        """Each member's assignment, as its own thread last read it (librdkafka's
        ``assignment()`` called from another thread than the poller's can wait forever)."""
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()
        self.on_message: Callable[[Consumer, Any], None] | None = None

    def add(self) -> Consumer:
        consumer = Consumer(self.conf)
        consumer.subscribe([self.topic])
        self.consumers.append(consumer)
        self._assigned.append(set())
        index = len(self._assigned) - 1
        thread = threading.Thread(target=self._poll, args=(consumer, index), daemon=True)
        thread.start()
        self._threads.append(thread)
        return consumer

    def _poll(self, consumer: Consumer, index: int) -> None:
        while not self._stop.is_set():
            message = consumer.poll(0.05)
            self._assigned[index] = {tp.partition for tp in consumer.assignment()}
            if message is not None and not message.error() and self.on_message is not None:
                self.on_message(consumer, message)
        consumer.close()

    def assignments(self) -> list[set[int]]:
        return list(self._assigned)

    def close(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(60)


def is_stable(assignments: list[set[int]], partitions: int) -> bool:
    """The module docstring's "stable"."""
    if not assignments:
        return False
    low, high = partitions // len(assignments), -(-partitions // len(assignments))
    seen: set[int] = set()
    for mine in assignments:
        if not low <= len(mine) <= high or seen & mine:
            return False
        seen |= mine
    return len(seen) == partitions


def wait_stable(members: Members, partitions: int, timeout_s: float) -> float:
    """Seconds until the group is stable (raises after ``timeout_s``)."""
    start = time.monotonic()
    while time.monotonic() - start < timeout_s:
        if is_stable(members.assignments(), partitions):
            return time.monotonic() - start
        time.sleep(0.02)
    raise SystemExit(f"group {members.conf['group.id']} not stable after {timeout_s:.0f} s")


def rebalance(cluster: BenchCluster, topic: str, consumers: int, partitions: int) -> list[dict]:
    rows = []
    for name, conf in PROTOCOLS.items():
        members = Members(cluster.bootstrap, f"bench-{uuid.uuid4().hex[:8]}", topic, conf)
        try:
            progress(f"rebalance, {name}: {consumers} members joining...")
            for _ in range(consumers):
                members.add()
            formed = wait_stable(members, partitions, 600)
            progress(f"rebalance, {name}: formed in {formed:.1f} s; one more joins")
            members.add()
            seconds = wait_stable(members, partitions, 300)
            progress(f"rebalance, {name}: stable {seconds:.2f} s after the join")
            rows.append(
                {"protocol": name, "seconds": round(seconds, 2), "formed_s": round(formed, 1)}
            )
        finally:
            members.close()
    return rows


def _groups_on(partition: int | None, count: int) -> list[str]:
    """``count`` group ids, all on ``__consumer_offsets`` partition ``partition`` (None: each
    on another)."""
    out: list[str] = []
    used: set[int] = set()
    while len(out) < count:
        group = f"commits-{uuid.uuid4().hex[:10]}"
        p = partition_for(group, OFFSETS_PARTITIONS)
        if (partition is None and p not in used) or p == partition:
            out.append(group)
            used.add(p)
    return out


def _commit_rate(bootstrap: str, topic: str, groups: list[str], seconds: float) -> float:
    counts = [0] * len(groups)
    stop = threading.Event()

    def commit(i: int) -> None:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": groups[i]})
        offset = 0
        try:
            consumer.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)
            ready.wait()
            while not stop.is_set():
                offset += 1
                consumer.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
                counts[i] += 1
        finally:
            consumer.close()

    ready = threading.Event()
    threads = [threading.Thread(target=commit, args=(i,)) for i in range(len(groups))]
    for t in threads:
        t.start()
    time.sleep(3)  # every group found its coordinator and committed once
    ready.set()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join(60)
    return sum(counts) / seconds


def commits(cluster: BenchCluster, topic: str, committers: int, seconds: float) -> dict:
    progress(f"commits: {committers} groups on one coordinator partition, then spread...")
    one = _commit_rate(cluster.bootstrap, topic, _groups_on(0, committers), seconds)
    spread = _commit_rate(cluster.bootstrap, topic, _groups_on(None, committers), seconds)
    return {
        "committers": committers,
        "one_coordinator_per_s": round(one),
        "spread_per_s": round(spread),
        "one_vs_spread": round(one / spread, 2) if spread else None,
    }


@contextmanager
def producing(bootstrap: str, topic: str) -> Iterator[None]:
    """A producer writing its send time into every record, every 5 ms, for the block."""
    stop = threading.Event()

    def run() -> None:
        producer = Producer(
            {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "log_level": 2}
        )
        while not stop.is_set():
            producer.produce(topic, value=repr(time.time()).encode())
            producer.poll(0.005)
        producer.flush(30)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(60)


def _coordinator(bootstrap: str, group: str) -> int:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            (future,) = admin.describe_consumer_groups([group]).values()
            return int(future.result(10).coordinator.id)
        except KafkaException:
            time.sleep(0.5)
    raise SystemExit(f"no coordinator for {group}")


def _kill(cluster: BenchCluster, broker_id: int) -> None:
    state = json.loads((cluster.directory / "cluster.json").read_text())
    (pid,) = [int(n["pid"]) for n in state["nodes"] if int(n["id"]) == broker_id]
    os.kill(pid, signal.SIGKILL)


def _resume_once(cluster: BenchCluster, topic: str, partitions: int, conf: dict[str, str]) -> float:
    group = f"failover-{uuid.uuid4().hex[:8]}"
    members = Members(cluster.bootstrap, group, topic, conf)
    killed_at = [float("inf")]
    fresh: set[int] = set()
    committed = threading.Event()

    def on_message(consumer: Consumer, message: Any) -> None:
        if float(message.value()) > killed_at[0]:
            fresh.add(message.partition())
            if not committed.is_set():
                try:
                    consumer.commit(message=message, asynchronous=False)
                    committed.set()
                except KafkaException:
                    pass

    members.on_message = on_message
    try:
        with producing(cluster.bootstrap, topic):
            for _ in range(3):
                members.add()
            wait_stable(members, partitions, 120)
            time.sleep(1)
            coordinator = _coordinator(cluster.bootstrap, group)
            killed_at[0] = time.time()
            _kill(cluster, coordinator)
            while len(fresh) < partitions or not committed.is_set():
                if time.time() - killed_at[0] > 120:
                    raise SystemExit(f"{group} did not resume within 120 s")
                time.sleep(0.01)
            seconds = time.time() - killed_at[0]
    finally:
        members.close()
        up = rackwise("cluster", "up", "--dir", str(cluster.directory), "--json")
        if up.returncode != 0:
            raise SystemExit(f"restarting the killed broker failed: {up.stderr.strip()}")
    return seconds


def failover(cluster: BenchCluster) -> list[dict]:
    topic = f"failover-{uuid.uuid4().hex[:6]}"
    create_topic(cluster.bootstrap, topic, 6, 3)
    rows = []
    for name in ("classic cooperative-sticky", "KIP-848 (consumer, uniform)"):
        progress(f"failover, {name}: kill -9 of the coordinator's broker...")
        seconds = _resume_once(cluster, topic, 6, PROTOCOLS[name])
        progress(f"failover, {name}: resumed in {seconds:.1f} s")
        rows.append({"protocol": name, "seconds": round(seconds, 1)})
    return rows


def run_live(consumers: int, partitions: int, committers: int, seconds: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-groups-") as work:
        progress("starting a cluster of three brokers...")
        cluster = BenchCluster(
            Path(work) / "cluster", 3, f"offsets.topic.num.partitions={OFFSETS_PARTITIONS}",
            "offsets.topic.replication.factor=3",
        )  # fmt: skip
        try:
            topic = f"groups-{uuid.uuid4().hex[:6]}"
            progress(f"creating {topic} with {partitions} partitions...")
            create_topic(cluster.bootstrap, topic, partitions, 1)
            return {
                "cores": os.cpu_count(),
                "consumers": consumers,
                "partitions": partitions,
                "rebalance": rebalance(cluster, topic, consumers, partitions),
                "commits": commits(cluster, topic, committers, seconds),
                "failover": failover(cluster),
            }
        finally:
            cluster.down()


def print_live(results: dict) -> None:
    print(f"\nmachine: {results['cores']} cores; real librdkafka members on 127.0.0.1")
    print(
        f"\nstable after one member joins a group of {results['consumers']} over "
        f"{results['partitions']:,} partitions"
    )
    rows = results["rebalance"]
    kip848 = rows[-1]["seconds"]
    print(f"{'protocol':>30} {'seconds':>8} {'x KIP-848':>9}")
    for r in rows:
        print(f"{r['protocol']:>30} {r['seconds']:>8.2f} {r['seconds'] / max(kip848, 1e-9):>9.1f}")
    c = results["commits"]
    print(
        f"\noffset commits per second, {c['committers']} groups: one coordinator "
        f"{c['one_coordinator_per_s']:,}, spread {c['spread_per_s']:,} "
        f"(one/spread {c['one_vs_spread']})"
    )
    print("\nresumed after kill -9 of the coordinator's broker")
    for r in results["failover"]:
        print(f"{r['protocol']:>30} {r['seconds']:>8.1f} s")
