"""An asyncio client connection speaking Kafka's protocol (Kafka's ``NetworkClient`` for one
node, without its reconnect logic: reconnecting is the caller's decision).

Goals
    Connect with a timeout, learn the peer's API versions (ApiVersions), send request messages
    and await their responses; several requests may be in flight at once (pipelined), each
    matched to its response by correlation id.

Constraints
    * A Kafka server answers one connection's requests in order, so responses are matched in
      the order the requests were sent and a response with another correlation id is a broken
      connection (:class:`~rackwise.protocol.CorrelationIdMismatchException`).
    * A request that times out closes the connection (its response would come out of turn), as
      Kafka's client does; every request still waiting then fails with
      :class:`~rackwise.net.errors.DisconnectException`. Nothing is retried here.
    * A response frame larger than ``max_response_bytes`` closes the connection.

Algorithm
    :meth:`KafkaConnection.send` encodes the request with the next correlation id, records
    (api key, version, correlation id, future) in a FIFO, writes the frame; one reader task
    reads each response frame whole (a large one straight from the socket into a buffer of
    its own, :class:`~rackwise.net.frames.FrameStream`) and resolves the oldest waiting future
    with :func:`~rackwise.protocol.decode_response`.

Worked example
    ``conn = await KafkaConnection.connect("127.0.0.1", 9093)``; ``await
    conn.negotiate_versions()`` sends ApiVersions v4 (retrying in v0 if the peer answers
    UNSUPPORTED_VERSION) and keeps the peer's ranges; ``await conn.request(ApiKey.CREATE_TOPICS,
    topics=[...], timeout_ms=30000)`` sends CreateTopics at the highest version both speak.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import ssl
import struct
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

from rackwise.common.error_codes import UNSUPPORTED_VERSION
from rackwise.net.errors import DisconnectException, RequestTimedOutException
from rackwise.net.frames import STAGING_BYTES, FrameStream
from rackwise.net.framing import OFF_LOOP_BYTES
from rackwise.net.sasl_client import SaslLogin, authenticate, login_for
from rackwise.net.tls import USE_DEFAULT, UseDefault, client_tls
from rackwise.protocol import (
    ApiKey,
    FetchAnswer,
    FetchRequestValues,
    ProtocolError,
    decode_fetch_answer,
    decode_response,
    encode_request,
    make,
    negotiate_with,
    request_class,
)
from rackwise.protocol.framing import size_refused

DEFAULT_CONNECT_TIMEOUT_S: Final = 10.0
DEFAULT_REQUEST_TIMEOUT_S: Final = 30.0
"""Kafka's ``request.timeout.ms`` default."""
DEFAULT_MAX_RESPONSE_BYTES: Final = 1 << 30
"""The largest response frame accepted (a metadata snapshot can be large)."""
LATEST_API_VERSIONS: Final = 4
_SIZE: Final = struct.Struct(">i")


@dataclass(slots=True)
class _InFlight:
    api_key: int
    api_version: int
    correlation_id: int
    future: asyncio.Future[Any]
    plain: bool = False
    """A Fetch answer read as plain values (:func:`~rackwise.protocol.decode_fetch_answer`)."""


class KafkaConnection:
    """One connection to a Kafka-protocol server (see the module docstring). Build it with
    :meth:`connect`; :meth:`close` ends it. Usable as an async context manager."""

    def __init__(
        self,
        stream: FrameStream,
        *,
        address: tuple[str, int],
        client_id: str | None = "rackwise",
        request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        self.address = address
        self.client_id = client_id
        self.request_timeout_s = request_timeout_s
        self._stream = stream
        self.max_response_bytes = max_response_bytes
        self._correlation_ids = itertools.count(1)
        self._in_flight: collections.deque[_InFlight] = collections.deque()
        self._closed_because: str | None = None
        self._api_versions: Mapping[int, tuple[int, int]] | None = None
        self._reader_task = asyncio.get_running_loop().create_task(self._read_responses())

    @classmethod
    async def connect(
        cls,
        host: str,
        port: int,
        *,
        timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
        client_id: str | None = "rackwise",
        request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        tls: ssl.SSLContext | UseDefault | None = USE_DEFAULT,
    ) -> KafkaConnection:
        """A connection to ``host:port`` (over TLS with ``tls``; by default the context
        :func:`~rackwise.net.tls.use_client_tls` set, plaintext if none); raises
        :class:`RequestTimedOutException` after ``timeout_s`` and :class:`DisconnectException`
        if the connection is refused or its TLS handshake fails."""
        context = client_tls() if isinstance(tls, UseDefault) else tls
        loop = asyncio.get_running_loop()
        stream = FrameStream()  # uvloop answers with its TLS protocol, not this one
        try:
            if context is None:
                opening = loop.create_connection(lambda: stream, host, port)
            else:
                opening = loop.create_connection(
                    lambda: stream, host, port, ssl=context, ssl_handshake_timeout=timeout_s
                )
            async with asyncio.timeout(timeout_s):  # not wait_for: 3.11's may lose a cancel
                await opening
        except ssl.SSLError as e:
            raise DisconnectException(
                f"Connection to {host}:{port} failed: SSL handshake failed: {e}"
            ) from None
        except TimeoutError:
            raise RequestTimedOutException(
                f"Connection to {host}:{port} timed out after {timeout_s:g} s"
            ) from None
        except ConnectionRefusedError:
            raise DisconnectException(f"Connection to {host}:{port} refused") from None
        except OSError as e:
            raise DisconnectException(
                f"Connection to {host}:{port} failed: {e.strerror or e or type(e).__name__}"
            ) from None
        connection = cls(
            stream,
            address=(host, port),
            client_id=client_id,
            request_timeout_s=request_timeout_s,
            max_response_bytes=max_response_bytes,
        )
        login = login_for(host, port)
        if login is not None:  # this process logs in wherever it connects (sasl_client)
            try:
                async with asyncio.timeout(timeout_s):
                    await connection._login(login)
            except TimeoutError:
                await connection.close()
                raise RequestTimedOutException(
                    f"Authentication with {host}:{port} timed out after {timeout_s:g} s"
                ) from None
            except BaseException:
                await connection.close()
                raise
        return connection

    async def _login(self, login: SaslLogin) -> None:
        await self.negotiate_versions()
        await authenticate(self, login)

    # ---- state ---------------------------------------------------------------------------

    @property
    def is_closed(self) -> bool:
        return self._closed_because is not None

    @property
    def num_in_flight(self) -> int:
        return len(self._in_flight)

    @property
    def api_versions(self) -> Mapping[int, tuple[int, int]]:
        """The peer's API version ranges (api key -> (min, max)), once negotiated."""
        if self._api_versions is None:
            raise RuntimeError("BUG: negotiate_versions() has not been called on this connection")
        return self._api_versions

    def version_for(self, api_key: int) -> int:
        """The highest version of ``api_key`` both sides speak (after
        :meth:`negotiate_versions`); raises UnsupportedVersionException if there is none."""
        return negotiate_with(api_key, self.api_versions)

    # ---- requests ------------------------------------------------------------------------

    async def negotiate_versions(self, *, timeout_s: float | None = None) -> Any:
        """Send ApiVersions (v4, or v0 again if the peer does not speak v4), keep the peer's
        ranges for :meth:`version_for`, and return the response."""
        response = await self.send(
            make(
                request_class(ApiKey.API_VERSIONS, LATEST_API_VERSIONS),
                client_software_name="rackwise",
                client_software_version="1",
            ),
            timeout_s=timeout_s,
        )
        if int(response.error_code) == UNSUPPORTED_VERSION:
            response = await self.send(
                make(request_class(ApiKey.API_VERSIONS, 0)), timeout_s=timeout_s
            )
        self._api_versions = MappingProxyType(
            {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in response.api_keys}
        )
        return response

    async def request(
        self,
        api_key: int,
        values: Mapping[str, Any] | None = None,
        /,
        *,
        version: int | None = None,
        timeout_s: float | None = None,
        **fields: Any,
    ) -> Any:
        """Build the request of ``api_key`` from plain values (:func:`rackwise.protocol.make`)
        at ``version`` (default: the negotiated one), send it and return its response."""
        chosen = self.version_for(api_key) if version is None else version
        body: Any
        if api_key == ApiKey.FETCH and values is not None and not fields:
            body = FetchRequestValues(chosen, values)  # written without building the message
        else:
            body = make(request_class(api_key, chosen), values, **fields)
        return await self.send(body, timeout_s=timeout_s)

    async def fetch(
        self, values: Mapping[str, Any], *, timeout_s: float | None = None
    ) -> FetchAnswer | Any:
        """A Fetch request from plain values at the negotiated version; its answer read as
        plain values (:class:`~rackwise.protocol.FetchAnswer`), not as kio's message (but for
        a peer that speaks no flexible version: kio's, whose fields have the same names)."""
        body = FetchRequestValues(self.version_for(ApiKey.FETCH), values)
        return await self.send(body, timeout_s=timeout_s, plain=True)

    async def send(
        self,
        body: Any,
        *,
        timeout_s: float | None = None,
        plain: bool = False,
        off_loop: bool = False,
    ) -> Any:
        """Send request message ``body`` (or :class:`FetchRequestValues`) and return its
        response message (with ``plain``, a Fetch answer as :class:`FetchAnswer`); with
        ``off_loop``, ``body`` is encoded on a worker thread (a huge forwarded request)."""
        if self._closed_because is not None:
            raise DisconnectException(self._closed_because)
        correlation_id = next(self._correlation_ids) & 0x7FFFFFFF
        if off_loop:
            data = await asyncio.to_thread(encode_request, body, correlation_id, self.client_id)
            if self._closed_because is not None:
                raise DisconnectException(self._closed_because)
        else:
            data = encode_request(body, correlation_id, self.client_id)
        if isinstance(body, FetchRequestValues):
            api_key, version, name = int(ApiKey.FETCH), body.version, "FetchRequest"
        else:
            cls = type(body)
            api_key, version, name = int(cls.__api_key__), int(cls.__version__), cls.__name__
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        future.add_done_callback(_retrieve)
        plain = plain and api_key == ApiKey.FETCH
        self._in_flight.append(_InFlight(api_key, version, correlation_id, future, plain))
        self._stream.write(data)
        wait_s = self.request_timeout_s if timeout_s is None else timeout_s
        try:
            async with asyncio.timeout(wait_s):
                await self._drained_then(future)
        except TimeoutError:
            self._fail_all(
                f"Disconnected from {self._peer}: request {correlation_id} timed out after "
                f"{wait_s:g} s"
            )
            raise RequestTimedOutException(
                f"{name} v{version} to {self._peer} timed out after {wait_s:g} s"
            ) from None
        except (ConnectionError, OSError) as e:
            self._fail_all(f"Connection to {self._peer} lost: {e}")
            raise DisconnectException(f"Connection to {self._peer} lost: {e}") from None
        return future.result()

    async def _drained_then(self, future: asyncio.Future[Any]) -> None:
        await self._stream.drain()
        await asyncio.shield(future)

    # ---- closing -------------------------------------------------------------------------

    async def close(self) -> None:
        """Close the connection; requests in flight fail with DisconnectException."""
        self._fail_all(f"Connection to {self._peer} closed")
        self._reader_task.cancel()
        with contextlib.suppress(BaseException):
            await self._reader_task
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._stream.wait_closed(), 1.0)

    async def __aenter__(self) -> KafkaConnection:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ---- the reader ----------------------------------------------------------------------

    @property
    def _peer(self) -> str:
        return f"{self.address[0]}:{self.address[1]}"

    async def _read_responses(self) -> None:
        # A follower's Fetch responses are megabytes: each is read from the socket straight
        # into a buffer of its own and decoded from a view of it.
        stream = self._stream
        try:
            while True:
                (size,) = _SIZE.unpack(await stream.read_exactly(_SIZE.size))
                refused = size_refused(size, self.max_response_bytes)
                if refused is not None:
                    self._fail_all(f"Connection to {self._peer}: {refused}")
                    return
                if size <= STAGING_BYTES:
                    self._deliver(await stream.read_exactly(size))
                elif size > OFF_LOOP_BYTES and self._in_flight and not self._in_flight[0].plain:
                    # Seconds of decoding for a huge admin answer: on a worker thread.
                    data = await stream.read_body(size)
                    waiting = self._in_flight[0]
                    self._deliver(data, await asyncio.to_thread(_decoded, data, waiting))
                else:
                    self._deliver(await stream.read_body(size))
        except asyncio.IncompleteReadError:
            self._fail_all(f"Connection to {self._peer} closed by the peer")
        except (ConnectionError, OSError) as e:
            self._fail_all(f"Connection to {self._peer} lost: {e}")

    def _deliver(self, data: bytes | memoryview, decoded: Any = None) -> None:
        """Hand the response in ``data`` (already ``decoded`` into a response or the
        ProtocolError it raised, when decoded off the loop) to the request it answers."""
        if not self._in_flight:
            self._fail_all(f"Connection to {self._peer}: a response to no request")
            return
        waiting = self._in_flight.popleft()
        try:
            response = _decoded(data, waiting) if decoded is None else decoded
            if isinstance(response, ProtocolError):
                raise response
        except ProtocolError as e:
            if not waiting.future.done():
                waiting.future.set_exception(e)
            self._fail_all(f"Connection to {self._peer} closed after a bad response: {e}")
            return
        if not waiting.future.done():
            waiting.future.set_result(response)

    def _fail_all(self, reason: str) -> None:
        """Close the connection (once) and fail every request still waiting."""
        if self._closed_because is None:
            self._closed_because = reason
            self._stream.close()
        while self._in_flight:
            future = self._in_flight.popleft().future
            if not future.done():
                future.set_exception(DisconnectException(reason))


def _decoded(data: bytes | memoryview, waiting: _InFlight) -> Any:
    """The response ``data`` holds to ``waiting``'s request, or the ProtocolError it is."""
    try:
        if waiting.plain:
            return decode_fetch_answer(data, waiting.api_version, waiting.correlation_id)
        return decode_response(data, waiting.api_key, waiting.api_version, waiting.correlation_id)
    except ProtocolError as e:
        return e


def _retrieve(future: asyncio.Future[Any]) -> None:
    """Mark a failed request's error as seen (its caller may have timed out and gone)."""
    if not future.cancelled():
        future.exception()


class ConnectionSlot:
    """The one connection a component keeps to a peer: opened by ``connect`` on first use, its
    versions negotiated (within ``negotiate_timeout_s``), and opened again on the next use
    after it closes or is dropped. Tasks of one component share it; a lock keeps two of them
    from opening two.

    ``slot = ConnectionSlot(channel.connect, negotiate_timeout_s=30.0)``;
    ``await (await slot.get()).request(...)``; after a network error ``await slot.drop()``.
    """

    def __init__(
        self,
        connect: Callable[[], Awaitable[KafkaConnection]],
        *,
        negotiate_timeout_s: float | None = None,
    ) -> None:
        self.connect = connect
        self.negotiate_timeout_s = negotiate_timeout_s
        self._connection: KafkaConnection | None = None
        self._opening = asyncio.Lock()

    @property
    def current(self) -> KafkaConnection | None:
        """The connection held now, open or not; None before the first use or after a drop."""
        return self._connection

    async def get(self) -> KafkaConnection:
        """The open connection, opened and negotiated first when there is none."""
        async with self._opening:
            if self._connection is None or self._connection.is_closed:
                connection = await self.connect()
                try:
                    await connection.negotiate_versions(timeout_s=self.negotiate_timeout_s)
                except BaseException:
                    await connection.close()
                    raise
                self._connection = connection
            return self._connection

    async def drop(self, *, only_if_closed: bool = False) -> None:
        """Close and forget the connection (with ``only_if_closed``, only one that is closed
        already: one another task has just opened is left alone)."""
        connection = self._connection
        if connection is None or (only_if_closed and not connection.is_closed):
            return
        self._connection = None
        with contextlib.suppress(Exception):
            await connection.close()
