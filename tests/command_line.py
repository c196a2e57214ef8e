"""The ``rackwise`` command line run as a person runs it: a process of its own, its exit
status, standard output and standard error (one runner for every test of a command)."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path


def _open_files_at_most(limit: int) -> Callable[[], None]:
    """Lower the child's RLIMIT_NOFILE, as ``ulimit -n`` does; the processes it starts keep it."""
    return lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))


def rackwise(
    *args: str, timeout: float = 120, open_files: int | None = None
) -> subprocess.CompletedProcess[str]:
    """``rackwise *args``, its output unbuffered, waited for at most ``timeout`` seconds; with
    ``open_files``, under that file-descriptor limit. The exit status is the caller's to
    assert."""
    return subprocess.run(
        [sys.executable, "-m", "rackwise.cli.main", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        preexec_fn=None if open_files is None else _open_files_at_most(open_files),
    )


@contextmanager
def running_cluster(directory: Path, *args: str) -> Iterator[str]:
    """``rackwise cluster up --dir directory *args`` for the block, then ``cluster down``;
    the brokers' bootstrap addresses."""
    up = rackwise("cluster", "up", "--dir", str(directory), "--json", *args)
    try:
        assert up.returncode == 0, up.stderr
        nodes = json.loads(up.stdout)["nodes"]
        yield ",".join(f"{n['host']}:{n['port']}" for n in nodes if n["role"] == "broker")
    finally:
        if (directory / "cluster.json").exists():
            rackwise("cluster", "down", "--dir", str(directory))
