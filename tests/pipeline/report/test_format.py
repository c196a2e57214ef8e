"""Numbers for people: sizes, durations, rates, counts, ratios, yes/no."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from rackwise.pipeline.report.format import (
    BYTE_UNITS,
    KIB,
    NOT_GIVEN,
    TIMES,
    format_bool,
    format_bytes,
    format_count,
    format_duration,
    format_figure,
    format_metric,
    format_ms,
    format_percent,
    format_ratio,
    format_value,
)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1_060_504_238_428, "987.7 GiB"),
        (0, "0 B"),
        (512, "512 B"),
        (1536, "1.5 KiB"),
        (3 * 2**30, "3.0 GiB"),
        (16_278_190_174_793, "14.8 TiB"),
        (None, NOT_GIVEN),
        (float("nan"), NOT_GIVEN),
    ],
)
def test_sizes_take_the_largest_unit_they_reach(value: float | None, text: str) -> None:
    assert format_bytes(value) == text


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0 s"),
        (0.44, "0.4 s"),
        (42, "42 s"),
        (1839.65, "30 min 40 s"),
        (1800, "30 min"),
        (3600, "1 h"),
        (7325, "2 h 2 min"),
        (10967.9, "3 h 2 min"),
        (90000, "1 d 1 h"),
        (None, NOT_GIVEN),
    ],
)
def test_durations_read_in_their_two_largest_parts(seconds: float | None, text: str) -> None:
    assert format_duration(seconds) == text


def test_other_figures_read_as_people_say_them() -> None:
    assert format_count(12000) == "12,000"
    assert format_bool(True) == "yes" and format_bool(False) == "no"
    assert format_value(True) == "yes" and format_value(None) == NOT_GIVEN
    assert format_ratio(1.3721) == f"1.37{TIMES}"
    assert format_percent(0.4574) == "45.7%"
    assert format_ms(5.981) == "6.0 ms" and format_ms(13.693) == "14 ms"
    assert format_ms(1500) == "1.5 s"
    assert format_metric("bytes", 2**40) == "1.0 TiB"
    assert format_metric("utilisation", 0.5) == "50.0%"
    assert format_metric("replicas", 166.6667) == "166.7"


@pytest.mark.parametrize(
    ("key", "value", "text"),
    [
        ("data_to_move_bytes", 3 * 2**30, "3.0 GiB"),
        ("lower_bound.bytes", 1024, "1.0 KiB"),
        ("move_time.seconds", 1839.65, "30 min 40 s"),
        ("move_time.intra_broker_seconds", 2263.04, "37 min 43 s"),
        ("plan_ms", 91.36, "91 ms"),
        ("throttle_bytes_per_s", 100_000_000, "95.4 MiB/s"),
        ("planned_on_valid_rows_only", False, "no"),
        ("reassignment_file", None, NOT_GIVEN),
        ("replica_moves", 1155, "1,155"),
        ("skew.max_over_mean", 1.5439, f"1.54{TIMES}"),
        ("strategy", "keep", "keep"),
    ],
)
def test_a_summary_figure_is_formatted_by_its_key(key: str, value: object, text: str) -> None:
    assert format_figure(key, value) == text


_SIZE = re.compile(r"^([\d,]+(?:\.\d)?) (\w+)$")


@given(st.integers(min_value=0, max_value=2**62))
@example(1_073_689_396)  # 1023.95 MiB: rounds up into the next unit
@example(1_048_575)
def test_a_size_reads_back_within_its_rounding(value: int) -> None:
    number, unit = _SIZE.fullmatch(format_bytes(value)).groups()  # type: ignore[union-attr]
    scale = KIB ** BYTE_UNITS.index(unit)
    shown = float(number.replace(",", ""))
    assert shown < KIB or unit == BYTE_UNITS[-1]
    assert shown >= 1 or value == 0
    assert abs(shown * scale - value) <= 0.05 * scale + 0.5


_PART = re.compile(r"([\d,.]+) (d|h|min|s)")
_UNIT_S = {"d": 86400, "h": 3600, "min": 60, "s": 1}


@given(st.floats(min_value=0, max_value=1e8, allow_nan=False))
def test_a_duration_reads_back_within_its_smallest_part(seconds: float) -> None:
    text = format_duration(seconds)
    parts = _PART.findall(text)
    assert 1 <= len(parts) <= 2
    assert text == " ".join(f"{n} {u}" for n, u in parts)
    total = sum(float(n.replace(",", "")) * _UNIT_S[u] for n, u in parts)
    smallest = _UNIT_S[parts[-1][1]]
    assert total <= seconds + 0.5 * smallest + 0.05
    assert seconds - total < smallest + 0.5
