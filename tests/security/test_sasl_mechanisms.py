"""SCRAM and PLAIN exchanges: RFC 7677's test vector, properties against a reference written
from RFC 5802 with hashlib and hmac, and Kafka's refusals."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackwise.security.jaas import (
    JaasConfigException,
    login_credentials,
    parse_jaas_config,
    plain_users,
)
from rackwise.security.sasl import (
    PlainServer,
    SaslAuthenticationException,
    ScramClient,
    ScramServer,
    plain_token,
)
from rackwise.security.scram import (
    ClientFirst,
    ScramCredential,
    ScramError,
    ScramMechanism,
    sasl_name,
    username_of,
)

SHA256 = ScramMechanism.SCRAM_SHA_256
SHA512 = ScramMechanism.SCRAM_SHA_512
RFC_NONCE = "rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")


def test_rfc7677_exchange() -> None:
    credential = SHA256.credential_for("pencil", 4096, RFC_SALT)
    server = ScramServer(SHA256, {"user": credential}.get, nonce=RFC_SERVER_NONCE)
    client = ScramClient(SHA256, "user", "pencil", nonce=RFC_NONCE)
    assert client.first() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    server_first = server.evaluate(client.first())
    assert server_first == (
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    )
    final = client.final(server_first)
    assert final == (
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    server_final = server.evaluate(final)
    assert server_final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    client.verify(server_final)
    assert server.complete and server.authorization_id == "user"


def _reference_credential(
    hash_name: str, password: str, salt: bytes, i: int
) -> tuple[bytes, bytes]:
    """RFC 5802's Hi written out as its loop, with StoredKey and ServerKey."""
    u = hmac.new(password.encode(), salt + b"\0\0\0\1", hash_name).digest()
    result = bytearray(u)
    for _ in range(i - 1):
        u = hmac.new(password.encode(), u, hash_name).digest()
        result = bytearray(a ^ b for a, b in zip(result, u, strict=True))
    salted = bytes(result)
    client_key = hmac.new(salted, b"Client Key", hash_name).digest()
    stored = hashlib.new(hash_name, client_key).digest()
    return stored, hmac.new(salted, b"Server Key", hash_name).digest()


@settings(max_examples=25, deadline=None)
@given(
    mechanism=st.sampled_from(list(ScramMechanism)),
    password=st.text(min_size=1, max_size=20),
    salt=st.binary(min_size=1, max_size=24),
    iterations=st.integers(1, 40),
)
def test_credential_matches_reference(
    mechanism: ScramMechanism, password: str, salt: bytes, iterations: int
) -> None:
    credential = mechanism.credential_for(password, iterations, salt)
    assert (credential.stored_key, credential.server_key) == _reference_credential(
        mechanism.hash_name, password, salt, iterations
    )


USERNAMES = st.text(
    alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=12
)


@settings(max_examples=40, deadline=None)
@given(
    mechanism=st.sampled_from(list(ScramMechanism)),
    username=USERNAMES,
    password=st.text(min_size=1, max_size=16),
    wrong=st.booleans(),
)
def test_client_and_server_agree(
    mechanism: ScramMechanism, username: str, password: str, wrong: bool
) -> None:
    credential = mechanism.credential_for(password, 4096)
    server = ScramServer(mechanism, {username: credential}.get)
    client = ScramClient(mechanism, username, password + ("x" if wrong else ""))
    final = client.final(server.evaluate(client.first()))
    if wrong:
        with pytest.raises(ScramError, match="Invalid client credentials"):
            server.evaluate(final)
        return
    client.verify(server.evaluate(final))
    assert server.authorization_id == username


@given(USERNAMES)
def test_sasl_names_round_trip(username: str) -> None:
    assert username_of(sasl_name(username)) == username


def _server(iterations: int = 4096) -> ScramServer:
    credential = SHA512.credential_for("secret", iterations, b"salt")
    return ScramServer(SHA512, {"alice": credential}.get)


@pytest.mark.parametrize(
    ("token", "message"),
    [
        (b"n,,n=bob,r=abc", "Invalid user credentials"),
        (b"y,,n=alice,r=abc", "Invalid SCRAM client first message format"),
        (b"n,,n=alice,r=" + b"x" * 5000, "too long"),
        (b"\xff\xfe", "not UTF-8"),
        (b"n,,n=al=ice,r=abc", "Invalid SCRAM client first message format"),
    ],
)
def test_client_first_refused(token: bytes, message: str) -> None:
    with pytest.raises(ScramError, match=message):
        _server().evaluate(token)


def test_authorization_id_other_than_user_refused() -> None:
    with pytest.raises(SaslAuthenticationException, match="authorization id that is different"):
        _server().evaluate(b"n,a=bob,n=alice,r=abc")


def test_low_iterations_credential_refused() -> None:
    with pytest.raises(ScramError, match="Iterations 100 is less than the minimum 4096"):
        _server(100).evaluate(b"n,,n=alice,r=abc")


def test_wrong_nonce_and_replayed_final_refused() -> None:
    server = _server()
    client = ScramClient(SHA512, "alice", "secret")
    server.evaluate(client.first())
    forged = b"c=biws,r=other,p=" + base64.b64encode(b"\0" * 64)
    with pytest.raises(ScramError, match="Invalid client nonce"):
        server.evaluate(forged)
    with pytest.raises(SaslAuthenticationException, match="state FAILED"):
        server.evaluate(forged)


def test_client_refuses_absurd_iterations_and_foreign_nonce() -> None:
    client = ScramClient(SHA512, "alice", "secret", nonce="abc")
    with pytest.raises(ScramError, match="too many"):
        client.final(b"r=abcdef,s=c2FsdA==,i=99999999")
    with pytest.raises(ScramError, match="less than the minimum"):
        client.final(b"r=abcdef,s=c2FsdA==,i=1")
    with pytest.raises(ScramError, match="does not start with client nonce"):
        client.final(b"r=zzz,s=c2FsdA==,i=4096")
    with pytest.raises(ScramError, match="invalid iterations"):
        client.final(b"r=abcdef,s=c2FsdA==,i=99999999999999999999")


def test_client_first_with_extensions_and_authzid_parses() -> None:
    first = ClientFirst.parse(b"n,a=alice,n=alice,r=abc,tokenauth=false")
    assert (first.authzid, first.saslname, first.nonce) == ("alice", "alice", "abc")
    assert first.bare == "n=alice,r=abc,tokenauth=false"


def test_scram_mechanism_names_and_types() -> None:
    assert ScramMechanism.by_name("SCRAM-SHA-512") is SHA512
    assert ScramMechanism.by_type(1) is SHA256
    assert ScramMechanism.by_name("SCRAM-SHA-1") is None
    assert isinstance(SHA256.credential_for("p", 4096), ScramCredential)


def _plain() -> PlainServer:
    return PlainServer(lambda u, p: {"alice": "secret"}.get(u) == p)


def test_plain_accepts_and_names_the_user() -> None:
    server = _plain()
    assert server.evaluate(plain_token("alice", "secret")) == b""
    assert server.complete and server.authorization_id == "alice"
    assert _plain().evaluate(b"alice\0alice\0secret") == b""


@pytest.mark.parametrize(
    ("token", "message"),
    [
        (b"alice", "Invalid SASL/PLAIN response: expected 3 tokens, got 1"),
        (b"\0a\0b\0c", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"),
        (b"\0\0secret", "Authentication failed: username not specified"),
        (b"\0alice\0", "Authentication failed: password not specified"),
        (b"\0alice\0wrong", "Authentication failed: Invalid username or password"),
        (b"\0bob\0secret", "Authentication failed: Invalid username or password"),
        (b"bob\0alice\0secret", "authorization id that is different from username"),
    ],
)
def test_plain_refusals(token: bytes, message: str) -> None:
    with pytest.raises(SaslAuthenticationException) as e:
        _plain().evaluate(token)
    assert message in str(e.value)


def test_jaas_config_as_kafka_reads_it() -> None:
    entries = parse_jaas_config(
        "org.apache.kafka.common.security.plain.PlainLoginModule required\n"
        '  username="admin" password="admin-secret" // the broker\'s own\n'
        '  user_admin="admin-secret" /* users */ user_alice="a\\"b";'
    )
    assert len(entries) == 1 and entries[0].control_flag == "required"
    assert dict(plain_users(entries)) == {"admin": "admin-secret", "alice": 'a"b'}
    assert login_credentials(entries) == ("admin", "admin-secret")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "Login module not specified in JAAS config"),
        ("x.PlainLoginModule", "Login module control flag not specified in JAAS config"),
        ('x.PlainLoginModule required a="b"', "JAAS config entry not terminated by semi-colon"),
        ("x.PlainLoginModule required a;", "Value not specified for key 'a' in JAAS config"),
        ("x.PlainLoginModule always;", "Invalid login module control flag 'always'"),
    ],
)
def test_jaas_config_refusals(text: str, message: str) -> None:
    with pytest.raises(JaasConfigException, match=message):
        parse_jaas_config(text)
