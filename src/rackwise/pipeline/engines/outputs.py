"""What both engines do once their tables are written: the summaries, the files, the report.

An engine writes its tables as Parquet under ``OUT`` (``rejected/``, ``audit/<table>/``,
``plan/rows/kind=*/``) in the same schemas; everything after is read back from those files on
the driver (pyarrow: no Spark job, milliseconds for tables this small) and built here, by one
piece of code, whichever engine wrote them: ``rejected.jsonl``, ``summary.json``, the
reassignment files, the target state's figures, ``plan_summary.json`` and ``report.html``
(through :func:`rackwise.pipeline.report.write_report`).

Goals
    The same input gives the same files whichever engine ran (the engines' tables are checked
    equal by a test; the rest is this module).
Constraints
    Only small tables are read back: the audit's tables, the plan's per-broker, per-directory
    and payload rows; never the replicas or the target replicas.
Algorithm
    Audit: read ``clusters``, ``exposure`` and ``skew``; build the summary
    (:func:`rackwise.pipeline.audit.summary.summary_from_frames`); read the worst clusters'
    rows of every table for the report. Plan: read the payloads (each cluster's report and
    reassignment JSON), write the reassignment files, put the target's figures into the audit's
    ``load`` table (:func:`rackwise.pipeline.plan.after.after_load`), build the summary, and
    write one report: the plan first, then the audit of the current state, its per-broker
    charts drawn against the goals' targets (:func:`rackwise.pipeline.plan.after.load_frames`).
Worked example
    ``rackwise pipeline plan`` of 8 clusters: ``audit/load`` (648 rows) and ``plan/rows``'s
    ``kind=broker`` and ``kind=log_dir`` (576 rows) read back, 8 reassignment files written.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import pandas as pd
import pyarrow.parquet as pq

from rackwise.pipeline.audit.summary import summary_from_frames
from rackwise.pipeline.plan import REASSIGNMENT_FILE, ROWS_DIR, cluster_dir_name
from rackwise.pipeline.plan import SUMMARY_FILE as PLAN_SUMMARY_FILE
from rackwise.pipeline.plan.after import after_load, load_frames, skew_figures
from rackwise.pipeline.plan.group import PLAN_ROW_COLUMNS
from rackwise.pipeline.plan.summary import after_state, build_summary
from rackwise.pipeline.report import REPORT_CLUSTERS, write_report

StageCallback = Callable[[str, float], None]
"""Called after each stage with its name and its wall time in seconds."""

SUMMARY_FILE: Final = "summary.json"
REPORT_FILE: Final = "report.html"
AUDIT_DIR: Final = "audit"
REJECTED_DIR: Final = "rejected"
REJECTED_SAMPLE: Final = "rejected.jsonl"
SAMPLE_ROWS: Final = 1000
REPORT_VIOLATIONS: Final = 200
"""Spread violations shown per cluster in the report (all are in ``OUT/audit``)."""
_LOAD_KINDS: Final = ["broker", "log_dir"]


class Stages:
    """Wall time per stage, told to ``callback`` as each ends."""

    def __init__(self, callback: StageCallback | None) -> None:
        self.callback = callback
        self.mark = time.perf_counter()

    def restart(self) -> None:
        self.mark = time.perf_counter()

    def done(self, name: str) -> None:
        now = time.perf_counter()
        if self.callback is not None:
            self.callback(name, now - self.mark)
        self.mark = now


def write_json(path: Path, data: dict[str, Any]) -> None:
    """``data`` as JSON with sorted keys (stable from run to run), indented."""
    path.write_text(json.dumps(data, sort_keys=True, indent=2) + "\n", encoding="utf-8")


def read_table(out: Path, name: str, cluster_ids: list[str] | None = None) -> pd.DataFrame:
    """The audit table ``name`` as written under ``OUT/audit``, read on the driver (pyarrow),
    only the rows of ``cluster_ids`` when given."""
    if cluster_ids == []:  # a filter on no values has no type to compare with
        return pq.read_schema(_first_file(out / AUDIT_DIR / name)).empty_table().to_pandas()
    filters = None if cluster_ids is None else [("cluster_id", "in", cluster_ids)]
    frame: pd.DataFrame = pq.read_table(out / AUDIT_DIR / name, filters=filters).to_pandas()
    return frame


def _first_file(table_dir: Path) -> Path:
    return min(table_dir.rglob("*.parquet"))


# --- rejected rows ------------------------------------------------------------------------------


def rejected_sample(out: Path) -> int:
    """Write the first :data:`SAMPLE_ROWS` rows of ``OUT/rejected`` (by cluster, source,
    reason, record) to ``OUT/rejected.jsonl``; return how many rows were rejected."""
    rows = pq.read_table(out / REJECTED_DIR).to_pandas()
    first = rows.sort_values(["cluster_id", "source", "reason", "record"], kind="stable")
    with (out / REJECTED_SAMPLE).open("w", encoding="utf-8") as handle:
        for row in first.head(SAMPLE_ROWS).to_dict("records"):
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    return len(rows)


def rejected_by_cluster(out: Path) -> dict[str, int]:
    """The rows in ``OUT/rejected``, counted per cluster."""
    rows = pq.read_table(out / REJECTED_DIR, columns=["cluster_id"]).to_pandas()
    return {str(k): int(v) for k, v in rows.groupby("cluster_id").size().items()}


# --- audit --------------------------------------------------------------------------------------


def audit_frames(
    out: Path, brokers: pd.DataFrame, cluster_ids: list[str], clusters: pd.DataFrame
) -> dict[str, pd.DataFrame]:
    """The frames :func:`rackwise.pipeline.report.write_report` takes: the audit tables of
    ``cluster_ids`` read back from ``OUT/audit`` (and ``clusters``, the whole table), with the
    brokers' racks and the violations per node."""
    violations = read_table(out, "spread_violations", cluster_ids)
    per_node = (
        violations.groupby(["cluster_id", "level", "node"], sort=True)
        .size()
        .rename("partitions")
        .reset_index()
    )
    first = violations.sort_values(["cluster_id", "topic", "partition", "depth"], kind="stable")
    mine = brokers[brokers["cluster_id"].isin(cluster_ids)]
    return {
        "clusters": clusters,
        "brokers": mine[["cluster_id", "broker_id", "rack"]].reset_index(drop=True),
        "load": read_table(out, "load", cluster_ids),
        "exposure": read_table(out, "exposure", cluster_ids),
        "skew": read_table(out, "skew", cluster_ids),
        "spread_by_node": per_node,
        "spread_violations": first.head(REPORT_VIOLATIONS * max(1, len(cluster_ids))).reset_index(
            drop=True
        ),
    }


def worst_clusters(summary: dict[str, Any]) -> list[str]:
    """The clusters the report has a section for: the worst, as the audit ranks them."""
    return list(summary["fleet"]["worst_clusters"])[:REPORT_CLUSTERS]


def finish_audit(
    out: Path,
    brokers: pd.DataFrame,
    min_insync_replicas: int,
    stages: Stages,
    *,
    report: bool = True,
) -> tuple[dict[str, Any], pd.DataFrame]:
    """Build and write ``summary.json`` from ``OUT/audit`` (stage ``summary``) and, with
    ``report``, ``report.html`` (stage ``report``); return the summary and the ``clusters``
    table."""
    clusters = read_table(out, "clusters")
    summary = summary_from_frames(
        clusters, read_table(out, "exposure"), read_table(out, "skew"), min_insync_replicas
    )
    write_json(out / SUMMARY_FILE, summary)
    stages.done("summary")
    if report:
        chosen = worst_clusters(summary)
        write_report(out / REPORT_FILE, summary, audit_frames(out, brokers, chosen, clusters))
        stages.done("report")
    return summary, clusters


# --- plan ---------------------------------------------------------------------------------------


def read_rows(out: Path, kinds: list[str], columns: list[str] | None = None) -> pd.DataFrame:
    """The plan's rows of ``kinds`` from ``OUT/plan/rows`` (with ``kind``); no rows, with the
    same columns, where the plan wrote none of them (an input whose every row was rejected)."""
    root = out / ROWS_DIR
    wanted = None if columns is None else [*columns, "kind"]
    present = [k for k in kinds if (root / f"kind={k}").is_dir()]
    if not present:
        return pd.DataFrame(columns=wanted or list(PLAN_ROW_COLUMNS))
    table = pq.read_table(root, columns=wanted, filters=[("kind", "in", present)])
    frame: pd.DataFrame = table.to_pandas()
    frame["kind"] = frame["kind"].astype(str)
    return frame


def plan_reports(out: Path) -> dict[str, dict[str, Any]]:
    """Each cluster's plan report (the ``summary`` payloads)."""
    rows = read_rows(out, ["summary"], ["cluster_id", "payload"])
    return {str(r.cluster_id): json.loads(r.payload) for r in rows.itertuples(index=False)}


def write_reassignments(out: Path, reports: dict[str, dict[str, Any]]) -> None:
    """Write each changed cluster's ``OUT/<cluster>/reassignment.json`` and name it in its
    report (``reassignment_file``, null for a cluster with nothing to change)."""
    rows = read_rows(out, ["reassignment"], ["cluster_id", "payload"])
    written = set()
    for row in rows.itertuples(index=False):
        name = cluster_dir_name(str(row.cluster_id))
        target = out / name / REASSIGNMENT_FILE
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(str(row.payload) + "\n", encoding="utf-8")
        written.add(name)
    for cluster_id, report in reports.items():
        name = cluster_dir_name(cluster_id)
        report["reassignment_file"] = f"{name}/{REASSIGNMENT_FILE}" if name in written else None


def finish_plan(
    out: Path,
    brokers: pd.DataFrame,
    before: dict[str, Any],
    rejected: dict[str, int],
    stages: Stages,
    *,
    strategy: str,
    throttle_bytes_per_s: int | None,
    min_insync_replicas: int,
) -> dict[str, Any]:
    """From ``OUT/plan/rows`` and ``OUT/audit`` (the current state's audit, ``before`` its
    summary): the reassignment files (stage ``reassignments``), the target state's figures
    (``after``), ``plan_summary.json`` (``summary``) and ``report.html`` (``report``)."""
    reports = plan_reports(out)
    write_reassignments(out, reports)
    stages.done("reassignments")
    loads = read_rows(out, _LOAD_KINDS)
    target_load = after_load(read_table(out, "load"), loads, brokers)
    after = after_state(reports, skew_figures(target_load))
    stages.done("after")
    summary = build_summary(
        reports,
        before,
        after,
        rejected,
        strategy=strategy,
        throttle_bytes_per_s=throttle_bytes_per_s,
        min_insync_replicas=min_insync_replicas,
    )
    write_json(out / PLAN_SUMMARY_FILE, summary)
    stages.done("summary")
    chosen = worst_clusters(before)
    frames = audit_frames(out, brokers, chosen, read_table(out, "clusters"))
    plan_frames = load_frames(loads[loads["cluster_id"].isin(chosen)])
    plan_frames["domains_after"] = target_load[target_load["cluster_id"].isin(chosen)].reset_index(
        drop=True
    )
    write_report(out / REPORT_FILE, before, frames, summary, plan_frames)
    stages.done("report")
    return summary
