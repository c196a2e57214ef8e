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
    * ``up`` refuses, before it writes or starts anything, a directory that holds files but no
      ``cluster.json``, a ``--log-dirs`` other than the count the brokers' files hold
      (:mod:`rackwise.cluster.configs`), and a node whose address another process listens on
      (naming the node and the address).
    * ``up`` waits until the controller listens and every broker is registered and unfenced
      (DescribeCluster through kafka-python, as any client sees it), and fails with the node and
      its log file when a process exits or the wait times out.
    * Each pid is in ``cluster.json`` as soon as its process exists. When a node fails to
      start, the wait times out, or SIGINT or SIGTERM arrives
      (:class:`~rackwise.cluster.processes.Interrupted`), ``up`` stops the nodes it started
      (those already running stay), records that, and its one-line error says so.
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
import json
import os
import signal
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Final

from rackwise.client.admin import Admin, AdminError
from rackwise.cluster.configs import log_dirs_count, new_configs, write_atomically, write_configs
from rackwise.cluster.plan import (
    NOT_RUNNING,
    ClusterError,
    NodeSpec,
    NodeState,
    check_overrides,
    check_up_options,
    cluster_document,
    parse_cluster_document,
    plan_cluster,
)
from rackwise.cluster.processes import (
    POLL_INTERVAL_S,
    Interrupted,
    Signals,
    address_in_use,
    config_path,
    free_ports,
    interruptible,
    is_running,
    log_path,
    start_node,
    stop_node,
)
from rackwise.cluster.sasl_users import ensure_admin_credential, log_in_as_node
from rackwise.cluster.security import admin_tls, cluster_security
from rackwise.net import use_client_tls

DEFAULT_DIR: Final = "rackwise-cluster"
CLUSTER_FILE: Final = "cluster.json"
DEFAULT_START_TIMEOUT_S: Final = 60.0
DEFAULT_STOP_GRACE_S: Final = 10.0


# -- cluster.json and the nodes' start ---------------------------------------------------------


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


def _listening(node: NodeSpec) -> bool:
    try:
        with socket.create_connection((node.host, node.port), timeout=1.0):
            return True
    except OSError:
        return False


def exit_error(directory: Path, state: NodeState) -> ClusterError:
    """The error for a node whose process exited while it started: its log file and last line,
    or, when that line is a bind's EADDRINUSE (which names no address), the address."""
    log = log_path(directory, state.spec)
    last = _last_line(log)
    if ADDRESS_IN_USE in last.lower():
        return ClusterError(
            f"{state.spec.name} (pid {state.pid}) exited while starting: its address "
            f"{state.spec.address} is already in use (see {log})"
        )
    where = f" (last line: {last})" if last else ""
    return ClusterError(
        f"{state.spec.name} (pid {state.pid}) exited while starting: see {log}{where}"
    )


ADDRESS_IN_USE: Final = "address already in use"
"""``strerror(EADDRINUSE)``, lower case, as a node's last log line has it."""


def _last_line(log: Path) -> str:
    try:
        lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return lines[-1].strip()[:200] if lines else ""


def _wait_listening(directory: Path, state: NodeState, deadline: float) -> None:
    config = config_path(directory, state.spec)
    while not _listening(state.spec):
        if not is_running(state.pid, config):
            raise exit_error(directory, state)
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
                    raise exit_error(directory, state)
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


def up(
    directory: Path,
    *,
    num_brokers: int | None,
    racks: Sequence[str] | None = None,
    placer: str | None = None,
    timeout_s: float = DEFAULT_START_TIMEOUT_S,
    progress: Progress = lambda ready, total: None,
    overrides: Mapping[str, str] | None = None,
    log_dirs: int | None = None,
    num_controllers: int | None = None,
    security: str | None = None,
) -> list[NodeState]:
    """Start whichever nodes of the cluster in ``directory`` are not running (all of them the
    first time), wait until every broker is registered and unfenced, record the pids.
    ``overrides`` (``--override``) go into the nodes' first ``.properties`` files; each broker
    gets ``log_dirs`` log directories (``--log-dirs``; by default 1, or what the cluster has).

    If a node fails to start, or SIGINT or SIGTERM arrives (:class:`Interrupted`), the nodes
    this call started are stopped again and ``cluster.json`` records what still runs; the
    error says which were stopped. ``security`` (``--security``) secures a new cluster
    (:mod:`rackwise.cluster.security`); a restart keeps the cluster's."""
    if log_dirs is not None and log_dirs < 1:
        raise ClusterError(f"--log-dirs {log_dirs}: a broker needs at least one log directory")
    overrides = dict(overrides or {})
    check_overrides(overrides, placer)
    check_up_options(num_brokers, racks, placer, overrides, timeout_s)
    directory = directory.resolve()
    with interruptible() as signals:
        _check_directory(directory)
        directory.mkdir(parents=True, exist_ok=True)
        existing = load_states(directory) is not None
        states = _plan_or_reuse(directory, num_brokers, racks, num_controllers)
        count = log_dirs_count(directory, states, log_dirs)
        names = [s.spec.name for s in states]
        secured = cluster_security(directory, security, names, existing=existing)
        new = new_configs(directory, states, placer, overrides, count, secured)
        _check_ports(directory, states)
        with signals.held():
            if not existing:
                save_states(directory, states)  # a cluster is recorded before its files
            write_configs(directory, states, new)
            if secured is not None:
                secured.write_files([node for node, _ in new])
        use_client_tls(admin_tls(directory))
        passwords = None if secured is None else secured.passwords
        if passwords is not None:
            log_in_as_node(passwords)
        started = _start(directory, states, signals, time.monotonic() + timeout_s, progress)
        if passwords is not None:
            brokers = ",".join(s.spec.address for s in started if s.spec.role == "broker")
            ensure_admin_credential(brokers, passwords)
        return started


def _start(
    directory: Path,
    states: Sequence[NodeState],
    signals: Signals,
    deadline: float,
    progress: Progress,
) -> list[NodeState]:
    """Start the controllers that do not run and wait until they listen, then the brokers, and
    wait until all are unfenced; each pid is recorded as soon as its process exists. On any
    failure, stop what was started (:func:`_stop_started`) and say so in the error."""
    states = list(states)
    try:
        for role in ("controller", "broker"):
            for i, state in enumerate(states):
                if state.spec.role != role:
                    continue
                if is_running(state.pid, config_path(directory, state.spec)):
                    states[i] = replace(state, action="running")
                    continue
                with signals.held():
                    states[i] = NodeState(state.spec, start_node(directory, state.spec), "started")
                    save_states(directory, states)
            if role == "controller":
                for controller in (s for s in states if s.spec.role == "controller"):
                    _wait_listening(directory, controller, deadline)
        wait_for_brokers(directory, states, deadline, progress)
        return states
    except BaseException as e:  # a failure, Interrupted, KeyboardInterrupt: stop, re-raise
        with signals.ignored():
            stopped = _stop_started(directory, states)
        if isinstance(e, Interrupted):
            raise Interrupted(e.signum, stopped) from None
        if stopped and isinstance(e, ClusterError):
            raise ClusterError(f"{e}; {stopped}") from None
        raise


def _stop_started(directory: Path, states: Sequence[NodeState]) -> str | None:
    """Stop the nodes of ``states`` that this ``up`` started and that still run (SIGTERM to
    all, SIGKILL after the grace period), record what runs then, and say what was done (None
    when nothing was running)."""
    alive = [
        s
        for s in states
        if s.action == "started" and is_running(s.pid, config_path(directory, s.spec))
    ]
    for state in alive:
        with contextlib.suppress(ProcessLookupError):
            os.kill(state.pid or 0, signal.SIGTERM)
    survivors = []
    for state in alive:
        try:
            stop_node(state.pid or 0, config_path(directory, state.spec), DEFAULT_STOP_GRACE_S)
        except ClusterError:
            survivors.append(state)
    stopped_ids = {s.spec.id for s in alive if s not in survivors}
    save_states(directory, [_recorded(directory, s, stopped_ids) for s in states])
    if not alive:
        return None
    said = []
    stopped = [s.spec.name for s in alive if s not in survivors]
    if stopped:
        said.append(f"stopped {_names(stopped)}, started by this cluster up")
    if survivors:
        running = _names([f"{s.spec.name} (pid {s.pid})" for s in survivors])
        said.append(f"{running} still running; stop with `rackwise cluster down --dir {directory}`")
    return "; ".join(said)


def _recorded(directory: Path, state: NodeState, stopped: set[int]) -> NodeState:
    """``state`` as ``cluster.json`` records it after a failed ``up``: its pid while it runs
    (started before, or surviving), :data:`NOT_RUNNING` otherwise."""
    if state.spec.id in stopped or not is_running(state.pid, config_path(directory, state.spec)):
        return NodeState(state.spec, NOT_RUNNING)
    return state


def _names(names: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _check_directory(directory: Path) -> None:
    """Refuse a directory that holds files but no ``cluster.json``: not a rackwise cluster."""
    if not directory.is_dir() or (directory / CLUSTER_FILE).exists():
        return
    leftover = f".{CLUSTER_FILE}.tmp"  # of a write cut short
    if any(entry.name != leftover for entry in directory.iterdir()):
        raise ClusterError(
            f"{directory} is not empty and holds no rackwise cluster (no {CLUSTER_FILE}): "
            "give an empty or new --dir"
        )


def _check_ports(directory: Path, states: Sequence[NodeState]) -> None:
    """Refuse to start anything when a node that is to be started could not listen."""
    for state in states:
        config = config_path(directory, state.spec)
        if is_running(state.pid, config) or not address_in_use(state.spec):
            continue
        hint = f", or give {state.spec.name} another port in {config}" if config.exists() else ""
        raise ClusterError(
            f"{state.spec.name} cannot listen on {state.spec.address}: the address is already "
            f"in use; free it{hint}"
        )


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
