"""``rackwise cluster up`` and ``down`` as a person runs them: real processes. A second ``up``
restarts a broker killed with SIGKILL, on its port and with its data; ``down`` stops all."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from rackwise.cluster.local import is_running
from tests.command_line import rackwise


def _config(directory: Path, node: dict[str, object]) -> Path:
    return directory.resolve() / f"{node['role']}-{node['id']}" / "server.properties"


def test_a_rack_count_unlike_the_broker_count_is_one_line(tmp_path: Path) -> None:
    result = rackwise("cluster", "up", "--brokers", "3", "--racks", "/a,/b", "--dir", str(tmp_path))
    assert result.returncode == 1
    assert result.stderr == (
        "error: --racks names 2 racks but --brokers is 3: give one rack per broker\n"
    )


def test_a_typo_writes_nothing_and_the_corrected_command_is_not_refused(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    typo = rackwise(
        "cluster", "up", "--brokers", "1", "--placer", "multilevel", "--dir", str(directory)
    )
    assert typo.returncode == 1
    assert typo.stderr.startswith(
        "error: --placer multilevel: Unknown replica placer 'multilevel': expected one of "
    )
    assert not directory.exists()
    rack = rackwise(
        "cluster", "up", "--brokers", "1", "--racks", "dc1//r1", "--dir", str(directory)
    )
    assert rack.stderr == (
        "error: --racks: broker 1's rack 'dc1//r1' is not a path: empty component (a doubled "
        "or trailing '/')\n"
    )
    assert not directory.exists()


def test_up_restarts_a_killed_broker_and_down_stops_all(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    first = rackwise(
        "cluster", "up", "--brokers", "2", "--racks", "/dc1/r1,/dc2/r1", "--dir", str(directory)
    )
    try:
        assert first.returncode == 0, first.stderr
        assert "brokers registered and unfenced: 2/2" in first.stderr
        assert "bootstrap servers: 127.0.0.1:" in first.stdout
        nodes = json.loads((directory / "cluster.json").read_text())["nodes"]
        assert [(n["id"], n["role"], n["rack"]) for n in nodes] == [
            (3000, "controller", None),
            (1, "broker", "/dc1/r1"),
            (2, "broker", "/dc2/r1"),
        ]
        assert all(is_running(n["pid"], _config(directory, n)) for n in nodes)
        assert (directory / "broker-2" / "server.log").stat().st_size > 0

        victim = nodes[2]
        os.kill(victim["pid"], signal.SIGKILL)
        second = rackwise("cluster", "up", "--dir", str(directory), "--json")
        assert second.returncode == 0, second.stderr
        again = json.loads(second.stdout)["nodes"]
        assert [n["port"] for n in again] == [n["port"] for n in nodes]
        assert [n["pid"] for n in again[:2]] == [n["pid"] for n in nodes[:2]]
        assert again[2]["pid"] != victim["pid"]
        assert is_running(again[2]["pid"], _config(directory, again[2]))
    finally:
        down = rackwise("cluster", "down", "--dir", str(directory))
    assert down.returncode == 0, down.stderr
    assert down.stdout.splitlines() == [  # in the order they were stopped
        f"broker-1 (pid {again[1]['pid']}): stopped",
        f"broker-2 (pid {again[2]['pid']}): stopped",
        f"controller-3000 (pid {again[0]['pid']}): stopped",
    ]
    assert not any(is_running(n["pid"], _config(directory, n)) for n in again)
    recorded = json.loads((directory / "cluster.json").read_text())["nodes"]
    assert [n["pid"] for n in recorded] == [None, None, None]
