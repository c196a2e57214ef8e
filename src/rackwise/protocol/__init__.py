"""Kafka's wire protocol, bytes in and bytes out (pure: no sockets), built on kio and wrapped so
that the rest of rackwise never imports kio.

* :mod:`~rackwise.protocol.framing`: size-prefixed frames; :class:`FrameDecoder` cuts a stream
  into frames and refuses a size below 0 or above ``socket.request.max.bytes``.
* :mod:`~rackwise.protocol.header`: request headers v1/v2, response headers v0/v1, and which
  version a message uses (ApiVersions responses: always v0).
* :mod:`~rackwise.protocol.apis`: the APIs served per listener, their version ranges (as Kafka
  4.1 advertises them, intersected with kio's classes) and version negotiation.
* :mod:`~rackwise.protocol.server`: a request frame to a :class:`Request`, a ready error
  :class:`Reply` or a :class:`Close`, as Kafka's SocketServer decides; responses
  (:class:`Response`: what a handler answers) to frames.
* :mod:`~rackwise.protocol.client`: requests to frames, response frames to messages.
* :mod:`~rackwise.protocol.api_versions`: ApiVersions responses with Kafka's rules.
* :mod:`~rackwise.protocol.messages`: rackwise's own messages (CreateReplicaPlacement),
  schema first (``schemas/*.json``), with the metadata records' schema loader and codec.
* :mod:`~rackwise.protocol.values`: :func:`make` builds any message from plain values.
* :mod:`~rackwise.protocol.fetch_response`: Fetch responses written around their record
  batches, as buffers (:func:`encode_response_buffers`; a handler may answer with
  :class:`FetchResponseValues`, plain values, and skip building the message).
* :mod:`~rackwise.protocol.produce_response`: Produce responses from plain values
  (:class:`ProduceResponseValues`), the same way; and
  :mod:`~rackwise.protocol.fetch_request` Fetch requests (:class:`FetchRequestValues`, which
  :func:`encode_request` takes); :mod:`~rackwise.protocol.fetch_response_reader` Fetch
  responses read as plain values (:class:`FetchAnswer`, :func:`decode_fetch_answer`).

Kafka's message classes (kio's) are reached through :func:`request_class` and
:func:`response_class` (:func:`response_to` answers a decoded request in its own API and
version); unknown tagged fields are skipped everywhere.
"""

from collections.abc import Mapping
from typing import Any

from rackwise.protocol.api_versions import (
    FinalizedFeature,
    SupportedFeature,
    advertised_versions,
    api_versions_response,
)
from rackwise.protocol.apis import (
    SUPPORTED,
    ApiKey,
    ApiSpec,
    Listener,
    api_name,
    apis_for,
    message_class,
    negotiate,
    negotiate_with,
)
from rackwise.protocol.client import decode_fetch_answer, decode_response, encode_request
from rackwise.protocol.errors import (
    CorrelationIdMismatchException,
    MalformedResponseError,
    MessageEncodeError,
    ProtocolError,
    UnsupportedVersionException,
    error_name,
)
from rackwise.protocol.fetch_request import FetchRequestValues
from rackwise.protocol.fetch_response import FetchResponseValues, encode_fetch_response
from rackwise.protocol.fetch_response_reader import FetchAnswer
from rackwise.protocol.framing import DEFAULT_MAX_REQUEST_BYTES, FrameDecoder, Frames, frame
from rackwise.protocol.header import RequestHeader
from rackwise.protocol.outcomes import Close, Outcome, Reply, Request, Response
from rackwise.protocol.produce_response import ProduceResponseValues
from rackwise.protocol.server import decode_request, encode_response, encode_response_buffers
from rackwise.protocol.values import field_names, make, millis


def request_class(api_key: int, version: int) -> type:
    """The request message class of ``api_key`` at ``version`` (Kafka's or our own)."""
    return message_class(api_key, version, "request")


def response_class(api_key: int, version: int) -> type[Response]:
    """The response message class of ``api_key`` at ``version`` (Kafka's or our own)."""
    cls: type[Response] = message_class(api_key, version, "response")
    return cls


def response_to(body: Any, values: Mapping[str, Any]) -> Response:
    """The response to the decoded request ``body``, in its API and version, from ``values``."""
    cls = type(body)
    return make(response_class(int(cls.__api_key__), int(cls.__version__)), values)


__all__ = [
    "DEFAULT_MAX_REQUEST_BYTES",
    "SUPPORTED",
    "ApiKey",
    "ApiSpec",
    "Close",
    "CorrelationIdMismatchException",
    "FetchAnswer",
    "FetchRequestValues",
    "FetchResponseValues",
    "FinalizedFeature",
    "FrameDecoder",
    "Frames",
    "Listener",
    "MalformedResponseError",
    "MessageEncodeError",
    "Outcome",
    "ProduceResponseValues",
    "ProtocolError",
    "Reply",
    "Request",
    "RequestHeader",
    "Response",
    "SupportedFeature",
    "UnsupportedVersionException",
    "advertised_versions",
    "api_name",
    "api_versions_response",
    "apis_for",
    "decode_fetch_answer",
    "decode_request",
    "decode_response",
    "encode_fetch_response",
    "encode_request",
    "encode_response",
    "encode_response_buffers",
    "error_name",
    "field_names",
    "frame",
    "make",
    "message_class",
    "millis",
    "negotiate",
    "negotiate_with",
    "request_class",
    "response_class",
    "response_to",
]
