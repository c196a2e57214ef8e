"""``rackwise cluster up`` and ``rackwise cluster down``: a local cluster of processes, one
controller (node id 3000) and N brokers (ids 1..N) on 127.0.0.1, in a directory (default
``./rackwise-cluster``). The work is :mod:`rackwise.cluster.local`'s."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Final

from rackwise.cli._table import render
from rackwise.cli.broker import add_override_arguments

if TYPE_CHECKING:  # the cluster tool loads the admin client: imported when the command runs
    from rackwise.cluster.plan import NodeState

DEFAULT_DIR: Final = "rackwise-cluster"
DEFAULT_START_TIMEOUT_S: Final = 60.0
DEFAULT_STOP_GRACE_S: Final = 10.0
"""``rackwise.cluster.local``'s defaults, spelled out here so that ``--help`` need not load
the cluster tool (a test keeps them equal)."""


def configure(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", parser_class=type(parser))
    actions.required = True
    start = actions.add_parser(
        "up",
        help="start the cluster, or restart whichever of its processes are not running",
        description="Start the controllers (node ids 3000 up) and N brokers (node ids 1..N) as "
        "separate processes on 127.0.0.1, wait until every broker is registered and unfenced, "
        "and print their addresses; DIR gets cluster.json and one directory per node with its "
        "server.properties, server.log and data. "
        "On a directory that holds a cluster, restart whichever processes are not running.",
    )
    start.add_argument("--brokers", type=int, metavar="N", help="number of brokers (ids 1..N)")
    start.add_argument(
        "--controllers",
        type=int,
        metavar="N",
        help="controllers in the quorum: 1 (default), 3 or 5 (ids 3000 up), one per data "
        "centre of --racks",
    )
    start.add_argument(
        "--racks", metavar="/dc1/r1,/dc1/r2,...", help="one rack per broker, in broker id order"
    )
    start.add_argument(
        "--log-dirs",
        type=int,
        metavar="N",
        help="log directories per broker (JBOD; default 1, or what the cluster in DIR has): "
        "data-1 .. data-N",
    )
    start.add_argument(
        "--placer", metavar="NAME", help="broker.replica.placer (e.g. rack-aware, multi-level)"
    )
    start.add_argument(
        "--dir", default=DEFAULT_DIR, metavar="DIR", help=f"default: ./{DEFAULT_DIR}"
    )
    start.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_START_TIMEOUT_S,
        metavar="SECONDS",
        help=f"how long to wait for the brokers (default {DEFAULT_START_TIMEOUT_S:g})",
    )
    start.add_argument(
        "--security",
        choices=("plaintext", "ssl", "sasl_ssl", "sasl_plaintext"),
        help="secure every listener (a new cluster; a restart keeps the cluster's) and turn the "
        "authorizer on: a private CA and one certificate per node for TLS, User:broker for the "
        "nodes and User:admin with SCRAM-SHA-512 for SASL, DIR/client.properties for the admin",
    )
    start.add_argument("--json", action="store_true", help="print cluster.json instead of a table")
    add_override_arguments(
        start,
        "a setting for every node whose role knows the key (a broker's key to the brokers, a "
        "controller's to the controller, a common key to both), written into each node's "
        "server.properties when it is first created; repeatable",
    )
    start.set_defaults(run=run_up)
    stop = actions.add_parser(
        "down",
        help="stop the cluster's processes",
        description="Stop every process of the cluster, the brokers first and then the "
        "controller: SIGTERM, then SIGKILL after a grace period. Data and configuration stay "
        "in the directory.",
    )
    stop.add_argument("--dir", default=DEFAULT_DIR, metavar="DIR", help=f"default: ./{DEFAULT_DIR}")
    stop.add_argument(
        "--grace",
        type=float,
        default=DEFAULT_STOP_GRACE_S,
        metavar="SECONDS",
        help=f"time between SIGTERM and SIGKILL (default {DEFAULT_STOP_GRACE_S:g})",
    )
    stop.set_defaults(run=run_down)


def _progress(ready: int, total: int) -> None:
    print(f"brokers registered and unfenced: {ready}/{total}", file=sys.stderr, flush=True)


def run_up(args: argparse.Namespace) -> int:
    from rackwise.cluster.local import up  # noqa: PLC0415
    from rackwise.cluster.plan import cluster_document, parse_racks  # noqa: PLC0415
    from rackwise.cluster.processes import Interrupted  # noqa: PLC0415
    from rackwise.node.properties_file import parse_overrides  # noqa: PLC0415

    overrides = parse_overrides(args.override, args.non_options)
    try:
        states = up(
            Path(args.dir),
            num_brokers=args.brokers,
            racks=parse_racks(args.racks),
            placer=args.placer,
            timeout_s=args.timeout,
            progress=_progress,
            overrides=overrides,
            log_dirs=args.log_dirs,
            num_controllers=args.controllers,
            security=args.security,
        )
    except Interrupted as e:  # SIGINT or SIGTERM: one line, 130 or 143
        print(f"error: {e}", file=sys.stderr)
        return e.exit_status
    if args.json:
        print(json.dumps(cluster_document(states)))
        return 0
    print(_table(states))
    brokers = ",".join(s.spec.address for s in states if s.spec.role == "broker")
    print(f"\nbootstrap servers: {brokers}")
    from rackwise.cluster.security import recorded_mode, usage  # noqa: PLC0415

    if recorded_mode(Path(args.dir).resolve()) is not None:
        print(usage(Path(args.dir).resolve(), brokers))
    return 0


def run_down(args: argparse.Namespace) -> int:
    from rackwise.cluster.local import down  # noqa: PLC0415

    states = down(Path(args.dir), grace_s=args.grace)
    # In the order they were stopped: the brokers, then the controller.
    for state in sorted(states, key=lambda s: s.spec.role == "controller"):
        pid = "" if state.pid is None else f" (pid {state.pid})"
        print(f"{state.spec.name}{pid}: {state.action}")
    return 0


def _table(states: list[NodeState]) -> str:
    rows = [
        (s.spec.id, s.spec.role, s.spec.address, s.spec.rack or "", s.pid, s.action) for s in states
    ]
    return render(["id", "role", "address", "rack", "pid", "state"], rows)
