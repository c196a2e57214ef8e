"""What the server-side protocol layer tells the server to do with a frame: handle a decoded
request, send a ready error response, or close the connection. Malformed input always ends as
one of these, never as an exception. :class:`Response` is what a handler answers a
:class:`Request` with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from rackwise.protocol.apis import ApiSpec
    from rackwise.protocol.header import RequestHeader


@dataclass(frozen=True, slots=True)
class Close:
    """Close the connection without answering, as Kafka's SocketServer does for a request it
    cannot parse or does not serve. ``reason`` is for the log; the ids are those of the
    request, where its header could be read that far."""

    reason: str
    correlation_id: int | None = None
    api_key: int | None = None
    api_version: int | None = None


@dataclass(frozen=True, slots=True)
class Reply:
    """Send ``frame`` (a whole response, size prefix included) and keep the connection open:
    the request was refused with ``error_code`` before reaching a handler."""

    header: RequestHeader
    response: Any
    frame: bytes
    error_code: int
    reason: str


@dataclass(frozen=True, slots=True)
class Request:
    """A request to hand to the handler of ``api``: ``body`` is the request message (kio's
    class for Kafka's APIs, rackwise's own for ours) of the version in ``header``."""

    header: RequestHeader
    api: ApiSpec
    body: Any


class Response(Protocol):
    """A response message, as a handler returns it for :func:`rackwise.protocol.encode_response`:
    an instance of kio's class for a Kafka API's response, or of rackwise's own, of one version.
    Its fields depend on the API and version; what every one of them has is its API key and
    version (class attributes)."""

    @property
    def __api_key__(self) -> int:
        """The API the message answers (Kafka's api key)."""
        ...

    @property
    def __version__(self) -> int:
        """The version of that API the message is in."""
        ...


Outcome = Request | Reply | Close
"""What :func:`rackwise.protocol.server.decode_request` returns."""
