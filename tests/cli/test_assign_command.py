"""``rackwise assign`` as an operator runs it: a real process on real files and stdin."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

GOLDEN = Path(__file__).parent.parent / "golden" / "kafka_assignor.jsonl"

GROUPS = [
    # The worked example of rack-local-optimal: c2 owned t-0.
    {
        "partitions": {"t": [["a"], ["a"], ["a"], ["b"]]},
        "members": [
            {"member_id": "c1", "rack": "a", "topics": ["t"]},
            {"member_id": "c2", "rack": "b", "topics": ["t"], "owned": ["t-0"]},
        ],
    },
    None,  # a blank line
    # Paths as racks, a leaderless partition ([]), a leader without a rack ([null]).
    {
        "partitions": {"t": [["/dc1/r1", "/dc2/r1"], ["/dc2/r1"], []], "u": [[None]]},
        "members": [
            {"member_id": "z", "rack": "/dc2/r1", "topics": ["t", "u"]},
            {"member_id": "y", "rack": None, "topics": ["t"]},
        ],
        "options": {"prefer_rack_aware_logic": False},
    },
]
NAMES = (
    "range, sticky, cooperative-sticky, leader-rack-aware-range, "
    "leader-rack-aware-cooperative-sticky, rack-local-optimal"
)


def _run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rackwise.cli.main", "assign", *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )


def _input(tmp_path: Path, groups: list[object] = GROUPS) -> str:
    path = tmp_path / "groups.jsonl"
    path.write_text("".join("\n" if g is None else json.dumps(g) + "\n" for g in groups))
    return str(path)


def test_one_line_a_group(tmp_path: Path) -> None:
    done = _run("--assignor", "rack-local-optimal", "--input", _input(tmp_path))
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == (
        '{"assignment":{"c1":[["t",1],["t",2]],"c2":[["t",0],["t",3]]}}\n'
        '{"assignment":{"z":[["t",1],["u",0]],"y":[["t",0],["t",2]]}}\n'
    )


def test_stdin_and_the_assignors_own_order(tmp_path: Path) -> None:
    text = Path(_input(tmp_path)).read_text()
    done = _run("--assignor", "range", "--input", "-", stdin=text)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == (
        '{"assignment":{"c1":[["t",0],["t",1]],"c2":[["t",2],["t",3]]}}\n'
        '{"assignment":{"z":[["t",2],["u",0]],"y":[["t",0],["t",1]]}}\n'
    )


def test_report_as_tables(tmp_path: Path) -> None:
    done = _run("--assignor", "range", "--input", _input(tmp_path), "--report")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == (
        "line 1: range, balance (max - min) 0\n"
        "member  rack  partitions  leader in rack  share\n"
        "c1      a              2               2  100.0%\n"
        "c2      b              2               1  50.0%\n"
        "total                  4               3  75.0%\n"
        "most in the leader's rack for a balanced assignment: 3 (75.0%)\n"
        "\n"
        "line 3: range, balance (max - min) 0\n"
        "member  rack     partitions  leader in rack  share\n"
        "z       /dc2/r1           2               0  0.0%\n"
        "y       -                 2               0  0.0%\n"
        "total                     4               0  0.0%\n"
        "most in the leader's rack for a balanced assignment: 1 (25.0%)\n"
    )


def test_report_as_json(tmp_path: Path) -> None:
    done = _run(
        "--assignor", "rack-local-optimal", "--input", _input(tmp_path), "--report", "--format",
        "json",
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (0, "")
    first, second = map(json.loads, done.stdout.splitlines())
    assert first["report"] == {
        "members": [
            {"member_id": "c1", "rack": "a", "partitions": 2, "leader_rack_local": 2},
            {"member_id": "c2", "rack": "b", "partitions": 2, "leader_rack_local": 1},
        ],
        "partitions": 4,
        "leader_rack_local": 3,
        "balance": 0,
        "optimal_leader_rack_local": 3,
    }
    assert (second["report"]["leader_rack_local"], second["report"]["balance"]) == (1, 0)
    assert second["assignment"] == {"z": [["t", 1], ["u", 0]], "y": [["t", 0], ["t", 2]]}


def test_assignment_as_a_table(tmp_path: Path) -> None:
    done = _run("--assignor", "range", "--input", _input(tmp_path), "--format", "table")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == (
        "line 1: range\n"
        "member  rack  assigned\n"
        "c1      a     t-0 t-1\n"
        "c2      b     t-2 t-3\n"
        "\n"
        "line 3: range\n"
        "member  rack     assigned\n"
        "z       /dc2/r1  t-2 u-0\n"
        "y       -        t-0 t-1\n"
    )


def test_a_line_that_is_not_json_is_named(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"partitions": {}, "members": []}\n{oops\n')
    done = _run("--assignor", "range", "--input", str(path))
    assert done.returncode == 1
    assert done.stdout == '{"assignment":{}}\n'
    assert done.stderr == (
        "error: line 2: not JSON: Expecting property name enclosed in double quotes at column 2\n"
    )


def test_a_group_that_does_not_fit_is_named() -> None:
    text = '\n{"partitions": {}, "members": [{"member_id": ""}]}\n'
    done = _run("--assignor", "sticky", "--input", "-", stdin=text)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        "error: line 2: Invalid consumer group JSON at members[0].member_id: "
        "a member id must not be empty\n"
    )


def test_an_unknown_assignor_lists_the_known_ones(tmp_path: Path) -> None:
    done = _run("--assignor", "roundrobin", "--input", _input(tmp_path))
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f"error: unknown assignor 'roundrobin'; known assignors: {NAMES}\n"


def test_a_missing_file(tmp_path: Path) -> None:
    done = _run("--assignor", "range", "--input", str(tmp_path / "none.jsonl"))
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f"error: No such file or directory: {tmp_path / 'none.jsonl'}\n"


@pytest.mark.parametrize(
    ("assignor", "forbidden"),
    [
        ("range", ("pyspark", "pandas", "numba", "networkx", "kafka")),
        ("rack-local-optimal", ("pyspark", "pandas", "numba", "kafka")),
    ],
)
def test_starts_without_heavy_imports(
    tmp_path: Path, assignor: str, forbidden: tuple[str, ...]
) -> None:
    command = ["assign", "--assignor", assignor, "--input", _input(tmp_path)]
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "rackwise.cli.main", *command],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0
    imported = {
        line.rsplit("|", 1)[1].strip().split(".")[0]
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    assert "rackwise" in imported
    assert not imported & set(forbidden)


def test_golden_cases_with_exact_lists_come_out_exactly(tmp_path: Path) -> None:
    cases = [
        json.loads(line)
        for line in GOLDEN.read_text().splitlines()
        if '"kafka-pr17571-tests/leader-rack-aware-range/' in line and '"exact_lists"' in line
    ]
    assert cases
    path = tmp_path / "golden.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in cases))
    done = _run("--assignor", "leader-rack-aware-range", "--input", str(path))
    assert (done.returncode, done.stderr) == (0, "")
    for case, line in zip(cases, done.stdout.splitlines(), strict=True):
        expected = {
            member: [list(tp.rsplit("-", 1)) for tp in parts]
            for member, parts in case["expected"]["assignment"].items()
        }
        got = {
            member: [[topic, str(p)] for topic, p in parts]
            for member, parts in json.loads(line)["assignment"].items()
        }
        assert got == expected, case["id"]


def test_a_json_error_at_the_end_of_a_line_gives_its_column(tmp_path: Path) -> None:
    line = '{"partitions": {"t": [["a"]]}, "members": [{"member_id": "m", "topics": ["t"]}]'
    groups = tmp_path / "groups.jsonl"
    groups.write_text(line + "\n")
    done = subprocess.run(
        [
            *(sys.executable, "-m", "rackwise.cli.main"),
            *("assign", "--assignor", "range", "--input", str(groups)),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    # The brace is missing after the last character: one column past the end, not column 1.
    assert done.stderr == (
        f"error: line 1: not JSON: Expecting ',' delimiter at column {len(line) + 1}\n"
    )
