"""Kafka's ``ssl.*`` settings of a listener or a client, read and checked (no file is opened
here: :mod:`rackwise.net.tls` loads the stores they name).

Goals
    :func:`ssl_settings` gives the :class:`SslSettings` of a listener (its
    ``listener.name.<name>.ssl.*`` keys winning over the plain ``ssl.*`` ones, as Kafka's
    listener prefixes do) or of a client, or raises ValueError naming the key and the value.

Constraints
    * Key stores and trust stores are PEM or PKCS12 (``ssl.keystore.type``; Kafka's default
      JKS is read as PKCS12, as Java reads a PKCS12 file given as JKS; a real JKS file fails
      when it is loaded, naming it). PEM may be inline (``ssl.keystore.certificate.chain``,
      ``ssl.keystore.key``, ``ssl.truststore.certificates``) or in files.
    * ``ssl.enabled.protocols`` may name TLSv1.2 and TLSv1.3 only; ``ssl.client.auth`` is
      ``required``, ``requested`` or ``none``.

Worked example
    ``{"ssl.keystore.location": "/s/b1.p12", "ssl.keystore.password": "pw",
    "listener.name.internal.ssl.client.auth": "required"}`` for listener ``INTERNAL`` reads as
    a PKCS12 key store ``/s/b1.p12`` with client certificates required.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

KEYSTORE_TYPE: Final = "ssl.keystore.type"
KEYSTORE_LOCATION: Final = "ssl.keystore.location"
KEYSTORE_PASSWORD: Final = "ssl.keystore.password"
KEY_PASSWORD: Final = "ssl.key.password"
KEYSTORE_CHAIN: Final = "ssl.keystore.certificate.chain"
KEYSTORE_KEY: Final = "ssl.keystore.key"
TRUSTSTORE_TYPE: Final = "ssl.truststore.type"
TRUSTSTORE_LOCATION: Final = "ssl.truststore.location"
TRUSTSTORE_PASSWORD: Final = "ssl.truststore.password"
TRUSTSTORE_CERTIFICATES: Final = "ssl.truststore.certificates"
CLIENT_AUTH: Final = "ssl.client.auth"
ENABLED_PROTOCOLS: Final = "ssl.enabled.protocols"
PROTOCOL: Final = "ssl.protocol"
PRINCIPAL_MAPPING_RULES: Final = "ssl.principal.mapping.rules"
ENDPOINT_IDENTIFICATION: Final = "ssl.endpoint.identification.algorithm"
CIPHER_SUITES: Final = "ssl.cipher.suites"
SSL_KEYS: Final = frozenset(
    {
        KEYSTORE_TYPE,
        KEYSTORE_LOCATION,
        KEYSTORE_PASSWORD,
        KEY_PASSWORD,
        KEYSTORE_CHAIN,
        KEYSTORE_KEY,
        TRUSTSTORE_TYPE,
        TRUSTSTORE_LOCATION,
        TRUSTSTORE_PASSWORD,
        TRUSTSTORE_CERTIFICATES,
        CLIENT_AUTH,
        ENABLED_PROTOCOLS,
        PROTOCOL,
        PRINCIPAL_MAPPING_RULES,
        ENDPOINT_IDENTIFICATION,
        CIPHER_SUITES,
    }
)
"""The ``ssl.*`` keys read."""

STORE_TYPES: Final = ("JKS", "PKCS12", "PEM")
TLS_PROTOCOLS: Final = ("TLSv1.2", "TLSv1.3")
CLIENT_AUTH_VALUES: Final = ("required", "requested", "none")
LISTENER_PREFIX: Final = "listener.name."


def listener_prefix(listener_name: str) -> str:
    """Kafka's prefix of a listener's own keys: ``listener.name.<name in lower case>.``."""
    return f"{LISTENER_PREFIX}{listener_name.lower()}."


def unprefixed(key: str) -> str:
    """``key`` without a ``listener.name.<name>.`` prefix (``key`` itself without one)."""
    if not key.startswith(LISTENER_PREFIX):
        return key
    _, sep, rest = key[len(LISTENER_PREFIX) :].partition(".")
    return rest if sep else key


@dataclass(frozen=True, slots=True)
class Store:
    """A key or trust store: its type, and a file or inline PEM text."""

    store_type: str
    location: str | None = None
    password: str | None = None
    pem: str | None = None
    """Inline PEM: the certificates (a trust store) or the certificate chain (a key store)."""
    key_pem: str | None = None
    """A key store's inline PEM private key."""
    key_password: str | None = None


@dataclass(frozen=True, slots=True)
class SslSettings:
    """One listener's or client's TLS settings (see the module docstring)."""

    keystore: Store | None
    truststore: Store | None
    client_auth: str = "none"
    protocols: tuple[str, ...] = TLS_PROTOCOLS
    principal_mapping_rules: str | None = None
    check_hostname: bool = True
    """``ssl.endpoint.identification.algorithm`` (``https``, the default): a client checks
    that the server's certificate names the host it connected to; empty: it does not."""


def _bad(key: str, value: str, reason: str) -> ValueError:
    return ValueError(f"Invalid value {value} for configuration {key}: {reason}")


def _store_type(get: Mapping[str, str], key: str, default: str) -> str:
    value = get.get(key, default).strip().upper() or default
    if value not in STORE_TYPES:
        raise _bad(key, value, f"expected one of {', '.join(STORE_TYPES)}")
    return value


def _keystore(get: Mapping[str, str]) -> Store | None:
    location = get.get(KEYSTORE_LOCATION, "").strip() or None
    chain = get.get(KEYSTORE_CHAIN, "").strip() or None
    key = get.get(KEYSTORE_KEY, "").strip() or None
    if location is None and chain is None and key is None:
        return None
    kind = _store_type(get, KEYSTORE_TYPE, "PEM" if location is None else "JKS")
    if location is not None and (chain or key):
        raise _bad(KEYSTORE_LOCATION, location, f"not with {KEYSTORE_CHAIN} or {KEYSTORE_KEY}")
    if location is None and (chain is None or key is None or kind != "PEM"):
        raise ValueError(
            f"{KEYSTORE_CHAIN} and {KEYSTORE_KEY} are given together, with {KEYSTORE_TYPE}=PEM"
        )
    return Store(
        kind,
        location,
        get.get(KEYSTORE_PASSWORD),
        chain,
        key,
        get.get(KEY_PASSWORD),
    )


def _truststore(get: Mapping[str, str]) -> Store | None:
    location = get.get(TRUSTSTORE_LOCATION, "").strip() or None
    certificates = get.get(TRUSTSTORE_CERTIFICATES, "").strip() or None
    if location is None and certificates is None:
        return None
    kind = _store_type(get, TRUSTSTORE_TYPE, "PEM" if location is None else "JKS")
    if location is not None and certificates is not None:
        raise _bad(TRUSTSTORE_LOCATION, location, f"not with {TRUSTSTORE_CERTIFICATES}")
    return Store(kind, location, get.get(TRUSTSTORE_PASSWORD), certificates)


def _protocols(get: Mapping[str, str]) -> tuple[str, ...]:
    text = get.get(ENABLED_PROTOCOLS)
    if text is None:
        return TLS_PROTOCOLS
    protocols = tuple(p.strip() for p in text.split(",") if p.strip())
    for protocol in protocols:
        if protocol not in TLS_PROTOCOLS:
            raise _bad(
                ENABLED_PROTOCOLS, text, f"{protocol} is not one of {', '.join(TLS_PROTOCOLS)}"
            )
    if not protocols:
        raise _bad(ENABLED_PROTOCOLS, text, "no protocol enabled")
    return protocols


def ssl_settings(props: Mapping[str, str], listener_name: str | None = None) -> SslSettings:
    """The TLS settings in ``props``, for ``listener_name`` (None: a client's), see the module
    docstring."""
    get = {k: v for k, v in props.items() if k in SSL_KEYS}
    if listener_name is not None:
        prefix = listener_prefix(listener_name)
        get.update(
            {k[len(prefix) :]: v for k, v in props.items() if k.startswith(prefix)},
        )
    client_auth = get.get(CLIENT_AUTH, "none").strip().lower() or "none"
    if client_auth not in CLIENT_AUTH_VALUES:
        raise _bad(CLIENT_AUTH, client_auth, f"expected one of {', '.join(CLIENT_AUTH_VALUES)}")
    ciphers = get.get(CIPHER_SUITES, "").strip()
    if ciphers:
        raise _bad(CIPHER_SUITES, ciphers, "the TLS library's defaults are used; leave it empty")
    return SslSettings(
        keystore=_keystore(get),
        truststore=_truststore(get),
        client_auth=client_auth,
        protocols=_protocols(get),
        principal_mapping_rules=get.get(PRINCIPAL_MAPPING_RULES),
        check_hostname=get.get(ENDPOINT_IDENTIFICATION, "https").strip().lower() == "https",
    )
