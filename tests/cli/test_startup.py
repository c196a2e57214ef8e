"""A command's start-up: ``--help`` and a refusal of a bad argument load none of the heavy
modules only running a command needs (the wire protocol, third-party clients, numpy), so that
they answer at once; and the defaults spelled out to that end are the tool's own."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("kio", "kafka", "confluent_kafka", "numpy", "pyarrow", "pyspark", "rackwise.protocol")
LIGHT_COMMANDS = (
    "topics", "configs", "placement", "log-dirs", "consumer-groups", "metadata-quorum",
    "get-offsets", "delete-records", "leader-election", "console-producer", "console-consumer",
    "dump-log", "producer-perf-test", "consumer-perf-test", "cluster", "metadata", "broker",
    "controller", "pipeline", "place",
)  # fmt: skip


def _loaded(arguments: list[str], heavy: tuple[str, ...] = HEAVY) -> list[str]:
    code = (
        "import sys, rackwise.cli.main as m\n"
        f"try:\n    m.main({arguments!r})\nexcept SystemExit:\n    pass\n"
        f"print(sorted({{n.split('.')[0] if not n.startswith('rackwise') else n for n in "
        f"sys.modules if n.startswith({heavy!r})}}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return [n for n in eval(done.stdout.splitlines()[-1])]


@pytest.mark.parametrize("command", LIGHT_COMMANDS)
def test_help_loads_no_heavy_module(command: str) -> None:
    assert _loaded([command, "--help"]) == []


def test_a_refusal_loads_no_heavy_module() -> None:
    with_asyncio = (*HEAVY, "asyncio")
    for refused in (
        ["get-offsets", "--bootstrap-server", "x:1", "--time", "soon"],
        ["delete-records", "--bootstrap-server", "x:1"],
        ["leader-election", "--bootstrap-server", "x:1", "--election-type", "preferred"],
        ["console-consumer", "--bootstrap-server", "x:1", "--offset", "3"],
    ):
        assert _loaded(refused, with_asyncio) == [], refused


def test_the_defaults_spelled_out_are_the_tools() -> None:
    from rackwise.cli import cluster as command
    from rackwise.cluster import local

    assert (command.DEFAULT_DIR, command.DEFAULT_START_TIMEOUT_S, command.DEFAULT_STOP_GRACE_S) == (
        local.DEFAULT_DIR, local.DEFAULT_START_TIMEOUT_S, local.DEFAULT_STOP_GRACE_S,
    )  # fmt: skip
