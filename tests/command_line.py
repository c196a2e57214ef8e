"""The ``rackwise`` command line run as a person runs it: a process of its own, its exit
status, standard output and standard error (one runner for every test of a command)."""

from __future__ import annotations

import os
import subprocess
import sys


def rackwise(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``rackwise *args``, its output unbuffered, waited for at most ``timeout`` seconds;
    the exit status is the caller's to assert."""
    return subprocess.run(
        [sys.executable, "-m", "rackwise.cli.main", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
