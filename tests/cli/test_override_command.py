"""``--override KEY=VALUE`` on ``rackwise cluster up``, ``broker start`` and ``controller
start``, as Kafka's ``kafka-server-start.sh --override``: Kafka's parsing and messages, each
key to the roles that know it, the override winning over the file, and a real cluster whose
brokers show an override in their ``server.properties`` and in DescribeConfigs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rackwise.cluster.plan import (
    ClusterError,
    NodeSpec,
    check_overrides,
    node_properties,
)
from rackwise.formats.properties import format_properties
from rackwise.node.config import (
    BROKER_ROLE,
    CONTROLLER_ROLE,
    ROLE_KEYS,
    load_node_config,
    override_roles,
    overrides_for_role,
)
from rackwise.node.properties_file import ConfigException, parse_overrides
from tests.command_line import rackwise

CONTROLLER = NodeSpec(3000, "controller", "127.0.0.1", 9093)
BROKER = NodeSpec(1, "broker", "127.0.0.1", 9092, "/dc1/r1")
BOTH = frozenset({BROKER_ROLE, CONTROLLER_ROLE})


def _write_node(tmp_path: Path, node: NodeSpec) -> Path:
    props = node_properties(node, CONTROLLER, tmp_path / node.name, None, "cluster-id")
    path = tmp_path / f"{node.name}.properties"
    path.write_text(format_properties(props, [node.name]), encoding="utf-8")
    return path


# ---- Kafka's parsing -------------------------------------------------------------------------


def test_overrides_parse_as_kafkas_get_props_from_args() -> None:
    assert parse_overrides(["a.b=1", "c=x=y", "d", "e=", "a.b=2"]) == {
        "a.b": "2",  # a later override of a key wins
        "c": "x=y",  # the value is everything after the first '='
        "d": "",  # a key alone sets an empty value
        "e": "",
    }
    assert parse_overrides([]) == {}


def test_malformed_overrides_get_kafkas_messages() -> None:
    with pytest.raises(ConfigException) as missing:
        parse_overrides(["a=1", None])
    assert str(missing.value) == "Option override requires an argument"
    with pytest.raises(ConfigException) as stray:
        parse_overrides(["a=1"], ["broker.id=1", "broker.id=2"])
    assert str(stray.value) == "Found non argument parameters: broker.id=1,broker.id=2"
    with pytest.raises(ConfigException) as empty:
        parse_overrides(["=1"])
    assert str(empty.value) == "Invalid override =1: the key before '=' is empty"


# ---- roles -------------------------------------------------------------------------------------


def test_each_key_goes_to_the_roles_whose_table_has_it() -> None:
    for key in ROLE_KEYS[BROKER_ROLE] | ROLE_KEYS[CONTROLLER_ROLE]:
        assert override_roles(key) == {r for r, keys in ROLE_KEYS.items() if key in keys}
    assert override_roles("num.partitions") == BOTH
    assert override_roles("broker.rack") == {BROKER_ROLE}
    assert override_roles("metadata.log.segment.bytes") == {CONTROLLER_ROLE}
    assert override_roles("no.such.key") == BOTH  # so that each node's check names it


def test_a_node_gets_its_roles_overrides_after_its_own_settings() -> None:
    overrides = {
        "num.partitions": "5",
        "metadata.log.segment.bytes": "2097152",
        "broker.session.timeout.ms": "12000",
    }
    assert overrides_for_role(overrides, BROKER_ROLE) == {
        "num.partitions": "5",
        "broker.session.timeout.ms": "12000",
    }
    controller = node_properties(CONTROLLER, CONTROLLER, Path("/c"), None, "id", overrides)
    broker = node_properties(BROKER, CONTROLLER, Path("/b"), None, "id", overrides)
    assert list(controller)[-3:] == list(overrides)
    assert list(broker)[-2:] == ["num.partitions", "broker.session.timeout.ms"]
    assert "metadata.log.segment.bytes" not in broker


def test_keys_cluster_up_sets_per_node_cannot_be_overridden() -> None:
    with pytest.raises(ClusterError) as node_id:
        check_overrides({"node.id": "7"}, None)
    assert (
        str(node_id.value) == "--override node.id=7: rackwise cluster up sets node.id for each node"
    )
    with pytest.raises(ClusterError, match=r"sets broker\.rack for each node: give --racks$"):
        check_overrides({"broker.rack": "/x"}, None)
    with pytest.raises(ClusterError, match=r"and --placer multi-level: give the placer once$"):
        check_overrides({"broker.replica.placer": "rack-aware"}, "multi-level")
    check_overrides({"broker.replica.placer": "rack-aware", "num.partitions": "3"}, None)


# ---- the override wins over the file -----------------------------------------------------------


def test_an_override_wins_over_the_file(tmp_path: Path) -> None:
    path = _write_node(tmp_path, BROKER)
    assert load_node_config(path).rack == "/dc1/r1"
    config = load_node_config(path, {"broker.rack": "/dc9/r9", "num.partitions": "4"})
    assert config.rack == "/dc9/r9"
    assert config.properties["num.partitions"] == "4"
    with pytest.raises(
        ConfigException, match=r"^Unknown configuration no\.such\.key for a broker$"
    ):
        load_node_config(path, {"no.such.key": "1"})


@pytest.mark.parametrize("role", ["broker", "controller"])
def test_a_stray_argument_is_refused_as_kafka_does(tmp_path: Path, role: str) -> None:
    config = _write_node(tmp_path, BROKER if role == "broker" else CONTROLLER)
    result = rackwise(role, "start", "--config", str(config), "--override", "a=1", "b=2")
    assert result.returncode == 1
    assert result.stderr == "error: Found non argument parameters: b=2\n"
    missing = rackwise(role, "start", "--config", str(config), "--override")
    assert missing.stderr == "error: Option override requires an argument\n"


def test_broker_start_applies_an_override_over_the_file(tmp_path: Path) -> None:
    config = _write_node(tmp_path, BROKER)
    result = rackwise("broker", "start", "--config", str(config), "--override", "node.id=abc")
    assert result.returncode == 1
    assert result.stderr == (
        "error: Invalid value abc for configuration node.id: Not a number of type INT\n"
    )


def test_controller_start_applies_an_override_over_the_file(tmp_path: Path) -> None:
    config = _write_node(tmp_path, CONTROLLER)
    result = rackwise(
        "controller", "start", "--config", str(config), "--override", "broker.rack=/dc1/r1"
    )
    assert result.returncode == 1
    assert result.stderr == "error: broker.rack is a broker's configuration, not a controller's\n"


# ---- cluster up --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("no.such.key=1", "Unknown configuration no.such.key for a controller"),
        (
            "num.partitions=many",
            "Invalid value many for configuration num.partitions: Not a number of type INT",
        ),
        (
            "listeners=PLAINTEXT://:9092",
            "--override listeners=PLAINTEXT://:9092: rackwise cluster up sets listeners for "
            "each node",
        ),
    ],
)
def test_cluster_up_refuses_a_bad_override_before_starting_anything(
    tmp_path: Path, override: str, message: str
) -> None:
    directory = tmp_path / "c"
    result = rackwise(
        "cluster", "up", "--brokers", "2", "--dir", str(directory), "--override", override
    )
    assert result.returncode == 1
    assert result.stderr == f"error: {message}\n"
    assert not (directory / "cluster.json").exists()
    assert list(directory.glob("*/server.properties")) == []


@pytest.mark.slow(reason="starts a controller and two brokers (about 8 s)")
def test_cluster_up_writes_overrides_and_brokers_report_them(tmp_path: Path) -> None:
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

    directory = tmp_path / "c"
    up = rackwise(
        "cluster", "up", "--brokers", "2", "--dir", str(directory), "--json",
        "--override", "num.partitions=5",
        "--override", "metadata.log.segment.bytes=2097152",
    )  # fmt: skip
    try:
        assert up.returncode == 0, up.stderr
        nodes = json.loads(up.stdout)["nodes"]
        for node in nodes:
            props = (directory / f"{node['role']}-{node['id']}" / "server.properties").read_text()
            assert "\nnum.partitions=5\n" in props
            has_segment_bytes = "\nmetadata.log.segment.bytes=2097152\n" in props
            assert has_segment_bytes == (node["role"] == "controller")
        for broker in (n for n in nodes if n["role"] == "broker"):
            admin = KafkaAdminClient(bootstrap_servers=f"{broker['host']}:{broker['port']}")
            try:
                resource = ConfigResource(ConfigResourceType.BROKER, str(broker["id"]))
                described = admin.describe_configs([resource], config_filter="static")
            finally:
                admin.close()
            entry = described["broker"][str(broker["id"])]["num.partitions"]
            assert (entry["value"], entry["config_source"]) == ("5", "STATIC_BROKER_CONFIG")
            assert "metadata.log.segment.bytes" not in described["broker"][str(broker["id"])]
        again = rackwise("cluster", "up", "--dir", str(directory), "--override", "num.partitions=6")
        assert again.returncode == 1
        config = directory.resolve() / "controller-3000" / "server.properties"
        assert again.stderr == (
            f"error: {config} sets num.partitions=5, not 6: edit it or use another --dir\n"
        )
    finally:
        down = rackwise("cluster", "down", "--dir", str(directory))
    assert down.returncode == 0, down.stderr
