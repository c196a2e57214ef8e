"""``rackwise pipeline audit|plan`` as an operator runs it: the output directory it owns, the
engine it chooses, what it refuses before Spark starts, what Ctrl-C prints. Real processes
and files; the Spark runs are marked slow."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rackwise.cli.main import main
from rackwise.pipeline.engines import AUTO_LOCAL_MAX_REPLICAS, choose_engine
from rackwise.pipeline.output import MARKER_FILE

BROKERS = '[{"id":1,"rack":"/a"},{"id":2,"rack":"/a"},{"id":3,"rack":"/b"}]'
SPREAD_BADLY = '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}'
SPREAD_WELL = '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,3]}]}'


def _cluster(root: Path, assignment: str) -> list[str]:
    root.mkdir(parents=True, exist_ok=True)
    (root / "brokers.json").write_text(BROKERS)
    (root / "assignment.json").write_text(assignment)
    return ["--brokers", str(root / "brokers.json"), "--assignment", str(root / "assignment.json")]


def _pipeline(*args: str) -> int:
    return main(["pipeline", *args])


def test_a_plan_into_an_earlier_plan_leaves_none_of_its_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "plan"
    bad = _cluster(tmp_path / "bad", SPREAD_BADLY)
    assert _pipeline("plan", *bad, "--cluster-id", "east", "--out", str(out)) == 0
    assert (out / "east" / "reassignment.json").is_file()
    # the next run plans another cluster: east's file of the earlier run must not survive
    assert _pipeline("plan", *bad, "--cluster-id", "west", "--out", str(out)) == 0
    clusters = sorted(p.name for p in out.iterdir() if p.is_dir())
    assert clusters == ["audit", "plan", "rejected", "west"]
    # and a cluster that needs no change this time has no file at all
    good = _cluster(tmp_path / "good", SPREAD_WELL)
    assert _pipeline("plan", *good, "--cluster-id", "west", "--out", str(out)) == 0
    assert not (out / "west").exists()
    summary = json.loads((out / "plan_summary.json").read_text())
    assert summary["clusters"]["west"]["reassignment_file"] is None
    assert json.loads((out / MARKER_FILE).read_text())["command"] == "plan"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad", "good", "plan"]
    capsys.readouterr()


def test_a_directory_that_is_not_a_rackwise_output_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("mine")
    bad = _cluster(tmp_path / "bad", SPREAD_BADLY)
    assert _pipeline("plan", *bad, "--out", str(tmp_path / "out")) == 1
    error = capsys.readouterr().err
    assert error == (
        f"error: --out {tmp_path / 'out'}: the directory is not empty and is not a rackwise "
        f"output (no {MARKER_FILE}); give a new or empty directory\n"
    )
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["notes.txt"]


def test_the_plan_audits_its_input_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = _cluster(tmp_path / "bad", SPREAD_BADLY)
    assert _pipeline("plan", *bad, "--out", str(tmp_path / "plan")) == 0
    stages = [line.split(":")[0] for line in capsys.readouterr().err.splitlines()]
    assert stages == [
        "engine",
        "ingest",
        "rejected",
        "plan balance",
        "plan audit tables",
        "plan audit summary",
        "plan reassignments",
        "plan after",
        "plan summary",
        "plan report",
        "plan",
    ]


def test_auto_runs_small_inputs_in_process_and_large_or_named_masters_on_spark() -> None:
    make_run = 8 * 24 * 4000 // 8 * 3  # the fleet `make run` generates: 96,000 replica rows
    assert choose_engine("auto", make_run, has_master=False)[0] == "local"
    assert choose_engine("auto", AUTO_LOCAL_MAX_REPLICAS, has_master=False)[0] == "local"
    assert choose_engine("auto", AUTO_LOCAL_MAX_REPLICAS + 1, has_master=False)[0] == "spark"
    assert choose_engine("auto", 10, has_master=True) == (
        "spark",
        "10 replica rows, auto: a Spark master is named",
    )
    assert choose_engine("spark", 10, has_master=False)[0] == "spark"
    assert choose_engine("local", 10**9, has_master=False)[0] == "local"


def test_a_fleet_the_size_of_make_runs_is_planned_in_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet = tmp_path / "fleet"
    shape = ["--brokers", "24", "--partitions", "4000", "--topology", "dc=3,rack=2"]
    assert _pipeline("generate", "--clusters", "8", *shape, "--seed", "7", "--out", str(fleet)) == 0
    capsys.readouterr()
    began = time.perf_counter()
    assert _pipeline("plan", "--fleet", str(fleet), "--out", str(tmp_path / "plan")) == 0
    seconds = time.perf_counter() - began
    err = capsys.readouterr().err
    assert err.splitlines()[0] == (
        "engine: local (96,000 replica rows, auto: up to 5,000,000 in process)"
    )
    assert "spark:" not in err
    assert seconds < 60, "in seconds, not a minute"


def test_master_and_local_engine_do_not_go_together(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = _cluster(tmp_path / "bad", SPREAD_BADLY)
    args = ("--engine", "local", "--master", "local[1]", "--out", str(tmp_path / "o"))
    assert _pipeline("audit", *bad, *args) == 1
    assert capsys.readouterr().err == (
        "error: --master names a Spark master; it does not go with --engine local\n"
    )


def _cli(*args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rackwise.cli.main", "pipeline", *args],
        capture_output=True,
        text=True,
        check=False,
        **kwargs,  # type: ignore[call-overload]
    )


def test_json_that_does_not_parse_is_refused_before_spark_starts(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text("{bad")
    (tmp_path / "a.json").write_text(SPREAD_BADLY)
    bad, good = tmp_path / "bad.json", tmp_path / "a.json"
    done = _cli(
        "plan",
        "--engine",
        "spark",
        *("--brokers", str(bad), "--assignment", str(good), "--out", str(tmp_path / "o")),
    )
    assert (done.returncode, done.stderr) == (
        1,
        f"error: {bad}: broker list JSON: not valid JSON: Expecting property name enclosed "
        "in double quotes (line 1, column 2)\n",
    )
    assert not (tmp_path / "o").exists()


def _interrupted(args: list[str], marker: str, cwd: Path) -> tuple[int, list[str]]:
    """Run ``rackwise pipeline ARGS`` in its own process group, press Ctrl-C (SIGINT to the
    whole group, as a terminal does) once a stderr line starts with ``marker``; the exit
    status and every stderr line."""
    process = subprocess.Popen(
        [sys.executable, "-m", "rackwise.cli.main", "pipeline", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        start_new_session=True,
    )
    assert process.stderr is not None
    lines: list[str] = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([process.stderr], [], [], 1.0)
        if not ready:
            continue
        line = process.stderr.readline()
        if not line:
            break
        lines.append(line.rstrip("\n"))
        if line.startswith(marker):
            os.killpg(process.pid, signal.SIGINT)
            break
    _, rest = process.communicate(timeout=120)
    return process.returncode, lines + rest.splitlines()


def _assert_one_line(code: int, lines: list[str], out: Path) -> None:
    assert code == 130, lines
    assert lines[-1] == "error: interrupted", lines
    assert sum("interrupted" in line for line in lines) == 1, lines
    assert not any("Traceback" in line or "ERROR" in line for line in lines), lines
    assert not out.exists()
    assert [p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}")] == []


def test_ctrl_c_in_process_prints_one_line(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet"
    shape = ["--clusters", "6", "--brokers", "48", "--partitions", "40000", "--topology", "dc=3"]
    assert _cli("generate", *shape, "--json-max-clusters", "0", "--out", str(fleet)).returncode == 0
    args = ["plan", "--fleet", str(fleet), "--engine", "local", "--out", str(tmp_path / "plan")]
    code, lines = _interrupted(args, "ingest:", tmp_path)
    _assert_one_line(code, lines, tmp_path / "plan")


@pytest.mark.slow  # starts Spark (about 10 s)
def test_ctrl_c_on_spark_prints_one_line_without_py4j_tracebacks(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet"
    shape = ["--clusters", "2", "--brokers", "9", "--partitions", "300", "--topology", "dc=3"]
    assert _cli("generate", *shape, "--json-max-clusters", "0", "--out", str(fleet)).returncode == 0
    args = ["plan", "--fleet", str(fleet), "--engine", "spark", "--out", str(tmp_path / "plan")]
    code, lines = _interrupted(args, "spark:", tmp_path)
    _assert_one_line(code, lines, tmp_path / "plan")
