"""Reading a large JSON document one element at a time.

Kafka's tools print a whole cluster as one JSON object whose bulk is one array (the partitions
of a reassignment, the brokers of a log-dirs report): millions of elements on a single line.
:func:`stream_object` walks the top-level object and decodes the elements of the named arrays
one at a time with the standard library's decoder, so that a reader holds one element, not the
whole document, as Python objects. It is as strict as :func:`rackwise.formats._json.loads`:
``NaN`` and ``Infinity`` are refused, and so is anything after the document; unlike it, a member
named twice at the top level is refused (a streamed array cannot be taken back).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterator
from typing import Final

from rackwise.common.errors import InvalidFormatException
from rackwise.formats._json import fail, preview

STREAMED: Final = object()
"""What :func:`stream_object` leaves in ``members`` for an array whose elements it streamed."""

_WHITESPACE: Final = re.compile(r"[ \t\n\r]*")


def _refuse_constant(name: str) -> object:
    raise ValueError(f"{name} is not a JSON value")


_DECODER: Final = json.JSONDecoder(parse_constant=_refuse_constant)


class _Reader:
    """A position in ``text`` and the document's name for error messages."""

    def __init__(self, text: str, document: str, pos: int) -> None:
        self.text = text
        self.document = document
        self.pos = pos

    def error(self, problem: str, pos: int | None = None) -> InvalidFormatException:
        at = self.pos if pos is None else pos
        line = self.text.count("\n", 0, at) + 1
        column = at - (self.text.rfind("\n", 0, at) + 1) + 1
        return InvalidFormatException(
            f"{self.document}: not valid JSON: {problem} (line {line}, column {column})"
        )

    def skip(self) -> str:
        """Skip whitespace; the next character, or ``""`` at the end."""
        match = _WHITESPACE.match(self.text, self.pos)
        if match is not None:
            self.pos = match.end()
        return self.text[self.pos : self.pos + 1]

    def expect(self, char: str, what: str) -> None:
        if self.skip() != char:
            raise self.error(f"Expecting {what}")
        self.pos += 1

    def value(self) -> object:
        self.skip()
        try:
            value, self.pos = _DECODER.raw_decode(self.text, self.pos)
        except json.JSONDecodeError as error:
            raise self.error(error.msg, error.pos) from None
        except ValueError as error:
            raise self.error(str(error)) from None
        except RecursionError:
            raise self.error("nested too deeply") from None
        return value

    def array(self) -> Iterator[object]:
        """The elements of the array at the current position, one at a time."""
        self.expect("[", "'['")
        if self.skip() == "]":
            self.pos += 1
            return
        while True:
            yield self.value()
            if self.skip() == "]":
                self.pos += 1
                return
            self.expect(",", "',' delimiter")


def stream_object(
    text: str,
    document: str,
    streamed: Collection[str],
    members: dict[str, object],
    start: int = 0,
) -> Iterator[tuple[str, object]]:
    """Read the JSON object at ``text[start:]``: yield ``(key, element)`` for each element of
    an array member whose key is in ``streamed`` (leaving :data:`STREAMED` in ``members``), and
    put every other member into ``members`` as it is read.

    Raises :class:`InvalidFormatException` naming ``document`` (with line and column for text
    that is not JSON) as soon as the problem is reached.
    """
    reader = _Reader(text, document, start)
    if reader.skip() not in ("{", ""):
        fail(document, "", f"expected a JSON object, got {preview(reader.value())}")
    reader.expect("{", "'{'")
    if reader.skip() == "}":
        reader.pos += 1
    else:
        while True:
            if reader.skip() != '"':
                raise reader.error("Expecting property name enclosed in double quotes")
            key = reader.value()
            assert isinstance(key, str)
            if key in members:
                fail(document, key, "member appears more than once")
            reader.expect(":", "':' delimiter")
            if key in streamed and reader.skip() == "[":
                members[key] = STREAMED
                for item in reader.array():
                    yield key, item
            else:
                members[key] = reader.value()
            if reader.skip() == "}":
                reader.pos += 1
                break
            reader.expect(",", "',' delimiter")
    if reader.skip():
        raise reader.error("Extra data")
