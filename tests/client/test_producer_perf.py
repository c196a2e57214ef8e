"""``producer-perf-test``'s logic: Kafka's checks and messages, its Stats (windows, sampled
percentiles) and throttler, the payloads, and whole runs against an in-memory producer on a
fake clock (and once against librdkafka with no broker)."""

from __future__ import annotations

import io
import json
import random
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rackwise.client.perf_config import ArgumentParserException, ClientConfigException
from rackwise.client.perf_librdkafka import PerfTestError
from rackwise.client.producer_perf import (
    NS_PER_MS,
    QUEUE_FULL_WAIT_S,
    Payloads,
    ProducerPerfOptions,
    ProducerStats,
    ThroughputThrottler,
    check_options,
    read_payload_file,
    run_producer_perf,
)

START_MS = 1_714_557_600_000
OPTIONS = ProducerPerfOptions(
    topic="t",
    num_records=10,
    throughput=-1,
    record_size=100,
    producer_props=("bootstrap.servers=127.0.0.1:9092",),
)


class Clock:
    def __init__(self, ms: int = START_MS) -> None:
        self.ns = ms * NS_PER_MS

    def __call__(self) -> int:
        return self.ns

    def advance_ms(self, ms: float) -> None:
        self.ns += int(ms * NS_PER_MS)


class FakeError:
    def __init__(self, name: str, text: str, *, fatal: bool = False) -> None:
        self._name, self._text, self._fatal = name, text, fatal

    def name(self) -> str:
        return self._name

    def str(self) -> str:
        return self._text

    def fatal(self) -> bool:
        return self._fatal


class FakeMessage:
    def __init__(self, value: bytes, latency_ms: int) -> None:
        self._value = value
        self._latency_s = latency_ms / 1000.0

    def latency(self) -> float:
        return self._latency_s

    def __len__(self) -> int:
        return len(self._value)


class FakeProducer:
    """Records take ``send_ms`` of the clock to hand over; record i is acknowledged
    ``latencies[i]`` ms after its produce() and reported at the next poll or flush."""

    def __init__(
        self,
        config: dict[str, Any],
        clock: Clock,
        *,
        send_ms: float,
        latencies: list[int],
        failing: frozenset[int] = frozenset(),
        full_times: int = 0,
        fatal_at_poll: int | None = None,
    ) -> None:
        self.config = config
        self.clock = clock
        self.send_ms = send_ms
        self.latencies = latencies
        self.failing = failing
        self.full_times = full_times
        self.fatal_at_poll = fatal_at_poll
        self.pending: list[tuple[int, bytes, int]] = []  # (index, value, due ns)
        self.sent: list[bytes] = []
        self.polls: list[float] = []

    def produce(self, topic: str, value: bytes) -> None:
        assert topic == "t"
        if self.full_times:
            self.full_times -= 1
            raise BufferError("Local: Queue full")
        index = len(self.sent)
        self.sent.append(value)
        due = self.clock.ns + self.latencies[index % len(self.latencies)] * NS_PER_MS
        self.pending.append((index, value, due))
        self.clock.advance_ms(self.send_ms)

    def _deliver_due(self) -> None:
        due = [p for p in self.pending if p[2] <= self.clock.ns]
        self.pending = [p for p in self.pending if p[2] > self.clock.ns]
        for index, value, _ in due:
            latency = self.latencies[index % len(self.latencies)]
            if index in self.failing:
                error = FakeError("_MSG_TIMED_OUT", "Local: Message timed out")
                self.config["on_delivery"](error, None)
            else:
                self.config["on_delivery"](None, FakeMessage(value, latency))

    def poll(self, timeout: float) -> int:
        self.polls.append(timeout)
        if self.fatal_at_poll is not None and len(self.polls) == self.fatal_at_poll:
            self.config["error_cb"](FakeError("_FATAL", "Fatal error", fatal=True))
        self.clock.advance_ms(timeout * 1000)
        if timeout > 0 and "stats_cb" in self.config:
            self.config["stats_cb"](json.dumps({"client_id": "perf", "txmsgs": len(self.sent)}))
        self._deliver_due()
        return 0

    def flush(self, timeout: float) -> int:
        if self.pending:
            self.clock.ns = max(self.clock.ns, *(p[2] for p in self.pending))
        self._deliver_due()
        return len(self.pending)


def _run(
    options: ProducerPerfOptions, **fake: Any
) -> tuple[int | Exception, str, str, FakeProducer]:
    clock = Clock()
    made: list[FakeProducer] = []

    def create(config: dict[str, Any]) -> FakeProducer:
        made.append(FakeProducer(config, clock, **fake))
        return made[0]

    out, err = io.StringIO(), io.StringIO()
    try:
        result: int | Exception = run_producer_perf(
            options, out=out, err=err, now_ns=clock, create=create
        )
    except PerfTestError as e:
        result = e
    return result, out.getvalue(), err.getvalue(), made[0]


# ---- checks ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"num_records": 0}, "--num-records should be greater than zero"),
        ({"record_size": 0}, "--record-size should be greater than zero"),
        (
            {"producer_props": None},
            "Either --producer-props or --producer.config must be specified.",
        ),
        ({"transaction_duration_ms": 0}, "--transaction-duration-ms should be greater than zero"),
        ({"producer_props": ("acks",)}, "Invalid property: acks"),
    ],
)
def test_kafkas_checks_and_messages(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ArgumentParserException) as raised:
        check_options(replace(OPTIONS, **change))
    assert str(raised.value) == message


def test_transactions_and_a_zero_rate_are_refused() -> None:
    with pytest.raises(ArgumentParserException, match=r"^Transactions are not supported \("):
        check_options(replace(OPTIONS, transactional_id="tx"))
    with pytest.raises(ArgumentParserException, match=r"transaction-duration-ms 100"):
        check_options(replace(OPTIONS, transaction_duration_ms=100))
    with pytest.raises(ArgumentParserException, match=r"transactional.id tx"):
        props = ("bootstrap.servers=h:1", "transactional.id=tx")
        check_options(replace(OPTIONS, producer_props=props))
    with pytest.raises(ArgumentParserException, match=r"^--throughput 0 would never send"):
        check_options(replace(OPTIONS, throughput=0))


def test_props_win_over_the_config_file_and_unknown_keys_are_refused() -> None:
    java, config = check_options(
        replace(
            OPTIONS,
            producer_config={"bootstrap.servers": "file:1", "acks": "0"},
            producer_props=("bootstrap.servers=props:1",),
        )
    )
    assert java == {"bootstrap.servers": "props:1", "acks": "0"}
    assert config["bootstrap.servers"] == "props:1"
    with pytest.raises(ClientConfigException, match=r"max.block.ms"):
        check_options(replace(OPTIONS, producer_config={"max.block.ms": "1"}))


# ---- payloads ----------------------------------------------------------------------------------


def test_record_size_payloads_are_fresh_upper_case_letters_from_seed_zero() -> None:
    payloads = Payloads(50, [], random.Random(0))
    first, second = payloads.value(0), payloads.value(1)
    assert len(first) == len(second) == 50
    assert re.fullmatch(rb"[A-Z]{50}", first) and re.fullmatch(rb"[A-Z]{50}", second)
    assert first != second
    assert Payloads(50, [], random.Random(0)).value(0) == first


def test_monotonic_and_file_payloads() -> None:
    monotonic = Payloads(None, [], random.Random(0))
    assert [monotonic.value(i) for i in (0, 1, 12)] == [b"0", b"1", b"12"]
    from_file = Payloads(None, [b"a", b"b"], random.Random(0))
    assert {from_file.value(i) for i in range(50)} == {b"a", b"b"}


def test_the_payload_file_splits_as_java(tmp_path: Path) -> None:
    lines = tmp_path / "lines.txt"
    lines.write_text("one\ntwo\n\nthree\n\n\n", encoding="utf-8")
    assert read_payload_file(lines, "\\n") == [b"one", b"two", b"", b"three"]
    pipes = tmp_path / "pipes.txt"
    pipes.write_text("a|b||c|", encoding="utf-8")
    assert read_payload_file(pipes, r"\|") == [b"a", b"b", b"", b"c"]
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    for path in (empty, tmp_path / "missing.txt"):
        with pytest.raises(ArgumentParserException, match=r"^File does not exist or empty"):
            read_payload_file(path, "\\n")


# ---- Stats and the throttler ---------------------------------------------------------------


def test_stats_print_a_window_every_five_seconds() -> None:
    lines: list[str] = []
    stats = ProducerStats(100, START_MS, lines.append)
    for i in range(1, 6):
        stats.record(i, 100, START_MS + 1000 * i)
    assert lines == [
        "5 records sent, 1.0 records/sec (0.00 MB/sec), 3.0 ms avg latency, 5.0 ms max latency."
    ]
    stats.record(10, 100, START_MS + 6000)
    assert len(lines) == 1
    assert stats.window(START_MS + 6000).count == 1


def test_latencies_are_sampled_beyond_half_a_million_records() -> None:
    stats = ProducerStats(1_500_000, START_MS, lambda line: None)
    for latency in range(1, 11):  # samples every third record: latencies 1, 4, 7, 10
        stats.record(latency, 1, START_MS)
    assert stats.total(START_MS + 1).percentiles_ms == (7, 10, 10, 10)
    assert stats.total(START_MS + 1).max_latency_ms == 10


@given(st.lists(st.integers(0, 10_000), min_size=1, max_size=300))
def test_percentiles_are_sorted_samples_at_int_p_times_n(latencies: list[int]) -> None:
    stats = ProducerStats(len(latencies), START_MS, lambda line: None)
    for latency in latencies:
        stats.record(latency, 10, START_MS)
    ordered = sorted(latencies)
    expected = tuple(ordered[int(p * len(latencies))] for p in (0.5, 0.95, 0.99, 0.999))
    total = stats.total(START_MS + 10)
    assert total.percentiles_ms == expected
    assert (total.count, total.bytes, total.max_latency_ms) == (
        len(latencies),
        10 * len(latencies),
        max(latencies),
    )


def test_no_samples_give_zero_percentiles() -> None:
    assert ProducerStats(5, START_MS, lambda line: None).total(START_MS).percentiles_ms == (
        0,
        0,
        0,
        0,
    )


def test_the_throttler_sleeps_off_its_deficit_in_slices_of_at_least_2_ms() -> None:
    clock = Clock()
    waits: list[float] = []

    def wait(seconds: float) -> None:
        waits.append(seconds)
        clock.advance_ms(seconds * 1000)

    throttler = ThroughputThrottler(1000.0, START_MS, clock, wait)
    assert not throttler.should_throttle(5, START_MS)  # no time has passed yet
    assert throttler.should_throttle(5, START_MS + 4)  # 1250 records/s > 1000
    assert not throttler.should_throttle(3, START_MS + 4)
    throttler.throttle()
    assert waits == []  # 1 ms of deficit: not yet
    throttler.throttle()
    assert waits == [0.002]
    unlimited = ThroughputThrottler(-1.0, START_MS, clock, wait)
    assert not unlimited.should_throttle(10**9, START_MS + 1)


# ---- whole runs ----------------------------------------------------------------------------


def test_a_run_prints_kafkas_window_and_total_lines() -> None:
    options = replace(OPTIONS, num_records=10)
    result, out, err, producer = _run(options, send_ms=1000, latencies=list(range(1, 11)))
    assert result == 0
    assert out.splitlines() == [
        "5 records sent, 1.0 records/sec (0.00 MB/sec), 3.0 ms avg latency, 5.0 ms max latency.",
        "5 records sent, 1.0 records/sec (0.00 MB/sec), 8.0 ms avg latency, 10.0 ms max latency.",
        "10 records sent, 1.0 records/sec (0.00 MB/sec), 5.50 ms avg latency, 10.00 ms max "
        "latency, 6 ms 50th, 10 ms 95th, 10 ms 99th, 10 ms 99.9th.",
    ]
    assert err == ""
    assert len(producer.sent) == 10 and all(len(v) == 100 for v in producer.sent)
    assert producer.config["bootstrap.servers"] == "127.0.0.1:9092"
    assert producer.config["client.id"] == "perf-producer-client"


def test_json_prints_one_object_on_stdout_and_the_windows_on_stderr() -> None:
    result, out, err, _ = _run(
        replace(OPTIONS, json=True), send_ms=1000, latencies=list(range(1, 11))
    )
    assert result == 0
    document = json.loads(out)
    assert out.count("\n") == 1
    assert document["records_sent"] == 10
    assert document["latency_50th_ms"] == 6
    assert document["elapsed_ms"] == 10_000
    assert document["records_failed"] == 0
    assert err.count("records sent") == 2


def test_failed_deliveries_are_named_once_and_fail_the_run_after_the_total() -> None:
    result, out, err, _ = _run(OPTIONS, send_ms=1, latencies=[2], failing=frozenset({2, 5}))
    assert isinstance(result, PerfTestError)
    assert str(result) == "2 of 10 records were not delivered"
    assert out.startswith("8 records sent, ")
    assert err.splitlines() == ["delivery failed: _MSG_TIMED_OUT: Local: Message timed out"]


def test_a_full_queue_is_waited_out_by_serving_deliveries() -> None:
    result, out, _, producer = _run(OPTIONS, send_ms=1, latencies=[1], full_times=3)
    assert result == 0
    assert out.startswith("10 records sent, ")
    assert producer.polls[:3] == [QUEUE_FULL_WAIT_S] * 3


def test_a_fatal_client_error_ends_the_run() -> None:
    result, _, _, _ = _run(OPTIONS, send_ms=1, latencies=[1], fatal_at_poll=3)
    assert isinstance(result, PerfTestError)
    assert str(result) == "the producer failed: _FATAL: Fatal error"


def test_throughput_is_throttled_to_about_the_target() -> None:
    result, out, _, _ = _run(
        replace(OPTIONS, num_records=200, throughput=100.0, json=True), send_ms=0.1, latencies=[1]
    )
    assert result == 0
    elapsed_ms = json.loads(out)["elapsed_ms"]
    assert 1900 <= elapsed_ms <= 2100  # 200 records at 100 records/s


def test_print_metrics_prints_librdkafkas_statistics_after_the_total() -> None:
    result, out, _, producer = _run(replace(OPTIONS, print_metrics=True), send_ms=1, latencies=[1])
    assert result == 0
    assert producer.config["statistics.interval.ms"] == 500
    lines = out.splitlines()
    assert lines[0].startswith("10 records sent, ")
    name = "librdkafka:txmsgs:{client-id=perf}"
    assert lines[1:] == ["", f"{'Metric Name':<{len(name)}}   Value", f"{name} : 10"]


def test_payloads_from_a_file(tmp_path: Path) -> None:
    payloads = tmp_path / "payloads.txt"
    payloads.write_text("alpha\nbeta\ngamma\n", encoding="utf-8")
    options = replace(OPTIONS, record_size=None, payload_file=payloads)
    result, out, _, producer = _run(options, send_ms=1, latencies=[1])
    assert result == 0
    assert out.splitlines()[:2] == [
        f"Reading payloads from: {payloads.absolute()}",
        "Number of messages read: 3",
    ]
    assert set(producer.sent) <= {b"alpha", b"beta", b"gamma"}


def test_against_librdkafka_with_no_broker_every_record_fails_in_one_error_each() -> None:
    options = replace(
        OPTIONS,
        num_records=5,
        producer_props=("bootstrap.servers=127.0.0.1:1", "delivery.timeout.ms=300"),
    )
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(PerfTestError, match=r"^5 of 5 records were not delivered$"):
        run_producer_perf(options, out=out, err=err)
    assert out.getvalue().startswith("0 records sent, ")
    errors = err.getvalue().splitlines()
    assert errors.count("delivery failed: _MSG_TIMED_OUT: Local: Message timed out") == 1
    connection_lines = [line for line in errors if "Connection refused" in line]
    assert len(connection_lines) == 1  # librdkafka repeats it; it is printed once
