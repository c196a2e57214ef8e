"""The audit job end to end on the hand-worked fixture: files written, summary, stages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq
import pytest

from rackwise.pipeline import schema
from rackwise.pipeline.audit.spark import RESULT_TABLES
from rackwise.pipeline.engines.spark import run_audit
from rackwise.pipeline.ingest.tables import ClusterTables, empty_rejected
from tests.pipeline.audit.cases import BROKERS, LOG_DIRS, REPLICAS

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.fixture(scope="module")
def job(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any, list]:
    tables = ClusterTables(
        brokers=spark.createDataFrame(BROKERS, schema.BROKERS_DDL),
        log_dirs=spark.createDataFrame(LOG_DIRS, schema.LOG_DIRS_DDL),
        replicas=spark.createDataFrame(REPLICAS, schema.REPLICAS_DDL),
        rejected=empty_rejected(spark),
    )
    out = tmp_path_factory.mktemp("audit")
    stages: list[tuple[str, float]] = []
    summary = run_audit(spark, tables, out, 2, on_stage=lambda n, s: stages.append((n, s)))
    return out, summary, stages


def test_summary_json_is_what_run_audit_returns(job: tuple[Path, Any, list]) -> None:
    out, summary, _ = job
    text = (out / "summary.json").read_text()
    assert json.loads(text) == summary
    assert text == json.dumps(summary, sort_keys=True, indent=2) + "\n"
    # the job builds the summary from the Parquet it wrote: the same figures as the
    # hand-worked ones of test_audit (map, array and null columns read back included)
    c1 = summary["clusters"]["c1"]
    assert c1["partitions_with_spread_violations"] == 1
    assert c1["spread_violations_by_level"] == {"cluster": 1, "dc": 1}
    assert c1["rack_levels"] == ["dc", "rack"]
    assert c1["offline_if_lost"] == {
        "dc": {"/dc3": 1},
        "rack": {},
        "broker": {"5": 1},
        "log_dir": {"5:/d1": 1},
    }
    assert c1["exposed_domains"]["under_min_isr_if_lost"] == {
        "dc": 1,
        "rack": 1,
        "broker": 0,
        "log_dir": 0,
    }
    assert c1["skew"]["broker"]["replicas"] == {
        "min": 0,
        "max": 2,
        "mean": 0.8333,
        "max_over_mean": 2.4,
    }
    assert summary["clusters"]["idle"]["skew"]["broker"]["replicas"]["max_over_mean"] is None
    assert summary["fleet"]["worst_clusters"] == ["c1", "c3", "c2", "idle"]


def test_tables_are_written_as_parquet(job: tuple[Path, Any, list]) -> None:
    out, _, _ = job
    rows = {name: pq.read_table(out / "audit" / name).num_rows for name in RESULT_TABLES}
    # 4 clusters; 3 violating (partition, node) rows; 24 + 3 + 11 + 6 domains in each of
    # exposure and load
    assert rows["clusters"] == 4
    assert rows["spread_violations"] == 3
    assert rows["exposure"] == rows["load"] == 44
    skew = pq.read_table(out / "audit" / "skew").to_pandas()
    assert set(skew["metric"]) == {"replicas", "leaders", "bytes", "utilisation"}


def test_report_is_written(job: tuple[Path, Any, list]) -> None:
    out, _, _ = job
    text = (out / "report.html").read_text(encoding="utf-8")
    assert all(f"Cluster {c}" in text for c in ("c1", "c2", "c3", "idle"))
    assert text.count("<svg ") >= 2 * 5  # per cluster: brokers (2), log dirs, heat map rows
    assert "https://" not in text


def test_stages_are_reported_in_order(job: tuple[Path, Any, list]) -> None:
    _, _, stages = job
    names = [n for n, _ in stages]
    assert names == [
        "tree",
        "read",
        "placements",
        "spread",
        "domains",
        "tables",
        "summary",
        "report",
    ]
    assert all(seconds >= 0 for _, seconds in stages)
