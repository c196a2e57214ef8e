"""Writing a response straight from plain values: the pieces the hot responses share.

Goals
    The responses a broker sends most (Fetch, Produce) are written without building kio's
    message first (:mod:`~rackwise.protocol.fetch_response`,
    :mod:`~rackwise.protocol.produce_response`), byte for byte what kio writes. This module
    holds what both need: reading a field from a plain mapping or a message object alike, and
    Kafka's encodings of lengths, strings and node endpoints in the legacy and the flexible
    (compact, tagged) form.

Constraints
    Values are taken as :func:`~rackwise.protocol.values.make` takes them (ints, strings,
    mappings, sequences) or as kio's message objects. A missing required field raises
    TypeError naming the struct and the field; a value that does not fit raises what
    ``struct`` raises; callers turn both into
    :class:`~rackwise.protocol.errors.MessageEncodeError`.

Worked example
    ``PlainWriter(flexible=True).string("t")`` appends ``02 74`` (length + 1 as an unsigned
    varint, then the UTF-8 bytes); in the legacy form it appends ``00 01 74``.
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Callable, Mapping, Sequence
from struct import Struct
from typing import Any, Final

REQUIRED: Final = object()
"""What a getter returns for a field that is not there, when asked with this default."""
INT16: Final = Struct(">h")
INT32: Final = Struct(">i")
INT64: Final = Struct(">q")
SMALL_UVARINTS: Final = tuple(bytes((n,)) for n in range(128))
NULL_LENGTH: Final = -1
"""The int32 length of a null array or null records in the legacy (non-flexible) encoding."""
NULL_INT32: Final = INT32.pack(NULL_LENGTH)
_NULL_INT16: Final = INT16.pack(-1)

Getter = Callable[[str, Any], Any]
"""``get(name, default)`` over one struct's values."""


def getter(value: Any) -> Getter:
    """``get(name, default)`` over a plain mapping or a message object."""
    if type(value) is dict or isinstance(value, Mapping):
        return value.get
    return functools.partial(getattr, value)


def required(get: Getter, name: str, where: str) -> Any:
    """The value of field ``name`` of struct ``where``; TypeError when it is missing."""
    value = get(name, REQUIRED)
    if value is REQUIRED:
        raise missing(where, name)
    return value


def missing(where: str, *names: str) -> TypeError:
    return TypeError(f"{where} needs {', '.join(repr(name) for name in names)}")


def uvarint(value: int) -> bytes:
    """``value`` as an unsigned varint."""
    if 0 <= value < 128:
        return SMALL_UVARINTS[value]
    if value < 0:
        raise ValueError(f"an unsigned varint cannot hold {value}")
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def millis(value: Any) -> int:
    """A duration given as milliseconds or as kio's ``timedelta``, in milliseconds."""
    if isinstance(value, datetime.timedelta):
        return round(value.total_seconds() * 1000)
    return int(value)


class PlainWriter:
    """Bytes of one message being written into :attr:`out` (one use)."""

    __slots__ = ("flexible", "out")

    def __init__(self, *, flexible: bool) -> None:
        self.flexible = flexible
        self.out = bytearray()

    def array_length(self, items: Sequence[Any] | None) -> None:
        if self.flexible:
            self.out += uvarint(0 if items is None else len(items) + 1)
        else:
            self.out += NULL_INT32 if items is None else INT32.pack(len(items))

    def string(self, text: str) -> None:
        data = text.encode()
        if self.flexible:
            self.out += uvarint(len(data) + 1)
        else:
            self.out += INT16.pack(len(data))
        self.out += data

    def nullable_string(self, text: str | None) -> None:
        if text is None:
            self.out += b"\x00" if self.flexible else _NULL_INT16
            return
        self.string(text)

    def node_endpoint(self, endpoint: Any) -> None:
        """One ``NodeEndpoint`` (Fetch v16+, Produce v10+: flexible only)."""
        get = getter(endpoint)
        self.out += INT32.pack(required(get, "node_id", "NodeEndpoint"))
        self.string(required(get, "host", "NodeEndpoint"))
        self.out += INT32.pack(required(get, "port", "NodeEndpoint"))
        self.nullable_string(get("rack", None))
        self.out += b"\x00"

    def node_endpoints_tag(self, endpoints: Sequence[Any]) -> None:
        """The top-level tagged fields when ``node_endpoints`` (tag 0) is the only one: none
        when it is empty (its default), else that one field."""
        if not endpoints:
            self.out += b"\x00"
            return
        self.out += b"\x01\x00"  # one tagged field, tag 0
        tagged = PlainWriter(flexible=True)
        tagged.array_length(endpoints)
        for endpoint in endpoints:
            tagged.node_endpoint(endpoint)
        self.out += uvarint(len(tagged.out))
        self.out += tagged.out
