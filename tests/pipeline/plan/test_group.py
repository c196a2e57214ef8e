"""The per-cluster step of the plan job without Spark: Arrow rows in, plan rows out."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rackwise.balance import plan_cluster
from rackwise.pipeline.generate import generate_fleet
from rackwise.pipeline.plan.group import (
    PLAN_ROWS_DDL,
    broker_dir_rows,
    cluster_input,
    plan_group,
)
from rackwise.pipeline.plan.summary import build_summary, move_time

# Brokers 1, 2 in /dc1/r1 and 3, 4 in /dc2/r1; broker 3 has /d1, broker 4 /d2 and /d1 (listed
# in that order), brokers 1 and 2 no known directory. Every partition has RF 2 and the two
# data centres must hold one replica each: shares of one replica per broker.
# t-0 sits on 1 and 2 (badly spread). Broker 1 also holds u-0 (two replicas, share one), so
# the replica on 2 stays and the one on 1 leaves, for dc2: broker 4 has more room than 3 (which
# holds u-0), and of its empty directories /d1 comes first by path. The new replica takes the
# leaving one's place, first: t-0 -> (4, 2). Every broker ends with one replica: one move.
REPLICAS = [
    ("c", "t", 0, 0, 1, None, 10),
    ("c", "t", 0, 1, 2, None, 10),
    ("c", "u", 0, 0, 3, "/d1", 5),
    ("c", "u", 0, 1, 1, None, 5),
]
BROKER_DIRS = [
    ("c", 1, "/dc1/r1", None, None, None),
    ("c", 2, "/dc1/r1", None, None, None),
    ("c", 3, "/dc2/r1", "/d1", 100, True),
    ("c", 4, "/dc2/r1", "/d2", 100, True),
    ("c", 4, "/dc2/r1", "/d1", 100, True),
]
REPLICA_NAMES = ("cluster_id", "topic", "partition", "replica_index", "broker_id", "log_dir")
REPLICA_NAMES += ("size_bytes",)
BROKER_NAMES = ("cluster_id", "broker_id", "rack", "log_dir", "total_bytes", "is_live")


def _arrow(rows: list[tuple], names: tuple[str, ...], types: list[pa.DataType]) -> pa.Table:
    columns = list(zip(*rows, strict=True))
    return pa.table({n: pa.array(c, t) for n, c, t in zip(names, columns, types, strict=True)})


def _replicas(rows: list[tuple]) -> pa.Table:
    types = [pa.string(), pa.string(), pa.int32(), pa.int32(), pa.int32(), pa.string(), pa.int64()]
    return _arrow(rows, REPLICA_NAMES, types)


def _brokers(rows: list[tuple]) -> pa.Table:
    types = [pa.string(), pa.int32(), pa.string(), pa.string(), pa.int64(), pa.bool_()]
    return _arrow(rows, BROKER_NAMES, types)


def _run(replicas: list[tuple], brokers: list[tuple]) -> pa.Table:
    return plan_group("keep")((pa.scalar("c"),), _replicas(replicas), _brokers(brokers))


def _by_kind(table: pa.Table, kind: str) -> list[dict]:
    rows = [r for r in table.to_pylist() if r["kind"] == kind]
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def test_rows_follow_the_declared_schema() -> None:
    out = _run(REPLICAS, BROKER_DIRS)
    assert out.column_names == [f.split(" ")[0] for f in PLAN_ROWS_DDL.split(", ")]
    assert {r["kind"] for r in out.to_pylist()} == {
        "replica",
        "broker",
        "log_dir",
        "summary",
        "reassignment",
    }


def test_the_plan_rows_are_the_worked_plan() -> None:
    out = _run(REPLICAS, BROKER_DIRS)
    (document,) = _by_kind(out, "reassignment")
    assert document["payload"] == (
        '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[4,2],'
        '"log_dirs":["/d1","any"]}]}'
    )
    targets = {
        (r["topic"], r["replica_index"]): (r["broker_id"], r["log_dir"], r["moved"])
        for r in _by_kind(out, "replica")
    }
    assert targets == {
        ("t", 0): (4, "/d1", True),
        ("t", 1): (2, None, False),
        ("u", 0): (3, "/d1", False),
        ("u", 1): (1, None, False),
    }
    (summary,) = _by_kind(out, "summary")
    report = json.loads(summary["payload"])
    assert (report["replica_moves"], report["data_to_move_bytes"]) == (1, 10)
    loads = {r["broker_id"]: r for r in _by_kind(out, "broker")}
    assert [loads[b]["replicas_after"] for b in (1, 2, 3, 4)] == [1, 1, 1, 1]
    assert (loads[1]["replicas_before"], loads[4]["bytes_after"]) == (2, 10)
    dirs = {(r["broker_id"], r["log_dir"]): r["bytes_after"] for r in _by_kind(out, "log_dir")}
    assert dirs == {(3, "/d1"): 5, (4, "/d1"): 10, (4, "/d2"): 0}


def test_the_plan_does_not_depend_on_row_order() -> None:
    expected = _run(REPLICAS, BROKER_DIRS)
    shuffle = random.Random(7)
    for _ in range(5):
        replicas, brokers = REPLICAS[:], BROKER_DIRS[:]
        shuffle.shuffle(replicas)
        shuffle.shuffle(brokers)
        got = _run(replicas, brokers)
        for kind in ("replica", "broker", "log_dir", "reassignment"):
            assert _by_kind(got, kind) == _by_kind(expected, kind)


def test_a_cluster_that_cannot_be_planned_keeps_its_replicas() -> None:
    brokers = [("c", 1, "/r1", None, None, None), ("c", 2, "/r2", "/d1", 100, False)]
    replicas = [("c", "t", 0, 0, 1, None, 3), ("c", "t", 0, 1, 2, "/d1", 3)]
    out = _run(replicas, brokers)
    kept = {(r["broker_id"], r["moved"]) for r in _by_kind(out, "replica")}
    assert kept == {(1, False), (2, False)}
    (summary,) = _by_kind(out, "summary")
    assert "has 2 replicas but only 1 brokers" in json.loads(summary["payload"])["error"]
    assert not _by_kind(out, "reassignment")


def test_move_time_is_the_busiest_brokers_traffic_over_the_throttle() -> None:
    report = {
        "max_broker_inbound_bytes": 300,
        "max_broker_outbound_bytes": 500,
        "max_broker_intra_bytes": 40,
    }
    timed = move_time(report, 100)
    assert (timed["seconds"], timed["intra_broker_seconds"]) == (5.0, 0.4)
    assert move_time(report, None)["seconds"] is None


def test_summary_totals_the_fleet() -> None:
    out = _run(REPLICAS, BROKER_DIRS)
    (summary,) = _by_kind(out, "summary")
    report = json.loads(summary["payload"])
    report["reassignment_file"] = "c/reassignment.json"
    audit = {"clusters": {"c": {"partitions_with_spread_violations": 1, "skew": {}}}}
    after = {"clusters": {"c": {"partitions_with_spread_violations": 0, "skew": {}}}}
    built = build_summary(
        {"c": report, "bad": {"error": "no"}},
        audit,
        after,
        {"bad": 2},
        strategy="keep",
        throttle_bytes_per_s=5,
        min_insync_replicas=2,
    )
    assert built["fleet"]["clusters"] == 2
    assert built["fleet"]["clusters_not_planned"] == 1
    assert built["fleet"]["replica_moves"] == 1
    assert built["fleet"]["longest_move_seconds"] == pytest.approx(2.0)
    assert built["clusters"]["bad"] == {
        "error": "no",
        "rejected_rows": 2,
        "planned_on_valid_rows_only": True,
        "spread_violations": {"before": 0, "after": 0},
        "skew": {"before": {}, "after": {}},
    }


def test_rack_aware_balances_replicas_over_uneven_leaf_racks(tmp_path: Path) -> None:
    # A generated cluster of 40 brokers on six leaf racks of 4 to 11 brokers, placed one replica
    # per data centre. Under rack-aware each leaf rack is its own domain and every broker's
    # share is the mean: the 11-broker rack must hold 33,000 of the 40,000 partitions, and the
    # last replicas can only reach it through a middle broker whose cheapest replicas are all
    # blocked (their partitions have a replica there already). Every broker ends on its share.
    generate_fleet(
        tmp_path,
        clusters=1,
        brokers=40,
        partitions=40_000,
        topology="dc=3,rack=2",
        seed=1,
        json_max_clusters=0,
    )
    replicas = pq.read_table(tmp_path / "replicas")
    plain = pa.schema(
        [
            pa.field(f.name, pa.string() if pa.types.is_dictionary(f.type) else f.type)
            for f in replicas.schema
        ]
    )
    cluster = cluster_input(
        replicas.cast(plain), broker_dir_rows(pq.read_table(tmp_path / "brokers"))
    )
    plan = plan_cluster(cluster, "rack-aware")
    goals = {g.name: g for g in plan.report.goals}
    assert goals["SpreadGoal"].violations_after == 0
    assert goals["ReplicaDistributionGoal"].violations_after == 0
    assert set(plan.loads_after.replicas.tolist()) == {3000}
    assert plan.report.replica_moves >= plan.report.lower_bound.replica_moves
