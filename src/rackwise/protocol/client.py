"""The client side: a request message to its frame, a response frame to its message. Used by
brokers talking to the controller and by rackwise's own tools; third-party clients bring their
own.

A request's header version follows its class (v2 if the version is flexible, else v1); the
response header likewise (v1 or v0), and ApiVersions' is always v0. An ApiVersions response
is read as Kafka's client reads it: an UNSUPPORTED_VERSION answer is a v0 body whatever the
request's version, and a body that does not parse at the request's version is tried at v0.
A response that cannot be used raises :class:`~rackwise.protocol.errors.MalformedResponseError`
(the connection should be closed); one for another correlation id raises Kafka's
:class:`~rackwise.protocol.errors.CorrelationIdMismatchException`.
"""

from __future__ import annotations

import struct
from typing import Any, Final

from rackwise.common.error_codes import UNSUPPORTED_VERSION
from rackwise.protocol.apis import ApiKey, constant_name, message_class
from rackwise.protocol.bodies import BODY_DECODE_ERRORS, read_body, write_body
from rackwise.protocol.errors import (
    CorrelationIdMismatchException,
    MalformedResponseError,
    UnsupportedVersionException,
)
from rackwise.protocol.fetch_request import (
    FIRST_FLEXIBLE_VERSION,
    FetchRequestValues,
    write_fetch_request,
)
from rackwise.protocol.fetch_response_reader import FetchAnswer, read_fetch_response
from rackwise.protocol.framing import frame
from rackwise.protocol.header import (
    HeaderError,
    encode_request_header,
    parse_response_header,
)

DEFAULT_CLIENT_ID: Final = "rackwise"
_INT16: Final = struct.Struct(">h")


def encode_request(
    body: Any, correlation_id: int, client_id: str | None = DEFAULT_CLIENT_ID
) -> bytes:
    """The frame (size prefix included) of request message ``body`` (or of a Fetch request
    given as :class:`~rackwise.protocol.fetch_request.FetchRequestValues`)."""
    if isinstance(body, FetchRequestValues):
        version = body.version
        header_version = 2 if version >= FIRST_FLEXIBLE_VERSION else 1
        head = encode_request_header(
            ApiKey.FETCH, version, correlation_id, client_id, header_version
        )
        return frame(head + write_fetch_request(version, body.values))
    cls = type(body)
    api_key = int(getattr(cls, "__api_key__", -1))
    version = int(getattr(cls, "__version__", -1))
    try:
        expected: type | None = message_class(api_key, version, "request")
    except UnsupportedVersionException:
        expected = None
    if expected is not cls:
        raise ValueError(f"BUG: {cls.__qualname__} is not a request message class")
    header_version = 2 if cls.__flexible__ else 1
    head = encode_request_header(api_key, version, correlation_id, client_id, header_version)
    return frame(head + write_body(body))


def decode_response(
    data: bytes | memoryview, api_key: int, api_version: int, correlation_id: int
) -> Any:
    """The response message in ``data`` (a frame without its size prefix) to the request of
    ``api_key``/``api_version`` sent with ``correlation_id``."""
    cls = message_class(api_key, api_version, "response")
    flexible = bool(cls.__flexible__)  # type: ignore[attr-defined]
    header_version = 1 if flexible and api_key != ApiKey.API_VERSIONS else 0
    try:
        received, position = parse_response_header(data, header_version)
    except HeaderError as e:
        raise MalformedResponseError(f"a {constant_name(api_key)} response header: {e}") from None
    if received != correlation_id:
        raise CorrelationIdMismatchException(
            f"Correlation id for response ({received}) does not match request ({correlation_id})"
        )
    if api_key == ApiKey.API_VERSIONS:
        return _api_versions_body(data, position, api_version)
    try:
        body, _ = read_body(cls, data, position)
    except BODY_DECODE_ERRORS as e:
        raise MalformedResponseError(
            f"a {constant_name(api_key)} v{api_version} response does not decode: "
            f"{type(e).__name__}: {e}"
        ) from None
    return body


def decode_fetch_answer(
    data: bytes | memoryview, api_version: int, correlation_id: int
) -> FetchAnswer | Any:
    """A Fetch response frame (without its size prefix) read as plain values
    (:class:`~rackwise.protocol.fetch_response_reader.FetchAnswer`) in the flexible versions;
    an older version's is kio's message, as :func:`decode_response` reads it."""
    if api_version < FIRST_FLEXIBLE_VERSION:
        return decode_response(data, ApiKey.FETCH, api_version, correlation_id)
    try:
        received, position = parse_response_header(data, 1)
    except HeaderError as e:
        raise MalformedResponseError(f"a FETCH response header: {e}") from None
    if received != correlation_id:
        raise CorrelationIdMismatchException(
            f"Correlation id for response ({received}) does not match request ({correlation_id})"
        )
    return read_fetch_response(data, position, api_version)


def _api_versions_body(data: bytes | memoryview, position: int, api_version: int) -> Any:
    """Kafka's ``ApiVersionsResponse.parse``: v0 for UNSUPPORTED_VERSION, else the request's
    version, falling back to v0 when that does not parse."""
    is_unsupported = (
        len(data) >= position + _INT16.size
        and _INT16.unpack_from(data, position)[0] == UNSUPPORTED_VERSION
    )
    versions = [0] if is_unsupported else list(dict.fromkeys((api_version, 0)))
    for version in versions:
        try:
            body, _ = read_body(
                message_class(ApiKey.API_VERSIONS, version, "response"), data, position
            )
            return body
        except BODY_DECODE_ERRORS as e:
            failure = e
    raise MalformedResponseError(
        f"an API_VERSIONS response does not decode: {type(failure).__name__}: {failure}"
    )
