"""``rackwise producer-perf-test`` and ``consumer-perf-test`` as a person runs them: the
command line's refusals in one line each, and records produced and consumed back through a
real ``rackwise cluster up``."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from rackwise.cli.main import main
from rackwise.client.perf_output import CONSUMER_HEADER, DETAILED_CONSUMER_HEADER
from tests.command_line import rackwise, running_cluster

PRODUCER = ("producer-perf-test", "--topic", "t", "--num-records", "10", "--throughput", "-1")
CONSUMER = ("consumer-perf-test", "--topic", "t", "--messages", "10")


def _error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = main(list(argv))
    captured = capsys.readouterr()
    assert code == 1
    assert captured.out == ""
    assert captured.err.count("\n") == 1, captured.err
    return captured.err.removeprefix("error: ").rstrip("\n")


def _exit_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as exited:
        main(list(argv))
    assert exited.value.code == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


def test_both_commands_are_listed(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 1
    listed = capsys.readouterr().out
    assert "producer-perf-test" in listed and "consumer-perf-test" in listed


def test_producer_refusals_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    size = ("--record-size", "100")
    props = ("--producer-props", "bootstrap.servers=127.0.0.1:1")
    assert _error(capsys, *PRODUCER, *size) == (
        "Either --producer-props or --producer.config must be specified."
    )
    assert _error(capsys, *PRODUCER, *size, *props, "--transactional-id", "tx").startswith(
        "Transactions are not supported (--transactional-id tx): "
    )
    assert _error(capsys, *PRODUCER, *size, *props, "max.block.ms=10", "foo=1") == (
        "Unknown producer configurations max.block.ms, foo: not among the Java producer keys "
        "this tool maps to librdkafka"
    )
    assert _error(capsys, *PRODUCER, *size, *props, "acks") == "Invalid property: acks"
    assert "the following arguments are required: --topic" in _exit_error(
        capsys, "producer-perf-test", "--num-records", "1", "--throughput", "1", *size
    )
    assert "not allowed with argument --record-size" in _exit_error(
        capsys, *PRODUCER, *size, "--payload-monotonic", *props
    )


def test_a_producer_config_file_is_read_and_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "producer.properties"
    config.write_text("bootstrap.servers=127.0.0.1:1\nlinger.ms=5\nqueue.buffering.max.ms=5\n")
    message = _error(capsys, *PRODUCER, "--record-size", "1", "--producer.config", str(config))
    assert message.startswith("Unknown producer configuration queue.buffering.max.ms: ")
    missing = tmp_path / "missing.properties"
    message = _error(capsys, *PRODUCER, "--record-size", "1", "--producer.config", str(missing))
    assert message == f"No such file or directory: {missing}"


def test_consumer_refusals_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _error(capsys, *CONSUMER) == 'Missing required argument "[bootstrap-server]"'
    server = ("--bootstrap-server", "127.0.0.1:1")
    assert _error(capsys, *CONSUMER, *server, "--reporting-interval", "0") == (
        "Reporting interval must be greater than 0."
    )
    assert _error(capsys, *CONSUMER, *server, "--date-format", "yyyy bb") == (
        "Illegal pattern character 'b'"
    )
    config = tmp_path / "consumer.properties"
    config.write_text("linger.ms=5\n")
    assert _error(capsys, *CONSUMER, *server, "--consumer.config", str(config)).startswith(
        "Unknown consumer configuration linger.ms: "
    )


# ---- against a real cluster ----------------------------------------------------------------


@pytest.fixture(scope="module")
def bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_cluster(tmp_path_factory.mktemp("perf-cluster"), "--brokers", "2") as servers:
        yield servers


def _create_topic(bootstrap: str, topic: str) -> None:
    created = rackwise(
        "topics", "--bootstrap-server", bootstrap, "--create", "--topic", topic,
        "--partitions", "3", "--replication-factor", "2",
    )  # fmt: skip
    assert created.returncode == 0, created.stderr


def _produce(
    bootstrap: str, topic: str, records: int, *extra: str
) -> subprocess.CompletedProcess[str]:
    return rackwise(
        "producer-perf-test", "--topic", topic, "--num-records", str(records),
        "--record-size", "100", "--throughput", "-1",
        "--producer-props", f"bootstrap.servers={bootstrap}", "delivery.timeout.ms=10000",
        *extra,
    )  # fmt: skip


@pytest.mark.slow(reason="a cluster of three processes, then produces and consumes")
def test_records_produced_are_consumed_back(bootstrap: str) -> None:
    _create_topic(bootstrap, "perf-counts")
    produced = _produce(bootstrap, "perf-counts", 2000)
    assert produced.returncode == 0, produced.stderr
    total = produced.stdout.splitlines()[-1]
    assert re.fullmatch(
        r"2000 records sent, [\d.]+ records/sec \([\d.]+ MB/sec\), [\d.]+ ms avg latency, "
        r"[\d.]+ ms max latency, \d+ ms 50th, \d+ ms 95th, \d+ ms 99th, \d+ ms 99\.9th\.",
        total,
    ), total
    more = _produce(bootstrap, "perf-counts", 500, "--json")
    assert more.returncode == 0, more.stderr
    assert json.loads(more.stdout)["records_sent"] == 500

    consumed = rackwise(
        "consumer-perf-test", "--bootstrap-server", bootstrap, "--topic", "perf-counts",
        "--messages", "2500", "--timeout", "10000",
    )  # fmt: skip
    assert consumed.returncode == 0, consumed.stderr
    header, row = consumed.stdout.splitlines()
    assert header == CONSUMER_HEADER
    fields = row.split(", ")
    assert fields[4] == "2500"
    assert fields[2] == "0.2384"  # 2,500 records of 100 bytes, no keys
    again = rackwise(
        "consumer-perf-test", "--bootstrap-server", bootstrap, "--topic", "perf-counts",
        "--messages", "2500", "--timeout", "10000", "--json",
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    document = json.loads(again.stdout)
    assert document["data.consumed.in.nMsg"] == 2500
    assert document["data.consumed.in.bytes"] == 250_000
    assert document["timed.out"] is False


@pytest.mark.slow(reason="a throttled run of six seconds to see its periodic lines")
def test_a_long_run_shows_periodic_lines(bootstrap: str) -> None:
    _create_topic(bootstrap, "perf-progress")
    produced = rackwise(
        "producer-perf-test", "--topic", "perf-progress", "--num-records", "6000",
        "--record-size", "10", "--throughput", "1000",
        "--producer-props", f"bootstrap.servers={bootstrap}", "delivery.timeout.ms=10000",
    )  # fmt: skip
    assert produced.returncode == 0, produced.stderr
    lines = produced.stdout.splitlines()
    assert len(lines) >= 2
    assert re.fullmatch(
        r"\d+ records sent, [\d.]+ records/sec \([\d.]+ MB/sec\), [\d.]+ ms avg latency, "
        r"[\d.]+ ms max latency\.",
        lines[0],
    ), lines[0]
    assert lines[-1].startswith("6000 records sent, ")
    detailed = rackwise(
        "consumer-perf-test", "--bootstrap-server", bootstrap, "--topic", "perf-progress",
        "--messages", "6000", "--show-detailed-stats", "--reporting-interval", "1",
    )  # fmt: skip
    assert detailed.returncode == 0, detailed.stderr
    rows = detailed.stdout.splitlines()
    assert rows[0] == DETAILED_CONSUMER_HEADER
    assert len(rows) >= 2
    assert all(len(row.split(", ")) == 10 for row in rows[1:])
