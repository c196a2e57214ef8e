"""The loop, end to end, on real processes: a stretch cluster of three data centres of two racks,
two log directories a broker, holding a topic placed badly on purpose (two replicas of some
partitions in one data centre, broker 1 holding every partition, broker 1's replicas all in
its first directory); ``rackwise rebalance --execute --throttle`` carries the plan out while an
idempotent acks=all producer and a consumer keep running. Afterwards the live audit finds no
spread violation, a second plan has nothing left to do, no acknowledged record is lost, none is
read twice, and the moves took at least the time the throttle allows. Then the same kind of plan
through ``rackwise pipeline plan --bootstrap-server`` carried out with ``rackwise reassign
--execute`` and ``--verify``."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from tests.command_line import rackwise
from tests.interop.conftest import eventually

RACKS = ("/dc1/r1", "/dc1/r2", "/dc2/r1", "/dc2/r2", "/dc3/r1", "/dc3/r2")
DATA_CENTRE = {broker: RACKS[broker - 1].split("/")[1] for broker in range(1, 7)}
TOPIC = "loop"
SKEWED = "1:2:3,1:2:4,1:3:5,1:4:6,1:5:2,1:6:3"
"""Broker 1 in every partition (twice its share); partitions 0, 1 and 4 twice in /dc1."""
THROTTLE = 1_000_000
FILL_RECORDS = 18_000
"""KiB produced before the move: about 3 MB a partition."""


@dataclass
class Cluster:
    directory: Path
    bootstrap: str
    admin: AdminClient


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    directory = tmp_path_factory.mktemp("loop")
    up = rackwise(
        "cluster", "up", "--brokers", "6", "--racks", ",".join(RACKS), "--log-dirs", "2",
        "--placer", "multi-level", "--dir", str(directory), "--json",
    )  # fmt: skip
    try:
        assert up.returncode == 0, up.stderr
        nodes = json.loads(up.stdout)["nodes"]
        bootstrap = ",".join(f"{n['host']}:{n['port']}" for n in nodes if n["role"] == "broker")
        yield Cluster(directory, bootstrap, AdminClient({"bootstrap.servers": bootstrap}))
    finally:
        if (directory / "cluster.json").exists():
            rackwise("cluster", "down", "--dir", str(directory))


def assignment(cluster: Cluster, topic: str) -> dict[int, tuple[int, ...]]:
    meta = cluster.admin.list_topics(topic, timeout=10).topics[topic]
    return {p.id: tuple(p.replicas) for p in meta.partitions.values()}


def in_sync(cluster: Cluster, topic: str) -> bool:
    meta = cluster.admin.list_topics(topic, timeout=10).topics[topic]
    return all(sorted(p.isrs) == sorted(p.replicas) for p in meta.partitions.values())


def reassign_json(path: Path, moves: dict[int, tuple[tuple[int, ...], tuple[str, ...]]]) -> Path:
    partitions = [
        {"topic": TOPIC, "partition": p, "replicas": list(r), "log_dirs": list(d)}
        for p, (r, d) in sorted(moves.items())
    ]
    path.write_text(json.dumps({"version": 1, "partitions": partitions}))
    return path


def verify_until_done(cluster: Cluster, plan: Path) -> str:
    def done() -> str | None:
        out = rackwise(
            "reassign", "--bootstrap-server", cluster.bootstrap, "--verify",
            "--reassignment-json-file", str(plan),
        )  # fmt: skip
        return out.stdout if "is still in progress" not in out.stdout else None

    return eventually(done, timeout_s=60)


@dataclass
class Traffic:
    """An idempotent acks=all producer of numbered records and a consumer reading them, on
    threads of their own, until stopped."""

    bootstrap: str
    acked: set[int] = field(default_factory=set)
    read: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def produce(self) -> None:
        producer = Producer(
            {"bootstrap.servers": self.bootstrap, "enable.idempotence": True, "acks": "all",
             "linger.ms": 5}
        )  # fmt: skip

        def delivered(error: object, message: object) -> None:
            if error is not None:
                self.errors.append(str(error))
            else:
                self.acked.add(int(message.value()))  # type: ignore[attr-defined]

        number = 0
        while not self.stop.is_set():
            producer.produce(TOPIC, value=str(number).encode(), on_delivery=delivered)
            number += 1
            producer.poll(0.002)
        assert producer.flush(30) == 0

    def consume(self, until: threading.Event) -> None:
        consumer = Consumer(
            {"bootstrap.servers": self.bootstrap, "group.id": "loop", "auto.offset.reset":
             "earliest", "enable.auto.commit": True}
        )  # fmt: skip
        consumer.subscribe([TOPIC])
        try:
            while not until.is_set():
                message = consumer.poll(0.2)
                if message is not None and message.error() is None and message.value():
                    value = message.value()
                    if value.isdigit():  # the numbered records, not the filler
                        self.read.append(int(value))
        finally:
            consumer.close()


def batch_lines(stderr: str) -> list[tuple[int, float]]:
    """``(bytes, seconds)`` of each ``batch N: done, X bytes in T s`` line."""
    found = re.findall(r"batch \d+: done, ([\d,]+) bytes in ([\d.]+) s", stderr)
    return [(int(b.replace(",", "")), float(s)) for b, s in found]


def test_rebalance_under_traffic_fixes_the_placement_and_loses_nothing(cluster: Cluster) -> None:
    made = rackwise(
        "topics", "--bootstrap-server", cluster.bootstrap, "--create", "--topic", TOPIC,
        "--replica-assignment", SKEWED, "--config", "min.insync.replicas=2",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    before = assignment(cluster, TOPIC)
    first_dir = str(cluster.directory / "broker-1" / "data-1")
    crowded = reassign_json(
        cluster.directory / "crowd.json",
        {p: (r, tuple(first_dir if b == 1 else "any" for b in r)) for p, r in before.items()},
    )
    crowd = rackwise(
        "reassign", "--bootstrap-server", cluster.bootstrap, "--execute",
        "--reassignment-json-file", str(crowded),
    )  # fmt: skip
    assert crowd.returncode == 0, crowd.stdout + crowd.stderr
    verify_until_done(cluster, crowded)
    filler = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(FILL_RECORDS):
        filler.produce(TOPIC, value=b"x" * 1024, partition=i % len(before))
        if i % 1000 == 0:
            filler.poll(0)
    assert filler.flush(60) == 0
    audit_before = live_audit(cluster, "audit-before")
    assert audit_before["partitions_with_spread_violations"] == 3

    traffic = Traffic(cluster.bootstrap)
    reading = threading.Event()
    consumer = threading.Thread(target=traffic.consume, args=(reading,), daemon=True)
    producer = threading.Thread(target=traffic.produce, daemon=True)
    consumer.start()
    producer.start()
    started = time.monotonic()
    run = rackwise(
        "rebalance", "--bootstrap-server", cluster.bootstrap, "--strategy", "multi-level",
        "--throttle", str(THROTTLE), "--execute", "--json", timeout=300,
    )  # fmt: skip
    took = time.monotonic() - started
    traffic.stop.set()
    producer.join(60)
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)

    # The placement is fixed, and a second plan has nothing left to do.
    after = assignment(cluster, TOPIC)
    for replicas in after.values():
        assert len({DATA_CENTRE[b] for b in replicas}) == 3, after
    assert max(sum(1 for r in after.values() if b in r) for b in range(1, 7)) <= 4
    assert doc["after"]["spread_violations_before"] == 0
    assert doc["after"]["partitions_changed"] == 0, doc["after"]
    assert live_audit(cluster, "audit-after")["partitions_with_spread_violations"] == 0
    assert doc["result"]["verified"] >= 1

    # The throttle held: no broker sent (as the leader, the first replica here) or received
    # the copies faster than the rate allows; the quota's first window lets about a second's
    # worth through at once.
    sizes = partition_sizes(cluster)
    received: dict[int, int] = {}
    sent: dict[int, int] = {}
    for p, replicas in after.items():
        for broker in set(replicas) - set(before[p]):
            received[broker] = received.get(broker, 0) + sizes[p]
            sent[before[p][0]] = sent.get(before[p][0], 0) + sizes[p]
    ideal_s = max(*received.values(), *sent.values()) / THROTTLE
    batches = batch_lines(run.stderr)
    assert sum(b for b, _ in batches) >= sum(received.values())
    copying_s = sum(s for _, s in batches)
    assert ideal_s >= 5
    assert ideal_s - 1.5 <= copying_s <= took, (copying_s, ideal_s, run.stderr)

    # Nothing acknowledged is lost, nothing is read twice.
    assert not traffic.errors, traffic.errors[:3]
    assert len(traffic.acked) > 100
    eventually(lambda: traffic.acked <= set(traffic.read) or None, timeout_s=60)
    reading.set()
    consumer.join(30)
    assert len(traffic.read) == len(set(traffic.read))
    assert in_sync(cluster, TOPIC)


def test_a_plan_from_pipeline_plan_runs_through_reassign(cluster: Cluster) -> None:
    made = rackwise(
        "topics", "--bootstrap-server", cluster.bootstrap, "--create", "--topic", "again",
        "--replica-assignment", "1:2:3,2:1:4",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    out = cluster.directory / "plan"
    planned = rackwise(
        "pipeline", "plan", "--bootstrap-server", f"lab={cluster.bootstrap}",
        "--strategy", "multi-level", "--out", str(out),
    )  # fmt: skip
    assert planned.returncode == 0, planned.stderr
    plan = out / "lab" / "reassignment.json"
    proposed = json.loads(plan.read_text())["partitions"]
    assert {(p["topic"], p["partition"]) for p in proposed} >= {("again", 0), ("again", 1)}
    executed = rackwise(
        "reassign", "--bootstrap-server", cluster.bootstrap, "--execute",
        "--reassignment-json-file", str(plan), "--throttle", str(THROTTLE),
    )  # fmt: skip
    assert executed.returncode == 0, executed.stdout + executed.stderr
    assert "Successfully started partition reassignment" in executed.stdout
    verified = verify_until_done(cluster, plan)
    assert "Reassignment of partition again-0 is completed." in verified
    assert "Clearing broker-level throttles" in verified
    for replicas in assignment(cluster, "again").values():
        assert len({DATA_CENTRE[b] for b in replicas}) == 3


def live_audit(cluster: Cluster, name: str) -> dict[str, int]:
    out = cluster.directory / name
    audit = rackwise(
        "pipeline", "audit", "--bootstrap-server", f"lab={cluster.bootstrap}", "--out", str(out)
    )
    assert audit.returncode == 0, audit.stderr
    summary: dict[str, int] = json.loads((out / "summary.json").read_text())["clusters"]["lab"]
    return summary


def partition_sizes(cluster: Cluster) -> dict[int, int]:
    """Each partition's largest replica, from ``rackwise log-dirs --describe``."""
    described = rackwise("log-dirs", "--describe", "--bootstrap-server", cluster.bootstrap,
                         "--topic-list", TOPIC)  # fmt: skip
    assert described.returncode == 0, described.stderr
    document = json.loads(described.stdout.splitlines()[-1])
    sizes: dict[int, int] = {}
    for broker in document["brokers"]:
        for directory in broker["logDirs"]:
            for entry in directory["partitions"]:
                index = int(entry["partition"].rsplit("-", 1)[1])
                sizes[index] = max(sizes.get(index, 0), int(entry["size"]))
    return sizes
