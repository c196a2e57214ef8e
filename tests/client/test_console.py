"""The console producer's line reader and the consumer's formatter against Kafka's
``LineMessageReader`` and ``DefaultMessageFormatter``: fields, their order, separators, null
markers and Kafka's refusals."""

from __future__ import annotations

import struct

import pytest

from rackwise.client.console import ConsoleError, Formatter, LineReader, Record
from rackwise.client.console_format import FormatError, create_formatter


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


SERDE = "org.apache.kafka.common.serialization."


def test_deserializers_print_as_kafkas() -> None:
    record = Record(0, 0, 1, 5, b"\x00\x00\x00\x07", b"\x00\x00\x00\x00\x00\x00\x01\x00")
    shown = Formatter({
        "print.key": "true", "key.deserializer": SERDE + "IntegerDeserializer",
        "value.deserializer": SERDE + "LongDeserializer",
    })  # fmt: skip
    assert shown.format(record) == b"7\t256\n"
    doubles = Formatter({"value.deserializer": SERDE + "DoubleDeserializer"})
    for value, text in ((1.0, b"1.0"), (1e7, b"1.0E7"), (-2.5e-5, b"-2.5E-5"), (0.5, b"0.5")):
        assert doubles.format(Record(0, 0, 1, 5, None, struct.pack(">d", value))) == text + b"\n"
    raw = Record(0, 0, 1, 5, None, b"a\\b\x01")
    assert Formatter({"value.deserializer": SERDE + "BytesDeserializer"}).format(raw) == (
        b"a\\x5Cb\\x01\n"
    )
    assert Formatter({"value.deserializer": SERDE + "ByteBufferDeserializer"}).format(raw) == (
        b"java.nio.HeapByteBuffer[pos=0 lim=4 cap=4]\n"
    )
    assert Formatter({"value.deserializer": SERDE + "StringDeserializer"}).format(raw) == (
        b"a\\b\x01\n"
    )


def test_a_deserializer_refuses_with_kafkas_text_and_null_reaches_it_as_the_literal() -> None:
    ints = Formatter({"print.key": "true", "key.deserializer": SERDE + "IntegerDeserializer"})
    with pytest.raises(FormatError) as refused:
        ints.format(Record(0, 0, 1, 5, b"abc", b"v"))
    assert str(refused.value) == (
        "org.apache.kafka.common.errors.SerializationException: Size of data received by "
        "IntegerDeserializer is not 4"
    )
    # Kafka hands the deserializer the null literal's bytes: "null" is 4 bytes, an int.
    assert ints.format(Record(0, 0, 1, 5, None, b"v")) == b"1853189228\tv\n"
    warned: list[str] = []
    Formatter({"value.deserializer": "com.example.Nope"}, warned.append)
    assert warned == ["Unable to instantiate a deserializer from com.example.Nope"]


def test_the_formatters_by_kafkas_class_names() -> None:
    prefix = "org.apache.kafka.tools.consumer."
    record = Record(1, 3, 1, 1700000000000, None, b"v", leader_epoch=4)
    every = {"print.partition": "true", "print.epoch": "true", "print.delivery": "true"}
    default = create_formatter(prefix + "DefaultMessageFormatter", every)
    assert default.format(record) == b"Partition:1\tDelivery:NOT_PRESENT\tEpoch:4\tv\n"
    logging = create_formatter(prefix + "LoggingMessageFormatter", {})
    assert logging.format(record) == b"v\n"
    assert logging.log_line(record) == "CreateTime:1700000000000, key:null value:v"
    assert create_formatter(prefix + "NoOpMessageFormatter", {}).format(record) == b""
    with pytest.raises(FormatError) as refused:
        create_formatter("kafka.tools.DefaultMessageFormatter", {})
    assert str(refused.value).startswith(
        "java.lang.ClassNotFoundException: kafka.tools.DefaultMessageFormatter (formatters: "
    )
