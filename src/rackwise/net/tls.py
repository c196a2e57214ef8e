"""TLS for listeners and connections: Python's ``ssl`` contexts built from Kafka's ``ssl.*``
settings (:mod:`rackwise.security.ssl_config`), and what a listener knows of its security
(:class:`ListenerSecurity`).

Goals
    * :func:`server_context` and :func:`client_context` load PEM and PKCS12 key and trust
      stores (PKCS12 through ``cryptography``) into an ``ssl.SSLContext`` limited to the
      enabled protocols (TLS 1.2 and 1.3 at most); a server asks for a client certificate as
      ``ssl.client.auth`` says.
    * :meth:`ListenerSecurity.principal` gives an accepted TLS connection's principal:
      ``User:`` its certificate's mapped distinguished name, :data:`ANONYMOUS` without one.

Constraints
    * A store that cannot be read raises :class:`TlsConfigError` naming the file and the key.
    * ``ssl.SSLContext`` loads a certificate chain from files only: an inline PEM key store,
      or a PKCS12 one converted, passes through a private temporary file, removed at once.
    * A handshake is bounded by :attr:`ListenerSecurity.handshake_timeout_s`; a connection that
      stops mid-handshake holds its socket and nothing else until then.

Worked example
    ``server_context(ssl_settings({"ssl.keystore.type": "PEM", "ssl.keystore.location":
    "b1.pem", "ssl.truststore.type": "PEM", "ssl.truststore.location": "ca.pem",
    "ssl.client.auth": "required"}, "SSL"))`` is a server context that refuses clients without
    a certificate signed by ``ca.pem``.
"""

from __future__ import annotations

import contextlib
import os
import ssl
import tempfile
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from cryptography.hazmat.primitives.serialization import (
    BestAvailableEncryption,
    Encoding,
    PrivateFormat,
    pkcs12,
)

from rackwise.common.errors import RackwiseError
from rackwise.security import ANONYMOUS, KafkaPrincipal
from rackwise.security.protocols import PLAINTEXT
from rackwise.security.ssl_config import (
    KEYSTORE_LOCATION,
    TRUSTSTORE_LOCATION,
    SslSettings,
    Store,
)
from rackwise.security.ssl_principal import SslPrincipalMapper, distinguished_name

DEFAULT_HANDSHAKE_TIMEOUT_S: Final = 10.0
"""The longest a TLS handshake may take on a listener (within ``connections.max.idle.ms``)."""
_VERSIONS: Final = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_VERIFY: Final = {
    "required": ssl.CERT_REQUIRED,
    "requested": ssl.CERT_OPTIONAL,
    "none": ssl.CERT_NONE,
}


class TlsConfigError(RackwiseError):
    """A key or trust store that cannot be read, named."""


@dataclass(frozen=True, slots=True)
class ListenerSecurity:
    """What a listener speaks: its name, its security protocol, its TLS context (None without
    TLS) and how a TLS peer's principal is named."""

    listener_name: str = PLAINTEXT
    security_protocol: str = PLAINTEXT
    tls: ssl.SSLContext | None = None
    mapper: SslPrincipalMapper = field(default_factory=lambda: SslPrincipalMapper.from_rules(None))
    handshake_timeout_s: float = DEFAULT_HANDSHAKE_TIMEOUT_S

    @staticmethod
    def handshake_timeout_s_within(idle_timeout_s: float | None) -> float:
        """:data:`DEFAULT_HANDSHAKE_TIMEOUT_S`, or the idle timeout when shorter."""
        if idle_timeout_s is None:
            return DEFAULT_HANDSHAKE_TIMEOUT_S
        return min(DEFAULT_HANDSHAKE_TIMEOUT_S, idle_timeout_s)

    def principal(self, transport: Any) -> KafkaPrincipal:
        """The principal of the TLS connection of ``transport`` (module docstring)."""
        ssl_object = transport.get_extra_info("ssl_object")
        certificate = None if ssl_object is None else ssl_object.getpeercert(binary_form=True)
        if not certificate:
            return ANONYMOUS
        return self.mapper.principal(distinguished_name(certificate))


def _read(path: str, key: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise TlsConfigError(f"{key}={path}: cannot read it: {e.strerror or e}") from None


def _pkcs12(store: Store, key: str) -> pkcs12.PKCS12KeyAndCertificates:
    assert store.location is not None
    password = store.password.encode() if store.password else None
    try:
        return pkcs12.load_pkcs12(_read(store.location, key), password)
    except ValueError as e:
        raise TlsConfigError(
            f"{key}={store.location}: not a PKCS12 store this password opens ({e}); JKS stores "
            "are not read: convert with keytool -importkeystore -deststoretype PKCS12"
        ) from None


@contextlib.contextmanager
def _private_file(text: bytes) -> Iterator[str]:
    """A temporary file holding ``text``, readable by this user only, removed afterwards."""
    fd, name = tempfile.mkstemp(prefix="rackwise-tls-", suffix=".pem")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text)
        yield name
    finally:
        os.unlink(name)


def _load_keystore(context: ssl.SSLContext, store: Store) -> None:
    if store.store_type == "PEM" and store.location is not None:
        try:
            context.load_cert_chain(store.location, password=store.key_password)
        except (OSError, ssl.SSLError) as e:
            raise TlsConfigError(f"{KEYSTORE_LOCATION}={store.location}: {e}") from None
        return
    if store.store_type == "PEM":
        assert store.pem is not None and store.key_pem is not None
        text = (store.key_pem.strip() + "\n" + store.pem.strip() + "\n").encode()
        password = store.key_password
    else:
        loaded = _pkcs12(store, KEYSTORE_LOCATION)
        if loaded.key is None or loaded.cert is None:
            raise TlsConfigError(f"{KEYSTORE_LOCATION}={store.location}: holds no private key")
        password = store.key_password or store.password or "rackwise"
        key = loaded.key.private_bytes(
            Encoding.PEM, PrivateFormat.PKCS8, BestAvailableEncryption(password.encode())
        )
        chain = [loaded.cert.certificate, *(c.certificate for c in loaded.additional_certs)]
        text = key + b"".join(c.public_bytes(Encoding.PEM) for c in chain)
    with _private_file(text) as name:
        try:
            context.load_cert_chain(name, password=password)
        except ssl.SSLError as e:
            raise TlsConfigError(f"the key store: {e}") from None


def _load_truststore(context: ssl.SSLContext, store: Store | None) -> None:
    if store is None:
        context.load_default_certs(ssl.Purpose.SERVER_AUTH)
        return
    if store.store_type == "PEM":
        try:
            if store.pem is not None:
                context.load_verify_locations(cadata=store.pem)
            else:
                context.load_verify_locations(cafile=store.location)
        except (OSError, ssl.SSLError) as e:
            raise TlsConfigError(f"{TRUSTSTORE_LOCATION}={store.location}: {e}") from None
        return
    loaded = _pkcs12(store, TRUSTSTORE_LOCATION)
    certificates = [c.certificate for c in loaded.additional_certs]
    if loaded.cert is not None:
        certificates.append(loaded.cert.certificate)
    if not certificates:
        raise TlsConfigError(f"{TRUSTSTORE_LOCATION}={store.location}: holds no certificate")
    context.load_verify_locations(
        cadata="".join(c.public_bytes(Encoding.PEM).decode() for c in certificates)
    )


def _limit(context: ssl.SSLContext, settings: SslSettings) -> None:
    versions = sorted(_VERSIONS[p] for p in settings.protocols)
    context.minimum_version = versions[0]
    context.maximum_version = versions[-1]


def server_context(settings: SslSettings) -> ssl.SSLContext:
    """A listener's TLS context (module docstring); a listener needs a key store."""
    if settings.keystore is None:
        raise TlsConfigError(
            f"an SSL listener needs a key store ({KEYSTORE_LOCATION}, or "
            "ssl.keystore.certificate.chain and ssl.keystore.key)"
        )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _limit(context, settings)
    _load_keystore(context, settings.keystore)
    context.verify_mode = _VERIFY[settings.client_auth]
    if settings.client_auth != "none":
        _load_truststore(context, settings.truststore)
    return context


def client_context(settings: SslSettings) -> ssl.SSLContext:
    """A client's TLS context: the server's certificate checked against the trust store (and
    its host name, unless ``ssl.endpoint.identification.algorithm`` is empty), the key store's
    certificate offered when the server asks for one."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _limit(context, settings)
    context.check_hostname = settings.check_hostname
    _load_truststore(context, settings.truststore)
    if settings.keystore is not None:
        _load_keystore(context, settings.keystore)
    return context


class UseDefault:
    """The type of :data:`USE_DEFAULT`."""


USE_DEFAULT: Final = UseDefault()
"""A connection's TLS when none is given: :func:`client_tls`."""
_CLIENT_TLS: ContextVar[ssl.SSLContext | None] = ContextVar("rackwise_client_tls", default=None)


def use_client_tls(context: ssl.SSLContext | None) -> None:
    """Make ``context`` the TLS of the connections the calling task (and the tasks it starts
    from now on) opens without naming one: a command's ``--command-config`` with
    ``security.protocol=SSL`` reaches every connection the command makes."""
    _CLIENT_TLS.set(context)


def client_tls() -> ssl.SSLContext | None:
    """The TLS context :func:`use_client_tls` set (None: plaintext)."""
    return _CLIENT_TLS.get()
