"""A node's SASL settings, read from its properties with Kafka's keys: what each SASL listener
serves (``sasl.enabled.mechanisms``, PLAIN's users from the listener's JAAS configuration,
``connections.max.reauth.ms``...) and whom the node logs in as to other nodes
(``sasl.mechanism.inter.broker.protocol``, ``sasl.mechanism.controller.protocol``).

Goals
    A listener's own value (``listener.name.<listener>.<key>``) over the node's, and for the
    JAAS configuration, Kafka's mechanism-scoped key first:
    ``listener.name.<listener>.<mechanism>.sasl.jaas.config``, then
    ``listener.name.<listener>.sasl.jaas.config``, then ``sasl.jaas.config``.

Constraints
    Pure. Kafka's defaults where rackwise can serve them; GSSAPI (Kafka's default mechanism)
    is not served, so a SASL listener or login left at it is refused naming the key.

Worked example
    ``listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.
    plain.PlainLoginModule required username="admin" password="a" user_admin="a";`` with
    ``sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512``: listener ``SASL_PLAINTEXT`` serves both,
    PLAIN knowing ``admin``; with ``sasl.mechanism.inter.broker.protocol=PLAIN`` a broker logs
    in to the others as ``admin``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from rackwise.security.jaas import (
    JaasConfigException,
    LoginModuleEntry,
    login_credentials,
    parse_jaas_config,
    plain_users,
)
from rackwise.security.sasl import MECHANISMS, PLAIN
from rackwise.security.ssl_config import listener_prefix

ENABLED_MECHANISMS: Final = "sasl.enabled.mechanisms"
JAAS_CONFIG: Final = "sasl.jaas.config"
INTER_BROKER_MECHANISM: Final = "sasl.mechanism.inter.broker.protocol"
CONTROLLER_MECHANISM: Final = "sasl.mechanism.controller.protocol"
MAX_REAUTH_MS: Final = "connections.max.reauth.ms"
MAX_RECEIVE_SIZE: Final = "sasl.server.max.receive.size"
FAILED_DELAY_MS: Final = "connection.failed.authentication.delay.ms"
CLIENT_MECHANISM: Final = "sasl.mechanism"
"""A client's mechanism (``--command-config``)."""
GSSAPI: Final = "GSSAPI"
SASL_KEYS: Final = frozenset(
    {
        ENABLED_MECHANISMS,
        JAAS_CONFIG,
        INTER_BROKER_MECHANISM,
        CONTROLLER_MECHANISM,
        MAX_REAUTH_MS,
        MAX_RECEIVE_SIZE,
        FAILED_DELAY_MS,
    }
)
"""The SASL keys a node accepts (each also as ``listener.name.<listener>.<key>``)."""


def is_listener_sasl_key(rest: str) -> bool:
    """Whether ``rest`` (a key after its ``listener.name.<listener>.`` prefix) is a SASL key a
    listener may have, ``<mechanism>.sasl.jaas.config`` and
    ``<mechanism>.connections.max.reauth.ms`` included."""
    if rest in SASL_KEYS:
        return True
    mechanism, sep, key = rest.partition(".")
    return bool(sep) and mechanism.upper() in MECHANISMS and key in (JAAS_CONFIG, MAX_REAUTH_MS)


class SaslConfigException(ValueError):
    """A SASL setting rackwise cannot serve; the message names the key."""


@dataclass(frozen=True, slots=True)
class SaslListenerSettings:
    """What one SASL listener serves."""

    mechanisms: tuple[str, ...]
    plain_users: Mapping[str, str] = field(default_factory=dict)
    max_reauth_ms: int = 0
    max_receive_size: int = 524_288
    failed_delay_ms: int = 100


def _get(props: Mapping[str, str], listener_name: str | None, key: str) -> str | None:
    if listener_name is not None:
        value = props.get(listener_prefix(listener_name) + key)
        if value is not None:
            return value
    return props.get(key)


def _int(props: Mapping[str, str], listener: str | None, key: str, default: int) -> int:
    text = _get(props, listener, key)
    if text is None or not text.strip():
        return default
    try:
        value = int(text.strip())
    except ValueError:
        raise SaslConfigException(f"Invalid value {text} for configuration {key}") from None
    if value < 0:
        raise SaslConfigException(f"Invalid value {text} for configuration {key}: below 0")
    return value


def jaas_entries(
    props: Mapping[str, str], listener_name: str | None, mechanism: str
) -> tuple[LoginModuleEntry, ...]:
    """The JAAS entries a listener (or a client, ``listener_name`` None) has for
    ``mechanism`` (empty: none configured)."""
    text = None
    if listener_name is not None:
        prefix = listener_prefix(listener_name)
        text = props.get(f"{prefix}{mechanism.lower()}.{JAAS_CONFIG}")
    text = text if text is not None else _get(props, listener_name, JAAS_CONFIG)
    if text is None:
        return ()
    try:
        return parse_jaas_config(text)
    except JaasConfigException as e:
        raise SaslConfigException(f"{JAAS_CONFIG}: {e}") from None


def mechanisms_of(text: str | None, key: str) -> tuple[str, ...]:
    """A mechanism list, each one served (GSSAPI, Kafka's default, is not)."""
    names = tuple(m.strip().upper() for m in (text or GSSAPI).split(",") if m.strip())
    for name in names:
        if name not in MECHANISMS:
            raise SaslConfigException(
                f"{key}={text or GSSAPI}: {name} is not served (rackwise serves "
                f"{', '.join(MECHANISMS)})"
            )
    if not names:
        raise SaslConfigException(f"{key} is empty: a SASL listener needs a mechanism")
    return names


def listener_settings(props: Mapping[str, str], listener_name: str) -> SaslListenerSettings:
    """What SASL listener ``listener_name`` serves (raises :class:`SaslConfigException`)."""
    mechanisms = mechanisms_of(_get(props, listener_name, ENABLED_MECHANISMS), ENABLED_MECHANISMS)
    users = plain_users(jaas_entries(props, listener_name, PLAIN)) if PLAIN in mechanisms else {}
    return SaslListenerSettings(
        mechanisms=mechanisms,
        plain_users=users,
        max_reauth_ms=_int(props, listener_name, MAX_REAUTH_MS, 0),
        max_receive_size=_int(props, listener_name, MAX_RECEIVE_SIZE, 524_288),
        failed_delay_ms=_int(props, listener_name, FAILED_DELAY_MS, 100),
    )


def login_settings(
    props: Mapping[str, str], listener_name: str | None, mechanism_key: str
) -> tuple[str, str, str]:
    """``(mechanism, username, password)`` a node logs in with to ``listener_name`` (a
    broker's inter-broker listener, the controllers' listener), or a client with
    ``sasl.mechanism`` (``listener_name`` None): the mechanism from ``mechanism_key``, the
    credentials from the JAAS configuration's ``username`` and ``password``."""
    (mechanism,) = mechanisms_of(props.get(mechanism_key), mechanism_key)[:1]
    credentials = login_credentials(jaas_entries(props, listener_name, mechanism))
    if credentials is None:
        where = "" if listener_name is None else f" of listener {listener_name}"
        raise SaslConfigException(
            f"{JAAS_CONFIG}{where} has no username and password to log in with {mechanism}"
        )
    return mechanism, *credentials
