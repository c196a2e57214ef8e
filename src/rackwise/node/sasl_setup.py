"""The SASL of a node's listeners and of the connections it opens, from its configuration.

Goals
    :func:`listener_sasl` gives a SASL listener's
    :class:`~rackwise.net.SaslServerConfig` (None for a listener without SASL): its
    mechanisms, PLAIN's users, and SCRAM's credentials looked up in the node's metadata image
    at each login (a credential altered is in use as soon as the node has replayed it).
    :func:`set_node_logins` makes the node's own connections log in as Kafka's nodes do: a
    broker to the controllers with ``sasl.mechanism.controller.protocol`` and the
    controller listener's JAAS credentials, to the other brokers with
    ``sasl.mechanism.inter.broker.protocol`` and the inter-broker listener's; a controller to
    the other voters as to the controllers.

Constraints
    A setting that cannot be served raises
    :class:`~rackwise.node.properties_file.ConfigException` naming it, before anything binds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rackwise.net import SaslLogin, SaslServerConfig, set_login
from rackwise.node.config import NodeConfig
from rackwise.node.properties_file import ConfigException
from rackwise.security.protocols import uses_sasl
from rackwise.security.sasl_config import (
    CONTROLLER_MECHANISM,
    INTER_BROKER_MECHANISM,
    SaslConfigException,
    listener_settings,
    login_settings,
)
from rackwise.security.scram import ScramCredential, ScramMechanism

Credentials = Callable[[], Mapping[tuple[str, int], Any]]
"""The image's SCRAM credentials now (UserScramCredentialRecord by user and mechanism)."""


def listener_sasl(
    config: NodeConfig, listener_name: str, credentials: Credentials
) -> SaslServerConfig | None:
    """What SASL listener ``listener_name`` serves (None: it speaks no SASL)."""
    if not uses_sasl(config.protocol_of(listener_name)):
        return None
    try:
        settings = listener_settings(config.properties, listener_name)
    except SaslConfigException as e:
        raise ConfigException(f"listener {listener_name}: {e}") from None

    def lookup(user: str, mechanism: ScramMechanism) -> ScramCredential | None:
        record = credentials().get((user, mechanism.type_id))
        if record is None:
            return None
        return ScramCredential(
            bytes(record.salt),
            bytes(record.stored_key),
            bytes(record.server_key),
            int(record.iterations),
        )

    return SaslServerConfig(
        mechanisms=settings.mechanisms,
        plain_users=settings.plain_users,
        scram_lookup=lookup,
        max_reauth_ms=settings.max_reauth_ms,
        max_receive_size=settings.max_receive_size,
        failed_delay_ms=settings.failed_delay_ms,
    )


def _login(config: NodeConfig, listener_name: str, key: str) -> SaslLogin | None:
    if not uses_sasl(config.protocol_of(listener_name)):
        return None
    try:
        return SaslLogin(*login_settings(config.properties, listener_name, key))
    except SaslConfigException as e:
        raise ConfigException(f"listener {listener_name}: {e}") from None


def set_node_logins(config: NodeConfig) -> None:
    """Make this process's connections log in as the node (module docstring)."""
    controller = _login(config, config.controller_listener_names[0], CONTROLLER_MECHANISM)
    if config.is_broker:
        inter_broker = config.inter_broker_listener_name
        if inter_broker is not None:
            set_login(_login(config, inter_broker, INTER_BROKER_MECHANISM))
        for address in config.controller_addresses:
            set_login(controller, address)
    else:
        set_login(controller)
