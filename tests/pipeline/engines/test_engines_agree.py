"""Both engines, one input, one result: random fleets (bad rows included) run through the
in-process engine and through Spark must give the same rejected rows, audit tables, summaries,
plan rows and reassignment files. Spark runs are few (one shared session; a handful of
examples), so this module takes about two minutes."""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rackwise.pipeline.audit import RESULT_TABLES
from rackwise.pipeline.audit.rules import DomainRules
from rackwise.pipeline.engines import local as local_engine
from rackwise.pipeline.engines import spark as spark_engine
from rackwise.pipeline.ingest.local import read_source
from rackwise.pipeline.ingest.source import InputSource
from rackwise.pipeline.ingest.spark import read_fleet
from tests.pipeline.ingest.cases import write_fleet

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.slow  # several Spark jobs per example: about two minutes in all

RACKS = ("/dc1/r1", "/dc1/r2", "/dc2/r1", "dc3", "/dc2/r1/h1", None, "/dc1//r3")
DIRS = ("/d1", "/d2", "d3")
_TIMES = ("plan_ms", "time_ms")
_TOLERANCE = 1.0001e-4  # summaries round to 4 decimals; a last-bit difference may round apart


@st.composite
def fleets(draw: st.DrawFn) -> tuple[list[dict[str, Any]], pa.Table]:
    """Brokers (a few bad: a malformed rack, a relative directory, an id twice) and replicas
    (a few bad: an unknown broker, a broker twice, a negative size, a directory the broker
    lacks), over one to three clusters of mixed rack depths."""
    brokers: list[dict[str, Any]] = []
    rows: list[tuple[Any, ...]] = []
    for c in range(draw(st.integers(1, 3))):
        cid = f"c{c}"
        ids = draw(st.lists(st.integers(0, 12), min_size=1, max_size=7))
        for b in ids:
            paths = draw(st.lists(st.sampled_from(DIRS), max_size=2, unique=True))
            dirs = [
                {
                    "path": p,
                    "total_bytes": draw(st.sampled_from((None, 1000, 5000))),
                    "is_live": draw(st.sampled_from((True, True, True, False, None))),
                }
                for p in paths
            ]
            brokers.append(
                {
                    "cluster_id": cid,
                    "broker_id": b,
                    "rack": draw(st.sampled_from(RACKS)),
                    "log_dirs": dirs,
                }
            )
        for p in range(draw(st.integers(0, 12))):
            topic = draw(st.sampled_from(("t", "u")))
            width = draw(st.integers(1, min(4, len(ids) + 1)))
            chosen = draw(st.lists(st.integers(0, 13), min_size=width, max_size=width))
            for i, b in enumerate(chosen):
                log_dir = draw(st.sampled_from((None, "/d1", "/d2", "/zz")))
                size = draw(st.sampled_from((None, 0, 10, 700, -1)))
                rows.append((cid, topic, p, i, b, log_dir, size))
    columns = list(zip(*rows, strict=True)) if rows else [[]] * 7
    replicas = pa.table(
        {
            "cluster_id": pa.array(columns[0], pa.string()),
            "topic": pa.array(columns[1], pa.string()),
            "partition": pa.array(columns[2], pa.int32()),
            "replica_index": pa.array(columns[3], pa.int32()),
            "broker_id": pa.array(columns[4], pa.int32()),
            "log_dir": pa.array(columns[5], pa.string()),
            "size_bytes": pa.array(columns[6], pa.int64()),
        }
    )
    return brokers, replicas


def _close(a: Any, b: Any, where: str = "") -> None:
    """``a == b``, floats within rounding, lists and dicts element by element."""
    if isinstance(a, dict) and isinstance(b, dict):
        assert sorted(a) == sorted(b), where
        for key in a:
            if key not in _TIMES:
                _close(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _close(x, y, f"{where}[{i}]")
    elif isinstance(a, float) or isinstance(b, float):
        assert a is not None and b is not None, where
        assert math.isclose(a, b, rel_tol=1e-9, abs_tol=_TOLERANCE), (where, a, b)
    else:
        assert a == b, (where, a, b)


def _rows(path: Path, kinds: list[str] | None = None) -> list[dict[str, Any]]:
    if not any(p.suffix == ".parquet" for p in path.rglob("*")):
        return []  # an input without any cluster plans nothing
    filters = None if kinds is None else [("kind", "in", kinds)]
    table = pq.read_table(path, filters=filters)
    rows = [{k: v for k, v in r.items() if k != "payload"} for r in table.to_pylist()]
    for row in rows:
        for key, value in row.items():
            if isinstance(value, list) and value and isinstance(value[0], tuple):
                row[key] = dict(value)  # a map, read back as pairs in no set order
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def _reassignments(out: Path) -> dict[str, str]:
    return {str(p.relative_to(out)): p.read_text() for p in out.glob("*/reassignment.json")}


def _same_outputs(local: Path, spark: Path) -> None:
    _close(_rows(local / "rejected"), _rows(spark / "rejected"), "rejected")
    for name in RESULT_TABLES:
        _close(_rows(local / "audit" / name), _rows(spark / "audit" / name), name)
    for name in ("summary.json", "plan_summary.json"):
        _close(json.loads((local / name).read_text()), json.loads((spark / name).read_text()), name)
    kinds = ["replica", "broker", "log_dir"]
    _close(_rows(local / "plan" / "rows", kinds), _rows(spark / "plan" / "rows", kinds), "rows")
    assert _reassignments(local) == _reassignments(spark)


def _run_both(
    spark: SparkSession,
    fleet: Path,
    root: Path,
    strategy: str,
    min_isr: int,
    rules: DomainRules | None = None,
) -> None:
    tables = read_source(InputSource.fleet_dir(fleet))
    rules = rules or DomainRules()
    local_engine.write_rejected(tables, root / "local")
    local_engine.run_plan(tables, root / "local", strategy, 1000, min_isr, rules=rules)
    frames = read_fleet(spark, fleet)
    spark_engine.write_rejected(frames, root / "spark")
    spark_engine.run_plan(spark, frames, root / "spark", strategy, 1000, min_isr, rules=rules)
    _same_outputs(root / "local", root / "spark")


@settings(
    max_examples=5,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    fleet=fleets(),
    strategy=st.sampled_from(("keep", "rack-aware", "multi-level")),
    min_isr=st.integers(1, 3),
    topic_isr=st.integers(1, 3),
    racks=st.integers(1, 3),
    level=st.integers(1, 2),
    preference=st.sampled_from(("none", "racks:/dc1", "ordered_racks:/dc2,/dc1")),
)
def test_random_fleets_give_the_same_outputs_on_both_engines(
    spark: SparkSession,
    fleet: tuple[list[dict[str, Any]], pa.Table],
    strategy: str,
    min_isr: int,
    topic_isr: int,
    racks: int,
    level: int,
    preference: str,
) -> None:
    """Topic ``t`` with its own rules (its min.insync.replicas among them), ``u`` with the
    defaults."""
    rules = DomainRules.of(
        {"min.insync.racks": "2", "default.leaders.preference": "racks:/dc2"},
        [
            (f"c{c}", "t", key, value)
            for c in range(3)
            for key, value in (
                ("min.insync.replicas", str(topic_isr)),
                ("min.insync.racks", str(racks)),
                ("min.insync.racks.level", str(level)),
                ("leaders.preference", preference),
            )
        ],
    )
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        write_fleet(root / "fleet", *fleet)
        _run_both(spark, root / "fleet", root, strategy, min_isr, rules)


def test_a_fleet_whose_every_row_is_rejected_plans_nothing_on_both_engines(
    spark: SparkSession, tmp_path: Path
) -> None:
    brokers = [{"cluster_id": "c0", "broker_id": 1, "rack": "/dc1//r3", "log_dirs": []}]
    replicas = pa.table(
        {
            "cluster_id": pa.array(["c0"], pa.string()),
            "topic": pa.array(["t"], pa.string()),
            "partition": pa.array([0], pa.int32()),
            "replica_index": pa.array([0], pa.int32()),
            "broker_id": pa.array([1], pa.int32()),
            "log_dir": pa.array([None], pa.string()),
            "size_bytes": pa.array([-1], pa.int64()),
        }
    )
    write_fleet(tmp_path / "fleet", brokers, replicas)
    _run_both(spark, tmp_path / "fleet", tmp_path, "rack-aware", 2)
    for engine in ("local", "spark"):
        summary = json.loads((tmp_path / engine / "plan_summary.json").read_text())
        assert len(_rows(tmp_path / engine / "rejected")) == 2, engine
        assert _reassignments(tmp_path / engine) == {}
        assert (tmp_path / engine / "report.html").stat().st_size > 0
        assert summary["fleet"]["clusters"] == 0, summary
