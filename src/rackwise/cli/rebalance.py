"""``rackwise rebalance``: audit a running cluster, plan it, and (with ``--execute``) carry the
plan out in safe batches, re-planning when the cluster changes, ending with a second audit.

Constraints
    * ``--dry-run`` (the default) changes nothing: it prints the plan's summary before and
      after, its goals and the batches it would take, and the moves a safety rule refuses,
      each naming its partition and rule (``t-0: min-insync: ...``). ``--json`` prints the same
      as one JSON document.
    * ``--execute`` prints one line per batch (bytes, rate against ``--throttle``, time left),
      then the second audit's summary; with ``--json`` the batch lines go to stderr and stdout
      holds the one document. ``--cancel`` cancels every reassignment in flight and
      removes the throttles of the topics and brokers they involve.
    * Ctrl-C ends an execution with its reassignments cancelled and the throttles removed,
      ``error: interrupted`` and status 130; SIGTERM the same with ``error: terminated`` and
      143. A bad value is one line ``error: ...`` and status 2 (argparse) or 1.

Worked example
    ``rackwise rebalance --bootstrap-server 127.0.0.1:9092 --throttle 10000000 --execute``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any, Final

from rackwise.cli._signals import run_signalled
from rackwise.cli.errors import CommandError

PAIRS: Final = (
    ("spread_violations", "spread_violations_before", "spread_violations_after"),
    ("balancedness", "score_before", "score_after"),
)
MOVES: Final = (
    "avoidable_spread_violations_after",
    "partitions_changed",
    "replica_moves",
    "data_to_move_bytes",
    "intra_broker_moves",
    "leader_moves",
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT")
    parser.add_argument("--command-config", metavar="FILE", help="admin client properties")
    parser.add_argument("--strategy", choices=("keep", "multi-level"), default="keep")
    throttle = "inter-broker replication throttle while moving, bytes/s (default: none)"
    parser.add_argument("--throttle", type=int, default=-1, metavar="B/S", help=throttle)
    parser.add_argument("--concurrency-per-broker", type=int, default=5, metavar="N")
    parser.add_argument("--max-leader-moves", type=int, default=1000, metavar="N")
    parser.add_argument("--max-disk-use", type=float, default=0.85, metavar="F")
    parser.add_argument("--poll-ms", type=int, default=1000, metavar="MS", help=argparse.SUPPRESS)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="show the plan only (default)")
    mode.add_argument("--execute", action="store_true", help="carry the plan out")
    mode.add_argument("--cancel", action="store_true", help="cancel reassignments in flight")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(run=run)


def _options(args: argparse.Namespace) -> Any:
    from rackwise.client.rebalance_run import Options  # noqa: PLC0415
    from rackwise.rebalance import Limits  # noqa: PLC0415

    if args.concurrency_per_broker < 1:
        raise CommandError(f"--concurrency-per-broker {args.concurrency_per_broker}: expected >= 1")
    if args.max_leader_moves < 1:
        raise CommandError(f"--max-leader-moves {args.max_leader_moves}: expected >= 1")
    if not 0 < args.max_disk_use <= 1:
        raise CommandError(f"--max-disk-use {args.max_disk_use}: expected a share in (0, 1]")
    limits = Limits(args.concurrency_per_broker, 2, args.max_leader_moves, args.max_disk_use)
    return Options(args.strategy, args.throttle, limits, args.poll_ms / 1000)


def run(args: argparse.Namespace) -> int:
    from rackwise.cli._servers import check_bootstrap_servers  # noqa: PLC0415
    from rackwise.client import command_config  # noqa: PLC0415
    from rackwise.client.cluster_state import ClusterStateError  # noqa: PLC0415
    from rackwise.common import RackwiseError  # noqa: PLC0415

    servers = check_bootstrap_servers(args.bootstrap_server)
    options = _options(args)
    try:
        config = (
            command_config.read_command_config(args.command_config, "rebalance")
            if args.command_config
            else {}
        )
        return run_signalled(_main(args, servers, config, options))
    except (ClusterStateError, command_config.CommandConfigError, OSError) as e:
        raise CommandError(str(e)) from None
    except RackwiseError as e:
        raise CommandError(str(e)) from None


def _out(text: str) -> None:
    print(text, flush=True)


def _err(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


async def _main(
    args: argparse.Namespace, servers: str, config: dict[str, str], options: Any
) -> int:
    from rackwise.client import rebalance_run as rr  # noqa: PLC0415

    if args.cancel:
        return await _cancel_all(servers, config, options)
    if not args.json:
        print(f"reading {servers}", file=sys.stderr, flush=True)
    proposal = rr.propose(await rr.read(servers, config, options), options)
    if not args.execute:
        _show(proposal, args.json)
        return 0
    if not args.json:
        _show(proposal, False)
    execution = await rr.execute(servers, config, proposal, options, _err if args.json else _out)
    after = rr.propose(await rr.read(servers, config, options), options)
    if args.json:
        doc = _document(proposal)
        doc["result"] = execution.summary()
        doc["after"] = after.plan.report.to_dict()
        print(json.dumps(doc, indent=2, default=str))
    else:
        counts = ", ".join(f"{k} {v}" for k, v in execution.summary().items() if v)
        _out(f"done: {counts or 'nothing to do'}")
        _out("second audit:")
        _out(_summary_table(after.plan.report.to_dict()))
    return 0


async def _cancel_all(servers: str, config: dict[str, str], options: Any) -> int:
    from rackwise.client import rebalance_run as rr  # noqa: PLC0415
    from rackwise.client.rebalance_state import executor_state  # noqa: PLC0415
    from rackwise.rebalance import Execution, Target  # noqa: PLC0415

    snapshot = await rr.read(servers, config, options)
    state = executor_state(snapshot)
    execution = Execution(
        state, {tp: Target(f.target) for tp, f in state.in_flight.items()}, options.limits
    )
    done = await rr.cancel_all(servers, config, execution, options)
    _out(f"cancelled {len(done)} reassignments in flight; throttles removed")
    return 0


def _document(proposal: Any) -> dict[str, Any]:
    report = proposal.plan.report.to_dict()
    return {
        "summary": report,
        "batches": [
            [
                {
                    "partition": str(m.partition),
                    "kind": m.kind,
                    "replicas": list(m.target.replicas),
                    "log_dirs": list(m.target.log_dirs),
                }
                for m in batch
            ]
            for batch in proposal.schedule.batches
        ],
        "refused": [
            {"partition": h.partition, "rule": h.rule, "reason": h.reason}
            for h in proposal.schedule.refused
        ],
    }


def _summary_table(report: dict[str, Any]) -> str:
    """The plan's figures before and after it, then what it moves."""
    rows: list[Sequence[str]] = [("", "before", "after")]
    for name, before, after in PAIRS:
        rows.append((name, _fmt(report.get(before)), _fmt(report.get(after))))
    for key in MOVES:
        rows.append((key, "", _fmt(report.get(key))))
    return _table(rows, left=1)


def _table(rows: Sequence[Sequence[str]], left: int) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(
            c.ljust(w) if i < left else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    )


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _show(proposal: Any, as_json: bool) -> None:
    doc = _document(proposal)
    if as_json:
        print(json.dumps(doc, indent=2, default=str))
        return
    _out(_summary_table(doc["summary"]))
    _out("")
    head = ("goal", "status", "before", "after", "moves")
    rows: list[Sequence[str]] = [head]
    for g in doc["summary"]["goals"]:
        counts = (g["violations_before"], g["violations_after"], g["replica_moves"])
        rows.append((g["name"], g["status"], *(_fmt(c) for c in counts)))
    _out(_table(rows, left=2))
    _out("")
    batches = proposal.schedule.batches
    _out(f"{len(batches)} batches, {sum(len(b) for b in batches)} moves")
    for number, batch in enumerate(batches, 1):
        names = ", ".join(str(m.partition) for m in batch)
        _out(f"batch {number}: {names}")
    for hold in proposal.schedule.refused:
        _out(f"refused {hold}")
