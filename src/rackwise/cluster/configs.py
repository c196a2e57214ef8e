"""The ``.properties`` file of each node of a local cluster, on disk: checked against
``cluster up``'s options, written once, read back for what a restart must keep (the cluster
id, the brokers' log directory count). :mod:`rackwise.cluster.plan` says what a new file holds.

Constraints
    A node's file, once written, is never rewritten (a hand edit survives restarts); an option
    of a later ``up`` that disagrees with it is refused, naming the file or the directory, and
    so is a ``--log-dirs`` other than the count the brokers' files hold.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from rackwise.cluster.plan import (
    ClusterError,
    NodeSpec,
    NodeState,
    new_cluster_id,
    node_properties,
)
from rackwise.cluster.processes import config_path
from rackwise.cluster.security import ClusterSecurity
from rackwise.formats.properties import format_properties
from rackwise.node.config import CLUSTER_ID, NodeConfig, overrides_for_role
from rackwise.node.properties_file import load_properties
from rackwise.placement import REPLICA_PLACER_CONFIG


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


def new_configs(
    directory: Path,
    states: Sequence[NodeState],
    placer: str | None,
    overrides: Mapping[str, str],
    log_dirs: int,
    security: ClusterSecurity | None = None,
) -> list[tuple[NodeSpec, dict[str, str]]]:
    """The ``.properties`` settings of each node that has no file yet, once every node's
    settings passed the checks its process makes (and an existing file agrees with the
    options); nothing is written."""
    controller = [s.spec for s in states if s.spec.role == "controller"]
    cluster_id = recorded_cluster_id(directory, states) or new_cluster_id()
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
            security=None if security is None else security.node_properties(node),
        )
        NodeConfig.from_properties(props)  # refuses an unknown key or a bad value, naming it
        config = config_path(directory, node)
        if config.exists():
            expected = overrides_for_role(overrides, node.role)
            if placer is not None:
                expected[REPLICA_PLACER_CONFIG] = placer
            check_recorded(config, expected)
        else:
            new.append((node, props))
    return new


def write_configs(
    directory: Path, states: Sequence[NodeState], new: Sequence[tuple[NodeSpec, dict[str, str]]]
) -> None:
    """Each node's directory, and the ``.properties`` files of ``new``."""
    for state in states:
        (directory / state.spec.name).mkdir(parents=True, exist_ok=True)
    for node, props in new:
        text = format_properties(props, [f" {node.name}, by rackwise cluster up"])
        write_atomically(config_path(directory, node), text)


def check_recorded(config: Path, expected: Mapping[str, str]) -> None:
    """Refuse options that disagree with a node's existing ``.properties`` file."""
    recorded = load_properties(config)
    for key, value in expected.items():
        if recorded.get(key) != value:
            raise ClusterError(
                f"{config} sets {key}={recorded.get(key) or '(default)'}, not {value}: "
                "edit it or use another --dir"
            )


def recorded_cluster_id(directory: Path, states: Sequence[NodeState]) -> str | None:
    """The ``cluster.id`` an existing node's ``.properties`` file already holds, if any."""
    for state in states:
        config = config_path(directory, state.spec)
        if config.exists():
            recorded = load_properties(config).get(CLUSTER_ID, "").strip()
            if recorded:
                return recorded
    return None


def log_dirs_count(directory: Path, states: Sequence[NodeState], asked: int | None) -> int:
    """The brokers' log directory count: ``asked`` (1 if None) for a new cluster; for one
    that has its files, what they hold, and ``asked`` must be that."""
    held = recorded_log_dirs(directory, states)
    if held is None:
        return asked or 1
    if asked is not None and asked != held:
        raise ClusterError(
            f"{directory} holds a cluster of {held} log directories per broker, not {asked}: "
            f"run `rackwise cluster down --dir {directory}` and remove it, or use another --dir"
        )
    return held


def recorded_log_dirs(directory: Path, states: Sequence[NodeState]) -> int | None:
    """How many ``log.dirs`` the first broker's existing ``.properties`` file names."""
    for state in states:
        config = config_path(directory, state.spec)
        if state.spec.role == "broker" and config.exists():
            props = load_properties(config)
            dirs = props.get("log.dirs") or props.get("log.dir") or ""
            named = [d for d in dirs.split(",") if d.strip()]
            if named:
                return len(named)
    return None
