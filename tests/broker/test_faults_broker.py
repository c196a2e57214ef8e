"""Brokers under faults, with real processes: started before their controller, killed with
SIGKILL (fenced within the session timeout plus a heartbeat, leaderships moved), restarted
(a new incarnation, unfenced again), stopped with SIGTERM, and outliving a controller restart."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from rackwise.protocol import ApiKey
from tests.broker.test_broker_processes import (
    HEARTBEAT_INTERVAL_MS,
    SESSION_TIMEOUT_MS,
    Cluster,
    alive_brokers,
    call,
    eventually,
    registrations,
    topic_metadata,
)

SLACK_S = 0.75
"""Allowed beyond session timeout plus one heartbeat interval: the controller's fencing timer
and the metadata reaching the broker asked, on a busy machine."""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = Cluster(tmp_path_factory.mktemp("faults"))
    try:
        running.start(controller_first=False)
        yield running
    finally:
        running.close()


def create_topic(port: int, name: str, partitions: int, replication_factor: int) -> None:
    response = call(
        port,
        ApiKey.CREATE_TOPICS,
        topics=[
            {
                "name": name,
                "num_partitions": partitions,
                "replication_factor": replication_factor,
                "assignments": [],
                "configs": [],
            }
        ],
        timeout=30000,
        validate_only=False,
    )
    assert int(response.topics[0].error_code) == 0, response


def partitions(port: int, name: str) -> dict[int, Any]:
    return {p.partition_index: p for p in topic_metadata(port, name).partitions}


def test_brokers_started_before_the_controller_register_once_it_is_up(cluster: Cluster) -> None:
    port = cluster.brokers[1].port
    assert eventually(lambda: alive_brokers(port) == [1, 2, 3])
    assert "controller unreachable" in cluster.brokers[1].stderr()


def test_kill_9_fences_within_the_session_and_moves_leaderships(cluster: Cluster) -> None:
    watcher = cluster.brokers[2].port
    create_topic(watcher, "lead", 6, 3)
    before = eventually(lambda: partitions(watcher, "lead") or None)
    led_by_1 = [i for i, p in before.items() if p.leader_id == 1]
    assert led_by_1  # round-robin leaders: broker 1 leads some
    time.sleep(2 * HEARTBEAT_INTERVAL_MS / 1000)  # a heartbeat after the topic, as in life
    cluster.brokers[1].stop(signal.SIGKILL)
    killed = time.monotonic()
    eventually(lambda: 1 not in alive_brokers(watcher), timeout_s=10, every_s=0.02)
    elapsed = time.monotonic() - killed
    print(f"broker 1 fenced {elapsed:.2f} s after SIGKILL (session {SESSION_TIMEOUT_MS} ms)")
    assert elapsed <= (SESSION_TIMEOUT_MS + HEARTBEAT_INTERVAL_MS) / 1000 + SLACK_S, elapsed
    after = partitions(watcher, "lead")
    for index, p in after.items():
        assert p.leader_id in (2, 3), (index, p)
        assert p.leader_id in p.isr_nodes and 1 not in p.isr_nodes
        assert 1 in p.offline_replicas and list(p.replica_nodes) == list(
            before[index].replica_nodes
        )
    for index in led_by_1:
        assert after[index].leader_epoch > before[index].leader_epoch
    # Every broker agrees, not only the one asked.
    assert partitions(cluster.brokers[3].port, "lead") == after


def test_a_restarted_broker_rejoins_with_a_new_incarnation(cluster: Cluster) -> None:
    old = registrations(cluster)[1]
    assert old["fenced"] is True
    cluster.brokers[1].start()
    port = cluster.brokers[1].port
    assert eventually(lambda: alive_brokers(cluster.brokers[2].port) == [1, 2, 3])
    new = registrations(cluster)[1]
    assert new["incarnation_id"] != old["incarnation_id"]
    assert new["broker_epoch"] > old["broker_epoch"]
    assert new["log_dirs"] == old["log_dirs"]  # meta.properties kept the directory ids
    # It fetched the metadata again: it knows the topic created before it died.
    assert len(partitions(port, "lead")) == 6
    assert alive_brokers(port) == [1, 2, 3]


def test_an_immediate_restart_waits_out_the_old_lease(cluster: Cluster) -> None:
    broker = cluster.brokers[3]
    old = registrations(cluster)[3]["incarnation_id"]
    broker.stop(signal.SIGKILL)
    killed = time.monotonic()
    broker.start()  # the killed incarnation's lease may still be alive
    # The new process answers clients only once it is registered and unfenced itself.
    assert alive_brokers(broker.port) == [1, 2, 3]
    assert registrations(cluster)[3]["incarnation_id"] != old
    refused = "registration refused: DUPLICATE_BROKER_REGISTRATION (101)" in broker.stderr()
    # Refused (DUPLICATE_BROKER_REGISTRATION) while the old lease lived, unless starting the
    # process took longer than the lease.
    assert refused or time.monotonic() - killed > SESSION_TIMEOUT_MS / 1000


def test_brokers_outlive_a_controller_restart(cluster: Cluster) -> None:
    cluster.controller.kill()
    time.sleep(0.5)
    cluster.controller.start()
    port = cluster.brokers[2].port
    assert eventually(lambda: alive_brokers(port) == [1, 2, 3], 20)
    create_topic(port, "after-restart", 2, 2)
    # Another broker learns of it as soon as its fetch reconnects (a backoff of 1 s at most).
    assert eventually(lambda: len(partitions(cluster.brokers[1].port, "after-restart")) == 2, 5)


def test_a_forwarded_create_topics_outlives_a_controller_restart(cluster: Cluster) -> None:
    """kafka-python creates a topic through a broker while the controller is down; the broker
    keeps the request and retries until the controller is back, within the request's timeout:
    the client sees success and the topic exists."""
    from kafka.admin import KafkaAdminClient, NewTopic

    broker = cluster.brokers[3]
    admin = KafkaAdminClient(bootstrap_servers=broker.address, request_timeout_ms=30000)
    outcome: dict[str, Any] = {}

    def create() -> None:
        try:
            outcome["response"] = admin.create_topics(
                [NewTopic("during-restart", 2, 1)], timeout_ms=20000, raise_errors=True
            )
        except Exception as e:  # reported by the assertion below
            outcome["error"] = e

    try:
        cluster.controller.kill()
        began = time.monotonic()
        creating = threading.Thread(target=create, name="create-topics")
        creating.start()
        time.sleep(1.5)
        assert creating.is_alive()  # held by the broker, not failed at once
        cluster.controller.start()
        creating.join(30)
        assert not creating.is_alive()
        assert "error" not in outcome, outcome
        assert time.monotonic() - began < 20
        assert len(partitions(broker.port, "during-restart")) == 2
        assert "controller unreachable, retrying" in broker.stderr()
    finally:
        admin.close()


def test_sigterm_stops_a_broker_promptly(cluster: Cluster) -> None:
    broker = cluster.brokers[2]
    began = time.monotonic()
    assert broker.stop(signal.SIGTERM) == 0
    assert time.monotonic() - began < 5
    assert "broker 2 stopped" in broker.stderr()
    watcher = cluster.brokers[1].port
    eventually(lambda: 2 not in alive_brokers(watcher), timeout_s=10)
