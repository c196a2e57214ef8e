"""Values a peer chose, made safe to write into a log line (a broker's rack, a cluster id, a
client id, an error message that quotes a request).

Goals
    A value sent over the network never forges a log line: a newline in a rack cannot end the
    line that reports it and start one that looks like the process's own. The escaped form
    stays readable and tells exactly what was sent.

Constraints
    * One helper, :func:`loggable`, applied where the value enters the log call (the ``%s``
      argument), not inside the value: records, responses and errors keep the value as sent.
    * Unambiguous: every printable character stays as it is except the backslash, which is
      doubled, so an escape sequence in the output can only come from the escaping.
    * Cheap for the common case: a value without a backslash and with only printable
      characters is returned as is.

Algorithm
    For each character: ``\\`` becomes ``\\\\``; a printable one (``str.isprintable``, which
    keeps the ASCII space) stays; ``\\n``, ``\\r`` and ``\\t`` become those two-character
    escapes; any other character (C0 and C1 controls, DEL, the line and paragraph separators
    U+2028 and U+2029, format characters) becomes ``\\xNN``, ``\\uNNNN`` or ``\\UNNNNNNNN`` as
    Python writes it.

Worked example
    ``loggable("/dc1/r1\\n2024-01-01T00:00:00.000Z INFO controller 1 forged")`` is
    ``/dc1/r1\\\\n2024-01-01T00:00:00.000Z INFO controller 1 forged``: one line, the newline
    shown as the two characters backslash and n. ``loggable(None)`` is ``None``.
"""

from __future__ import annotations

from typing import Final

_SHORT_ESCAPES: Final = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_BYTE_LIMIT: Final = 0x100
_BMP_LIMIT: Final = 0x10000


def loggable(value: object) -> str:
    """``str(value)`` with every character that could break or forge a log line escaped
    (module docstring)."""
    text = value if isinstance(value, str) else str(value)
    if text.isprintable() and "\\" not in text:
        return text
    return "".join(_escape(char) for char in text)


def _escape(char: str) -> str:
    short = _SHORT_ESCAPES.get(char)
    if short is not None:
        return short
    if char.isprintable():
        return char
    code = ord(char)
    if code < _BYTE_LIMIT:
        return f"\\x{code:02x}"
    if code < _BMP_LIMIT:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"
