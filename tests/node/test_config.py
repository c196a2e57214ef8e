"""Node configuration: the .properties syntax as Java reads it, and the keys each role accepts,
with errors that name the key."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rackwise.node.config import (
    ConfigException,
    Endpoint,
    NodeConfig,
    Voter,
    load_node_config,
    parse_properties,
)

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


def test_java_properties_syntax() -> None:
    text = (
        "# a comment\n"
        "! another\n"
        "\n"
        "a=1\n"
        "b : 2\n"
        "c 3\n"
        "  d=  spaced value  \n"
        "e=one,\\\n"
        "    two\n"
        "f=tab\\there\\u0041\n"
        "g\\=h=x\n"
        "i=ends with backslash\\\\\n"
        "j\n"
        "a=override\n"
    )
    assert parse_properties(text) == {
        "a": "override",
        "b": "2",
        "c": "3",
        "d": "spaced value  ",
        "e": "one,two",
        "f": "tab\thereA",
        "g=h": "x",
        "i": "ends with backslash\\",
        "j": "",
    }


def test_a_malformed_unicode_escape_is_refused() -> None:
    with pytest.raises(ConfigException, match="Malformed"):
        parse_properties("a=\\u12g4\n")


@given(
    st.dictionaries(
        st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1),
        st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",))),
        max_size=5,
    )
)
def test_escaped_keys_and_values_read_back(entries: dict[str, str]) -> None:
    def escape(text: str, is_key: bool) -> str:
        out = []
        for i, char in enumerate(text):
            if char in "\\=:#!" or (char == " " and (is_key or i == 0)):
                out.append("\\" + char)
            elif char in "\t\n\r\f":
                out.append({"\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}[char])
            elif not char.isprintable() or char in "\x0b\x1c\x1d\x1e\x85\u2028\u2029":
                out.append(f"\\u{ord(char):04x}" if ord(char) < 0x10000 else char)
            else:
                out.append(char)
        return "".join(out)

    text = "".join(f"{escape(k, True)}={escape(v, False)}\n" for k, v in entries.items())
    assert parse_properties(text) == entries


def test_a_controller() -> None:
    config = NodeConfig.from_properties(CONTROLLER)
    assert config.is_controller
    assert config.controller_endpoint == Endpoint("CONTROLLER", "127.0.0.1", 9093)
    assert config.voters == (Voter(1, "127.0.0.1", 9093),)
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
            {"listener.security.protocol.map": "CONTROLLER:SSL"},
            "listener.security.protocol.map",
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
