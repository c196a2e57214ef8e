"""The README and the pages of ``docs/`` against the code they describe.

* Every link between them leads to a file that exists, and an anchor to a heading in it.
* Every ``$ rackwise ...`` line in a transcript is a command line the command's own parser
  takes (unless the transcript shows the parser refusing it), so a renamed flag cannot leave a
  page behind.
* The transcripts of the commands that need no cluster (``place``, ``assign``) are run, in a
  directory holding the files the transcript ``cat``\\ s, and must print what the page shows,
  byte for byte, with the exit status it shows.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from rackwise.cli.main import SUBCOMMANDS, build_parser

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
RUN: frozenset[str] = frozenset({"place", "assign"})
"""The commands whose transcripts are run: pure, with their inputs in ``examples/``."""


@dataclass(frozen=True)
class Step:
    page: Path
    line: int
    command: str
    output: str


def _blocks(text: str) -> list[tuple[int, list[str]]]:
    """Each fenced code block: the line number of its first line and its lines."""
    blocks, current, start = [], None, 0
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            if current is None:
                current, start = [], number + 1
            else:
                blocks.append((start, current))
                current = None
        elif current is not None:
            current.append(line)
    return blocks


def _steps(page: Path) -> list[Step]:
    """The ``$ `` commands of a page's transcripts, continuation lines joined, each with the
    lines printed after it."""
    steps: list[Step] = []
    for start, lines in _blocks(page.read_text(encoding="utf-8")):
        index = 0
        while index < len(lines):
            if not lines[index].startswith("$ "):
                index += 1
                continue
            first = index
            command = lines[index][2:]
            while command.endswith("\\"):
                index += 1
                command = command[:-1] + " " + lines[index].strip()
            index += 1
            output = []
            while index < len(lines) and not lines[index].startswith("$ "):
                output.append(lines[index])
                index += 1
            steps.append(Step(page, start + first, command, "\n".join(output)))
    return steps


STEPS = [step for page in PAGES for step in _steps(page)]
RACKWISE = [step for step in STEPS if step.command.startswith("rackwise ")]


def _id(step: Step) -> str:
    return f"{step.page.name}:{step.line}"


def test_the_pages_hold_transcripts() -> None:
    assert len(RACKWISE) >= 40
    assert {page.name for page in PAGES} >= {"README.md", "placement.md", "plan.md"}


def test_every_page_is_linked_from_the_readme() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for page in PAGES[1:]:
        assert f"(docs/{page.name})" in readme, page.name


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = page.read_text(encoding="utf-8")
    fenced = {n for start, lines in _blocks(text) for n in range(start - 1, start + len(lines))}
    return {
        _anchor(line.lstrip("#"))
        for number, line in enumerate(text.splitlines(), 1)
        if line.startswith("#") and number not in fenced
    }


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_link_leads_somewhere(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+://", target):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        assert linked.exists(), f"{page.name}: {target}"
        if anchor and linked.suffix == ".md":
            assert anchor in _anchors(linked), f"{page.name}: {target}"


def _argv(command: str) -> list[str]:
    """The arguments of a transcript's command line, without a trailing comment."""
    words = shlex.split(command, comments=True)
    return words[1:]


@pytest.mark.parametrize("step", RACKWISE, ids=_id)
def test_every_command_line_parses(step: Step) -> None:
    argv = _argv(step.command)
    assert argv and argv[0] in SUBCOMMANDS, step.command
    parser, subparsers = build_parser()
    __import__(SUBCOMMANDS[argv[0]][0], fromlist=["configure"]).configure(subparsers[argv[0]])
    refused = "(see rackwise" in step.output and "--help)" in step.output
    try:
        _, extras = parser.parse_known_args(argv)
    except SystemExit:
        assert refused, f"{_id(step)}: {step.command}"
        return
    assert not extras, f"{_id(step)}: {step.command}: {extras}"


def _run_in(directory: Path, step: Step, files: dict[str, str]) -> str:
    for name, content in files.items():
        (directory / name).write_text(content + "\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "rackwise", *_argv(step.command)],
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        check=False,
    )
    shown = done.stdout + done.stderr
    if done.returncode:
        shown += f"exit status {done.returncode}\n"
    return shown.rstrip("\n")


def _pure_steps() -> list[tuple[Step, dict[str, str]]]:
    """The steps to run, each with the files the ``cat`` steps before it in its page show."""
    chosen, files = [], {}
    for step in STEPS:
        words = step.command.split()
        if words[0] == "cat" and len(words) == 2:
            files[words[1]] = step.output
        elif words[0] == "rackwise" and words[1] in RUN:
            chosen.append((step, dict(files)))
    return chosen


@pytest.mark.parametrize(
    ("step", "files"), _pure_steps(), ids=lambda v: _id(v) if isinstance(v, Step) else ""
)
def test_the_pure_transcripts_print_what_the_page_shows(
    step: Step, files: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "examples").symlink_to(REPO / "examples")
    assert _run_in(tmp_path, step, files) == step.output.rstrip("\n")
