"""Replicas rejoin the ISR after their broker comes back (AlterPartition, KIP-497), with real
processes: a controller and brokers 1-3 (session 2000 ms, heartbeat 250 ms), a topic at RF 3,
a broker killed with SIGKILL (it leaves every ISR) and restarted (the leaders add it back)."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest

from rackwise.net import KafkaConnection
from rackwise.protocol import ApiKey
from tests.broker.test_broker_processes import (
    HEARTBEAT_INTERVAL_MS,
    Cluster,
    alive_brokers,
    eventually,
    topic_metadata,
)
from tests.broker.test_faults_broker import create_topic, partitions, registrations

STALE_BROKER_EPOCH = 77
INVALID_UPDATE_VERSION = 95


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = Cluster(tmp_path_factory.mktemp("isr"))
    try:
        running.start()
        yield running
    finally:
        running.close()


def isrs(port: int, name: str) -> dict[int, set[int]]:
    return {i: set(p.isr_nodes) for i, p in partitions(port, name).items()}


def controller_call(cluster: Cluster, api_key: int, **fields: Any) -> Any:
    async def go() -> Any:
        conn = await KafkaConnection.connect("127.0.0.1", cluster.controller_port, timeout_s=10)
        try:
            await conn.negotiate_versions()
            return await conn.request(api_key, timeout_s=30, **fields)
        finally:
            await conn.close()

    return asyncio.run(asyncio.wait_for(go(), 40))


def test_a_restarted_broker_is_back_in_every_isr(cluster: Cluster) -> None:
    watcher = cluster.brokers[2].port
    assert eventually(lambda: alive_brokers(watcher) == [1, 2, 3] or None)
    create_topic(watcher, "rejoin", 6, 3)
    assert isrs(watcher, "rejoin") == {i: {1, 2, 3} for i in range(6)}
    time.sleep(2 * HEARTBEAT_INTERVAL_MS / 1000)
    cluster.brokers[1].stop(signal.SIGKILL)
    eventually(lambda: 1 not in alive_brokers(watcher), timeout_s=10, every_s=0.05)
    left = eventually(lambda: isrs(watcher, "rejoin") or None)
    assert all(isr == {2, 3} for isr in left.values()), left
    before = partitions(watcher, "rejoin")

    cluster.brokers[1].start()  # ready once registered and unfenced
    back = time.monotonic()

    def all_back() -> dict[int, set[int]] | None:
        now = isrs(watcher, "rejoin")
        return now if all(isr == {1, 2, 3} for isr in now.values()) else None

    rejoined = eventually(all_back, timeout_s=10, every_s=0.05)
    elapsed = time.monotonic() - back
    print(f"broker 1 back in every ISR {elapsed:.2f} s after it served clients")
    assert elapsed < 8 * HEARTBEAT_INTERVAL_MS / 1000 + 1.0, elapsed
    assert len(rejoined) == 6
    after = partitions(watcher, "rejoin")
    for index, p in after.items():
        # Expanding the ISR moves no leadership: same leader, same leader epoch.
        assert p.leader_id == before[index].leader_id in (2, 3)
        assert p.leader_epoch == before[index].leader_epoch
        assert not p.offline_replicas
    # Every broker agrees, the restarted one too.
    assert eventually(lambda: partitions(cluster.brokers[1].port, "rejoin") == after or None)
    assert eventually(lambda: partitions(cluster.brokers[3].port, "rejoin") == after or None)
    leaders_logs = cluster.brokers[2].stderr() + cluster.brokers[3].stderr()
    assert "ISR changes accepted" in leaders_logs


def test_alter_partition_on_the_controller_listener(cluster: Cluster) -> None:
    """A stale requester is refused as a whole; a stale partition epoch per partition; the
    partition is left as it was."""
    port = cluster.brokers[2].port
    create_topic(port, "direct", 1, 3)
    p = eventually(lambda: partitions(port, "direct").get(0))
    topic_id = eventually(lambda: _topic_id(port, "direct"))
    leader = p.leader_id
    epoch = registrations(cluster)[leader]["broker_epoch"]
    partition = {
        "partition_index": 0,
        "leader_epoch": p.leader_epoch,
        "partition_epoch": -1,  # older than any: a new partition's epoch is 0
        "leader_recovery_state": 0,
        "new_isr_with_epochs": [{"broker_id": b, "broker_epoch": -1} for b in (1, 2, 3)],
    }
    stale = controller_call(
        cluster,
        ApiKey.ALTER_PARTITION,
        broker_id=leader,
        broker_epoch=epoch + 1000,
        topics=[{"topic_id": topic_id, "partitions": [partition]}],
    )
    assert int(stale.error_code) == STALE_BROKER_EPOCH and not stale.topics
    old = controller_call(
        cluster,
        ApiKey.ALTER_PARTITION,
        broker_id=leader,
        broker_epoch=epoch,
        topics=[{"topic_id": topic_id, "partitions": [partition]}],
    )
    assert int(old.error_code) == 0
    (answer,) = old.topics[0].partitions
    assert int(answer.error_code) == INVALID_UPDATE_VERSION
    assert partitions(port, "direct")[0] == p


def _topic_id(port: int, name: str) -> Any:
    return topic_metadata(port, name).topic_id
