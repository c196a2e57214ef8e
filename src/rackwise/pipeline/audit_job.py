"""The audit job: run :func:`rackwise.pipeline.audit.assemble_audit` and write its outputs.

``OUT/audit/<table>/`` (Parquet, one directory per table in ``RESULT_TABLES``),
``OUT/summary.json`` (sorted keys, indented) and ``OUT/report.html`` (self-contained).

The input is read once. Each table the outputs share (the one aggregation of the replicas, the
per-partition table, the violating placements, the per-domain table) is computed once and
checkpointed locally (memory, spilling to disk), and what follows is built on the checkpoint:
the query plans stay short and nothing is computed twice (a cached frame that appears twice in
one plan, as in a self-join, is not always recognised by Spark's cache; a checkpoint is). Each
output table is then computed once, as it is written; the summary and the report read the
written Parquet back on the driver (pyarrow: no Spark job), which for tables this small costs
milliseconds where a Spark job costs a second. The checkpoints go when the session drops them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import pandas as pd
import pyarrow.parquet as pq
from pyspark.sql import functions as F  # noqa: N812

from rackwise.pipeline.audit import (
    RESULT_TABLES,
    AuditInput,
    AuditResult,
    assemble_audit,
    local_checkpoint,
    prepare_audit,
    summary_from_frames,
)
from rackwise.pipeline.report import REPORT_CLUSTERS, write_report

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

StageCallback = Callable[[str, float], None]
"""Called after each stage with its name and its wall time in seconds."""

SUMMARY_FILE: Final = "summary.json"
REPORT_FILE: Final = "report.html"
AUDIT_DIR: Final = "audit"
_SMALL_TABLES: Final = frozenset({"clusters", "exposure", "load", "skew"})
_ORDER: Final = {
    "clusters": ("cluster_id",),
    "exposure": ("cluster_id", "level", "domain"),
    "load": ("cluster_id", "level", "domain"),
    "skew": ("cluster_id", "level", "metric"),
}
# The spread violations shown per cluster in the report (all are in the Parquet table).
_REPORT_VIOLATIONS: Final = 200


class _Stages:
    def __init__(self, spark: SparkSession, callback: StageCallback | None) -> None:
        self._spark = spark
        self._callback = callback
        self._start = time.perf_counter()

    def begin(self, name: str) -> None:
        self._spark.sparkContext.setJobDescription(f"rackwise audit: {name}")
        self._start = time.perf_counter()

    def end(self, name: str) -> None:
        if self._callback is not None:
            self._callback(name, time.perf_counter() - self._start)


def write_summary(path: Path, summary: dict[str, Any]) -> None:
    """``summary`` as JSON with sorted keys (stable from run to run), indented."""
    path.write_text(json.dumps(summary, sort_keys=True, indent=2) + "\n", encoding="utf-8")


def _write_table(frame: DataFrame, name: str, out: Path) -> None:
    if name in _SMALL_TABLES:
        frame = frame.coalesce(1).sortWithinPartitions(*_ORDER[name])
    frame.write.mode("overwrite").parquet(str(out / AUDIT_DIR / name))


def read_table(out: Path, name: str, cluster_ids: list[str] | None = None) -> pd.DataFrame:
    """The audit table ``name`` as written under ``OUT/audit``, read on the driver (pyarrow),
    only the rows of ``cluster_ids`` when given."""
    filters = None if cluster_ids is None else [("cluster_id", "in", cluster_ids)]
    frame: pd.DataFrame = pq.read_table(out / AUDIT_DIR / name, filters=filters).to_pandas()
    return frame


def report_frames(
    out: Path, result: AuditResult, cluster_ids: list[str], clusters: pd.DataFrame
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
    chosen = F.col("cluster_id").isin(cluster_ids)
    brokers = result.small.broker_leaves.where(chosen).select("cluster_id", "broker_id", "rack")
    first = violations.sort_values(["cluster_id", "topic", "partition", "depth"], kind="stable")
    return {
        "clusters": clusters,
        "brokers": brokers.toPandas(),
        "load": read_table(out, "load", cluster_ids),
        "exposure": read_table(out, "exposure", cluster_ids),
        "skew": read_table(out, "skew", cluster_ids),
        "spread_by_node": per_node,
        "spread_violations": first.head(_REPORT_VIOLATIONS * max(1, len(cluster_ids))).reset_index(
            drop=True
        ),
    }


def run_audit(
    spark: SparkSession,
    tables: AuditInput,
    out_dir: str | Path,
    min_insync_replicas: int = 2,
    *,
    on_stage: StageCallback | None = None,
) -> dict[str, Any]:
    """Audit ``tables``, write ``OUT/audit/*``, ``OUT/summary.json``, ``OUT/report.html``;
    return the summary. ``on_stage`` hears each stage's wall time: ``tree`` (the small
    tables), ``read`` (the one pass over the replicas), ``placements`` (the second pass), then
    ``partitions`` and ``placements`` again only for partitions of over three replicas,
    ``spread`` (the violating placements), ``domains`` (exposure and load), ``tables``
    (computing and writing the outputs), ``summary``, ``report``.

    A partition of more than three replicas makes the job read the replicas a second time
    (see :mod:`rackwise.pipeline._audit_replicas`); without any, they are read once.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stages = _Stages(spark, on_stage)
    stages.begin("tree")
    prepared = prepare_audit(tables)
    stages.end("tree")

    def checkpoint(stage: str, frame: DataFrame) -> DataFrame:
        stages.begin(stage)
        done = local_checkpoint(stage, frame)
        stages.end(stage)
        return done

    try:
        result = assemble_audit(prepared, min_insync_replicas, materialize=checkpoint)
        stages.begin("tables")
        for name in RESULT_TABLES:
            _write_table(result.table(name), name, out)
        stages.end("tables")
        stages.begin("summary")
        clusters = read_table(out, "clusters")
        summary = summary_from_frames(
            clusters, read_table(out, "exposure"), read_table(out, "skew"), min_insync_replicas
        )
        write_summary(out / SUMMARY_FILE, summary)
        stages.end("summary")
        stages.begin("report")
        worst = list(summary["fleet"]["worst_clusters"])[:REPORT_CLUSTERS]
        write_report(out / REPORT_FILE, summary, report_frames(out, result, worst, clusters))
        stages.end("report")
    finally:
        spark.sparkContext.setJobDescription(None)  # type: ignore[arg-type]
    return summary
