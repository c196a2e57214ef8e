"""Preferred leaders come back, with real processes: a controller checking every second
(``leader.imbalance.check.interval.seconds=1``) and three brokers; a broker killed with SIGKILL
loses its leaderships, and once restarted and back in the ISRs it leads them again."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka import KafkaAdminClient

from rackwise.node.config import NodeConfig
from rackwise.node.properties_file import ConfigException, load_properties
from tests.broker.test_broker_processes import (
    HEARTBEAT_INTERVAL_MS,
    Cluster,
    alive_brokers,
    eventually,
)
from tests.broker.test_faults_broker import create_topic, partitions
from tests.processes import ControllerProcess, controller_properties

CHECK_INTERVAL_S = 1
BALANCED_WITHIN_S = 8.0
"""From the restarted broker's ready line to every partition led by its first replica: the
broker catching up and rejoining the ISRs, then at most one check interval, with slack for a
busy machine."""


def _running(directory: Path, **controller_settings: str) -> Iterator[Cluster]:
    """Three brokers and a controller with ``controller_settings`` (Kafka's keys)."""
    running = Cluster(directory)
    props = load_properties(running.controller.config_path)
    props.update(controller_settings)
    running.controller = ControllerProcess(running.controller.directory, props)
    try:
        running.start()
        yield running
    finally:
        running.close()


@pytest.fixture
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    yield from _running(
        tmp_path_factory.mktemp("preferred"),
        **{"leader.imbalance.check.interval.seconds": str(CHECK_INTERVAL_S)},
    )


def test_a_controller_accepts_kafkas_keys_and_names_a_bad_value(tmp_path: Path) -> None:
    props = controller_properties(
        tmp_path,
        auto_leader_rebalance_enable="false",
        leader_imbalance_check_interval_seconds=5,
        leader_imbalance_per_broker_percentage=10,
    )
    config = NodeConfig.from_properties(props).controller_config()
    assert (config.auto_leader_rebalance_enable, config.leader_imbalance_check_interval_s) == (
        False,
        5,
    )
    props["leader.imbalance.check.interval.seconds"] = "0"
    with pytest.raises(
        ConfigException,
        match=r"leader\.imbalance\.check\.interval\.seconds: Value must be at least 1",
    ):
        NodeConfig.from_properties(props)


def _leaders(port: int) -> dict[int, int]:
    return {i: p.leader_id for i, p in partitions(port, "pref").items()}


def test_a_restarted_broker_leads_its_preferred_partitions_again(cluster: Cluster) -> None:
    watcher = cluster.brokers[2].port
    assert eventually(lambda: alive_brokers(watcher) == [1, 2, 3])
    create_topic(watcher, "pref", 6, 3)
    before = eventually(lambda: partitions(watcher, "pref") or None)
    preferred = {i: p.replica_nodes[0] for i, p in before.items()}
    assert {i: p.leader_id for i, p in before.items()} == preferred
    led_by_1 = [i for i, first in preferred.items() if first == 1]
    assert led_by_1
    time.sleep(2 * HEARTBEAT_INTERVAL_MS / 1000)

    cluster.brokers[1].stop(signal.SIGKILL)

    def failed_over() -> dict[int, int] | None:
        leaders = _leaders(watcher)
        return leaders if all(leaders[i] in (2, 3) for i in led_by_1) else None

    moved = eventually(failed_over, timeout_s=10)
    # Broker 1 is gone: the check runs every second, yet no leadership goes back to it.
    time.sleep(CHECK_INTERVAL_S + 0.5)
    assert _leaders(watcher) == moved

    cluster.brokers[1].start()
    restarted = time.monotonic()

    def balanced() -> bool:
        now = partitions(watcher, "pref")
        return all(p.leader_id == preferred[i] and 1 in p.isr_nodes for i, p in now.items())

    eventually(balanced, timeout_s=BALANCED_WITHIN_S + 5, every_s=0.1)
    elapsed = time.monotonic() - restarted
    print(f"preferred leaders back {elapsed:.2f} s after broker 1 restarted")
    assert elapsed <= BALANCED_WITHIN_S, elapsed
    after = partitions(watcher, "pref")
    for i in led_by_1:
        assert after[i].leader_epoch >= before[i].leader_epoch + 2  # away and back
    assert "preferred leader election" in cluster.controller.stderr_path.read_text("utf-8")
    # Every broker agrees, not only the one asked.
    assert eventually(lambda: partitions(cluster.brokers[1].port, "pref") == after or None)


@pytest.fixture
def manual_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    yield from _running(
        tmp_path_factory.mktemp("manual"), **{"auto.leader.rebalance.enable": "false"}
    )


def test_elect_leaders_gives_leadership_back_when_the_controller_does_not(
    manual_cluster: Cluster,
) -> None:
    """With ``auto.leader.rebalance.enable=false`` a restarted broker gets its leaderships
    back only when asked: ElectLeaders (PREFERRED) through kafka-python's admin client, as
    ``kafka-leader-election.sh --election-type PREFERRED`` sends it."""
    cluster = manual_cluster
    watcher = cluster.brokers[2].port
    assert eventually(lambda: alive_brokers(watcher) == [1, 2, 3])
    create_topic(watcher, "manual", 3, 3)
    before = eventually(lambda: partitions(watcher, "manual") or None)
    preferred = {i: p.replica_nodes[0] for i, p in before.items()}
    (led_by_1,) = [i for i, first in preferred.items() if first == 1]
    time.sleep(2 * HEARTBEAT_INTERVAL_MS / 1000)
    cluster.brokers[1].stop(signal.SIGKILL)
    eventually(lambda: partitions(watcher, "manual")[led_by_1].leader_id in (2, 3), timeout_s=10)
    cluster.brokers[1].start()
    eventually(lambda: all(1 in p.isr_nodes for p in partitions(watcher, "manual").values()))
    assert partitions(watcher, "manual")[led_by_1].leader_id != 1  # nobody moved it back

    admin = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{watcher}")
    try:
        asked = {"manual": [0, 1, 2]}
        first = admin.elect_leaders(0, asked, raise_errors=False)
        codes = {
            p.partition_id: p.error_code for p in first.replica_election_results[0].partition_result
        }
        assert codes == {i: 0 if i == led_by_1 else 84 for i in range(3)}
        eventually(lambda: {i: p.leader_id for i, p in partitions(watcher, "manual").items()}
                   == preferred)  # fmt: skip
        again = admin.elect_leaders(0, asked, raise_errors=False)
        assert {p.error_code for p in again.replica_election_results[0].partition_result} == {84}
        missing = admin.elect_leaders(0, {"no-such-topic": [0]}, raise_errors=False)
        assert [p.error_code for p in missing.replica_election_results[0].partition_result] == [3]
    finally:
        admin.close()
