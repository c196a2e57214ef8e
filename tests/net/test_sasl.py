"""SASL on a listener over real sockets: logins with PLAIN and SCRAM, Kafka's refusals, what may
come before authenticating, re-authentication and session expiry, bounded handshakes."""

from __future__ import annotations

import asyncio
import dataclasses
import struct
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from rackwise.common.error_codes import (
    ILLEGAL_SASL_STATE,
    SASL_AUTHENTICATION_FAILED,
    UNSUPPORTED_SASL_MECHANISM,
)
from rackwise.net import (
    DisconnectException,
    KafkaConnection,
    KafkaServer,
    SaslLogin,
    SaslLoginFailed,
    SaslServerConfig,
    current_connection,
    set_login,
    start_server,
)
from rackwise.net.sasl_client import clear_logins, login_for
from rackwise.protocol import ApiKey, Listener, Request, api_versions_response
from rackwise.security.sasl import ScramClient
from rackwise.security.scram import ScramMechanism
from tests.net.helpers import describe_cluster_echo, exchange, framed, header, run
from tests.net.test_server import create_topics_frame, topic

SHA512 = ScramMechanism.SCRAM_SHA_512
CREDENTIALS = {("alice", SHA512): SHA512.credential_for("alice-secret", 4096)}


async def whoami(request: Request) -> Any:
    """ApiVersions, and CreateTopics answered with one topic named after the principal."""
    if request.header.api_key == ApiKey.API_VERSIONS:
        return api_versions_response(request.header.api_version, Listener.CONTROLLER)
    connection = current_connection()
    assert connection is not None
    response = await describe_cluster_echo(request)
    named = tuple(dataclasses.replace(t, name=str(connection.principal)) for t in response.topics)
    return dataclasses.replace(response, topics=named)


def config(**overrides: Any) -> SaslServerConfig:
    values: dict[str, Any] = {
        "mechanisms": ("PLAIN", "SCRAM-SHA-512"),
        "plain_users": {"admin": "admin-secret"},
        "scram_lookup": lambda user, mechanism: CREDENTIALS.get((user, mechanism)),
        "failed_delay_ms": 10,
    }
    values.update(overrides)
    return SaslServerConfig(**values)


@asynccontextmanager
async def sasl_server(**overrides: Any) -> AsyncIterator[KafkaServer]:
    async with await start_server(whoami, Listener.CONTROLLER, sasl=config(**overrides)) as s:
        yield s


@pytest.fixture(autouse=True)
def no_logins() -> Iterator[None]:
    clear_logins()
    yield
    clear_logins()


async def principal_of(conn: KafkaConnection) -> str:
    response = await conn.request(ApiKey.CREATE_TOPICS, topics=[topic("x")])
    return str(response.topics[0].name)


@pytest.mark.parametrize(
    ("mechanism", "user", "password"),
    [("SCRAM-SHA-512", "alice", "alice-secret"), ("PLAIN", "admin", "admin-secret")],
)
def test_login_makes_the_principal(mechanism: str, user: str, password: str) -> None:
    async def scenario() -> str:
        async with sasl_server() as server:
            set_login(SaslLogin(mechanism, user, password))
            async with await KafkaConnection.connect("127.0.0.1", server.port) as conn:
                return await principal_of(conn)

    assert run(scenario()) == f"User:{user}"


@pytest.mark.parametrize(
    ("login", "code", "message"),
    [
        (
            SaslLogin("SCRAM-SHA-512", "alice", "wrong"),
            SASL_AUTHENTICATION_FAILED,
            "Authentication failed during authentication due to invalid credentials with SASL "
            "mechanism SCRAM-SHA-512",
        ),
        (
            SaslLogin("SCRAM-SHA-512", "nobody", "x"),
            SASL_AUTHENTICATION_FAILED,
            "Authentication failed during authentication due to invalid credentials with SASL "
            "mechanism SCRAM-SHA-512",
        ),
        (
            SaslLogin("PLAIN", "admin", "wrong"),
            SASL_AUTHENTICATION_FAILED,
            "Authentication failed: Invalid username or password",
        ),
        (
            SaslLogin("SCRAM-SHA-256", "alice", "alice-secret"),
            UNSUPPORTED_SASL_MECHANISM,
            "enabled mechanisms are [PLAIN, SCRAM-SHA-512]",
        ),
    ],
)
def test_refused_logins_get_kafkas_errors(login: SaslLogin, code: int, message: str) -> None:
    async def scenario() -> tuple[SaslServerConfig, SaslLoginFailed]:
        async with sasl_server() as server:
            set_login(login)
            with pytest.raises(SaslLoginFailed) as refused:
                await KafkaConnection.connect("127.0.0.1", server.port)
            assert server.sasl is not None
            return server.sasl, refused.value

    sasl, error = run(scenario())
    assert error.code == code
    assert message in error.server_message
    assert sasl.failures == 1 and sasl.successes == 0


def test_a_request_before_the_handshake_closes_the_connection() -> None:
    async def scenario() -> tuple[bytes, bool]:
        async with sasl_server() as server:
            return await exchange(server.port, create_topics_frame(1, "t"))

    assert run(scenario()) == (b"", True)


def test_a_frame_over_the_receive_size_before_authenticating_closes() -> None:
    async def scenario() -> tuple[bytes, bool]:
        async with sasl_server(max_receive_size=1000) as server:
            frame = framed(header(ApiKey.SASL_HANDSHAKE, 1, 1, False) + b"\0" * 2000)
            return await exchange(server.port, frame)

    assert run(scenario()) == (b"", True)


def test_a_silent_or_slow_handshake_times_out_and_others_are_served() -> None:
    async def scenario() -> tuple[bool, float, str]:
        async with sasl_server(authentication_timeout_s=0.5) as server:
            # Half a size prefix, then nothing: a half-open handshake.
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(struct.pack(">i", 100)[:2])
            set_login(SaslLogin("SCRAM-SHA-512", "alice", "alice-secret"))
            start = time.monotonic()
            async with await KafkaConnection.connect("127.0.0.1", server.port) as conn:
                other = time.monotonic() - start
                name = await principal_of(conn)
            closed = await asyncio.wait_for(reader.read(), 5) == b""
            writer.close()
            return closed, other, name

    closed, other_s, name = run(scenario())
    assert closed and name == "User:alice"
    assert other_s < 0.5


def test_sasl_apis_after_login_and_on_a_plaintext_listener_are_illegal() -> None:
    async def scenario() -> tuple[int, int, int]:
        async with sasl_server() as server:
            set_login(SaslLogin("PLAIN", "admin", "admin-secret"))
            async with await KafkaConnection.connect("127.0.0.1", server.port) as conn:
                again = await conn.request(ApiKey.SASL_AUTHENTICATE, auth_bytes=b"x")
        clear_logins()
        async with (
            await start_server(whoami, Listener.CONTROLLER) as plain,
            await KafkaConnection.connect("127.0.0.1", plain.port) as conn,
        ):
            await conn.negotiate_versions()
            handshake = await conn.request(ApiKey.SASL_HANDSHAKE, version=1, mechanism="PLAIN")
            authenticate = await conn.request(ApiKey.SASL_AUTHENTICATE, auth_bytes=b"x")
            return int(again.error_code), int(handshake.error_code), int(authenticate.error_code)

    assert run(scenario()) == (ILLEGAL_SASL_STATE,) * 3


def test_reauthentication_keeps_the_principal_and_an_expired_session_closes() -> None:
    async def scenario() -> tuple[int, str, bool, tuple[int, int, int]]:
        async with sasl_server(max_reauth_ms=300) as server:
            login = SaslLogin("SCRAM-SHA-512", "alice", "alice-secret")
            set_login(login)
            async with await KafkaConnection.connect("127.0.0.1", server.port) as conn:
                handshake = await conn.request(
                    ApiKey.SASL_HANDSHAKE, version=1, mechanism="SCRAM-SHA-512"
                )
                client = ScramClient(SHA512, "alice", "alice-secret")
                first = await conn.request(ApiKey.SASL_AUTHENTICATE, auth_bytes=client.first())
                final = await conn.request(
                    ApiKey.SASL_AUTHENTICATE, auth_bytes=client.final(bytes(first.auth_bytes))
                )
                client.verify(bytes(final.auth_bytes))
                lifetime = int(final.session_lifetime.total_seconds() * 1000)
                name = await principal_of(conn)
                await asyncio.sleep(0.4)
                try:
                    await principal_of(conn)
                    closed = False
                except DisconnectException:
                    closed = True
            assert int(handshake.error_code) == 0
            return lifetime, name, closed, server.authentications

    # The connection's login counts as an authentication, the renewal on it as a
    # re-authentication.
    assert run(scenario()) == (300, "User:alice", True, (1, 0, 1))


def test_logins_are_set_per_address_or_for_all() -> None:
    login = SaslLogin("PLAIN", "a", "b")
    set_login(login)
    set_login(None, ("127.0.0.1", 9093))
    assert login_for("127.0.0.1", 9092) is login
    assert login_for("127.0.0.1", 9093) is None
    assert "b" not in repr(login)
