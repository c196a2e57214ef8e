"""Listener configuration as Kafka's KafkaConfig checks it: the effective protocol map, the
inter-broker listener, and Kafka's messages for the combinations it refuses."""

from __future__ import annotations

import re

import pytest

from rackwise.node.config import NodeConfig
from rackwise.node.properties_file import ConfigException

BROKER = {
    "node.id": "2",
    "process.roles": "broker",
    "listeners": "PLAINTEXT://127.0.0.1:9092",
    "controller.listener.names": "CONTROLLER",
    "controller.quorum.voters": "1@127.0.0.1:9093",
    "log.dirs": "/tmp/a",
}
CONTROLLER = {
    "node.id": "1",
    "process.roles": "controller",
    "listeners": "CONTROLLER://:9093",
    "controller.listener.names": "CONTROLLER",
    "controller.quorum.voters": "1@127.0.0.1:9093",
    "metadata.log.dir": "/tmp/meta",
}
SECURED = {
    **BROKER,
    "listeners": "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,CONTROLLER:SSL",
    "ssl.keystore.location": "/tmp/b.p12",
}


def _config(base: dict[str, str], **change: str | None) -> NodeConfig:
    props = dict(base)
    for key, value in change.items():
        key = key.replace("_", ".")
        if value is None:
            props.pop(key, None)
        else:
            props[key] = value
    return NodeConfig.from_properties(props)


def test_the_default_map_gives_controller_listeners_plaintext() -> None:
    config = _config(BROKER)
    assert config.protocol_of("PLAINTEXT") == "PLAINTEXT"
    assert config.controller_protocol == "PLAINTEXT"
    assert config.inter_broker_listener_name == "PLAINTEXT"
    assert _config(CONTROLLER).protocol_of("CONTROLLER") == "PLAINTEXT"


def test_several_listeners_each_with_its_protocol() -> None:
    config = _config(SECURED, **{"inter.broker.listener.name": "SSL"})
    assert [e.listener_name for e in config.broker_endpoints] == ["PLAINTEXT", "SSL"]
    assert config.protocol_of("SSL") == "SSL"
    assert config.controller_protocol == "SSL"
    assert config.inter_broker_listener_name == "SSL"


def test_security_inter_broker_protocol_names_the_listener() -> None:
    config = _config(SECURED, **{"security.inter.broker.protocol": "SSL"})
    assert config.inter_broker_listener_name == "SSL"


def test_a_controller_on_sasl_ssl() -> None:
    config = _config(
        CONTROLLER,
        **{
            "listener.security.protocol.map": "CONTROLLER:SASL_SSL",
            "listener.name.controller.ssl.keystore.location": "/tmp/c.p12",
            "sasl.enabled.mechanisms": "SCRAM-SHA-512",
        },
    )
    assert config.controller_protocol == "SASL_SSL"
    with pytest.raises(ConfigException, match="GSSAPI is not served"):
        _config(
            CONTROLLER,
            **{
                "listener.security.protocol.map": "CONTROLLER:SASL_SSL",
                "listener.name.controller.ssl.keystore.location": "/tmp/c.p12",
            },
        )


def test_a_tls_listener_needs_a_key_store() -> None:
    with pytest.raises(ConfigException, match="listener SSL speaks SSL and needs a key store"):
        _config(SECURED, **{"ssl.keystore.location": None})
    # The listener's own key is enough.
    _config(
        SECURED,
        **{"ssl.keystore.location": None, "listener.name.ssl.ssl.keystore.location": "/k.p12"},
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"ssl.client.auth": "always"}, "Invalid value always for configuration ssl.client.auth"),
        ({"ssl.enabled.protocols": "TLSv1.1,TLSv1.2"}, "TLSv1.1 is not one of TLSv1.2, TLSv1.3"),
        ({"ssl.keystore.type": "BKS"}, "Invalid value BKS for configuration ssl.keystore.type"),
        ({"ssl.principal.mapping.rules": "RULE:xxx"}, "Invalid rule: `RULE:xxx`"),
        ({"listener.name.ssl.ssl.bogus": "1"}, "Unknown configuration listener.name.ssl"),
    ],
)
def test_tls_settings_are_checked(change: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigException, match=re.escape(message)):
        NodeConfig.from_properties({**SECURED, **change})


@pytest.mark.parametrize(
    ("base", "change", "message"),
    [
        (
            # An SSL listener is in use: the controller listener gets no PLAINTEXT default.
            BROKER,
            {"listeners": "PLAINTEXT://:9092,SSL://:9093"},
            "Controller listener with name CONTROLLER defined in controller.listener.names not "
            "found in listener.security.protocol.map  (an explicit security mapping for each "
            "controller listener is required if listener.security.protocol.map is non-empty, "
            "or if there are security protocols other than PLAINTEXT in use)",
        ),
        (
            BROKER,
            {"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT"},
            "Controller listener with name CONTROLLER defined in controller.listener.names",
        ),
        (
            SECURED,
            {"inter.broker.listener.name": "SSL", "security.inter.broker.protocol": "SSL"},
            "Only one of inter.broker.listener.name and security.inter.broker.protocol should "
            "be set.",
        ),
        (
            SECURED,
            {"inter.broker.listener.name": "REPLICATION"},
            "Listener with name REPLICATION defined in inter.broker.listener.name not found in "
            "listener.security.protocol.map.",
        ),
        (
            SECURED,
            {"listeners": "SSL://:9093"},
            "inter.broker.listener.name must be a listener name defined in "
            "advertised.listeners. The valid options based on currently configured listeners "
            "are SSL",
        ),
        (
            SECURED,
            {"security.inter.broker.protocol": "TLS"},
            "Invalid security protocol `TLS` defined in security.inter.broker.protocol",
        ),
        (
            SECURED,
            {"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SSL"},
            "No security protocol defined for listener SSL",
        ),
        (
            SECURED,
            {"advertised.listeners": "PLAINTEXT://h:9092,OTHER://h:9094"},
            "advertised.listeners listener names must be equal to or a subset of the ones "
            "defined in listeners. Found PLAINTEXT,OTHER. The valid options based on the "
            "current configuration are PLAINTEXT,SSL",
        ),
    ],
)
def test_kafkas_refusals(base: dict[str, str], change: dict[str, str], message: str) -> None:
    props = {**base, **change}
    with pytest.raises(ConfigException) as info:
        NodeConfig.from_properties(props)
    assert message in str(info.value)


def test_advertised_listeners_may_share_a_port() -> None:
    config = _config(SECURED, **{"advertised.listeners": "PLAINTEXT://h:9000,SSL://h:9000"})
    assert {e.port for e in config.advertised_listeners} == {9000}
