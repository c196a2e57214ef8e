"""Java's ``.properties`` format, as ``java.util.Properties`` reads and writes it: the syntax of
every ``server.properties`` and ``meta.properties`` a node keeps.

Goals
    :func:`parse_properties` reads what ``Properties.load`` reads, key for key;
    :func:`format_properties` writes what ``Properties.store`` writes (through a ``Writer``:
    UTF-8, no ``\\uXXXX`` escapes), so that any value, a newline or a ``#`` in it included,
    reads back as itself.

Constraints
    * Pure: text in, text out. A malformed ``\\uXXXX`` escape raises
      :class:`~rackwise.common.errors.InvalidFormatException` naming the text it is in.
    * Lines end at ``\\n``, ``\\r`` or ``\\r\\n`` only, as Java's ``LineReader`` ends them
      (not at the other characters ``str.splitlines`` splits at, which a value may hold).
    * A later key wins, as ``Properties.load`` does.

Algorithm
    Reading: logical lines are joined at a trailing odd number of backslashes (the leading
    blanks of the next line dropped); blank lines and ``#``/``!`` comment lines are skipped;
    the key ends at the first unescaped ``=``, ``:`` or blank, and one ``=``/``:`` with the
    blanks around it separates it from the value; escapes are ``\\t \\n \\r \\f \\uXXXX`` and
    ``\\x`` for any other ``x``. Writing (``Properties.saveConvert``): backslash, ``\\t \\n \\r
    \\f`` and ``= : # !`` are escaped in keys and values, a blank everywhere in a key but only
    at the start of a value.

Worked example
    ``parse_properties("a = 1\\nb:two\\\\\\n   lines\\n")`` is ``{"a": "1", "b": "twolines"}``;
    ``format_properties({"x": " a=b"}, ["by rackwise"])`` is ``"#by rackwise\\nx=\\\\ a\\\\=b\\n"``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Final

from rackwise.common.errors import InvalidFormatException

_LINE_END: Final = re.compile(r"\r\n|\r|\n")
_BLANKS: Final = " \t\f"
_ESCAPES: Final = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_WRITTEN: Final = {
    "\\": "\\\\",
    "\t": "\\t",
    "\n": "\\n",
    "\r": "\\r",
    "\f": "\\f",
    "=": "\\=",
    ":": "\\:",
    "#": "\\#",
    "!": "\\!",
}


def parse_properties(text: str) -> dict[str, str]:
    """The key/value pairs of a ``.properties`` document (``java.util.Properties.load``)."""
    result: dict[str, str] = {}
    for line in _logical_lines(text):
        key, value = _split_entry(line)
        result[_unescape(key)] = _unescape(value)
    return result


def format_properties(props: Mapping[str, str], comments: Iterable[str] = ()) -> str:
    """A ``.properties`` document: each comment as a ``#`` line, then ``key=value`` lines in
    the mapping's order (``java.util.Properties.store``)."""
    lines = [f"#{comment}" for comment in comments]
    lines.extend(f"{_escape(key, is_key=True)}={_escape(value)}" for key, value in props.items())
    return "\n".join(lines) + "\n"


def _escape(text: str, *, is_key: bool = False) -> str:
    out: list[str] = []
    for i, char in enumerate(text):
        if char == " ":
            out.append("\\ " if is_key or i == 0 else " ")
        else:
            out.append(_WRITTEN.get(char, char))
    return "".join(out)


def _logical_lines(text: str) -> list[str]:
    lines: list[str] = []
    pending: str | None = None
    for raw in _LINE_END.split(text):
        natural = raw.lstrip(_BLANKS)
        if pending is None and (not natural or natural[0] in "#!"):
            continue
        trailing = len(natural) - len(natural.rstrip("\\"))
        continued = trailing % 2 == 1
        piece = natural[:-1] if continued else natural
        pending = piece if pending is None else pending + piece
        if not continued:
            lines.append(pending)
            pending = None
    if pending is not None:
        lines.append(pending)
    return lines


def _split_entry(line: str) -> tuple[str, str]:
    i = 0
    n = len(line)
    while i < n:
        char = line[i]
        if char == "\\":
            i += 2
            continue
        if char in "=:" or char in _BLANKS:
            break
        i += 1
    key = line[:i]
    j = i
    while j < n and line[j] in _BLANKS:
        j += 1
    if j < n and line[j] in "=:":
        j += 1
        while j < n and line[j] in _BLANKS:
            j += 1
    return key, line[j:]


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char != "\\" or i + 1 == len(text):
            if char != "\\":
                out.append(char)
            i += 1
            continue
        escaped = text[i + 1]
        if escaped == "u":
            digits = text[i + 2 : i + 6]
            if len(digits) != 4 or any(c not in "0123456789abcdefABCDEF" for c in digits):
                raise InvalidFormatException(f".properties: malformed \\uxxxx encoding in {text!r}")
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(escaped, escaped))
        i += 2
    return "".join(out)
