"""``rackwise consumer-perf-test``: Kafka's ``kafka-consumer-perf-test.sh``
(``org.apache.kafka.tools.ConsumerPerformance``) on confluent-kafka (librdkafka).

Goals
    The same flags and output as Kafka's tool: a header, then one summary row (start and end
    time, MB and records consumed and their rates, the time spent getting partitions and the
    time spent fetching), or with ``--show-detailed-stats`` one row per reporting interval;
    ``--json`` prints the summary as one JSON object instead (other lines go to stderr).

Constraints
    * rackwise brokers do not serve group membership (JoinGroup), so the consumer joins no
      group: it looks the topic up, ``assign``s all its partitions (those it has when it
      starts) and reads each from the beginning (``--from-latest``: from its end), as a new
      group with ``auto.offset.reset=earliest`` would. No offsets are committed unless the
      consumer config sets ``enable.auto.commit`` (then they go to ``--group``'s coordinator,
      as a simple group's). ``rebalance.time.ms`` is the time from the start until the partitions
      were assigned (Kafka counts the time until the group assigned them).
    * As Kafka's tool: it stops once it has read ``--messages`` records (counting whole
      batches, so possibly a few more) or when no record came for ``--timeout`` ms, then prints
      Kafka's warning; a topic that does not appear within ``--timeout`` reads as no records.
      A record's size is its key's and value's bytes.
    * A fatal client error, or a topic or partition the cluster does not know or refuses, ends
      the run with one error line; other consumer errors (librdkafka retries them) are printed
      once each.

Algorithm
    Kafka's ``consume`` loop: take up to ``max.poll.records`` records with a 100 ms wait,
    count them, and after each record whose batch came at least ``--reporting-interval`` ms
    after the last report print a detailed line (when asked) and start a new interval.

Worked example
    ``--bootstrap-server 127.0.0.1:9092 --topic t --messages 1000`` on a topic holding 1,000
    records of 100 bytes prints ``start.time, end.time, data.consumed.in.MB, ...`` and
    ``2024-05-01 10:00:00:000, 2024-05-01 10:00:00:800, 0.0954, 0.1192, 1000, 1250.0000, 300,
    500, 0.1907, 2000.0000``.
"""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol, TextIO

from rackwise.client.perf_config import ArgumentParserException, librdkafka_consumer_config
from rackwise.client.perf_librdkafka import ConfluentConsumer, PerfTestError, librdkafka_logger
from rackwise.client.perf_output import (
    CONSUMER_HEADER,
    DEFAULT_DATE_FORMAT,
    DETAILED_CONSUMER_HEADER,
    ConsumerFigures,
    JavaDateFormat,
    consumer_progress_line,
    consumer_row,
    consumer_summary_json,
    consumer_timeout_warning,
    librdkafka_metrics,
    metrics_lines,
)
from rackwise.client.producer_perf import NS_PER_MS, STATS_INTERVAL_MS, NowNs

DEFAULT_FETCH_SIZE: Final = 1024 * 1024
DEFAULT_SOCKET_BUFFER_SIZE: Final = 2 * 1024 * 1024
DEFAULT_TIMEOUT_MS: Final = 10_000
DEFAULT_REPORTING_INTERVAL_MS: Final = "5000"
POLL_TIMEOUT_S: Final = 0.1
"""Kafka's tool polls with a 100 ms timeout."""
METADATA_TIMEOUT_S: Final = 1.0
GROUP_ID_BOUND: Final = 100_000
"""The default group id is ``perf-consumer-`` and a number below this, as in Kafka's tool."""
NOT_ASSIGNED: Final = 0
"""``rebalance.time.ms`` of a run that never got partitions."""
STOPPING_ERRORS: Final = frozenset(
    {
        3,  # UNKNOWN_TOPIC_OR_PART
        29,  # TOPIC_AUTHORIZATION_FAILED
        -188,  # _UNKNOWN_TOPIC
        -190,  # _UNKNOWN_PARTITION
    }
)
"""librdkafka consumer error codes that end the run (the others it retries by itself)."""
PARTITION_EOF: Final = -191
_DIGITS: Final = re.compile(r"^\d+$")


@dataclass(frozen=True, slots=True)
class ConsumerPerfOptions:
    """The command line of Kafka's tool (``consumer_config`` is the ``--consumer.config``
    file's properties, read by the caller). ``reporting_interval`` is the argument as given:
    Kafka checks its form."""

    bootstrap_server: str | None
    topic: str | None
    messages: int | None
    group: str | None = None
    fetch_size: int = DEFAULT_FETCH_SIZE
    from_latest: bool = False
    socket_buffer_size: int = DEFAULT_SOCKET_BUFFER_SIZE
    consumer_config: Mapping[str, str] | None = None
    print_metrics: bool = False
    show_detailed_stats: bool = False
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    reporting_interval: str = DEFAULT_REPORTING_INTERVAL_MS
    date_format: str = DEFAULT_DATE_FORMAT
    hide_header: bool = False
    json: bool = False


@dataclass(frozen=True, slots=True)
class CheckedOptions:
    """What :func:`check_options` derives: the topic and record count, the Java consumer
    properties, their librdkafka translation, records per ``consume()``, the reporting
    interval (ms)."""

    topic: str
    messages: int
    java: dict[str, str]
    librdkafka: dict[str, str]
    batch: int
    reporting_interval_ms: int


def check_options(o: ConsumerPerfOptions, rng: random.Random | None = None) -> CheckedOptions:
    """Kafka's checks and ``ConsumerPerfOptions.props()``: the consumer config file, then
    the tool's own settings over it."""
    if not _DIGITS.match(o.reporting_interval):
        raise ArgumentParserException(
            f"Cannot parse argument '{o.reporting_interval}' of option reporting-interval"
        )
    if o.topic is None:
        raise ArgumentParserException('Missing required argument "[topic]"')
    if o.messages is None:
        raise ArgumentParserException('Missing required argument "[messages]"')
    if not o.bootstrap_server:
        raise ArgumentParserException('Missing required argument "[bootstrap-server]"')
    interval = int(o.reporting_interval)
    if interval <= 0:
        raise ArgumentParserException("Reporting interval must be greater than 0.")
    group = o.group or f"perf-consumer-{(rng or random.Random()).randrange(GROUP_ID_BOUND)}"
    java = dict(o.consumer_config or {}) | {
        "bootstrap.servers": o.bootstrap_server,
        "group.id": group,
        "receive.buffer.bytes": str(o.socket_buffer_size),
        "max.partition.fetch.bytes": str(o.fetch_size),
        "auto.offset.reset": "latest" if o.from_latest else "earliest",
        "check.crcs": "false",
    }
    java.setdefault("client.id", "perf-consumer-client")
    config, batch = librdkafka_consumer_config(java)
    return CheckedOptions(o.topic, o.messages, java, config, batch, interval)


# ---- the client ------------------------------------------------------------------------------


class ConsumerClient(Protocol):
    """What the run needs of a consumer (:class:`ConfluentConsumer`, or a fake)."""

    def partitions(self, topic: str, timeout_s: float) -> list[int]:
        """The topic's partitions; none while the cluster does not know the topic."""
        ...

    def assign(self, topic: str, partitions: Sequence[int], *, from_latest: bool) -> None: ...

    def consume(self, num_messages: int, timeout_s: float) -> list[Any]: ...

    def serve(self, timeout_s: float) -> None:
        """Serve callbacks (statistics) for up to ``timeout_s``, dropping any record."""
        ...

    def close(self) -> None: ...


ConsumerFactory = Callable[[dict[str, Any]], ConsumerClient]


# ---- the run ---------------------------------------------------------------------------------


class _Progress:
    """The counters of Kafka's ``consume`` loop and what the client's callbacks saw."""

    def __init__(self, start_ms: int) -> None:
        self.start_ms = start_ms
        self.bytes = 0
        self.messages = 0
        self.rebalance_ms = NOT_ASSIGNED
        self.round_rebalance_ms = NOT_ASSIGNED
        self.last_report_ms = start_ms
        self.last_bytes = 0
        self.last_messages = 0
        self.errors: set[str] = set()
        self.fatal: str | None = None
        self.last_stats: dict[str, Any] | None = None

    def on_error(self, error: Any) -> None:
        if error.fatal():
            self.fatal = f"{error.name()}: {error.str()}"

    def on_stats(self, text: str) -> None:
        self.last_stats = json.loads(text)


def run_consumer_perf(
    options: ConsumerPerfOptions,
    *,
    out: TextIO,
    err: TextIO,
    now_ns: NowNs = time.time_ns,
    create: ConsumerFactory = ConfluentConsumer,
) -> int:
    """Run the test as Kafka's tool does (module docstring); 0."""
    checked = check_options(options)
    dates = JavaDateFormat(options.date_format)
    lines = err if options.json else out
    if not options.hide_header and (options.show_detailed_stats or not options.json):
        header = DETAILED_CONSUMER_HEADER if options.show_detailed_stats else CONSUMER_HEADER
        print(header, file=lines, flush=True)
    progress = _Progress(now_ns() // NS_PER_MS)
    settings: dict[str, Any] = dict(
        checked.librdkafka, error_cb=progress.on_error, logger=librdkafka_logger(err)
    )
    if options.print_metrics:
        settings |= {"statistics.interval.ms": STATS_INTERVAL_MS, "stats_cb": progress.on_stats}
    consumer = create(settings)
    try:
        timed_out = _consume(options, checked, consumer, progress, now_ns, dates, lines, err)
        end_ms = now_ns() // NS_PER_MS
        if options.print_metrics and progress.last_stats is None:
            consumer.serve(2 * STATS_INTERVAL_MS / 1000.0)
    finally:
        consumer.close()
    if timed_out:
        print(consumer_timeout_warning(options.timeout_ms), file=lines, flush=True)
    figures = ConsumerFigures(
        progress.start_ms, end_ms, progress.bytes, progress.messages, progress.rebalance_ms
    )
    if options.json:
        document = consumer_summary_json(figures, dates, timed_out=timed_out)
        print(json.dumps(document), file=out, flush=True)
    elif not options.show_detailed_stats:
        print(consumer_row(figures, dates), file=out, flush=True)
    if options.print_metrics:
        for line in metrics_lines(librdkafka_metrics(progress.last_stats or {})):
            print(line, file=out)
    return 0


def _consume(
    options: ConsumerPerfOptions,
    checked: CheckedOptions,
    consumer: ConsumerClient,
    progress: _Progress,
    now_ns: NowNs,
    dates: JavaDateFormat,
    lines: TextIO,
    err: TextIO,
) -> bool:
    """Kafka's ``consume`` loop, after assigning the topic's partitions; whether it stopped
    on ``--timeout``."""
    last_consumed_ms = now_ms = progress.start_ms
    is_assigned = False
    while progress.messages < checked.messages and now_ms - last_consumed_ms <= options.timeout_ms:
        if not is_assigned:
            is_assigned = _assign(options, checked, consumer, progress, now_ns)
            now_ms = now_ns() // NS_PER_MS
            continue
        batch = consumer.consume(checked.batch, POLL_TIMEOUT_S)
        now_ms = now_ns() // NS_PER_MS
        records = [m for m in batch if _is_record(m, progress, err)]
        if progress.fatal is not None:
            raise PerfTestError(f"the consumer failed: {progress.fatal}")
        if records:
            last_consumed_ms = now_ms
        for record in records:
            progress.messages += 1
            key = record.key()
            progress.bytes += len(record) + (0 if key is None else len(key))
            if now_ms - progress.last_report_ms >= checked.reporting_interval_ms:
                if options.show_detailed_stats:
                    print(_progress_line(progress, now_ms, dates), file=lines, flush=True)
                progress.round_rebalance_ms = NOT_ASSIGNED
                progress.last_report_ms = now_ms
                progress.last_messages = progress.messages
                progress.last_bytes = progress.bytes
    return progress.messages < checked.messages


def _assign(
    options: ConsumerPerfOptions,
    checked: CheckedOptions,
    consumer: ConsumerClient,
    progress: _Progress,
    now_ns: NowNs,
) -> bool:
    """Assign every partition of the topic once the cluster knows it (else wait a poll)."""
    partitions = consumer.partitions(checked.topic, METADATA_TIMEOUT_S)
    if not partitions:
        consumer.serve(POLL_TIMEOUT_S)
        return False
    consumer.assign(checked.topic, partitions, from_latest=options.from_latest)
    progress.rebalance_ms = now_ns() // NS_PER_MS - progress.start_ms
    progress.round_rebalance_ms = progress.rebalance_ms
    return True


def _is_record(message: Any, progress: _Progress, err: TextIO) -> bool:
    """Whether ``message`` is a record; an error ends the run (:data:`STOPPING_ERRORS`) or is
    printed once."""
    error = message.error()
    if error is None:
        return True
    code = error.code()
    text = f"{error.name()}: {error.str()}"
    if error.fatal() or code in STOPPING_ERRORS:
        raise PerfTestError(f"the consumer failed: {text}")
    if code != PARTITION_EOF and text not in progress.errors:
        progress.errors.add(text)
        print(f"consumer error: {text}", file=err, flush=True)
    return False


def _progress_line(progress: _Progress, now_ms: int, dates: JavaDateFormat) -> str:
    interval = ConsumerFigures(
        progress.last_report_ms,
        now_ms,
        progress.bytes,
        progress.messages,
        progress.round_rebalance_ms,
    )
    return consumer_progress_line(interval, progress.last_bytes, progress.last_messages, dates)
