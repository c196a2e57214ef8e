"""Shared JSON plumbing for the format modules: a strict reader, a writer that prints what
Kafka's Jackson ``ObjectMapper`` prints, and typed field access whose errors say where.

Reading follows Jackson's defaults where they matter to Kafka's tools: ``NaN`` and
``Infinity`` are not JSON, a repeated key keeps its last value, and an "int" is a JSON integer
without fraction or exponent that fits in 32 bits (Kafka decodes with ``JsonNode.isInt``, so
``1.0``, ``true`` and ``2147483648`` are all refused). Unlike Jackson's default we also refuse
text after the document, which Jackson silently ignores.

Writing is Jackson's compact form: no whitespace at all, keys in insertion order, strings with
``\\"``, ``\\\\``, ``\\b``, ``\\t``, ``\\n``, ``\\f``, ``\\r`` short escapes, the other control
characters as ``\\u00XX`` with upper-case hex, and everything else (``/``, non-ASCII) verbatim.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Final, NoReturn

from rackwise.common.errors import InvalidFormatException

INT32_MIN: Final = -(2**31)
INT32_MAX: Final = 2**31 - 1

JsonValue = None | bool | int | str | Sequence["JsonValue"] | Mapping[str, "JsonValue"]
"""What :func:`dumps` accepts (floats are never needed by these formats)."""

_SHORT_ESCAPES: Final = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}
_NEEDS_ESCAPE: Final = re.compile(r'[\x00-\x1f"\\]')
_PREVIEW_LIMIT: Final = 60


def _escape_char(match: re.Match[str]) -> str:
    char = match.group(0)
    return _SHORT_ESCAPES.get(char) or f"\\u{ord(char):04X}"


def dump_string(value: str) -> str:
    """``value`` as a JSON string literal, escaped the way Jackson escapes it."""
    return '"' + _NEEDS_ESCAPE.sub(_escape_char, value) + '"'


def dumps(value: JsonValue) -> str:
    """Compact JSON text for ``value``, byte-identical to Jackson's default output."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return dump_string(value)
    if isinstance(value, Mapping):
        members = (f"{dump_string(key)}:{dumps(item)}" for key, item in value.items())
        return "{" + ",".join(members) + "}"
    return "[" + ",".join(dumps(item) for item in value) + "]"


def preview(value: object) -> str:
    """A short JSON-like rendering of a decoded value for error messages."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        text = repr(value)
    if len(text) > _PREVIEW_LIMIT:
        text = text[: _PREVIEW_LIMIT - 3] + "..."
    return text


def fail(document: str, path: str, problem: str) -> NoReturn:
    """Raise :class:`InvalidFormatException` for ``problem`` at ``path`` in ``document``."""
    where = f"{document}: {path}" if path else document
    raise InvalidFormatException(f"{where}: {problem}")


def _refuse_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a JSON value")


def loads(text: str, document: str) -> object:
    """Decode ``text`` as one JSON document, raising :class:`InvalidFormatException` (naming
    ``document`` and the line and column) if it is not valid JSON."""
    if not isinstance(text, str):
        fail(document, "", f"expected JSON text as a str, got {type(text).__name__}")
    if not text.strip():
        fail(document, "", "the input is empty")
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as error:
        fail(
            document, "", f"not valid JSON: {error.msg} (line {error.lineno}, column {error.colno})"
        )
    except ValueError as error:
        fail(document, "", f"not valid JSON: {error}")
    except RecursionError:
        fail(document, "", "not valid JSON: nested too deeply")


def expect_object(value: object, document: str, path: str) -> dict[str, object]:
    """``value`` if it is a JSON object, else an error naming ``path``."""
    if not isinstance(value, dict):
        fail(document, path, f"expected a JSON object, got {preview(value)}")
    return value


def expect_array(value: object, document: str, path: str) -> list[object]:
    """``value`` if it is a JSON array, else an error naming ``path``."""
    if not isinstance(value, list):
        fail(document, path, f"expected a JSON array, got {preview(value)}")
    return value


def expect_int(value: object, document: str, path: str, *, minimum: int = INT32_MIN) -> int:
    """``value`` if it is a JSON integer in ``[minimum, 2**31 - 1]``; booleans and numbers with a
    fraction or exponent are refused, as Kafka's ``isInt`` check refuses them."""
    if isinstance(value, bool) or not isinstance(value, int):
        fail(document, path, f"expected an integer, got {preview(value)}")
    if value > INT32_MAX or value < INT32_MIN:
        fail(document, path, f"{value} does not fit in a 32-bit signed integer")
    if value < minimum:
        fail(document, path, f"must be at least {minimum}, got {value}")
    return value


def expect_str(value: object, document: str, path: str, *, non_empty: bool = False) -> str:
    """``value`` if it is a JSON string (and, with ``non_empty``, not ``""``)."""
    if not isinstance(value, str):
        fail(document, path, f"expected a string, got {preview(value)}")
    if non_empty and not value:
        fail(document, path, "must not be an empty string")
    return value


def expect_optional_str(value: object, document: str, path: str) -> str | None:
    """``value`` if it is a JSON string or ``null``."""
    if value is None:
        return None
    if not isinstance(value, str):
        fail(document, path, f"expected a string or null, got {preview(value)}")
    return value


def require(obj: Mapping[str, object], key: str, document: str, path: str) -> object:
    """The member ``key`` of ``obj`` (found at ``path``), or an error saying it is missing."""
    if key not in obj:
        fail(document, path, f'missing required field "{key}"')
    return obj[key]


def join(path: str, key: str) -> str:
    """``path.key``, or ``key`` at the top level."""
    return f"{path}.{key}" if path else key
