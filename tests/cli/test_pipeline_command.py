"""``rackwise pipeline`` as a person runs it: real processes, real files, real Spark."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest


def _run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rackwise.cli.main", "pipeline", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
    )


def _generate(out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return _run(
        "generate",
        "--clusters",
        "2",
        "--brokers",
        "9",
        "--partitions",
        "300",
        "--topology",
        "dc=3,rack=2",
        "--seed",
        "11",
        "--out",
        str(out),
        *extra,
    )


def test_generate_writes_both_forms_and_says_what_it_skipped(tmp_path: Path) -> None:
    done = _generate(tmp_path / "fleet", "--json-max-clusters", "1")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"fleet {tmp_path / 'fleet'}"
    assert lines[2:6] == [
        "clusters           2",
        "brokers           18",
        "partitions       600",
        "replicas       1,800",
    ]
    assert "generate: 1,800/1,800 replicas (100%" in done.stderr
    assert "JSON form skipped for 1 cluster(s) (cluster-001)" in done.stderr
    assert sorted(p.name for p in (tmp_path / "fleet" / "json").iterdir()) == ["cluster-000"]
    assert pq.read_table(tmp_path / "fleet" / "replicas").num_rows == 1800
    again = _generate(tmp_path / "fleet")
    assert again.returncode == 1
    assert again.stderr.startswith("error: ") and "already exists" in again.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("--fleet", "x", "--brokers", "b.json", "--out", "o"),
            "error: give either --fleet DIR or --brokers/--assignment, not both\n",
        ),
        (
            ("--brokers", "b.json", "--out", "o"),
            "error: give --fleet DIR, --metadata PATH, or --brokers FILE and --assignment FILE\n",
        ),
    ],
)
def test_inputs_that_do_not_go_together_fail_before_spark_starts(
    args: tuple[str, ...], message: str
) -> None:
    done = _run("audit", *args)
    assert (done.returncode, done.stderr) == (1, message)


def test_fail_on_rejects_stops_after_writing_the_rejected_rows(tmp_path: Path) -> None:
    (tmp_path / "brokers.json").write_text('[{"id":1,"rack":"/a"},{"id":2,"rack":"/b//c"}]')
    (tmp_path / "assignment.json").write_text(
        '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1]}]}'
    )
    out = tmp_path / "out"
    done = _run(
        "audit",
        "--brokers",
        str(tmp_path / "brokers.json"),
        "--assignment",
        str(tmp_path / "assignment.json"),
        "--master",
        "local[1]",
        "--out",
        str(out),
        "--fail-on-rejects",
    )
    assert done.returncode == 2, done.stderr
    stages = [line.split(":")[0] for line in done.stderr.splitlines() if ": " in line]
    assert [s for s in stages if s in ("spark", "ingest", "rejected", "error")] == [
        "spark",
        "ingest",
        "rejected",
        "error",
    ]
    assert "error: 1 row rejected (--fail-on-rejects)" in done.stderr
    rows = pq.read_table(out / "rejected").to_pylist()
    assert [r["reason"] for r in rows] == [
        "Broker 2 has a malformed rack path '/b//c': empty component (a doubled or trailing '/')"
    ]
    sample = [json.loads(line) for line in (out / "rejected.jsonl").read_text().splitlines()]
    assert sample == rows
    assert not (out / "summary.json").exists()


def _apply(assignment: dict[str, object], reassignment: dict[str, object]) -> dict[str, object]:
    """The assignment after ``kafka-reassign-partitions --execute`` of ``reassignment``."""
    moved = {(p["topic"], p["partition"]): p for p in reassignment["partitions"]}  # type: ignore[index]
    partitions = [
        moved.get((p["topic"], p["partition"]), p)  # type: ignore[index]
        for p in assignment["partitions"]  # type: ignore[union-attr]
    ]
    return {"version": 1, "partitions": partitions}


@pytest.mark.slow
def test_plan_then_audit_of_the_planned_cluster_finds_no_spread_violation(tmp_path: Path) -> None:
    assert _generate(tmp_path / "fleet").returncode == 0
    cluster = tmp_path / "fleet" / "json" / "cluster-000"
    plan = _run(
        "plan",
        "--brokers",
        str(cluster / "brokers.json"),
        "--assignment",
        str(cluster / "assignment.json"),
        "--log-dirs",
        str(cluster / "log_dirs.json"),
        "--cluster-id",
        "cluster-000",
        "--out",
        str(tmp_path / "plan"),
        "--format",
        "json",
    )
    assert plan.returncode == 0, plan.stderr
    summary = json.loads(plan.stdout)
    assert summary["rejected"] == 0
    assert set(summary["clusters"]) == {"cluster-000"}
    reassignment = json.loads((tmp_path / "plan" / "cluster-000" / "reassignment.json").read_text())
    after = _apply(json.loads((cluster / "assignment.json").read_text()), reassignment)
    (tmp_path / "after.json").write_text(json.dumps(after))
    audit = _run(
        "audit",
        "--brokers",
        str(cluster / "brokers.json"),
        "--assignment",
        str(tmp_path / "after.json"),
        "--cluster-id",
        "cluster-000",
        "--out",
        str(tmp_path / "audit"),
    )
    assert audit.returncode == 0, audit.stderr
    for stage in ("engine: local", "ingest:", "rejected:", "audit:"):
        assert stage in audit.stderr
    audited = json.loads((tmp_path / "audit" / "summary.json").read_text())
    assert audited["clusters"]["cluster-000"]["partitions_with_spread_violations"] == 0
    # The balance targets hold: no goal is left violated, and the audit of the applied plan
    # finds the replicas and leaders per broker and per rack the plan promised.
    planned = summary["clusters"]["cluster-000"]
    assert [g["goal"] for g in planned["goals"] if g["status"] == "VIOLATED"] == []
    assert planned["spread_violations"]["after"] == 0
    skew = audited["clusters"]["cluster-000"]["skew"]
    for level in ("broker", "rack", "dc"):
        for metric in ("replicas", "leaders"):
            assert skew[level][metric] == planned["skew"]["after"][level][metric], (level, metric)
    assert audited["clusters"]["cluster-000"]["replicas"] == 900
    assert "cluster-000" in audit.stdout and "rejected rows: 0" in audit.stdout
    assert (tmp_path / "audit" / "report.html").is_file()


def test_log_dirs_option_names_the_broker_of_a_kip113_file() -> None:
    from rackwise.pipeline._command import _log_dirs

    assert _log_dirs(["3=b3.json", "/data/x=y.json", "all.txt"]) == [
        (3, "b3.json"),
        "/data/x=y.json",
        "all.txt",
    ]


def test_the_command_line_loads_no_spark_until_a_job_runs() -> None:
    probe = (
        "import sys, rackwise.cli.main as m; m.build_parser(); import rackwise.cli.pipeline; "
        "print(sorted(n for n in ('pyspark', 'pyarrow', 'numpy') if n in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_every_input_problem_is_one_line_naming_it(tmp_path: Path) -> None:
    (tmp_path / "fleet" / "brokers").mkdir(parents=True)
    (tmp_path / "fleet" / "replicas").mkdir()
    (tmp_path / "bad.json").write_text("{bad")
    (tmp_path / "a.json").write_text('{"version":1,"partitions":[]}')
    fleet, bad, good = tmp_path / "fleet", tmp_path / "bad.json", tmp_path / "a.json"
    out = str(tmp_path / "out")
    cases = [
        (
            ("audit", "--fleet", str(fleet), "--out", out),
            f"fleet dataset {fleet}/brokers: no data files in it",
        ),
        (
            ("audit", "--fleet", str(tmp_path / "none"), "--out", out),
            f"No such fleet directory: {tmp_path / 'none'}",
        ),
        (
            (
                "plan",
                "--brokers",
                str(tmp_path / "nope.json"),
                "--assignment",
                str(good),
                "--out",
                out,
            ),
            f"No such file: {tmp_path / 'nope.json'}",
        ),
        (
            ("audit", "--fleet", str(fleet), "--master", "bogus://x", "--out", out),
            "--master 'bogus://x': expected local, local[N], local[*], spark://HOST:PORT, "
            "yarn, k8s://URL or mesos://URL",
        ),
        (
            ("plan", "--fleet", str(fleet), "--throttle", "-5", "--out", out),
            "--throttle must be a positive number of bytes per second, got -5",
        ),
        (
            ("audit", "--fleet", str(fleet), "--min-insync-replicas", "0", "--out", out),
            "--min-insync-replicas must be at least 1, got 0",
        ),
        (
            (
                "generate",
                "--clusters",
                "1",
                "--brokers",
                "5",
                "--partitions",
                "-3",
                "--topology",
                "dc=3",
                "--out",
                out,
            ),
            "--partitions must be at least 1, got -3",
        ),
        (
            (
                "generate",
                "--clusters",
                "1",
                "--brokers",
                "5",
                "--partitions",
                "3",
                "--topology",
                "dc=x",
                "--out",
                out,
            ),
            "topology 'dc=x': expected levels such as dc=3,rack=2, got 'dc=x'",
        ),
        (
            (
                "audit",
                "--brokers",
                str(bad),
                "--assignment",
                str(good),
                "--master",
                "local[1]",
                "--out",
                out,
            ),
            f"{bad}: broker list JSON: not valid JSON: Expecting property name enclosed in "
            "double quotes (line 1, column 2)",
        ),
    ]
    for args, message in cases:
        done = _run(*args)
        errors = [
            line
            for line in done.stderr.splitlines()
            if "Traceback" in line or line.startswith("error: ")
        ]
        assert (done.returncode, errors) == (1, [f"error: {message}"]), args
    assert not (tmp_path / "out").exists()


def test_a_small_fleet_is_generated(tmp_path: Path) -> None:
    done = _run(
        "generate",
        "--clusters",
        "3",
        "--brokers",
        "12",
        "--partitions",
        "200",
        "--topology",
        "dc=3,rack=2",
        "--seed",
        "1",
        "--out",
        str(tmp_path / "f"),
    )
    assert done.returncode == 0, done.stderr
    assert pq.read_table(tmp_path / "f" / "replicas").num_rows == 3 * 200 * 3


def test_the_plan_table_shows_the_headline_figures() -> None:
    from rackwise.pipeline._command import _plan_table

    entry = {
        "replica_moves": 5,
        "lower_bound": {"replica_moves": 4, "bytes": 10, "explanation": "..."},
        "intra_broker_moves": 1,
        "leader_moves": 2,
        "data_to_move_bytes": 1000,
        "spread_violations": {"before": 3, "after": 0, "avoidable_after": 0},
        "balancedness_score": {"before": 70.0, "after": 100.0},
        "move_time": {"seconds": 12.34},
    }
    assert _plan_table({"clusters": {"c": entry, "d": {"error": "cannot"}}}) == {
        "c": {
            "replica_moves": 5,
            "lower_bound": 4,
            "intra_broker_moves": 1,
            "leader_moves": 2,
            "data_to_move_bytes": 1000,
            "spread_before": 3,
            "spread_after": 0,
            "score_after": 100.0,
            "move_time_s": 12.3,
        },
        "d": dict.fromkeys(
            (
                "replica_moves",
                "lower_bound",
                "intra_broker_moves",
                "leader_moves",
                "data_to_move_bytes",
                "spread_before",
                "spread_after",
                "score_after",
                "move_time_s",
            )
        ),
    }


def test_drain_log_dirs_empties_the_named_directories(tmp_path: Path) -> None:
    assert _generate(tmp_path / "fleet").returncode == 0
    cluster = tmp_path / "fleet" / "json" / "cluster-000"
    described = json.loads((cluster / "log_dirs.json").read_text().splitlines()[-1])
    healthy = [  # a broker without a failed directory: Kafka lets its replicas move
        b for b in described["brokers"] if all(d["error"] is None for d in b["logDirs"])
    ]
    broker = healthy[0]["broker"]
    [drained] = [d for d in healthy[0]["logDirs"] if d["logDir"].endswith("/d1")]
    held = {p["partition"] for p in drained["partitions"]}
    assert held
    plan = _run(
        "plan", "--brokers", str(cluster / "brokers.json"), "--assignment",
        str(cluster / "assignment.json"), "--log-dirs", str(cluster / "log_dirs.json"),
        "--cluster-id", "cluster-000", "--out", str(tmp_path / "plan"), "--format", "json",
        "--drain-log-dirs", f"{broker}:{drained['logDir']}",
    )  # fmt: skip
    assert plan.returncode == 0, plan.stderr
    reassignment = json.loads((tmp_path / "plan" / "cluster-000" / "reassignment.json").read_text())
    placed = {
        f"{p['topic']}-{p['partition']}": dict(zip(p["replicas"], p["log_dirs"], strict=True))
        for p in reassignment["partitions"]
    }
    for name, dirs in placed.items():
        assert dirs.get(broker) != drained["logDir"], name  # nothing goes there
    for name in held:  # and whatever was there leaves it, or leaves the broker
        assert name in placed and placed[name].get(broker) != drained["logDir"], name
    refused = _run("plan", "--drain-log-dirs", "data", "--out", str(tmp_path / "x"))
    assert refused.returncode == 1
    assert "'data' is not a log directory: an absolute path, or BROKER:PATH" in refused.stderr
