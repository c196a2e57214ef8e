"""The shared JSON layer: Jackson's compact output and the strict reader's errors."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import rackwise.formats
from rackwise.common import InvalidFormatException
from rackwise.formats._json import JsonValue, dump_string, dumps, expect_int, loads

FORMATS_SRC = Path(rackwise.formats.__file__).parent


def test_compact_output_has_no_whitespace_and_keeps_key_order() -> None:
    value: JsonValue = {"version": 1, "b": [1, -2, True, False, None], "a": {"x": "y"}}
    assert dumps(value) == '{"version":1,"b":[1,-2,true,false,null],"a":{"x":"y"}}'


def test_strings_are_escaped_as_jackson_escapes_them() -> None:
    # Short escapes for quote, backslash, \b \t \n \f \r; \u00XX with upper-case hex for the
    # other control characters; slash, DEL and non-ASCII (even outside the BMP) verbatim.
    text = 'q"b\\s\b\t\n\f\r\x00\x1f\x0b/\x7f\u00e9\u2028\U0001f600'
    expected = '"q\\"b\\\\s\\b\\t\\n\\f\\r\\u0000\\u001F\\u000B/\x7f\u00e9\u2028\U0001f600"'
    assert dump_string(text) == expected


@given(st.text())
def test_any_string_survives_a_round_trip(text: str) -> None:
    assert json.loads(dump_string(text)) == text


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "the input is empty"),
        ("  \n", "the input is empty"),
        ("{", "not valid JSON: Expecting property name enclosed in double quotes (line 1"),
        ('{"a":1} {"b":2}', "not valid JSON: Extra data (line 1, column 9)"),
        ('{"a":NaN}', "NaN is not a JSON value"),
        ('{"a":-Infinity}', "-Infinity is not a JSON value"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ],
)
def test_malformed_json_is_reported(text: str, fragment: str) -> None:
    with pytest.raises(InvalidFormatException) as caught:
        loads(text, "doc")
    assert str(caught.value).startswith("doc: ")
    assert fragment in str(caught.value)


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (True, "expected an integer, got true"),
        (1.0, "expected an integer, got 1.0"),
        ("7", 'expected an integer, got "7"'),
        (2**31, "2147483648 does not fit in a 32-bit signed integer"),
        (-(2**31) - 1, "-2147483649 does not fit in a 32-bit signed integer"),
    ],
)
def test_ints_are_what_kafka_calls_int(value: object, fragment: str) -> None:
    with pytest.raises(InvalidFormatException) as caught:
        expect_int(value, "doc", "x.y")
    assert str(caught.value) == f"doc: x.y: {fragment}"


def test_int_bounds_are_inclusive() -> None:
    assert expect_int(2**31 - 1, "doc", "x") == 2**31 - 1
    assert expect_int(-(2**31), "doc", "x") == -(2**31)


FORBIDDEN = {"os", "pathlib", "io", "random", "time", "socket", "subprocess", "shutil", "tempfile"}


@pytest.mark.parametrize("module", sorted(FORMATS_SRC.glob("*.py")), ids=lambda p: p.name)
def test_package_is_pure_and_stays_beside_placement(module: Path) -> None:
    tree = ast.parse(module.read_text(encoding="utf-8"))
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
    assert not {name.split(".")[0] for name in imported} & FORBIDDEN
    assert not any(name.startswith(("rackwise.placement", "rackwise.cli")) for name in imported)


def test_public_api_is_reexported() -> None:
    for name in rackwise.formats.__all__:
        assert getattr(rackwise.formats, name) is not None
    readers = {n for n in rackwise.formats.__all__ if n.startswith("parse_")}
    writers = {n for n in rackwise.formats.__all__ if n.startswith("format_")}
    assert {n.removeprefix("parse_") for n in readers} == {
        n.removeprefix("format_") for n in writers
    }
