"""A failed log directory acts on its own, with no traffic (KIP-858): three brokers with two
directories each, two idle topics at replication factor 3 and ``min.insync.replicas=2``, one
in every broker's first directory, the other in every second one. A follower's directory
replaced by a file takes its replica out of the ISR within seconds, and it stays out; the
leader's takes the leadership to another replica. Metadata is read by librdkafka."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient, TopicPartitionReplica

from tests.broker.test_jbod import Jbod, _fail, _leader_and_isr, _up, where
from tests.interop.conftest import eventually, rackwise

pytestmark = pytest.mark.slow  # three broker processes with two log directories each

FIRST, SECOND = "idle-first", "idle-second"
"""The topic in every broker's first directory, and the one in every second directory."""
ASSIGNMENT = {FIRST: [1, 2, 3], SECOND: [2, 3, 1]}
"""Replicas, the preferred leader first: 1 leads FIRST, 2 leads SECOND."""


@pytest.fixture(scope="module")
def idle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Jbod]:
    cluster = _up(tmp_path_factory.mktemp("dirs") / "jbod")
    try:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        topics = [
            NewTopic(t, 1, replica_assignment=[r], config={"min.insync.replicas": "2"})
            for t, r in ASSIGNMENT.items()
        ]
        for future in admin.create_topics(topics).values():
            future.result(30)
        mover = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
        try:
            plan = {
                TopicPartitionReplica(t, 0, b): cluster.log_dirs(b)[i]
                for i, t in enumerate((FIRST, SECOND))
                for b in (1, 2, 3)
            }
            mover.alter_replica_log_dirs(plan)
            eventually(
                lambda: all(
                    where(mover).get((r.broker_id, r.topic, 0), ("", True, 0))[:2] == (d, False)
                    for r, d in plan.items()
                ),
                60,
            )
        finally:
            mover.close()
        for t, replicas in ASSIGNMENT.items():
            expected = (replicas[0], [1, 2, 3])
            eventually(lambda t=t, e=expected: _leader_and_isr(cluster.bootstrap, t) == e, 30)
        yield cluster
    finally:
        rackwise("cluster", "down", "--dir", str(cluster.dir))


def _settles(bootstrap: str, topic: str, expected: tuple[int, list[int]]) -> float:
    """Seconds until the topic's partition 0 has ``expected`` (leader, ISR), within 10 s;
    then it must keep it for a second (a replica taken back at once was the defect)."""
    start = time.monotonic()
    eventually(lambda: _leader_and_isr(bootstrap, topic) == expected, 10)
    took = time.monotonic() - start
    for _ in range(10):
        assert _leader_and_isr(bootstrap, topic) == expected
        time.sleep(0.1)
    return took


def test_a_failed_followers_replica_leaves_the_isr_of_an_idle_topic(idle: Jbod) -> None:
    _fail(idle.log_dirs(3)[0])  # broker 3 follows FIRST
    assert _settles(idle.bootstrap, FIRST, (1, [1, 2])) < 10
    assert _leader_and_isr(idle.bootstrap, SECOND) == (2, [1, 2, 3])  # in the other directory


def test_a_failed_leaders_replica_hands_the_leadership_on(idle: Jbod) -> None:
    _fail(idle.log_dirs(2)[1])  # broker 2 leads SECOND; 3 is next in replica order
    assert _settles(idle.bootstrap, SECOND, (3, [1, 3])) < 10
