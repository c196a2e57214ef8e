"""The plan job on Spark: exact reassignment files for hand-worked clusters, the summary's
shape, and the plan applied and audited again."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from rackwise.common import IllegalArgumentException
from rackwise.formats import parse_reassignment
from rackwise.pipeline import schema
from rackwise.pipeline.engines.spark import run_audit, run_plan
from rackwise.pipeline.ingest.tables import ClusterTables
from rackwise.pipeline.plan import cluster_dir_name
from tests.pipeline.engines.cases import BROKERS, EXPECTED, LOG_DIRS, REJECTED, REPLICAS, THROTTLE

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _tables(spark: SparkSession) -> ClusterTables:
    return ClusterTables(
        spark.createDataFrame(BROKERS, schema.BROKERS_DDL),
        spark.createDataFrame(LOG_DIRS, schema.LOG_DIRS_DDL),
        spark.createDataFrame(REPLICAS, schema.REPLICAS_DDL),
        spark.createDataFrame(REJECTED, schema.REJECTED_DDL),
    )


@dataclass(frozen=True)
class Run:
    out: Path
    summary: dict[str, Any]


@pytest.fixture(scope="module")
def run(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Run:
    out = tmp_path_factory.mktemp("plan")
    summary = run_plan(spark, _tables(spark), out, "keep", THROTTLE, 2)
    return Run(out, summary)


def test_reassignment_files_are_exact(run: Run) -> None:
    for cid, text in EXPECTED.items():
        assert (run.out / cid / "reassignment.json").read_text() == text + "\n"
    for cid in ("south", "quiet"):
        assert not (run.out / cid).exists()
    assert run.summary["clusters"]["quiet"]["reassignment_file"] is None
    assert run.summary["clusters"]["east"]["reassignment_file"] == "east/reassignment.json"


def test_summary_is_written_and_shaped_like_the_audits(run: Run) -> None:
    written = json.loads((run.out / "plan_summary.json").read_text())
    assert written == json.loads(json.dumps(run.summary))
    assert set(written) == {
        "strategy",
        "throttle_bytes_per_s",
        "min_insync_replicas",
        "fleet",
        "clusters",
    }
    assert set(written["clusters"]) == {"east", "west", "north", "south", "quiet"}
    east = written["clusters"]["east"]
    for key in (
        "replica_moves",
        "data_to_move_bytes",
        "intra_broker_moves",
        "leader_moves",
        "lower_bound",
        "goals",
        "balancedness_score",
        "spread_violations",
        "skew",
        "move_time",
        "rejected_rows",
    ):
        assert key in east
    assert (east["replica_moves"], east["data_to_move_bytes"]) == (1, 100)
    assert (east["lower_bound"]["replica_moves"], east["lower_bound"]["bytes"]) == (1, 100)
    assert "explanation" in east["lower_bound"]
    goals = {g["goal"]: g for g in east["goals"]}
    assert goals["OfflineReplicaGoal"]["status"] == "FIXED"
    assert goals["SpreadGoal"]["status"] == "NO-ACTION"
    assert all(g["time_ms"] >= 0 for g in east["goals"])
    # Broker 2 receives 100 bytes and broker 3 (the leader left standing) sends them.
    assert east["move_time"]["seconds"] == 100 / THROTTLE
    assert east["skew"]["before"]["broker"]["replicas"]["max_over_mean"] > 0


def test_violations_before_and_after_come_from_the_audit(run: Run) -> None:
    west = run.summary["clusters"]["west"]
    assert west["spread_violations"] == {"before": 1, "after": 0, "avoidable_after": 0}
    assert west["balancedness_score"]["after"] == 100.0
    assert west["balancedness_score"]["before"] < 100.0
    assert (west["rejected_rows"], west["planned_on_valid_rows_only"]) == (1, True)
    assert run.summary["clusters"]["east"]["planned_on_valid_rows_only"] is False
    north = run.summary["clusters"]["north"]
    assert (north["replica_moves"], north["leader_moves"]) == (0, 1)


def test_a_cluster_that_cannot_be_planned_is_reported_not_fatal(run: Run) -> None:
    south = run.summary["clusters"]["south"]
    assert "only 1 brokers with a live log directory" in south["error"]
    assert run.summary["fleet"]["clusters_not_planned"] == 1
    assert run.summary["fleet"]["replica_moves"] == 2  # east and west


def test_applying_the_plan_leaves_nothing_for_the_audit(spark: SparkSession, run: Run) -> None:
    # What kafka-reassign-partitions does with the files: replace each listed partition's
    # replicas with the target ones. The result is the target table the job audited, and the
    # audit of it found no spread violation and no offline replica.
    rows: dict[tuple[str, str, int], list[int]] = {}
    for cid, topic, part, _index, broker, _dir, _size in REPLICAS:
        rows.setdefault((cid, topic, part), []).append(broker)
    for cid in EXPECTED:
        document = parse_reassignment((run.out / cid / "reassignment.json").read_text())
        for entry in document.partitions:
            rows[cid, entry.topic, entry.partition] = list(entry.replicas)
    applied = {
        (cid, topic, part, i, b)
        for (cid, topic, part), replicas in rows.items()
        for i, b in enumerate(replicas)
    }
    target = spark.read.parquet(str(run.out / "plan" / "rows" / "kind=replica"))
    columns = ("cluster_id", "topic", "partition", "replica_index", "broker_id")
    assert {tuple(r) for r in target.select(*columns).collect()} == applied
    for cid in EXPECTED:
        figures = run.summary["clusters"][cid]
        assert figures["spread_violations"]["after"] == 0
        offline = next(g for g in figures["goals"] if g["goal"] == "OfflineReplicaGoal")
        assert offline["violations_after"] == 0


def test_the_target_table_is_written(spark: SparkSession, run: Run) -> None:
    target = spark.read.parquet(str(run.out / "plan" / "rows" / "kind=replica"))
    assert target.count() == len(REPLICAS)
    east = {
        (r["broker_id"], r["log_dir"], r["moved"])
        for r in target.where("cluster_id = 'east'").collect()
    }
    assert east == {(2, "/d1", True), (3, "/d1", False)}


def test_cluster_ids_become_safe_directory_names() -> None:
    assert cluster_dir_name("prod-eu_1.kafka") == "prod-eu_1.kafka"
    assert cluster_dir_name("a/b") == "a%2Fb"
    assert cluster_dir_name("..") == "%2E%2E"


def test_bad_arguments_are_refused(spark: SparkSession, tmp_path: Path) -> None:
    with pytest.raises(IllegalArgumentException, match="Unknown strategy 'best'"):
        run_plan(spark, _tables(spark), tmp_path, "best")  # type: ignore[arg-type]
    with pytest.raises(IllegalArgumentException, match="positive number of bytes per second"):
        run_plan(spark, _tables(spark), tmp_path, "keep", 0)


def test_the_report_has_the_plan_section(run: Run) -> None:
    html = (run.out / "report.html").read_text()
    for cid in ("east", "west", "north"):
        assert f"Plan for {cid}" in html
    assert "OfflineReplicaGoal" in html


def test_the_after_figures_are_what_the_audit_finds_in_the_target(
    spark: SparkSession, run: Run, tmp_path: Path
) -> None:
    # The summary's after-state is computed from the plan, not by a second audit: it must be
    # exactly what an audit of the target table says.
    target = spark.read.parquet(str(run.out / "plan" / "rows" / "kind=replica"))
    tables = _tables(spark)
    audited = run_audit(
        spark,
        ClusterTables(
            tables.brokers,
            tables.log_dirs,
            target.select(*schema.REPLICAS_COLUMNS),
            tables.rejected.limit(0),
        ),
        tmp_path,
    )
    for cid in ("east", "west", "north", "quiet"):
        figures = run.summary["clusters"][cid]
        assert figures["skew"]["after"] == audited["clusters"][cid]["skew"], cid
        found = audited["clusters"][cid]["partitions_with_spread_violations"]
        assert figures["spread_violations"]["after"] == found, cid
    # and the before-state is the audit of the current state, written beside the plan
    current = json.loads((run.out / "summary.json").read_text())
    assert run.summary["clusters"]["west"]["skew"]["before"] == current["clusters"]["west"]["skew"]


_HAND_BROKERS = """[
  {"id": 1, "rack": "/r1", "log_dirs": [{"path": "/data/d1", "total_bytes": 10000},
    {"path": "/data/d2", "total_bytes": 10000, "is_live": false}]},
  {"id": 2, "rack": "/r1", "log_dirs": [{"path": "/data/d1", "total_bytes": 10000},
    {"path": "/data/d2", "total_bytes": 10000}]},
  {"id": 3, "rack": "/r2", "log_dirs": [{"path": "/data/d1", "total_bytes": 10000}]},
  {"id": 4, "rack": "/r2", "log_dirs": [{"path": "/data/d1", "total_bytes": 10000}]}
]"""
_HAND_ASSIGNMENT = (
    '{"version":1,"partitions":['
    '{"topic":"t","partition":0,"replicas":[1,3],"log_dirs":["/data/d2","any"]},'
    '{"topic":"u","partition":0,"replicas":[2,4],"log_dirs":["any","any"]},'
    '{"topic":"w","partition":0,"replicas":[2,3],"log_dirs":["any","any"]}]}'
)
_STORAGE = "org.apache.kafka.common.errors.KafkaStorageException"


def _kafka_dir(path: str, parts: list[tuple[str, int]], error: str | None = None) -> object:
    return {
        "logDir": path,
        "error": error,
        "partitions": [
            {"partition": p, "size": s, "offsetLag": 0, "isFuture": False} for p, s in parts
        ],
    }


def _kip113_dir(path: str, parts: list[tuple[str, int, int]], live: bool = True) -> object:
    return {
        "is_live": live,
        "path": path,
        "partitions": [
            {"topic": t, "partition": p, "size": s, "is_temporary": False} for t, p, s in parts
        ],
    }


def test_both_log_dirs_shapes_give_the_expected_log_dirs(
    spark: SparkSession, tmp_path: Path
) -> None:
    # Broker 1's /data/d2 has failed: t-0 must leave broker 1, and only broker 2 keeps it
    # spread over /r1 and /r2. Broker 2 would then hold three replicas against a ceiling of
    # two, so u-0 (1000 bytes; w-0 has 5000) goes to broker 1, whose only live directory is
    # /data/d1. On broker 2, t-0 lands in /data/d2: /data/d1 still holds w-0's 5000 bytes.
    # Broker 3 then takes t-0's leadership (broker 2 leads w-0 already). Replicas that stay
    # say "any".
    from rackwise.pipeline.ingest.spark import read_cluster
    from rackwise.pipeline.plan.spark import plan_rows

    (tmp_path / "brokers.json").write_text(_HAND_BROKERS)
    (tmp_path / "assignment.json").write_text(_HAND_ASSIGNMENT)
    kafka = {
        "version": 1,
        "brokers": [
            {
                "broker": 1,
                "logDirs": [_kafka_dir("/data/d1", []), _kafka_dir("/data/d2", [], _STORAGE)],
            },
            {
                "broker": 2,
                "logDirs": [
                    _kafka_dir("/data/d1", [("u-0", 1000), ("w-0", 5000)]),
                    _kafka_dir("/data/d2", []),
                ],
            },
            {"broker": 3, "logDirs": [_kafka_dir("/data/d1", [("t-0", 100), ("w-0", 5000)])]},
            {"broker": 4, "logDirs": [_kafka_dir("/data/d1", [("u-0", 1000)])]},
        ],
    }
    (tmp_path / "kafka.txt").write_text(
        "Querying brokers for log directories information\n"
        "Received log directory information from brokers 1,2,3,4\n" + json.dumps(kafka) + "\n"
    )
    kip113 = {
        1: [_kip113_dir("/data/d1", []), _kip113_dir("/data/d2", [], live=False)],
        2: [_kip113_dir("/data/d1", [("u", 0, 1000), ("w", 0, 5000)]), _kip113_dir("/data/d2", [])],
        3: [_kip113_dir("/data/d1", [("t", 0, 100), ("w", 0, 5000)])],
        4: [_kip113_dir("/data/d1", [("u", 0, 1000)])],
    }
    for broker, dirs in kip113.items():
        (tmp_path / f"b{broker}.json").write_text(json.dumps({"version": 1, "log_dirs": dirs}))
    expected = (
        '{"version":1,"partitions":['
        '{"topic":"t","partition":0,"replicas":[3,2],"log_dirs":["any","/data/d2"]},'
        '{"topic":"u","partition":0,"replicas":[1,4],"log_dirs":["/data/d1","any"]}]}'
    )
    shapes = {
        "kafka": [tmp_path / "kafka.txt"],
        "kip113": [(b, tmp_path / f"b{b}.json") for b in kip113],
    }
    for shape, log_dirs in shapes.items():
        tables = read_cluster(
            spark, tmp_path / "brokers.json", tmp_path / "assignment.json", log_dirs
        )
        assert tables.rejected.count() == 0, shape
        rows = plan_rows(tables, "keep").where("kind = 'reassignment'").collect()
        assert [r["payload"] for r in rows] == [expected], shape
