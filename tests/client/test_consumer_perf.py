"""``consumer-perf-test``'s logic: Kafka's checks and the properties it builds, and whole runs
against an in-memory consumer group on a fake clock (and once against librdkafka with no
broker): the rebalance time the assign and revoke callbacks measure, the summary row, the
detailed lines, the timeout warning, errors."""

from __future__ import annotations

import io
import json
import random
import re
from dataclasses import dataclass, replace
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


@dataclass(frozen=True)
class Assign:
    """The group assigns ``partitions`` of the topic ``after_ms`` into a consume() call."""

    partitions: tuple[int, ...] = (0, 1, 2)
    after_ms: int = 50


@dataclass(frozen=True)
class Revoke:
    """The group takes every partition back ``after_ms`` into a consume() call."""

    after_ms: int = 0


Step = Assign | Revoke | list[FakeMessage]


def joined(*batches: list[FakeMessage], join_ms: int = 50) -> list[Step]:
    """A first rebalance of ``join_ms`` giving partitions 0-2, then ``batches``."""
    return [Assign(after_ms=join_ms), *batches]


class FakeConsumer:
    """A group member: each consume() takes the next step: a rebalance (its callback called
    ``after_ms`` in, nothing returned) or a batch, returned after ``consume_ms``; after the
    last step, nothing after the call's wait. Records and rebalances come only once
    subscribed, and a revocation hands back what was assigned, as librdkafka does."""

    def __init__(
        self,
        config: dict[str, Any],
        clock: Clock,
        *,
        steps: list[Step],
        consume_ms: int = 100,
        fatal_after: int | None = None,
    ) -> None:
        self.config = config
        self.clock = clock
        self.steps = list(steps)
        self.consume_ms = consume_ms
        self.fatal_after = fatal_after
        self.subscribed_at_ms: int | None = None
        self.topic: str | None = None
        self.callbacks: tuple[Any, Any] | None = None
        self.assignment: list[tuple[str, int]] = []
        self.assigned_at_ms: list[int] = []
        self.consumes = 0
        self.closed = False

    def subscribe(self, topic: str, on_assign: Any, on_revoke: Any) -> None:
        assert self.callbacks is None
        self.subscribed_at_ms = self.clock() // NS_PER_MS
        self.topic, self.callbacks = topic, (on_assign, on_revoke)

    def consume(self, num_messages: int, timeout_s: float) -> list[FakeMessage]:
        assert num_messages == 500 and timeout_s == 0.1
        assert self.callbacks is not None and self.topic is not None
        self.consumes += 1
        if self.fatal_after is not None and self.consumes > self.fatal_after:
            self.config["error_cb"](FakeError(-150, "_FATAL", fatal=True))
        if not self.steps:
            self.clock.advance_ms(timeout_s * 1000)
            return []
        step = self.steps.pop(0)
        on_assign, on_revoke = self.callbacks
        if isinstance(step, Assign):
            self.clock.advance_ms(step.after_ms)
            self.assignment = [(self.topic, p) for p in step.partitions]
            self.assigned_at_ms.append(self.clock() // NS_PER_MS)
            on_assign(list(self.assignment))
            return []
        if isinstance(step, Revoke):
            self.clock.advance_ms(step.after_ms)
            revoked, self.assignment = self.assignment, []
            on_revoke(revoked)
            return []
        self.clock.advance_ms(self.consume_ms)
        return step

    def serve(self, timeout_s: float) -> None:
        self.clock.advance_ms(timeout_s * 1000)
        if "stats_cb" in self.config:
            self.config["stats_cb"](json.dumps({"client_id": "c", "rxmsgs": 30}))

    def close(self) -> None:
        self.closed = True


def _run(
    options: ConsumerPerfOptions, **fake: Any
) -> tuple[int | Exception, str, str, FakeConsumer | None]:
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
    assert all(consumer.closed for consumer in made)
    return result, out.getvalue(), err.getvalue(), made[0] if made else None


def _fields(out: str, line: int = 1) -> list[str]:
    return out.splitlines()[line].split(", ")


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
    assert "enable.auto.commit" not in checked.librdkafka  # librdkafka's true, as Java's
    assert (checked.topic, checked.messages, checked.batch) == ("t", 30, 500)
    default = check_options(replace(OPTIONS, group="g"))
    assert default.java["client.id"] == "perf-consumer-client"
    assert default.java["group.id"] == "g"
    assert default.java["auto.offset.reset"] == "earliest"


# ---- whole runs ----------------------------------------------------------------------------


def test_a_run_subscribes_and_counts_the_join_as_rebalance_time() -> None:
    result, out, err, consumer = _run(
        OPTIONS, steps=joined(records(10), records(10), records(10), join_ms=250)
    )
    assert result == 0
    assert consumer is not None
    assert consumer.topic == "t"
    assert consumer.subscribed_at_ms == START_MS
    assert consumer.assigned_at_ms == [START_MS + 250]
    assert consumer.config["group.id"].startswith("perf-consumer-")
    assert consumer.config["auto.offset.reset"] == "earliest"
    header, row = out.splitlines()
    assert header == CONSUMER_HEADER
    fields = row.split(", ")
    assert re.fullmatch(DATE, fields[0]) and re.fullmatch(DATE, fields[1])
    # 30 records of 110 bytes in 550 ms: the first 250 until the group assigned partitions
    assert fields[2:] == ["0.0031", "0.0057", "30", "54.5455", "250", "300", "0.0105", "100.0000"]
    assert err == ""


def test_group_and_from_latest_reach_the_consumer() -> None:
    options = replace(OPTIONS, group="g", from_latest=True)
    _, _, _, consumer = _run(options, steps=joined(records(30)))
    assert consumer is not None
    assert (consumer.config["group.id"], consumer.config["auto.offset.reset"]) == ("g", "latest")


def test_a_revocation_then_an_assignment_adds_a_second_round() -> None:
    steps: list[Step] = [
        Assign(after_ms=50),  # T+50: the first round, 50 ms from the start
        records(10),  # T+150
        Revoke(after_ms=100),  # T+250: a new member joins; the join starts again
        Assign((0, 1), after_ms=200),  # T+450: the second round, 200 ms
        records(20),  # T+550
    ]
    result, out, _, consumer = _run(OPTIONS, steps=steps)
    assert result == 0
    assert consumer is not None and consumer.assignment == [("t", 0), ("t", 1)]
    # 250 ms of rebalances (not 50 + 450: the second counts from the revocation), 300 fetching
    assert _fields(out)[4:8] == ["30", "54.5455", "250", "300"]


def test_no_assignment_means_no_rebalance_time_counted() -> None:
    # a consumer that never got partitions has no join time (Kafka's listener adds only on
    # an assignment), so the whole run is fetch time
    result, out, _, _ = _run(replace(OPTIONS, timeout_ms=500), steps=[])
    assert result == 0
    assert out.splitlines()[1].startswith("WARNING: Exiting before consuming")
    assert _fields(out, 2)[4:8] == ["0", "0.0000", "0", "600"]


def test_the_run_stops_after_the_timeout_with_kafkas_warning() -> None:
    options = replace(OPTIONS, timeout_ms=1000)
    result, out, _, consumer = _run(options, steps=joined(records(5)))
    assert result == 0
    lines = out.splitlines()
    assert lines[1] == (
        "WARNING: Exiting before consuming the expected number of messages: timeout "
        "(1000 ms) exceeded. You can use the --timeout option to increase the timeout."
    )
    assert lines[2].split(", ")[4] == "5"
    assert consumer is not None
    assert 11 <= consumer.consumes <= 13  # 100 ms each until 1,000 ms pass without a record


def test_a_topic_that_appears_late_counts_as_rebalance_time() -> None:
    unknown = FakeMessage(error=FakeError(3, "UNKNOWN_TOPIC_OR_PART"))
    steps: list[Step] = [[unknown], [], [], Assign(after_ms=50), records(30)]
    result, out, err, _ = _run(OPTIONS, steps=steps)
    assert result == 0
    # three empty polls of 100 ms, then the assignment 50 ms into the fourth
    assert _fields(out)[4:7] == ["30", "66.6667", "350"]
    assert err.splitlines() == [
        "consumer error: UNKNOWN_TOPIC_OR_PART: UNKNOWN_TOPIC_OR_PART happened"
    ]


def test_a_topic_that_never_appears_reads_as_nothing() -> None:
    unknown = FakeMessage(error=FakeError(3, "UNKNOWN_TOPIC_OR_PART"))
    options = replace(OPTIONS, timeout_ms=500)
    result, out, err, _ = _run(options, steps=[[unknown], [unknown]])
    assert result == 0
    assert out.splitlines()[1].startswith("WARNING: Exiting before consuming")
    assert _fields(out, 2)[4:7] == ["0", "0.0000", "0"]
    assert err.count("UNKNOWN_TOPIC_OR_PART") == 2  # one line, printed once


@pytest.mark.parametrize(
    ("topic", "message"),
    [
        ("^t.*", "Invalid topics: [^t.*]"),
        ("a b", "Invalid topics: [a b]"),
        ("..", "Invalid topics: [..]"),
        (" ", "Topic collection to subscribe to cannot contain null or empty topic"),
    ],
)
def test_a_topic_name_kafka_refuses_ends_the_run_unsubscribed(topic: str, message: str) -> None:
    result, out, _, consumer = _run(replace(OPTIONS, topic=topic), steps=joined(records(30)))
    assert isinstance(result, PerfTestError)
    assert str(result) == message
    assert out == CONSUMER_HEADER + "\n"
    assert consumer is None


def test_detailed_stats_print_a_line_per_interval_and_no_summary() -> None:
    options = replace(OPTIONS, show_detailed_stats=True, reporting_interval="200")
    batches = [records(5, key=None) for _ in range(6)]
    result, out, _, _ = _run(options, steps=joined(*batches))
    assert result == 0
    lines = out.splitlines()
    assert lines[0] == DETAILED_CONSUMER_HEADER
    fields = [line.split(", ") for line in lines[1:]]
    # a line at the first record of a batch that came 200 ms after the last line (at T+250,
    # T+450 and T+650: 50 ms to get partitions, then a batch of 5 every 100 ms)
    assert [f[4] for f in fields] == ["6", "16", "26"]
    # the first interval holds the 50 ms of the group's first rebalance; later ones do not
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


def test_a_detailed_line_shows_its_own_intervals_rebalance() -> None:
    options = replace(OPTIONS, show_detailed_stats=True, reporting_interval="200", messages=40)
    steps: list[Step] = [
        Assign(after_ms=50),
        *[records(5, key=None) for _ in range(3)],  # T+150, T+250 (a line), T+350
        Revoke(after_ms=20),  # T+370
        Assign(after_ms=60),  # T+430: a 60 ms rebalance
        *[records(5, key=None) for _ in range(5)],  # T+530 .. T+930: lines at 530, 730, 930
    ]
    result, out, _, _ = _run(options, steps=steps)
    assert result == 0
    fields = [line.split(", ") for line in out.splitlines()[1:]]
    assert [f[4] for f in fields] == ["6", "16", "26", "36"]
    # (rebalance.time.ms, fetch.time.ms): the first round in the first interval, the second
    # in the second (Kafka 4's Java tool would print 0 there), none in the later ones
    rounds = [(f[6], f[7]) for f in fields]
    assert rounds == [("50", "200"), ("60", "220"), ("0", "200"), ("0", "200")]


def test_json_is_one_object_and_the_rest_goes_to_stderr() -> None:
    options = replace(OPTIONS, json=True, timeout_ms=300)
    result, out, err, _ = _run(options, steps=joined(records(10)))
    assert result == 0
    document = json.loads(out)
    assert out.count("\n") == 1
    assert document["data.consumed.in.nMsg"] == 10
    assert document["data.consumed.in.bytes"] == 1100
    assert document["rebalance.time.ms"] == 50
    assert document["fetch.time.ms"] == document["end.time.ms"] - document["start.time.ms"] - 50
    assert document["timed.out"] is True
    assert err.startswith("WARNING: Exiting before consuming")
    assert CONSUMER_HEADER not in out + err


def test_hide_header() -> None:
    _, out, _, _ = _run(replace(OPTIONS, hide_header=True), steps=joined(records(30)))
    assert len(out.splitlines()) == 1 and not out.startswith("start.time")


def test_errors_end_the_run_or_are_printed_once() -> None:
    transient = FakeMessage(error=FakeError(-195, "_TRANSPORT"))
    eof = FakeMessage(error=FakeError(-191, "_PARTITION_EOF"))
    unknown = FakeMessage(error=FakeError(3, "UNKNOWN_TOPIC_OR_PART"))
    batches = [[transient, eof, unknown, *records(10)], [transient, *records(20)]]
    result, out, err, _ = _run(OPTIONS, steps=joined(*batches))
    assert result == 0
    assert _fields(out)[4] == "30"
    assert err.splitlines() == [
        "consumer error: _TRANSPORT: _TRANSPORT happened",
        "consumer error: UNKNOWN_TOPIC_OR_PART: UNKNOWN_TOPIC_OR_PART happened",
    ]
    for code, name in [
        (17, "TOPIC_EXCEPTION"),
        (29, "TOPIC_AUTHORIZATION_FAILED"),
        (30, "GROUP_AUTHORIZATION_FAILED"),
    ]:
        refused = FakeMessage(error=FakeError(code, name))
        stopped, _, _, _ = _run(OPTIONS, steps=joined(records(5), [refused]))
        assert isinstance(stopped, PerfTestError)
        assert str(stopped) == f"the consumer failed: {name}: {name} happened"


def test_a_fatal_client_error_ends_the_run() -> None:
    result, _, _, _ = _run(OPTIONS, steps=joined(*[records(5)] * 6), fatal_after=2)
    assert isinstance(result, PerfTestError)
    assert str(result) == "the consumer failed: _FATAL: _FATAL happened"


def test_print_metrics() -> None:
    result, out, _, consumer = _run(replace(OPTIONS, print_metrics=True), steps=joined(records(30)))
    assert result == 0
    assert consumer is not None
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
    fields = lines[2].split(", ")
    assert fields[4] == "0"
    assert fields[6] == "0"  # never assigned partitions
