"""A broker's log directories: ``meta.properties`` created on first start, kept after, and a
directory of another node refused; the cluster id clients see without one configured."""

from __future__ import annotations

from pathlib import Path

import pytest

from rackwise.node.meta_properties import (
    BrokerStartupError,
    derived_cluster_id,
    ensure_log_dirs,
    stored_cluster_id,
)
from rackwise.node.properties_file import load_properties
from rackwise.records import parse_kafka_uuid


def test_meta_properties_are_created_once_and_kept(tmp_path: Path) -> None:
    dirs = [tmp_path / "a", tmp_path / "b"]
    first = ensure_log_dirs(dirs, 7, None)
    assert [d.path for d in first] == dirs
    assert len({d.directory_id for d in first}) == 2
    meta = load_properties(dirs[0] / "meta.properties")
    assert (meta["version"], meta["node.id"]) == ("1", "7")
    assert parse_kafka_uuid(meta["directory.id"]) == first[0].directory_id
    assert "cluster.id" not in meta
    assert ensure_log_dirs(dirs, 7, None) == first  # a restart keeps the ids


def test_a_cluster_id_is_recorded_and_checked(tmp_path: Path) -> None:
    dirs = [tmp_path / "a"]
    ensure_log_dirs(dirs, 1, "MkU3OEVBNTcwNTJENDM2Qg")
    assert stored_cluster_id(dirs) == "MkU3OEVBNTcwNTJENDM2Qg"
    with pytest.raises(BrokerStartupError, match=r"Invalid cluster\.id in .*meta\.properties"):
        ensure_log_dirs(dirs, 1, "OtherClusterIdxxxxxxxxx")


def test_another_nodes_directory_is_refused(tmp_path: Path) -> None:
    dirs = [tmp_path / "a"]
    ensure_log_dirs(dirs, 1, None)
    with pytest.raises(
        BrokerStartupError, match="Stored node id 1 doesn't match previous node id 2"
    ):
        ensure_log_dirs(dirs, 2, None)


def test_derived_cluster_id_depends_on_the_controllers_only() -> None:
    one = derived_cluster_id([("127.0.0.1", 9093), ("127.0.0.1", 9094)])
    assert one == derived_cluster_id([("127.0.0.1", 9094), ("127.0.0.1", 9093)])
    assert one != derived_cluster_id([("127.0.0.1", 9095)])
    assert len(one) == 22  # a Kafka uuid string


def test_broker_start_refuses_another_nodes_directory_in_one_line(tmp_path: Path) -> None:
    import subprocess
    import sys

    ensure_log_dirs([tmp_path / "data"], 1, None)
    config = tmp_path / "broker.properties"
    config.write_text(
        "node.id=2\nprocess.roles=broker\nlisteners=PLAINTEXT://127.0.0.1:0\n"
        "controller.listener.names=CONTROLLER\n"
        "controller.quorum.bootstrap.servers=127.0.0.1:1\n"
        f"log.dirs={tmp_path / 'data'}\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "rackwise.cli.main", "broker", "start", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("error: Stored node id 1 doesn't match previous node id 2")
    assert done.stderr.count("\n") == 1
