"""Node configuration: the keys each role accepts, with errors that name the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from rackwise.node.addresses import Endpoint, parse_quorum_voters
from rackwise.node.config import NodeConfig, load_node_config
from rackwise.node.properties_file import ConfigException, load_properties
from rackwise.raft.config import VoterEndpoint

CONTROLLER = {
    "node.id": "1",
    "process.roles": "controller",
    "listeners": "CONTROLLER://:9093",
    "controller.listener.names": "CONTROLLER",
    "controller.quorum.voters": "1@127.0.0.1:9093",
    "metadata.log.dir": "/tmp/meta",
}
BROKER = {
    "node.id": "2",
    "process.roles": "broker",
    "listeners": "PLAINTEXT://127.0.0.1:9092",
    "controller.listener.names": "CONTROLLER",
    "controller.quorum.voters": "1@127.0.0.1:9093",
    "log.dirs": "/tmp/a,/tmp/b",
    "broker.rack": "/dc1/r1",
}


def test_a_malformed_properties_file_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text("a=\\u12g4\n")
    with pytest.raises(ConfigException, match=r"server\.properties: .*malformed"):
        load_properties(path)


def test_a_controller() -> None:
    config = NodeConfig.from_properties(CONTROLLER)
    assert config.is_controller
    assert config.controller_endpoint == Endpoint("CONTROLLER", "127.0.0.1", 9093)
    assert config.voters == (VoterEndpoint(1, "127.0.0.1", 9093),)
    assert config.metadata_log_dir == Path("/tmp/meta")
    assert config.controller_config().controller_ids == frozenset({1})


def test_a_broker() -> None:
    config = NodeConfig.from_properties(BROKER)
    assert config.is_broker
    assert config.broker_endpoints == (Endpoint("PLAINTEXT", "127.0.0.1", 9092),)
    assert config.advertised_listeners == config.listeners
    assert config.log_dirs == (Path("/tmp/a"), Path("/tmp/b"))
    assert config.rack == "/dc1/r1"
    assert config.controller_addresses == (("127.0.0.1", 9093),)
    assert config.heartbeat_interval_ms == 2000
    assert config.session_timeout_ms == 9000


def test_bootstrap_servers_instead_of_voters() -> None:
    props = {k: v for k, v in BROKER.items() if k != "controller.quorum.voters"}
    props["controller.quorum.bootstrap.servers"] = "localhost:9093,:9094"
    config = NodeConfig.from_properties(props)
    assert config.controller_addresses == (("localhost", 9093), ("127.0.0.1", 9094))


@pytest.mark.parametrize(
    ("base", "change", "message"),
    [
        (CONTROLLER, {"bogus.key": "1"}, "Unknown configuration bogus.key for a controller"),
        (CONTROLLER, {"broker.rack": "/a"}, "broker.rack is a broker's configuration"),
        (BROKER, {"metadata.log.max.record.bytes.between.snapshots": "1"}, "a controller's"),
        (CONTROLLER, {"node.id": "x"}, "Invalid value x for configuration node.id"),
        (CONTROLLER, {"node.id": None}, "Missing required configuration node.id"),
        (CONTROLLER, {"process.roles": "broker,controller"}, "combined mode"),
        (CONTROLLER, {"process.roles": "zookeeper"}, "configuration process.roles"),
        (CONTROLLER, {"listeners": "CONTROLLER//:9093"}, "configuration listeners"),
        (CONTROLLER, {"listeners": "CONTROLLER://:x"}, "configuration listeners"),
        (CONTROLLER, {"listeners": "PLAINTEXT://:9092"}, "configuration listeners"),
        (CONTROLLER, {"controller.listener.names": None}, "controller.listener.names"),
        (CONTROLLER, {"controller.quorum.voters": "1@:9093,x"}, "controller.quorum.voters"),
        (CONTROLLER, {"controller.quorum.voters": "2@127.0.0.1:9093"}, "configuration node.id"),
        (CONTROLLER, {"controller.quorum.voters": None}, "controller.quorum.bootstrap.servers"),
        (CONTROLLER, {"metadata.log.dir": None}, "metadata.log.dir"),
        (CONTROLLER, {"broker.session.timeout.ms": "0"}, "broker.session.timeout.ms"),
        (CONTROLLER, {"num.partitions": "many"}, "num.partitions"),
        (CONTROLLER, {"broker.replica.placer": "nope"}, "broker.replica.placer"),
        (
            CONTROLLER,
            {"listener.security.protocol.map": "CONTROLLER:TLS"},
            "Invalid security protocol `TLS` defined in listener.security.protocol.map",
        ),
        (BROKER, {"node.id": "1"}, "node id 1 is a controller's"),
        (BROKER, {"listeners": "CONTROLLER://:9094"}, "configuration listeners"),
        (BROKER, {"log.dirs": None}, "log.dirs"),
        (BROKER, {"listeners": "PLAINTEXT://:9092,PLAINTEXT://:9095"}, "appears twice"),
        (BROKER, {"listeners": "PLAINTEXT://:9092,X://:9092"}, "configuration listeners"),
        (BROKER, {"advertised.listeners": "OTHER://h:1"}, "advertised.listeners"),
    ],
)
def test_errors_name_the_key(
    base: dict[str, str], change: dict[str, str | None], message: str
) -> None:
    props = dict(base)
    for key, value in change.items():
        if value is None:
            props.pop(key, None)
        else:
            props[key] = value
    with pytest.raises(ConfigException, match=message) as info:
        NodeConfig.from_properties(props)
    assert "\n" not in str(info.value)


def test_a_controller_uses_the_first_log_dir_without_metadata_log_dir() -> None:
    props = {k: v for k, v in CONTROLLER.items() if k != "metadata.log.dir"}
    props["log.dirs"] = "/x,/y"
    assert NodeConfig.from_properties(props).metadata_log_dir == Path("/x")


def test_load_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "controller.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in CONTROLLER.items()), encoding="utf-8")
    assert load_node_config(path).node_id == 1


def test_voters_parse_as_written() -> None:
    assert parse_quorum_voters("3@dc3:9093, 1@dc1:9093,2@[::1]:9094") == (
        VoterEndpoint(3, "dc3", 9093),
        VoterEndpoint(1, "dc1", 9093),
        VoterEndpoint(2, "::1", 9094),
    )
    assert str(VoterEndpoint(1, "dc1", 9093)) == "1@dc1:9093"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("1@a:1,1@b:2,3@c:3", "a voter id appears twice"),
        ("x@a:1", "'x@a:1' is not in the form id@host:port"),
        ("1@a:70000", "port 70000 is outside 0-65535"),
        ("1-a:9", "'1-a:9' is not in the form id@host:port"),
    ],
)
def test_bad_voter_lists_are_refused_by_name(value: str, message: str) -> None:
    with pytest.raises(ConfigException, match=message) as err:
        parse_quorum_voters(value)
    assert err.value.error_code == 40
    assert f"Invalid value {value} for configuration controller.quorum.voters" in str(err.value)
