"""A real plan's report against its own files: every figure the plan section shows is the one
``plan_summary.json`` holds, and those agree with ``reassignment.json``; the real command, the
in-process engine, JSON input with and without replica sizes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rackwise.cli.main import main
from rackwise.pipeline.report.format import format_bytes, format_count
from tests.pipeline.report.dom import Node, parse

RACKS = {1: "/r1", 2: "/r2", 3: "/r3", 4: "/r1"}
DIRS = {1: ["/d1", "/d2"], 2: ["/d1"], 3: ["/d1"], 4: ["/d1"]}
# t-0..t-5 on brokers 1, 2, 3 (every replica of broker 1 in its /d1); u-0 on 1 and 4, one rack
ASSIGNMENT = {("t", p): [1, 2, 3][p % 3 :] + [1, 2, 3][: p % 3] for p in range(6)}
ASSIGNMENT[("u", 0)] = [1, 4]
SIZES = {("t", p): 1000 * (p + 1) for p in range(6)} | {("u", 0): 500}


def _write_inputs(root: Path, with_sizes: bool) -> list[str]:
    brokers = [
        {"id": b, "rack": rack}
        | ({"log_dirs": [{"path": d, "total_bytes": 10**9} for d in DIRS[b]]} if with_sizes else {})
        for b, rack in RACKS.items()
    ]
    (root / "brokers.json").write_text(json.dumps(brokers))
    partitions = [
        {"topic": t, "partition": p, "replicas": replicas}
        for (t, p), replicas in ASSIGNMENT.items()
    ]
    (root / "assignment.json").write_text(json.dumps({"version": 1, "partitions": partitions}))
    args = ["--brokers", str(root / "brokers.json"), "--assignment", str(root / "assignment.json")]
    if not with_sizes:
        return args
    described = [
        {
            "broker": b,
            "logDirs": [
                {
                    "logDir": d,
                    "error": None,
                    "partitions": [
                        {"partition": f"{t}-{p}", "size": SIZES[t, p], "offsetLag": 0}
                        | {"isFuture": False}
                        for (t, p), replicas in ASSIGNMENT.items()
                        if b in replicas and d == "/d1"
                    ],
                }
                for d in DIRS[b]
            ],
        }
        for b in RACKS
    ]
    (root / "log-dirs.json").write_text(json.dumps({"version": 1, "brokers": described}))
    return [*args, "--log-dirs", str(root / "log-dirs.json")]


def _section(tree: Node, title: str) -> Node:
    for section in tree.find_all("section"):
        heading = next(c for c in section.children if isinstance(c, Node))
        if heading.text() == title:
            return section
    raise AssertionError(f"no section {title!r}")


def _cards(section: Node) -> dict[str, tuple[str, str]]:
    """Each card of a section's headline: its label, its value and its detail."""
    out = {}
    for card in section.find("div", "cards").find_all("div", "card"):
        value = card.find("b").text()
        label = "".join(c for c in card.children if isinstance(c, str)).strip()
        details = [c for c in card.children if isinstance(c, Node) and c.tag != "b"]
        out[label] = (value, details[0].text() if details else "")
    return out


def _from_reassignment(out: Path) -> tuple[int, int]:
    """Replicas copied onto another broker, and replicas staying on their broker given a
    directory (a move between its directories), as the reassignment file has them."""
    document = json.loads((out / "c" / "reassignment.json").read_text())
    copied = stayed_named = 0
    for entry in document["partitions"]:
        current = ASSIGNMENT[entry["topic"], entry["partition"]]
        for broker, log_dir in zip(entry["replicas"], entry["log_dirs"], strict=True):
            copied += broker not in current
            stayed_named += broker in current and log_dir != "any"
    return copied, stayed_named


@pytest.mark.parametrize("with_sizes", [True, False])
def test_the_plan_report_shows_the_plan_summarys_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], with_sizes: bool
) -> None:
    inputs = _write_inputs(tmp_path, with_sizes)
    out = tmp_path / "plan"
    args = ["pipeline", "plan", *inputs, "--cluster-id", "c", "--engine", "local"]
    code = main([*args, "--throttle", "1000", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    entry: dict[str, Any] = json.loads((out / "plan_summary.json").read_text())["clusters"]["c"]
    assert (entry["replica_moves"], entry["intra_broker_moves"]) == _from_reassignment(out)
    assert entry["replica_moves"] > 0 and entry["intra_broker_moves"] == (1 if with_sizes else 0)
    goals = entry["goals"]
    moves = sum(g["replica_moves"] for g in goals)
    assert moves == entry["replica_moves"] + entry["intra_broker_moves"]
    if with_sizes:
        moved = sum(g["bytes_moved"] for g in goals)
        assert moved == entry["data_to_move_bytes"] + entry["intra_broker_data_to_move_bytes"]
    else:
        assert entry["sizes_known"] is False and entry["data_to_move_bytes"] is None
    tree = parse((out / "report.html").read_text())
    section = _section(tree, "Plan for c")
    cards = _cards(section)
    assert cards["replica moves"][0] == format_count(entry["replica_moves"])
    assert cards["data to move"][0] == format_bytes(entry["data_to_move_bytes"])
    assert cards["moves between a broker's directories"] == (
        format_count(entry["intra_broker_moves"]),
        format_bytes(entry["intra_broker_data_to_move_bytes"]),
    )
    rows = [r.find_all("td") for r in _section(section, "Goals, in priority order").find_all("tr")]
    shown = {r[0].text(): (r[6].text(), r[7].text()) for r in rows if r}
    assert shown == {
        g["goal"]: (format_count(g["replica_moves"]), format_bytes(g["bytes_moved"])) for g in goals
    }
    text = section.text()
    assert "at an estimated size" not in text  # every size known, or none
    assert ("No replica's size is known" in text) is not with_sizes
    if not with_sizes:
        assert " B " not in f" {text} " and "data per broker" not in text
