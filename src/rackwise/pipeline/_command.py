"""The ``pipeline`` command's options and stages, shared by ``rackwise pipeline`` and
``spark-submit .../rackwise/pipeline/__main__.py``.

Nothing here imports Spark until a stage needs it, so that ``rackwise`` itself starts fast.
Progress goes to stderr, one line per stage with its wall time; the summary goes to stdout, as
a table or as JSON.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from rackwise.pipeline.schema import DEFAULT_CLUSTER_ID

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from rackwise.pipeline.tables import ClusterTables

EXIT_REJECTS: Final = 2
"""Exit status when ``--fail-on-rejects`` finds rejected rows."""
REJECTED_DIR: Final = "rejected"
REJECTED_SAMPLE: Final = "rejected.jsonl"
SAMPLE_ROWS: Final = 1000
TABLE_CLUSTERS: Final = 50
_AUDIT_COLUMNS: Final = (
    "brokers",
    "partitions",
    "replicas",
    "failed_log_dirs",
    "partitions_with_spread_violations",
    "max_offline_if_lost",
    "max_under_min_isr_if_lost",
)
_PLAN_COLUMNS: Final = (
    "replica_moves",
    "lower_bound",
    "intra_broker_moves",
    "leader_moves",
    "data_to_move_bytes",
    "spread_before",
    "spread_after",
    "score_after",
    "move_time_s",
)


class UsageError(ValueError):
    """Options that do not go together: one line, exit status 1."""


def render(
    headers: list[str] | tuple[str, ...], rows: list[list[Any]] | list[tuple[Any, ...]]
) -> str:
    """A plain-text table: columns padded, numbers right-aligned."""
    cells = [[str(h) for h in headers]] + [
        [
            ""
            if c is None
            else f"{c:,}"
            if isinstance(c, int) and not isinstance(c, bool)
            else str(c)
            for c in row
        ]
        for row in rows
    ]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    numeric = [
        bool(rows) and all(isinstance(r[i], int | float) or r[i] is None for r in rows)
        for i in range(len(headers))
    ]
    return "\n".join(
        "  ".join(
            c.rjust(w) if n else c.ljust(w) for c, w, n in zip(row, widths, numeric, strict=True)
        ).rstrip()
        for row in cells
    )


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``generate``, ``audit`` and ``plan`` subcommands to ``parser``."""
    commands = parser.add_subparsers(dest="pipeline_command", metavar="SUBCOMMAND", required=True)
    generate = commands.add_parser("generate", help="write a synthetic fleet in both input forms")
    generate.add_argument("--clusters", type=int, required=True, metavar="C")
    generate.add_argument("--brokers", type=int, required=True, metavar="B", help="per cluster")
    generate.add_argument("--partitions", type=int, required=True, metavar="P", help="per cluster")
    generate.add_argument("--topology", required=True, metavar="dc=3,rack=2")
    generate.add_argument("--seed", type=int, default=0, metavar="S")
    generate.add_argument("--replication-factor", type=int, default=3, metavar="R")
    generate.add_argument("--log-dirs-per-broker", type=int, default=2, metavar="D")
    generate.add_argument(
        "--json-max-replicas",
        type=int,
        default=3_000_000,
        metavar="N",
        help="write the JSON form only for clusters of at most N replicas (default 3,000,000)",
    )
    generate.add_argument(
        "--json-max-clusters",
        type=int,
        default=10,
        metavar="K",
        help="and for at most K clusters (default 10)",
    )
    generate.add_argument("--out", required=True, metavar="DIR")
    generate.set_defaults(pipeline_run=run_generate)
    for name, help_text, run in (
        ("audit", "spread, failure-domain exposure, load and skew per cluster", run_audit),
        ("plan", "a target assignment per cluster and the moves to reach it", run_plan),
    ):
        sub = commands.add_parser(name, help=help_text, description=help_text)
        _add_input_options(sub)
        sub.add_argument("--min-insync-replicas", type=int, default=2, metavar="N")
        if name == "plan":
            sub.add_argument(
                "--strategy", choices=("keep", "rack-aware", "multi-level"), default="keep"
            )
            sub.add_argument("--throttle", type=int, default=None, metavar="BYTES_PER_S")
        sub.set_defaults(pipeline_run=run)


def _add_input_options(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--brokers", metavar="FILE", help="broker list JSON (one cluster)")
    sub.add_argument("--assignment", metavar="FILE", help="reassignment JSON (one cluster)")
    sub.add_argument(
        "--log-dirs",
        action="append",
        default=[],
        metavar="[BROKER=]FILE",
        help="kafka-log-dirs --describe output; a KIP-113 document is per broker: 3=FILE",
    )
    sub.add_argument("--cluster-id", default=DEFAULT_CLUSTER_ID, metavar="NAME")
    sub.add_argument("--fleet", metavar="DIR", help="Parquet datasets DIR/brokers, DIR/replicas")
    sub.add_argument(
        "--metadata",
        metavar="PATH",
        help="a 'rackwise metadata dump --format parquet' export (one cluster)",
    )
    sub.add_argument("--master", default=None, metavar="URL", help="default: local Spark")
    sub.add_argument("--out", required=True, metavar="OUT")
    sub.add_argument("--fail-on-rejects", action="store_true", help="exit 2 if any row is rejected")
    sub.add_argument("--format", choices=("table", "json"), default="table")


def run(args: argparse.Namespace) -> int:
    """Run the chosen subcommand. An error Spark raises while reading the input (a corrupt
    Parquet file, say) becomes one line naming it, as every other input error is."""
    try:
        code: int = args.pipeline_run(args)
    except Exception as error:
        spark_errors = sys.modules.get("pyspark.errors")
        if spark_errors is None or not isinstance(error, spark_errors.PySparkException):
            raise
        raise UsageError(f"Spark: {_first_line(error)}") from error
    return code


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


_MASTER: Final = re.compile(
    r"local(\[(\*|[1-9][0-9]*)(,[0-9]+)?\])?|local-cluster\[[0-9]+,[0-9]+,[0-9]+\]"
    r"|yarn|(spark|mesos|k8s)://\S+"
)


def check_options(args: argparse.Namespace) -> None:
    """Refuse what cannot work before Spark starts (it takes seconds to start): inputs that do
    not go together or do not exist, a master URL Spark does not know, impossible numbers."""
    _inputs(args)
    if args.master is not None and not _MASTER.fullmatch(args.master):
        raise UsageError(
            f"--master {args.master!r}: expected local, local[N], local[*], spark://HOST:PORT, "
            "yarn, k8s://URL or mesos://URL"
        )
    if args.min_insync_replicas < 1:
        raise UsageError(
            f"--min-insync-replicas must be at least 1, got {args.min_insync_replicas}"
        )
    throttle = getattr(args, "throttle", None)
    if throttle is not None and throttle <= 0:
        raise UsageError(
            f"--throttle must be a positive number of bytes per second, got {throttle}"
        )
    if args.fleet is not None:
        from rackwise.pipeline.ingest import check_dataset  # noqa: PLC0415

        fleet = Path(args.fleet)
        if not fleet.is_dir():
            raise FileNotFoundError(2, "No such fleet directory", str(fleet))
        for name in ("brokers", "replicas"):
            check_dataset(fleet / name)
        return
    if getattr(args, "metadata", None) is not None:
        from rackwise.pipeline.ingest import check_dataset  # noqa: PLC0415

        export = Path(args.metadata)
        if not export.is_dir():
            raise FileNotFoundError(2, "No such metadata export directory", str(export))
        for name in ("brokers", "partitions"):
            check_dataset(export / name, "metadata dataset")
        return
    files = [args.brokers, args.assignment, *(p for _, p in _named(_log_dirs(args.log_dirs)))]
    for name in files:
        if not Path(name).is_file():
            raise FileNotFoundError(2, "No such file", str(name))


def _named(values: list[str | tuple[int, str]]) -> list[tuple[int | None, str]]:
    return [v if isinstance(v, tuple) else (None, v) for v in values]


class Progress:
    """One line per stage on stderr: ``name: what (1.2 s)``."""

    def __init__(self) -> None:
        self.began = time.perf_counter()

    def line(self, text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    def stage(self, name: str, seconds: float, detail: str = "") -> None:
        self.line(f"{name}: {detail + ' ' if detail else ''}({seconds:.1f} s)")

    def timed(self, prefix: str) -> Callable[[str, float], None]:
        """An ``on_stage`` callback for the jobs."""
        return lambda name, seconds: self.stage(f"{prefix} {name}", seconds)


def run_generate(args: argparse.Namespace) -> int:
    from rackwise.pipeline.generate import generate_fleet  # noqa: PLC0415

    progress = Progress()
    summary = generate_fleet(
        args.out,
        args.clusters,
        args.brokers,
        args.partitions,
        args.topology,
        args.seed,
        replication_factor=args.replication_factor,
        log_dirs_per_broker=args.log_dirs_per_broker,
        json_max_replicas=args.json_max_replicas,
        json_max_clusters=args.json_max_clusters,
        progress=progress.line,
    )
    if summary.json_skipped:
        skipped = summary.json_skipped
        named = skipped[0] if len(skipped) == 1 else f"{skipped[0]} .. {skipped[-1]}"
        progress.line(
            f"generate: JSON form skipped for {len(skipped)} cluster(s) ({named}): over "
            f"--json-max-replicas {args.json_max_replicas:,} or --json-max-clusters "
            f"{args.json_max_clusters}"
        )
    rows = [
        ("clusters", summary.clusters),
        ("brokers", summary.brokers),
        ("partitions", summary.partitions),
        ("replicas", summary.replicas),
        ("json clusters", len(summary.json_clusters)),
        ("seconds", summary.seconds),
    ]
    print(f"fleet {Path(args.out)}")
    print(render(("written", "count"), rows))
    return 0


def _inputs(args: argparse.Namespace) -> None:
    one = args.brokers is not None or args.assignment is not None or bool(args.log_dirs)
    if getattr(args, "metadata", None) is not None:
        if args.fleet is not None or one:
            other = "--fleet DIR" if args.fleet is not None else "--brokers/--assignment"
            raise UsageError(f"give either --metadata PATH or {other}, not both")
        return
    if args.fleet is not None and one:
        raise UsageError("give either --fleet DIR or --brokers/--assignment, not both")
    if args.fleet is None and (args.brokers is None or args.assignment is None):
        raise UsageError(
            "give --fleet DIR, --metadata PATH, or --brokers FILE and --assignment FILE"
        )


def _log_dirs(values: list[str]) -> list[str | tuple[int, str]]:
    out: list[str | tuple[int, str]] = []
    for value in values:
        broker, sep, path = value.partition("=")
        if sep and broker.isdigit():
            out.append((int(broker), path))
        else:
            out.append(value)
    return out


def ingest(args: argparse.Namespace, progress: Progress) -> tuple[SparkSession, ClusterTables]:
    """Start Spark and read the input into validated tables, with a progress line each."""
    check_options(args)
    began = time.perf_counter()
    from rackwise.pipeline.session import get_spark  # noqa: PLC0415

    try:
        spark = get_spark(args.master)
    except Exception as error:
        where = args.master or "local Spark"
        raise UsageError(f"cannot start Spark on {where}: {_first_line(error)}") from error
    progress.stage("spark", time.perf_counter() - began, spark.sparkContext.master or "")
    began = time.perf_counter()
    from rackwise.pipeline.ingest import read_cluster, read_fleet, read_metadata  # noqa: PLC0415

    if args.fleet is not None:
        tables = read_fleet(spark, args.fleet)
    elif getattr(args, "metadata", None) is not None:
        tables = read_metadata(spark, args.metadata, args.cluster_id)
    else:
        tables = read_cluster(
            spark, args.brokers, args.assignment, _log_dirs(args.log_dirs) or None, args.cluster_id
        )
    counts = {name: getattr(tables, name).count() for name in ("brokers", "replicas")}
    detail = f"{counts['brokers']:,} brokers, {counts['replicas']:,} replicas"
    progress.stage("ingest", time.perf_counter() - began, detail)
    return spark, tables


def write_rejected(tables: ClusterTables, out: Path, progress: Progress) -> int:
    """Write ``OUT/rejected/`` (Parquet) and the first rows to ``OUT/rejected.jsonl``; return
    how many rows were rejected."""
    began = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    path = out / REJECTED_DIR
    tables.rejected.coalesce(1).write.mode("overwrite").parquet(str(path))
    rejected = tables.rejected.sparkSession.read.parquet(str(path))
    count = rejected.count()
    sample = rejected.orderBy("cluster_id", "source", "reason", "record").limit(SAMPLE_ROWS)
    with (out / REJECTED_SAMPLE).open("w", encoding="utf-8") as handle:
        for row in sample.collect():
            handle.write(json.dumps(row.asDict(), ensure_ascii=False) + "\n")
    shown = f", the first {SAMPLE_ROWS:,} in {REJECTED_SAMPLE}" if count > SAMPLE_ROWS else ""
    detail = f"{_rows(count)} rejected -> {path}{shown}"
    progress.stage("rejected", time.perf_counter() - began, detail)
    return count


def rejected_by_cluster(spark: SparkSession, out: Path) -> dict[str, int]:
    """The rows :func:`write_rejected` wrote, counted per cluster (read back: the validation is
    not run again)."""
    rows = spark.read.parquet(str(out / REJECTED_DIR)).groupBy("cluster_id").count().collect()
    return {str(r["cluster_id"]): int(r["count"]) for r in rows}


def _rows(count: int) -> str:
    return f"{count:,} row" + ("" if count == 1 else "s")


def _refuse_rejects(args: argparse.Namespace, count: int, progress: Progress) -> bool:
    if args.fail_on_rejects and count:
        progress.line(f"error: {_rows(count)} rejected (--fail-on-rejects); see {args.out}")
        return True
    return False


def run_audit(args: argparse.Namespace) -> int:
    progress = Progress()
    spark, tables = ingest(args, progress)
    rejected = write_rejected(tables, Path(args.out), progress)
    if _refuse_rejects(args, rejected, progress):
        return EXIT_REJECTS
    from rackwise.pipeline.audit_job import run_audit as audit_job  # noqa: PLC0415

    began = time.perf_counter()
    summary = audit_job(
        spark, tables, args.out, args.min_insync_replicas, on_stage=progress.timed("audit")
    )
    progress.stage("audit", time.perf_counter() - began, f"-> {args.out}")
    _print_summary(args, summary, rejected, _AUDIT_COLUMNS)
    return 0


def run_plan(args: argparse.Namespace) -> int:
    progress = Progress()
    spark, tables = ingest(args, progress)
    rejected = write_rejected(tables, Path(args.out), progress)
    if _refuse_rejects(args, rejected, progress):
        return EXIT_REJECTS
    from rackwise.pipeline.plan_job import run_plan as plan_job  # noqa: PLC0415

    began = time.perf_counter()
    summary = plan_job(
        spark,
        tables,
        args.out,
        args.strategy,
        args.throttle,
        args.min_insync_replicas,
        on_stage=progress.timed("plan"),
        rejected=rejected_by_cluster(spark, Path(args.out)),
    )
    progress.stage("plan", time.perf_counter() - began, f"-> {args.out}")
    if args.format == "json":
        _print_summary(args, summary, rejected, _PLAN_COLUMNS)
    else:
        _print_summary(args, {"clusters": _plan_table(summary)}, rejected, _PLAN_COLUMNS)
    return 0


def _plan_table(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The plan's headline figures per cluster, flat, for the table (the JSON has them all)."""
    rows: dict[str, dict[str, Any]] = {}
    for cluster_id, entry in summary.get("clusters", {}).items():
        spread = entry.get("spread_violations", {})
        seconds = entry.get("move_time", {}).get("seconds")
        rows[cluster_id] = {
            "replica_moves": entry.get("replica_moves"),
            "lower_bound": entry.get("lower_bound", {}).get("replica_moves"),
            "intra_broker_moves": entry.get("intra_broker_moves"),
            "leader_moves": entry.get("leader_moves"),
            "data_to_move_bytes": entry.get("data_to_move_bytes"),
            "spread_before": spread.get("before"),
            "spread_after": spread.get("after"),
            "score_after": entry.get("balancedness_score", {}).get("after"),
            "move_time_s": None if seconds is None else round(float(seconds), 1),
        }
    return rows


def _print_summary(
    args: argparse.Namespace, summary: dict[str, Any], rejected: int, preferred: tuple[str, ...]
) -> None:
    if args.format == "json":
        print(json.dumps({**summary, "rejected": rejected}, sort_keys=True, indent=2))
        return
    clusters: dict[str, dict[str, Any]] = summary.get("clusters", {})
    first = next(iter(clusters.values()), {})
    columns = [c for c in preferred if c in first] or [
        k for k, v in first.items() if isinstance(v, int | float) and not isinstance(v, bool)
    ]
    rows = [
        [cluster_id, *(entry.get(c) for c in columns)]
        for cluster_id, entry in list(clusters.items())[:TABLE_CLUSTERS]
    ]
    print(render(["cluster", *columns], rows))
    if len(clusters) > TABLE_CLUSTERS:
        print(f"... {len(clusters) - TABLE_CLUSTERS:,} more clusters in {args.out}")
    print(f"rejected rows: {rejected:,}")
