"""``rackwise pipeline audit`` with topic rules: the brokers' defaults from the options, a
fleet's own ``topic_configs`` dataset, and one line for a value that does not parse."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rackwise.cli.main import main
from tests.pipeline.ingest.cases import write_fleet

RACKS = {1: "/dc1/r1", 2: "/dc1/r2", 3: "/dc2/r1", 4: "/dc2/r2"}
PLACED = {("t", 0): (1, 2, 3), ("u", 0): (3, 4, 1)}


def _fleet(root: Path, configs: list[tuple[str, str, str, str | None]]) -> Path:
    brokers = [
        {"cluster_id": "c", "broker_id": b, "rack": rack, "log_dirs": [{"path": "/d"}]}
        for b, rack in RACKS.items()
    ]
    rows = [
        ("c", topic, p, i, b, "/d", 10)
        for (topic, p), placed in PLACED.items()
        for i, b in enumerate(placed)
    ]
    names = ("cluster_id", "topic", "partition", "replica_index", "broker_id", "log_dir")
    types = (pa.string(), pa.string(), pa.int32(), pa.int32(), pa.int32(), pa.string())
    columns = {
        n: pa.array([r[i] for r in rows], t)
        for i, (n, t) in enumerate(zip(names, types, strict=True))
    }
    columns["size_bytes"] = pa.array([r[6] for r in rows], pa.int64())
    write_fleet(root, brokers, pa.table(columns))
    (root / "topic_configs").mkdir()
    keys = ("cluster_id", "topic", "name", "value")
    table = pa.table(
        {k: pa.array([c[i] for c in configs], pa.string()) for i, k in enumerate(keys)}
    )
    pq.write_table(table, root / "topic_configs" / "part-0.parquet")
    return root


def test_a_fleets_topic_configs_and_the_options_defaults(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet = _fleet(tmp_path / "fleet", [("c", "t", "min.insync.racks", "2")])
    out = tmp_path / "out"
    args = ["pipeline", "audit", "--fleet", str(fleet), "--leaders-preference", "racks:/dc2"]
    assert main([*args, "--out", str(out), "--format", "json"]) == 0
    summary = json.loads((out / "summary.json").read_text())["clusters"]["c"]
    # t-0 (1, 2, 3) needs two data centres: losing /dc2 leaves two replicas in /dc1
    assert summary["below_min_insync_racks_if_lost"]["dc"] == {"/dc2": 1}
    # t-0's leader, broker 1, sits in /dc1, outside the default preference /dc2
    assert summary["leaders_outside_preference"] == 1
    # u-0 (3, 4, 1) keeps broker 1 when /dc2 goes: its leadership leaves /dc2
    assert summary["leaders_leave_preference_if_lost"]["dc"] == {"/dc2": 2}
    worst = summary["worst_domain"]
    assert (worst["domain"], worst["refusing_writes_if_lost"]) == ("/dc2", 2)
    capsys.readouterr()


def test_a_topic_config_that_does_not_parse_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet = _fleet(tmp_path / "fleet", [("c", "t", "leaders.preference", "dc1")])
    assert main(["pipeline", "audit", "--fleet", str(fleet), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "error: cluster c topic t: leaders.preference 'dc1': Expected 'none', "
        "'racks:<path>,...' or 'ordered_racks:<path>,...'"
    ]
    assert not (tmp_path / "o").exists()
