"""``rackwise pipeline plan``: a reassignment per cluster, on Spark.

The replicas and the brokers' directories are cogrouped by ``cluster_id`` and each cluster is
planned in one Arrow call on an executor (:mod:`rackwise.pipeline._plan_group`, over
:func:`rackwise.balance.plan_cluster`): a cluster, not a topic, is the unit, so a fleet of
thousands of clusters costs thousands of calls, and one large cluster is one call.

Outputs under ``OUT``:

``OUT/<cluster_id>/reassignment.json``
    What ``kafka-reassign-partitions --execute --reassignment-json-file`` takes: the partitions
    the plan changes, with ``log_dirs`` (an absolute path for every replica the plan places,
    ``"any"`` for one that stays where it is or whose broker's directories are not known).
    Written only for a cluster the plan changes (Kafka refuses an empty reassignment); the
    summary's ``reassignment_file`` names it, or is null.
    A cluster id is used as a directory name with every character but letters, digits, ``-``,
    ``_`` and ``.`` percent-encoded.
``OUT/plan_summary.json``
    Shaped like the audit's ``summary.json``: ``{"strategy", "throttle_bytes_per_s",
    "min_insync_replicas", "fleet", "clusters": {cluster_id: {...}}}``; see
    :mod:`rackwise.pipeline._plan_summary` for the figures per cluster.
``OUT/plan/rows/kind=*``
    The plan as Parquet: ``kind=replica`` the target replicas (the replicas schema plus
    ``moved``), ``kind=broker`` and ``kind=log_dir`` the load before and after.
``OUT/report.html``
    The audit's report of the current state with the plan's before/after section, written by
    :func:`rackwise.pipeline.report.write_report`; every frame in it is read for the report's
    clusters only (the worst ``REPORT_CLUSTERS``), from the tables already written.
``OUT/summary.json``, ``OUT/audit/``
    The audit of the current state (:func:`rackwise.pipeline.audit_job.run_audit`), as
    ``rackwise pipeline audit`` writes it.

Violations and skew before are the audit's. After, they are computed exactly from the plan
rather than by auditing the target again: spread violations by the planner on the whole rack
tree (the audit's definition, :func:`rackwise.topology.spread_violations`), and the skew from
the audit's own ``load`` table, every domain kept with its capacity and its load replaced by the
target's per-broker and per-directory sums (:func:`rackwise.pipeline._plan_summary.after_load`):
a join of small tables, no pass over the replicas. A cluster with rejected input rows is
planned on its valid rows; its summary says how many rows were set aside.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote

import pandas as pd
from pyspark.sql import functions as F  # noqa: N812

from rackwise.balance import STRATEGIES, Strategy
from rackwise.common import IllegalArgumentException
from rackwise.pipeline import schema
from rackwise.pipeline._plan_group import BROKER_DIR_COLUMNS, PLAN_ROWS_DDL, plan_group
from rackwise.pipeline._plan_summary import (
    after_load,
    after_state,
    build_summary,
    load_frames,
    skew_figures,
)
from rackwise.pipeline.audit import DEFAULT_MIN_INSYNC_REPLICAS
from rackwise.pipeline.audit_job import AUDIT_DIR, REPORT_FILE, StageCallback, run_audit
from rackwise.pipeline.report import REPORT_CLUSTERS, write_report

REPORT_VIOLATIONS: Final = 200
"""Spread violations listed per cluster in the report (all are in ``OUT/audit``)."""

if TYPE_CHECKING:
    from os import PathLike

    from pyspark.sql import DataFrame, SparkSession

    from rackwise.pipeline.tables import ClusterTables

SUMMARY_FILE: Final = "plan_summary.json"
REASSIGNMENT_FILE: Final = "reassignment.json"
ROWS_DIR: Final = "plan/rows"


def cluster_dir_name(cluster_id: str) -> str:
    """A cluster id made safe as one directory name."""
    name = quote(cluster_id, safe="-_.")
    if name in (".", ".."):
        return name.replace(".", "%2E")
    return name or "%00"


def plan_rows(tables: ClusterTables, strategy: Strategy, seed: int = 0) -> DataFrame:
    """Every cluster planned: the rows of :data:`rackwise.pipeline._plan_group.PLAN_ROWS_DDL`."""
    if strategy not in STRATEGIES:
        raise IllegalArgumentException(
            f"Unknown strategy {strategy!r}; expected one of {', '.join(STRATEGIES)}"
        )
    replicas = tables.replicas.select(*schema.REPLICAS_COLUMNS)
    broker_dirs = tables.brokers.select(*schema.BROKERS_COLUMNS).join(
        tables.log_dirs.select(*schema.LOG_DIRS_COLUMNS),
        on=["cluster_id", "broker_id"],
        how="left",
    )
    return (
        replicas.groupBy("cluster_id")
        .cogroup(broker_dirs.select(*BROKER_DIR_COLUMNS).groupBy("cluster_id"))
        .applyInArrow(plan_group(strategy, seed), schema=PLAN_ROWS_DDL)
    )


def run_plan(
    spark: SparkSession,
    tables: ClusterTables,
    out_dir: str | PathLike[str],
    strategy: Strategy = "keep",
    throttle_bytes_per_s: int | None = None,
    min_insync_replicas: int = DEFAULT_MIN_INSYNC_REPLICAS,
    *,
    on_stage: StageCallback | None = None,
    rejected: dict[str, int] | None = None,
) -> dict[str, Any]:
    """Plan every cluster of ``tables``, write the outputs (module docstring) under ``out_dir``
    and return the summary written to ``plan_summary.json``. ``on_stage`` hears each stage's
    name and wall time in seconds as it ends (``plan``, ``reassignments``, the audit's stages
    as ``audit <stage>``, ``after``, ``summary``, ``report``). ``rejected``: the input rows
    set aside per cluster, if the caller has counted them already (else they are counted)."""
    if strategy not in STRATEGIES:
        raise IllegalArgumentException(
            f"Unknown strategy {strategy!r}; expected one of {', '.join(STRATEGIES)}"
        )
    if throttle_bytes_per_s is not None and throttle_bytes_per_s <= 0:
        raise IllegalArgumentException(
            f"The throttle must be a positive number of bytes per second, got "
            f"{throttle_bytes_per_s}"
        )
    stage = _Stages(on_stage)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows_path = out / ROWS_DIR
    plan_rows(tables, strategy).write.mode("overwrite").partitionBy("kind").parquet(str(rows_path))
    rows = spark.read.schema(PLAN_ROWS_DDL).parquet(str(rows_path))
    reports = {
        r["cluster_id"]: json.loads(r["payload"])
        for r in rows.where(F.col("kind") == "summary").select("cluster_id", "payload").collect()
    }
    stage.done("plan")
    _name_reassignments(reports, _write_reassignments(rows, out), out)
    stage.done("reassignments")
    audit_stage = None if on_stage is None else _prefixed(on_stage, "audit ")
    before = run_audit(spark, tables, out, min_insync_replicas, on_stage=audit_stage)
    stage.mark_now()
    audit_load = spark.read.parquet(str(out / AUDIT_DIR / "load"))
    target_load = after_load(audit_load, rows, tables.brokers).localCheckpoint()
    after = after_state(reports, skew_figures(target_load))
    stage.done("after")
    summary = build_summary(
        reports,
        before,
        after,
        _rejected_counts(tables) if rejected is None else rejected,
        strategy=strategy,
        throttle_bytes_per_s=throttle_bytes_per_s,
        min_insync_replicas=min_insync_replicas,
    )
    (out / SUMMARY_FILE).write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    stage.done("summary")
    _write_report(spark, out, tables, before, summary, rows, target_load)
    stage.done("report")
    return summary


def _prefixed(callback: StageCallback, prefix: str) -> StageCallback:
    return lambda name, seconds: callback(prefix + name, seconds)


def _rejected_counts(tables: ClusterTables) -> dict[str, int]:
    """Input rows set aside by validation, per cluster."""
    counts = tables.rejected.groupBy("cluster_id").count().collect()
    return {row["cluster_id"]: int(row["count"]) for row in counts}


class _Stages:
    """Wall time per stage, told to ``progress``."""

    def __init__(self, progress: StageCallback | None) -> None:
        self.progress = progress
        self.mark = time.perf_counter()

    def mark_now(self) -> None:
        self.mark = time.perf_counter()

    def done(self, name: str) -> None:
        now = time.perf_counter()
        if self.progress is not None:
            self.progress(name, now - self.mark)
        self.mark = now


def _name_reassignments(reports: dict[str, dict[str, Any]], written: set[str], out: Path) -> None:
    """Record each cluster's reassignment file (or None) in its report; remove a file left by
    an earlier run into the same OUT for a cluster that now has nothing to change."""
    for cid, report in reports.items():
        name = cluster_dir_name(cid)
        report["reassignment_file"] = f"{name}/{REASSIGNMENT_FILE}" if name in written else None
        stale = out / name / REASSIGNMENT_FILE
        if name not in written and stale.exists():
            stale.unlink()


def _write_reassignments(rows: DataFrame, out: Path) -> set[str]:
    """Write each changed cluster's document; return the directory names written."""
    documents = rows.where(F.col("kind") == "reassignment").select("cluster_id", "payload")
    written = set()
    for row in documents.toLocalIterator():
        name = cluster_dir_name(row["cluster_id"])
        target = out / name / REASSIGNMENT_FILE
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(row["payload"] + "\n")
        written.add(name)
    return written


def _write_report(
    spark: SparkSession,
    out: Path,
    tables: ClusterTables,
    before: dict[str, Any],
    summary: dict[str, Any],
    rows: DataFrame,
    target_load: DataFrame,
) -> None:
    """The audit's report of the current state (the worst clusters first, as the audit
    chooses them) with the plan's before/after section; every frame is read for the chosen
    clusters only, from the tables the audit and the plan wrote."""
    chosen = list(before["fleet"]["worst_clusters"])[:REPORT_CLUSTERS]
    frames = _audit_frames(spark, out, tables, chosen)
    mine = F.col("cluster_id").isin(chosen)
    plan_frames = load_frames(rows.where(mine))
    plan_frames["domains_after"] = target_load.where(mine).toPandas()
    write_report(out / REPORT_FILE, before, frames, summary, plan_frames)


def _audit_frames(
    spark: SparkSession, out: Path, tables: ClusterTables, chosen: list[str]
) -> dict[str, pd.DataFrame]:
    """The frames :func:`rackwise.pipeline.report.write_report` takes, from ``OUT/audit``."""
    mine = F.col("cluster_id").isin(chosen)

    def read(name: str) -> DataFrame:
        return spark.read.parquet(str(out / AUDIT_DIR / name)).where(mine)

    violations = read("spread_violations")
    per_node = violations.groupBy("cluster_id", "level", "node").agg(
        F.count(F.lit(1)).alias("partitions")
    )
    brokers = tables.brokers.where(mine).select("cluster_id", "broker_id", "rack")
    return {
        "clusters": read("clusters").toPandas(),
        "brokers": brokers.toPandas(),
        "load": read("load").toPandas(),
        "exposure": read("exposure").toPandas(),
        "skew": read("skew").toPandas(),
        "spread_by_node": per_node.toPandas(),
        "spread_violations": violations.orderBy("cluster_id", "topic", "partition", "depth")
        .limit(REPORT_VIOLATIONS * max(1, len(chosen)))
        .toPandas(),
    }
