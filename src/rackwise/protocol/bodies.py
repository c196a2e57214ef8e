"""Message bodies to bytes and back, whoever defined the class.

Writing: kio's classes (Kafka's APIs) with kio's writer, rackwise's own
(:mod:`rackwise.protocol.specs`) with the compiled record codec (byte for byte what kio
writes). Reading, for both: :mod:`rackwise.protocol.tolerant`, the one reader that neither
trusts an array's claimed length nor fails on an unknown tagged field. (The compiled record
codec reads faster but sizes a ``struct`` format by the claimed count before checking the
buffer; it can read our own messages once it checks the count against the bytes left.)"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from types import MappingProxyType
from typing import IO, Any, Final, cast

from kio.serial import entity_writer
from kio.serial.errors import SerialError

from rackwise.protocol.errors import MessageEncodeError
from rackwise.protocol.specs import OWN_APIS
from rackwise.protocol.tolerant import read_entity
from rackwise.records.codec import DECODE_ERRORS, Codec
from rackwise.records.errors import RecordEncodeError

_OWN_CODECS: Final[Mapping[type, Codec]] = MappingProxyType(
    {cls: codec for api in OWN_APIS.values() for cls, codec in api.codecs.items()}
)
BODY_DECODE_ERRORS: Final = (SerialError, *DECODE_ERRORS)
"""What :func:`read_body` raises on malformed bytes: kio's errors, a ValueError for an error
code Kafka does not define, an IndexError or struct.error from a short buffer."""


class _Sink:
    """The smallest writable kio's writers accept: chunks gathered in a list."""

    __slots__ = ("chunks",)

    def __init__(self) -> None:
        self.chunks: list[bytes] = []

    def write(self, data: bytes) -> int:
        self.chunks.append(bytes(data))
        return len(data)


def read_body(cls: type, buffer: bytes | memoryview, offset: int = 0) -> tuple[Any, int]:
    """One ``cls`` read at ``offset``: ``(message, offset after it)``; raises one of
    :data:`BODY_DECODE_ERRORS` on malformed bytes."""
    message, size = read_entity(cls, buffer, offset)
    return message, offset + size


def write_body(message: Any) -> bytes:
    """The bytes of ``message``; raises :class:`MessageEncodeError` naming the message when a
    value does not fit its field."""
    cls = type(message)
    codec = _OWN_CODECS.get(cls)
    try:
        if codec is not None:
            return codec.encode(message)
        sink = _Sink()
        entity_writer(cls)(cast(IO[bytes], sink), message)
    except RecordEncodeError as e:
        raise MessageEncodeError(str(e)) from None
    except (SerialError, struct.error, TypeError, ValueError, AttributeError, OverflowError) as e:
        raise MessageEncodeError(f"{cls.__qualname__} v{cls.__version__}: {e}") from None
    return b"".join(sink.chunks)
