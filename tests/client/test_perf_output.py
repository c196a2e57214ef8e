"""The perf tools' lines, number for number as Kafka's tools print them: Java's rounding and
divisions, the producer's window and total lines, the consumer's rows, SimpleDateFormat."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rackwise.client.perf_output import (
    CONSUMER_HEADER,
    DETAILED_CONSUMER_HEADER,
    ConsumerFigures,
    DateFormatException,
    JavaDateFormat,
    ProducerFigures,
    consumer_progress_line,
    consumer_row,
    consumer_summary_json,
    consumer_timeout_warning,
    java_div,
    java_fixed,
    librdkafka_metrics,
    metrics_lines,
    producer_summary_json,
    producer_total_line,
    producer_window_line,
)

MAY_1_10H_MS = int(datetime(2024, 5, 1, 10, 0, tzinfo=UTC).timestamp() * 1000)
UTC_DATES = JavaDateFormat("yyyy-MM-dd HH:mm:ss:SSS", UTC)


@pytest.mark.parametrize(
    ("value", "digits", "text"),
    [
        (0.125, 2, "0.13"),  # half up, where Python's own format gives 0.12
        (0.05, 1, "0.1"),
        (1.25, 1, "1.3"),
        (2.0, 4, "2.0000"),
        (1234567.891, 1, "1234567.9"),
        (-0.0, 1, "-0.0"),
        (-1.25, 1, "-1.3"),
        (1e-7, 4, "0.0000"),
        (math.nan, 2, "NaN"),
        (math.inf, 1, "Infinity"),
        (-math.inf, 4, "-Infinity"),
    ],
)
def test_java_fixed_rounds_half_up_and_names_non_finite_values(
    value: float, digits: int, text: str
) -> None:
    assert java_fixed(value, digits) == text


@given(st.floats(min_value=-1e9, max_value=1e9, allow_nan=False), st.integers(0, 4))
def test_java_fixed_differs_from_python_only_on_ties(value: float, digits: int) -> None:
    ours = float(java_fixed(value, digits))
    assert abs(ours - value) <= 0.5 * 10**-digits + 1e-9 * max(1.0, abs(value))


def test_java_div_gives_infinities_and_nan_where_java_does() -> None:
    assert java_div(1.0, 0.0) == math.inf
    assert java_div(-1.0, 0.0) == -math.inf
    assert java_div(1.0, -0.0) == -math.inf
    assert math.isnan(java_div(0.0, 0.0))
    assert java_div(3.0, 2.0) == 1.5


def test_the_producer_window_line() -> None:
    window = ProducerFigures(
        count=2500, bytes=250_000, elapsed_ms=5000, total_latency_ms=7500, max_latency_ms=9
    )
    assert producer_window_line(window) == (
        "2500 records sent, 500.0 records/sec (0.05 MB/sec), 3.0 ms avg latency, "
        "9.0 ms max latency."
    )


def test_the_producer_total_line() -> None:
    total = ProducerFigures(
        count=1000,
        bytes=100_000,
        elapsed_ms=102,
        total_latency_ms=4750,
        max_latency_ms=11,
        percentiles_ms=(4, 9, 11, 11),
    )
    assert producer_total_line(total) == (
        "1000 records sent, 9803.9 records/sec (0.93 MB/sec), 4.75 ms avg latency, "
        "11.00 ms max latency, 4 ms 50th, 9 ms 95th, 11 ms 99th, 11 ms 99.9th."
    )


def test_a_producer_that_sent_nothing_prints_nan_and_infinity_as_java() -> None:
    nothing = ProducerFigures(count=0, bytes=0, elapsed_ms=0, total_latency_ms=0, max_latency_ms=0)
    assert producer_total_line(nothing) == (
        "0 records sent, NaN records/sec (NaN MB/sec), NaN ms avg latency, 0.00 ms max "
        "latency, 0 ms 50th, 0 ms 95th, 0 ms 99th, 0 ms 99.9th."
    )
    instant = ProducerFigures(count=3, bytes=30, elapsed_ms=0, total_latency_ms=3, max_latency_ms=1)
    assert producer_window_line(instant).startswith(
        "3 records sent, Infinity records/sec (Infinity MB/sec), 1.0 ms avg latency"
    )


def test_the_producer_json_summary_has_every_figure_and_null_for_non_finite_rates() -> None:
    total = ProducerFigures(3, 300, 0, 6, 3, (1, 2, 3, 3), failed=2)
    assert producer_summary_json(total) == {
        "records_sent": 3,
        "records_failed": 2,
        "bytes_sent": 300,
        "elapsed_ms": 0,
        "records_per_sec": None,
        "mb_per_sec": None,
        "avg_latency_ms": 2.0,
        "max_latency_ms": 3,
        "latency_50th_ms": 1,
        "latency_95th_ms": 2,
        "latency_99th_ms": 3,
        "latency_99_9th_ms": 3,
    }


def test_the_consumer_header_and_row() -> None:
    figures = ConsumerFigures(
        start_ms=MAY_1_10H_MS,
        end_ms=MAY_1_10H_MS + 800,
        bytes=100_000,
        messages=1000,
        rebalance_ms=300,
    )
    assert CONSUMER_HEADER == (
        "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
        "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
    )
    assert consumer_row(figures, UTC_DATES) == (
        "2024-05-01 10:00:00:000, 2024-05-01 10:00:00:800, 0.0954, 0.1192, 1000, 1250.0000, "
        "300, 500, 0.1907, 2000.0000"
    )
    assert len(consumer_row(figures, UTC_DATES).split(", ")) == len(CONSUMER_HEADER.split(", "))


def test_a_consumer_row_of_nothing_read_at_once_prints_nan() -> None:
    figures = ConsumerFigures(MAY_1_10H_MS, MAY_1_10H_MS, 0, 0, 0)
    assert consumer_row(figures, UTC_DATES).split(", ")[2:] == [
        "0.0000",
        "NaN",
        "0",
        "NaN",
        "0",
        "0",
        "NaN",
        "NaN",
    ]


def test_a_detailed_consumer_line() -> None:
    interval = ConsumerFigures(
        start_ms=MAY_1_10H_MS,
        end_ms=MAY_1_10H_MS + 5000,
        bytes=3 * 1024 * 1024,
        messages=30_000,
        rebalance_ms=1000,
    )
    line = consumer_progress_line(interval, 1024 * 1024, 10_000, UTC_DATES)
    assert DETAILED_CONSUMER_HEADER.startswith("time, threadId, data.consumed.in.MB")
    assert line == (
        "2024-05-01 10:00:05:000, 0, 3.0000, 0.4000, 30000, 4000.0000, 1000, 4000, 0.5000, "
        "5000.0000"
    )


def test_a_detailed_line_without_fetch_time_reports_zero_rates() -> None:
    interval = ConsumerFigures(MAY_1_10H_MS, MAY_1_10H_MS + 100, 2048, 2, 100)
    assert consumer_progress_line(interval, 0, 0, UTC_DATES).endswith(", 100, 0, 0.0000, 0.0000")


def test_the_timeout_warning_is_kafkas() -> None:
    assert consumer_timeout_warning(10_000) == (
        "WARNING: Exiting before consuming the expected number of messages: timeout "
        "(10000 ms) exceeded. You can use the --timeout option to increase the timeout."
    )


def test_the_consumer_json_summary_uses_the_header_names() -> None:
    figures = ConsumerFigures(MAY_1_10H_MS, MAY_1_10H_MS + 1000, 1024 * 1024, 10, 1000)
    document = consumer_summary_json(figures, UTC_DATES, timed_out=True)
    header_names = set(CONSUMER_HEADER.split(", "))
    assert header_names <= set(document)
    assert document["data.consumed.in.MB"] == 1.0
    assert document["MB.sec"] == 1.0
    assert document["fetch.time.ms"] == 0
    assert document["fetch.MB.sec"] is None  # Infinity in Kafka's row
    assert document["timed.out"] is True
    assert document["start.time"] == "2024-05-01 10:00:00:000"


def test_metrics_print_as_kafkas_tools_print_them() -> None:
    lines = metrics_lines({"b:x:{}": 1.23456, "a:long-name:{}": 7})
    assert lines == [
        "",
        "Metric Name      Value",
        "a:long-name:{} : 7",
        "b:x:{}         : 1.235",
    ]
    assert metrics_lines({}) == []


def test_librdkafka_statistics_become_named_metrics() -> None:
    stats = {"client_id": "c", "txmsgs": 5, "name": "c#producer-1", "age": 1.5, "brokers": {}}
    assert librdkafka_metrics(stats) == {
        "librdkafka:txmsgs:{client-id=c}": 5,
        "librdkafka:age:{client-id=c}": 1.5,
    }


def test_kafkas_default_date_format() -> None:
    assert UTC_DATES.format(MAY_1_10H_MS + 7) == "2024-05-01 10:00:00:007"


@pytest.mark.parametrize(
    ("pattern", "text"),
    [
        ("EEE, d MMM yy h:mm a", "Wed, 1 May 24 3:04 PM"),
        ("EEEE MMMM dd", "Wednesday May 01"),
        ("yyyy.MM.dd G 'at' HH:mm:ss.S z", "2024.05.01 AD at 15:04:05.9 UTC"),
        ("hh 'o''clock' a, Z X XXX", "03 o'clock PM, +0000 Z Z"),
        ("D u k K ''", "122 3 15 3 '"),
    ],
)
def test_simple_date_format_letters(pattern: str, text: str) -> None:
    moment = int(datetime(2024, 5, 1, 15, 4, 5, 9000, tzinfo=UTC).timestamp() * 1000)
    assert JavaDateFormat(pattern, UTC).format(moment) == text


def test_zone_offsets_in_simple_date_format() -> None:
    india = timezone(timedelta(hours=5, minutes=30))
    dates = JavaDateFormat("HH:mm Z X XX XXX", india)
    assert dates.format(MAY_1_10H_MS) == "15:30 +0530 +05 +0530 +05:30"


def test_illegal_and_unsupported_pattern_letters_are_refused() -> None:
    with pytest.raises(DateFormatException, match=r"^Illegal pattern character 'b'$"):
        JavaDateFormat("yyyy b")
    with pytest.raises(DateFormatException, match=r"'w' is not supported"):
        JavaDateFormat("yyyy-ww")
    with pytest.raises(DateFormatException, match=r"Unterminated quote"):
        JavaDateFormat("HH 'at")
