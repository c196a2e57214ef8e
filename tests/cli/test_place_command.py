"""``rackwise place`` and ``rackwise demo`` as a person runs them: a real process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BROKERS = [{"id": i, "rack": f"/dc{i % 3}/r{i % 2}"} for i in range(12)]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rackwise.cli.main", *args],
        capture_output=True,
        text=True,
        check=False,
    )


def _brokers(tmp_path: Path) -> str:
    path = tmp_path / "brokers.json"
    path.write_text(json.dumps(BROKERS))
    return str(path)


def test_existing_adds_partitions_and_replicas(tmp_path: Path) -> None:
    brokers = _brokers(tmp_path)
    first = _run(
        "place",
        "--brokers",
        brokers,
        "--partitions",
        "4",
        "--replication-factor",
        "2",
        "--placer",
        "multi-level",
        "--seed",
        "1",
        "--topic",
        "t",
    )
    assert first.returncode == 0, first.stderr
    existing = tmp_path / "existing.json"
    existing.write_text(first.stdout)
    more = _run(
        "place",
        "--brokers",
        brokers,
        "--partitions",
        "6",
        "--replication-factor",
        "2",
        "--placer",
        "multi-level",
        "--seed",
        "1",
        "--existing",
        str(existing),
    )
    assert more.returncode == 0, more.stderr
    added = json.loads(more.stdout)["partitions"]
    assert [p["partition"] for p in added] == [4, 5]
    whole = _run(
        "place",
        "--brokers",
        brokers,
        "--partitions",
        "6",
        "--replication-factor",
        "2",
        "--placer",
        "multi-level",
        "--seed",
        "1",
        "--topic",
        "t",
    )
    assert json.loads(whole.stdout)["partitions"][4:] == added
    raised = _run(
        "place",
        "--brokers",
        brokers,
        "--partitions",
        "4",
        "--replication-factor",
        "3",
        "--placer",
        "multi-level",
        "--seed",
        "1",
        "--existing",
        str(existing),
    )
    assert raised.returncode == 0, raised.stderr
    before = json.loads(first.stdout)["partitions"]
    after = json.loads(raised.stdout)["partitions"]
    assert [p["replicas"][:2] for p in after] == [p["replicas"] for p in before]


def test_bad_input_is_one_line_exit_1(tmp_path: Path) -> None:
    brokers = _brokers(tmp_path)
    cases = [
        (["--partitions", "3", "--replication-factor", "13"], "larger than available brokers: 12"),
        (["--partitions", "3", "--replication-factor", "2", "--broker-ids", "1,x"], "'x'"),
        (["--partitions", "3", "--replication-factor", "2", "--placer", "nope"], "'nope'"),
        (["--partitions", "three", "--replication-factor", "2"], "'three'"),
    ]
    for extra, message in cases:
        done = _run("place", "--brokers", brokers, *extra)
        assert done.returncode == 1
        assert done.stderr.count("\n") == 1 and message in done.stderr
        assert "Traceback" not in done.stderr
    bad_rack = tmp_path / "bad.json"
    bad_rack.write_text('[{"id": 4, "rack": "dc1//r1"}]')
    done = _run(
        "place",
        "--brokers",
        str(bad_rack),
        "--partitions",
        "1",
        "--replication-factor",
        "1",
        "--placer",
        "multi-level",
    )
    assert done.returncode == 1
    assert "Broker 4 has a malformed rack path '/dc1//r1'" in done.stderr  # dc1 is /dc1


def test_summary_json_and_demo(tmp_path: Path) -> None:
    done = _run(
        "place",
        "--brokers",
        _brokers(tmp_path),
        "--partitions",
        "12",
        "--replication-factor",
        "3",
        "--placer",
        "multi-level",
        "--summary",
        "--json",
    )
    rows = json.loads(done.stdout)
    brokers = [r for r in rows if r["broker"] is not None]
    assert sum(r["replicas"] for r in brokers) == 36
    assert {r["leaders"] for r in brokers} == {1}
    demo = _run("demo")
    assert demo.returncode == 0
    assert "multi-level: 0 of 12 partitions spread less evenly" in demo.stdout
    assert max(len(line) for line in demo.stdout.splitlines()) <= 100


def test_place_does_not_import_heavy_modules() -> None:
    code = "import sys, rackwise.cli.main as m; m.main(['place', '--help'])"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0
    check = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; import rackwise.cli.place; "
            "print(any(m.startswith(('numba', 'pyspark')) for m in sys.modules))",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert check.stdout.strip() == "False"


def test_a_file_that_does_not_parse_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "brokers.json"
    bad.write_text('[{"id": 1, "rack": "a"},\n')
    done = _run("place", "--brokers", str(bad), "--partitions", "1", "--replication-factor", "1")
    assert done.returncode == 1
    assert done.stderr == (
        f"error: --brokers {bad}: broker list JSON: not valid JSON: Expecting value "
        "(line 2, column 1)\n"
    )
    existing = tmp_path / "existing.json"
    existing.write_text('{"version": 1, "partitions": [{"topic": "t"')
    done = _run(
        "place",
        "--brokers",
        _brokers(tmp_path),
        "--partitions",
        "1",
        "--replication-factor",
        "1",
        "--existing",
        str(existing),
    )
    assert done.returncode == 1
    assert done.stderr.startswith(f"error: --existing {existing}: reassignment JSON: ")


def test_json_without_summary_is_refused(tmp_path: Path) -> None:
    args = ["--brokers", _brokers(tmp_path), "--partitions", "1", "--replication-factor", "1"]
    done = _run("place", *args, "--json")
    assert done.returncode == 1
    assert done.stderr == "error: --json prints the --summary table as JSON: give --summary too\n"
    assert done.stdout == ""


def test_plain_rack_names_are_paths_for_the_multi_level_placer() -> None:
    kip36 = Path(__file__).resolve().parents[2] / "examples" / "kip36-brokers.json"
    args = ["--partitions", "6", "--replication-factor", "3", "--seed", "3"]
    done = _run("place", "--brokers", str(kip36), *args, "--placer", "multi-level", "--summary")
    assert done.returncode == 0, done.stderr
    assert "/rack1" in done.stdout and "/rack3" in done.stdout
