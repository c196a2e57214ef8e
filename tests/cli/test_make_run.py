"""What a new user meets first: the README's way onto ``PATH``, and ``make run``'s output (a
heading per step, no echoed make commands, Spark's JVM notice once)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()
RUN_SH = (REPO / "scripts" / "run.sh").read_text()


def _recipe(target: str) -> list[str]:
    lines = (REPO / "Makefile").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{target}:"))
    recipe = []
    for line in lines[start + 1 :]:
        if not line.startswith("\t"):
            break
        recipe.append(line[1:])
    return recipe


def test_the_readme_says_how_to_run_rackwise_before_its_first_example() -> None:
    first_example = README.index("$ rackwise ")
    activate = README.find("source .venv/bin/activate")
    assert 0 <= activate < first_example
    assert README.find(".venv/bin/rackwise") < first_example


def test_make_run_echoes_no_make_commands_and_the_readme_names_run_dir() -> None:
    for target in ("run", "$(STAMP)"):
        assert all(line.startswith("@") for line in _recipe(target)), target
    make_run = README[README.index("## `make run`") :]
    assert "RUN_DIR" in make_run[: make_run.index("\n## ")]


def test_every_command_of_run_sh_comes_after_a_heading() -> None:
    body = RUN_SH[RUN_SH.index('rm -f "$JVM_NOTICE"') :]
    commands = [
        m.start() for m in re.finditer(r'^(?:spark )?"\$BIN/rackwise" (?!cluster down)', body, re.M)
    ]
    steps = [m.start() for m in re.finditer(r"^step ", body, re.M)]
    assert steps and steps[0] < commands[0]  # the demo too
    assert 'rackwise" demo' in body[steps[0] : steps[1]]


def test_the_jvm_notice_shows_once_across_commands(tmp_path: Path) -> None:
    functions = RUN_SH[RUN_SH.index("jvm_notice_once() {") : RUN_SH.index('\nmkdir -p "$RUN_DIR"')]
    script = f"""
set -euo pipefail
JVM_NOTICE={tmp_path}/shown
{functions}
fake() {{
    echo "out $1"
    echo "WARNING: Using incubator modules: jdk.incubator.vector" >&2
    echo "err $1" >&2
    return "$2"
}}
spark fake 1 0
spark fake 2 0
spark fake 3 7 || echo "status $?"
"""
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["out 1", "out 2", "out 3", "status 7"]
    assert done.stderr.count("Using incubator modules") == 1
    assert [line for line in done.stderr.splitlines() if line.startswith("err")] == [
        "err 1",
        "err 2",
        "err 3",
    ]


def test_every_rackwise_command_of_run_sh_parses() -> None:
    import shlex

    from rackwise.cli.main import SUBCOMMANDS, build_parser

    joined = RUN_SH.replace("\\\n", " ")
    commands = [
        shlex.split(line.strip())[1:]
        for line in joined.splitlines()
        if line.strip().startswith(('"$BIN/rackwise"', 'spark "$BIN/rackwise"'))
    ]
    commands = [c[1:] if c[0] == "$BIN/rackwise" else c for c in commands]
    assert len(commands) >= 12
    for argv in commands:
        parser, subparsers = build_parser()
        __import__(SUBCOMMANDS[argv[0]][0], fromlist=["configure"]).configure(subparsers[argv[0]])
        _, extras = parser.parse_known_args(argv)
        assert not extras, argv
    assert {"rebalance", "pipeline", "topics", "cluster"} <= {c[0] for c in commands}
