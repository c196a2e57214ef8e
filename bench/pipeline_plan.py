"""Plan one large generated cluster, directly and through the Spark job, with the plan's quality.

    .venv/bin/python bench/pipeline_plan.py [--brokers 215] [--replicas 2800000]
        [--strategy keep] [--topology dc=3,rack=2] [--throttle 100000000] [--no-spark]
        [--no-local] [--domain-loss 2 [--min-insync-replicas 2]]

The anchor is Cruise Control, whose users report 95 minutes (18 in its fast mode) to compute a
proposal for 215 brokers and 2.8 million replicas. The cluster is generated with
``rackwise.pipeline.generate.generate_fleet`` (uneven racks, Zipf-like topic sizes, about one
partition in 200 misplaced, a skewed disk, a failed log directory), then planned:

1. ``direct``: the Parquet read with pyarrow, turned into the balance package's columns, and
   planned by ``rackwise.balance.plan_cluster`` in this process (time per goal);
2. ``local``: the in-process engine end to end, as ``rackwise pipeline plan --engine local``
   runs it (``--engine auto`` picks it for this size): ``read_source`` (read and validate) and
   ``run_plan`` (time per stage);
3. ``spark``: ``read_fleet`` and ``run_plan`` on ``local[2]`` (time per stage: the plan, the
   reassignment file, the audit of the current state stage by stage, the target state's
   figures, the summary, the report), end to end including Spark's start.

With ``--domain-loss N`` the direct stage is a pair, in the same run on the same cluster: the
plan without ``DomainLossGoal`` and the plan with it, every topic at ``min.insync.racks=N``
(level 1: data centres) and ``--min-insync-replicas``; it prints both plans' time, replica
moves and leader moves, partitions exposed to a data centre's loss before and after (counted
by the goal's rule in both plans), the balance goals' violations after, the ratio of times, and
the goal's figures (its own moves and time, those no placement of their factor protects).

It prints the time of each stage and the plan's figures: moves and bytes against the lower
bound, spread violations and skew before and after, the balancedness score before and after.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from rackwise.balance import ClusterInput, DomainRule, domain_loss_exposed, plan_cluster
from rackwise.pipeline.generate import generate_fleet
from rackwise.pipeline.plan.group import broker_dir_rows, cluster_input


def _line(label: str, value: object) -> None:
    print(f"  {label:<44} {value}", flush=True)


def direct(fleet: Path, strategy: str) -> dict[str, Any]:
    print("direct (balance package, one process):", flush=True)
    began = time.perf_counter()
    replicas = pq.read_table(fleet / "replicas")
    replicas = replicas.cast(
        pa.schema(
            [
                pa.field(f.name, pa.string() if pa.types.is_dictionary(f.type) else f.type)
                for f in replicas.schema
            ]
        )
    )
    brokers = broker_dir_rows(pq.read_table(fleet / "brokers"))
    read = time.perf_counter()
    cluster = cluster_input(replicas, brokers)
    built = time.perf_counter()
    plan = plan_cluster(cluster, strategy, clock=time.perf_counter)  # type: ignore[arg-type]
    planned = time.perf_counter()
    _line("read Parquet (pyarrow)", f"{read - began:.2f} s")
    _line("Arrow -> balance columns", f"{built - read:.2f} s")
    _line("plan_cluster", f"{planned - built:.2f} s")
    for goal in plan.report.goals:
        _line(f"  {goal.name} [{goal.status}]", f"{goal.time_ms / 1000:.2f} s")
    return plan.report.to_dict()


def _read_cluster(fleet: Path) -> ClusterInput:
    replicas = pq.read_table(fleet / "replicas")
    replicas = replicas.cast(
        pa.schema(
            [
                pa.field(f.name, pa.string() if pa.types.is_dictionary(f.type) else f.type)
                for f in replicas.schema
            ]
        )
    )
    return cluster_input(replicas, broker_dir_rows(pq.read_table(fleet / "brokers")))


_BALANCE = (
    "ReplicaDistributionGoal",
    "LeaderReplicaDistributionGoal",
    "DiskUsageDistributionGoal",
)
"""The balance goals whose violations after the plan are compared with and without the goal."""


def domain_loss(fleet: Path, strategy: str, racks: int, min_isr: int) -> dict[str, Any]:
    """The plan without and with DomainLossGoal, in this process, one after the other."""
    from dataclasses import replace  # noqa: PLC0415

    print(
        f"domain loss (min.insync.racks={racks}, min.insync.replicas={min_isr}, {strategy}):",
        flush=True,
    )
    cluster = _read_cluster(fleet)
    rule = DomainRule(min_isr, racks, 1)
    ruled = replace(cluster, domain_rules={t: rule for t in cluster.replicas.topic_names})
    out: dict[str, Any] = {}
    for label, given in (("without", cluster), ("with", ruled)):
        began = time.perf_counter()
        plan = plan_cluster(given, strategy, clock=time.perf_counter)  # type: ignore[arg-type]
        seconds = time.perf_counter() - began
        report = plan.report
        goal = next(g for g in report.goals if g.name == "DomainLossGoal")
        exposed = domain_loss_exposed(ruled, plan.target)
        out[label] = {
            "seconds": seconds,
            "replica_moves": report.replica_moves,
            "leader_moves": report.leader_moves,
            "exposed_before": goal.violations_before if given is ruled else None,
            "exposed_after": exposed,
            "domain_loss_goal": {
                "violations_before": goal.violations_before,
                "violations_after": goal.violations_after,
                "replica_moves": goal.replica_moves,
                "seconds": goal.time_ms / 1000,
            },
            "unprotectable_partitions": report.unprotectable_partitions,
            "score_after": report.score_after,
            "balance_violations_after": {
                g.name: g.violations_after for g in report.goals if g.name in _BALANCE
            },
        }
        _line(
            f"{label} DomainLossGoal: plan_cluster",
            f"{seconds:.2f} s, {report.replica_moves:,} replica moves, "
            f"{report.leader_moves:,} leader moves",
        )
        _line("  exposed to one data centre's loss, protectable, after", f"{exposed:,}")
        _line(
            "  balance violations after (replicas, leaders, bytes)",
            ", ".join(f"{out[label]['balance_violations_after'][n]:,}" for n in _BALANCE),
        )
    goal = out["with"]["domain_loss_goal"]
    _line("exposed before either plan", f"{goal['violations_before']:,}")
    _line("goal's own moves and time", f"{goal['replica_moves']:,}, {goal['seconds']:.2f} s")
    _line("  unprotectable at their factor", f"{out['with']['unprotectable_partitions']:,}")
    _line(
        "  time with / without",
        f"{out['with']['seconds'] / max(out['without']['seconds'], 1e-9):.2f}",
    )
    return out


def spark(fleet: Path, out: Path, strategy: str, throttle: int) -> dict[str, Any]:
    from rackwise.pipeline.engines.session import get_spark  # noqa: PLC0415
    from rackwise.pipeline.engines.spark import run_plan  # noqa: PLC0415
    from rackwise.pipeline.ingest.spark import read_fleet  # noqa: PLC0415

    print("spark (read_fleet + run_plan on local[2]):", flush=True)
    began = start = time.perf_counter()
    session = get_spark("local[2]")
    _line("spark session", f"{time.perf_counter() - began:.2f} s")
    began = time.perf_counter()
    tables = read_fleet(session, fleet)
    _line("read_fleet (lazy; validation runs in the plan)", f"{time.perf_counter() - began:.2f} s")
    began = time.perf_counter()
    summary = run_plan(
        session,
        tables,
        out,
        strategy,  # type: ignore[arg-type]
        throttle,
        on_stage=lambda name, seconds: _line(f"  {name}", f"{seconds:.2f} s"),
    )
    _line("run_plan total", f"{time.perf_counter() - began:.2f} s")
    _line("end to end (Spark start, read_fleet, run_plan)", f"{time.perf_counter() - start:.2f} s")
    session.stop()
    return summary


def local(fleet: Path, out: Path, strategy: str, throttle: int) -> dict[str, Any]:
    from rackwise.pipeline.engines.local import run_plan  # noqa: PLC0415
    from rackwise.pipeline.ingest.local import read_source  # noqa: PLC0415
    from rackwise.pipeline.ingest.source import InputSource  # noqa: PLC0415

    print("local (read_source + run_plan in this process):", flush=True)
    began = start = time.perf_counter()
    tables = read_source(InputSource.fleet_dir(fleet))
    _line("read_source (read and validate)", f"{time.perf_counter() - began:.2f} s")
    began = time.perf_counter()
    summary = run_plan(
        tables,
        out,
        strategy,
        throttle,
        on_stage=lambda name, seconds: _line(f"  {name}", f"{seconds:.2f} s"),
    )
    _line("run_plan total", f"{time.perf_counter() - began:.2f} s")
    _line("end to end (read_source, run_plan)", f"{time.perf_counter() - start:.2f} s")
    return summary


def quality(report: dict[str, Any], cluster: dict[str, Any] | None) -> None:
    bound = report["lower_bound"]
    print("plan quality:", flush=True)
    _line("partitions / replicas", f"{report['num_partitions']:,} / {report['num_replicas']:,}")
    _line(
        "replica moves (lower bound)", f"{report['replica_moves']:,} ({bound['replica_moves']:,})"
    )
    gb = 1e9
    _line(
        "data to move, GB (lower bound)",
        f"{report['data_to_move_bytes'] / gb:,.1f} ({bound['bytes'] / gb:,.1f})",
    )
    _line(
        "intra-broker moves, GB",
        f"{report['intra_broker_moves']:,}, {report['intra_broker_data_to_move_bytes'] / gb:,.1f}",
    )
    _line("leader moves", f"{report['leader_moves']:,}")
    for goal in report["goals"]:
        _line(
            f"  {goal['name']}",
            f"{goal['status']:<9} {goal['violations_before']:>7,} -> {goal['violations_after']:,}"
            f"  moves {goal['replica_moves']:,}",
        )
    _line(
        "spread violations before -> after (audit view)",
        f"{report['spread_violations_before']:,} -> {report['spread_violations_after']:,}",
    )
    skew_before, skew_after = report["skew_before"], report["skew_after"]
    for metric in ("replicas", "leaders", "bytes", "log_dir_bytes"):
        _line(
            f"skew {metric} (max/mean) before -> after",
            f"{skew_before[metric]:.3f} -> {skew_after[metric]:.3f}",
        )
    _line(
        "balancedness score before -> after",
        f"{report['score_before']:.1f} -> {report['score_after']:.1f}",
    )
    if cluster is not None:
        _line(
            "spark: spread violations (audit) before -> after",
            "{before:,} -> {after:,}".format(**cluster["spread_violations"]),
        )
        for metric in ("replicas", "leaders", "bytes"):
            before = cluster["skew"]["before"]["broker"][metric]
            after = cluster["skew"]["after"]["broker"][metric]
            _line(
                f"spark: {metric} per broker max / mean, before -> after",
                f"{before['max']:,.0f} / {before['mean']:,.0f} ({before['max_over_mean']:.3f})"
                f" -> {after['max']:,.0f} / {after['mean']:,.0f} ({after['max_over_mean']:.3f})",
            )
        moves = cluster["move_time"]
        _line("spark: time at --throttle", f"{moves['seconds']:,.0f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--brokers", type=int, default=215)
    parser.add_argument("--replicas", type=int, default=2_800_000)
    parser.add_argument("--topology", default="dc=3,rack=2")
    parser.add_argument("--strategy", default="keep", choices=("keep", "rack-aware", "multi-level"))
    parser.add_argument("--throttle", type=int, default=100_000_000, help="bytes per second")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-spark", action="store_true")
    parser.add_argument("--no-local", action="store_true")
    parser.add_argument("--out", type=Path, default=None, help="keep the outputs here")
    parser.add_argument(
        "--domain-loss",
        type=int,
        default=0,
        metavar="MIN_INSYNC_RACKS",
        help="only plan without and with DomainLossGoal at this min.insync.racks",
    )
    parser.add_argument("--min-insync-replicas", type=int, default=2)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="rackwise-plan-bench-") as scratch:
        work = args.out or Path(scratch)
        fleet = work / "fleet"
        print(
            f"generate: 1 cluster, {args.brokers} brokers, {args.replicas:,} replicas", flush=True
        )
        began = time.perf_counter()
        generate_fleet(
            fleet,
            clusters=1,
            brokers=args.brokers,
            partitions=args.replicas // 3,
            topology=args.topology,
            seed=args.seed,
            replication_factor=3,
            json_max_clusters=0,
        )
        _line("generate_fleet", f"{time.perf_counter() - began:.2f} s")
        if args.domain_loss:
            figures = domain_loss(fleet, args.strategy, args.domain_loss, args.min_insync_replicas)
            if args.out:
                (args.out / "domain_loss.json").write_text(json.dumps(figures, indent=2))
            return 0
        report = direct(fleet, args.strategy)
        if not args.no_local:
            local(fleet, work / "local", args.strategy, args.throttle)
        summary = (
            None if args.no_spark else spark(fleet, work / "out", args.strategy, args.throttle)
        )
        cluster = None if summary is None else next(iter(summary["clusters"].values()))
        quality(report, cluster)
        if args.out:
            (args.out / "direct_report.json").write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    from _signals import stopping

    raise SystemExit(stopping(main))
