"""The ``pipeline`` command's options and stages, shared by ``rackwise pipeline`` and
``spark-submit .../rackwise/pipeline/__main__.py``.

Nothing here imports Spark, pyarrow or pandas until a stage needs them, so that ``rackwise``
itself starts fast. What can be refused is refused before any engine starts: options that do
not go together, inputs that are not there, a JSON document that does not parse, an ``--out``
that is not a rackwise output. Then the engine is chosen (:mod:`rackwise.pipeline.engines`),
and the run writes into a new directory swapped in as ``--out`` at the end
(:mod:`rackwise.pipeline.output`). Progress goes to stderr, one line per stage with its wall
time; the summary goes to stdout, as a table or as JSON. Ctrl-C stops the run with one line,
``error: interrupted``, and exit status 130, whichever engine runs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, NoReturn

from rackwise.pipeline._summary_table import TABLE_CLUSTERS, plan_table, render, table_rows
from rackwise.pipeline.schema import DEFAULT_CLUSTER_ID

if TYPE_CHECKING:
    from rackwise.pipeline.audit.rules import DomainRules
    from rackwise.pipeline.engines import Engine
    from rackwise.pipeline.ingest.json_input import JsonColumns
    from rackwise.pipeline.ingest.source import InputSource

EXIT_REJECTS: Final = 2
"""Exit status when ``--fail-on-rejects`` finds rejected rows."""
EXIT_INTERRUPTED: Final = 130
"""Exit status after Ctrl-C (128 + SIGINT), as a shell reports it."""
ENGINE_CHOICES: Final = ("auto", "local", "spark")
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
_plan_table = plan_table  # the name the command's tests know
__all__ = ["EXIT_REJECTS", "configure", "render", "run"]


class UsageError(ValueError):
    """Options that do not go together: one line, exit status 1."""


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
    for name, help_text, run_stage in (
        ("audit", "spread, failure-domain exposure, load and skew per cluster", run_audit),
        ("plan", "a target assignment per cluster and the moves to reach it", run_plan),
    ):
        sub = commands.add_parser(name, help=help_text, description=help_text)
        _add_input_options(sub)
        sub.add_argument("--min-insync-replicas", type=int, default=2, metavar="N")
        sub.add_argument(
            "--min-insync-racks",
            type=int,
            default=None,
            metavar="N",
            help="the brokers' default min.insync.racks (default 1)",
        )
        sub.add_argument(
            "--min-insync-racks-level",
            type=int,
            default=None,
            metavar="L",
            help="the brokers' default min.insync.racks.level (default 1: the data centre)",
        )
        sub.add_argument(
            "--leaders-preference",
            default=None,
            metavar="SPEC",
            help="the brokers' default.leaders.preference (none, racks:/dc1,..., "
            "ordered_racks:/dc1,...)",
        )
        if name == "plan":
            sub.add_argument(
                "--strategy", choices=("keep", "rack-aware", "multi-level"), default="keep"
            )
            sub.add_argument("--throttle", type=int, default=None, metavar="BYTES_PER_S")
        sub.set_defaults(pipeline_run=run_stage)


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
    sub.add_argument(
        "--bootstrap-server",
        action="append",
        default=[],
        metavar="[NAME=]HOST:PORT[,HOST:PORT]",
        help="a running cluster, read through the admin APIs (repeatable, one cluster each); "
        "its rows carry NAME, else --cluster-id for a single cluster, else the cluster's id",
    )
    sub.add_argument(
        "--bootstrap-servers-file",
        metavar="FILE",
        help="running clusters, one [NAME=]HOST:PORT[,HOST:PORT] a line ('#' comments)",
    )
    sub.add_argument(
        "--command-config",
        metavar="FILE",
        help="admin client properties for the running clusters (PLAINTEXT only)",
    )
    sub.add_argument(
        "--engine",
        choices=ENGINE_CHOICES,
        default="auto",
        help="in process (local) or on Spark; auto: Spark for a named --master or a large "
        "input, else local (default)",
    )
    sub.add_argument("--master", default=None, metavar="URL", help="default: local Spark")
    sub.add_argument(
        "--out",
        required=True,
        metavar="OUT",
        help="a new or empty directory, or an earlier output of this command (replaced whole)",
    )
    sub.add_argument("--fail-on-rejects", action="store_true", help="exit 2 if any row is rejected")
    sub.add_argument("--format", choices=("table", "json"), default="table")


def run(args: argparse.Namespace) -> int:
    """Run the chosen subcommand. An error Spark raises while reading the input (a corrupt
    Parquet file, say) becomes one line naming it, as every other input error is. Ctrl-C
    after Spark started prints ``error: interrupted`` and ends the process at once."""
    try:
        code: int = args.pipeline_run(args)
    except KeyboardInterrupt:
        if "pyspark" in sys.modules:
            _exit_interrupted()
        raise
    except Exception as error:
        spark_errors = sys.modules.get("pyspark.errors")
        if spark_errors is None or not isinstance(error, spark_errors.PySparkException):
            raise
        raise UsageError(f"Spark: {_first_line(error)}") from error
    return code


def _exit_interrupted() -> NoReturn:
    """The output's new directory is gone already (the interrupt unwound through it): say so
    in one line, stop the JVM and leave without running exit handlers, which would call into
    it and log their failures."""
    from rackwise.pipeline.engines.session import stop_jvm  # noqa: PLC0415

    print("error: interrupted", file=sys.stderr, flush=True)
    sys.stdout.flush()
    stop_jvm()
    os._exit(EXIT_INTERRUPTED)


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


_MASTER: Final = re.compile(
    r"local(\[(\*|[1-9][0-9]*)(,[0-9]+)?\])?|local-cluster\[[0-9]+,[0-9]+,[0-9]+\]"
    r"|yarn|(spark|mesos|k8s)://\S+"
)


def check_options(args: argparse.Namespace) -> InputSource:
    """Refuse what cannot work before any engine starts: inputs that do not go together or
    do not exist, a master URL Spark does not know, impossible numbers, an ``--out`` this run
    may not replace; return the input."""
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
    for flag, value in (
        ("--min-insync-racks", args.min_insync_racks),
        ("--min-insync-racks-level", args.min_insync_racks_level),
    ):
        if value is not None and value < 1:
            raise UsageError(f"{flag} must be at least 1, got {value}")
    if args.leaders_preference is not None:
        from rackwise.topology import (  # noqa: PLC0415
            InvalidLeadersPreferenceException,
            parse_leaders_preference,
        )

        try:
            parse_leaders_preference(args.leaders_preference)
        except InvalidLeadersPreferenceException as e:
            raise UsageError(f"--leaders-preference {args.leaders_preference!r}: {e}") from None
    throttle = getattr(args, "throttle", None)
    if throttle is not None and throttle <= 0:
        raise UsageError(
            f"--throttle must be a positive number of bytes per second, got {throttle}"
        )
    if args.master is not None and args.engine == "local":
        raise UsageError("--master names a Spark master; it does not go with --engine local")
    from rackwise.pipeline.ingest.source import InputSource, live_clusters  # noqa: PLC0415
    from rackwise.pipeline.output import check_output_dir  # noqa: PLC0415

    if _live(args):
        source = InputSource.live_clusters(
            live_clusters(args.bootstrap_server, args.bootstrap_servers_file),
            args.cluster_id,
            args.command_config,
        )
    elif args.fleet is not None:
        source = InputSource.fleet_dir(args.fleet)
    elif getattr(args, "metadata", None) is not None:
        source = InputSource.metadata_export(
            args.metadata, args.cluster_id, _log_dirs(args.log_dirs)
        )
    else:
        source = InputSource.json_cluster(
            args.brokers, args.assignment, _log_dirs(args.log_dirs), args.cluster_id
        )
    source.check()
    check_output_dir(Path(args.out))
    return source


def _live(args: argparse.Namespace) -> bool:
    return bool(
        getattr(args, "bootstrap_server", None) or getattr(args, "bootstrap_servers_file", None)
    )


def _inputs(args: argparse.Namespace) -> None:
    one = args.brokers is not None or args.assignment is not None
    if _live(args):
        given = [
            flag
            for flag, value in (("--brokers/--assignment", one), ("--log-dirs", args.log_dirs),
                                ("--fleet", args.fleet), ("--metadata", args.metadata))
            if value
        ]  # fmt: skip
        if given:
            raise UsageError(f"give either --bootstrap-server or {given[0]}, not both")
        return
    if getattr(args, "command_config", None) is not None:
        raise UsageError(
            "--command-config goes with --bootstrap-server or --bootstrap-servers-file"
        )
    if getattr(args, "metadata", None) is not None:
        if args.fleet is not None or one:
            other = "--fleet DIR" if args.fleet is not None else "--brokers/--assignment"
            raise UsageError(f"give either --metadata PATH or {other}, not both")
        return
    if args.fleet is not None and args.log_dirs:
        raise UsageError("--log-dirs goes with --brokers/--assignment or --metadata, not --fleet")
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


class Progress:
    """One line per stage on stderr: ``name: what (1.2 s)``."""

    def __init__(self) -> None:
        self.began = time.perf_counter()

    def line(self, text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    def stage(self, name: str, seconds: float, detail: str = "") -> None:
        self.line(f"{name}: {detail + ' ' if detail else ''}({seconds:.1f} s)")

    def timed(self, prefix: str) -> Callable[[str, float], None]:
        """An ``on_stage`` callback for the engines."""
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


def _open_engine(args: argparse.Namespace, name: str, progress: Progress) -> Engine:
    """The chosen engine, Spark started (with a progress line) if it is Spark."""
    if name == "local":
        from rackwise.pipeline.engines.local import LocalEngine  # noqa: PLC0415

        return LocalEngine()
    from rackwise.pipeline.engines.session import get_spark, quiet_interrupts  # noqa: PLC0415

    began = time.perf_counter()
    try:
        spark = get_spark(args.master)
    except Exception as error:
        where = args.master or "local Spark"
        raise UsageError(f"cannot start Spark on {where}: {_first_line(error)}") from error
    quiet_interrupts()
    progress.stage("spark", time.perf_counter() - began, spark.sparkContext.master or "")
    from rackwise.pipeline.engines.spark import SparkEngine  # noqa: PLC0415

    return SparkEngine(spark)


def _run_stages(args: argparse.Namespace, command: str) -> int:
    """Check, choose the engine, ingest, write the rejected rows, then audit or plan into a
    new output directory swapped in as ``--out``; print the summary."""
    from rackwise.pipeline.engines import choose_engine  # noqa: PLC0415
    from rackwise.pipeline.engines.session import under_spark_submit  # noqa: PLC0415
    from rackwise.pipeline.output import owned_output  # noqa: PLC0415

    progress = Progress()
    source = check_options(args)
    args.domain_rules = domain_rules(args, source)
    began = time.perf_counter()
    columns: JsonColumns | None = None
    if source.kind == "live":
        columns = _read_live(args, source, progress)
        args.domain_rules = domain_rules(args, source, columns.topic_configs)
    elif source.kind == "json":
        columns = source.parse_json()
    parsed = time.perf_counter() - began
    named_master = args.master is not None or under_spark_submit()
    name, why = choose_engine(args.engine, source.replica_rows(columns), has_master=named_master)
    progress.line(f"engine: {name} ({why})")
    engine = _open_engine(args, name, progress)
    out = Path(args.out)
    with owned_output(out, command) as new:
        new.notes["engine"] = name
        began = time.perf_counter()
        tables = engine.ingest(source, columns)
        brokers, replicas = engine.count(tables)
        detail = f"{brokers:,} brokers, {replicas:,} replicas"
        progress.stage("ingest", parsed + time.perf_counter() - began, detail)
        began = time.perf_counter()
        rejected = engine.write_rejected(tables, new.path)
        progress.stage("rejected", time.perf_counter() - began, _rejected_detail(rejected, out))
        if args.fail_on_rejects and rejected:
            new.notes["stopped"] = "rows rejected (--fail-on-rejects)"
            progress.line(f"error: {_rows(rejected)} rejected (--fail-on-rejects); see {out}")
            return EXIT_REJECTS
        began = time.perf_counter()
        summary = _stage(args, command, engine, tables, new.path, progress)
    progress.stage(command, time.perf_counter() - began, f"-> {out}")
    _print_summary(args, summary, rejected, command)
    return 0


def _stage(
    args: argparse.Namespace,
    command: str,
    engine: Engine,
    tables: Any,
    out: Path,
    progress: Progress,
) -> dict[str, Any]:
    rules = args.domain_rules
    if command == "audit":
        return engine.audit(
            tables, out, args.min_insync_replicas, progress.timed("audit"), rules=rules
        )
    return engine.plan(
        tables,
        out,
        args.strategy,
        args.throttle,
        args.min_insync_replicas,
        progress.timed("plan"),
        rules=rules,
    )


def domain_rules(
    args: argparse.Namespace,
    source: InputSource,
    read: Sequence[tuple[str, str, str, str]] = (),
) -> DomainRules:
    """The topics' rules: the options' broker defaults, then the input's topic configs (a
    fleet's dataset, or those ``read`` from running clusters)."""
    from rackwise.pipeline.audit.rules import (  # noqa: PLC0415
        DEFAULT_LEADERS_PREFERENCE,
        MIN_INSYNC_RACKS,
        MIN_INSYNC_RACKS_LEVEL,
        DomainRules,
    )
    from rackwise.pipeline.ingest.topic_configs import read_topic_configs  # noqa: PLC0415

    defaults = {
        key: str(value)
        for key, value in (
            (MIN_INSYNC_RACKS, args.min_insync_racks),
            (MIN_INSYNC_RACKS_LEVEL, args.min_insync_racks_level),
            (DEFAULT_LEADERS_PREFERENCE, args.leaders_preference),
        )
        if value is not None
    }
    try:
        return DomainRules.of(defaults, [*read_topic_configs(source), *read])
    except ValueError as e:  # a value that does not parse, a dataset of the wrong shape
        raise UsageError(str(e)) from None


def _read_live(args: argparse.Namespace, source: InputSource, progress: Progress) -> JsonColumns:
    """The running clusters read by the reader the command line gives (``live_reader``: the
    client layer, which the pipeline may not import)."""
    reader = getattr(args, "live_reader", None)
    if reader is None:
        raise UsageError(
            "--bootstrap-server is read by 'rackwise pipeline'; under spark-submit give the "
            "cluster as files"
        )
    default = None if source.cluster_id == DEFAULT_CLUSTER_ID else source.cluster_id
    columns: JsonColumns = reader(source, progress.line, default)
    return columns


def _rejected_detail(count: int, out: Path) -> str:
    from rackwise.pipeline.engines.outputs import (  # noqa: PLC0415
        REJECTED_DIR,
        REJECTED_SAMPLE,
        SAMPLE_ROWS,
    )

    shown = f", the first {SAMPLE_ROWS:,} in {REJECTED_SAMPLE}" if count > SAMPLE_ROWS else ""
    return f"{_rows(count)} rejected -> {out / REJECTED_DIR}{shown}"


def _rows(count: int) -> str:
    return f"{count:,} row" + ("" if count == 1 else "s")


def run_audit(args: argparse.Namespace) -> int:
    return _run_stages(args, "audit")


def run_plan(args: argparse.Namespace) -> int:
    return _run_stages(args, "plan")


def _print_summary(
    args: argparse.Namespace, summary: dict[str, Any], rejected: int, command: str
) -> None:
    if args.format == "json":
        print(json.dumps({**summary, "rejected": rejected}, sort_keys=True, indent=2))
        return
    preferred: tuple[str, ...] = _AUDIT_COLUMNS
    clusters = summary.get("clusters", {})
    if command == "plan":
        clusters, preferred = plan_table(summary), _PLAN_COLUMNS
    headers, rows = table_rows(clusters, preferred)
    print(render(headers, rows))
    if len(clusters) > TABLE_CLUSTERS:
        print(f"... {len(clusters) - TABLE_CLUSTERS:,} more clusters in {args.out}")
    print(f"rejected rows: {rejected:,}")
