"""The Spark engine: the audit and plan jobs, for fleets (and anything run on a cluster).

``run_audit`` writes ``OUT/audit/<table>/`` (Parquet, one directory per table in
``RESULT_TABLES``), ``OUT/summary.json`` and ``OUT/report.html``; ``run_plan`` writes the plan's
outputs (:mod:`rackwise.pipeline.plan`) beside the audit of the current state, run once.

The input is read once. Each table the audit's outputs share (the one aggregation of the
replicas, the per-partition table, the violating placements, the per-domain table) is computed
once and checkpointed locally (memory, spilling to disk), and what follows is built on the
checkpoint: the query plans stay short and nothing is computed twice (a cached frame that
appears twice in one plan, as in a self-join, is not always recognised by Spark's cache; a
checkpoint is). Each output table is then computed once, as it is written; the summaries and
the report are built from the written Parquet on the driver (pyarrow: no Spark job) by
:mod:`rackwise.pipeline.engines.outputs`, as the in-process engine's are, which for tables
this small costs milliseconds where a Spark job costs a second.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import pandas as pd
from pyspark.sql import functions as F  # noqa: N812

from rackwise.common import IllegalArgumentException
from rackwise.pipeline.audit import DEFAULT_MIN_INSYNC_REPLICAS, RESULT_TABLES, TABLE_ORDER
from rackwise.pipeline.audit.rules import DEFAULT_RULES, DomainRules
from rackwise.pipeline.audit.spark import (
    AuditInput,
    assemble_audit,
    local_checkpoint,
    prepare_audit,
)
from rackwise.pipeline.engines.outputs import (
    AUDIT_DIR,
    REJECTED_DIR,
    StageCallback,
    Stages,
    finish_audit,
    finish_plan,
    rejected_by_cluster,
    rejected_sample,
)
from rackwise.pipeline.ingest.spark import read_source
from rackwise.pipeline.plan import ROWS_DIR
from rackwise.pipeline.plan.spark import check_strategy, plan_rows

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from rackwise.pipeline.ingest.json_input import JsonColumns
    from rackwise.pipeline.ingest.source import InputSource
    from rackwise.pipeline.ingest.tables import ClusterTables

NAME: Final = "spark"


class _JobStages(Stages):
    """Stages that also name the Spark jobs they run (Spark's UI, its logs)."""

    def __init__(self, spark: SparkSession, callback: StageCallback | None) -> None:
        super().__init__(callback)
        self._spark = spark

    def begin(self, name: str) -> None:
        self._spark.sparkContext.setJobDescription(f"rackwise audit: {name}")
        self.restart()


def _write_table(frame: DataFrame, name: str, out: Path) -> None:
    if name in TABLE_ORDER:
        frame = frame.coalesce(1).sortWithinPartitions(*TABLE_ORDER[name])
    frame.write.mode("overwrite").parquet(str(out / AUDIT_DIR / name))


def brokers_frame(tables: AuditInput) -> pd.DataFrame:
    """``cluster_id, broker_id, rack`` of every kept broker, on the driver (they are few)."""
    frame: pd.DataFrame = tables.brokers.select("cluster_id", "broker_id", "rack").toPandas()
    return frame


def write_rejected(tables: ClusterTables, out: Path) -> int:
    """``OUT/rejected/`` (Parquet) and ``OUT/rejected.jsonl`` (the first rows); the count."""
    out.mkdir(parents=True, exist_ok=True)
    tables.rejected.coalesce(1).write.mode("overwrite").parquet(str(out / REJECTED_DIR))
    return rejected_sample(out)


def run_audit(
    spark: SparkSession,
    tables: AuditInput,
    out_dir: str | Path,
    min_insync_replicas: int = DEFAULT_MIN_INSYNC_REPLICAS,
    *,
    on_stage: StageCallback | None = None,
    report: bool = True,
    rules: DomainRules = DEFAULT_RULES,
) -> dict[str, Any]:
    """Audit ``tables``, write ``OUT/audit/*``, ``OUT/summary.json`` and (with ``report``)
    ``OUT/report.html``; return the summary. ``on_stage`` hears each stage's wall time:
    ``tree`` (the small tables), ``read`` (the one pass over the replicas), ``placements``
    (the second pass), then ``partitions`` and ``placements`` again only for partitions of
    over three replicas, ``spread`` (the violating placements), ``domains`` (exposure and
    load), ``rules`` (``min.insync.racks`` and ``leaders.preference``, when some topic has
    such a rule), ``tables``
    (computing and writing the outputs), ``summary``, ``report``.

    A partition of more than three replicas makes the job read the replicas a second time
    (see :mod:`rackwise.pipeline.audit._replicas`); without any, they are read once.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stages = _JobStages(spark, on_stage)
    stages.begin("tree")
    prepared = prepare_audit(tables)
    stages.done("tree")

    def checkpoint(stage: str, frame: DataFrame) -> DataFrame:
        stages.begin(stage)
        done = local_checkpoint(stage, frame)
        stages.done(stage)
        return done

    try:
        result = assemble_audit(prepared, min_insync_replicas, materialize=checkpoint, rules=rules)
        stages.begin("tables")
        for name in RESULT_TABLES:
            _write_table(result.table(name), name, out)
        stages.done("tables")
        stages.begin("summary")
        summary, _ = finish_audit(
            out, brokers_frame(tables), min_insync_replicas, stages, report=report
        )
    finally:
        spark.sparkContext.setJobDescription(None)  # type: ignore[arg-type]
    return summary


def run_plan(
    spark: SparkSession,
    tables: ClusterTables,
    out_dir: str | Path,
    strategy: str = "keep",
    throttle_bytes_per_s: int | None = None,
    min_insync_replicas: int = DEFAULT_MIN_INSYNC_REPLICAS,
    *,
    on_stage: StageCallback | None = None,
    rejected: dict[str, int] | None = None,
    rules: DomainRules = DEFAULT_RULES,
    drain: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Plan every cluster of ``tables``, write the outputs (:mod:`rackwise.pipeline.plan`)
    under ``out_dir`` with the audit of the current state (run once, its report folded into
    the plan's), and return the summary written to ``plan_summary.json``. ``on_stage`` hears
    ``balance`` (planning every cluster, the rows written), the audit's stages as ``audit
    <stage>``, then ``reassignments``, ``after``, ``summary``, ``report``. ``rejected``: the
    input rows set aside per cluster, if the caller has counted them already."""
    check_strategy(strategy)
    if throttle_bytes_per_s is not None and throttle_bytes_per_s <= 0:
        raise IllegalArgumentException(
            f"The throttle must be a positive number of bytes per second, got "
            f"{throttle_bytes_per_s}"
        )
    stages = Stages(on_stage)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = plan_rows(
        tables,
        strategy,  # type: ignore[arg-type]
        rules=rules,
        drain=drain,
        min_insync_replicas=min_insync_replicas,
    )
    rows.write.mode("overwrite").partitionBy("kind").parquet(str(out / ROWS_DIR))
    stages.done("balance")
    audit_stage = None if on_stage is None else _prefixed(on_stage, "audit ")
    before = run_audit(
        spark, tables, out, min_insync_replicas, on_stage=audit_stage, report=False, rules=rules
    )
    stages.restart()
    return finish_plan(
        out,
        brokers_frame(tables),
        before,
        rejected_counts(tables) if rejected is None else rejected,
        stages,
        strategy=strategy,
        throttle_bytes_per_s=throttle_bytes_per_s,
        min_insync_replicas=min_insync_replicas,
    )


def _prefixed(callback: StageCallback, prefix: str) -> StageCallback:
    return lambda name, seconds: callback(prefix + name, seconds)


def rejected_counts(tables: ClusterTables) -> dict[str, int]:
    """Input rows set aside by validation, per cluster."""
    counts = tables.rejected.groupBy("cluster_id").count().collect()
    return {row["cluster_id"]: int(row["count"]) for row in counts}


class SparkEngine:
    """The Spark engine behind the command (see :class:`rackwise.pipeline.engines.Engine`):
    ``spark`` is the session the command started."""

    name = NAME

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark

    def ingest(self, source: InputSource, columns: JsonColumns | None) -> ClusterTables:
        return read_source(self.spark, source, columns)

    def count(self, tables: ClusterTables) -> tuple[int, int]:
        counted = tables.brokers.select(F.lit("b").alias("t")).unionByName(
            tables.replicas.select(F.lit("r").alias("t"))
        )
        found = {row["t"]: int(row["count"]) for row in counted.groupBy("t").count().collect()}
        return found.get("b", 0), found.get("r", 0)

    def write_rejected(self, tables: ClusterTables, out: Path) -> int:
        return write_rejected(tables, out)

    def audit(
        self,
        tables: ClusterTables,
        out: Path,
        min_insync_replicas: int,
        on_stage: StageCallback,
        rules: DomainRules = DEFAULT_RULES,
    ) -> dict[str, Any]:
        return run_audit(
            self.spark, tables, out, min_insync_replicas, on_stage=on_stage, rules=rules
        )

    def plan(
        self,
        tables: ClusterTables,
        out: Path,
        strategy: str,
        throttle_bytes_per_s: int | None,
        min_insync_replicas: int,
        on_stage: StageCallback,
        rules: DomainRules = DEFAULT_RULES,
        drain: tuple[str, ...] = (),
    ) -> dict[str, Any]:
        return run_plan(
            self.spark,
            tables,
            out,
            strategy,
            throttle_bytes_per_s,
            min_insync_replicas,
            on_stage=on_stage,
            rejected=rejected_by_cluster(out),
            rules=rules,
            drain=drain,
        )
