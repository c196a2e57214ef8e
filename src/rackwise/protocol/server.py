"""The server side: a request frame in, an :data:`~rackwise.protocol.outcomes.Outcome` out; a
response message in, its frame out. No sockets: the network layer feeds frames from a
:class:`~rackwise.protocol.framing.FrameDecoder` and writes what comes back.

Goals
    Malformed input never raises: every frame ends as a decoded :class:`Request`, a ready
    :class:`Reply` or a :class:`Close`, and each case does what Kafka's ``SocketServer`` and
    ``KafkaApis`` do, so clients see Kafka's behaviour:

    ====================================================== =======================================
    the frame                                              outcome (Kafka's source)
    ====================================================== =======================================
    size < 0 or > ``socket.request.max.bytes``            Close: ``Invalid receive (size = N)``
                                                           (FrameDecoder; ``NetworkReceive``)
    too short for api key, version, correlation id,        Close (``RequestHeader.parse`` fails,
    client id, or header tagged fields                     ``processCompletedReceives`` closes)
    api key unknown to Kafka and to rackwise               Close: ``Error parsing request header.
                                                           Our best guess of the apiKey is: N``
    api key not served on this listener, or a version      Close: ``Received request api key K
    outside its range (any API but ApiVersions)            with version V which is not enabled``
                                                           (``parseRequestHeader``)
    ApiVersions of a version outside 0-4                   Reply: v0 response, UNSUPPORTED_VERSION
                                                           (35), listing ApiVersions' range; the
                                                           body is not read (``RequestContext``)
    ApiVersions v3+ with a malformed client software       Reply: INVALID_REQUEST (42), in the
    name or version                                        request's version (``KafkaApis``)
    a body that does not decode (truncated, a null in a    Close: ``Error getting request for
    non-nullable field, a bad length, bad UTF-8)           apiKey: K, apiVersion: V`` (``Request
                                                           Context.parseRequest``)
    bytes left after the body                              ignored, as Kafka ignores them
    unknown tagged fields (header or body, any depth)      skipped (KIP-482)
    anything else                                          Request, for the API's handler
    ====================================================== =======================================

    One deviation: Kafka decodes invalid UTF-8 in a body's strings as U+FFFD, kio refuses it,
    so such a request is closed instead of handled. (The client id is decoded leniently.)

Constraints
    Pure: bytes in, values out. The response to a request uses the request's version (only the
    UNSUPPORTED_VERSION fallback answers in v0) and the response header version of that API
    version: v1 if flexible, v0 if not, v0 always for ApiVersions.

Algorithm
    Read the api key and version (4 bytes) without committing to a header version; look the API
    up in the listener's table; from its first flexible version choose header v1 or v2; parse
    the header; decode the body with the version's class through
    :mod:`rackwise.protocol.tolerant`, which skips unknown tags and refuses an array claiming
    more items than there are bytes left (kio's native reader would try to reserve them).

Worked example
    The 11 bytes ``00 12 00 09 00 00 00 07 ff ff 00`` (ApiVersions v9, correlation id 7, null
    client id, no tagged fields: v9 would be flexible) on either listener: Reply with the
    frame ``00 00 00 10`` (16 bytes follow), ``00 00 00 07`` (correlation id, header v0),
    ``00 23`` (error 35), ``00 00 00 01`` (one entry), ``00 12 00 00 00 04`` (ApiVersions 0-4).
"""

from __future__ import annotations

from typing import Any

from rackwise.common.error_codes import INVALID_REQUEST, UNSUPPORTED_VERSION
from rackwise.protocol import api_versions
from rackwise.protocol.apis import (
    SUPPORTED,
    ApiKey,
    Listener,
    apis_for,
    constant_name,
    is_known_api,
)
from rackwise.protocol.bodies import BODY_DECODE_ERRORS, read_body, write_body
from rackwise.protocol.fetch_request_reader import read_fetch_request
from rackwise.protocol.fetch_response import Buffer, FetchResponseValues, encode_fetch_response
from rackwise.protocol.framing import frame
from rackwise.protocol.header import (
    HeaderError,
    RequestHeader,
    encode_response_header,
    parse_request_header,
    peek_api,
)
from rackwise.protocol.outcomes import Close, Outcome, Reply, Request
from rackwise.protocol.produce_request_reader import read_produce_request
from rackwise.protocol.produce_response import ProduceResponseValues, write_produce_response


def decode_request(data: bytes | memoryview, listener: Listener) -> Outcome:
    """What to do with one request frame (without its size prefix) received on ``listener``
    (bytes, or a view of them: a Produce request's records are views of ``data``, which the
    broker stamps in place when the view is writable)."""
    prefix = peek_api(data)
    if prefix is None:
        return Close(f"Error parsing request header: the request is {len(data)} bytes long")
    api_key, api_version, correlation_id = prefix
    spec = apis_for(listener).get(api_key)
    if spec is None or (not spec.supports(api_version) and api_key != ApiKey.API_VERSIONS):
        return _not_enabled(api_key, api_version, correlation_id)
    try:
        header = parse_request_header(data, spec.request_header_version(api_version))
    except HeaderError as e:
        return Close(
            f"Error parsing request header. Our best guess of the apiKey is: {api_key} ({e})",
            correlation_id,
            api_key,
            api_version,
        )
    if not spec.supports(api_version):
        response = api_versions.unsupported_version_response()
        return _reply(header, response, UNSUPPORTED_VERSION, "unsupported version")
    body: Any
    try:
        if api_key == ApiKey.PRODUCE:
            body = read_produce_request(data, header.size, api_version)
        elif api_key == ApiKey.FETCH and listener is Listener.BROKER:
            body = read_fetch_request(data, header.size, api_version)
        else:  # kio reads read-only buffers only
            readable = data if isinstance(data, bytes) else memoryview(data).toreadonly()
            body, _ = read_body(spec.request_class(api_version), readable, header.size)
    except BODY_DECODE_ERRORS as e:
        return Close(
            f"Error getting request for apiKey: {constant_name(api_key)}, "
            f"apiVersion: {api_version}: {type(e).__name__}: {e}",
            correlation_id,
            api_key,
            api_version,
        )
    if api_key == ApiKey.API_VERSIONS and not _valid_client_software(body):
        response = api_versions.invalid_request_response(api_version)
        return _reply(header, response, INVALID_REQUEST, "invalid client software")
    return Request(header, spec, body)


def encode_response(header: RequestHeader, response: Any) -> bytes:
    """The frame (size prefix included) answering the request of ``header`` with ``response``,
    which must be the response class of the request's API and version."""
    buffers = encode_response_buffers(header, response)
    first = buffers[0]
    return first if len(buffers) == 1 and isinstance(first, bytes) else b"".join(buffers)


def encode_response_buffers(header: RequestHeader, response: Any) -> list[Buffer]:
    """:func:`encode_response` as buffers to write in order (``writer.writelines``): a Fetch
    response refers to its record batches instead of copying them (see
    :mod:`rackwise.protocol.fetch_response`; it may also be given as
    :class:`~rackwise.protocol.fetch_response.FetchResponseValues`), any other is one
    buffer (a Produce response may be given as
    :class:`~rackwise.protocol.produce_response.ProduceResponseValues`)."""
    if isinstance(response, FetchResponseValues):
        return encode_fetch_response(header, response)
    if isinstance(response, ProduceResponseValues):
        return [_produce_frame(header, response)]
    version = _check_response(header, response)
    if header.api_key == ApiKey.FETCH:
        return encode_fetch_response(header, response)
    spec = SUPPORTED[header.api_key]
    head = encode_response_header(header.correlation_id, spec.response_header_version(version))
    return [frame(head + write_body(response))]


def _produce_frame(header: RequestHeader, response: ProduceResponseValues) -> bytes:
    if header.api_key != ApiKey.PRODUCE or response.version != header.api_version:
        raise ValueError(
            f"BUG: a Produce v{response.version} response does not answer api key "
            f"{header.api_key} version {header.api_version}"
        )
    spec = SUPPORTED[ApiKey.PRODUCE]
    head = encode_response_header(
        header.correlation_id, spec.response_header_version(response.version)
    )
    return frame(head + write_produce_response(response.version, response.values))


def _check_response(header: RequestHeader, response: Any) -> int:
    """The version of ``response``, checked to answer the request of ``header``."""
    cls = type(response)
    api_key = int(getattr(cls, "__api_key__", -1))
    version = int(getattr(cls, "__version__", -1))
    spec = SUPPORTED.get(api_key)
    if (
        spec is None
        or api_key != header.api_key
        or not spec.supports(version)
        or cls is not spec.response_class(version)
    ):
        raise ValueError(
            f"BUG: {cls.__qualname__} is not a response to api key {header.api_key} "
            f"version {header.api_version}"
        )
    # Only an ApiVersions request of a version we lack is answered in another version: v0.
    fallback = version == 0 and not spec.supports(header.api_version)
    if version != header.api_version and not fallback:
        raise ValueError(
            f"BUG: a version {version} response to a version {header.api_version} request "
            f"of {spec.name}"
        )
    return version


def _not_enabled(api_key: int, api_version: int, correlation_id: int) -> Close:
    if not is_known_api(api_key):
        reason = f"Error parsing request header. Our best guess of the apiKey is: {api_key}"
    else:
        reason = (
            f"Received request api key {constant_name(api_key)} with version {api_version} "
            "which is not enabled"
        )
    return Close(reason, correlation_id, api_key, api_version)


def _reply(header: RequestHeader, response: Any, error_code: int, reason: str) -> Reply:
    return Reply(header, response, encode_response(header, response), error_code, reason)


def _valid_client_software(body: Any) -> bool:
    if int(type(body).__version__) < 3:
        return True
    return api_versions.is_valid_software_id(
        body.client_software_name
    ) and api_versions.is_valid_software_id(body.client_software_version)
