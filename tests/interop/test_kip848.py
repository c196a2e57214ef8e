"""librdkafka consumers with ``group.protocol=consumer`` (KIP-848) on a cluster of three
brokers, one per data centre: they join, consume and commit; partitions move to a second member
and back without two owners at once; each server-side assignor is chosen by name with
``group.remote.assignor``; and after ``kill -9`` of the group coordinator's broker the group
resumes on the new coordinator from its committed offsets.

The cluster is this module's own (a broker is killed), with short heartbeat intervals so that
rebalances take a second or two. Every wait has a deadline."""

from __future__ import annotations

import json
import os
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic

from rackwise.assignors.server_registry import DEFAULT_ASSIGNORS
from tests.command_line import rackwise
from tests.interop.conftest import eventually

RACKS = ("/dc1/r1", "/dc2/r1", "/dc3/r1")
PARTITIONS = 6


class Cluster:
    def __init__(self, directory: Path, nodes: list[dict[str, Any]]) -> None:
        self.dir = directory
        self.nodes = nodes
        self.brokers = [n for n in nodes if n["role"] == "broker"]

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{b['host']}:{b['port']}" for b in self.brokers)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    directory = tmp_path_factory.mktemp("kip848")
    overrides = [
        "group.consumer.heartbeat.interval.ms=300",
        "group.consumer.session.timeout.ms=6000",
        "offsets.topic.replication.factor=3",
        "offsets.topic.num.partitions=3",
    ]
    args = [a for o in overrides for a in ("--override", o)]
    up = rackwise(
        "cluster", "up", "--brokers", "3", "--racks", ",".join(RACKS), "--dir", str(directory),
        "--json", *args,
    )  # fmt: skip
    try:
        assert up.returncode == 0, up.stderr
        yield Cluster(directory, json.loads(up.stdout)["nodes"])
    finally:
        if (directory / "cluster.json").exists():
            down = rackwise("cluster", "down", "--dir", str(directory))
            assert down.returncode == 0, down.stderr


def _topic(cluster: Cluster, prefix: str) -> str:
    topic = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS, replication_factor=3)])[
        topic
    ].result(30)

    def ready() -> bool:
        described = admin.list_topics(topic, timeout=10).topics[topic]
        return described.error is None and all(p.leader >= 0 for p in described.partitions.values())

    eventually(ready, 30)
    return topic


def _produce(cluster: Cluster, topic: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i, value in enumerate(values):
        producer.produce(topic, value, partition=i % PARTITIONS)
    assert producer.flush(30) == 0


def _consumer(cluster: Cluster, group: str, **extra: Any) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": group,
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            **extra,
        }
    )


def _owned(consumer: Consumer) -> set[int]:
    return {tp.partition for tp in consumer.assignment()}


def _poll_until(consumers: list[Consumer], done: Any, timeout_s: float = 30) -> list[bytes]:
    """Poll every consumer until ``done()``, checking at each turn that no partition is owned
    by two of them; the values read."""
    read: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, [c.assignment() for c in consumers]
        owned = [_owned(c) for c in consumers]
        for i, a in enumerate(owned):
            for b in owned[i + 1 :]:
                assert not a & b, owned
        for c in consumers:
            message = c.poll(0.05)
            if message is not None and message.error() is None:
                read.append(message.value())
    return read


def _read(consumer: Consumer, count: int, timeout_s: float = 30) -> list[bytes]:
    read: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    while len(read) < count:
        assert time.monotonic() < deadline, len(read)
        message = consumer.poll(0.1)
        if message is not None and message.error() is None:
            read.append(message.value())
    return read


def _check_the_tool(cluster: Cluster, group: str) -> None:
    """``rackwise consumer-groups`` shows the group as Kafka 4's tool does (its headers)."""
    base = ("consumer-groups", "--bootstrap-server", cluster.bootstrap)
    members = rackwise(*base, "--describe", "--group", group, "--members", "--verbose")
    assert members.returncode == 0, members.stderr
    lines = [line.split() for line in members.stdout.strip().splitlines()]
    assert lines[0] == [
        "GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "CURRENT-EPOCH",
        "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT",
    ]  # fmt: skip
    assert len(lines) == 3 and all(row[0] == group and row[4] == "3" for row in lines[1:])
    state = rackwise(*base, "--describe", "--group", group, "--state", "--verbose")
    assert state.returncode == 0, state.stderr
    header, row = (line.split() for line in state.stdout.strip().splitlines())
    assert header == [
        "GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE", "GROUP-EPOCH",
        "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS",
    ]  # fmt: skip
    assert (row[0], row[3], row[4], row[7]) == (group, "uniform", "Stable", "2")
    listed = rackwise(*base, "--list", "--type", "consumer")
    assert listed.returncode == 0, listed.stderr
    assert [group, "Consumer"] in [line.split() for line in listed.stdout.splitlines()]


def test_join_consume_commit_and_partitions_move_without_two_owners(cluster: Cluster) -> None:
    topic = _topic(cluster, "kip848")
    group = f"g-{uuid.uuid4().hex[:8]}"
    first = _consumer(cluster, group, **{"client.rack": "/dc1/r1"})
    second = _consumer(cluster, group, **{"client.rack": "/dc2/r1"})
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    try:
        first.subscribe([topic])
        _poll_until([first], lambda: len(_owned(first)) == PARTITIONS)
        values = [f"v{i}".encode() for i in range(60)]
        _produce(cluster, topic, values)
        assert sorted(_read(first, 60)) == sorted(values)
        first.commit(asynchronous=False)
        asked = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        assert sum(tp.offset for tp in first.committed(asked, timeout=10)) == 60

        second.subscribe([topic])
        _poll_until([first, second], lambda: len(_owned(first)) == len(_owned(second)) == 3)
        described = admin.describe_consumer_groups([group])[group].result(10)
        assert described.partition_assignor == "uniform"
        assert len(described.members) == 2
        _check_the_tool(cluster, group)
        first.close()
        _poll_until([second], lambda: len(_owned(second)) == PARTITIONS)
    finally:
        second.close()
    listed = admin.list_consumer_groups().result(10).valid
    assert any(g.group_id == group and g.type.name == "CONSUMER" for g in listed)


@pytest.mark.parametrize("assignor", DEFAULT_ASSIGNORS)
def test_each_server_assignor_by_name(cluster: Cluster, assignor: str) -> None:
    topic = _topic(cluster, f"a-{assignor[:10]}")
    group = f"g-{assignor}-{uuid.uuid4().hex[:6]}"
    consumers = [
        _consumer(cluster, group, **{"group.remote.assignor": assignor, "client.rack": rack})
        for rack in RACKS
    ]
    try:
        for c in consumers:
            c.subscribe([topic])
        _poll_until(consumers, lambda: sum(len(_owned(c)) for c in consumers) == PARTITIONS)
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        described = admin.describe_consumer_groups([group])[group].result(10)
        assert described.partition_assignor == assignor
        assert len(described.members) == len(RACKS)
    finally:
        for c in consumers:
            c.close()


def test_the_group_resumes_with_its_offsets_after_its_coordinator_is_killed(
    cluster: Cluster,
) -> None:
    topic = _topic(cluster, "failover")
    group = f"g-failover-{uuid.uuid4().hex[:6]}"
    consumer = _consumer(cluster, group)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    try:
        consumer.subscribe([topic])
        _poll_until([consumer], lambda: len(_owned(consumer)) == PARTITIONS)
        before = [f"b{i}".encode() for i in range(30)]
        _produce(cluster, topic, before)
        assert sorted(_read(consumer, len(before))) == sorted(before)
        consumer.commit(asynchronous=False)
        coordinator = admin.describe_consumer_groups([group])[group].result(10).coordinator.id
        victim = next(b for b in cluster.brokers if int(b["id"]) == coordinator)
        os.kill(int(victim["pid"]), signal.SIGKILL)
        cluster.brokers.remove(victim)
        after = [f"a{i}".encode() for i in range(30)]
        _produce(cluster, topic, after)
        again: list[bytes] = []
        deadline = time.monotonic() + 60
        while not set(after) <= set(again):
            assert time.monotonic() < deadline, len(again)
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                again.append(message.value())
        duplicates = [v for v in again if v in set(before)]
        assert len(duplicates) <= len(before)  # at least once: nothing committed is lost
        committed = consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], 10)
        assert sum(tp.offset for tp in committed) >= 30
        now = admin.describe_consumer_groups([group])[group].result(20)
        assert now.coordinator.id != coordinator
        assert len(now.members) == 1
    finally:
        consumer.close()


def test_an_empty_classic_group_moves_to_the_consumer_protocol_with_its_offsets(
    cluster: Cluster,
) -> None:
    topic = _topic(cluster, "upgrade")
    group = f"g-upgrade-{uuid.uuid4().hex[:6]}"
    _produce(cluster, topic, [f"c{i}".encode() for i in range(12)])
    classic = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
        }
    )
    try:
        classic.subscribe([topic])
        assert len(_read(classic, 12)) == 12
        classic.commit(asynchronous=False)
    finally:
        classic.close()
    later = [f"d{i}".encode() for i in range(12)]
    _produce(cluster, topic, later)
    consumer = _consumer(cluster, group)
    try:
        consumer.subscribe([topic])
        assert sorted(_read(consumer, 12)) == sorted(later)  # from the classic group's offsets
        extra = consumer.poll(1.0)
        assert extra is None or extra.error() is not None
    finally:
        consumer.close()


def test_a_classic_member_cannot_join_a_consumer_protocol_group(cluster: Cluster) -> None:
    topic = _topic(cluster, "mixed")
    group = f"g-mixed-{uuid.uuid4().hex[:6]}"
    consumer = _consumer(cluster, group)
    classic = Consumer(
        {"bootstrap.servers": cluster.bootstrap, "group.id": group, "session.timeout.ms": 6000}
    )
    try:
        consumer.subscribe([topic])
        _poll_until([consumer], lambda: len(_owned(consumer)) == PARTITIONS)
        classic.subscribe([topic])
        deadline = time.monotonic() + 15
        error = None
        while error is None:
            assert time.monotonic() < deadline
            message = classic.poll(0.2)
            consumer.poll(0)
            if message is not None and message.error() is not None:
                error = message.error()
        assert error.code() == KafkaError.INCONSISTENT_GROUP_PROTOCOL, error
        assert not classic.assignment()
        assert len(_owned(consumer)) == PARTITIONS
    finally:
        classic.close()
        consumer.close()


def test_describe_configs_shows_the_group_consumer_keys_the_coordinator_applies(
    cluster: Cluster,
) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    resource = ConfigResource("BROKER", str(cluster.brokers[0]["id"]))
    configs = admin.describe_configs([resource])[resource].result(30)

    def shown(key: str) -> tuple[str, bool, int]:
        entry = configs[key]
        return entry.value, entry.is_default, int(getattr(entry.source, "value", entry.source))

    static, default = ConfigSource.STATIC_BROKER_CONFIG.value, ConfigSource.DEFAULT_CONFIG.value
    assert shown("group.consumer.assignors") == (",".join(DEFAULT_ASSIGNORS), True, default)
    assert shown("group.consumer.heartbeat.interval.ms") == ("300", False, static)
    assert shown("group.consumer.session.timeout.ms") == ("6000", False, static)
    assert shown("group.consumer.max.size") == ("2147483647", True, default)
    assert shown("group.consumer.leader.rack.change.delay.ms") == ("30000", True, default)
