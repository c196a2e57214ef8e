"""SASL on a listener: what a connection may send before it has authenticated, the
SaslHandshake and SaslAuthenticate exchange, and re-authentication (Kafka's
``SaslServerAuthenticator``, with KIP-152's SaslAuthenticate and KIP-368's re-authentication).

Goals
    On a SASL listener a connection may send only ApiVersions, SaslHandshake (v1) and then
    SaslAuthenticate until it has authenticated; then its principal is ``User:<name>`` and its
    requests reach the handler. Kafka's answers: UNSUPPORTED_SASL_MECHANISM with the enabled
    mechanisms, SASL_AUTHENTICATION_FAILED with Kafka's message (``Authentication failed
    during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512``, or
    PLAIN's own), ILLEGAL_SASL_STATE. A session lives ``connections.max.reauth.ms`` (0: for
    ever); the client is told in SaslAuthenticate's ``session_lifetime_ms``, re-authenticates
    with a new SaslHandshake on the same connection (same mechanism, same principal), and a
    request arriving after the session expired closes the connection.

Constraints
    * Bounded: before authentication a frame may hold at most ``sasl.server.max.receive.size``
      bytes (Kafka's 524288), and the whole exchange must end within
      :attr:`SaslServerConfig.authentication_timeout_s` of the connection's first byte (a
      client that stops mid-handshake is closed then, a half-open one too).
    * Cheap: a server login costs two HMACs and a hash (PBKDF2 is the client's), so a flood of
      failed logins costs the loop little; each failure is answered after
      ``connection.failed.authentication.delay.ms`` (Kafka's 100 ms: the wait is a timer, not
      work), counted, and logged at most once per :data:`FAILURE_LOG_INTERVAL_S` with the number
      since the previous line.
    * On a listener without SASL every connection is authenticated from the start (its
      principal stays ANONYMOUS); SaslHandshake and SaslAuthenticate are answered
      ILLEGAL_SASL_STATE there, as Kafka's ``KafkaApis`` answers them.

Worked example
    kafka-python with SCRAM-SHA-512: ApiVersions (answered by the handler), SaslHandshake v1
    ``SCRAM-SHA-512`` (NONE, ``["PLAIN", "SCRAM-SHA-512"]``), SaslAuthenticate with the
    client-first message (the server-first back), SaslAuthenticate with the client-final
    message (``v=...`` and ``session_lifetime_ms``): the connection is ``User:alice``. A
    Metadata request before the handshake closes the connection unanswered.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final

from rackwise.common.error_codes import (
    ILLEGAL_SASL_STATE,
    NONE,
    SASL_AUTHENTICATION_FAILED,
    UNSUPPORTED_SASL_MECHANISM,
)
from rackwise.common.logsafe import loggable
from rackwise.net.admission import ClientConnection
from rackwise.net.limits import LogThrottle, since_last
from rackwise.protocol import ApiKey, Request, Response, response_to
from rackwise.security import KafkaPrincipal
from rackwise.security.principal import USER_TYPE
from rackwise.security.sasl import (
    PLAIN,
    PlainServer,
    SaslAuthenticationException,
    SaslServer,
    ScramServer,
)
from rackwise.security.scram import ScramCredential, ScramError, ScramMechanism

LOG: Final = logging.getLogger("rackwise.net.sasl")
DEFAULT_MAX_RECEIVE_SIZE: Final = 524_288
"""Kafka's ``sasl.server.max.receive.size``."""
DEFAULT_FAILED_DELAY_MS: Final = 100
"""Kafka's ``connection.failed.authentication.delay.ms``."""
DEFAULT_AUTHENTICATION_TIMEOUT_S: Final = 10.0
"""How long a connection has to authenticate (Kafka bounds it only by
``connections.max.idle.ms``)."""
FAILURE_LOG_INTERVAL_S: Final = 10.0
_SASL_APIS: Final = (ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE)

ScramLookup = Callable[[str, ScramMechanism], ScramCredential | None]
"""A user's credential for a mechanism (from the metadata image), or None."""


@dataclass(eq=False)
class SaslServerConfig:
    """A SASL listener's settings and its failure count, shared by its connections."""

    mechanisms: tuple[str, ...]
    """``sasl.enabled.mechanisms``, in order."""
    plain_users: Mapping[str, str] = field(default_factory=dict)
    """PLAIN's users and passwords (the listener's JAAS ``user_<name>`` options)."""
    scram_lookup: ScramLookup = lambda _user, _mechanism: None
    max_reauth_ms: int = 0
    """``connections.max.reauth.ms`` (0: sessions never expire)."""
    max_receive_size: int = DEFAULT_MAX_RECEIVE_SIZE
    failed_delay_ms: int = DEFAULT_FAILED_DELAY_MS
    authentication_timeout_s: float = DEFAULT_AUTHENTICATION_TIMEOUT_S
    failures: int = 0
    """Failed authentications on this listener since it started."""
    successes: int = 0
    """Connections authenticated on this listener (their first login, not a renewal)."""
    reauthentications: int = 0
    """Sessions renewed within ``connections.max.reauth.ms`` (KIP-368)."""
    _throttle: LogThrottle = field(
        default_factory=lambda: LogThrottle(FAILURE_LOG_INTERVAL_S), repr=False
    )

    def server_for(self, mechanism: str) -> SaslServer:
        if mechanism == PLAIN:
            users = self.plain_users
            return PlainServer(lambda user, password: users.get(user) == password)
        scram = ScramMechanism.by_name(mechanism)
        assert scram is not None
        lookup = self.scram_lookup
        return ScramServer(scram, lambda user: lookup(user, scram))

    def note_failure(self, name: str, peer: str, mechanism: str, reason: str) -> None:
        self.failures += 1
        unlogged = self._throttle.due("failed")
        if unlogged is None:
            return
        LOG.info(
            "%s: failed authentication with %s (%s): %s%s",
            name,
            peer,
            mechanism,
            loggable(reason),
            since_last(unlogged, "failed"),
        )


class State(enum.Enum):
    HANDSHAKE_OR_VERSIONS = "HANDSHAKE_OR_VERSIONS_REQUEST"
    HANDSHAKE = "HANDSHAKE_REQUEST"
    AUTHENTICATE = "AUTHENTICATE"
    COMPLETE = "COMPLETE"


class Pass:
    """The request goes on to the handler."""


PASS: Final = Pass()


@dataclass(frozen=True, slots=True)
class Answer:
    """The gate answers the request itself; ``close``: then closes the connection, after
    ``delay_s``."""

    response: Response
    close: bool = False
    delay_s: float = 0.0


@dataclass(frozen=True, slots=True)
class Refuse:
    """Close the connection without answering."""

    reason: str


Verdict = Pass | Answer | Refuse


class SaslGate:
    """One connection's authentication (module docstring)."""

    def __init__(
        self, config: SaslServerConfig | None, connection: ClientConnection, name: str
    ) -> None:
        self.config = config
        self.connection = connection
        self.name = name
        self.state = State.COMPLETE if config is None else State.HANDSHAKE_OR_VERSIONS
        self._server: SaslServer | None = None
        self._mechanism = ""
        """The mechanism of the session (re-authentication must keep it)."""
        self._requested = ""
        """The mechanism of the handshake under way."""
        self._reauthenticating = False
        self._expires_at: float | None = None
        self._started = asyncio.get_running_loop().time()

    @property
    def authenticated(self) -> bool:
        return self.state is State.COMPLETE or self._reauthenticating

    def max_receive(self, max_request_bytes: int) -> int:
        """The largest frame the connection may send now."""
        if self.config is None or self.authenticated:
            return max_request_bytes
        return min(max_request_bytes, self.config.max_receive_size)

    def deadline(self) -> float | None:
        """Loop time by which the connection must have authenticated (None: it has)."""
        if self.config is None or self.authenticated:
            return None
        return self._started + self.config.authentication_timeout_s

    def admit_reply(self, api_key: int) -> bool:
        """Whether a request the protocol layer answers itself (an unsupported version) may be
        answered: before authentication, only ApiVersions (the client retries lower)."""
        return self.authenticated or api_key == ApiKey.API_VERSIONS

    def admit(self, request: Request) -> Verdict:
        """What becomes of ``request`` (module docstring)."""
        key = request.header.api_key
        if self.config is None:
            if key in _SASL_APIS:
                return Answer(self._illegal(request))
            return PASS
        if self.state is State.COMPLETE and not self._reauthenticating:
            return self._authenticated(request)
        if key == ApiKey.API_VERSIONS and self.state is State.HANDSHAKE_OR_VERSIONS:
            self.state = State.HANDSHAKE
            return PASS
        if key == ApiKey.SASL_HANDSHAKE and self.state in (
            State.HANDSHAKE_OR_VERSIONS,
            State.HANDSHAKE,
        ):
            return self._handshake(request)
        if key == ApiKey.SASL_AUTHENTICATE and self.state is State.AUTHENTICATE:
            return self._authenticate(request)
        what = "authentication" if self.state is State.AUTHENTICATE else "handshake"
        kind = ApiKey(key).name if key in ApiKey.__members__.values() else str(key)
        return Refuse(f"Unexpected Kafka request of type {kind} during SASL {what}.")

    def _authenticated(self, request: Request) -> Verdict:
        key = request.header.api_key
        now = asyncio.get_running_loop().time()
        if key == ApiKey.SASL_HANDSHAKE:
            self._reauthenticating = True
            self.state = State.HANDSHAKE
            return self._handshake(request)
        if self._expires_at is not None and now > self._expires_at:
            return Refuse("the session expired and the client did not re-authenticate")
        if key == ApiKey.SASL_AUTHENTICATE:
            return Answer(
                self._illegal(
                    request, "SaslAuthenticate request received after successful authentication"
                )
            )
        return PASS

    def _illegal(self, request: Request, message: str | None = None) -> Response:
        if request.header.api_key == ApiKey.SASL_HANDSHAKE:
            return response_to(request.body, {"error_code": ILLEGAL_SASL_STATE, "mechanisms": []})
        return response_to(
            request.body,
            {"error_code": ILLEGAL_SASL_STATE, "error_message": message, "auth_bytes": b""},
        )

    def _handshake(self, request: Request) -> Verdict:
        config = self.config
        assert config is not None
        if request.header.api_version == 0:
            return Refuse("SaslHandshake v0 (raw SASL tokens, before Kafka 1.0) is not served")
        mechanism = str(request.body.mechanism)
        enabled = list(config.mechanisms)
        if mechanism not in config.mechanisms:
            self._fail(f"Unsupported SASL mechanism {mechanism}", mechanism)
            return Answer(
                response_to(
                    request.body,
                    {"error_code": UNSUPPORTED_SASL_MECHANISM, "mechanisms": enabled},
                ),
                close=True,
                delay_s=config.failed_delay_ms / 1000,
            )
        if self._reauthenticating and mechanism != self._mechanism:
            self._server = None  # SaslAuthenticate will say why
        else:
            self._server = config.server_for(mechanism)
        self._requested = mechanism
        self.state = State.AUTHENTICATE
        return Answer(response_to(request.body, {"error_code": NONE, "mechanisms": enabled}))

    def _authenticate(self, request: Request) -> Verdict:
        config = self.config
        assert config is not None
        server = self._server
        what = "re-authentication" if self._reauthenticating else "authentication"
        try:
            if server is None:
                raise SaslAuthenticationException(
                    f"SASL mechanism '{self._requested}' requested by client is not supported "
                    f"for re-authentication of mechanism '{self._mechanism}'"
                )
            token = server.evaluate(bytes(request.body.auth_bytes))
            if server.complete:
                self._complete(server)
        except SaslAuthenticationException as e:
            return self._refused(request, str(e), str(e))
        except ScramError as e:
            message = (
                f"Authentication failed during {what} due to invalid credentials with SASL "
                f"mechanism {server.mechanism if server else self._requested}"
            )
            return self._refused(request, message, str(e))
        lifetime = self._lifetime_ms() if server.complete else 0
        return Answer(
            response_to(
                request.body,
                {
                    "error_code": NONE,
                    "error_message": None,
                    "auth_bytes": token,
                    "session_lifetime": lifetime,
                },
            )
        )

    def _complete(self, server: SaslServer) -> None:
        principal = KafkaPrincipal(USER_TYPE, server.authorization_id)
        if self._reauthenticating and principal != self.connection.principal:
            old = self.connection.principal
            raise SaslAuthenticationException(
                "Cannot change principals during re-authentication from "
                f"{old.principal_type}.{old.name}: {principal.principal_type}.{principal.name}"
            )
        self.connection.principal = principal
        self._mechanism = server.mechanism
        assert self.config is not None
        if self._reauthenticating:
            self.config.reauthentications += 1
        else:
            self.config.successes += 1
        self._reauthenticating = False
        self.state = State.COMPLETE
        self._server = None

    def _lifetime_ms(self) -> int:
        assert self.config is not None
        lifetime = max(self.config.max_reauth_ms, 0)
        if lifetime:
            self._expires_at = asyncio.get_running_loop().time() + lifetime / 1000
        return lifetime

    def _refused(self, request: Request, message: str, reason: str) -> Answer:
        assert self.config is not None
        self._fail(reason, self._requested)
        self._reauthenticating = False
        return Answer(
            response_to(
                request.body,
                {
                    "error_code": SASL_AUTHENTICATION_FAILED,
                    "error_message": message,
                    "auth_bytes": b"",
                    "session_lifetime": 0,
                },
            ),
            close=True,
            delay_s=self.config.failed_delay_ms / 1000,
        )

    def _fail(self, reason: str, mechanism: str) -> None:
        assert self.config is not None
        self.config.note_failure(self.name, self.connection.peer, mechanism, reason)
