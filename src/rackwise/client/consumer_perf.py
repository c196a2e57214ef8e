"""``rackwise consumer-perf-test``: Kafka's ``kafka-consumer-perf-test.sh``
(``org.apache.kafka.tools.ConsumerPerformance``) on confluent-kafka (librdkafka).

Goals
    The same flags and output as Kafka's tool: a header, then one summary row (start and end
    time, MB and records consumed and their rates, the time spent in the group's rebalances
    and the time spent fetching), or with ``--show-detailed-stats`` one row per reporting
    interval; ``--json`` prints the summary as one JSON object instead (other lines go to
    stderr). The same measurement: the consumer joins a group and ``rebalance.time.ms`` is the
    time its rebalances took, as Kafka's tool counts it.

Constraints
    * As Kafka's tool, the consumer ``subscribe``s to the topic in ``--group`` (default
      ``perf-consumer-<random>``) over Kafka's classic group protocol (JoinGroup, SyncGroup,
      Heartbeat, LeaveGroup), so the group decides what it reads: every partition while it is
      the group's only member, a share of them while other members run. A partition the group
      has no committed offset for is read from the beginning (``auto.offset.reset=earliest``;
      ``--from-latest``: from its end), one it has from there. Offsets are committed as the
      Java consumer commits them by default (``enable.auto.commit``, every
      ``auto.commit.interval.ms`` and on close), so a run with the same ``--group`` resumes
      after the previous one, as Kafka's tool does.
    * ``rebalance.time.ms`` is the sum, over the group's rebalances, of the time from the start
      (the first) or from the partitions' revocation (the others) until partitions were
      assigned, as Kafka's ``ConsumerPerfRebListener`` sums it; ``fetch.time.ms`` is the rest of
      the run. Against ``rackwise cluster up`` (``group.initial.rebalance.delay.ms=0``) a lone
      consumer's first rebalance is finding the coordinator, a JoinGroup and a SyncGroup: tens
      to a few hundred ms. A detailed row shows the rebalance time of its own interval, as
      Kafka's Scala tool did: Kafka 4's Java tool starts each interval on a new counter its
      listener never adds to, so its rows after the first always show 0.
    * As Kafka's tool: it stops once it has read ``--messages`` records (counting whole
      batches, so possibly a few more) or when no record came for ``--timeout`` ms, then prints
      Kafka's warning. A topic that does not exist is reported once (librdkafka's
      ``UNKNOWN_TOPIC_OR_PART``, "Subscribed topic not available"; Kafka's client logs a
      warning instead) and gets no partitions until librdkafka's next metadata refresh finds
      it; one that does not appear within ``--timeout`` reads as no records, and the time until
      one appears counts as rebalance time. A record's size is its key's and value's bytes.
    * A topic name Kafka refuses ends the run before the consumer subscribes, with the Java
      client's message (``Invalid topics: [a b]``): librdkafka would take a name starting with
      ``^`` as a regular expression, and Kafka's topic names cannot hold one. A fatal client
      error, or one Kafka's consumer throws from ``poll`` (an invalid topic, topic or group
      authorization failed: :data:`STOPPING_ERRORS`), ends the run with one error line; other
      consumer errors (librdkafka retries them) are printed once each.

Algorithm
    The start is taken once the consumer exists; the consumer subscribes with callbacks that
    keep Kafka's listener's books: a revocation sets the join start to now, an assignment adds
    now minus the join start (the start, before any revocation) to the run's rebalance time and
    to the interval's. Then Kafka's ``consume`` loop: take up to ``max.poll.records`` records
    with a 100 ms wait (the rebalances, and so the callbacks, happen inside these calls), count
    them, and after each record whose batch came at least ``--reporting-interval`` ms after the
    last report print a detailed line (when asked) and start a new interval, its rebalance time
    back at 0.

Worked example
    ``--bootstrap-server 127.0.0.1:9092 --topic t --messages 1000`` on a topic holding 1,000
    records of 100 bytes, the group assigning the consumer its partitions 300 ms after the
    start, prints ``start.time, end.time, data.consumed.in.MB, ...`` and ``2024-05-01
    10:00:00:000, 2024-05-01 10:00:00:800, 0.0954, 0.1192, 1000, 1250.0000, 300, 500, 0.1907,
    2000.0000``. Had a second consumer joined the group midway, the revocation and the
    reassignment it causes (say 40 ms apart) would add 40 ms to ``rebalance.time.ms``.
"""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Callable, Mapping
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
GROUP_ID_BOUND: Final = 100_000
"""The default group id is ``perf-consumer-`` and a number below this, as in Kafka's tool."""
STOPPING_ERRORS: Final = frozenset(
    {
        17,  # TOPIC_EXCEPTION: Java's poll throws InvalidTopicException
        29,  # TOPIC_AUTHORIZATION_FAILED: TopicAuthorizationException
        30,  # GROUP_AUTHORIZATION_FAILED: GroupAuthorizationException
    }
)
"""librdkafka consumer error codes that end the run, as the Java consumer's ``poll`` throws
them; the others (an unknown topic among them) librdkafka retries, as the Java consumer does."""
PARTITION_EOF: Final = -191
BLANK_TOPIC: Final = "Topic collection to subscribe to cannot contain null or empty topic"
"""The Java consumer's ``subscribe`` refusing a blank topic name."""
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


TopicPartition = tuple[str, int]
RebalanceCallback = Callable[[list[TopicPartition]], None]


class ConsumerClient(Protocol):
    """What the run needs of a consumer (:class:`ConfluentConsumer`, or a fake)."""

    def subscribe(
        self, topic: str, on_assign: RebalanceCallback, on_revoke: RebalanceCallback
    ) -> None:
        """Join the group for ``topic``; its rebalances call ``on_assign`` and ``on_revoke``
        with the partitions assigned or taken away, from within :meth:`consume` or
        :meth:`serve`."""
        ...

    def consume(self, num_messages: int, timeout_s: float) -> list[Any]: ...

    def serve(self, timeout_s: float) -> None:
        """Serve callbacks (statistics) for up to ``timeout_s``, dropping any record."""
        ...

    def close(self) -> None: ...


ConsumerFactory = Callable[[dict[str, Any]], ConsumerClient]


# ---- the run ---------------------------------------------------------------------------------


class _Progress:
    """The counters of Kafka's ``consume`` loop and what the client's callbacks saw."""

    def __init__(self) -> None:
        self.start_ms = 0
        self.bytes = 0
        self.messages = 0
        self.rebalance_ms = 0
        self.round_rebalance_ms = 0
        self.last_report_ms = 0
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


class _RebalanceListener:
    """Kafka's ``ConsumerPerfRebListener``: the time from the start, or from the last
    revocation, to each assignment, added to the run's and the interval's rebalance time.
    (Later Kafka, KAFKA-19617, counts only an assignment to a consumer that holds no partition;
    the two differ only for incremental rebalances, with ``cooperative-sticky`` asked for in
    ``partition.assignment.strategy``: librdkafka's default assignors are eager and revoke every
    partition first.)"""

    def __init__(self, progress: _Progress, now_ns: NowNs) -> None:
        self._progress = progress
        self._now_ns = now_ns
        self._join_start_ms = progress.start_ms

    def on_revoke(self, partitions: list[TopicPartition]) -> None:
        self._join_start_ms = self._now_ns() // NS_PER_MS

    def on_assign(self, partitions: list[TopicPartition]) -> None:
        elapsed_ms = self._now_ns() // NS_PER_MS - self._join_start_ms
        self._progress.rebalance_ms += elapsed_ms
        self._progress.round_rebalance_ms += elapsed_ms


def run_consumer_perf(
    options: ConsumerPerfOptions,
    *,
    out: TextIO,
    err: TextIO,
    now_ns: NowNs = time.time_ns,
    create: ConsumerFactory = ConfluentConsumer,
    before_connecting: Callable[[Mapping[str, str]], None] = lambda java: None,
) -> int:
    """Run the test as Kafka's tool does (module docstring); 0. ``before_connecting`` sees the
    Java consumer properties once every option is checked, before the consumer is made."""
    checked = check_options(options)
    dates = JavaDateFormat(options.date_format)
    lines = err if options.json else out
    if not options.hide_header and (options.show_detailed_stats or not options.json):
        header = DETAILED_CONSUMER_HEADER if options.show_detailed_stats else CONSUMER_HEADER
        print(header, file=lines, flush=True)
    _check_topic(checked.topic)
    progress = _Progress()
    settings: dict[str, Any] = dict(
        checked.librdkafka, error_cb=progress.on_error, logger=librdkafka_logger(err)
    )
    if options.print_metrics:
        settings |= {"statistics.interval.ms": STATS_INTERVAL_MS, "stats_cb": progress.on_stats}
    before_connecting(checked.java)
    consumer = create(settings)
    try:
        progress.start_ms = now_ns() // NS_PER_MS
        listener = _RebalanceListener(progress, now_ns)
        consumer.subscribe(checked.topic, listener.on_assign, listener.on_revoke)
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


def _check_topic(topic: str) -> None:
    """Refuse, as the Java consumer does, a topic Kafka could not hold (librdkafka would take
    ``^...`` as a regular expression, and look any other such name up in vain)."""
    if not topic.strip():
        raise PerfTestError(BLANK_TOPIC)
    # The controller package loads the metadata records: only when a topic is checked.
    from rackwise.controller.names import invalid_topic_reason  # noqa: PLC0415

    if invalid_topic_reason(topic) is not None:
        raise PerfTestError(f"Invalid topics: [{topic}]")


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
    """Kafka's ``consume`` loop, once subscribed; whether it stopped on ``--timeout``."""
    last_consumed_ms = now_ms = progress.last_report_ms = now_ns() // NS_PER_MS
    while progress.messages < checked.messages and now_ms - last_consumed_ms <= options.timeout_ms:
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
                progress.round_rebalance_ms = 0
                progress.last_report_ms = now_ms
                progress.last_messages = progress.messages
                progress.last_bytes = progress.bytes
    return progress.messages < checked.messages


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
