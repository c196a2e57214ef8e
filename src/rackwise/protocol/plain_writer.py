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

from rackwise.records.codec import uvarint_bytes as uvarint

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
ZERO_UUID_BYTES: Final = bytes(16)
"""A topic id given as None (kio reads the all-zero uuid so)."""

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

    def topic(
        self,
        topic: Any,
        *,
        by_id: bool,
        name_field: str,
        partitions_field: str,
        where: str,
        partition: Callable[[Any], None],
    ) -> None:
        """One topic of a request or response: its name or id, its partitions (each written by
        ``partition``), its tagged fields (none) when flexible."""
        get = getter(topic)
        self.topic_name_or_id(get, by_id, name_field, where)
        partitions = required(get, partitions_field, where)
        self.array_length(partitions)
        for each in partitions:
            partition(each)
        if self.flexible:
            self.out += b"\x00"

    def topic_name_or_id(self, get: Getter, by_id: bool, name_field: str, where: str) -> None:
        """A topic as the version names it: its id (``topic_id``) or its name."""
        if by_id:
            topic_id = required(get, "topic_id", where)
            self.out += ZERO_UUID_BYTES if topic_id is None else topic_id.bytes
        else:
            self.string(required(get, name_field, where))

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
