"""``rackwise log-dirs``: its arguments, and its output line by line as ``kafka-log-dirs.sh``
prints it."""

from __future__ import annotations

import argparse
import io
import json
from typing import Any

import pytest

from rackwise.cli import log_dirs
from rackwise.cli.errors import CommandError
from rackwise.client import log_dirs as log_dirs_calls
from tests.client.test_log_dirs import answer


def parse(*args: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    log_dirs.configure(parser)
    return parser.parse_args(list(args))


def run(monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[int, str, str]:
    """The command against a cluster of brokers 1-3 whose brokers all answer ``answer``."""

    async def live_brokers(_addresses: Any) -> dict[int, tuple[str, int]]:
        return {1: ("h", 1), 2: ("h", 2), 3: ("h", 3)}

    async def describe_broker(address: tuple[str, int], broker_id: int | None = None) -> Any:
        given = answer((f"/data/{address[1]}", 0, [("t", 0, address[1], 0, False)]))
        return given if broker_id is None else (given, None)  # no cordoned.log.dirs to tell

    monkeypatch.setattr(log_dirs_calls, "live_brokers", live_brokers)
    monkeypatch.setattr(log_dirs_calls, "describe_broker", describe_broker)
    out, err = io.StringIO(), io.StringIO()
    parsed = parse("--describe", "--bootstrap-server", "h:1", *args)
    monkeypatch.setattr("sys.stdout", out)
    monkeypatch.setattr("sys.stderr", err)
    code = parsed.run(parsed)
    return code, out.getvalue(), err.getvalue()


def test_the_tools_output_line_by_line(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = run(monkeypatch, "--broker-list", "3,1")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[:2] == [
        "Querying brokers for log directories information",
        "Received log directory information from brokers 1,3",
    ]
    assert lines[2] == (
        '{"brokers":[{"broker":1,"logDirs":[{"partitions":[{"partition":"t-0","size":1,'
        '"offsetLag":0,"isFuture":false}],"error":null,"logDir":"/data/1"}]},'
        '{"broker":3,"logDirs":[{"partitions":[{"partition":"t-0","size":3,"offsetLag":0,'
        '"isFuture":false}],"error":null,"logDir":"/data/3"}]}],"version":1}'
    )
    assert len(lines) == 3


def test_an_unknown_broker_is_kafkas_error(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = run(monkeypatch, "--broker-list", "1,4,5")
    assert (code, out) == (1, "")
    assert err == (
        "ERROR: The given brokers do not exist from --broker-list: 4,5. "
        "Current existent brokers: 1,2,3\n"
    )


def test_kip113_prints_one_document_per_broker(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, _ = run(monkeypatch, "--format", "kip113")
    lines = out.splitlines()
    assert code == 0 and lines[1] == "Received log directory information from brokers 1,2,3"
    documents = [json.loads(line) for line in lines[2:]]
    assert [d["log_dirs"][0]["path"] for d in documents] == ["/data/1", "/data/2", "/data/3"]


def test_bad_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(CommandError, match="--broker-list takes broker ids: 1,x"):
        run(monkeypatch, "--broker-list", "1,x")
    parsed = parse("--bootstrap-server", "h:1")
    with pytest.raises(CommandError, match=r'Missing required argument "\[describe\]"'):
        parsed.run(parsed)
