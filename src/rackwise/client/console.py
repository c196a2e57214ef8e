"""The console producer's line reader and the console consumer's formatter, as Kafka's
``LineMessageReader`` and ``DefaultMessageFormatter`` read and print records, and the two
loops that run them on confluent-kafka (librdkafka), as the perf tools do.

Constraints
    * The reader's properties are Kafka's (``parse.key``, ``key.separator`` (tab),
      ``parse.headers``, ``headers.delimiter`` (tab), ``headers.separator`` (``,``),
      ``headers.key.separator`` (``:``), ``null.marker``, ``ignore.error``), so are its
      refusals (``No key separator found on line number 2: 'abc'``).
    * The formatter's are Kafka's too (:mod:`rackwise.client.console_format`); fields come
      in Kafka's order: ``CreateTime:1700000000000<TAB>Partition:0<TAB>Offset:4<TAB>h:v<TAB>
      key<TAB>value``. A record the formatter refuses ends the loop with Kafka's text, or is
      skipped and reported (``--skip-message-on-error``).
    * Pure but for :func:`produce` and :func:`consume`, which import confluent-kafka when
      called.

Worked example
    ``LineReader({"parse.key": "true"}).parse("k1\\tv1")`` is ``(b"k1", b"v1", [])``;
    ``Formatter({"print.key": "true"}).format(record)`` of that record is ``b"k1\\tv1\\n"``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, BinaryIO, Final

from rackwise.client.console_format import FormatError, Formatter, Header, Record
from rackwise.common.errors import RackwiseError

_DISTINCT: Final = (
    ("headers.delimiter", "headers.separator"),
    ("headers.delimiter", "headers.key.separator"),
    ("headers.separator", "headers.key.separator"),
    ("null.marker", "key.separator"),
    ("null.marker", "headers.separator"),
    ("null.marker", "headers.delimiter"),
    ("null.marker", "headers.key.separator"),
)
"""The reader's properties that may not be equal, in the order Kafka checks them."""


class ConsoleError(RackwiseError):
    """A line the reader cannot read, or properties that contradict each other."""


def _true(value: str | None) -> bool:
    return value is not None and value.strip().lower() == "true"


class LineReader:
    """Kafka's ``LineMessageReader`` over ``properties`` (see the module docstring)."""

    def __init__(self, properties: Mapping[str, str]) -> None:
        get = properties.get
        self.parse_key = _true(get("parse.key"))
        self.key_separator = get("key.separator", "\t")
        self.parse_headers = _true(get("parse.headers"))
        self.headers_delimiter = get("headers.delimiter", "\t")
        self.headers_separator = get("headers.separator", ",")
        self.headers_key_separator = get("headers.key.separator", ":")
        self.ignore_error = _true(get("ignore.error"))
        self.null_marker = get("null.marker")
        self.line_number = 0
        values = {
            "key.separator": self.key_separator,
            "headers.delimiter": self.headers_delimiter,
            "headers.separator": self.headers_separator,
            "headers.key.separator": self.headers_key_separator,
            "null.marker": self.null_marker,
        }
        pairs = [(n, values[n], o, values[o]) for n, o in _DISTINCT]
        for name, value, other, other_value in pairs:
            if value is not None and value == other_value:
                raise ConsoleError(f"{name} and {other} may not be equal")

    def _part(self, enabled: bool, line: str, start: int, mark: str, what: str) -> str | None:
        if not enabled:
            return None
        index = line.find(mark, start)
        if index == -1:
            if self.ignore_error:
                return None
            raise ConsoleError(f"No {what} found on line number {self.line_number}: '{line}'")
        return line[start:index]

    def _bytes(self, text: str | None) -> bytes | None:
        return None if text is None or text == self.null_marker else text.encode()

    def parse(self, line: str) -> tuple[bytes | None, bytes | None, list[Header]]:
        """One line's key, value and headers."""
        self.line_number += 1
        headers = self._part(
            self.parse_headers, line, 0, self.headers_delimiter, "headers delimiter"
        )
        start = 0 if headers is None else len(headers) + len(self.headers_delimiter)
        key = self._part(self.parse_key, line, start, self.key_separator, "key separator")
        start += 0 if key is None else len(key) + len(self.key_separator)
        parsed = [] if headers is None or headers == self.null_marker else self._headers(headers)
        return self._bytes(key), self._bytes(line[start:]), parsed

    def _headers(self, text: str) -> list[Header]:
        headers: list[Header] = []
        for pair in re.split(self.headers_separator, text):
            index = pair.find(self.headers_key_separator)
            if index == -1:
                if not self.ignore_error:
                    raise ConsoleError(
                        f"No header key separator found in pair '{pair}' on line number "
                        f"{self.line_number}"
                    )
                headers.append((pair, None))
                continue
            key = pair[:index]
            if key == self.null_marker:
                raise ConsoleError(
                    f"Header keys should not be equal to the null marker '{self.null_marker}' "
                    "as they can't be null"
                )
            headers.append((key, self._bytes(pair[index + len(self.headers_key_separator) :])))
        return headers


# ---- the loops ---------------------------------------------------------------------------------


def produce(
    settings: Mapping[str, Any],
    topic: str,
    lines: Iterable[str],
    reader: LineReader,
    *,
    sync: bool,
    warn: Callable[[str], None],
) -> int:
    """Send one record per line; the number of records that failed."""
    from confluent_kafka import Producer  # noqa: PLC0415

    producer = Producer(dict(settings))
    failed = 0

    def delivered(error: Any, _: Any) -> None:
        nonlocal failed
        if error is not None:
            failed += 1
            warn(f"Error when sending message to topic {topic}: {error.str()}")

    try:
        for line in lines:
            key, value, headers = reader.parse(line.rstrip("\n").removesuffix("\r"))
            sent: Any = headers or None
            producer.produce(topic, value=value, key=key, headers=sent, on_delivery=delivered)
            producer.poll(0)
            if sync:
                producer.flush()
    finally:
        producer.flush()
    return failed


def consume(
    settings: Mapping[str, Any],
    out: BinaryIO,
    formatter: Formatter,
    *,
    topics: list[str] | None,
    pattern: str | None,
    assignment: tuple[str, int, int] | None,
    max_messages: int,
    timeout_ms: int,
    skip_on_error: bool = False,
    log: Callable[[str], None] = lambda _: None,
) -> int:
    """Print records until ``max_messages`` (-1: no bound) or ``timeout_ms`` without one
    (-1: none); the number received. ``assignment`` is (topic, partition, offset) where
    offset -2 is the earliest and -1 the latest. A record the formatter refuses raises
    :class:`ConsumeError` (with the count so far), or with ``skip_on_error`` is logged and
    skipped; ``log`` takes those lines and ``LoggingMessageFormatter``'s."""
    from confluent_kafka import Consumer, TopicPartition  # noqa: PLC0415

    consumer = Consumer(dict(settings))
    count = 0
    try:
        if assignment is not None:
            consumer.assign([TopicPartition(*assignment)])
        else:
            consumer.subscribe([f"^{pattern}"] if pattern is not None else list(topics or ()))
        last = time.monotonic()
        while max_messages < 0 or count < max_messages:
            message = consumer.poll(0.1)
            if message is None or message.error() is not None:
                if timeout_ms >= 0 and time.monotonic() - last > timeout_ms / 1000:
                    break
                continue
            last = time.monotonic()
            count += 1  # counted before it is formatted, as Kafka counts it
            _write(out, formatter, _record(message), count, skip_on_error, log)
    finally:
        consumer.close()
    return count


class ConsumeError(RackwiseError):
    """A record the formatter refused: Kafka's text, and the records received."""

    def __init__(self, text: str, count: int) -> None:
        super().__init__(text)
        self.count = count


def _write(
    out: BinaryIO,
    formatter: Formatter,
    record: Record,
    count: int,
    skip_on_error: bool,
    log: Callable[[str], None],
) -> None:
    try:
        out.write(formatter.format(record))
    except FormatError as e:
        if not skip_on_error:
            raise ConsumeError(f"Unknown error when running consumer: {e}", count) from None
        log(f"ERROR Error processing message, skipping this message: {e}")
        return
    out.flush()
    line = formatter.log_line(record)
    if line is not None:
        log(f"INFO {line}")


def _record(message: Any) -> Record:
    """A confluent-kafka message as the formatter reads it."""
    kind, stamp = message.timestamp()
    epoch = message.leader_epoch() if hasattr(message, "leader_epoch") else None
    return Record(
        int(message.partition()), int(message.offset()), int(kind), int(stamp), message.key(),
        message.value(), tuple(message.headers() or ()), epoch,
    )  # fmt: skip


__all__ = [
    "ConsoleError",
    "ConsumeError",
    "Formatter",
    "Header",
    "LineReader",
    "Record",
    "consume",
    "produce",
]
