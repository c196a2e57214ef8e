"""``rackwise cluster up --controllers 3``: a controller per data centre, brokers that follow the
leader, and ``rackwise metadata-quorum`` against it."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from rackwise.cluster.local import down, up
from rackwise.cluster.plan import controller_data_centres, node_properties, plan_cluster
from rackwise.node.config import NodeConfig
from tests.command_line import rackwise

RACKS = ["/dc1/r1", "/dc1/r2", "/dc2/r1", "/dc3/r1"]


def test_one_controller_per_data_centre_and_every_node_knows_them_all(tmp_path: Path) -> None:
    assert controller_data_centres(RACKS, 3) == ["/dc1", "/dc2", "/dc3"]
    assert controller_data_centres(RACKS, 5) == ["/dc1", "/dc2", "/dc3", "/dc1", "/dc2"]
    assert controller_data_centres(None, 3) == [None, None, None]
    assert controller_data_centres(RACKS, 1) == [None]
    nodes = plan_cluster(4, RACKS, list(range(9000, 9007)), num_controllers=3)
    controllers = [n for n in nodes if n.role == "controller"]
    assert [(c.id, c.port, c.rack) for c in controllers] == [
        (3000, 9000, "/dc1"),
        (3001, 9001, "/dc2"),
        (3002, 9002, "/dc3"),
    ]
    assert [(b.id, b.port) for b in nodes if b.role == "broker"] == [
        (1, 9003),
        (2, 9004),
        (3, 9005),
        (4, 9006),
    ]
    voters = "3000@127.0.0.1:9000,3001@127.0.0.1:9001,3002@127.0.0.1:9002"
    props = node_properties(controllers[1], controllers, tmp_path / "c", None)
    assert props["controller.quorum.voters"] == voters
    assert NodeConfig.from_properties(props).voter_ids == {3000, 3001, 3002}
    broker = node_properties(nodes[3], controllers, tmp_path / "b", None)
    assert broker["controller.quorum.bootstrap.servers"] == (
        "127.0.0.1:9000,127.0.0.1:9001,127.0.0.1:9002"
    )


def rackwise_ok(*args: str) -> str:
    """``rackwise *args``'s standard output, once it exited 0."""
    done = rackwise(*args, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.slow(reason="a cluster of 6 processes, a leader killed: about 20 s")
def test_a_stretch_cluster_survives_its_leading_controller(tmp_path: Path) -> None:
    racks = ["/dc1/r1", "/dc2/r1", "/dc3/r1"]
    states = up(tmp_path, num_brokers=3, racks=racks, num_controllers=3, timeout_s=90)
    try:
        bootstrap = ",".join(s.spec.address for s in states if s.spec.role == "broker")
        status = rackwise_ok(
            "metadata-quorum", "--bootstrap-server", bootstrap, "describe", "--status"
        )
        leader = int(status.split("LeaderId:")[1].split()[0])
        assert leader in (3000, 3001, 3002)
        assert status.count('"endpoints": ["CONTROLLER://127.0.0.1:') == 3
        rackwise_ok(
            "topics",
            "--bootstrap-server",
            bootstrap,
            "--create",
            "--topic",
            "before",
            "--partitions",
            "3",
            "--replication-factor",
            "3",
        )
        pid = next(s.pid for s in states if s.spec.id == leader)
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        started = time.monotonic()
        rackwise_ok(
            "topics",
            "--bootstrap-server",
            bootstrap,
            "--create",
            "--topic",
            "after",
            "--partitions",
            "3",
            "--replication-factor",
            "3",
        )
        assert time.monotonic() - started < 15
        assert rackwise_ok("topics", "--bootstrap-server", bootstrap, "--list").split() == [
            "after",
            "before",
        ]
        table = rackwise_ok(
            "metadata-quorum", "--bootstrap-server", bootstrap, "describe", "--replication"
        )
        lines = table.strip().split("\n")
        assert lines[0].split() == [
            "NodeId",
            "DirectoryId",
            "LogEndOffset",
            "Lag",
            "LastFetchTimestamp",
            "LastCaughtUpTimestamp",
            "Status",
        ]
        assert lines[1].split()[-1] == "Leader" and int(lines[1].split()[0]) != leader
    finally:
        down(tmp_path, grace_s=5)
