"""``rackwise pipeline audit --engine spark`` stopped as a scheduler stops it: a signal to the
driver alone (not to its process group, as a terminal sends Ctrl-C). One line and 130 for
SIGINT, one line and 143 for SIGTERM, and in every case, ``kill -9`` included, no Spark JVM left
running once the driver is gone. Real processes; each case starts the command once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # the cases start Spark (10-30 s each)

JVM_NOTICE = "WARNING: Using incubator modules: jdk.incubator.vector"
"""The JVM's own start-up line (see the session module); it may come at any point."""


_AUDIT = (sys.executable, "-m", "rackwise.cli.main", "pipeline", "audit")


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("signals") / "fleet"
    shape = ["--clusters", "2", "--brokers", "9", "--partitions", "300", "--topology", "dc=3"]
    command = [sys.executable, "-m", "rackwise.cli.main", "pipeline", "generate", *shape]
    done = subprocess.run(
        [*command, "--json-max-clusters", "0", "--out", str(out)],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return out


class Audit:
    """``rackwise pipeline audit --engine spark`` running, its stderr lines collected."""

    def __init__(self, fleet: Path, out: Path) -> None:
        self.out = out
        self.process = subprocess.Popen(
            [*_AUDIT, "--fleet", str(fleet), "--engine", "spark", "--out", str(out)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self.ended = False
        self._changed = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        with self.process.stderr as stderr:
            for line in stderr:
                with self._changed:
                    self.lines.append(line.rstrip("\n"))
                    self._changed.notify_all()
        with self._changed:
            self.ended = True
            self._changed.notify_all()

    def wait_for_line(self, prefix: str, timeout: float = 180) -> int:
        """The index of the first stderr line starting with ``prefix``."""
        with self._changed:
            self._changed.wait_for(
                lambda: self.ended or any(line.startswith(prefix) for line in self.lines),
                timeout,
            )
            indexes = [i for i, line in enumerate(self.lines) if line.startswith(prefix)]
            assert indexes, self.lines
            return indexes[0]

    def jvm(self, timeout: float = 60) -> int:
        """The driver's child java process (``spark-submit`` execs into it)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for child in _children(self.process.pid):
                if _command_name(child) == "java":
                    return child
            time.sleep(0.02)
        raise AssertionError(f"no java child of {self.process.pid}: {self.lines}")

    def finish(self) -> tuple[int, list[str]]:
        """The exit status and the stderr lines (but the JVM's notice), once stderr closes:
        it stays open while a JVM holding it runs."""
        code = self.process.wait(timeout=60)
        with self._changed:
            assert self._changed.wait_for(lambda: self.ended, 30), self.lines
        return code, [line for line in self.lines if line != JVM_NOTICE]


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def _command_name(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm", encoding="ascii") as f:
            return f.read().strip()
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its reaper counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture
def jvms() -> Iterator[list[int]]:
    """JVMs a case found; any still running at its end (a failed case) is killed."""
    found: list[int] = []
    yield found
    for pid in found:
        if _alive(pid) and _command_name(pid) == "java":
            os.kill(pid, signal.SIGKILL)


def _assert_nothing_written(out: Path) -> None:
    assert not out.exists()
    assert [p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}")] == []


def test_sigint_while_the_jvm_starts_says_one_line_and_takes_the_jvm_along(
    fleet: Path, tmp_path: Path, jvms: list[int]
) -> None:
    audit = Audit(fleet, tmp_path / "audit")
    jvms.append(audit.jvm())
    os.kill(audit.process.pid, signal.SIGINT)
    code, lines = audit.finish()
    assert (code, lines[-1]) == (130, "error: interrupted"), lines
    assert lines[:-1] == [line for line in lines if line.startswith("engine: spark")], lines
    # without a gateway yet, nothing but the kernel stops this JVM from running on
    assert _gone_within(jvms[0], 5), lines
    _assert_nothing_written(tmp_path / "audit")


def test_sigterm_while_a_job_runs_says_one_line_and_exits_143(
    fleet: Path, tmp_path: Path, jvms: list[int]
) -> None:
    audit = Audit(fleet, tmp_path / "audit")
    jvms.append(audit.jvm())
    audit.wait_for_line("spark: ")  # ingest's jobs start now
    os.kill(audit.process.pid, signal.SIGTERM)
    code, lines = audit.finish()
    assert (code, lines[-1]) == (143, "error: terminated"), lines
    started = next(i for i, line in enumerate(lines) if line.startswith("spark: "))
    # at most the line of a stage that ended meanwhile, then the command's own
    after = [line for line in lines[started + 1 :] if not line.startswith("ingest: ")]
    assert after == ["error: terminated"], lines
    assert _gone_within(jvms[0], 5), lines
    _assert_nothing_written(tmp_path / "audit")


def test_kill_9_of_the_driver_takes_its_jvm_along(
    fleet: Path, tmp_path: Path, jvms: list[int]
) -> None:
    audit = Audit(fleet, tmp_path / "audit")
    jvms.append(audit.jvm())
    audit.wait_for_line("spark: ")
    # A JVM that does not read its stdin now (a long GC pause, a shutdown hook waiting on a
    # task; stopped here) would not notice the driver go by itself.
    os.kill(jvms[0], signal.SIGSTOP)
    os.kill(audit.process.pid, signal.SIGKILL)
    assert _gone_within(jvms[0], 5)
    code, lines = audit.finish()
    assert code == -signal.SIGKILL, lines
