"""What ``rackwise producer-perf-test`` and ``consumer-perf-test`` print: the lines of Kafka's
``ProducerPerformance`` and ``ConsumerPerformance``, number for number, and the same figures
as one JSON object (``--json``).

Goals
    A script that reads the output of Kafka's tools reads rackwise's: the same words, the same
    separators, the same number formats (Java's ``%.1f``/``%.2f``/``%.4f`` round half up, print
    ``Infinity`` and ``NaN`` where a division by zero gives them), the consumer's times in a
    ``java.text.SimpleDateFormat`` pattern (``--date-format``).

Constraints
    Pure: figures in, strings out; the clock and the time zone are the caller's. Date patterns
    take SimpleDateFormat's letters ``G y M L d D E u a H k K h m s S z Z X`` with English
    names; ``Y w W F`` are refused here, any other letter is illegal, as in Java.

Algorithm
    :func:`java_fixed` rounds the shortest decimal form of the double (what Java's formatter
    starts from) half up. :func:`java_div` divides as Java divides doubles.

Worked example
    A producer window of 2,500 records, 250,000 bytes in 5,000 ms, 7,500 ms of latency in
    total and 9 ms at most prints
    ``2500 records sent, 500.0 records/sec (0.05 MB/sec), 3.0 ms avg latency, 9.0 ms max
    latency.``
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Final

from rackwise.common import RackwiseError
from rackwise.common import error_codes as codes

MB: Final = 1024 * 1024
"""Kafka's tools count a MB as 2**20 bytes."""
CONSUMER_HEADER: Final = (
    "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
    "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
)
DETAILED_CONSUMER_HEADER: Final = (
    "time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
    "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
)
DEFAULT_DATE_FORMAT: Final = "yyyy-MM-dd HH:mm:ss:SSS"
CONSUMER_THREAD_ID: Final = 0
"""The ``threadId`` column: Kafka's tool consumes on one thread, numbered 0."""


class DateFormatException(RackwiseError, ValueError):
    """A ``--date-format`` pattern that cannot be used (Java's IllegalArgumentException)."""

    error_code = codes.INVALID_REQUEST


# ---- numbers -----------------------------------------------------------------------------


def java_fixed(value: float, digits: int) -> str:
    """``String.format("%.<digits>f", value)`` as Java prints it."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    exact = Decimal(repr(float(value)))
    return f"{exact.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP):f}"


def java_div(numerator: float, denominator: float) -> float:
    """``numerator / denominator`` on Java doubles: by zero gives an infinity or NaN."""
    if denominator == 0:
        if numerator == 0 or math.isnan(numerator):
            return math.nan
        return math.copysign(math.inf, numerator) * math.copysign(1.0, denominator)
    return numerator / denominator


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


# ---- the producer ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProducerFigures:
    """Records acknowledged over ``elapsed_ms``: their count and bytes, the sum and maximum
    of their latencies (ms), and for a whole run the latency percentiles (ms)."""

    count: int
    bytes: int
    elapsed_ms: int
    total_latency_ms: int
    max_latency_ms: int
    percentiles_ms: tuple[int, int, int, int] = (0, 0, 0, 0)
    failed: int = 0

    @property
    def records_per_sec(self) -> float:
        return java_div(1000.0 * self.count, float(self.elapsed_ms))

    @property
    def mb_per_sec(self) -> float:
        return java_div(java_div(1000.0 * self.bytes, float(self.elapsed_ms)), float(MB))

    @property
    def avg_latency_ms(self) -> float:
        return java_div(float(self.total_latency_ms), float(self.count))


def producer_window_line(w: ProducerFigures) -> str:
    """The periodic line of ``ProducerPerformance.Stats.printWindow``."""
    return (
        f"{w.count} records sent, {java_fixed(w.records_per_sec, 1)} records/sec "
        f"({java_fixed(w.mb_per_sec, 2)} MB/sec), {java_fixed(w.avg_latency_ms, 1)} ms avg "
        f"latency, {java_fixed(float(w.max_latency_ms), 1)} ms max latency."
    )


def producer_total_line(t: ProducerFigures) -> str:
    """The final line of ``ProducerPerformance.Stats.printTotal``."""
    p50, p95, p99, p999 = t.percentiles_ms
    return (
        f"{t.count} records sent, {java_fixed(t.records_per_sec, 1)} records/sec "
        f"({java_fixed(t.mb_per_sec, 2)} MB/sec), {java_fixed(t.avg_latency_ms, 2)} ms avg "
        f"latency, {java_fixed(float(t.max_latency_ms), 2)} ms max latency, {p50} ms 50th, "
        f"{p95} ms 95th, {p99} ms 99th, {p999} ms 99.9th."
    )


def producer_summary_json(t: ProducerFigures) -> dict[str, Any]:
    """The final figures as one JSON object (non-finite rates are null)."""
    p50, p95, p99, p999 = t.percentiles_ms
    return {
        "records_sent": t.count,
        "records_failed": t.failed,
        "bytes_sent": t.bytes,
        "elapsed_ms": t.elapsed_ms,
        "records_per_sec": _finite(t.records_per_sec),
        "mb_per_sec": _finite(t.mb_per_sec),
        "avg_latency_ms": _finite(t.avg_latency_ms),
        "max_latency_ms": t.max_latency_ms,
        "latency_50th_ms": p50,
        "latency_95th_ms": p95,
        "latency_99th_ms": p99,
        "latency_99_9th_ms": p999,
    }


# ---- the consumer ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConsumerFigures:
    """A consumer's run (or one reporting interval): wall-clock start and end (ms since the
    epoch), bytes and records read, and the part of the time spent getting partitions
    (``rebalance.time.ms``)."""

    start_ms: int
    end_ms: int
    bytes: int
    messages: int
    rebalance_ms: int

    @property
    def fetch_ms(self) -> int:
        return self.end_ms - self.start_ms - self.rebalance_ms

    @property
    def mb(self) -> float:
        return self.bytes * 1.0 / MB


def consumer_row(s: ConsumerFigures, dates: JavaDateFormat) -> str:
    """The summary row under :data:`CONSUMER_HEADER` (``ConsumerPerformance.main``)."""
    elapsed_s = (s.end_ms - s.start_ms) / 1000.0
    fetch_s = s.fetch_ms / 1000.0
    return ", ".join(
        (
            dates.format(s.start_ms),
            dates.format(s.end_ms),
            java_fixed(s.mb, 4),
            java_fixed(java_div(s.mb, elapsed_s), 4),
            str(s.messages),
            java_fixed(java_div(float(s.messages), elapsed_s), 4),
            str(s.rebalance_ms),
            str(s.fetch_ms),
            java_fixed(java_div(s.mb, fetch_s), 4),
            java_fixed(java_div(float(s.messages), fetch_s), 4),
        )
    )


def consumer_progress_line(
    total: ConsumerFigures, last_bytes: int, last_messages: int, dates: JavaDateFormat
) -> str:
    """A ``--show-detailed-stats`` line for the interval ``total.start_ms``..``end_ms``:
    ``total`` holds the totals so far, ``last_*`` the totals at the interval's start
    (``printBasicProgress`` + ``printExtendedProgress``)."""
    elapsed_ms = float(total.end_ms - total.start_ms)
    interval_mb = (total.bytes - last_bytes) * 1.0 / MB
    interval_messages = total.messages - last_messages
    fetch_ms = total.fetch_ms
    fetch_mb_per_s = 0.0 if fetch_ms <= 0 else 1000.0 * interval_mb / fetch_ms
    fetch_msg_per_s = 0.0 if fetch_ms <= 0 else 1000.0 * interval_messages / fetch_ms
    return ", ".join(
        (
            dates.format(total.end_ms),
            str(CONSUMER_THREAD_ID),
            java_fixed(total.mb, 4),
            java_fixed(java_div(1000.0 * interval_mb, elapsed_ms), 4),
            str(total.messages),
            java_fixed(java_div(float(interval_messages), elapsed_ms) * 1000.0, 4),
            str(total.rebalance_ms),
            str(fetch_ms),
            java_fixed(fetch_mb_per_s, 4),
            java_fixed(fetch_msg_per_s, 4),
        )
    )


def consumer_timeout_warning(timeout_ms: int) -> str:
    """The line Kafka's tool prints when it stops before ``--messages`` records."""
    return (
        "WARNING: Exiting before consuming the expected number of messages: timeout "
        f"({timeout_ms} ms) exceeded. You can use the --timeout option to increase the timeout."
    )


def consumer_summary_json(
    s: ConsumerFigures, dates: JavaDateFormat, *, timed_out: bool
) -> dict[str, Any]:
    """The summary row as one JSON object, under the header's names (non-finite rates are
    null), with the times also in ms since the epoch."""
    elapsed_s = (s.end_ms - s.start_ms) / 1000.0
    fetch_s = s.fetch_ms / 1000.0
    return {
        "start.time": dates.format(s.start_ms),
        "end.time": dates.format(s.end_ms),
        "start.time.ms": s.start_ms,
        "end.time.ms": s.end_ms,
        "data.consumed.in.MB": s.mb,
        "data.consumed.in.bytes": s.bytes,
        "MB.sec": _finite(java_div(s.mb, elapsed_s)),
        "data.consumed.in.nMsg": s.messages,
        "nMsg.sec": _finite(java_div(float(s.messages), elapsed_s)),
        "rebalance.time.ms": s.rebalance_ms,
        "fetch.time.ms": s.fetch_ms,
        "fetch.MB.sec": _finite(java_div(s.mb, fetch_s)),
        "fetch.nMsg.sec": _finite(java_div(float(s.messages), fetch_s)),
        "timed.out": timed_out,
    }


# ---- metrics (--print-metrics) ------------------------------------------------------------


def metrics_lines(metrics: Mapping[str, object]) -> list[str]:
    """``ToolsUtils.printMetrics``: a blank line, a header, then ``name : value`` sorted by
    name, names padded to the longest, floats with three decimals."""
    if not metrics:
        return []
    width = max(len(name) for name in metrics)
    lines = ["", f"{'Metric Name':<{width}}   Value"]
    for name in sorted(metrics):
        value = metrics[name]
        shown = java_fixed(value, 3) if isinstance(value, float) else str(value)
        lines.append(f"{name:<{width}} : {shown}")
    return lines


def librdkafka_metrics(stats: Mapping[str, Any]) -> dict[str, object]:
    """The top-level figures of a librdkafka statistics document as metrics named
    ``librdkafka:<field>:{client-id=<id>}`` (Kafka's ``group:name:tags``)."""
    tags = f"{{client-id={stats.get('client_id', '')}}}"
    return {
        f"librdkafka:{key}:{tags}": value
        for key, value in stats.items()
        if isinstance(value, int | float) and not isinstance(value, bool)
    }


# ---- java.text.SimpleDateFormat ------------------------------------------------------------

_MONTHS: Final = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_DAYS: Final = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_NOT_HERE: Final = frozenset("YwWF")
_LETTERS: Final = frozenset("GyMLdDEuaHkKhmsSzZX")


class JavaDateFormat:
    """A compiled ``SimpleDateFormat`` pattern (module docstring); :meth:`format` takes ms
    since the epoch and prints them in ``tz`` (the local zone when None)."""

    def __init__(self, pattern: str, tz: Any = None) -> None:
        self.pattern = pattern
        self._tz = tz
        self._fields = _compile(pattern)

    def format(self, epoch_ms: int) -> str:
        moment = datetime.fromtimestamp(epoch_ms / 1000.0, self._tz)
        if self._tz is None:
            moment = moment.astimezone()
        moment = moment.replace(microsecond=(epoch_ms % 1000) * 1000)
        return "".join(
            text if letter == "" else _field(letter, len(text), moment)
            for letter, text in self._fields
        )


def _compile(pattern: str) -> list[tuple[str, str]]:
    """The pattern as (letter, run) fields and ("", literal) pieces."""
    fields: list[tuple[str, str]] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "'":
            literal, i = _quoted(pattern, i)
            fields.append(("", literal))
            continue
        if not char.isascii() or not char.isalpha():
            fields.append(("", char))
            i += 1
            continue
        if char in _NOT_HERE:
            raise DateFormatException(f"Date format letter '{char}' is not supported: {pattern}")
        if char not in _LETTERS:
            raise DateFormatException(f"Illegal pattern character '{char}'")
        run = len(pattern[i:]) - len(pattern[i:].lstrip(char))
        fields.append((char, char * run))
        i += run
    return fields


def _quoted(pattern: str, start: int) -> tuple[str, int]:
    """The literal text quoted at ``pattern[start]`` (``''`` is a quote, inside quotes or
    out) and the index after it."""
    if pattern.startswith("''", start):
        return "'", start + 2
    text: list[str] = []
    i = start + 1
    while i < len(pattern):
        if pattern.startswith("''", i):
            text.append("'")
            i += 2
        elif pattern[i] == "'":
            return "".join(text), i + 1
        else:
            text.append(pattern[i])
            i += 1
    raise DateFormatException(f"Unterminated quote in date format {pattern}")


def _field(letter: str, count: int, t: datetime) -> str:
    if letter in "ML":
        if count >= 4:
            return _MONTHS[t.month - 1]
        return _MONTHS[t.month - 1][:3] if count == 3 else f"{t.month:0{count}d}"
    if letter == "E":
        return _DAYS[t.weekday()] if count >= 4 else _DAYS[t.weekday()][:3]
    if letter == "y":
        return f"{t.year % 100:02d}" if count == 2 else f"{t.year:0{count}d}"
    if letter in "zZX":
        return _zone(letter, count, t)
    if letter == "a":
        return "AM" if t.hour < 12 else "PM"
    if letter == "G":
        return "AD"
    numbers = {
        "d": t.day,
        "D": t.timetuple().tm_yday,
        "u": t.isoweekday(),
        "H": t.hour,
        "k": t.hour or 24,
        "K": t.hour % 12,
        "h": t.hour % 12 or 12,
        "m": t.minute,
        "s": t.second,
        "S": t.microsecond // 1000,
    }
    return f"{numbers[letter]:0{count}d}"


def _zone(letter: str, count: int, t: datetime) -> str:
    offset = t.utcoffset() or timedelta(0)
    minutes = int(offset.total_seconds()) // 60
    sign = "-" if minutes < 0 else "+"
    hours, mins = divmod(abs(minutes), 60)
    if letter == "z":
        return t.tzname() or f"GMT{sign}{hours:02d}:{mins:02d}"
    if letter == "X" and minutes == 0:
        return "Z"
    if letter == "X" and count == 1:
        return f"{sign}{hours:02d}"
    if letter == "X" and count >= 3:
        return f"{sign}{hours:02d}:{mins:02d}"
    return f"{sign}{hours:02d}{mins:02d}"
