"""librdkafka consumers with ``group.protocol=consumer`` (KIP-848) on a stretch cluster of six
brokers, three data centres of two racks (replicas placed ``multi-level``, one per data
centre): they join, consume and commit; partitions move to a second member
and back without two owners at once; each server-side assignor is chosen by name with
``group.remote.assignor``, a stable group's assignment being what ``rackwise assign`` computes
for the same members and partitions, and following a leader that moves to another data
centre; and after ``kill -9`` of the group coordinator's broker the group resumes on the new
coordinator from its committed offsets.

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
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource

from rackwise.assignors.server_registry import DEFAULT_ASSIGNORS
from rackwise.common.java import java_hashmap_order, java_string_hash
from tests.command_line import rackwise
from tests.interop.conftest import create_topic, eventually, produce_spread

RACKS = ("/dc1/r1", "/dc1/r2", "/dc2/r1", "/dc2/r2", "/dc3/r1", "/dc3/r2")
"""The brokers' racks."""
MEMBER_RACKS = ("/dc1/r2", "/dc2/r1", "/dc3/r2")
"""One member per data centre, in racks of their own."""
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
        "group.consumer.leader.rack.change.delay.ms=1000",
        "offsets.topic.replication.factor=3",
        "offsets.topic.num.partitions=3",
    ]
    args = [a for o in overrides for a in ("--override", o)]
    up = rackwise(
        "cluster", "up", "--brokers", str(len(RACKS)), "--racks", ",".join(RACKS),
        "--placer", "multi-level", "--dir", str(directory), "--json", *args,
    )  # fmt: skip
    try:
        assert up.returncode == 0, up.stderr
        yield Cluster(directory, json.loads(up.stdout)["nodes"])
    finally:
        if (directory / "cluster.json").exists():
            down = rackwise("cluster", "down", "--dir", str(directory))
            assert down.returncode == 0, down.stderr


def _topic(cluster: Cluster, prefix: str) -> str:
    return create_topic(cluster.bootstrap, prefix, PARTITIONS, 3)


def _produce(cluster: Cluster, topic: str, values: list[bytes]) -> None:
    produce_spread(cluster.bootstrap, topic, values, PARTITIONS)


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
        read.extend(_poll_once(consumers))
    return read


def _poll_once(consumers: list[Consumer]) -> list[bytes]:
    """Poll each consumer once, after checking that no partition is owned by two of them."""
    owned = [_owned(c) for c in consumers]
    for i, a in enumerate(owned):
        for b in owned[i + 1 :]:
            assert not a & b, owned
    read = []
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
        for rack in MEMBER_RACKS
    ]
    try:
        for c in consumers:
            c.subscribe([topic])
        _poll_until(consumers, lambda: sum(len(_owned(c)) for c in consumers) == PARTITIONS)
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        described = admin.describe_consumer_groups([group])[group].result(10)
        assert described.partition_assignor == assignor
        assert len(described.members) == len(MEMBER_RACKS)
    finally:
        for c in consumers:
            c.close()


@pytest.mark.parametrize("assignor", ["leader-rack-aware-range", "rack-local-optimal"])
def test_a_stable_group_is_assigned_as_rackwise_assign_computes(
    cluster: Cluster, assignor: str, tmp_path: Path
) -> None:
    """One library, two callers: the coordinator's target for a stable group, fed to ``rackwise
    assign`` with the same members (in the coordinator's order, owning what they hold, as the
    coordinator's next computation would see them) and partitions, comes back unchanged, and
    the share read in the leader's rack on the live group is ``--report``'s figure (for
    ``rack-local-optimal``, the optimum it proves)."""
    group = _Group(cluster, assignor, ("/dc1/r1", "/dc1/r1", "/dc2/r2"), 12, 2)
    try:
        live = group.wait_stable()
        racks = _leader_racks(cluster, group.topic, group.count)
        computed = group.computed(tmp_path, live, racks, "--report", "--format", "json")
        assert computed["assignment"] == live
        rack_of = group.rack_of()
        local = sum(1 for m, ps in live.items() for p in ps if racks[p][0] == rack_of[m])
        assert computed["report"]["leader_rack_local"] == local
        if assignor == "rack-local-optimal":
            assert local == computed["report"]["optimal_leader_rack_local"]
    finally:
        group.close()


def test_the_group_follows_a_leader_to_another_data_centre(
    cluster: Cluster, tmp_path: Path
) -> None:
    """A leader-rack-aware group, one member per data centre: when a partition's leader moves
    to another data centre (its replicas reordered, then a preferred election), the group's
    assignment becomes what ``rackwise assign`` computes for the new leaders' racks, once the
    damping interval (1 s here) has passed; no partition has two owners meanwhile. The move is
    one that changes that answer."""
    group = _Group(cluster, "leader-rack-aware-range", MEMBER_RACKS, PARTITIONS, 3)
    try:
        before = group.wait_stable()
        racks = _leader_racks(cluster, group.topic, group.count)
        assert group.computed(tmp_path, {}, racks)["assignment"] == before
        brokers = {int(n["id"]): str(n["rack"]) for n in cluster.brokers}
        moves = [
            (p, b)
            for p, m in group.partitions().items()
            for b in m.replicas
            if b in brokers and brokers[b] != brokers[m.leader]
        ]
        for partition, target in moves:
            after = [list(r) for r in racks]
            after[partition] = [
                brokers[target],
                *(r for r in racks[partition] if r != brokers[target]),
            ]
            expected = group.computed(tmp_path, {}, after)["assignment"]
            if expected != before:
                break
        else:
            raise AssertionError(f"no leader move changes the assignment of {racks}")
        replicas = group.partitions()[partition].replicas
        order = [target, *(b for b in replicas if b != target)]
        plan = tmp_path / "move.json"
        plan.write_text(
            json.dumps(
                {
                    "version": 1,
                    "partitions": [
                        {"topic": group.topic, "partition": partition, "replicas": order}
                    ],
                }
            )
        )
        base = ("--bootstrap-server", cluster.bootstrap)
        moved = rackwise("reassign", *base, "--reassignment-json-file", str(plan), "--execute")
        assert moved.returncode == 0, moved.stderr
        eventually(lambda: group.partitions()[partition].replicas == order, 30)
        elected = rackwise(
            "leader-election", *base, "--election-type", "preferred", "--topic", group.topic,
            "--partition", str(partition),
        )  # fmt: skip
        assert elected.returncode == 0, elected.stderr
        eventually(lambda: group.partitions()[partition].leader == target, 30)
        eventually(lambda: group.stable() == expected, 30)
    finally:
        group.close()


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


def test_a_classic_member_is_served_in_a_consumer_protocol_group(cluster: Cluster) -> None:
    """A librdkafka member of the classic protocol joins a consumer-protocol group: it is
    served the group's target assignment (Kafka's classicGroupJoinToConsumerGroup), the two
    never owning a partition at once; when the consumer-protocol member leaves, the group
    becomes a classic group and the classic member takes every partition."""
    topic = _topic(cluster, "mixed")
    group = f"g-mixed-{uuid.uuid4().hex[:6]}"
    consumer = _consumer(cluster, group)
    classic = Consumer(
        {"bootstrap.servers": cluster.bootstrap, "group.id": group, "session.timeout.ms": 6000}
    )
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    both = [consumer, classic]
    try:
        consumer.subscribe([topic])
        _poll_until([consumer], lambda: len(_owned(consumer)) == PARTITIONS)
        classic.subscribe([topic])
        _poll_until(
            both,
            lambda: bool(_owned(classic)) and len(_owned(consumer) | _owned(classic)) == PARTITIONS,
        )
        listed = admin.list_consumer_groups().result(10).valid
        assert any(g.group_id == group and g.type.name == "CONSUMER" for g in listed)
        both.remove(consumer)
        consumer.close()
        _poll_until([classic], lambda: len(_owned(classic)) == PARTITIONS)
        listed = admin.list_consumer_groups().result(10).valid
        assert any(g.group_id == group and g.type.name == "CLASSIC" for g in listed)
    finally:
        for member in both:
            member.close()


def _leader_racks(cluster: Cluster, topic: str, count: int) -> list[list[str]]:
    """Each partition's replica racks, the leader's first (``rackwise assign``'s input)."""
    racks = {int(n["id"]): str(n["rack"]) for n in cluster.nodes if n["role"] == "broker"}
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    partitions = admin.list_topics(topic, timeout=10).topics[topic].partitions
    return [
        [racks[partitions[p].leader]]
        + [racks[r] for r in partitions[p].replicas if r != partitions[p].leader]
        for p in range(count)
    ]


def _partitions(admin: AdminClient, topic: str) -> dict[int, Any]:
    return dict(admin.list_topics(topic, timeout=10).topics[topic].partitions)


class _Group:
    """A group of librdkafka members with ``group.remote.assignor``, one per rack given, on a
    new topic, with what ``rackwise assign`` computes for it beside what the coordinator
    assigned."""

    def __init__(
        self, cluster: Cluster, assignor: str, racks: tuple[str, ...], count: int, rf: int
    ) -> None:
        self.cluster, self.assignor, self.racks, self.count = cluster, assignor, racks, count
        self.topic = create_topic(cluster.bootstrap, "same", count, rf)
        self.admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        self.group = f"g-same-{uuid.uuid4().hex[:6]}"
        self.consumers = [
            _consumer(cluster, self.group, **{"group.remote.assignor": assignor, "client.rack": r})
            for r in racks
        ]
        for c in self.consumers:
            c.subscribe([self.topic])

    def partitions(self) -> dict[int, Any]:
        return _partitions(self.admin, self.topic)

    def close(self) -> None:
        for c in self.consumers:
            c.close()

    def stable(self) -> dict[str, list[int]] | None:
        """Each member's partitions once the group is Stable with every partition assigned
        (the members polled meanwhile, checking that no partition has two owners)."""
        _poll_once(self.consumers)
        described = self.admin.describe_consumer_groups([self.group])[self.group].result(10)
        if described.state.name != "STABLE":
            return None
        current = {
            m.member_id: sorted(tp.partition for tp in m.assignment.topic_partitions)
            for m in described.members
        }
        return current if sum(map(len, current.values())) == self.count else None

    def wait_stable(self) -> dict[str, list[int]]:
        _poll_until(
            self.consumers, lambda: sum(map(len, map(_owned, self.consumers))) == self.count
        )
        return eventually(self.stable, 30)

    def rack_of(self) -> dict[str, str]:
        return {c.memberid(): r for c, r in zip(self.consumers, self.racks, strict=True)}

    def computed(
        self, folder: Path, owned: dict[str, list[int]], leader_racks: list[list[str]], *extra: str
    ) -> Any:
        """``rackwise assign``'s answer for these members (in the coordinator's order, owning
        ``owned``) over partitions whose replica racks are ``leader_racks``."""
        rack_of = self.rack_of()
        order = java_hashmap_order(list(rack_of), java_string_hash, exact=False)
        members = [
            {
                "member_id": m,
                "group_instance_id": None,
                "rack": rack_of[m],
                "topics": [self.topic],
                "owned": [[self.topic, p] for p in owned.get(m, [])],
                "generation": 1 if owned.get(m) else -1,
            }
            for m in order
        ]
        source = folder / f"group-{uuid.uuid4().hex[:6]}.json"
        source.write_text(
            json.dumps({"partitions": {self.topic: leader_racks}, "members": members})
        )
        answer = rackwise("assign", "--assignor", self.assignor, "--input", str(source), *extra)
        assert answer.returncode == 0, answer.stderr
        document = json.loads(answer.stdout)
        document["assignment"] = {
            m: sorted(p for _, p in tps) for m, tps in document["assignment"].items()
        }
        return document


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
    assert shown("group.consumer.leader.rack.change.delay.ms") == ("1000", False, static)
