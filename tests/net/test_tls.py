"""TLS listeners over real sockets: PEM and PKCS12 stores, client certificates required,
requested or not asked for, the principal a certificate maps to, TLS 1.2/1.3 only, refused
peers, and a handshake that stalls holding nothing but its socket."""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12

from rackwise.cluster.certificates import (
    Authority,
    ensure_ca,
    save_ca,
    write_client_pem,
    write_node_keystore,
)
from rackwise.net import (
    DisconnectException,
    KafkaConnection,
    ListenerSecurity,
    current_connection,
    start_server,
)
from rackwise.net.tls import TlsConfigError, client_context, server_context
from rackwise.protocol import ApiKey, Listener, Request, api_versions_response
from rackwise.security import ANONYMOUS, KafkaPrincipal
from rackwise.security.ssl_config import ssl_settings
from rackwise.security.ssl_principal import SslPrincipalMapper
from tests.net.helpers import framed, header, run

PASSWORD = "secret-pw"
RULES = "RULE:^CN=([^,]+),OU=rackwise-cluster$/$1/U,DEFAULT"


@dataclass(frozen=True)
class Stores:
    ca: Authority
    node: Path
    """A node's PKCS12 key store."""
    client: Path
    """The client's PEM key store (encrypted key and certificate)."""
    stranger: Path
    """A PEM key store signed by a key no trust store knows."""
    truststore_p12: Path


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Stores:
    directory = tmp_path_factory.mktemp("tls")
    ca = ensure_ca(directory)
    save_ca(ca)
    node, client, stranger = directory / "node.p12", directory / "client.pem", directory / "x.pem"
    write_node_keystore(ca, node, "broker-1", PASSWORD)
    write_client_pem(ca, client, "alice", PASSWORD)
    write_client_pem(
        ca, stranger, "mallory", PASSWORD, issuer_key=ec.generate_private_key(ec.SECP256R1())
    )
    truststore = directory / "truststore.p12"
    truststore.write_bytes(
        pkcs12.serialize_key_and_certificates(
            None, None, None, [ca.certificate], serialization.BestAvailableEncryption(b"tpw")
        )
    )
    return Stores(ca, node, client, stranger, truststore)


def server_settings(stores: Stores, client_auth: str, **extra: str) -> dict[str, str]:
    return {
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": str(stores.node),
        "ssl.keystore.password": PASSWORD,
        "ssl.truststore.type": "PKCS12",
        "ssl.truststore.location": str(stores.truststore_p12),
        "ssl.truststore.password": "tpw",
        "ssl.client.auth": client_auth,
        **extra,
    }


def client_settings(stores: Stores, keystore: Path | None, **extra: str) -> dict[str, str]:
    props = {"ssl.truststore.type": "PEM", "ssl.truststore.location": str(stores.ca.pem_path)}
    if keystore is not None:
        props.update(
            {
                "ssl.keystore.type": "PEM",
                "ssl.keystore.location": str(keystore),
                "ssl.key.password": PASSWORD,
            }
        )
    props.update(extra)
    return props


SEEN: list[KafkaPrincipal] = []


async def handler(request: Request) -> Any:
    connection = current_connection()
    assert connection is not None
    SEEN.append(connection.principal)
    return api_versions_response(request.header.api_version, Listener.BROKER)


def security(stores: Stores, client_auth: str, **extra: str) -> ListenerSecurity:
    settings = ssl_settings(server_settings(stores, client_auth, **extra), "SSL")
    return ListenerSecurity(
        "SSL",
        "SSL",
        server_context(settings),
        SslPrincipalMapper.from_rules(settings.principal_mapping_rules),
        handshake_timeout_s=1.0,
    )


async def principal_seen(port: int, context: ssl.SSLContext) -> KafkaPrincipal:
    SEEN.clear()
    async with await KafkaConnection.connect("127.0.0.1", port, tls=context) as conn:
        await conn.negotiate_versions()
    return SEEN[-1]


def test_the_principal_is_the_mapped_distinguished_name(stores: Stores) -> None:
    async def scenario() -> tuple[KafkaPrincipal, KafkaPrincipal]:
        listener = security(stores, "requested", **{"ssl.principal.mapping.rules": RULES})
        async with await start_server(handler, Listener.BROKER, security=listener) as server:
            with_cert = client_context(ssl_settings(client_settings(stores, stores.client)))
            without = client_context(ssl_settings(client_settings(stores, None)))
            return await principal_seen(server.port, with_cert), await principal_seen(
                server.port, without
            )

    assert run(scenario()) == (KafkaPrincipal("User", "ALICE"), ANONYMOUS)


def test_default_rules_give_the_whole_distinguished_name(stores: Stores) -> None:
    async def scenario() -> KafkaPrincipal:
        async with await start_server(
            handler, Listener.BROKER, security=security(stores, "required")
        ) as server:
            context = client_context(ssl_settings(client_settings(stores, stores.client)))
            return await principal_seen(server.port, context)

    assert run(scenario()) == KafkaPrincipal("User", "CN=alice,OU=rackwise-cluster")


@pytest.mark.parametrize(
    ("keystore", "client_auth"),
    [("none", "required"), ("stranger", "required"), ("stranger", "requested")],
)
def test_a_client_certificate_that_is_missing_or_untrusted_is_refused(
    stores: Stores, keystore: str, client_auth: str
) -> None:
    async def scenario() -> int:
        listener = security(stores, client_auth)
        async with await start_server(handler, Listener.BROKER, security=listener) as server:
            path = None if keystore == "none" else stores.stranger
            context = client_context(ssl_settings(client_settings(stores, path)))
            with pytest.raises(DisconnectException):
                async with await KafkaConnection.connect(
                    "127.0.0.1", server.port, tls=context
                ) as conn:
                    await conn.negotiate_versions(timeout_s=5)
            return server.failed_handshakes

    assert run(scenario()) == 1


def test_refusals_are_all_counted_and_logged_once_per_reason_and_interval(
    stores: Stores, caplog: pytest.LogCaptureFixture
) -> None:
    """Six refused certificates, then a plain-TCP peer, then two accepted clients: every one
    counted; one log line for the certificate refusals and one for the protocol error."""
    caplog.set_level(logging.INFO, logger="rackwise.net")

    async def scenario() -> tuple[int, int, int]:
        listener = security(stores, "required")
        async with await start_server(handler, Listener.BROKER, security=listener) as server:
            stranger = client_context(ssl_settings(client_settings(stores, stores.stranger)))
            for _ in range(6):
                with pytest.raises(DisconnectException):
                    async with await KafkaConnection.connect(
                        "127.0.0.1", server.port, tls=stranger
                    ) as conn:
                        await conn.negotiate_versions(timeout_s=5)
            with pytest.raises(DisconnectException):  # no TLS at all: WRONG_VERSION_NUMBER
                async with await KafkaConnection.connect("127.0.0.1", server.port) as conn:
                    await conn.negotiate_versions(timeout_s=5)
            good = client_context(ssl_settings(client_settings(stores, stores.client)))
            for _ in range(2):
                await principal_seen(server.port, good)
            return server.authentications

    assert run(scenario()) == (2, 7, 0)
    lines = [r.getMessage() for r in caplog.records if "Failed authentication" in r.getMessage()]
    assert len(lines) == 2, lines
    assert "certificate verify failed" in lines[0] and "more failed" not in lines[0]
    assert "WRONG_VERSION_NUMBER" in lines[1]


def test_a_client_that_does_not_trust_the_server_is_refused(stores: Stores) -> None:
    async def scenario() -> str:
        async with await start_server(
            handler, Listener.BROKER, security=security(stores, "none")
        ) as server:
            context = client_context(ssl_settings({}))  # the system's CAs only
            with pytest.raises(DisconnectException) as refused:
                await KafkaConnection.connect("127.0.0.1", server.port, tls=context)
            return str(refused.value)

    assert "CERTIFICATE_VERIFY_FAILED" in run(scenario())


def test_only_the_enabled_protocols_are_spoken(stores: Stores) -> None:
    async def scenario() -> None:
        listener = security(stores, "none", **{"ssl.enabled.protocols": "TLSv1.3"})
        async with await start_server(handler, Listener.BROKER, security=listener) as server:
            context = client_context(ssl_settings(client_settings(stores, None)))
            context.maximum_version = ssl.TLSVersion.TLSv1_2
            with pytest.raises(DisconnectException, match="failed"):
                await KafkaConnection.connect("127.0.0.1", server.port, tls=context)
            assert listener.tls is not None
            assert listener.tls.minimum_version == ssl.TLSVersion.TLSv1_3

    run(scenario())


def test_inline_pem_stores(stores: Stores) -> None:
    key_and_chain = stores.client.read_text()
    key = key_and_chain[: key_and_chain.index("-----BEGIN CERTIFICATE-----")]
    chain = key_and_chain[len(key) :]

    async def scenario() -> KafkaPrincipal:
        async with await start_server(
            handler, Listener.BROKER, security=security(stores, "required")
        ) as server:
            settings = {
                "ssl.truststore.certificates": stores.ca.pem_path.read_text(),
                "ssl.keystore.certificate.chain": chain,
                "ssl.keystore.key": key,
                "ssl.key.password": PASSWORD,
            }
            return await principal_seen(server.port, client_context(ssl_settings(settings)))

    assert run(scenario()).name == "CN=alice,OU=rackwise-cluster"


def test_a_store_that_cannot_be_read_is_named(stores: Stores, tmp_path: Path) -> None:
    with pytest.raises(TlsConfigError, match=r"ssl.keystore.location=.*node.p12: not a PKCS12"):
        server_context(
            ssl_settings(server_settings(stores, "none", **{"ssl.keystore.password": "x"}))
        )
    missing = tmp_path / "missing.pem"
    with pytest.raises(TlsConfigError, match=r"ssl.truststore.location=.*missing.pem"):
        client_context(
            ssl_settings({"ssl.truststore.location": str(missing), "ssl.truststore.type": "PEM"})
        )


def test_a_stalled_handshake_holds_only_its_socket(stores: Stores) -> None:
    """Peers that connect and send half a ClientHello, or nothing, do not delay another
    client's ApiVersions; the listener closes them after its handshake timeout."""

    async def scenario() -> tuple[float, bool, int]:
        listener = security(stores, "none")
        async with await start_server(handler, Listener.BROKER, security=listener) as server:
            stalled = []
            for i in range(20):
                sock = socket.create_connection(("127.0.0.1", server.port))
                if i % 2:
                    sock.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")  # half a hello
                sock.setblocking(False)
                stalled.append(sock)
            await asyncio.sleep(0.1)
            context = client_context(ssl_settings(client_settings(stores, None)))
            began = time.monotonic()
            async with await KafkaConnection.connect("127.0.0.1", server.port, tls=context) as conn:
                await conn.negotiate_versions()
            answered_s = time.monotonic() - began
            loop = asyncio.get_running_loop()
            closed = await asyncio.wait_for(
                asyncio.gather(*(loop.sock_recv(s, 1) for s in stalled)), 5
            )
            for sock in stalled:
                sock.close()
            return answered_s, all(c == b"" for c in closed), server.num_connections

    answered_s, all_closed, left = run(scenario())
    assert answered_s < 0.5
    assert all_closed  # each stalled peer was closed by the listener
    assert left == 0


def test_pipelined_answers_over_tls_all_come_back(stores: Stores) -> None:
    """Many requests sent at once over TLS, read only after the last is sent: every answer
    comes back, in order, while the server's socket fills and drains (a TLS transport's
    writer once stayed paused with nothing queued, and the connection stalled)."""
    count = 3000
    requests = b"".join(
        framed(header(ApiKey.API_VERSIONS, 0, i, flexible=False)) for i in range(count)
    )

    async def scenario() -> list[int]:
        async with await start_server(handler, Listener.BROKER,
                                      security=security(stores, "none")) as server:  # fmt: skip
            context = client_context(ssl_settings(client_settings(stores, None)))
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port, ssl=context)
            writer.write(requests)
            await writer.drain()
            ids = []
            for _ in range(count):
                size = int.from_bytes(await reader.readexactly(4), "big")
                answer = await reader.readexactly(size)
                ids.append(int.from_bytes(answer[:4], "big"))
            writer.close()
            return ids

    assert run(scenario()) == list(range(count))
