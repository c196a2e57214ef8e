"""The TLS of a node's listeners and of the connections it opens, from its configuration.

Goals
    :func:`listener_security` gives a listener's :class:`~rackwise.net.tls.ListenerSecurity`
    (its name, protocol, TLS context and principal mapping); :func:`client_tls` the TLS
    context a node uses to reach a listener of another node (a broker's inter-broker listener,
    the controllers' listener), as Kafka's nodes take a listener's own settings
    (``listener.name.<name>.ssl.*`` over ``ssl.*``) for their connections to it.

Constraints
    A store that cannot be read raises :class:`~rackwise.node.properties_file.ConfigException`
    naming it, before the listener binds.
"""

from __future__ import annotations

import ssl

from rackwise.net.tls import ListenerSecurity, TlsConfigError, client_context, server_context
from rackwise.node.config import NodeConfig
from rackwise.node.properties_file import ConfigException
from rackwise.security.protocols import uses_tls
from rackwise.security.ssl_config import PRINCIPAL_MAPPING_RULES, ssl_settings
from rackwise.security.ssl_principal import SslPrincipalMapper


def listener_security(config: NodeConfig, listener_name: str) -> ListenerSecurity:
    """What listener ``listener_name`` of ``config`` speaks (module docstring)."""
    protocol = config.protocol_of(listener_name)
    if not uses_tls(protocol):
        return ListenerSecurity(listener_name, protocol)
    try:
        settings = ssl_settings(config.properties, listener_name)
        mapper = SslPrincipalMapper.from_rules(settings.principal_mapping_rules)
        context = server_context(settings)
    except TlsConfigError as e:
        raise ConfigException(f"listener {listener_name}: {e}") from None
    except ValueError as e:
        raise ConfigException(f"{PRINCIPAL_MAPPING_RULES}: {e}") from None
    idle_s = config.server_limits().idle_timeout_s
    timeout_s = ListenerSecurity.handshake_timeout_s_within(idle_s)
    return ListenerSecurity(listener_name, protocol, context, mapper, timeout_s)


def client_tls(config: NodeConfig, listener_name: str) -> ssl.SSLContext | None:
    """The TLS context for connections to another node's ``listener_name`` (None if it does
    not speak TLS)."""
    if not uses_tls(config.protocol_of(listener_name)):
        return None
    try:
        return client_context(ssl_settings(config.properties, listener_name))
    except TlsConfigError as e:
        raise ConfigException(f"listener {listener_name}: {e}") from None
