"""A node's listeners as Kafka configures them: the security protocol of each
(``listener.security.protocol.map``), the advertised ones, and the listeners brokers use to
reach each other (``inter.broker.listener.name`` or ``security.inter.broker.protocol``) and
the controllers (``controller.listener.names``).

Goals
    The effective protocol map and the inter-broker listener, as Kafka's ``KafkaConfig``
    computes them, or a :class:`~rackwise.node.properties_file.ConfigException` in Kafka's
    words naming the key.

Constraints
    * Without an explicit ``listener.security.protocol.map``, Kafka's default (each protocol's
      name to itself) applies, and the controller listeners map to PLAINTEXT unless some
      listener or controller listener is named SSL or SASL_*; an explicit map must name every
      listener, the controller listeners included.
    * Without ``inter.broker.listener.name``, the inter-broker listener is the one named as
      ``security.inter.broker.protocol`` (default PLAINTEXT); giving both is refused. It must be
      an advertised broker listener.

Worked example
    ``listeners=PLAINTEXT://:9092,SSL://:9093``, ``controller.listener.names=CONTROLLER``, no
    map: PLAINTEXT and SSL map to themselves; CONTROLLER has no PLAINTEXT default (an SSL
    listener is in use), so a broker is refused with Kafka's "Controller listener with name
    CONTROLLER defined in controller.listener.names not found in
    listener.security.protocol.map ..." unless the map names it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from rackwise.node.addresses import Endpoint, parse_endpoints, parse_names
from rackwise.node.properties_file import ConfigException, invalid_config
from rackwise.security.protocols import DEFAULT_PROTOCOL_MAP, PLAINTEXT, PROTOCOLS, uses_tls
from rackwise.security.ssl_config import (
    KEYSTORE_CHAIN,
    KEYSTORE_KEY,
    KEYSTORE_LOCATION,
    listener_prefix,
    ssl_settings,
)
from rackwise.security.ssl_principal import SslPrincipalMapper

LISTENERS: Final = "listeners"
ADVERTISED_LISTENERS: Final = "advertised.listeners"
SECURITY_PROTOCOL_MAP: Final = "listener.security.protocol.map"
CONTROLLER_LISTENER_NAMES: Final = "controller.listener.names"
INTER_BROKER_LISTENER_NAME: Final = "inter.broker.listener.name"
INTER_BROKER_SECURITY_PROTOCOL: Final = "security.inter.broker.protocol"


def _protocol(text: str, key: str) -> str:
    protocol = text.strip().upper()
    if protocol not in PROTOCOLS:
        raise ConfigException(f"Invalid security protocol `{text.strip()}` defined in {key}")
    return protocol


def security_protocol_map(
    props: Mapping[str, str], controller_names: tuple[str, ...]
) -> dict[str, str]:
    """The effective ``listener.security.protocol.map`` (listener name -> protocol), as Kafka's
    ``effectiveListenerSecurityProtocolMap`` builds it (module docstring)."""
    text = props.get(SECURITY_PROTOCOL_MAP)
    if text is not None:
        result: dict[str, str] = {}
        for entry in parse_names(text):
            name, sep, protocol = entry.partition(":")
            if not sep or not name.strip():
                raise invalid_config(
                    SECURITY_PROTOCOL_MAP, text, f"'{entry}' is not LISTENER_NAME:PROTOCOL"
                )
            result[name.strip().upper()] = _protocol(protocol, SECURITY_PROTOCOL_MAP)
        return result
    result = dict(DEFAULT_PROTOCOL_MAP)
    names = [e.partition("://")[0].strip().upper() for e in parse_names(props.get(LISTENERS, ""))]
    secured = [n for n in (*controller_names, *names) if n != PLAINTEXT and n in PROTOCOLS]
    if not secured:
        result.update({n: PLAINTEXT for n in controller_names})
    return result


def check_listener_protocols(
    props: Mapping[str, str],
    listeners: tuple[Endpoint, ...],
    protocols: Mapping[str, str],
    controller_names: tuple[str, ...],
) -> None:
    """Every listener and controller listener has a protocol in ``protocols``."""
    for endpoint in listeners:
        if endpoint.listener_name not in protocols:
            raise invalid_config(
                LISTENERS,
                props.get(LISTENERS, ""),
                f"No security protocol defined for listener {endpoint.listener_name}",
            )
    for name in controller_names:
        if name not in protocols:
            raise ConfigException(
                f"Controller listener with name {name} defined in {CONTROLLER_LISTENER_NAMES} "
                f"not found in {SECURITY_PROTOCOL_MAP}  (an explicit security mapping for each "
                f"controller listener is required if {SECURITY_PROTOCOL_MAP} is non-empty, or "
                "if there are security protocols other than PLAINTEXT in use)"
            )


def check_tls_settings(
    props: Mapping[str, str], listeners: tuple[Endpoint, ...], protocols: Mapping[str, str]
) -> None:
    """The ``ssl.*`` settings of every TLS listener read (the stores are loaded when the
    listener binds); an SSL listener needs a key store."""
    for endpoint in listeners:
        name = endpoint.listener_name
        if not uses_tls(protocols[name]):
            continue
        try:
            settings = ssl_settings(props, name)
            SslPrincipalMapper.from_rules(settings.principal_mapping_rules)
        except ValueError as e:
            raise ConfigException(f"listener {name}: {e}") from None
        if settings.keystore is None:
            raise ConfigException(
                f"listener {name} speaks {protocols[name]} and needs a key store: "
                f"{KEYSTORE_LOCATION} (or {KEYSTORE_CHAIN} and {KEYSTORE_KEY}), or "
                f"{listener_prefix(name)}{KEYSTORE_LOCATION}"
            )


def advertised_listeners(
    props: Mapping[str, str], listeners: tuple[Endpoint, ...]
) -> tuple[Endpoint, ...]:
    """``advertised.listeners`` (default: ``listeners``); each must be one of ``listeners``."""
    text = props.get(ADVERTISED_LISTENERS)
    if text is None:
        return listeners
    advertised = parse_endpoints(ADVERTISED_LISTENERS, text, distinct_ports=False)
    names = [e.listener_name for e in listeners]
    for endpoint in advertised:
        if endpoint.listener_name not in names:
            raise invalid_config(
                ADVERTISED_LISTENERS,
                text,
                f"{ADVERTISED_LISTENERS} listener names must be equal to or a subset of the "
                f"ones defined in {LISTENERS}. Found "
                f"{','.join(e.listener_name for e in advertised)}. The valid options based on "
                f"the current configuration are {','.join(names)}",
            )
    return advertised


def inter_broker_listener(
    props: Mapping[str, str],
    protocols: Mapping[str, str],
    advertised: tuple[Endpoint, ...],
    controller_names: tuple[str, ...],
) -> str:
    """The name of a broker's inter-broker listener (module docstring)."""
    name = props.get(INTER_BROKER_LISTENER_NAME, "").strip().upper()
    if name:
        if INTER_BROKER_SECURITY_PROTOCOL in props:
            raise ConfigException(
                f"Only one of {INTER_BROKER_LISTENER_NAME} and "
                f"{INTER_BROKER_SECURITY_PROTOCOL} should be set."
            )
        if name not in protocols:
            raise ConfigException(
                f"Listener with name {name} defined in {INTER_BROKER_LISTENER_NAME} not found "
                f"in {SECURITY_PROTOCOL_MAP}."
            )
    else:
        name = _protocol(
            props.get(INTER_BROKER_SECURITY_PROTOCOL, PLAINTEXT), INTER_BROKER_SECURITY_PROTOCOL
        )
    names = [e.listener_name for e in advertised if e.listener_name not in controller_names]
    if name not in names:
        raise ConfigException(
            f"{INTER_BROKER_LISTENER_NAME} must be a listener name defined in "
            f"{ADVERTISED_LISTENERS}. The valid options based on currently configured "
            f"listeners are {','.join(names)}"
        )
    return name
