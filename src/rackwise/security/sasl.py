"""The SASL mechanisms' exchanges, server and client side: PLAIN (RFC 4616) and SCRAM (RFC 5802),
as Kafka's ``PlainSaslServer``, ``ScramSaslServer`` and ``ScramSaslClient`` run them.

Goals
    A server exchange takes the client's tokens one at a time (:meth:`SaslServer.evaluate`)
    and answers the next token, until :attr:`SaslServer.complete`; then
    :attr:`SaslServer.authorization_id` names the user. Failures keep Kafka's split:
    :class:`SaslAuthenticationException` carries a message the client may see (PLAIN's
    ``Authentication failed: Invalid username or password``), :class:`ScramError` one for the
    server's log only, the client being told that its credentials were invalid.

Constraints
    Pure. A server looks users up through the callables it is given (PLAIN: ``check(user,
    password) -> bool``; SCRAM: ``lookup(user) -> ScramCredential | None``) and computes two
    HMACs and a hash per login: the expensive PBKDF2 is the client's. Compare with
    :func:`hmac.compare_digest`.

Worked example
    ``PlainServer(lambda u, p: (u, p) == ("alice", "secret")).evaluate(b"\\0alice\\0secret")``
    completes with ``authorization_id == "alice"``; ``b"alice"`` alone raises
    ``Invalid SASL/PLAIN response: expected 3 tokens, got 1``.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from typing import Final, Protocol

from rackwise.security.scram import (
    MAX_NONCE_CHARS,
    MIN_ITERATIONS,
    ClientFinal,
    ClientFirst,
    ScramCredential,
    ScramError,
    ScramMechanism,
    ServerFirst,
    auth_message,
    b64,
    random_string,
    sasl_name,
    username_of,
    xor,
)

PLAIN: Final = "PLAIN"
MECHANISMS: Final = (PLAIN, "SCRAM-SHA-256", "SCRAM-SHA-512")
"""The mechanisms rackwise serves, by Kafka's names."""
CLIENT_MAX_ITERATIONS: Final = 65536
"""The most iterations rackwise's client computes for a server (four times Kafka's bound on a
credential): a hostile server cannot make a login cost more than about a tenth of a second."""


class SaslAuthenticationException(Exception):
    """Kafka's ``SaslAuthenticationException``: authentication failed, and the message may be
    sent to the client."""


class SaslServer(Protocol):
    """One authentication exchange on the server side."""

    mechanism: str

    @property
    def complete(self) -> bool: ...

    @property
    def authorization_id(self) -> str: ...

    def evaluate(self, token: bytes) -> bytes:
        """The answer to the client's next token."""
        ...


class PlainServer:
    """PLAIN's one step: ``[authzid] NUL authcid NUL passwd``."""

    mechanism = PLAIN

    def __init__(self, check: Callable[[str, str], bool]) -> None:
        self._check = check
        self._user = ""
        self._complete = False

    @property
    def complete(self) -> bool:
        return self._complete

    @property
    def authorization_id(self) -> str:
        return self._user

    def evaluate(self, token: bytes) -> bytes:
        if self._complete:
            raise SaslAuthenticationException("PLAIN authentication already complete")
        text = token.decode(errors="replace")
        tokens = text.split("\0", 3)
        if len(tokens) != 3:
            raise SaslAuthenticationException(
                f"Invalid SASL/PLAIN response: expected 3 tokens, got {min(len(tokens), 4)}"
            )
        authzid, user, password = tokens
        if not user:
            raise SaslAuthenticationException("Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationException("Authentication failed: password not specified")
        if not self._check(user, password):
            raise SaslAuthenticationException("Authentication failed: Invalid username or password")
        if authzid and authzid != user:
            raise SaslAuthenticationException(
                "Authentication failed: Client requested an authorization id that is different "
                "from username"
            )
        self._user = user
        self._complete = True
        return b""


class ScramServer:
    """SCRAM's two steps on the server (Kafka's ``ScramSaslServer``)."""

    def __init__(
        self,
        mechanism: ScramMechanism,
        lookup: Callable[[str], ScramCredential | None],
        nonce: str | None = None,
    ) -> None:
        self.scram = mechanism
        self.mechanism = mechanism.mechanism_name
        self._lookup = lookup
        self._server_nonce = nonce
        self._first: ClientFirst | None = None
        self._server_first: ServerFirst | None = None
        self._credential: ScramCredential | None = None
        self._user = ""
        self._complete = False
        self._failed = False

    @property
    def complete(self) -> bool:
        return self._complete

    @property
    def authorization_id(self) -> str:
        return self._user

    def evaluate(self, token: bytes) -> bytes:
        if self._failed or self._complete:
            state = "COMPLETE" if self._complete else "FAILED"
            raise SaslAuthenticationException(f"Unexpected challenge in Sasl server state {state}")
        try:
            if self._first is None:
                return self._client_first(token)
            return self._client_final(token)
        except (ScramError, SaslAuthenticationException):
            self._failed = True
            self._credential = None
            raise

    def _client_first(self, token: bytes) -> bytes:
        first = ClientFirst.parse(token)
        if len(first.nonce) > MAX_NONCE_CHARS:
            raise ScramError(f"Client nonce of {len(first.nonce)} characters is too long")
        user = username_of(first.saslname)
        credential = self._lookup(user)
        if credential is None:
            raise ScramError("Authentication failed: Invalid user credentials")
        if first.authzid and first.authzid != user:
            raise SaslAuthenticationException(
                "Authentication failed: Client requested an authorization id that is different "
                "from username"
            )
        minimum = MIN_ITERATIONS
        if credential.iterations < minimum:
            raise ScramError(
                f"Iterations {credential.iterations} is less than the minimum {minimum} for "
                f"{self.mechanism}"
            )
        nonce = self._server_nonce or random_string()
        self._first = first
        self._user = user
        self._credential = credential
        self._server_first = ServerFirst(
            first.nonce + nonce, credential.salt, credential.iterations
        )
        return self._server_first.to_text().encode()

    def _client_final(self, token: bytes) -> bytes:
        final = ClientFinal.parse(token)
        first, server_first, credential = self._first, self._server_first, self._credential
        assert first is not None and server_first is not None and credential is not None
        if not final.nonce.endswith(server_first.nonce):
            raise ScramError("Invalid client nonce in the final client message.")
        message = auth_message(first, server_first.to_text(), final.without_proof)
        signature = self.scram.hmac(credential.stored_key, message)
        if len(final.proof) != len(signature):
            raise ScramError("Invalid client credentials")
        computed = self.scram.hash(xor(signature, final.proof))
        if not hmac.compare_digest(computed, credential.stored_key):
            raise ScramError("Invalid client credentials")
        server_signature = self.scram.hmac(credential.server_key, message)
        self._credential = None
        self._complete = True
        return b"v=" + b64(server_signature).encode()


class ScramClient:
    """SCRAM's client side (Kafka's ``ScramSaslClient``): :meth:`first`, then
    :meth:`final` with the server's first message, then :meth:`verify` with its last.
    ``max_iterations`` refuses a server asking for more work than a login should cost."""

    def __init__(
        self,
        mechanism: ScramMechanism,
        username: str,
        password: str,
        nonce: str | None = None,
        max_iterations: int = CLIENT_MAX_ITERATIONS,
    ) -> None:
        self.scram = mechanism
        self._username = username
        self._password = password
        self._first = ClientFirst(sasl_name(username), nonce or random_string())
        self._max_iterations = max_iterations
        self._server_signature = b""

    def first(self) -> bytes:
        return self._first.to_bytes()

    def final(self, server_first_message: bytes) -> bytes:
        server_first = ServerFirst.parse(server_first_message)
        if not server_first.nonce.startswith(self._first.nonce):
            raise ScramError("Invalid server nonce: does not start with client nonce")
        if server_first.iterations < MIN_ITERATIONS:
            raise ScramError(
                f"Requested iterations {server_first.iterations} is less than the minimum "
                f"{MIN_ITERATIONS} for {self.scram}"
            )
        if server_first.iterations > self._max_iterations:
            raise ScramError(f"Requested iterations {server_first.iterations} are too many")
        salted = self.scram.salted_password(
            self._password, server_first.salt, server_first.iterations
        )
        unsigned = ClientFinal(self._first.gs2_header.encode(), server_first.nonce, b"")
        message = auth_message(self._first, server_first.to_text(), unsigned.without_proof)
        client_key = self.scram.client_key(salted)
        proof = xor(client_key, self.scram.hmac(self.scram.hash(client_key), message))
        self._server_signature = self.scram.hmac(self.scram.server_key(salted), message)
        return ClientFinal(unsigned.channel_binding, unsigned.nonce, proof).to_bytes()

    def verify(self, server_final_message: bytes) -> None:
        text = server_final_message.decode(errors="replace")
        if text.startswith("e="):
            raise ScramError(
                f"Sasl authentication using {self.scram} failed with error: {text[2:]}"
            )
        expected = "v=" + b64(self._server_signature)
        if not hmac.compare_digest(text.encode(), expected.encode()):
            raise ScramError("Invalid server signature in server final message")


def plain_token(username: str, password: str) -> bytes:
    """The one token of a PLAIN client."""
    return f"\0{username}\0{password}".encode()
