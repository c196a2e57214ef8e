"""How the console consumer prints a record: Kafka's ``DefaultMessageFormatter`` with its
properties and deserializers, ``LoggingMessageFormatter`` and ``NoOpMessageFormatter``, chosen
by their class names as ``kafka-console-consumer.sh --formatter`` takes them.

Constraints
    * The properties are Kafka's: ``print.timestamp``, ``print.partition``, ``print.offset``,
      ``print.delivery``, ``print.epoch``, ``print.headers``, ``print.key``, ``print.value``
      (the only one on by default), ``key.separator`` (tab), ``line.separator`` (newline),
      ``headers.separator`` (``,``), ``null.literal`` (``null``), ``key.deserializer``,
      ``value.deserializer`` and ``headers.deserializer``; fields come in Kafka's order.
    * A deserializer is named by Kafka's class name (:data:`DESERIALIZERS`). As in Kafka, a
      missing key or value reaches the deserializer as the null literal's bytes, and a size
      the deserializer refuses raises Kafka's ``SerializationException`` text
      (:class:`FormatError`). ``ByteArrayDeserializer`` prints the bytes themselves (Kafka
      prints the Java array's identity, ``[B@1b6d3586``, which no one can use); an unknown
      name is reported once and the bytes are printed as they are, as Kafka does.
    * Pure: bytes in, bytes out.

Worked example
    ``Formatter({"print.key": "true", "key.deserializer":
    "org.apache.kafka.common.serialization.IntegerDeserializer"})`` prints a record with the
    key ``b"\\x00\\x00\\x00\\x07"`` and the value ``b"v"`` as ``b"7\\tv\\n"``.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Final

from rackwise.common.errors import RackwiseError

Header = tuple[str, bytes | None]
TIMESTAMP_TYPES: Final = {1: "CreateTime", 2: "LogAppendTime"}
SERIALIZATION: Final = "org.apache.kafka.common.serialization."
FORMATTERS: Final = tuple(
    f"org.apache.kafka.tools.consumer.{name}"
    for name in ("DefaultMessageFormatter", "LoggingMessageFormatter", "NoOpMessageFormatter")
)
"""The formatter classes ``--formatter`` accepts, the first the default."""


class FormatError(RackwiseError):
    """A record a deserializer refuses, with Kafka's exception and message."""


@dataclass(frozen=True, slots=True)
class Record:
    """A record as the formatter sees it."""

    partition: int
    offset: int
    timestamp_type: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()
    leader_epoch: int | None = None


def _sized(name: str, size: int, layout: str) -> Callable[[bytes], str]:
    def read(data: bytes) -> str:
        if len(data) != size:
            raise FormatError(
                f"org.apache.kafka.common.errors.SerializationException: Size of data received "
                f"by {name} is not {size}"
            )
        return str(struct.unpack(layout, data)[0])

    return read


def _java_double(data: bytes) -> str:
    """``DoubleDeserializer`` then Java's ``Double.toString``: the shortest digits, plain
    between 10^-3 and 10^7 and as ``d.dddE<n>`` outside."""
    if len(data) != 8:
        raise FormatError(
            "org.apache.kafka.common.errors.SerializationException: Size of data received by "
            "Deserializer is not 8"
        )
    value = struct.unpack(">d", data)[0]
    if math.isnan(value) or math.isinf(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        return repr(value)
    _, digits, exponent = Decimal(repr(abs(value))).as_tuple()
    shown = "".join(map(str, digits)).rstrip("0") or "0"
    power = len(digits) + int(exponent) - 1
    return f"{'-' if value < 0 else ''}{shown[0]}.{shown[1:] or '0'}E{power}"


def _bytes_text(data: bytes) -> str:
    """Kafka's ``Bytes.toString``: printable ASCII but the backslash as is, the rest \\xNN."""
    return "".join(chr(b) if 0x20 <= b <= 0x7E and b != 0x5C else f"\\x{b:02X}" for b in data)


def _void(data: bytes) -> str:
    raise FormatError(
        "java.lang.IllegalArgumentException: Data should be null for a VoidDeserializer."
    )


DESERIALIZERS: Final[dict[str, Callable[[bytes], str | bytes]]] = {
    SERIALIZATION + "StringDeserializer": lambda data: data.decode("utf-8", "replace"),
    SERIALIZATION + "ByteArrayDeserializer": lambda data: data,
    SERIALIZATION + "ByteBufferDeserializer": (
        lambda data: f"java.nio.HeapByteBuffer[pos=0 lim={len(data)} cap={len(data)}]"
    ),
    SERIALIZATION + "BytesDeserializer": _bytes_text,
    SERIALIZATION + "ShortDeserializer": _sized("ShortDeserializer", 2, ">h"),
    SERIALIZATION + "IntegerDeserializer": _sized("IntegerDeserializer", 4, ">i"),
    SERIALIZATION + "LongDeserializer": _sized("LongDeserializer", 8, ">q"),
    SERIALIZATION + "DoubleDeserializer": _java_double,
    SERIALIZATION + "VoidDeserializer": _void,
}
"""Kafka's deserializers by class name: a record's bytes to what the formatter prints."""


def _true(value: str) -> bool:
    return value.strip().lower() == "true"


class Formatter:
    """Kafka's ``DefaultMessageFormatter`` over ``properties`` (see the module docstring);
    ``warn`` hears of a deserializer name it does not know."""

    _FIELDS: Final = (
        "timestamp", "partition", "offset", "delivery", "epoch", "headers", "key", "value",
    )  # fmt: skip

    def __init__(
        self, properties: Mapping[str, str], warn: Callable[[str], None] = lambda _: None
    ) -> None:
        self.shown = [
            f
            for f in self._FIELDS
            if _true(properties.get(f"print.{f}", "true" if f == "value" else "false"))
        ]
        self.key_separator = properties.get("key.separator", "\t").encode()
        self.line_separator = properties.get("line.separator", "\n").encode()
        self.headers_separator = properties.get("headers.separator", ",").encode()
        self.null_literal = properties.get("null.literal", "null").encode()
        self.deserializers: dict[str, Callable[[bytes], str | bytes] | None] = {}
        for part in ("key", "value", "headers"):
            name = properties.get(f"{part}.deserializer")
            known = None if name is None else DESERIALIZERS.get(name.strip())
            if name is not None and known is None:
                warn(f"Unable to instantiate a deserializer from {name}")
            self.deserializers[part] = known

    def _data(self, part: str, data: bytes | None) -> bytes:
        present = self.null_literal if data is None else data
        read = self.deserializers[part]
        if read is None:
            return present
        shown = read(present)
        return shown if isinstance(shown, bytes) else shown.encode()

    def _field(self, name: str, record: Record) -> bytes:
        if name == "timestamp":
            kind = TIMESTAMP_TYPES.get(record.timestamp_type)
            return b"NO_TIMESTAMP" if kind is None else f"{kind}:{record.timestamp}".encode()
        if name == "partition":
            return f"Partition:{record.partition}".encode()
        if name == "offset":
            return f"Offset:{record.offset}".encode()
        if name == "delivery":
            return b"Delivery:NOT_PRESENT"  # a share group's delivery count; none here
        if name == "epoch":
            epoch = record.leader_epoch
            return b"Epoch:NOT_PRESENT" if epoch is None or epoch < 0 else f"Epoch:{epoch}".encode()
        if name == "headers":
            if not record.headers:
                return b"NO_HEADERS"
            return self.headers_separator.join(
                k.encode() + b":" + self._data("headers", v) for k, v in record.headers
            )
        return self._data(name, record.key if name == "key" else record.value)

    def format(self, record: Record) -> bytes:
        """The record's bytes: its fields joined by the key separator, then the line
        separator, as Kafka writes them."""
        if not self.shown:
            return b""
        return self.key_separator.join(self._field(f, record) for f in self.shown) + (
            self.line_separator
        )

    def log_line(self, record: Record) -> str | None:
        """What ``LoggingMessageFormatter`` logs beside the record: none for this one."""
        return None


class LoggingFormatter(Formatter):
    """Kafka's ``LoggingMessageFormatter``: the default output, and a line logged per record
    (``CreateTime:1700000000000, key:k, value:v``)."""

    def log_line(self, record: Record) -> str | None:
        kind = TIMESTAMP_TYPES.get(record.timestamp_type)
        stamp = "" if kind is None else f"{kind}:{record.timestamp}, "
        key = "null " if record.key is None else record.key.decode("utf-8", "replace") + ", "
        value = "null" if record.value is None else record.value.decode("utf-8", "replace")
        return f"{stamp}key:{key}value:{value}"


class NoOpFormatter(Formatter):
    """Kafka's ``NoOpMessageFormatter``: prints nothing."""

    def format(self, record: Record) -> bytes:
        return b""


def create_formatter(
    name: str, properties: Mapping[str, str], warn: Callable[[str], None] = lambda _: None
) -> Formatter:
    """The formatter of Kafka's class ``name`` (one of :data:`FORMATTERS`)."""
    kinds: dict[str, type[Formatter]] = dict(
        zip(FORMATTERS, (Formatter, LoggingFormatter, NoOpFormatter), strict=True)
    )
    kind = kinds.get(name.strip())
    if kind is None:
        raise FormatError(
            f"java.lang.ClassNotFoundException: {name} (formatters: {', '.join(FORMATTERS)})"
        )
    return kind(properties, warn)
