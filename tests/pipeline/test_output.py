"""``--out DIR`` is owned by one run: refused when it is someone else's, replaced whole when it
is an earlier output, untouched when the run fails, and never a mix of two runs, whichever
crash point a run dies at. Real directories in tmp_path."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rackwise.pipeline import output
from rackwise.pipeline.output import (
    MARKER_FILE,
    OutputDirectoryException,
    check_output_dir,
    is_rackwise_output,
    owned_output,
)


def _files(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != MARKER_FILE
    }


def _run(out: Path, files: dict[str, str], **kwargs: object) -> None:
    with owned_output(out, "plan", **kwargs) as new:  # type: ignore[arg-type]
        for name, text in files.items():
            (new.path / name).parent.mkdir(parents=True, exist_ok=True)
            (new.path / name).write_text(text)


def _siblings(out: Path) -> list[str]:
    return sorted(p.name for p in out.parent.iterdir() if p.name != out.name)


FIRST = {"summary.json": "1", "a/reassignment.json": "a1", "b/reassignment.json": "b1"}
SECOND = {"summary.json": "2", "a/reassignment.json": "a2"}


def test_a_second_run_replaces_the_first_whole(tmp_path: Path) -> None:
    out = tmp_path / "plan"
    _run(out, FIRST)
    assert _files(out) == FIRST
    marker = json.loads((out / MARKER_FILE).read_text())
    assert marker == {"command": "plan", "written_by": "rackwise pipeline"}
    _run(out, SECOND)
    assert _files(out) == SECOND  # b's file of the first run is gone
    assert _siblings(out) == []


def test_a_directory_that_is_not_a_rackwise_output_is_refused_untouched(tmp_path: Path) -> None:
    out = tmp_path / "home"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(OutputDirectoryException) as caught:
        _run(out, FIRST)
    assert str(caught.value) == (
        f"--out {out}: the directory is not empty and is not a rackwise output (no "
        "rackwise-output.json); give a new or empty directory"
    )
    assert _files(out) == {"notes.txt": "mine"}
    assert _siblings(out) == []
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputDirectoryException, match="not a directory"):
        check_output_dir(tmp_path / "file")
    with pytest.raises(OutputDirectoryException, match=r"parent directory .* does not exist"):
        check_output_dir(tmp_path / "none" / "out")


def test_an_empty_directory_or_an_output_of_before_the_marker_is_replaced(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    _run(empty, SECOND)
    assert _files(empty) == SECOND
    legacy = tmp_path / "legacy"
    for name, text in {**FIRST, "rejected.jsonl": "", "audit/load/part.parquet": "x"}.items():
        (legacy / name).parent.mkdir(parents=True, exist_ok=True)
        (legacy / name).write_text(text)
    assert is_rackwise_output(legacy)
    (legacy / "b" / "mine.txt").write_text("not ours")
    assert not is_rackwise_output(legacy)  # a cluster directory holding something else
    (legacy / "b" / "mine.txt").unlink()
    _run(legacy, SECOND)
    assert _files(legacy) == SECOND


def test_a_run_that_fails_leaves_the_previous_output(tmp_path: Path) -> None:
    out = tmp_path / "plan"
    _run(out, FIRST)
    with pytest.raises(KeyboardInterrupt), owned_output(out, "plan") as new:
        (new.path / "summary.json").write_text("half")
        raise KeyboardInterrupt
    assert _files(out) == FIRST
    assert _siblings(out) == []


class Crash(Exception):
    """The process dies here."""


@pytest.mark.parametrize("exchange", [True, False], ids=["exchange", "two-renames"])
@pytest.mark.parametrize("point", ["written", "exchanged", "moved_away"])
def test_a_crash_at_any_point_leaves_one_runs_output_and_the_next_run_recovers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str, exchange: bool
) -> None:
    if not exchange:
        monkeypatch.setattr(output, "_exchange", lambda a, b: False)
    out = tmp_path / "plan"
    _run(out, FIRST)

    def crash(reached: str) -> None:
        if reached == point:
            raise Crash(point)

    try:
        # the new directory is only deleted on an exception seen inside the run; a crash
        # (kill -9) at the point is a BaseException nothing cleans up after
        with monkeypatch.context() as m:
            m.setattr(output.shutil, "rmtree", lambda *a, **k: None)
            _run(out, SECOND, crash=crash)
    except Crash:
        pass
    if out.exists():
        assert _files(out) in (FIRST, SECOND)  # one run's files, never a mix
    else:
        assert (point, exchange) == ("moved_away", False)
    _run(out, SECOND)
    assert _files(out) == SECOND
    assert _siblings(out) == []


def test_a_leftover_of_a_run_still_going_is_left_alone(tmp_path: Path) -> None:
    out = tmp_path / "plan"
    going = tmp_path / f".plan.rackwise-new-{os.getppid()}-0a0b0c0d"
    dead = tmp_path / ".plan.rackwise-new-999999999-0a0b0c0d"
    for leftover in (going, dead):
        leftover.mkdir()
    _run(out, FIRST)
    assert _siblings(out) == [going.name]
