"""A command's start-up: ``--help`` and a refusal of a bad argument load none of the heavy
modules only running a command needs (the wire protocol, third-party clients, numpy), so that
they answer at once; and the defaults spelled out to that end are the tool's own."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rackwise.cli.main import SUBCOMMANDS

HEAVY = (
    "kio", "kafka", "confluent_kafka", "aiokafka", "numpy", "numba", "pandas", "pyarrow",
    "pyspark", "networkx", "cryptography", "prometheus_client", "asyncio", "rackwise.protocol",
)  # fmt: skip


def _loaded(*runs: list[str], heavy: tuple[str, ...] = HEAVY) -> list[str]:
    """The heavy modules loaded once ``rackwise`` has run with each argument list in turn."""
    code = (
        "import sys, rackwise.cli.main as m\n"
        + "".join(
            f"try:\n    m.main({arguments!r})\nexcept SystemExit:\n    pass\n" for arguments in runs
        )
        + (
            f"print(sorted({{n.split('.')[0] if not n.startswith('rackwise') else n for n in "
            f"sys.modules if n.startswith({heavy!r})}}))"
        )
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return [n for n in eval(done.stdout.splitlines()[-1])]


@pytest.mark.parametrize("command", sorted(SUBCOMMANDS))
def test_help_and_a_mistyped_flag_load_no_heavy_module(command: str) -> None:
    assert _loaded([command, "--help"], [command, "--no-such-flag"]) == []


def test_the_top_level_help_and_a_mistyped_command_load_no_heavy_module() -> None:
    assert _loaded(["--help"], ["topcis"], []) == []


def test_a_refusal_loads_no_heavy_module() -> None:
    for refused in (
        ["get-offsets", "--bootstrap-server", "x:1", "--time", "soon"],
        ["delete-records", "--bootstrap-server", "x:1"],
        ["leader-election", "--bootstrap-server", "x:1", "--election-type", "preferred"],
        ["console-consumer", "--bootstrap-server", "x:1", "--offset", "3"],
    ):
        assert _loaded(refused) == [], refused


def test_the_defaults_spelled_out_are_the_tools() -> None:
    from rackwise.cli import cluster as command
    from rackwise.cluster import local

    assert (command.DEFAULT_DIR, command.DEFAULT_START_TIMEOUT_S, command.DEFAULT_STOP_GRACE_S) == (
        local.DEFAULT_DIR, local.DEFAULT_START_TIMEOUT_S, local.DEFAULT_STOP_GRACE_S,
    )  # fmt: skip
