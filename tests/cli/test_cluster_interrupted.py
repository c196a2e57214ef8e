"""``rackwise cluster up`` stopped part way, as a person stops it: Ctrl-C (SIGINT) or SIGTERM
while it starts the nodes, a port another process holds, a broker that dies at start. Each time
one line and an exit status, and nothing of the cluster left running; ``cluster.json`` still
serves the next ``up`` and ``down``. The module's cluster (one broker, two log directories,
``offsets.topic.replication.factor=3``) is brought up through a Ctrl-C and a SIGTERM; on it, a
changed ``--log-dirs`` is refused and the broker's refused group topic is one warning."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kafka import KafkaConsumer

from rackwise.cluster.local import free_ports, save_states, up
from rackwise.cluster.plan import ClusterError, NodeState, plan_cluster
from rackwise.node.properties_file import load_properties
from tests.command_line import rackwise

OFFSETS_RF = "offsets.topic.replication.factor=3"
REFUSED = (
    "WARNING broker 1 rackwise.broker.auto_create: auto-creation of topic '__consumer_offsets' "
    "refused: INVALID_REPLICATION_FACTOR (error 38): Unable to replicate the partition 3 "
    "time(s): The target replication factor of 3 cannot be reached because only 1 broker(s) "
    "are registered (offsets.topic.replication.factor=3); this can be ignored if the cluster "
    "is starting up and not all brokers are up yet"
)


def _processes_of(directory: Path) -> list[int]:
    """The pids whose command line names a file under ``directory``: every node of its
    cluster, recorded or not."""
    found = []
    inside = str(directory.resolve()).encode() + b"/"
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--config" in argv and any(arg.startswith(inside) for arg in argv):
            found.append(int(entry.name))
    return found


def _recorded_pids(directory: Path) -> list[int | None]:
    try:
        nodes = json.loads((directory / "cluster.json").read_text())["nodes"]
    except (OSError, ValueError):
        return []
    return [n["pid"] for n in nodes]


def _start_up(directory: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rackwise.cli.main",
            "cluster",
            "up",
            "--dir",
            str(directory),
            *args,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def _when(condition: Callable[[], bool], process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while not condition():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "cluster up never got there"
        time.sleep(0.02)


def _error_lines(stderr: str) -> list[str]:
    assert "Traceback" not in stderr, stderr
    return [line for line in stderr.splitlines() if line.startswith("error:")]


@dataclass(frozen=True)
class Stopped:
    """What an interrupted ``cluster up`` left: exit status, error lines, the processes of the
    cluster still running, the pids ``cluster.json`` records."""

    returncode: int
    errors: list[str]
    running: list[int]
    recorded: list[int | None]


@dataclass(frozen=True)
class Cluster:
    directory: Path
    bootstrap: str
    interrupted: Stopped
    terminated: Stopped
    last_up: subprocess.CompletedProcess[str]


def _stop(process: subprocess.Popen[str], signum: int, directory: Path) -> Stopped:
    os.kill(process.pid, signum)
    _, stderr = process.communicate(timeout=60)
    return Stopped(
        process.returncode,
        _error_lines(stderr),
        _processes_of(directory),
        _recorded_pids(directory),
    )


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    directory = tmp_path_factory.mktemp("interrupted") / "c"
    options = ("--brokers", "1", "--log-dirs", "2", "--override", OFFSETS_RF)
    try:
        # SIGINT once the controller is recorded as started; SIGTERM, on the next up, once the
        # broker is too; then an up that runs to its end, with no option: the cluster's own.
        first = _start_up(directory, *options)
        _when(lambda: any(_recorded_pids(directory)), first)
        interrupted = _stop(first, signal.SIGINT, directory)
        second = _start_up(directory)
        _when(lambda: all(_recorded_pids(directory)), second)
        terminated = _stop(second, signal.SIGTERM, directory)
        last_up = rackwise("cluster", "up", "--dir", str(directory), "--json")
        assert last_up.returncode == 0, last_up.stderr
        nodes = json.loads(last_up.stdout)["nodes"]
        bootstrap = ",".join(f"{n['host']}:{n['port']}" for n in nodes if n["role"] == "broker")
        yield Cluster(directory, bootstrap, interrupted, terminated, last_up)
    finally:
        if (directory / "cluster.json").exists():
            rackwise("cluster", "down", "--dir", str(directory))
        for pid in _processes_of(directory):
            os.kill(pid, signal.SIGKILL)


def test_ctrl_c_stops_what_up_started(cluster: Cluster) -> None:
    assert cluster.interrupted == Stopped(
        130,
        ["error: interrupted: stopped controller-3000, started by this cluster up"],
        [],
        [None, None],
    )


def test_sigterm_stops_what_up_started(cluster: Cluster) -> None:
    assert cluster.terminated == Stopped(
        143,
        ["error: terminated: stopped controller-3000 and broker-1, started by this cluster up"],
        [],
        [None, None],
    )


def test_another_log_dir_count_is_refused_and_none_keeps_the_clusters(cluster: Cluster) -> None:
    directory = cluster.directory.resolve()
    log_dirs = load_properties(directory / "broker-1" / "server.properties")["log.dirs"]
    assert log_dirs == f"{directory}/broker-1/data-1,{directory}/broker-1/data-2"
    assert [n["pid"] is not None for n in json.loads(cluster.last_up.stdout)["nodes"]] == [
        True,
        True,
    ]
    refused = rackwise("cluster", "up", "--dir", str(directory), "--log-dirs", "3")
    assert refused.returncode == 1
    assert refused.stderr == (
        f"error: {directory} holds a cluster of 2 log directories per broker, not 3: "
        f"run `rackwise cluster down --dir {directory}` and remove it, or use another --dir\n"
    )


def test_an_offsets_topic_the_broker_cannot_create_is_one_warning(cluster: Cluster) -> None:
    log = cluster.directory / "broker-1" / "server.log"
    consumer = KafkaConsumer("interrupted-t", group_id="g", bootstrap_servers=cluster.bootstrap)
    try:
        deadline = time.monotonic() + 30
        while REFUSED not in log.read_text():
            assert time.monotonic() < deadline, log.read_text()[-2000:]
            consumer.poll(timeout_ms=100)
        # The coordinator asks the controller again every second while the group's
        # FindCoordinator requests go on: two more refusals, not logged again.
        settle = time.monotonic() + 2.2
        while time.monotonic() < settle:
            consumer.poll(timeout_ms=100)
    finally:
        consumer.close(autocommit=False)
    text = log.read_text()
    assert text.count("auto-creation of topic '__consumer_offsets'") == 1, text[-2000:]


def test_ctrl_c_on_a_restart_stops_only_what_that_up_started(cluster: Cluster) -> None:
    """Last of the module's cluster tests: it leaves the broker stopped."""
    controller, broker = json.loads(cluster.last_up.stdout)["nodes"]
    os.kill(broker["pid"], signal.SIGKILL)
    restart = _start_up(cluster.directory)
    _when(lambda: _recorded_pids(cluster.directory)[1] not in (None, broker["pid"]), restart)
    assert _stop(restart, signal.SIGINT, cluster.directory) == Stopped(
        130,
        ["error: interrupted: stopped broker-1, started by this cluster up"],
        [controller["pid"]],
        [controller["pid"], None],
    )


def test_ctrl_c_while_the_command_loads_is_one_line(tmp_path: Path) -> None:
    process = _start_up(tmp_path / "c", "--brokers", "1")
    time.sleep(0.3)  # the interpreter is up; the command's modules take seconds to load
    os.kill(process.pid, signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert len(_error_lines(stderr)) == 1 and _error_lines(stderr)[0].startswith(
        "error: interrupted"
    )
    assert _processes_of(tmp_path / "c") == []


def test_a_port_in_use_names_the_node_and_address_and_starts_nothing(tmp_path: Path) -> None:
    nodes = plan_cluster(2, None, free_ports(3))
    save_states(tmp_path, [NodeState(n, None) for n in nodes])
    try:
        with socket.socket() as held:
            held.bind(("127.0.0.1", nodes[2].port))
            held.listen()
            result = rackwise("cluster", "up", "--dir", str(tmp_path))
        assert result.returncode == 1
        assert result.stderr == (
            f"error: broker-2 cannot listen on 127.0.0.1:{nodes[2].port}: the address is "
            "already in use; free it\n"
        )
        assert _processes_of(tmp_path) == []
    finally:
        for pid in _processes_of(tmp_path):
            os.kill(pid, signal.SIGKILL)


def test_a_broker_that_dies_at_start_stops_the_rest(tmp_path: Path) -> None:
    nodes = plan_cluster(2, None, free_ports(3))
    save_states(tmp_path, [NodeState(n, None) for n in nodes])
    (tmp_path / "broker-1").mkdir()
    (tmp_path / "broker-1" / "server.properties").write_text("node.id=x\n")  # refused at start
    try:
        with pytest.raises(ClusterError) as refused:
            up(tmp_path, num_brokers=None, timeout_s=60)
        assert str(refused.value).startswith("broker-1 (pid ")
        assert str(refused.value).endswith(
            "; stopped controller-3000 and broker-2, started by this cluster up"
        )
        assert _processes_of(tmp_path) == []
        assert _recorded_pids(tmp_path) == [None, None, None]
    finally:
        for pid in _processes_of(tmp_path):
            os.kill(pid, signal.SIGKILL)
