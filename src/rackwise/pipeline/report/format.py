"""Numbers for people: sizes, durations, rates, counts, ratios and yes/no.

Goals
    Every figure in a report reads the way an operator says it: ``987.7 GiB``, not
    ``987.670`` or ``1060504238428``; ``30 min 40 s``, not ``1,840``; ``12,000``; ``yes``, not
    ``True``. Each function takes the figure as stored (bytes, seconds, milliseconds, a
    fraction) and returns its text.

Constraints
    Sizes in binary units (``KiB`` = 1,024 bytes), as Kafka's tools and ``df -h`` count them.
    A missing figure (``None``, NaN) prints as ``NOT_GIVEN``, never as ``None`` or ``nan``.
    Pure: no locale, no clock.

Algorithm
    A size takes the largest unit it reaches (at least 1 of it) with one decimal; a duration
    its two largest parts (``2 h 5 min``), seconds alone under a minute (one decimal under ten
    seconds); a figure named in a summary is formatted by its key (:func:`format_figure`):
    ``*_bytes`` as a size, ``*seconds`` as a duration, ``*_ms`` as milliseconds,
    ``*_bytes_per_s`` as a rate.

Worked example
    ``format_bytes(1060504238428)`` is ``987.7 GiB``; ``format_duration(1839.65)`` is
    ``30 min 40 s``; ``format_figure("data_to_move_bytes", 3 * 2**30)`` is ``3.0 GiB``;
    ``format_figure("planned_on_valid_rows_only", False)`` is ``no``.
"""

from __future__ import annotations

import math
from typing import Final

NOT_GIVEN: Final = "\N{EN DASH}"
"""What a missing figure prints as."""
TIMES: Final = "\N{MULTIPLICATION SIGN}"
"""After a ratio (``1.37`` and the sign)."""
BYTE_UNITS: Final = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
KIB: Final = 1024
_MINUTE: Final = 60
_HOUR: Final = 60 * _MINUTE
_DAY: Final = 24 * _HOUR


def is_missing(value: object) -> bool:
    """``None`` or a float NaN."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def byte_unit(largest: float) -> tuple[str, float]:
    """The unit a set of sizes whose largest is ``largest`` reads best in, and its size in
    bytes: ``byte_unit(5e11)`` is ``("GiB", 2**30)``."""
    exponent = 0
    while exponent + 1 < len(BYTE_UNITS) and abs(largest) >= KIB ** (exponent + 1):
        exponent += 1
    return BYTE_UNITS[exponent], float(KIB**exponent)


def format_bytes(value: float | None) -> str:
    """A size in bytes in the largest unit it reaches: ``987.7 GiB``, ``512 B``."""
    if is_missing(value):
        return NOT_GIVEN
    assert value is not None
    unit, scale = byte_unit(value)
    digits = 0 if unit == BYTE_UNITS[0] else 1
    if abs(round(value / scale, digits)) >= KIB and unit != BYTE_UNITS[-1]:
        # 1,073,689,396 B is 1023.95 MiB, which rounds to 1024.0: say 1.0 GiB instead.
        unit, scale, digits = BYTE_UNITS[BYTE_UNITS.index(unit) + 1], scale * KIB, 1
    return f"{value / scale:,.{digits}f} {unit}"


def format_rate(bytes_per_s: float | None) -> str:
    """A rate in bytes per second: ``95.4 MiB/s``."""
    if is_missing(bytes_per_s):
        return NOT_GIVEN
    return f"{format_bytes(bytes_per_s)}/s"


def format_duration(seconds: float | None) -> str:
    """A duration: ``0.4 s``, ``42 s``, ``30 min 40 s``, ``2 h 5 min``, ``1 d 3 h``."""
    if is_missing(seconds):
        return NOT_GIVEN
    assert seconds is not None
    if seconds == 0:
        return "0 s"
    if seconds < 10:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    if whole < _MINUTE:
        return f"{whole} s"
    for big, big_name, small, small_name in (
        (_DAY, "d", _HOUR, "h"),
        (_HOUR, "h", _MINUTE, "min"),
        (_MINUTE, "min", 1, "s"),
    ):
        if whole >= big:
            first, rest = divmod(whole, big)
            second = rest // small
            return (
                f"{first:,} {big_name} {second} {small_name}" if second else f"{first:,} {big_name}"
            )
    raise AssertionError(f"BUG: no unit for {seconds} s")  # pragma: no cover


def format_ms(milliseconds: float | None) -> str:
    """A short duration given in milliseconds: ``6 ms``, ``0.4 ms``, ``1.5 s``."""
    if is_missing(milliseconds):
        return NOT_GIVEN
    assert milliseconds is not None
    if milliseconds >= 1000:
        return format_duration(milliseconds / 1000)
    return f"{milliseconds:.1f} ms" if milliseconds < 10 else f"{milliseconds:,.0f} ms"


def format_count(value: float | None) -> str:
    """A count with thousands separators: ``12,000``."""
    if is_missing(value):
        return NOT_GIVEN
    assert value is not None
    return f"{round(value):,}"


def format_decimal(value: float | None, digits: int = 1) -> str:
    """A measured quantity: whole numbers as counts, others with ``digits`` decimals."""
    if is_missing(value):
        return NOT_GIVEN
    assert value is not None
    if float(value).is_integer():
        return format_count(value)
    return f"{value:,.{digits}f}"


def format_ratio(value: float | None) -> str:
    """A ratio to a mean or a target: ``1.37`` and the multiplication sign."""
    if is_missing(value):
        return NOT_GIVEN
    return f"{value:.2f}{TIMES}"


def format_percent(fraction: float | None) -> str:
    """A fraction as a percentage: ``45.7%``."""
    if is_missing(fraction):
        return NOT_GIVEN
    assert fraction is not None
    return f"{100 * fraction:.1f}%"


def format_bool(value: bool | None) -> str:
    """``yes`` or ``no``."""
    if value is None:
        return NOT_GIVEN
    return "yes" if value else "no"


def format_value(value: object) -> str:
    """Any figure by its type alone: yes/no, counts, decimals, text."""
    if is_missing(value):
        return NOT_GIVEN
    if isinstance(value, bool):
        return format_bool(value)
    if isinstance(value, int):
        return format_count(value)
    if isinstance(value, float):
        return format_decimal(value, 2 if abs(value) < 100 else 1)
    return str(value)


def format_figure(key: str, value: object) -> str:
    """A summary figure by its key's unit suffix (see the module notes), else by its type."""
    if is_missing(value) or isinstance(value, bool) or not isinstance(value, int | float):
        return format_value(value)
    name = key.rsplit(".", 1)[-1]
    if name.endswith("_bytes_per_s"):
        return format_rate(value)
    if name == "bytes" or name.endswith("_bytes"):
        return format_bytes(value)
    if name == "seconds" or name.endswith("_seconds"):
        return format_duration(value)
    if name.endswith("_ms"):
        return format_ms(value)
    if name in ("utilisation", "utilization"):
        return format_percent(value)
    if name.endswith("max_over_mean"):
        return format_ratio(value)
    return format_value(value)


def format_metric(metric: str, value: float | None) -> str:
    """A load figure by its metric: ``bytes`` as a size, ``utilisation`` as a percentage,
    ``replicas`` and ``leaders`` as decimals (a mean may be fractional)."""
    if metric == "bytes":
        return format_bytes(value)
    if metric == "utilisation":
        return format_percent(value)
    return format_decimal(value)
