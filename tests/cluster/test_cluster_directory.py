"""What ``cluster up`` refuses about the directory it is given, and how it names a node that
could not listen, before or after its process started."""

from __future__ import annotations

from pathlib import Path

import pytest

from rackwise.cluster.local import down, exit_error, up
from rackwise.cluster.plan import ClusterError, NodeState, plan_cluster


def test_a_non_empty_directory_that_is_no_cluster_is_refused(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine\n")
    try:
        with pytest.raises(ClusterError) as refused:
            up(tmp_path, num_brokers=1, timeout_s=60)
    finally:
        if (tmp_path / "cluster.json").exists():
            down(tmp_path)
    assert str(refused.value) == (
        f"{tmp_path} is not empty and holds no rackwise cluster (no cluster.json): give an "
        "empty or new --dir"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_an_empty_or_new_directory_is_taken(tmp_path: Path) -> None:
    # Refused later, by --racks, once the directory passed.
    for directory in (tmp_path, tmp_path / "new"):
        with pytest.raises(ClusterError, match="give one rack per broker"):
            up(directory, num_brokers=2, racks=["/a"])


def test_a_node_that_exits_on_a_port_in_use_is_named_with_its_address(tmp_path: Path) -> None:
    broker = plan_cluster(1, None, [9100, 9101])[1]
    (tmp_path / broker.name).mkdir()
    (tmp_path / broker.name / "server.log").write_text(
        "2026-12-02T02:07:35.639Z INFO broker 1 rackwise.broker.data: loaded 0 partition logs\n"
        "error: [Errno 98] Address already in use\n"
    )
    assert str(exit_error(tmp_path, NodeState(broker, 42))) == (
        "broker-1 (pid 42) exited while starting: its address 127.0.0.1:9101 is already in use "
        f"(see {tmp_path / 'broker-1' / 'server.log'})"
    )
