"""Request and response headers, and which version of each a message uses.

A request header (Kafka's ``RequestHeader.json``)::

    v1: request_api_key int16, request_api_version int16, correlation_id int32,
        client_id nullable string (int16 length, -1 for null, even in flexible versions)
    v2: v1 followed by tagged fields (none are defined; any present are skipped)

A response header is ``correlation_id int32`` (v0), followed by tagged fields in v1.

Which version: a request uses header v2 when its API version is flexible, v1 otherwise (v0,
without client id, is only ControlledShutdown v0's, which rackwise does not serve); a response
uses v1 when flexible, v0 otherwise, except ApiVersions, whose response always has header v0
(KIP-511: a client that does not yet know the server's versions must be able to read it).
For an API version past the schema's last one, the request header version follows the
flexible range (Kafka's generated ``requestHeaderVersion``): ApiVersions v5 has header v2.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final

from rackwise.records.codec import read_uvarint

API_VERSIONS_KEY: Final = 18
"""ApiVersions' api key: its response header is always v0."""
NULL_LENGTH: Final = -1
"""The int16 length of a null legacy string."""
_PREFIX: Final = struct.Struct(">hhi")
_INT16: Final = struct.Struct(">h")
_INT32: Final = struct.Struct(">i")


class HeaderError(ValueError):
    """A request header that does not parse (internal to the layer: the request decoder turns
    it into a closed connection, as Kafka's ``RequestHeader.parse`` failing does)."""


@dataclass(frozen=True, slots=True)
class RequestHeader:
    """A parsed request header. ``client_id`` is "" when the client sent null (as Kafka
    treats it); ``size`` is the number of bytes the header took in the frame."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str
    header_version: int
    size: int


def request_header_version(first_flexible_version: int | None, api_version: int) -> int:
    """2 if ``api_version`` is flexible (at or past the API's first flexible version), else 1."""
    if first_flexible_version is not None and api_version >= first_flexible_version:
        return 2
    return 1


def response_header_version(
    api_key: int, first_flexible_version: int | None, api_version: int
) -> int:
    """1 if ``api_version`` is flexible, else 0; always 0 for ApiVersions."""
    if api_key == API_VERSIONS_KEY:
        return 0
    return request_header_version(first_flexible_version, api_version) - 1


def peek_api(frame: bytes | memoryview) -> tuple[int, int, int] | None:
    """``(api_key, api_version, correlation_id)`` of a request frame, or None if the frame is
    too short to hold them."""
    if len(frame) < _PREFIX.size:
        return None
    api_key, api_version, correlation_id = _PREFIX.unpack_from(frame, 0)
    return api_key, api_version, correlation_id


def parse_request_header(frame: bytes | memoryview, header_version: int) -> RequestHeader:
    """The request header at the start of ``frame``, in ``header_version`` (1 or 2)."""
    if header_version not in (1, 2):
        raise ValueError(f"BUG: request header version {header_version} is not 1 or 2")
    prefix = peek_api(frame)
    if prefix is None:
        raise HeaderError(
            f"a request header needs {_PREFIX.size} bytes, the frame has {len(frame)}"
        )
    api_key, api_version, correlation_id = prefix
    position = _PREFIX.size
    if len(frame) < position + _INT16.size:
        raise HeaderError("the request header ends before its client id")
    (length,) = _INT16.unpack_from(frame, position)
    position += _INT16.size
    client_id = ""
    if length != NULL_LENGTH:
        if length < 0 or position + length > len(frame):
            raise HeaderError(f"the client id's length {length} does not fit the frame")
        # Kafka decodes strings leniently (invalid UTF-8 becomes U+FFFD); so does this.
        client_id = str(frame[position : position + length], "utf-8", errors="replace")
        position += length
    if header_version == 2:
        position = skip_tagged_fields(frame, position)
    return RequestHeader(api_key, api_version, correlation_id, client_id, header_version, position)


def skip_tagged_fields(buffer: bytes | memoryview, position: int) -> int:
    """The position after the tagged-field section starting at ``position``; every field is
    skipped. Raises :class:`HeaderError` if the section does not fit the buffer."""
    try:
        count, position = read_uvarint(buffer, position)
        for _ in range(count):
            _, position = read_uvarint(buffer, position)
            size, position = read_uvarint(buffer, position)
            position += size
    except (IndexError, ValueError):
        raise HeaderError("the request header's tagged fields are truncated") from None
    if position > len(buffer):
        raise HeaderError("a tagged field of the request header runs past the frame")
    return position


def encode_request_header(
    api_key: int, api_version: int, correlation_id: int, client_id: str | None, header_version: int
) -> bytes:
    """A request header in ``header_version`` (1 or 2); a null ``client_id`` is written as null."""
    if header_version not in (1, 2):
        raise ValueError(f"BUG: request header version {header_version} is not 1 or 2")
    out = [_PREFIX.pack(api_key, api_version, correlation_id)]
    if client_id is None:
        out.append(_INT16.pack(NULL_LENGTH))
    else:
        raw = client_id.encode("utf-8")
        out.append(_INT16.pack(len(raw)))
        out.append(raw)
    if header_version == 2:
        out.append(b"\x00")
    return b"".join(out)


def encode_response_header(correlation_id: int, header_version: int) -> bytes:
    """A response header in ``header_version`` (0 or 1)."""
    if header_version not in (0, 1):
        raise ValueError(f"BUG: response header version {header_version} is not 0 or 1")
    return _INT32.pack(correlation_id) + (b"\x00" if header_version == 1 else b"")


def parse_response_header(frame: bytes | memoryview, header_version: int) -> tuple[int, int]:
    """``(correlation_id, position after the header)`` of a response frame."""
    if len(frame) < _INT32.size:
        raise HeaderError(f"a response header needs 4 bytes, the frame has {len(frame)}")
    (correlation_id,) = _INT32.unpack_from(frame, 0)
    position = _INT32.size
    if header_version == 1:
        position = skip_tagged_fields(frame, position)
    return correlation_id, position
