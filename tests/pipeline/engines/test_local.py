"""The in-process engine end to end on the hand-worked clusters: the same reassignment files the
Spark job must write, the summaries, the audit run once, and the files it leaves."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rackwise.common import IllegalArgumentException
from rackwise.pipeline import schema
from rackwise.pipeline.engines import local as engine
from rackwise.pipeline.engines import outputs
from rackwise.pipeline.ingest.local import REJECTED_ARROW, LocalTables
from tests.pipeline.audit.cases import local_tables
from tests.pipeline.engines.cases import BROKERS, EXPECTED, LOG_DIRS, REJECTED, REPLICAS, THROTTLE


def _tables() -> LocalTables:
    tables = local_tables(BROKERS, LOG_DIRS, REPLICAS)
    rejected = pa.Table.from_pylist(
        [dict(zip(schema.REJECTED_COLUMNS, r, strict=True)) for r in REJECTED], REJECTED_ARROW
    )
    return replace(tables, rejected=rejected)


@dataclass(frozen=True)
class Run:
    out: Path
    summary: dict[str, Any]
    stages: list[str]
    reports: int


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    out = tmp_path_factory.mktemp("plan")
    stages: list[str] = []
    written = []
    with pytest.MonkeyPatch.context() as patch:
        real = outputs.write_report
        patch.setattr(outputs, "write_report", lambda *a, **k: (written.append(1), real(*a, **k)))
        summary = engine.run_plan(
            _tables(), out, "keep", THROTTLE, 2, on_stage=lambda name, _: stages.append(name)
        )
    return Run(out, summary, stages, len(written))


def test_reassignment_files_are_the_worked_ones(run: Run) -> None:
    for cid, text in EXPECTED.items():
        assert (run.out / cid / "reassignment.json").read_text() == text + "\n"
    for cid in ("south", "quiet"):
        assert not (run.out / cid).exists()
    assert run.summary["clusters"]["quiet"]["reassignment_file"] is None
    assert run.summary["clusters"]["east"]["reassignment_file"] == "east/reassignment.json"


def test_the_summary_has_the_worked_figures(run: Run) -> None:
    written = json.loads((run.out / "plan_summary.json").read_text())
    assert written == json.loads(json.dumps(run.summary))
    east, west = written["clusters"]["east"], written["clusters"]["west"]
    assert (east["replica_moves"], east["data_to_move_bytes"]) == (1, 100)
    assert east["move_time"]["seconds"] == 100 / THROTTLE
    assert west["spread_violations"] == {"before": 1, "after": 0, "avoidable_after": 0}
    assert (west["rejected_rows"], west["planned_on_valid_rows_only"]) == (1, True)
    north = written["clusters"]["north"]
    assert (north["replica_moves"], north["leader_moves"]) == (0, 1)
    assert "only 1 brokers with a live log directory" in written["clusters"]["south"]["error"]
    assert written["fleet"]["replica_moves"] == 2


def test_the_plan_audits_the_input_once_and_writes_one_report(run: Run) -> None:
    assert run.stages == [
        "balance",
        "audit tables",
        "audit summary",
        "reassignments",
        "after",
        "summary",
        "report",
    ]
    assert run.reports == 1
    current = json.loads((run.out / "summary.json").read_text())
    assert run.summary["clusters"]["west"]["skew"]["before"] == current["clusters"]["west"]["skew"]
    html = (run.out / "report.html").read_text()
    assert "OfflineReplicaGoal" in html


def test_the_tables_are_written_as_the_spark_job_writes_them(run: Run) -> None:
    target = pq.read_table(run.out / "plan" / "rows", filters=[("kind", "=", "replica")])
    assert target.num_rows == len(REPLICAS)
    east = {
        (r["broker_id"], r["log_dir"], r["moved"])
        for r in target.to_pylist()
        if r["cluster_id"] == "east"
    }
    assert east == {(2, "/d1", True), (3, "/d1", False)}
    for name in ("clusters", "spread_violations", "exposure", "load", "skew"):
        assert pq.read_table(run.out / "audit" / name).num_rows > 0, name


def test_rejected_rows_are_written_with_a_sample(tmp_path: Path) -> None:
    count = engine.write_rejected(_tables(), tmp_path)
    assert count == 1
    sample = [json.loads(line) for line in (tmp_path / "rejected.jsonl").read_text().splitlines()]
    assert sample == [dict(zip(schema.REJECTED_COLUMNS, REJECTED[0], strict=True))]
    assert outputs.rejected_by_cluster(tmp_path) == {"west": 1}


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    with pytest.raises(IllegalArgumentException, match="Unknown strategy 'best'"):
        engine.run_plan(_tables(), tmp_path, "best")
    with pytest.raises(IllegalArgumentException, match="positive number of bytes per second"):
        engine.run_plan(_tables(), tmp_path, "keep", 0)
