"""An integer configuration value, read as Kafka's ``ConfigDef`` reads one and refused in its
words (``Invalid value x for configuration segment.bytes: Not a number of type LONG``).

Every layer that reads ``.properties`` keys (the log's topic settings, the controller's, a
node's, a broker's data path, the client tools') parses its integers here, each raising its own
exception class: :func:`parse_int_config` takes the class, Kafka's type name (``INT`` or
``LONG``) and the minimum, and leaves looking the key up, and any default, to the caller.
"""

from __future__ import annotations

from collections.abc import Callable


def invalid_value(key: str, value: object, reason: str) -> str:
    """Kafka's ``ConfigException`` message for a refused value of ``key``."""
    return f"Invalid value {value} for configuration {key}: {reason}"


def parse_int_config(
    key: str,
    text: str,
    *,
    minimum: int | None = None,
    type_name: str = "INT",
    error: Callable[[str], Exception] = ValueError,
    show_parsed: bool = False,
) -> int:
    """The integer ``text`` (blanks around it allowed) given for ``key``; ``error(message)`` is
    raised for text that is not an integer (the message quotes ``text`` and says ``Not a number
    of type`` ``type_name``) and for a value below ``minimum`` (``Value must be at least``; the
    message quotes the parsed value with ``show_parsed``, as Kafka's ``Range`` validator does,
    else ``text`` as written)."""
    try:
        value = int(text.strip())
    except ValueError:
        raise error(invalid_value(key, text, f"Not a number of type {type_name}")) from None
    if minimum is not None and value < minimum:
        shown = value if show_parsed else text
        raise error(invalid_value(key, shown, f"Value must be at least {minimum}"))
    return value
