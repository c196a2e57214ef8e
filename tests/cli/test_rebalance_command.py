"""``rackwise rebalance`` against a running cluster (four brokers in two data centres of two
racks, two log directories each) whose topics are placed badly on purpose and hold data: a dry
run changes nothing; ``--execute`` with a throttle brings every partition to its target and the
second audit finds nothing avoidable left; Ctrl-C in the middle leaves no reassignment in
flight, no throttle, and each partition on its original or target replicas with a leader (and
SIGTERM the same, with 143); a rerun after the executor was killed adopts the moves it left in
flight; and ``--cancel`` cancels them instead."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource

from tests.command_line import rackwise
from tests.interop.conftest import eventually

RACKS = ("/dc1/r1", "/dc1/r2", "/dc2/r1", "/dc2/r2")
THROTTLE_KEYS = (
    "leader.replication.throttled.rate",
    "follower.replication.throttled.rate",
    "leader.replication.throttled.replicas",
    "follower.replication.throttled.replicas",
)


@dataclass
class Cluster:
    bootstrap: str
    admin: AdminClient


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    directory = tmp_path_factory.mktemp("rebalance")
    up = rackwise(
        "cluster", "up", "--brokers", "4", "--racks", ",".join(RACKS), "--log-dirs", "2",
        "--dir", str(directory), "--json",
    )  # fmt: skip
    try:
        assert up.returncode == 0, up.stderr
        nodes = json.loads(up.stdout)["nodes"]
        bootstrap = ",".join(f"{n['host']}:{n['port']}" for n in nodes if n["role"] == "broker")
        yield Cluster(bootstrap, AdminClient({"bootstrap.servers": bootstrap}))
    finally:
        if (directory / "cluster.json").exists():
            rackwise("cluster", "down", "--dir", str(directory))


def skewed(cluster: Cluster, topic: str, assignment: str, records: int) -> None:
    """A topic on the replicas given (both in one data centre), holding ``records`` KiB."""
    done = rackwise(
        "topics", "--bootstrap-server", cluster.bootstrap, "--create", "--topic", topic,
        "--replica-assignment", assignment,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    partitions = len(assignment.split(","))
    for i in range(records):
        producer.produce(topic, value=b"x" * 1024, partition=i % partitions)
        if i % 500 == 0:
            producer.flush(10)
    assert producer.flush(30) == 0


def replicas(cluster: Cluster) -> dict[str, tuple[int, ...]]:
    topics = cluster.admin.list_topics(timeout=10).topics
    return {
        f"{name}-{p.id}": tuple(p.replicas)
        for name, meta in topics.items()
        if not name.startswith("__")
        for p in meta.partitions.values()
    }


def leaders(cluster: Cluster) -> dict[str, tuple[int, tuple[int, ...]]]:
    topics = cluster.admin.list_topics(timeout=10).topics
    return {
        f"{name}-{p.id}": (p.leader, tuple(p.isrs))
        for name, meta in topics.items()
        if not name.startswith("__")
        for p in meta.partitions.values()
    }


def in_flight(cluster: Cluster) -> str:
    done = rackwise("reassign", "--bootstrap-server", cluster.bootstrap, "--list")
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def throttles(cluster: Cluster) -> dict[str, dict[str, str]]:
    """Every throttle config set on a topic or a broker, read by another client."""
    names = [("topic", t) for t in cluster.admin.list_topics(timeout=10).topics]
    names += [("broker", str(b)) for b in range(1, 5)]
    out: dict[str, dict[str, str]] = {}
    for kind, name in names:
        (future,) = cluster.admin.describe_configs([ConfigResource(kind, name)]).values()
        entries = future.result(timeout=10).values()
        found = {e.name: e.value for e in entries if e.name in THROTTLE_KEYS and e.value}
        if found:
            out[f"{kind} {name}"] = found
    return out


def rebalance(cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    return rackwise("rebalance", "--bootstrap-server", cluster.bootstrap, *args, timeout=120)


def plan(cluster: Cluster) -> dict[str, tuple[int, ...]]:
    done = rebalance(cluster, "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    return {m["partition"]: tuple(m["replicas"]) for b in doc["batches"] for m in b}


def start(cluster: Cluster, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "rackwise.cli.main", "rebalance", "--bootstrap-server",
         cluster.bootstrap, "--execute", "--poll-ms", "200", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip


def test_a_dry_run_shows_the_plan_and_changes_nothing(cluster: Cluster) -> None:
    skewed(cluster, "dry", "1:2,2:1,1:2", 300)
    before = replicas(cluster)
    done = rebalance(cluster)
    assert done.returncode == 0, done.stderr
    assert "SpreadGoal" in done.stdout and "batch 1: " in done.stdout
    assert "spread_violations" in done.stdout
    doc = json.loads(rebalance(cluster, "--json").stdout)
    assert doc["summary"]["spread_violations_before"] == 3
    assert doc["summary"]["avoidable_spread_violations_after"] == 0
    assert sum(len(b) for b in doc["batches"]) == 3 and doc["refused"] == []
    assert replicas(cluster) == before
    assert in_flight(cluster) == "No partition reassignments found."
    assert throttles(cluster) == {}


def test_execute_moves_the_skewed_placement_to_the_target(cluster: Cluster) -> None:
    targets = plan(cluster)
    done = rebalance(cluster, "--execute", "--throttle", "20000000", "--json",
                     "--concurrency-per-broker", "2")  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["result"]["verified"] == len(targets) and doc["result"]["refused"] == 0
    assert doc["after"]["spread_violations_after"] == 0
    assert doc["after"]["avoidable_spread_violations_after"] == 0
    now = replicas(cluster)
    assert all(now[p] == r for p, r in targets.items())
    assert in_flight(cluster) == "No partition reassignments found."
    assert throttles(cluster) == {}


def _stop(process: subprocess.Popen[str]) -> None:
    """Nothing left running, whatever the test did."""
    if process.poll() is None:
        process.kill()
    process.communicate(timeout=30)


def _wait_in_flight(cluster: Cluster, process: subprocess.Popen[str]) -> None:
    eventually(lambda: in_flight(cluster) != "No partition reassignments found.", timeout_s=60)
    assert process.poll() is None


@pytest.mark.parametrize(
    ("signum", "status", "line"),
    [(signal.SIGINT, 130, "error: interrupted"), (signal.SIGTERM, 143, "error: terminated")],
    ids=["sigint", "sigterm"],
)
def test_a_signal_cancels_what_is_in_flight_and_removes_the_throttles(
    cluster: Cluster, signum: int, status: int, line: str
) -> None:
    if "slow-0" not in replicas(cluster):
        skewed(cluster, "slow", "1:2,2:1", 3000)
    original = replicas(cluster)
    targets = plan(cluster)
    process = start(cluster, "--throttle", "1000")
    try:
        _wait_in_flight(cluster, process)
        process.send_signal(signum)
        out, err = process.communicate(timeout=60)
    finally:
        _stop(process)
    assert process.returncode == status, (out, err)
    assert err.strip().splitlines()[-1] == line
    assert in_flight(cluster) == "No partition reassignments found."
    assert throttles(cluster) == {}
    now = replicas(cluster)
    for name, (leader, isr) in leaders(cluster).items():
        # Kafka's cancel keeps the order of the replicas while moving, less the ones added
        wanted = (set(original[name]), set(targets.get(name, original[name])))
        assert set(now[name]) in wanted
        assert leader in now[name] and leader in isr


def test_a_rerun_after_kill_9_adopts_the_moves_in_flight(cluster: Cluster) -> None:
    targets = plan(cluster)
    process = start(cluster, "--throttle", "1000")
    try:
        _wait_in_flight(cluster, process)
        time.sleep(0.5)  # the batch's reassignments all sent
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=30)
    finally:
        _stop(process)
    listed = in_flight(cluster)
    moving = [line.split(":")[0] for line in listed.splitlines()[1:]]
    assert moving, listed
    done = rebalance(cluster, "--execute", "--throttle", "50000000")
    assert done.returncode == 0, done.stderr
    assert f"adopted {len(moving)} reassignments already in flight" in done.stdout
    now = replicas(cluster)
    assert all(now[p] == r for p, r in targets.items())
    assert in_flight(cluster) == "No partition reassignments found."
    assert throttles(cluster) == {}


def test_cancel_cancels_the_moves_a_killed_run_left(cluster: Cluster) -> None:
    original = replicas(cluster)
    targets = plan(cluster)
    if not targets:
        skewed(cluster, "slow2", "1:2,2:1", 3000)
        original, targets = replicas(cluster), plan(cluster)
    process = start(cluster, "--throttle", "1000")
    try:
        _wait_in_flight(cluster, process)
        time.sleep(0.5)
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=30)
    finally:
        _stop(process)
    moving = in_flight(cluster).splitlines()[1:]
    done = rebalance(cluster, "--cancel")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        f"cancelled {len(moving)} reassignments in flight; throttles removed"
    )
    assert in_flight(cluster) == "No partition reassignments found."
    assert throttles(cluster) == {}
    now = replicas(cluster)
    for name, (leader, isr) in leaders(cluster).items():
        assert set(now[name]) in (set(original[name]), set(targets.get(name, original[name])))
        assert leader in now[name] and leader in isr
