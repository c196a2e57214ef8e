"""Preferred leaders come back, with real processes: a controller checking every second
(``leader.imbalance.check.interval.seconds=1``) and three brokers; a broker killed with SIGKILL
loses its leaderships, and once restarted and back in the ISRs it leads them again."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rackwise.node.config import ConfigException, NodeConfig, load_properties
from tests.node.conftest import ControllerProcess, controller_properties
from tests.node.test_broker_processes import (
    HEARTBEAT_INTERVAL_MS,
    Cluster,
    alive_brokers,
    eventually,
)
from tests.node.test_faults_broker import create_topic, partitions

CHECK_INTERVAL_S = 1
BALANCED_WITHIN_S = 8.0
"""From the restarted broker's ready line to every partition led by its first replica: the
broker catching up and rejoining the ISRs, then at most one check interval, with slack for a
busy machine."""


@pytest.fixture
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = Cluster(tmp_path_factory.mktemp("preferred"))
    props = load_properties(running.controller.config_path)
    props["leader.imbalance.check.interval.seconds"] = str(CHECK_INTERVAL_S)
    running.controller = ControllerProcess(running.controller.directory, props)
    try:
        running.start()
        yield running
    finally:
        running.close()


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
