"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka speaks them: the mechanisms,
the salted credential a server keeps, and the four messages of an exchange (Kafka's
``ScramMechanism``, ``ScramFormatter`` and ``ScramMessages``).

Goals
    The exact computations of RFC 5802 (``Hi`` is PBKDF2 with the mechanism's HMAC, so
    :func:`hashlib.pbkdf2_hmac` computes it), the message formats Kafka's regular expressions
    accept, and Kafka's bounds: a credential has 4096 to 16384 iterations.

Constraints
    Pure: the random parts (salts, nonces) come from :mod:`secrets` unless the caller gives
    them, so tests can replay RFC 7677's example. A server never holds a password, only
    :class:`ScramCredential` (salt, StoredKey, ServerKey, iterations).

Worked example
    RFC 7677's exchange: user ``user``, password ``pencil``, client nonce
    ``rOprNGfwEbeRWgbNEkqO``, salt ``W22ZaJ0SNY7soEsUEjb6gQ==`` and 4096 iterations give the
    client-final message ``c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,
    p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=`` and the server's
    ``v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=``.
"""

from __future__ import annotations

import base64
import binascii
import enum
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from typing import Final

MIN_ITERATIONS: Final = 4096
MAX_ITERATIONS: Final = 16384
"""Kafka's bounds on a SCRAM credential's iterations (both mechanisms)."""


class ScramError(Exception):
    """A SCRAM exchange that cannot go on: a malformed message, a wrong proof, an unknown user.
    The message is for the server's log only (Kafka's ``SaslException``): the client is told
    only that its credentials were invalid."""


class ScramMechanism(enum.Enum):
    """A SCRAM mechanism: its name, Kafka's type byte (in UserScramCredentialRecord and the
    admin APIs) and its hash."""

    SCRAM_SHA_256 = ("SCRAM-SHA-256", 1, "sha256")
    SCRAM_SHA_512 = ("SCRAM-SHA-512", 2, "sha512")

    def __init__(self, mechanism_name: str, type_id: int, hash_name: str) -> None:
        self.mechanism_name = mechanism_name
        self.type_id = type_id
        self.hash_name = hash_name

    @classmethod
    def by_name(cls, name: str) -> ScramMechanism | None:
        return next((m for m in cls if m.mechanism_name == name), None)

    @classmethod
    def by_type(cls, type_id: int) -> ScramMechanism | None:
        return next((m for m in cls if m.type_id == type_id), None)

    def __str__(self) -> str:
        return self.mechanism_name

    # ---- RFC 5802's functions ------------------------------------------------------------

    def hmac(self, key: bytes, data: bytes) -> bytes:
        return hmac.digest(key, data, self.hash_name)

    def hash(self, data: bytes) -> bytes:
        return hashlib.new(self.hash_name, data).digest()

    def salted_password(self, password: str, salt: bytes, iterations: int) -> bytes:
        """``Hi(Normalize(password), salt, i)`` (Kafka normalizes to UTF-8 only)."""
        return hashlib.pbkdf2_hmac(self.hash_name, password.encode(), salt, iterations)

    def client_key(self, salted: bytes) -> bytes:
        return self.hmac(salted, b"Client Key")

    def server_key(self, salted: bytes) -> bytes:
        return self.hmac(salted, b"Server Key")

    def credential(self, salt: bytes, salted: bytes, iterations: int) -> ScramCredential:
        """What a server keeps of a salted password (Kafka's ``generateCredential``)."""
        stored = self.hash(self.client_key(salted))
        return ScramCredential(salt, stored, self.server_key(salted), iterations)

    def credential_for(
        self, password: str, iterations: int, salt: bytes | None = None
    ) -> ScramCredential:
        salt = salt if salt is not None else random_string().encode()
        return self.credential(salt, self.salted_password(password, salt, iterations), iterations)


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """A user's credential for one mechanism, as UserScramCredentialRecord carries it."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def random_string() -> str:
    """Kafka's ``secureRandomString``: 130 random bits in base 36."""
    return _base36(secrets.randbits(130))


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if n == 0:
            return out


def xor(a: bytes, b: bytes) -> bytes:
    if len(a) != len(b):
        raise ScramError("Argument arrays must be of the same length")
    return bytes(x ^ y for x, y in zip(a, b, strict=True))


def sasl_name(username: str) -> str:
    """A user name as a SCRAM ``saslname`` (``=`` and ``,`` escaped)."""
    return username.replace("=", "=3D").replace(",", "=2C")


def username_of(name: str) -> str:
    """The user name a ``saslname`` stands for; raises :class:`ScramError` on a stray ``=``."""
    unescaped = name.replace("=2C", ",")
    if "=" in unescaped.replace("=3D", ""):
        raise ScramError(f"Invalid username: {name}")
    return unescaped.replace("=3D", "=")


# ---- the messages, as Kafka's patterns accept them -------------------------------------------

_SAFE = r"[\x01-\x2B\x2D-\x3C\x3E-\x7F]"
_VALUE = r"[\x01-\x2B\x2D-\x7F]+"
_PRINTABLE = r"[\x21-\x2B\x2D-\x7E]+"
_SASLNAME = rf"(?:{_SAFE}|=2C|=3D)+"
_B64 = r"[a-zA-Z0-9/+]"
_BASE64 = rf"(?:{_B64}{{4}})*(?:{_B64}{{3}}=|{_B64}{{2}}==)?"
_RESERVED = rf"(?:m={_VALUE},)?"
_EXTENSIONS = rf"(?P<extensions>(?:,[A-Za-z]+={_VALUE})*)"
CLIENT_FIRST: Final = re.compile(
    rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,{_RESERVED}"
    rf"n=(?P<saslname>{_SASLNAME}),r=(?P<nonce>{_PRINTABLE}){_EXTENSIONS}"
)
SERVER_FIRST: Final = re.compile(
    rf"{_RESERVED}r=(?P<nonce>{_PRINTABLE}),s=(?P<salt>{_BASE64}),i=(?P<iterations>[0-9]+)"
    rf"{_EXTENSIONS}"
)
CLIENT_FINAL: Final = re.compile(
    rf"c=(?P<channel>{_BASE64}),r=(?P<nonce>{_PRINTABLE}){_EXTENSIONS},p=(?P<proof>{_BASE64})"
)
SERVER_FINAL: Final = re.compile(
    rf"(?:e=(?P<error>{_SAFE}+))|(?:v=(?P<signature>{_BASE64})){_EXTENSIONS}"
)
MAX_NONCE_CHARS: Final = 1024
"""The longest client nonce a server takes (Kafka takes any within its receive size; a bound
keeps one login's work small)."""


def _text(data: bytes, what: str) -> str:
    try:
        return data.decode()
    except UnicodeDecodeError:
        raise ScramError(f"Invalid SCRAM {what} message format: not UTF-8") from None


def _b64decode(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except binascii.Error as e:
        raise ScramError(f"invalid base64: {e}") from None


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@dataclass(frozen=True, slots=True)
class ClientFirst:
    """``n,[a=authzid],n=saslname,r=nonce[,extensions]``."""

    saslname: str
    nonce: str
    authzid: str = ""
    extensions: str = ""

    @classmethod
    def parse(cls, data: bytes) -> ClientFirst:
        text = _text(data, "client first")
        m = CLIENT_FIRST.fullmatch(text)
        if m is None:
            raise ScramError(f"Invalid SCRAM client first message format: {text[:200]}")
        return cls(m["saslname"], m["nonce"], m["authzid"] or "", m["extensions"])

    @property
    def bare(self) -> str:
        return f"n={self.saslname},r={self.nonce}{self.extensions}"

    @property
    def gs2_header(self) -> str:
        return f"n,{'a=' + self.authzid if self.authzid else ''},"

    def to_bytes(self) -> bytes:
        return (self.gs2_header + self.bare).encode()


@dataclass(frozen=True, slots=True)
class ServerFirst:
    """``r=client-nonce+server-nonce,s=salt,i=iterations``."""

    nonce: str
    salt: bytes
    iterations: int

    @classmethod
    def parse(cls, data: bytes) -> ServerFirst:
        text = _text(data, "server first")
        m = SERVER_FIRST.fullmatch(text)
        if m is None:
            raise ScramError(f"Invalid SCRAM server first message format: {text[:200]}")
        iterations = int(m["iterations"]) if len(m["iterations"]) <= 10 else 0
        if iterations <= 0 or iterations > 2**31 - 1:
            raise ScramError(
                f"Invalid SCRAM server first message format: invalid iterations {m['iterations']}"
            )
        return cls(m["nonce"], _b64decode(m["salt"]), iterations)

    def to_text(self) -> str:
        return f"r={self.nonce},s={b64(self.salt)},i={self.iterations}"


@dataclass(frozen=True, slots=True)
class ClientFinal:
    """``c=channel-binding,r=nonce[,extensions],p=proof``."""

    channel_binding: bytes
    nonce: str
    proof: bytes
    extensions: str = ""

    @classmethod
    def parse(cls, data: bytes) -> ClientFinal:
        text = _text(data, "client final")
        m = CLIENT_FINAL.fullmatch(text)
        if m is None:
            raise ScramError(f"Invalid SCRAM client final message format: {text[:200]}")
        return cls(_b64decode(m["channel"]), m["nonce"], _b64decode(m["proof"]), m["extensions"])

    @property
    def without_proof(self) -> str:
        return f"c={b64(self.channel_binding)},r={self.nonce}{self.extensions}"

    def to_bytes(self) -> bytes:
        return f"{self.without_proof},p={b64(self.proof)}".encode()


def auth_message(first: ClientFirst, server_first: str, final_without_proof: str) -> bytes:
    return f"{first.bare},{server_first},{final_without_proof}".encode()
