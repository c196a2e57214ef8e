"""A local cluster on paper: which nodes it has (ids, roles, ports, racks, controllers spread
over the data centres), the ``.properties`` file of each, and ``cluster.json``, the record of
them; the checks of ``rackwise cluster up``'s options. :mod:`rackwise.cluster.local` starts and
stops the processes.

Constraints
    Pure: nothing here opens a socket or starts a process. Errors are :class:`ClusterError`,
    one line naming the option or value at fault.

Worked example
    ``plan_cluster(3, ["/dc1/r1", "/dc1/r2", "/dc2/r1"], [9000, 9001, 9002, 9003])`` is the
    controller 3000 on port 9000 and brokers 1-3 on 9001-9003 with those racks;
    ``node_properties`` of broker 2 then has ``node.id=2``, ``broker.rack=/dc1/r2`` and
    ``controller.quorum.bootstrap.servers=127.0.0.1:9000``.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from rackwise.common import RackwiseError
from rackwise.node.config import BROKER_RACK, CLUSTER_ID, overrides_for_role
from rackwise.placement import REPLICA_PLACER_CONFIG, create_placer
from rackwise.topology import as_rack_path, rack_path_problem

Role = Literal["controller", "broker"]

HOST: Final = "127.0.0.1"
CONTROLLER_ID: Final = 3000
"""The controller's node.id; brokers are 1..N."""
CONTROLLER_COUNTS: Final = (1, 3, 5)
"""``--controllers``: a quorum of 1, 3 or 5 (``controller.quorum.voters``), ids 3000 up."""
PER_NODE_KEYS: Final = frozenset(
    {
        "node.id",
        "process.roles",
        "listeners",
        "advertised.listeners",
        "listener.security.protocol.map",
        "controller.listener.names",
        "controller.quorum.voters",
        "controller.quorum.bootstrap.servers",
        "metadata.log.dir",
        "log.dirs",
        "log.dir",
        CLUSTER_ID,
        BROKER_RACK,
    }
)
"""The keys ``up`` writes for each node itself, which ``--override`` may not set."""
NOT_RUNNING: Final = None
"""The pid recorded for a node that no process runs."""


class ClusterError(RackwiseError):
    """A local cluster that cannot be planned, started or stopped as asked."""


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """One node of a local cluster. ``rack`` is None for the controller and rackless brokers."""

    id: int
    role: Role
    host: str
    port: int
    rack: str | None = None

    @property
    def name(self) -> str:
        """The node's directory name: ``controller-3000``, ``broker-1``."""
        return f"{self.role}-{self.id}"

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True, slots=True)
class NodeState:
    """A node with the pid running it (:data:`NOT_RUNNING` for none) and what ``up`` or
    ``down`` just did to it."""

    spec: NodeSpec
    pid: int | None
    action: str = ""


# -- planning (pure) ---------------------------------------------------------------------------


def parse_racks(text: str | None) -> list[str] | None:
    """``/dc1/r1,/dc1/r2`` as a list; None stays None."""
    if text is None:
        return None
    racks = [rack.strip() for rack in text.split(",")]
    if any(not rack for rack in racks):
        raise ClusterError(f"--racks {text!r} has an empty rack")
    return racks


def plan_cluster(
    num_brokers: int,
    racks: Sequence[str] | None,
    ports: Sequence[int],
    num_controllers: int = 1,
) -> tuple[NodeSpec, ...]:
    """The controllers (3000, 3001, ...) and brokers 1..``num_brokers``; the first
    ``num_controllers`` ports are the controllers', then ``ports[c + i - 1]`` broker i's;
    broker i gets ``racks[i-1]``, controller k the ``k``-th data centre of ``racks``
    (:func:`controller_data_centres`)."""
    if num_brokers < 1:
        raise ClusterError(f"--brokers must be at least 1, not {num_brokers}")
    if num_brokers >= CONTROLLER_ID:
        raise ClusterError(
            f"--brokers {num_brokers} would reach the controller's node id {CONTROLLER_ID}"
        )
    if racks is not None and len(racks) != num_brokers:
        raise ClusterError(
            f"--racks names {len(racks)} racks but --brokers is {num_brokers}: "
            "give one rack per broker"
        )
    if num_controllers not in CONTROLLER_COUNTS:
        raise ClusterError(f"--controllers must be 1, 3 or 5, not {num_controllers}")
    if len(ports) != num_brokers + num_controllers:
        raise ClusterError(f"BUG: {len(ports)} ports for {num_brokers + num_controllers} nodes")
    centres = controller_data_centres(racks, num_controllers)
    controllers = tuple(
        NodeSpec(CONTROLLER_ID + k, "controller", HOST, ports[k], centres[k])
        for k in range(num_controllers)
    )
    brokers = tuple(
        NodeSpec(
            i,
            "broker",
            HOST,
            ports[num_controllers + i - 1],
            None if racks is None else racks[i - 1],
        )
        for i in range(1, num_brokers + 1)
    )
    return (*controllers, *brokers)


def controller_data_centres(racks: Sequence[str] | None, count: int) -> list[str | None]:
    """Where each of ``count`` controllers goes: the data centres of ``racks`` (the first
    level of each rack path, in order of first use), one controller each, around again if
    there are fewer; None without racks, and for a single controller."""
    if racks is None or count == 1:
        return [None] * count
    centres: list[str] = []
    for rack in racks:
        path = as_rack_path(rack) or rack
        centre = "/" + path.strip("/").split("/")[0]
        if centre not in centres:
            centres.append(centre)
    return [centres[k % len(centres)] for k in range(count)]


def check_overrides(overrides: Mapping[str, str], placer: str | None) -> None:
    """Refuse an override of a key ``up`` sets per node, or of ``broker.replica.placer``
    when ``--placer`` gives it too."""
    for key, value in overrides.items():
        if key in PER_NODE_KEYS:
            hint = ": give --racks" if key == BROKER_RACK else ""
            raise ClusterError(
                f"--override {key}={value}: rackwise cluster up sets {key} for each node{hint}"
            )
        if key == REPLICA_PLACER_CONFIG and placer is not None:
            raise ClusterError(
                f"--override {key}={value} and --placer {placer}: give the placer once"
            )


def check_up_options(
    num_brokers: int | None,
    racks: Sequence[str] | None,
    placer: str | None,
    overrides: Mapping[str, str],
    timeout_s: float,
) -> None:
    """Refuse a bad option of ``up`` before anything is written or started: a broker count out
    of range, racks that do not match it or are not rack paths (``dc1//r1``; a plain name such
    as ``r1`` reads as ``/r1``), a replica placer that is neither built in nor a plug-in that
    loads (``--placer`` or ``--override broker.replica.placer=``), a timeout that is not
    positive. The node configuration is checked later, still before any file is written."""
    if num_brokers is not None and not 1 <= num_brokers < CONTROLLER_ID:
        raise ClusterError(
            f"--brokers must be from 1 to {CONTROLLER_ID - 1} (the controller is node "
            f"{CONTROLLER_ID}), not {num_brokers}"
        )
    if num_brokers is not None and racks is not None and len(racks) != num_brokers:
        raise ClusterError(
            f"--racks names {len(racks)} racks but --brokers is {num_brokers}: "
            "give one rack per broker"
        )
    for broker_id, rack in enumerate(racks or (), start=1):
        problem = rack_path_problem(as_rack_path(rack) or "")
        if problem:
            raise ClusterError(
                f"--racks: broker {broker_id}'s rack {rack!r} is not a path: {problem}"
            )
    named = [("--placer ", placer)] if placer is not None else []
    if REPLICA_PLACER_CONFIG in overrides:
        named.append((f"--override {REPLICA_PLACER_CONFIG}=", overrides[REPLICA_PLACER_CONFIG]))
    for option, name in named:
        try:
            create_placer(name.strip())
        except RackwiseError as e:
            raise ClusterError(f"{option}{name}: {e}") from None
    if not timeout_s > 0:
        raise ClusterError(f"--timeout must be more than 0 seconds, not {timeout_s:g}")


def new_cluster_id() -> str:
    """A cluster id as ``kafka-storage random-uuid`` prints one: a random UUID in URL-safe
    base64 without padding, never starting with ``-`` (it would read as a flag)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode("ascii")
        if not text.startswith("-"):
            return text


OFFSETS_REPLICATION_FACTOR: Final = 3
"""Kafka's default ``offsets.topic.replication.factor``."""


def node_properties(
    node: NodeSpec,
    controller: NodeSpec | Sequence[NodeSpec],
    node_dir: Path,
    placer: str | None,
    cluster_id: str | None = None,
    overrides: Mapping[str, str] | None = None,
    log_dirs: int = 1,
    num_brokers: int | None = None,
    security: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The ``.properties`` settings of ``node`` (Kafka's names), its paths under ``node_dir``;
    every node of one cluster gets the same ``cluster.id``, as ``kafka-storage format -t``
    gives each node's storage; a cluster of fewer than 3 brokers gets
    ``offsets.topic.replication.factor`` of its size (as Kafka's sample ``server.properties``
    sets 1), so that consumer groups can commit; brokers get
    ``group.initial.rebalance.delay.ms=0``, as that file sets it for development and testing
    (a new group forms at once rather than after 3 s); then the ``security`` settings of a
    secured cluster (:mod:`rackwise.cluster.security`, its listeners among them); then the
    ``overrides`` for the node's role, last."""
    props = {
        "node.id": str(node.id),
        "process.roles": node.role,
        "controller.listener.names": "CONTROLLER",
        "metadata.log.dir": str(node_dir / "metadata"),
    }
    if cluster_id is not None:
        props[CLUSTER_ID] = cluster_id
    controllers = [controller] if isinstance(controller, NodeSpec) else list(controller)
    if node.role == "controller":
        props["listeners"] = f"CONTROLLER://{node.address}"
        props["controller.quorum.voters"] = ",".join(f"{c.id}@{c.address}" for c in controllers)
        if placer is not None:
            props[REPLICA_PLACER_CONFIG] = placer
    else:
        props["listeners"] = f"PLAINTEXT://{node.address}"
        props["controller.quorum.bootstrap.servers"] = ",".join(c.address for c in controllers)
        props["log.dirs"] = ",".join(str(d) for d in broker_log_dirs(node_dir, log_dirs))
        if node.rack is not None:
            props["broker.rack"] = node.rack
        if placer is not None:
            props[REPLICA_PLACER_CONFIG] = placer
        if num_brokers is not None and num_brokers < OFFSETS_REPLICATION_FACTOR:
            props["offsets.topic.replication.factor"] = str(num_brokers)
        props["group.initial.rebalance.delay.ms"] = "0"
    props.update(security or {})
    props.update(overrides_for_role(overrides or {}, node.role))
    return props


def broker_log_dirs(node_dir: Path, count: int) -> list[Path]:
    """A broker's ``log.dirs``: ``data`` alone, or ``data-1`` .. ``data-N`` for JBOD."""
    if count == 1:
        return [node_dir / "data"]
    return [node_dir / f"data-{i}" for i in range(1, count + 1)]


def cluster_document(states: Sequence[NodeState]) -> dict[str, Any]:
    """The ``cluster.json`` document."""
    return {
        "nodes": [
            {
                "id": s.spec.id,
                "role": s.spec.role,
                "pid": s.pid,
                "host": s.spec.host,
                "port": s.spec.port,
                "rack": s.spec.rack,
            }
            for s in states
        ]
    }


def parse_cluster_document(text: str, where: str) -> list[NodeState]:
    """The nodes of a ``cluster.json``; a document that is not one is an error naming it."""
    try:
        document = json.loads(text)
        states = []
        for entry in document["nodes"]:
            role = entry["role"]
            if role not in ("controller", "broker"):
                raise ValueError(f"role {role!r}")
            spec = NodeSpec(
                int(entry["id"]), role, str(entry["host"]), int(entry["port"]), entry.get("rack")
            )
            pid = entry.get("pid")
            states.append(NodeState(spec, None if pid is None else int(pid)))
    except (ValueError, KeyError, TypeError) as e:
        raise ClusterError(f"{where} is not a cluster description: {e}") from None
    if sum(s.spec.role == "controller" for s in states) not in CONTROLLER_COUNTS:
        raise ClusterError(f"{where} must describe exactly one controller, or a quorum of 3 or 5")
    return states
