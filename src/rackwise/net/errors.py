"""Errors of the network layer, in the taxonomy of :mod:`rackwise.common.errors`, with the names
Kafka's client gives the same conditions. All are retriable: the caller may reconnect and retry
(reconnecting is the caller's decision, never this layer's)."""

from __future__ import annotations

from rackwise.common import error_codes as codes
from rackwise.common.errors import RackwiseError


class NetworkException(RackwiseError):
    """Kafka's NETWORK_EXCEPTION: the connection to a peer failed or was lost."""

    error_code = codes.NETWORK_EXCEPTION
    retriable = True


class DisconnectException(NetworkException):
    """Kafka's ``DisconnectException``: the connection closed (or could not be opened) before
    the response to a request arrived."""


class RequestTimedOutException(NetworkException):
    """Kafka's REQUEST_TIMED_OUT: no response (or no connection) within the time allowed. As
    Kafka's ``NetworkClient`` does, the connection is closed when a request times out, since the
    late response would arrive out of turn."""

    error_code = codes.REQUEST_TIMED_OUT


class SaslAuthenticationFailed(NetworkException):
    """Kafka's ``SaslAuthenticationException`` on the client side: the server refused the
    login (SASL_AUTHENTICATION_FAILED, UNSUPPORTED_SASL_MECHANISM, ILLEGAL_SASL_STATE), or
    its answers did not prove it knows the credential. A network failure for the callers that
    reconnect (a broker retries, as Kafka's does, and logs each refusal), but not retriable:
    the same login fails again."""

    error_code = codes.SASL_AUTHENTICATION_FAILED
    retriable = False


class CloseConnection(Exception):
    """Raised by a request handler to close the connection without answering (Kafka closes a
    channel it cannot serve rather than answering nonsense). ``str(e)`` is logged."""
