"""Logging in over SASL from rackwise's own connections: a broker to the controllers and to
the other brokers, the command-line tools to a cluster (Kafka's ``SaslClientAuthenticator``
with ``PlainSaslClient`` and ``ScramSaslClient``).

Goals
    A process says once whom it logs in as, and where: :func:`set_login` for every address
    (the command-line tools, a broker's inter-broker login) or for one address (a broker's
    controllers, when the controller listener's mechanism or protocol differs). Every
    :meth:`~rackwise.net.KafkaConnection.connect` then logs in before it returns: ApiVersions,
    SaslHandshake v1, SaslAuthenticate until done. A refusal raises
    :class:`SaslLoginFailed` with the server's error and message: a
    :class:`~rackwise.net.NetworkException` for the callers that reconnect (a broker retries
    and logs, as Kafka's does), but not a retriable one.

Constraints
    The SCRAM client computes PBKDF2 off the event loop (up to
    :data:`~rackwise.security.sasl.CLIENT_MAX_ITERATIONS` iterations), so a broker's loop keeps
    serving while it logs in.

Worked example
    ``set_login(SaslLogin("SCRAM-SHA-512", "broker", "broker-secret"))``, then
    ``await KafkaConnection.connect("127.0.0.1", 9092)`` returns a connection authenticated as
    ``User:broker``; with a wrong password it raises ``SaslLoginFailed: SASL_AUTHENTICATION_FAILED
    (58): Authentication failed during authentication due to invalid credentials with SASL
    mechanism SCRAM-SHA-512``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Final, Protocol

from rackwise.common.error_codes import NONE
from rackwise.common.error_table import describe
from rackwise.net.errors import SaslAuthenticationFailed
from rackwise.protocol import ApiKey
from rackwise.security.sasl import PLAIN, ScramClient, plain_token
from rackwise.security.scram import ScramError, ScramMechanism


class Connection(Protocol):
    """What a login needs of a :class:`~rackwise.net.KafkaConnection` (versions negotiated)."""

    async def request(self, api_key: int, /, *, version: int | None = ..., **fields: Any) -> Any:
        """The response to the request of ``api_key`` built from ``fields``."""
        ...


HANDSHAKE_VERSION: Final = 1


@dataclass(frozen=True, slots=True)
class SaslLogin:
    """Whom a connection logs in as: Kafka's ``sasl.mechanism`` and the credentials of
    ``sasl.jaas.config``."""

    mechanism: str
    username: str
    password: str

    def __repr__(self) -> str:  # never the password
        return f"SaslLogin({self.mechanism!r}, {self.username!r})"


class SaslLoginFailed(SaslAuthenticationFailed):
    """The server refused the login: its error code and message."""

    def __init__(self, code: int, message: str) -> None:
        row = describe(code)
        super().__init__(f"{row.name if row else 'UNKNOWN'} ({code}): {message}")
        self.code = code
        self.server_message = message


_ANY: Final = ("*", 0)
_LOGINS: dict[tuple[str, int], SaslLogin | None] = {}


def set_login(login: SaslLogin | None, address: tuple[str, int] | None = None) -> None:
    """Log in as ``login`` wherever this process connects (``address`` None), or only at
    ``address`` (None there: connect to it without SASL whatever the default)."""
    _LOGINS[address if address is not None else _ANY] = login


def clear_logins() -> None:
    _LOGINS.clear()


def default_login() -> SaslLogin | None:
    """Whom this process logs in as wherever no address has its own login."""
    return _LOGINS.get(_ANY)


def login_for(host: str, port: int) -> SaslLogin | None:
    address = (host, port)
    if address in _LOGINS:
        return _LOGINS[address]
    return _LOGINS.get(_ANY)


async def authenticate(connection: Connection, login: SaslLogin) -> None:
    """Log ``connection`` in (its versions negotiated); raises
    :class:`~rackwise.net.errors.SaslAuthenticationFailed` (:class:`SaslLoginFailed` when the
    server refused)."""
    handshake = await connection.request(
        ApiKey.SASL_HANDSHAKE, version=HANDSHAKE_VERSION, mechanism=login.mechanism
    )
    code = int(handshake.error_code)
    if code != NONE:
        enabled = ", ".join(str(m) for m in handshake.mechanisms)
        raise SaslLoginFailed(
            code,
            f"Client SASL mechanism '{login.mechanism}' not enabled in the server, enabled "
            f"mechanisms are [{enabled}]",
        )
    if login.mechanism == PLAIN:
        await _step(connection, plain_token(login.username, login.password))
        return
    scram = ScramMechanism.by_name(login.mechanism)
    if scram is None:
        raise SaslAuthenticationFailed(f"Unsupported SASL mechanism {login.mechanism}")
    client = ScramClient(scram, login.username, login.password)
    try:
        server_first = await _step(connection, client.first())
        final = await asyncio.to_thread(client.final, server_first)
        client.verify(await _step(connection, final))
    except ScramError as e:
        raise SaslAuthenticationFailed(str(e)) from None


async def _step(connection: Connection, token: bytes) -> bytes:
    response: Any = await connection.request(ApiKey.SASL_AUTHENTICATE, auth_bytes=token)
    code = int(response.error_code)
    if code != NONE:
        raise SaslLoginFailed(code, str(response.error_message or ""))
    return bytes(response.auth_bytes)
