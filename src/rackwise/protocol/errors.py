"""Errors of the protocol layer, in the taxonomy of :mod:`rackwise.common.errors`.

Malformed input from a peer never raises on the server side: :mod:`rackwise.protocol.server`
answers with a typed outcome instead. These are raised where the caller is in the wrong (a
message that does not fit its schema) or, on the client side, where the peer's answer cannot be
used.
"""

from __future__ import annotations

from rackwise.common import error_codes as codes
from rackwise.common.error_table import describe
from rackwise.common.errors import RackwiseError


class ProtocolError(RackwiseError):
    """Base of the protocol layer's errors."""


class MessageEncodeError(ProtocolError, ValueError):
    """A message that cannot be encoded: a value outside its field's type, a null where the
    version does not allow one. The message names the class, the version and the field."""


class UnsupportedVersionException(ProtocolError):
    """Kafka's UNSUPPORTED_VERSION: no version of an API both sides support, or an API the peer
    does not offer (the message is Kafka's, ``NodeApiVersions.latestUsableVersion``); the
    controller raises it too, for a broker that does not support a finalized feature level."""

    error_code = codes.UNSUPPORTED_VERSION


class MalformedResponseError(ProtocolError):
    """A response that does not decode as the answer to the request sent (Kafka's client throws
    a SchemaException): the connection cannot be trusted any more."""


class CorrelationIdMismatchException(MalformedResponseError):
    """Kafka's CorrelationIdMismatchException: a response for another request than the one
    awaited. The message is Kafka's."""


def error_name(code: int) -> str:
    """Kafka's name of an error code (``Errors``, :mod:`rackwise.common.error_table`), e.g.
    ``DUPLICATE_BROKER_REGISTRATION`` for 101; ``UNKNOWN_ERROR_CODE`` for a code Kafka does not
    define."""
    error = describe(code)
    return error.name if error is not None else "UNKNOWN_ERROR_CODE"
