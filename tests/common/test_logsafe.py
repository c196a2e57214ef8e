"""Values from requests in log lines: never more than one line, and the escaped form tells
exactly what was sent."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from rackwise.common.logsafe import loggable

_SHORT = {"\\": "\\", "n": "\n", "r": "\r", "t": "\t"}
_WIDTHS = {"x": 2, "u": 4, "U": 8}


def unescape(text: str) -> str:
    """The inverse of :func:`loggable` (for the tests only)."""
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char != "\\":
            out.append(char)
            i += 1
            continue
        kind = text[i + 1]
        if kind in _SHORT:
            out.append(_SHORT[kind])
            i += 2
            continue
        width = _WIDTHS[kind]
        out.append(chr(int(text[i + 2 : i + 2 + width], 16)))
        i += 2 + width
    return "".join(out)


def test_a_newline_in_a_rack_cannot_start_a_line() -> None:
    forged = "/dc1/r1\n2024-01-01T00:00:00.000Z INFO controller 1 rackwise.controller: forged"
    escaped = loggable(forged)
    assert escaped == (
        "/dc1/r1\\n2024-01-01T00:00:00.000Z INFO controller 1 rackwise.controller: forged"
    )
    assert len(escaped.splitlines()) == 1


def test_controls_separators_and_backslashes_are_escaped() -> None:
    assert loggable("a\rb\tc\x00d\x1b[31m\x7f") == "a\\rb\\tc\\x00d\\x1b[31m\\x7f"
    assert loggable("x\u2028y\u2029z\x85") == "x\\u2028y\\u2029z\\x85"
    assert loggable("C:\\dir\\n") == "C:\\\\dir\\\\n"  # a backslash never reads as an escape
    assert loggable("\U000e0001") == "\\U000e0001"


def test_plain_values_are_returned_as_they_are() -> None:
    assert loggable("/dc1/rack 7 é 東京") == "/dc1/rack 7 é 東京"
    assert loggable(None) == "None"
    assert loggable(42) == "42"
    value = uuid.UUID(int=5)
    assert loggable(value) == str(value)


@given(st.text())
def test_one_printable_line_that_reads_back_as_the_value(value: str) -> None:
    escaped = loggable(value)
    assert escaped.isprintable()
    assert len(escaped.splitlines()) <= 1
    assert unescape(escaped) == value
