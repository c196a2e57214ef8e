"""``consumer-perf-test``'s logic: Kafka's checks and the properties it builds, and whole runs
against an in-memory consumer on a fake clock (and once against librdkafka with no broker):
the summary row, the detailed lines, the timeout warning, errors."""

from __future__ import annotations

import io
import json
import random
import re
from dataclasses import replace
from typing import Any

import pytest

from rackwise.client.consumer_perf import (
    ConsumerPerfOptions,
    check_options,
    run_consumer_perf,
)
from rackwise.client.perf_config import ArgumentParserException
from rackwise.client.perf_librdkafka import PerfTestError
from rackwise.client.perf_output import CONSUMER_HEADER, DETAILED_CONSUMER_HEADER
from rackwise.client.producer_perf import NS_PER_MS

START_MS = 1_714_557_600_000
DATE = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d:\d{3}"
OPTIONS = ConsumerPerfOptions(bootstrap_server="127.0.0.1:9092", topic="t", messages=30)


class Clock:
    def __init__(self) -> None:
        self.ns = START_MS * NS_PER_MS

    def __call__(self) -> int:
        return self.ns

    def advance_ms(self, ms: float) -> None:
        self.ns += int(ms * NS_PER_MS)


class FakeError:
    def __init__(self, code: int, name: str, *, fatal: bool = False) -> None:
        self._code, self._name, self._fatal = code, name, fatal

    def code(self) -> int:
        return self._code

    def name(self) -> str:
        return self._name

    def str(self) -> str:
        return f"{self._name} happened"

    def fatal(self) -> bool:
        return self._fatal


class FakeMessage:
    def __init__(self, value: bytes = b"", key: bytes | None = None, error: Any = None) -> None:
        self._value, self._key, self._error = value, key, error

    def error(self) -> Any:
        return self._error

    def key(self) -> bytes | None:
        return self._key

    def __len__(self) -> int:
        return len(self._value)


def records(count: int, size: int = 100, key: bytes | None = b"k" * 10) -> list[FakeMessage]:
    return [FakeMessage(b"v" * size, key) for _ in range(count)]


class FakeConsumer:
    """The topic is unknown for ``unknown_for`` lookups (each takes ``lookup_ms``); each
    consume() returns the next batch after ``consume_ms`` (then nothing, after its wait)."""

    def __init__(
        self,
        config: dict[str, Any],
        clock: Clock,
        *,
        batches: list[list[FakeMessage]],
        unknown_for: int = 0,
        lookup_ms: int = 50,
        consume_ms: int = 100,
        fatal_after: int | None = None,
    ) -> None:
        self.config = config
        self.clock = clock
        self.batches = list(batches)
        self.unknown_for = unknown_for
        self.lookup_ms = lookup_ms
        self.consume_ms = consume_ms
        self.fatal_after = fatal_after
        self.assigned: tuple[str, list[int], bool] | None = None
        self.consumes = 0
        self.closed = False

    def partitions(self, topic: str, timeout_s: float) -> list[int]:
        self.clock.advance_ms(self.lookup_ms)
        if self.unknown_for:
            self.unknown_for -= 1
            return []
        return [0, 1, 2]

    def assign(self, topic: str, partitions: list[int], *, from_latest: bool) -> None:
        self.assigned = (topic, list(partitions), from_latest)

    def consume(self, num_messages: int, timeout_s: float) -> list[FakeMessage]:
        assert num_messages == 500 and timeout_s == 0.1
        self.consumes += 1
        if self.fatal_after is not None and self.consumes > self.fatal_after:
            self.config["error_cb"](FakeError(-150, "_FATAL", fatal=True))
        if self.batches:
            self.clock.advance_ms(self.consume_ms)
            return self.batches.pop(0)
        self.clock.advance_ms(timeout_s * 1000)
        return []

    def serve(self, timeout_s: float) -> None:
        self.clock.advance_ms(timeout_s * 1000)
        if "stats_cb" in self.config:
            self.config["stats_cb"](json.dumps({"client_id": "c", "rxmsgs": 30}))

    def close(self) -> None:
        self.closed = True


def _run(
    options: ConsumerPerfOptions, **fake: Any
) -> tuple[int | Exception, str, str, FakeConsumer]:
    clock = Clock()
    made: list[FakeConsumer] = []

    def create(config: dict[str, Any]) -> FakeConsumer:
        made.append(FakeConsumer(config, clock, **fake))
        return made[0]

    out, err = io.StringIO(), io.StringIO()
    try:
        result: int | Exception = run_consumer_perf(
            options, out=out, err=err, now_ns=clock, create=create
        )
    except PerfTestError as e:
        result = e
    assert made[0].closed
    return result, out.getvalue(), err.getvalue(), made[0]


# ---- checks ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"topic": None}, 'Missing required argument "[topic]"'),
        ({"messages": None}, 'Missing required argument "[messages]"'),
        ({"bootstrap_server": None}, 'Missing required argument "[bootstrap-server]"'),
        ({"reporting_interval": "-5"}, "Cannot parse argument '-5' of option reporting-interval"),
        ({"reporting_interval": "1s"}, "Cannot parse argument '1s' of option reporting-interval"),
        ({"reporting_interval": "0"}, "Reporting interval must be greater than 0."),
    ],
)
def test_kafkas_checks_and_messages(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ArgumentParserException) as raised:
        check_options(replace(OPTIONS, **change))
    assert str(raised.value) == message


def test_the_tools_settings_win_over_the_config_file() -> None:
    checked = check_options(
        replace(
            OPTIONS,
            consumer_config={
                "bootstrap.servers": "file:1",
                "client.id": "from-file",
                "auto.offset.reset": "none",
                "fetch.min.bytes": "1024",
            },
            from_latest=True,
            fetch_size=4096,
        ),
        random.Random(7),
    )
    assert checked.java == {
        "bootstrap.servers": "127.0.0.1:9092",
        "client.id": "from-file",
        "auto.offset.reset": "latest",
        "fetch.min.bytes": "1024",
        "group.id": f"perf-consumer-{random.Random(7).randrange(100_000)}",
        "receive.buffer.bytes": "2097152",
        "max.partition.fetch.bytes": "4096",
        "check.crcs": "false",
    }
    assert checked.librdkafka["socket.receive.buffer.bytes"] == "2097152"
    assert checked.librdkafka["enable.auto.commit"] == "false"
    assert (checked.topic, checked.messages, checked.batch) == ("t", 30, 500)
    default = check_options(replace(OPTIONS, group="g"))
    assert default.java["client.id"] == "perf-consumer-client"
    assert default.java["group.id"] == "g"
    assert default.java["auto.offset.reset"] == "earliest"


# ---- whole runs ----------------------------------------------------------------------------


def test_a_run_assigns_every_partition_and_prints_the_header_and_row() -> None:
    result, out, err, consumer = _run(OPTIONS, batches=[records(10), records(10), records(10)])
    assert result == 0
    assert consumer.assigned == ("t", [0, 1, 2], False)
    header, row = out.splitlines()
    assert header == CONSUMER_HEADER
    fields = row.split(", ")
    assert re.fullmatch(DATE, fields[0]) and re.fullmatch(DATE, fields[1])
    # 30 records of 110 bytes in 350 ms, 50 of them getting the partitions
    assert fields[2:] == ["0.0031", "0.0090", "30", "85.7143", "50", "300", "0.0105", "100.0000"]
    assert err == ""


def test_from_latest_assigns_from_the_end() -> None:
    _, _, _, consumer = _run(replace(OPTIONS, from_latest=True), batches=[records(30)])
    assert consumer.assigned == ("t", [0, 1, 2], True)


def test_the_run_stops_after_the_timeout_with_kafkas_warning() -> None:
    options = replace(OPTIONS, timeout_ms=1000)
    result, out, _, consumer = _run(options, batches=[records(5)])
    assert result == 0
    lines = out.splitlines()
    assert lines[1] == (
        "WARNING: Exiting before consuming the expected number of messages: timeout "
        "(1000 ms) exceeded. You can use the --timeout option to increase the timeout."
    )
    assert lines[2].split(", ")[4] == "5"
    assert 10 <= consumer.consumes <= 12  # 100 ms each until 1,000 ms pass without a record


def test_a_topic_that_appears_late_counts_as_rebalance_time() -> None:
    result, out, _, consumer = _run(OPTIONS, batches=[records(30)], unknown_for=3)
    assert result == 0
    fields = out.splitlines()[1].split(", ")
    # three lookups of 50 ms, each followed by a 100 ms wait, then the one that finds it
    assert fields[6] == "500"
    assert consumer.assigned is not None


def test_a_topic_that_never_appears_reads_as_nothing() -> None:
    result, out, _, consumer = _run(replace(OPTIONS, timeout_ms=500), batches=[], unknown_for=1000)
    assert result == 0
    assert out.splitlines()[1].startswith("WARNING: Exiting before consuming")
    assert out.splitlines()[2].split(", ")[4:7] == ["0", "0.0000", "0"]
    assert consumer.assigned is None


def test_detailed_stats_print_a_line_per_interval_and_no_summary() -> None:
    options = replace(OPTIONS, show_detailed_stats=True, reporting_interval="200")
    batches = [records(5, key=None) for _ in range(6)]
    result, out, _, _ = _run(options, batches=batches)
    assert result == 0
    lines = out.splitlines()
    assert lines[0] == DETAILED_CONSUMER_HEADER
    fields = [line.split(", ") for line in lines[1:]]
    # a line at the first record of a batch that came 200 ms after the last line (at T+250,
    # T+450 and T+650: 50 ms to get partitions, then a batch of 5 every 100 ms)
    assert [f[4] for f in fields] == ["6", "16", "26"]
    # the first interval holds the 50 ms of getting partitions; later ones do not
    assert [f[6] for f in fields] == ["50", "0", "0"]
    assert fields[1][1:] == [
        "0",
        "0.0015",
        "0.0048",
        "16",
        "50.0000",
        "0",
        "200",
        "0.0048",
        "50.0000",
    ]


def test_json_is_one_object_and_the_rest_goes_to_stderr() -> None:
    options = replace(OPTIONS, json=True, timeout_ms=300)
    result, out, err, _ = _run(options, batches=[records(10)])
    assert result == 0
    document = json.loads(out)
    assert out.count("\n") == 1
    assert document["data.consumed.in.nMsg"] == 10
    assert document["data.consumed.in.bytes"] == 1100
    assert document["timed.out"] is True
    assert err.startswith("WARNING: Exiting before consuming")
    assert CONSUMER_HEADER not in out + err


def test_hide_header() -> None:
    _, out, _, _ = _run(replace(OPTIONS, hide_header=True), batches=[records(30)])
    assert len(out.splitlines()) == 1 and not out.startswith("start.time")


def test_errors_end_the_run_or_are_printed_once() -> None:
    transient = FakeMessage(error=FakeError(-195, "_TRANSPORT"))
    eof = FakeMessage(error=FakeError(-191, "_PARTITION_EOF"))
    batches = [[transient, eof, *records(10)], [transient, *records(20)]]
    result, out, err, _ = _run(OPTIONS, batches=batches)
    assert result == 0
    assert out.splitlines()[1].split(", ")[4] == "30"
    assert err.splitlines() == ["consumer error: _TRANSPORT: _TRANSPORT happened"]
    unknown = FakeMessage(error=FakeError(3, "UNKNOWN_TOPIC_OR_PART"))
    stopped, _, _, _ = _run(OPTIONS, batches=[records(5), [unknown]])
    assert isinstance(stopped, PerfTestError)
    assert str(stopped) == (
        "the consumer failed: UNKNOWN_TOPIC_OR_PART: UNKNOWN_TOPIC_OR_PART happened"
    )


def test_a_fatal_client_error_ends_the_run() -> None:
    result, _, _, _ = _run(OPTIONS, batches=[records(5)] * 6, fatal_after=2)
    assert isinstance(result, PerfTestError)
    assert str(result) == "the consumer failed: _FATAL: _FATAL happened"


def test_print_metrics() -> None:
    result, out, _, consumer = _run(replace(OPTIONS, print_metrics=True), batches=[records(30)])
    assert result == 0
    assert consumer.config["statistics.interval.ms"] == 500
    assert out.splitlines()[2:] == [
        "",
        f"{'Metric Name':<31}   Value",
        "librdkafka:rxmsgs:{client-id=c} : 30",
    ]


def test_against_librdkafka_with_no_broker_it_times_out_with_nothing_read() -> None:
    options = replace(OPTIONS, bootstrap_server="127.0.0.1:1", timeout_ms=300, group="g")
    out, err = io.StringIO(), io.StringIO()
    assert run_consumer_perf(options, out=out, err=err) == 0
    lines = out.getvalue().splitlines()
    assert lines[0] == CONSUMER_HEADER
    assert lines[1].startswith("WARNING: Exiting before consuming")
    assert lines[2].split(", ")[4] == "0"
