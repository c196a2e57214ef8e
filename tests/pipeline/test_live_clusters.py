"""``rackwise pipeline audit|plan --bootstrap-server`` against a running cluster (three brokers
in two data centres, two log directories each, shared by the module): the same findings and
the same plan as the same cluster described in files written independently of the reader (the
broker list from what the cluster was started with, the assignment from what was created, the
directories and sizes from ``rackwise log-dirs``); a listing of clusters; a move in flight; a
dead bootstrap address. The in-process engine runs here; Spark reads the same rows in
``tests/pipeline/ingest/test_live_spark.py``."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from rackwise.client.cluster_state import ClusterStateError, read_cluster
from rackwise.net import KafkaConnection
from rackwise.protocol import ApiKey
from tests.broker.test_broker_processes import eventually
from tests.command_line import rackwise, running_cluster
from tests.processes import free_ports, run

RACKS = ("/dc1/r1", "/dc1/r2", "/dc2/r1")
TOPICS = {
    # both replicas of orders-0 and orders-1 in /dc1: spread violations a plan fixes
    "orders": [[1, 2], [2, 1], [1, 3], [3, 2]],
    "audit": [[1, 2, 3], [2, 3, 1]],
}


@dataclass(frozen=True)
class Cluster:
    bootstrap: str
    directory: Path
    files: list[str]
    """The cluster in files: ``--brokers``, ``--assignment`` and ``--log-dirs`` arguments."""


async def _admin(bootstrap: str, api_key: int, **values: Any) -> Any:
    host, port = bootstrap.split(",", maxsplit=1)[0].rsplit(":", 1)
    connection = await KafkaConnection.connect(host, int(port), timeout_s=10)
    try:
        await connection.negotiate_versions(timeout_s=10)
        return await connection.request(api_key, **values)
    finally:
        await connection.close()


def _create(bootstrap: str, name: str, assignment: list[list[int]]) -> None:
    topic = {
        "name": name,
        "num_partitions": -1,
        "replication_factor": -1,
        "assignments": [{"partition_index": i, "broker_ids": b} for i, b in enumerate(assignment)],
        "configs": [{"name": "min.insync.replicas", "value": "2"}],
    }
    answer = run(_admin(bootstrap, ApiKey.CREATE_TOPICS, topics=[topic], timeout=30000,
                        validate_only=False))  # fmt: skip
    assert [int(t.error_code) for t in answer.topics] == [0], answer


def _produce(bootstrap: str) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(400):
        producer.produce("orders", b"x" * 500, partition=i % 4)
    assert producer.flush(30) == 0


def _settled(bootstrap: str) -> bool:
    """Every replica of every partition holds the same bytes, and is in sync."""
    taken = read_cluster(bootstrap)
    return all(
        len(set(p.size_bytes.values())) == 1 and len(p.isr) == len(p.replicas)
        for p in taken.partitions.values()
    )


def _write_files(directory: Path, bootstrap: str, out: Path) -> list[str]:
    total = {}
    brokers = []
    for broker, rack in enumerate(RACKS, 1):
        paths = [str(directory / f"broker-{broker}" / f"data-{d}") for d in (1, 2)]
        for path in paths:
            stats = os.statvfs(path)
            total[path] = stats.f_blocks * stats.f_frsize
        dirs = [{"path": p, "total_bytes": total[p]} for p in paths]
        brokers.append({"id": broker, "rack": rack, "log_dirs": dirs})
    partitions = [
        {"topic": topic, "partition": i, "replicas": replicas}
        for topic, assignment in TOPICS.items()
        for i, replicas in enumerate(assignment)
    ]
    (out / "brokers.json").write_text(json.dumps(brokers))
    (out / "assignment.json").write_text(json.dumps({"version": 1, "partitions": partitions}))
    described = rackwise("log-dirs", "--describe", "--bootstrap-server", bootstrap)
    assert described.returncode == 0, described.stderr
    (out / "log-dirs.txt").write_text(described.stdout)
    return ["--brokers", str(out / "brokers.json"), "--assignment", str(out / "assignment.json"),
            "--log-dirs", str(out / "log-dirs.txt")]  # fmt: skip


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    directory = tmp_path_factory.mktemp("live")
    racks = ",".join(RACKS)
    with running_cluster(
        directory, "--brokers", "3", "--racks", racks, "--log-dirs", "2"
    ) as servers:
        for name, assignment in TOPICS.items():
            _create(servers, name, assignment)
        _produce(servers)
        eventually(lambda: _settled(servers), timeout_s=30, every_s=0.2)
        files = _write_files(directory, servers, tmp_path_factory.mktemp("files"))
        yield Cluster(servers, directory, files)


def _pipeline(*args: str) -> tuple[dict[str, Any], str]:
    result = rackwise("pipeline", *args, "--format", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout), result.stderr


def _untimed(value: Any) -> Any:
    """``value`` without its wall times."""
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if not k.endswith(("_ms", "_s"))}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def test_audit_finds_what_it_finds_in_the_clusters_files(cluster: Cluster, tmp_path: Path) -> None:
    files, _ = _pipeline(
        "audit", *cluster.files, "--cluster-id", "lab", "--out", str(tmp_path / "f")
    )
    live, live_err = _pipeline(
        "audit", "--bootstrap-server", f"lab={cluster.bootstrap}", "--out", str(tmp_path / "l")
    )
    assert live == files
    assert live["clusters"]["lab"]["partitions_with_spread_violations"] == 2
    assert live["clusters"]["lab"]["skew"]["broker"]["bytes"]["max"] > 0
    first = live_err.splitlines()[0]
    assert first.startswith(f"read lab from {cluster.bootstrap}: 3 brokers, 6 partitions, 6 log ")
    assert [line.split(":")[0] for line in live_err.splitlines()[1:3]] == ["engine", "ingest"]


def test_plan_is_the_plan_of_the_clusters_files(cluster: Cluster, tmp_path: Path) -> None:
    files, _ = _pipeline(
        "plan", *cluster.files, "--cluster-id", "lab", "--out", str(tmp_path / "f")
    )
    live, _ = _pipeline(
        "plan", "--bootstrap-server", f"lab={cluster.bootstrap}", "--out", str(tmp_path / "l")
    )
    assert _untimed(live) == _untimed(files)
    plan = (tmp_path / "l" / "lab" / "reassignment.json").read_text()
    assert plan == (tmp_path / "f" / "lab" / "reassignment.json").read_text()
    assert json.loads(plan)["partitions"], "the skewed placement needs moves"


def test_a_listing_of_clusters_and_the_clusters_own_id(cluster: Cluster, tmp_path: Path) -> None:
    listing = tmp_path / "clusters.txt"
    listing.write_text(f"# the lab twice, under two names\nlab={cluster.bootstrap}\n")
    config = tmp_path / "admin.properties"
    config.write_text("client.id=fleet-audit\nrequest.timeout.ms=10000\n")
    summary, err = _pipeline(
        "audit", "--bootstrap-servers-file", str(listing), "--bootstrap-server",
        cluster.bootstrap, "--command-config", str(config), "--out", str(tmp_path / "o"),
    )  # fmt: skip
    own_id = read_cluster(cluster.bootstrap).cluster_id
    assert sorted(summary["clusters"]) == sorted(["lab", own_id])
    assert summary["clusters"]["lab"] == summary["clusters"][own_id]
    assert [line.split(" from ")[0] for line in err.splitlines()[:2]] == [
        f"read {own_id}",
        "read lab",
    ]


def test_a_dead_bootstrap_address_is_one_line(tmp_path: Path) -> None:
    (port,) = free_ports(1)
    out = tmp_path / "out"
    result = rackwise(
        "pipeline", "plan", "--bootstrap-server", f"127.0.0.1:{port}", "--out", str(out)
    )
    assert result.returncode == 1
    assert result.stderr == (
        f"error: cluster 127.0.0.1:{port}: DescribeCluster failed: Connection to "
        f"127.0.0.1:{port} refused\n"
    )
    assert result.stdout == "" and not out.exists()


def _fenced(bootstrap: str, broker: int) -> bool:
    """Whether ``broker`` is fenced (False while a read fails: the broker is on its way out,
    still listed but no longer answering)."""
    try:
        return read_cluster(bootstrap, timeout_ms=5000).brokers[broker].fenced
    except ClusterStateError:
        return False


def test_a_move_in_flight_is_read_as_its_target(cluster: Cluster, tmp_path: Path) -> None:
    """Broker 3 stopped, a partition moving onto it stays in flight; last in the module, as
    it leaves broker 3 down."""
    _create(cluster.bootstrap, "moving", [[1, 2]])
    nodes = json.loads((cluster.directory / "cluster.json").read_text())["nodes"]
    (pid,) = [n["pid"] for n in nodes if n["role"] == "broker" and n["id"] == 3]
    os.kill(pid, signal.SIGTERM)
    eventually(lambda: _fenced(cluster.bootstrap, 3), timeout_s=30, every_s=0.2)
    moves = [{"name": "moving", "partitions": [{"partition_index": 0, "replicas": [1, 3]}]}]
    answer = run(_admin(cluster.bootstrap, ApiKey.ALTER_PARTITION_REASSIGNMENTS, timeout=30000,
                        topics=moves))  # fmt: skip
    assert int(answer.error_code) == 0, answer
    taken = read_cluster(cluster.bootstrap)
    (moving,) = taken.reassignments.values()
    assert (moving.replicas, moving.adding, moving.removing) == ((1, 3, 2), (3,), (2,))
    summary, err = _pipeline(
        "audit", "--bootstrap-server", f"lab={cluster.bootstrap}", "--out", str(tmp_path / "o")
    )
    assert ", 1 move in flight (read as their targets)" in err.splitlines()[0]
    # read as its target, the moving partition has its two replicas, not three
    assert summary["clusters"]["lab"]["replicas"] == 2 * 4 + 3 * 2 + 2
