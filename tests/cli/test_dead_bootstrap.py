"""Every command that takes a bootstrap server refuses at once, in one line naming the address,
when that address refuses connections (a port bound but not listening, on 127.0.0.1), instead of
waiting out its request timeout."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from rackwise.cli.main import main

WELL_WITHIN_S = 4.0
"""Far less than any of the commands' timeouts (5 s for consumer-groups, 30 s for topics)."""


@pytest.fixture(scope="module")
def refused() -> Iterator[str]:
    """``127.0.0.1:port`` of a bound socket that never listens: a connection is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"127.0.0.1:{sock.getsockname()[1]}"


COMMANDS = {
    "topics": "topics --list --bootstrap-server {}",
    "placement": "placement --partitions 1 --replication-factor 1 --bootstrap-server {}",
    "consumer-groups": "consumer-groups --list --bootstrap-server {}",
    "log-dirs": "log-dirs --describe --bootstrap-server {}",
    "metadata-quorum": "metadata-quorum --bootstrap-server {} describe --status",
    "consumer-perf-test": "consumer-perf-test --topic t --messages 1 --bootstrap-server {}",
    "producer-perf-test": "producer-perf-test --topic t --num-records 1 --record-size 1 "
    "--throughput -1 --producer-props bootstrap.servers={}",
}


@pytest.mark.parametrize("command", COMMANDS)
def test_a_refused_bootstrap_server_fails_at_once_naming_it(
    command: str, refused: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = COMMANDS[command].format(refused).split()
    started = time.monotonic()
    code = main(argv)
    elapsed = time.monotonic() - started
    err = capsys.readouterr().err
    assert code != 0
    assert elapsed < WELL_WITHIN_S, f"{command} took {elapsed:.1f} s: {err}"
    lines = err.strip().splitlines()
    assert lines[-1].startswith("error: "), err
    assert f"Connection to {refused} refused" in lines[-1], err
    assert "Traceback" not in err


def test_a_refused_address_before_a_live_one_passes_the_check(refused: str) -> None:
    from rackwise.client.bootstrap import bootstrap_addresses_of, check_bootstrap_reachable

    with socket.socket() as live:
        live.bind(("127.0.0.1", 0))
        live.listen()
        check_bootstrap_reachable(
            bootstrap_addresses_of(f"{refused},127.0.0.1:{live.getsockname()[1]}")
        )
