"""The ``rackwise`` command line run as a person runs it: a process of its own, its exit
status, standard output and standard error (one runner for every test of a command)."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from collections.abc import Callable


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
