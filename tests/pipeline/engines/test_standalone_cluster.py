"""The pipeline on a real standalone Spark cluster: a master and a worker started on 127.0.0.1
with the launcher pyspark ships (``bin/spark-class``), and ``rackwise pipeline audit --master
spark://...`` run against them, so that running on a cluster is shown, not assumed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pyspark
import pytest

from tests.processes import free_port

SPARK_HOME = Path(pyspark.__file__).resolve().parent
START_TIMEOUT_S = 60.0


def _wait_for_line(log: Path, text: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if log.exists() and text in log.read_text(errors="replace"):
            return
        if process.poll() is not None:
            break
        time.sleep(0.2)
    content = log.read_text(errors="replace") if log.exists() else ""
    raise AssertionError(f"{text!r} not seen in {log}:\n{content[-3000:]}")


def _start(
    name: str, args: list[str], env: dict[str, str], logs: Path
) -> tuple[subprocess.Popen[bytes], Path]:
    log = logs / f"{name}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(SPARK_HOME / "bin" / "spark-class"), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    return process, log


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=15)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A standalone master and one worker (1 core, 1 GiB) on 127.0.0.1, torn down after: the
    master's URL and the worker's work directory."""
    logs = tmp_path_factory.mktemp("spark-standalone")
    env = {
        **os.environ,
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOG_DIR": str(logs),
        "PYSPARK_PYTHON": sys.executable,
    }
    port, web = free_port(), free_port()
    url = f"spark://127.0.0.1:{port}"
    started: list[subprocess.Popen[bytes]] = []
    try:
        master, master_log = _start(
            "master",
            [
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                str(web),
            ],
            env,
            logs,
        )
        started.append(master)
        _wait_for_line(master_log, "I have been elected leader", master)
        worker, worker_log = _start(
            "worker",
            [
                "org.apache.spark.deploy.worker.Worker",
                "--host",
                "127.0.0.1",
                "--port",
                str(free_port()),
                "--webui-port",
                str(free_port()),
                "--cores",
                "1",
                "--memory",
                "1g",
                "--work-dir",
                str(logs / "work"),
                url,
            ],
            env,
            logs,
        )
        started.append(worker)
        _wait_for_line(worker_log, "Successfully registered with master", worker)
        yield url, logs / "work"
    finally:
        for process in reversed(started):
            _stop(process)


@pytest.mark.slow
def test_audit_runs_on_a_standalone_cluster(cluster: tuple[str, Path], tmp_path: Path) -> None:
    master_url, work_dir = cluster

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "rackwise.cli.main", "pipeline", *args],
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"},
        )

    fleet = tmp_path / "fleet"
    generated = run(
        "generate",
        "--clusters",
        "2",
        "--brokers",
        "6",
        "--partitions",
        "30",
        "--topology",
        "dc=3",
        "--seed",
        "2",
        "--out",
        str(fleet),
    )
    assert generated.returncode == 0, generated.stderr
    audit = run(
        "audit", "--fleet", str(fleet), "--master", master_url, "--out", str(tmp_path / "out")
    )
    assert audit.returncode == 0, audit.stderr
    assert f"spark: {master_url}" in audit.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert sorted(summary["clusters"]) == ["cluster-000", "cluster-001"]
    assert [summary["clusters"][c]["replicas"] for c in sorted(summary["clusters"])] == [90, 90]
    # The work ran on the worker: it started an executor for the application.
    executors = list(work_dir.glob("app-*/*"))
    assert executors, "no executor was started on the worker"
