"""The balance goals' per-broker targets, from the plan's rows to the report's charts.

The cluster: RF 2 over two data centres of unequal size, brokers 1, 2 in ``/dc1`` and 3 to 6 in
``/dc2`` (broker 7 in ``/dc2`` too, its only directory failed: outside the goals). Every
partition keeps one replica in each data centre, so dc1's brokers must hold 6 of the 24
replicas each and dc2's 3, although the mean is 4: the report must draw 6 and 3, not 4.
All twelve partitions start on brokers 1 and 3.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from rackwise.pipeline.engines import local as engine
from rackwise.pipeline.ingest.local import LocalTables
from rackwise.pipeline.plan.after import TARGETS_COLUMNS, load_frames
from rackwise.pipeline.plan.group import TARGET_BOUNDS, TARGET_METRICS
from rackwise.pipeline.plan.local import plan_rows
from rackwise.pipeline.report.load import LOG_DIR
from tests.pipeline.audit.cases import local_tables
from tests.pipeline.report.dom import Node, parse

CLUSTER = "uneven"
RACKS = {1: "/dc1/r1", 2: "/dc1/r2", 3: "/dc2/r1", 4: "/dc2/r1", 5: "/dc2/r2", 6: "/dc2/r2"}
RACKS[7] = "/dc2/r2"
BROKERS = [(CLUSTER, b, rack) for b, rack in RACKS.items()]
LOG_DIRS = [(CLUSTER, b, "/d1", 10_000, b != 7) for b in RACKS]
REPLICAS = [
    (CLUSTER, "t", p, index, broker, "/d1", 10 * (p + 1))
    for p in range(12)
    for index, broker in enumerate((1, 3) if p % 2 == 0 else (3, 1))
]
GOAL_OF = {
    "replicas": "ReplicaDistributionGoal",
    "leaders": "LeaderReplicaDistributionGoal",
    "bytes": "DiskUsageDistributionGoal",
}


def _tables() -> LocalTables:
    return local_tables(BROKERS, LOG_DIRS, REPLICAS)


@pytest.fixture(scope="module")
def rows() -> pd.DataFrame:
    table = plan_rows(_tables(), "keep")
    assert table is not None
    frame: pd.DataFrame = table.to_pandas()
    return frame


def _targets(rows: pd.DataFrame) -> pd.DataFrame:
    return load_frames(rows[rows["kind"].isin(["broker", "log_dir"])])["targets"]


def test_targets_are_one_row_per_broker_and_metric_in_the_reports_shape(
    rows: pd.DataFrame,
) -> None:
    targets = _targets(rows)
    assert list(targets.columns) == list(TARGETS_COLUMNS)
    assert set(targets["level"]) == {"broker"}
    assert targets["log_dir"].isna().all()
    keys = list(zip(targets["broker_id"].tolist(), targets["metric"].tolist(), strict=True))
    assert sorted(keys) == sorted((b, m) for b in range(1, 7) for m in TARGET_METRICS)
    assert (targets["low"] <= targets["target"]).all()
    assert (targets["target"] <= targets["high"]).all()
    replicas = targets[targets["metric"] == "replicas"].set_index("broker_id")["target"]
    assert replicas.to_dict() == {1: 6.0, 2: 6.0, 3: 3.0, 4: 3.0, 5: 3.0, 6: 3.0}
    leaders = targets[targets["metric"] == "leaders"]
    assert set(leaders["target"]) == {2.0}  # 12 partitions over 6 brokers


def test_the_broker_outside_the_goals_and_directory_rows_carry_no_targets(
    rows: pd.DataFrame,
) -> None:
    columns = [f"{m}_{b}" for m in TARGET_METRICS for b in TARGET_BOUNDS]
    broker_7 = rows[(rows["kind"] == "broker") & (rows["broker_id"] == 7)]
    assert len(broker_7) == 1 and broker_7[columns].isna().all(axis=None)
    assert rows.loc[rows["kind"] == LOG_DIR, columns].isna().all(axis=None)
    assert 7 not in set(_targets(rows)["broker_id"])


def test_after_the_plan_every_broker_lies_within_the_targets_of_a_fixed_goal(
    rows: pd.DataFrame,
) -> None:
    (payload,) = rows.loc[rows["kind"] == "summary", "payload"].tolist()
    status = {g["name"]: g["status"] for g in json.loads(payload)["goals"]}
    after = load_frames(rows[rows["kind"].isin(["broker", "log_dir"])])["load_after"]
    after = after[after["level"] == "broker"].set_index("broker_id")
    targets = _targets(rows)
    checked = []
    for metric, goal in GOAL_OF.items():
        assert status[goal] == "FIXED", goal  # the cluster starts off every balance goal
        mine = targets[targets["metric"] == metric].set_index("broker_id")
        value = after[metric].reindex(mine.index).astype("float64")
        assert ((mine["low"] <= value) & (value <= mine["high"])).all(), (metric, value)
        checked.append(metric)
    assert checked == list(TARGET_METRICS)


def _section(tree: Node, title: str) -> Node:
    for section in tree.find_all("section"):
        heading = next(c for c in section.children if isinstance(c, Node))
        if heading.text() == title:
            return section
    raise AssertionError(f"no section {title!r}")


def _chart(section: Node, title: str) -> Node:
    for figure in section.find_all("figure", "chart"):
        if figure.find("p", "title").text() == title:
            return figure
    raise AssertionError(f"no chart {title!r}")


def test_the_plan_report_draws_the_targets_of_a_real_plan(tmp_path: Path) -> None:
    engine.run_plan(_tables(), tmp_path, "keep")
    plan = _section(
        parse((tmp_path / "report.html").read_text(encoding="utf-8")), "Plan for uneven"
    )
    figure = _chart(
        _section(plan, "Replicas and leaders per broker"), "Replicas per broker, before and after"
    )
    legend = figure.find("svg").find("g", "legend").texts("text")
    assert legend == ["before", "after", "target range (the goal's bounds)", "target"]
    titles = figure.find("svg").texts("title")
    assert "broker 1: before 12, after 6, target 6 (6 to 6)" in titles  # not the mean, 4
    assert "broker 3: before 12, after 3, target 3 (3 to 3)" in titles
    assert "broker 7: before 0, after 0" in titles  # outside the goals: no target
    data = _chart(_section(plan, "Data per broker"), "Data per broker, before and after")
    assert "target" in data.find("svg").find("g", "legend").texts("text")
