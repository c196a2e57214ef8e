"""A local cluster of real processes: one controller and N brokers on 127.0.0.1, started,
restarted and stopped by ``rackwise cluster up`` and ``rackwise cluster down``.

Goals
    One command gives a developer, a test or ``make run`` a cluster that real Kafka clients can
    talk to, with each node a separate detached process (``rackwise controller start`` or
    ``rackwise broker start --config FILE``) that outlives the command; a second ``up`` on the
    same directory restarts only what is not running, with its data.

Constraints
    * Layout of the cluster directory (default ``./rackwise-cluster``)::

          DIR/cluster.json                the nodes: id, role, pid, host, port, rack
          DIR/controller-3000/server.properties, server.log, metadata/
          DIR/broker-1/server.properties, server.log, data/ (log.dirs)

    * Node ids share one space: brokers are 1..N, in the order of ``--racks``; the controller is
      :data:`~rackwise.cluster.plan.CONTROLLER_ID` (3000), clear of any broker id a local
      cluster will use (Kafka's system tests also number their controllers from 3000 up).
      ``--controllers 3`` (or 5) starts a quorum, 3000, 3001, ..., one in each data centre of
      ``--racks`` (the first level of the rack paths); every node's ``.properties`` names
      them all.
    * Ports are free ports of 127.0.0.1 chosen by the first ``up`` and kept in the
      ``.properties`` files and ``cluster.json``; a node's ``.properties`` file, once written, is
      never rewritten, so a hand edit survives restarts.
    * ``--override KEY=VALUE`` settings go into the ``.properties`` file of every node whose
      role knows the key (:func:`rackwise.node.config.overrides_for_role`): a broker's key to
      the brokers, a controller's to the controller, a common key to both. Every node's file is
      checked as its process would check it before any file is written or process started, so
      an unknown key or a bad value is one error naming it. The keys ``up`` sets per node
      (:data:`~rackwise.cluster.plan.PER_NODE_KEYS`: ids, roles, listeners, paths,
      racks) cannot be overridden. On a restart an override must match what the node's file
      already holds.
    * ``cluster.json`` is written atomically (temporary file, fsync, rename). A pid counts as a
      running node only while that process still runs with that node's config file on its
      command line (``/proc/PID/cmdline``), so a recycled pid is not taken for a node.
    * ``up`` waits until the controller listens and every broker is registered and unfenced
      (DescribeCluster through kafka-python, as any client sees it), and fails with the node and
      its log file when a process exits or the wait times out.
    * ``down`` sends SIGTERM to the brokers, then the controller, and SIGKILL to whatever still
      runs after a grace period.

Worked example
    ``up(Path("c"), num_brokers=3, racks=["/dc1/r1", "/dc1/r2", "/dc2/r1"])`` writes
    ``c/controller-3000/server.properties`` with ``node.id=3000``, ``process.roles=controller``
    and ``listeners=CONTROLLER://127.0.0.1:P0``, and ``c/broker-2/server.properties`` with
    ``node.id=2``, ``broker.rack=/dc1/r2``, ``listeners=PLAINTEXT://127.0.0.1:P2`` and
    ``controller.quorum.bootstrap.servers=127.0.0.1:P0``; it starts the four processes and
    returns once brokers 1, 2 and 3 are unfenced.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import socket
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Final

from rackwise.client.admin import Admin, AdminError
from rackwise.cluster.plan import (
    HOST,
    NOT_RUNNING,
    ClusterError,
    NodeSpec,
    NodeState,
    check_overrides,
    check_up_options,
    cluster_document,
    new_cluster_id,
    node_properties,
    parse_cluster_document,
    plan_cluster,
)
from rackwise.formats.properties import format_properties
from rackwise.node.config import CLUSTER_ID, NodeConfig, overrides_for_role
from rackwise.node.properties_file import load_properties
from rackwise.placement import REPLICA_PLACER_CONFIG

DEFAULT_DIR: Final = "rackwise-cluster"
CLUSTER_FILE: Final = "cluster.json"
PROPERTIES_FILE: Final = "server.properties"
LOG_FILE: Final = "server.log"
DEFAULT_START_TIMEOUT_S: Final = 60.0
DEFAULT_STOP_GRACE_S: Final = 10.0
POLL_INTERVAL_S: Final = 0.1


# -- files -------------------------------------------------------------------------------------


def write_atomically(path: Path, text: str) -> None:
    """Replace ``path`` with ``text``: a temporary file beside it, fsync, rename, fsync dir."""
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def load_states(directory: Path) -> list[NodeState] | None:
    """The nodes recorded in ``DIR/cluster.json``, or None if there is none."""
    path = directory / CLUSTER_FILE
    if not path.exists():
        return None
    return parse_cluster_document(path.read_text(encoding="utf-8"), str(path))


def save_states(directory: Path, states: Sequence[NodeState]) -> None:
    write_atomically(
        directory / CLUSTER_FILE, json.dumps(cluster_document(states), indent=2) + "\n"
    )


def free_ports(count: int, host: str = HOST) -> list[int]:
    """``count`` distinct ports of ``host`` that nothing listens on right now."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


# -- processes ---------------------------------------------------------------------------------


def config_path(directory: Path, node: NodeSpec) -> Path:
    return directory / node.name / PROPERTIES_FILE


def log_path(directory: Path, node: NodeSpec) -> Path:
    return directory / node.name / LOG_FILE


def is_running(pid: int | None, config: Path) -> bool:
    """Whether ``pid`` is a live process started with ``config`` on its command line."""
    if pid is None:
        return False
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reap it if it is our own exited child
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return False
    except OSError:
        return _pid_exists(pid)
    return str(config).encode() in cmdline.split(b"\0")


def _pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError as e:
        return e.errno == errno.EPERM
    return True


def start_node(directory: Path, node: NodeSpec) -> int:
    """Start ``node`` as a detached process (its own session) logging to its ``server.log``."""
    config = config_path(directory, node)
    log = log_path(directory, node)
    with open(log, "a", encoding="utf-8") as f:
        f.write(f"--- rackwise cluster up: starting {node.name} at {time.ctime()} ---\n")
    argv = [sys.executable, "-m", "rackwise.cli.main", node.role, "start", "--config", str(config)]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, str(log), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644),
        (os.POSIX_SPAWN_DUP2, 1, 2),
    ]
    return os.posix_spawn(sys.executable, argv, env, file_actions=actions, setsid=True)


def stop_node(pid: int, config: Path, grace_s: float) -> str:
    """SIGTERM, then SIGKILL if it still runs after ``grace_s``: "stopped" or "killed"."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    if _wait_gone(pid, config, grace_s):
        return "stopped"
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    if _wait_gone(pid, config, 5.0):
        return "killed"
    raise ClusterError(f"process {pid} survived SIGKILL")


def _wait_gone(pid: int, config: Path, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while is_running(pid, config):
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_INTERVAL_S)
    return True


def _listening(node: NodeSpec) -> bool:
    try:
        with socket.create_connection((node.host, node.port), timeout=1.0):
            return True
    except OSError:
        return False


def _died(directory: Path, state: NodeState) -> ClusterError:
    log = log_path(directory, state.spec)
    return ClusterError(
        f"{state.spec.name} (pid {state.pid}) exited while starting: see {log}{_last_line(log)}"
    )


def _last_line(log: Path) -> str:
    try:
        lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return f" (last line: {lines[-1].strip()[:200]})" if lines else ""


def _wait_listening(directory: Path, state: NodeState, deadline: float) -> None:
    config = config_path(directory, state.spec)
    while not _listening(state.spec):
        if not is_running(state.pid, config):
            raise _died(directory, state)
        if time.monotonic() >= deadline:
            raise ClusterError(
                f"{state.spec.name} does not listen on {state.spec.address}: "
                f"see {log_path(directory, state.spec)}"
            )
        time.sleep(POLL_INTERVAL_S)


Progress = Callable[[int, int], None]


def wait_for_brokers(
    directory: Path, states: Sequence[NodeState], deadline: float, progress: Progress
) -> None:
    """Wait until every broker of ``states`` is registered and unfenced, as DescribeCluster
    shows it; report ``(ready, total)`` whenever the count changes."""
    brokers = [s for s in states if s.spec.role == "broker"]
    for state in brokers:
        _wait_listening(directory, state, deadline)
    wanted = {s.spec.id for s in brokers}
    bootstrap = ",".join(s.spec.address for s in brokers)
    last = -1
    admin: Admin | None = None
    try:
        while True:
            for state in states:
                if not is_running(state.pid, config_path(directory, state.spec)):
                    raise _died(directory, state)
            ready: set[int] = set()
            with contextlib.suppress(AdminError):
                if admin is None:
                    admin = Admin(bootstrap, timeout_ms=5000, client_id="rackwise-cluster-up")
                ready = {b.id for b in admin.brokers() if not b.is_fenced} & wanted
            if len(ready) != last:
                last = len(ready)
                progress(last, len(wanted))
            if ready == wanted:
                return
            if time.monotonic() >= deadline:
                missing = min(wanted - ready)
                node = next(s.spec for s in brokers if s.spec.id == missing)
                raise ClusterError(
                    f"{len(ready)} of {len(wanted)} brokers registered and unfenced in time; "
                    f"{node.name} is not: see {log_path(directory, node)}"
                )
            time.sleep(POLL_INTERVAL_S * 2)
    finally:
        if admin is not None:
            admin.close()


# -- up and down -------------------------------------------------------------------------------


def _plan_or_reuse(
    directory: Path,
    num_brokers: int | None,
    racks: Sequence[str] | None,
    num_controllers: int | None = None,
) -> list[NodeState]:
    recorded = load_states(directory)
    if recorded is None:
        if num_brokers is None:
            raise ClusterError(f"{directory} holds no cluster yet: give --brokers N")
        count = num_controllers or 1
        ports = free_ports(num_brokers + count)
        specs = plan_cluster(num_brokers, racks, ports, num_controllers=count)
        return [NodeState(spec, NOT_RUNNING) for spec in specs]
    held = sum(s.spec.role == "controller" for s in recorded)
    if num_controllers is not None and num_controllers != held:
        raise ClusterError(
            f"{directory} holds a cluster of {held} controllers, not {num_controllers}: "
            f"run `rackwise cluster down --dir {directory}` and remove it, or use another --dir"
        )
    brokers = [s.spec for s in recorded if s.spec.role == "broker"]
    if num_brokers is not None and num_brokers != len(brokers):
        raise ClusterError(
            f"{directory} holds a cluster of {len(brokers)} brokers, not {num_brokers}: "
            f"run `rackwise cluster down --dir {directory}` and remove it, or use another --dir"
        )
    if racks is not None and list(racks) != [b.rack for b in brokers]:
        raise ClusterError(
            f"{directory} holds brokers with racks {','.join(str(b.rack) for b in brokers)}, "
            f"not {','.join(racks)}"
        )
    return recorded


def _write_configs(
    directory: Path,
    states: Sequence[NodeState],
    placer: str | None,
    overrides: Mapping[str, str],
    log_dirs: int = 1,
) -> None:
    """Write the ``.properties`` file of each node that has none, once every node's settings
    passed the checks its process makes (and an existing file agrees with the options)."""
    controller = [s.spec for s in states if s.spec.role == "controller"]
    cluster_id = _recorded_cluster_id(directory, states) or new_cluster_id()
    new: list[tuple[NodeSpec, dict[str, str]]] = []
    for state in states:
        node = state.spec
        node_dir = (directory / node.name).resolve()
        props = node_properties(
            node,
            controller,
            node_dir,
            placer,
            cluster_id,
            overrides,
            log_dirs=log_dirs,
            num_brokers=sum(1 for s in states if s.spec.role == "broker"),
        )
        NodeConfig.from_properties(props)  # refuses an unknown key or a bad value, naming it
        config = config_path(directory, node)
        if config.exists():
            expected = overrides_for_role(overrides, node.role)
            if placer is not None:
                expected[REPLICA_PLACER_CONFIG] = placer
            _check_recorded(config, expected)
        else:
            new.append((node, props))
    for state in states:
        (directory / state.spec.name).mkdir(parents=True, exist_ok=True)
    for node, props in new:
        text = format_properties(props, [f" {node.name}, by rackwise cluster up"])
        write_atomically(config_path(directory, node), text)


def _check_recorded(config: Path, expected: Mapping[str, str]) -> None:
    """Refuse options that disagree with a node's existing ``.properties`` file."""
    recorded = load_properties(config)
    for key, value in expected.items():
        if recorded.get(key) != value:
            raise ClusterError(
                f"{config} sets {key}={recorded.get(key) or '(default)'}, not {value}: "
                "edit it or use another --dir"
            )


def _recorded_cluster_id(directory: Path, states: Sequence[NodeState]) -> str | None:
    """The ``cluster.id`` an existing node's ``.properties`` file already holds, if any."""
    for state in states:
        config = config_path(directory, state.spec)
        if config.exists():
            recorded = load_properties(config).get(CLUSTER_ID, "").strip()
            if recorded:
                return recorded
    return None


def up(
    directory: Path,
    *,
    num_brokers: int | None,
    racks: Sequence[str] | None = None,
    placer: str | None = None,
    timeout_s: float = DEFAULT_START_TIMEOUT_S,
    progress: Progress = lambda ready, total: None,
    overrides: Mapping[str, str] | None = None,
    log_dirs: int = 1,
    num_controllers: int | None = None,
) -> list[NodeState]:
    """Start whichever nodes of the cluster in ``directory`` are not running (all of them the
    first time), wait until every broker is registered and unfenced, record the pids.
    ``overrides`` (``--override``) go into the nodes' first ``.properties`` files; each broker
    gets ``log_dirs`` log directories (``--log-dirs``)."""
    if log_dirs < 1:
        raise ClusterError(f"--log-dirs {log_dirs}: a broker needs at least one log directory")
    overrides = dict(overrides or {})
    check_overrides(overrides, placer)
    check_up_options(num_brokers, racks, placer, overrides, timeout_s)
    directory = directory.resolve()
    directory.mkdir(parents=True, exist_ok=True)
    states = _plan_or_reuse(directory, num_brokers, racks, num_controllers)
    _write_configs(directory, states, placer, overrides, log_dirs)
    deadline = time.monotonic() + timeout_s

    def ensure(state: NodeState) -> NodeState:
        if is_running(state.pid, config_path(directory, state.spec)):
            return replace(state, action="running")
        return NodeState(state.spec, start_node(directory, state.spec), "started")

    states = [ensure(s) if s.spec.role == "controller" else s for s in states]
    save_states(directory, states)
    for controller in (s for s in states if s.spec.role == "controller"):
        _wait_listening(directory, controller, deadline)
    states = [ensure(s) if s.spec.role == "broker" else s for s in states]
    save_states(directory, states)
    wait_for_brokers(directory, states, deadline, progress)
    return states


def down(directory: Path, *, grace_s: float = DEFAULT_STOP_GRACE_S) -> list[NodeState]:
    """Stop every running node of the cluster in ``directory``: brokers first (SIGTERM to all,
    SIGKILL after ``grace_s``), then the controller. Each state's action says what happened."""
    directory = directory.resolve()
    states = load_states(directory)
    if states is None:
        raise ClusterError(f"{directory / CLUSTER_FILE} does not exist: no cluster to stop")
    result = {s.spec.id: replace(s, action="not running") for s in states}
    for role in ("broker", "controller"):
        running = [
            s
            for s in states
            if s.spec.role == role and is_running(s.pid, config_path(directory, s.spec))
        ]
        for state in running:
            with contextlib.suppress(ProcessLookupError):
                os.kill(state.pid or 0, signal.SIGTERM)
        for state in running:
            action = stop_node(state.pid or 0, config_path(directory, state.spec), grace_s)
            result[state.spec.id] = replace(state, action=action)
    final = [result[s.spec.id] for s in states]
    save_states(directory, [NodeState(s.spec, NOT_RUNNING) for s in final])
    return final
