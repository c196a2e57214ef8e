"""asyncio servers and clients over the protocol layer: the only place rackwise touches a
socket. Bytes are cut, decoded and encoded by :mod:`rackwise.protocol`; what a request means is
the handler's business (:mod:`rackwise.node`).

Server (:mod:`~rackwise.net.server`, composing :mod:`~rackwise.net.admission`,
:mod:`~rackwise.net.framing`, :mod:`~rackwise.net.pipelining` and :mod:`~rackwise.net.writer`)
    ``server = await start_server(handler, Listener.CONTROLLER, host="127.0.0.1", port=0)``
    binds (port 0: a free one; ``server.port`` / ``server.address`` tell which) and serves
    until ``await server.close()`` (or ``async with server:``). ``handler`` is
    ``async def handler(request: rackwise.protocol.Request) -> response message``: it gets
    ``request.header`` (api key, version, correlation id, client id), ``request.api`` and
    ``request.body`` (the request message of that version) and returns the response message
    of the same API and version (build it with ``rackwise.protocol.make(
    rackwise.protocol.response_class(key, version), ...)``), or :data:`NO_RESPONSE`, or raises
    :class:`CloseConnection` to close without answering. Any other exception is logged as one
    line on the ``rackwise.net`` logger and closes that connection only. Requests of one
    connection are handled one at a time, in order (as Kafka does), but for Produce requests
    waiting for their followers: a handler that calls :func:`let_next_request_in` lets the
    connection read its next request meanwhile (up to 5 waiting), and the answers are still
    written in order; open several connections for concurrency (a long poll and
    heartbeats). Malformed frames get Kafka's answer (an error response or a closed
    connection), decided by :func:`rackwise.protocol.decode_request`.
    Each connection yields to the others after each request; ``limits=ServerLimits(...)``
    (:mod:`~rackwise.net.limits`: ``connections.max.idle.ms``, ``queued.max.request.bytes``,
    ``max.connections``, ``max.connections.per.ip``) bounds what clients may hold, and
    :func:`current_connection` tells a handler which connection its request came on.
    :func:`start_threaded_server` (:mod:`~rackwise.net.io_thread`) serves the sockets on a
    thread of their own and hands each request to the handler on the caller's loop.

Client (:mod:`~rackwise.net.client`)
    ``conn = await KafkaConnection.connect(host, port, timeout_s=10.0, client_id="rackwise",
    request_timeout_s=30.0)``; ``await conn.negotiate_versions()`` (ApiVersions; then
    ``conn.api_versions`` and ``conn.version_for(api_key)``); ``await conn.request(api_key,
    {...plain values...}, version=None, timeout_s=None, **fields)`` builds the request with
    :func:`rackwise.protocol.make` at the negotiated (or given) version and returns the
    response message; ``await conn.send(request_message)`` sends a ready message. Requests
    may be pipelined (several ``send`` at once). A timeout raises
    :class:`RequestTimedOutException` and closes the connection; a lost connection raises
    :class:`DisconnectException` for every request waiting; ``conn.is_closed`` tells. The
    caller reconnects (a new ``connect``) when it wants to. ``await conn.close()``.

Frames (:mod:`~rackwise.net.frames`)
    Both ends read a connection with :class:`~rackwise.net.frames.FrameStream`, an
    ``asyncio.BufferedProtocol``: a large frame is read from the socket straight into the
    buffer it is decoded from, with at most 64 KiB read ahead of its owner.

SASL (:mod:`~rackwise.net.sasl`, :mod:`~rackwise.net.sasl_client`)
    ``start_server(..., sasl=SaslServerConfig(mechanisms=("SCRAM-SHA-512",), scram_lookup=f))``
    makes a SASL listener: a connection must authenticate (SaslHandshake, SaslAuthenticate)
    before its requests reach the handler, and :func:`current_connection` then names its
    principal. ``set_login(SaslLogin(mechanism, user, password))`` makes this process's own
    connections log in wherever they connect (or at one address).

Security (:mod:`~rackwise.net.tls`)
    ``security=ListenerSecurity(listener_name, security_protocol, tls=context)`` gives a
    server its listener's name and protocol, which each :class:`ClientConnection` carries
    (:func:`request_listener` tells a handler which listener its request came on); with a TLS
    context the listener handshakes first, bounded in time, and names the peer's principal
    from its certificate. ``KafkaConnection.connect(..., tls=context)`` connects over TLS;
    :func:`use_client_tls` sets the context of every connection a command opens.

Errors (:mod:`~rackwise.net.errors`): :class:`NetworkException` (retriable, code 13) and its
subclasses :class:`DisconnectException` and :class:`RequestTimedOutException` (code 7).
"""

from rackwise.net.admission import ClientConnection, current_connection, request_listener
from rackwise.net.client import (
    DEFAULT_CONNECT_TIMEOUT_S,
    DEFAULT_REQUEST_TIMEOUT_S,
    ConnectionSlot,
    KafkaConnection,
)
from rackwise.net.errors import (
    CloseConnection,
    DisconnectException,
    NetworkException,
    RequestTimedOutException,
    SaslAuthenticationFailed,
)
from rackwise.net.io_thread import ArrivalHook, ThreadedKafkaServer, start_threaded_server
from rackwise.net.limits import (
    NO_IDLE_TIMEOUT,
    SERVER_LIMIT_KEYS,
    UNBOUNDED,
    UNLIMITED_CONNECTIONS,
    ServerLimits,
)
from rackwise.net.pipelining import NO_RESPONSE, Handler, NoResponse, let_next_request_in
from rackwise.net.sasl import SaslServerConfig
from rackwise.net.sasl_client import SaslLogin, SaslLoginFailed, set_login
from rackwise.net.server import DEFAULT_HOST, KafkaServer, start_server
from rackwise.net.tls import ListenerSecurity, TlsConfigError, client_tls, use_client_tls

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT_S",
    "DEFAULT_HOST",
    "DEFAULT_REQUEST_TIMEOUT_S",
    "NO_IDLE_TIMEOUT",
    "NO_RESPONSE",
    "SERVER_LIMIT_KEYS",
    "UNBOUNDED",
    "UNLIMITED_CONNECTIONS",
    "ArrivalHook",
    "ClientConnection",
    "CloseConnection",
    "ConnectionSlot",
    "DisconnectException",
    "Handler",
    "KafkaConnection",
    "KafkaServer",
    "ListenerSecurity",
    "NetworkException",
    "NoResponse",
    "RequestTimedOutException",
    "SaslAuthenticationFailed",
    "SaslLogin",
    "SaslLoginFailed",
    "SaslServerConfig",
    "ServerLimits",
    "ThreadedKafkaServer",
    "TlsConfigError",
    "client_tls",
    "current_connection",
    "let_next_request_in",
    "request_listener",
    "set_login",
    "start_server",
    "start_threaded_server",
    "use_client_tls",
]
