"""``rackwise producer-perf-test``: Kafka's ``kafka-producer-perf-test.sh``
(``org.apache.kafka.tools.ProducerPerformance``) on confluent-kafka (librdkafka).

Goals
    The same flags, the same checks and the same output as Kafka's tool, so that a benchmark
    of a rackwise cluster reads like one of a Kafka cluster: a line every five seconds (that
    is the progress of a long run) and a final line with the 50th, 95th, 99th and 99.9th
    percentiles of latency; ``--json`` prints the final figures as one JSON object instead
    (the periodic lines then go to stderr).

Constraints
    * A record's latency is the time from its ``produce()`` call to its delivery report
      (librdkafka's ``Message.latency()``), in whole milliseconds as Kafka's ``(int)(now -
      start)``. A record whose ``produce()`` found the local queue full is timestamped at the
      call that queued it, so time spent waiting for room is not in its latency (Kafka's
      ``send()`` blocks inside the measured interval).
    * Delivery reports are served between sends (``poll(0)``) and while throttled (the
      throttler waits in ``poll``), so they are timestamped when librdkafka has them, not
      later.
    * As Kafka's tool: only acknowledged records are counted; latencies are sampled at most
      500,000 times (every ``num_records // min(num_records, 500000)``-th record); a run ends
      after every record is acknowledged or has failed. Each distinct delivery error is
      printed once, and any failure makes the exit status non-zero after the final line.
    * ``--record-size`` payloads are random upper-case letters, new for every record, from a
      generator seeded with 0 (Kafka's tool does the same with Java's ``SplittableRandom``;
      the bytes differ, their kind does not). ``--throughput 0`` is refused (Kafka's tool
      would block forever); a negative rate does not throttle.
    * Transactions (``--transactional-id``, ``--transaction-duration-ms``,
      ``transactional.id``) are refused: the brokers have no transaction coordinator.

Algorithm
    ``ProducerStats`` is Kafka's ``Stats``: totals, a window reset after each periodic line,
    the sampled latencies sorted at the end, percentile p taken at index ``int(p * n)``.
    ``ThroughputThrottler`` is Kafka's: once the average rate since the start exceeds the
    target, add ``1/target`` s to a sleep deficit and sleep it off once it reaches 2 ms.

Worked example
    ``--topic t --num-records 1000 --record-size 100 --throughput -1 --producer-props
    bootstrap.servers=127.0.0.1:9092`` sends 1,000 records of 100 letters and prints
    ``1000 records sent, 9803.9 records/sec (0.93 MB/sec), 4.75 ms avg latency, 11.00 ms max
    latency, 4 ms 50th, 9 ms 95th, 11 ms 99th, 11 ms 99.9th.``
"""

from __future__ import annotations

import array
import json
import random
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol, TextIO

from rackwise.client.perf_config import (
    ArgumentParserException,
    librdkafka_producer_config,
    parse_props_args,
    refuse_transactions,
)
from rackwise.client.perf_librdkafka import (
    ConfluentProducer,
    PerfTestError,
    librdkafka_logger,
)
from rackwise.client.perf_output import (
    ProducerFigures,
    librdkafka_metrics,
    metrics_lines,
    producer_summary_json,
    producer_total_line,
    producer_window_line,
)

REPORTING_INTERVAL_MS: Final = 5000
"""Kafka's tool prints a window line every 5 s."""
MAX_LATENCY_SAMPLES: Final = 500_000
PERCENTILES: Final = (0.5, 0.95, 0.99, 0.999)
NS_PER_MS: Final = 1_000_000
NS_PER_S: Final = 1_000_000_000
MIN_SLEEP_NS: Final = 2 * NS_PER_MS
QUEUE_FULL_WAIT_S: Final = 0.005
"""How long to serve delivery reports when librdkafka's queue has no room for a record."""
STATS_INTERVAL_MS: Final = 500
"""librdkafka's statistics interval with ``--print-metrics``."""
DEFAULT_PAYLOAD_DELIMITER: Final = "\\n"
"""Kafka's default ``--payload-delimiter``, written as the two characters it shows in help."""
UPPER_CASE: Final = bytes(65 + (i % 26) for i in range(256))
"""A byte -> A..Z table: random bytes through it are random upper-case letters."""

NowNs = Callable[[], int]


# ---- options -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProducerPerfOptions:
    """The command line of Kafka's tool (``producer_config`` is the ``--producer.config``
    file's properties, read by the caller; None when not given)."""

    topic: str
    num_records: int
    throughput: float
    record_size: int | None = None
    payload_file: Path | None = None
    payload_delimiter: str = DEFAULT_PAYLOAD_DELIMITER
    payload_monotonic: bool = False
    producer_props: Sequence[str] | None = None
    producer_config: Mapping[str, str] | None = None
    print_metrics: bool = False
    transactional_id: str | None = None
    transaction_duration_ms: int | None = None
    json: bool = False
    bootstrap_server: str | None = None
    """``--bootstrap-server`` (Kafka 4's flag): wins over ``bootstrap.servers`` given in the
    properties."""


def check_options(o: ProducerPerfOptions) -> tuple[dict[str, str], dict[str, str]]:
    """Kafka's checks of ``ConfigPostProcessor`` in its order, then the refusals of this
    tool; the Java producer properties and their librdkafka translation."""
    if o.num_records <= 0:
        raise ArgumentParserException("--num-records should be greater than zero")
    if o.record_size is not None and o.record_size <= 0:
        raise ArgumentParserException("--record-size should be greater than zero")
    if o.producer_props is None and o.producer_config is None and o.bootstrap_server is None:
        raise ArgumentParserException(
            "Either --producer-props or --producer.config must be specified."
        )
    if o.transaction_duration_ms is not None and o.transaction_duration_ms <= 0:
        raise ArgumentParserException("--transaction-duration-ms should be greater than zero")
    if o.throughput == 0:
        raise ArgumentParserException(
            "--throughput 0 would never send a record: give a rate in records/sec, or -1 not "
            "to throttle"
        )
    java = dict(o.producer_config or {}) | parse_props_args(o.producer_props or ())
    if o.bootstrap_server is not None:
        java["bootstrap.servers"] = o.bootstrap_server
    refuse_transactions(java, o.transactional_id, o.transaction_duration_ms)
    return java, librdkafka_producer_config(java)


# ---- payloads ------------------------------------------------------------------------------


def read_payload_file(path: Path, delimiter: str) -> list[bytes]:
    """The payloads of ``--payload-file``: its UTF-8 text split at the regular expression
    ``delimiter`` (``\\n`` meaning a newline), trailing empty pieces dropped, as Java's
    ``String.split``."""
    if not path.exists() or path.stat().st_size == 0:
        raise ArgumentParserException("File does not exist or empty file provided.")
    pattern = "\n" if delimiter == DEFAULT_PAYLOAD_DELIMITER else delimiter
    pieces = re.split(pattern, path.read_text(encoding="utf-8"))
    while len(pieces) > 1 and not pieces[-1]:
        pieces.pop()
    return [piece.encode("utf-8") for piece in pieces]


class Payloads:
    """The value of each record: ``record_size`` random letters, a random line of the payload
    file, or the record's number (``--payload-monotonic``)."""

    def __init__(
        self, record_size: int | None, from_file: Sequence[bytes], rng: random.Random
    ) -> None:
        self._size = record_size
        self._from_file = from_file
        self._rng = rng

    def value(self, index: int) -> bytes:
        if self._from_file:
            return self._from_file[self._rng.randrange(len(self._from_file))]
        if self._size is not None:
            return self._rng.randbytes(self._size).translate(UPPER_CASE)
        return str(index).encode("ascii")


# ---- Kafka's Stats and ThroughputThrottler ----------------------------------------------------


class ProducerStats:
    """Kafka's ``ProducerPerformance.Stats``, fed acknowledged records with their latency and
    the time (ms) of their report; ``emit`` prints the periodic lines."""

    def __init__(
        self,
        num_records: int,
        start_ms: int,
        emit: Callable[[str], None],
        reporting_interval_ms: int = REPORTING_INTERVAL_MS,
    ) -> None:
        self.start_ms = start_ms
        self._emit = emit
        self._interval_ms = reporting_interval_ms
        self._sampling = num_records // min(num_records, MAX_LATENCY_SAMPLES)
        self._latencies = array.array("i", bytes(4 * (num_records // self._sampling + 1)))
        self._index = 0
        self.iteration = 0
        self.count = 0
        self.bytes = 0
        self.total_latency_ms = 0
        self.max_latency_ms = 0
        self.failed = 0
        self._new_window(start_ms)

    def _new_window(self, now_ms: int) -> None:
        self._window_start_ms = now_ms
        self._window_count = 0
        self._window_bytes = 0
        self._window_total_latency_ms = 0
        self._window_max_latency_ms = 0

    def record(self, latency_ms: int, size: int, now_ms: int) -> None:
        self.count += 1
        self.bytes += size
        self.total_latency_ms += latency_ms
        self.max_latency_ms = max(self.max_latency_ms, latency_ms)
        self._window_count += 1
        self._window_bytes += size
        self._window_total_latency_ms += latency_ms
        self._window_max_latency_ms = max(self._window_max_latency_ms, latency_ms)
        if self.iteration % self._sampling == 0:
            self._latencies[self._index] = latency_ms
            self._index += 1
        self.iteration += 1
        if now_ms - self._window_start_ms >= self._interval_ms:
            self._emit(producer_window_line(self.window(now_ms)))
            self._new_window(now_ms)

    def window(self, now_ms: int) -> ProducerFigures:
        return ProducerFigures(
            self._window_count,
            self._window_bytes,
            now_ms - self._window_start_ms,
            self._window_total_latency_ms,
            self._window_max_latency_ms,
        )

    def total(self, now_ms: int) -> ProducerFigures:
        size = min(self._index, len(self._latencies))
        samples = sorted(self._latencies[:size])
        p50, p95, p99, p999 = (samples[int(p * size)] if size else 0 for p in PERCENTILES)
        return ProducerFigures(
            self.count,
            self.bytes,
            now_ms - self.start_ms,
            self.total_latency_ms,
            self.max_latency_ms,
            (p50, p95, p99, p999),
            self.failed,
        )


class ThroughputThrottler:
    """Kafka's ``ThroughputThrottler`` for a rate in records/sec; ``wait(seconds)`` sleeps
    (the producer's ``poll``, so that reports are served meanwhile)."""

    def __init__(
        self, target_per_s: float, start_ms: int, now_ns: NowNs, wait: Callable[[float], Any]
    ) -> None:
        self._target = target_per_s
        self._start_ms = start_ms
        self._now_ns = now_ns
        self._wait = wait
        self._sleep_ns = int(NS_PER_S / target_per_s) if target_per_s > 0 else 0
        self._deficit_ns = 0

    def should_throttle(self, amount_so_far: int, send_start_ms: int) -> bool:
        if self._target < 0:
            return False
        elapsed_s = (send_start_ms - self._start_ms) / 1000.0
        return elapsed_s > 0 and amount_so_far / elapsed_s > self._target

    def throttle(self) -> None:
        self._deficit_ns += self._sleep_ns
        if self._deficit_ns < MIN_SLEEP_NS:
            return
        started = self._now_ns()
        remaining = self._deficit_ns
        while remaining > 0:
            self._wait(remaining / NS_PER_S)
            remaining = self._deficit_ns - (self._now_ns() - started)
        self._deficit_ns = 0


# ---- the run ---------------------------------------------------------------------------------


class ProducerClient(Protocol):
    """What the run needs of confluent-kafka's ``Producer``."""

    def produce(self, topic: str, value: bytes) -> None: ...

    def poll(self, timeout: float) -> int: ...

    def flush(self, timeout: float) -> int: ...


ProducerFactory = Callable[[dict[str, Any]], ProducerClient]


class _Run:
    """One run's mutable state: the callbacks librdkafka calls and what they saw."""

    def __init__(self, stats: ProducerStats, now_ns: NowNs, report: Callable[[str], None]) -> None:
        self.stats = stats
        self._now_ns = now_ns
        self._report = report
        self.errors: set[str] = set()
        self.fatal: str | None = None
        self.last_stats: dict[str, Any] | None = None

    def on_delivery(self, error: Any, message: Any) -> None:
        if error is not None:
            self.stats.failed += 1
            text = f"delivery failed: {error.name()}: {error.str()}"
            if text not in self.errors:
                self.errors.add(text)
                self._report(text)
            return
        latency_s = message.latency() or 0.0
        self.stats.record(int(latency_s * 1000), len(message), self._now_ns() // NS_PER_MS)

    def on_error(self, error: Any) -> None:
        if error.fatal():
            self.fatal = f"{error.name()}: {error.str()}"

    def on_stats(self, text: str) -> None:
        self.last_stats = json.loads(text)


def run_producer_perf(
    options: ProducerPerfOptions,
    *,
    out: TextIO,
    err: TextIO,
    now_ns: NowNs = time.time_ns,
    create: ProducerFactory = ConfluentProducer,
    before_connecting: Callable[[Mapping[str, str]], None] = lambda java: None,
) -> int:
    """Run the test as Kafka's tool does; 0, or raise :class:`PerfTestError` once the final
    figures are printed if any record was not delivered. ``before_connecting`` sees the Java
    producer properties once every option is checked, before the producer is made."""
    java, config = check_options(options)
    progress = err if options.json else out

    def say(line: str) -> None:
        print(line, file=progress, flush=True)

    from_file: list[bytes] = []
    if options.payload_file is not None:
        say(f"Reading payloads from: {options.payload_file.absolute()}")
        from_file = read_payload_file(options.payload_file, options.payload_delimiter)
        say(f"Number of messages read: {len(from_file)}")
    payloads = Payloads(options.record_size, from_file, random.Random(0))
    start_ms = now_ns() // NS_PER_MS
    stats = ProducerStats(options.num_records, start_ms, say)
    run = _Run(stats, now_ns, lambda line: print(line, file=err, flush=True))
    settings: dict[str, Any] = dict(
        config, on_delivery=run.on_delivery, error_cb=run.on_error, logger=librdkafka_logger(err)
    )
    if options.print_metrics:
        settings |= {"statistics.interval.ms": STATS_INTERVAL_MS, "stats_cb": run.on_stats}
    before_connecting(java)
    producer = create(settings)
    _send_all(options, producer, payloads, run, now_ns)
    _drain(producer, run)
    figures = run.stats.total(now_ns() // NS_PER_MS)
    if options.json:
        print(json.dumps(producer_summary_json(figures)), file=out, flush=True)
    else:
        print(producer_total_line(figures), file=out, flush=True)
    if options.print_metrics:
        _print_metrics(producer, run, out, now_ns)
    if figures.failed:
        raise PerfTestError(f"{figures.failed} of {options.num_records} records were not delivered")
    return 0


def _send_all(
    options: ProducerPerfOptions,
    producer: ProducerClient,
    payloads: Payloads,
    run: _Run,
    now_ns: NowNs,
) -> None:
    throttler = ThroughputThrottler(options.throughput, run.stats.start_ms, now_ns, producer.poll)
    for i in range(options.num_records):
        value = payloads.value(i)
        send_start_ms = now_ns() // NS_PER_MS
        while True:
            try:
                producer.produce(options.topic, value)
                break
            except BufferError:  # librdkafka's queue is full: let deliveries make room
                producer.poll(QUEUE_FULL_WAIT_S)
                _check_fatal(run)
        producer.poll(0)
        _check_fatal(run)
        if throttler.should_throttle(i, send_start_ms):
            throttler.throttle()


def _drain(producer: ProducerClient, run: _Run) -> None:
    """Wait for every record's delivery report (Kafka's ``close()`` before the totals)."""
    while producer.flush(1.0) > 0:
        _check_fatal(run)
    _check_fatal(run)


def _check_fatal(run: _Run) -> None:
    if run.fatal is not None:
        raise PerfTestError(f"the producer failed: {run.fatal}")


def _print_metrics(producer: ProducerClient, run: _Run, out: TextIO, now_ns: NowNs) -> None:
    """librdkafka's statistics after the last delivery, in ``printMetrics``'s shape."""
    run.last_stats = None
    deadline = now_ns() + 4 * STATS_INTERVAL_MS * NS_PER_MS
    while run.last_stats is None and now_ns() < deadline:
        producer.poll(STATS_INTERVAL_MS / 1000.0)
    for line in metrics_lines(librdkafka_metrics(run.last_stats or {})):
        print(line, file=out)
