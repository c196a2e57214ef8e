"""The local cluster manager's planning, files and process control. Whole clusters are started
in tests/cli/test_cluster_command.py and tests/interop."""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import sys
import time
import uuid
from pathlib import Path

import pytest

from rackwise.cluster import processes
from rackwise.cluster.local import (
    down,
    free_ports,
    is_running,
    save_states,
    stop_node,
    up,
    write_atomically,
)
from rackwise.cluster.plan import (
    CONTROLLER_ID,
    ClusterError,
    NodeState,
    cluster_document,
    new_cluster_id,
    node_properties,
    parse_cluster_document,
    parse_racks,
    plan_cluster,
)
from rackwise.formats.properties import format_properties, parse_properties
from rackwise.node.config import load_node_config

RACKS = ["/dc1/r1", "/dc1/r2", "/dc2/r1"]


def test_plan_numbers_brokers_from_one_and_gives_racks_in_order() -> None:
    nodes = plan_cluster(3, RACKS, [9000, 9001, 9002, 9003])
    assert [(n.id, n.role, n.port, n.rack) for n in nodes] == [
        (CONTROLLER_ID, "controller", 9000, None),
        (1, "broker", 9001, "/dc1/r1"),
        (2, "broker", 9002, "/dc1/r2"),
        (3, "broker", 9003, "/dc2/r1"),
    ]
    assert nodes[2].name == "broker-2" and nodes[0].name == "controller-3000"
    assert nodes[1].address == "127.0.0.1:9001"


def test_plan_refuses_a_rack_count_that_is_not_the_broker_count() -> None:
    with pytest.raises(ClusterError, match="--racks names 3 racks but --brokers is 4"):
        plan_cluster(4, RACKS, [1, 2, 3, 4, 5])
    with pytest.raises(ClusterError, match="at least 1, not 0"):
        plan_cluster(0, None, [1])
    with pytest.raises(ClusterError, match="controller's node id 3000"):
        plan_cluster(3000, None, list(range(3001)))


def test_parse_racks() -> None:
    assert parse_racks(" /dc1/r1 ,/dc2/r1") == ["/dc1/r1", "/dc2/r1"]
    assert parse_racks(None) is None
    with pytest.raises(ClusterError, match="empty rack"):
        parse_racks("/dc1/r1,,/dc2/r1")


def test_properties_are_accepted_by_the_processes_config(tmp_path: Path) -> None:
    controller, broker, _, _ = plan_cluster(3, RACKS, [9100, 9101, 9102, 9103])
    for node in (controller, broker):
        props = node_properties(node, controller, tmp_path / node.name, "multi-level")
        path = tmp_path / f"{node.name}.properties"
        path.write_text(format_properties(props, ["test"]))
        assert parse_properties(path.read_text()) == props
        config = load_node_config(path)
        assert config.node_id == node.id
    broker_props = node_properties(broker, controller, tmp_path / "b", None)
    assert broker_props["broker.rack"] == "/dc1/r1"
    assert broker_props["controller.quorum.bootstrap.servers"] == "127.0.0.1:9100"
    assert broker_props["listeners"] == "PLAINTEXT://127.0.0.1:9101"
    assert "broker.replica.placer" not in broker_props
    controller_props = node_properties(controller, controller, tmp_path / "c", None)
    assert controller_props["controller.quorum.voters"] == "3000@127.0.0.1:9100"
    assert controller_props["listeners"] == "CONTROLLER://127.0.0.1:9100"


def test_every_node_of_a_cluster_shares_one_cluster_id(tmp_path: Path) -> None:
    nodes = plan_cluster(2, None, [9200, 9201, 9202])
    cluster_id = new_cluster_id()
    ids = {
        node_properties(node, nodes[0], tmp_path / node.name, None, cluster_id)["cluster.id"]
        for node in nodes
    }
    assert ids == {cluster_id}
    path = tmp_path / "broker.properties"
    path.write_text(
        format_properties(node_properties(nodes[1], nodes[0], tmp_path, None, cluster_id), ["t"])
    )
    assert load_node_config(path).cluster_id == cluster_id


def test_new_cluster_ids_look_like_kafkas() -> None:
    ids = {new_cluster_id() for _ in range(200)}
    assert len(ids) == 200
    for text in ids:
        assert len(text) == 22
        assert not text.startswith("-")
        assert uuid.UUID(bytes=base64.urlsafe_b64decode(text + "==")).version == 4


def test_cluster_document_round_trips_and_names_a_bad_file() -> None:
    states = [
        NodeState(node, pid)
        for node, pid in zip(plan_cluster(1, ["/r"], [5, 6]), [11, None], strict=True)
    ]
    document = cluster_document(states)
    assert document["nodes"][1] == {
        "id": 1,
        "role": "broker",
        "pid": None,
        "host": "127.0.0.1",
        "port": 6,
        "rack": "/r",
    }
    assert parse_cluster_document(json.dumps(document), "x") == states
    with pytest.raises(ClusterError, match=r"c\.json is not a cluster description"):
        parse_cluster_document('{"nodes": [{"id": 1}]}', "c.json")
    with pytest.raises(ClusterError, match="exactly one controller"):
        parse_cluster_document('{"nodes": []}', "c.json")


def test_write_atomically_replaces_and_leaves_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "cluster.json"
    write_atomically(path, "one")
    write_atomically(path, "two")
    assert path.read_text() == "two"
    assert os.listdir(tmp_path) == ["cluster.json"]


def test_free_ports_are_distinct_and_bindable() -> None:
    ports = free_ports(5)
    assert len(set(ports)) == 5 and all(p > 0 for p in ports)


def test_free_ports_lie_below_the_ephemeral_range_and_are_not_handed_out_twice() -> None:
    low = int(processes.EPHEMERAL_RANGE_FILE.read_text().split()[0])
    picked = free_ports(40) + free_ports(40)
    assert all(low - processes.LISTEN_PORTS_SPAN <= p < low for p in picked), picked
    assert len(set(picked)) == 80


def test_free_ports_skip_a_bound_port() -> None:
    (taken,) = free_ports(1)
    with socket.socket() as holder:
        # the next port in turn is the one after ``taken``: hold it, and it is passed over
        holder.bind(("127.0.0.1", taken + 1))
        assert taken + 1 not in free_ports(3)


def test_free_ports_come_from_the_kernel_without_a_readable_range(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    low, high = map(int, processes.EPHEMERAL_RANGE_FILE.read_text().split())
    monkeypatch.setattr(processes, "EPHEMERAL_RANGE_FILE", tmp_path / "absent")
    ports = free_ports(3)
    assert len(set(ports)) == 3 and all(low <= p <= high for p in ports), ports


def _spawn(config: Path, *, ignore_term: bool) -> int:
    """A process with ``config`` on its command line, as a node has."""
    code = "import signal, time\n"
    if ignore_term:
        code += "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    code += "print('up', flush=True)\ntime.sleep(60)\n"
    return os.posix_spawn(
        sys.executable, [sys.executable, "-c", code, "--config", str(config)], os.environ
    )


def test_stop_node_terms_then_kills(tmp_path: Path) -> None:
    config = tmp_path / "server.properties"
    polite = _spawn(config, ignore_term=False)
    stubborn = _spawn(config, ignore_term=True)
    time.sleep(0.5)  # let the interpreter install its signal handler
    assert is_running(polite, config) and is_running(stubborn, config)
    assert not is_running(polite, tmp_path / "other.properties")
    assert stop_node(polite, config, grace_s=5.0) == "stopped"
    assert stop_node(stubborn, config, grace_s=0.3) == "killed"
    assert not is_running(polite, config) and not is_running(stubborn, config)
    assert not is_running(None, config)


def test_down_stops_what_runs_and_records_no_pids(tmp_path: Path) -> None:
    nodes = plan_cluster(1, None, [1, 2])
    for node in nodes:
        (tmp_path / node.name).mkdir()
    pids = [_spawn(tmp_path / n.name / "server.properties", ignore_term=False) for n in nodes]
    os.kill(pids[1], signal.SIGKILL)
    save_states(tmp_path, [NodeState(n, p) for n, p in zip(nodes, pids, strict=True)])
    time.sleep(0.2)
    stopped = down(tmp_path, grace_s=5.0)
    assert [(s.spec.id, s.action) for s in stopped] == [
        (CONTROLLER_ID, "stopped"),
        (1, "not running"),
    ]
    recorded = json.loads((tmp_path / "cluster.json").read_text())
    assert [n["pid"] for n in recorded["nodes"]] == [None, None]


def test_down_without_a_cluster_says_so(tmp_path: Path) -> None:
    with pytest.raises(ClusterError, match=r"cluster\.json does not exist"):
        down(tmp_path)


def test_up_again_refuses_another_shape(tmp_path: Path) -> None:
    nodes = plan_cluster(2, ["/a", "/b"], [1, 2, 3])
    save_states(tmp_path, [NodeState(n, None) for n in nodes])
    with pytest.raises(ClusterError, match="holds a cluster of 2 brokers, not 3"):
        up(tmp_path, num_brokers=3)
    with pytest.raises(ClusterError, match="racks /a,/b, not /a,/c"):
        up(tmp_path, num_brokers=None, racks=["/a", "/c"])


def test_up_again_refuses_to_secure_a_plaintext_cluster_in_place(tmp_path: Path) -> None:
    nodes = plan_cluster(1, None, [1, 2])
    save_states(tmp_path, [NodeState(n, None) for n in nodes])
    with pytest.raises(ClusterError, match="holds a PLAINTEXT cluster, made without --security"):
        up(tmp_path, num_brokers=1, security="sasl_ssl")
    assert os.listdir(tmp_path) == ["cluster.json"]  # no certificate, password or settings


def test_up_again_keeps_each_nodes_properties_and_refuses_another_placer(tmp_path: Path) -> None:
    nodes = plan_cluster(1, None, [1, 2])
    save_states(tmp_path, [NodeState(n, None) for n in nodes])
    for node in nodes:
        (tmp_path / node.name).mkdir()
        props = node_properties(node, nodes[0], tmp_path / node.name, "multi-level")
        (tmp_path / node.name / "server.properties").write_text(format_properties(props, ["x"]))
    with pytest.raises(
        ClusterError, match=r"sets broker\.replica\.placer=multi-level, not striped"
    ):
        up(tmp_path, num_brokers=1, placer="striped")


def test_up_needs_a_broker_count_the_first_time(tmp_path: Path) -> None:
    with pytest.raises(ClusterError, match="give --brokers N"):
        up(tmp_path / "new", num_brokers=None)


def test_a_node_that_dies_at_start_is_reported_with_its_log(tmp_path: Path) -> None:
    nodes = plan_cluster(1, None, free_ports(2))
    save_states(tmp_path, [NodeState(n, None) for n in nodes])
    controller = nodes[0]
    (tmp_path / controller.name).mkdir()
    # A config the controller process refuses: it exits at once.
    (tmp_path / controller.name / "server.properties").write_text("node.id=x\n")
    with pytest.raises(
        ClusterError,
        match=r"controller-3000 \(pid \d+\) exited while starting: "
        r"see .*controller-3000/server.log",
    ):
        up(tmp_path, num_brokers=1, timeout_s=30)


def test_a_small_cluster_gets_an_offsets_replication_factor_it_can_meet(tmp_path: Path) -> None:
    key = "offsets.topic.replication.factor"
    for brokers, expected in ((1, "1"), (2, "2"), (3, None), (6, None)):
        nodes = plan_cluster(brokers, None, list(range(9300, 9301 + brokers)))
        broker = node_properties(nodes[1], nodes[0], tmp_path, None, num_brokers=brokers)
        controller = node_properties(nodes[0], nodes[0], tmp_path, None, num_brokers=brokers)
        assert (broker.get(key), key in controller) == (expected, False)
    nodes = plan_cluster(1, None, [9400, 9401])
    overridden = node_properties(
        nodes[1], nodes[0], tmp_path, None, overrides={key: "1"}, num_brokers=1
    )
    assert load_node_config_from(overridden, tmp_path)[key] == "1"


def load_node_config_from(props: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """``props`` as the broker reads them back from its file."""
    path = tmp_path / "b.properties"
    path.write_text(format_properties(props))
    assert load_node_config(path).node_id == int(props["node.id"])
    return parse_properties(path.read_text())
