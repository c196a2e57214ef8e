"""The console producer's line reader and the consumer's formatter against Kafka's
``LineMessageReader`` and ``DefaultMessageFormatter``: fields, their order, separators, null
markers and Kafka's refusals."""

from __future__ import annotations

import pytest

from rackwise.client.console import ConsoleError, Formatter, LineReader, Record


def test_a_plain_line_is_a_value() -> None:
    assert LineReader({}).parse("a\tb") == (None, b"a\tb", [])


def test_keys_headers_and_null_markers_read_as_kafka_reads_them() -> None:
    reader = LineReader({"parse.key": "true", "parse.headers": "true", "null.marker": "<n>"})
    assert reader.parse("h1:v1,h2:<n>\tkey\tvalue") == (
        b"key", b"value", [("h1", b"v1"), ("h2", None)],
    )  # fmt: skip
    assert reader.parse("<n>\t<n>\t<n>") == (None, None, [])
    separated = LineReader({"parse.key": "true", "key.separator": "::"})
    assert separated.parse("k::v::w") == (b"k", b"v::w", [])


def test_refusals_are_kafkas() -> None:
    reader = LineReader({"parse.key": "true"})
    reader.parse("k\tv")
    with pytest.raises(ConsoleError) as refused:
        reader.parse("abc")
    assert str(refused.value) == "No key separator found on line number 2: 'abc'"
    headers = LineReader({"parse.headers": "true"})
    with pytest.raises(ConsoleError) as refused:
        headers.parse("h1\tvalue")
    assert str(refused.value) == "No header key separator found in pair 'h1' on line number 1"
    assert LineReader({"parse.key": "true", "ignore.error": "true"}).parse("abc") == (
        None, b"abc", [],
    )  # fmt: skip
    with pytest.raises(ConsoleError) as refused:
        LineReader({"headers.separator": ":"})
    assert str(refused.value) == "headers.separator and headers.key.separator may not be equal"
    with pytest.raises(ConsoleError) as refused:
        LineReader({"null.marker": "\t"})
    assert str(refused.value) == "null.marker and key.separator may not be equal"


RECORD = Record(2, 7, 1, 1700000000000, b"k", b"v", (("h", b"1"), ("g", None)))


def test_the_default_format_is_the_value_alone() -> None:
    assert Formatter({}).format(RECORD) == b"v\n"
    assert Formatter({}).format(Record(0, 0, 0, -1, None, None)) == b"null\n"


def test_every_field_in_kafkas_order() -> None:
    every = {f"print.{f}": "true" for f in ("timestamp", "partition", "offset", "headers", "key")}
    assert Formatter(every).format(RECORD) == (
        b"CreateTime:1700000000000\tPartition:2\tOffset:7\th:1,g:null\tk\tv\n"
    )
    custom = Formatter({
        "print.key": "true", "print.value": "false", "print.timestamp": "true",
        "key.separator": " | ", "line.separator": ";", "null.literal": "-",
    })  # fmt: skip
    assert custom.format(Record(0, 0, 0, -1, None, b"v")) == b"NO_TIMESTAMP | -;"
    assert Formatter({"print.headers": "true"}).format(Record(0, 0, 2, 5, None, b"v")) == (
        b"NO_HEADERS\tv\n"
    )
