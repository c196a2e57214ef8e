"""A classic group migrating online, member by member, with real clients: two kafka-python
members consume and commit; a librdkafka consumer with ``group.protocol=consumer`` joins, and
the group becomes a consumer group while both classic members stay in it (served their
JoinGroup, SyncGroup and Heartbeat from its target assignment); one classic member leaves;
the consumer-protocol member leaves and the group becomes a classic group again, the last
classic member taking every partition. Throughout, no committed offset goes back, every
record produced is read, and no partition is owned by two clients at once as their rebalance
callbacks report it. And a static classic member taking the place of the last
consumer-protocol member makes a classic group at once."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient
from kafka import ConsumerRebalanceListener, KafkaConsumer
from kafka.errors import KafkaError

from tests.interop.conftest import Cluster, create_topic, produce_spread

PARTITIONS = 4


class Owners:
    """What each client owns, from its rebalance callbacks, checked disjoint at every one."""

    def __init__(self) -> None:
        self.owned: dict[str, set[int]] = {}
        self.overlaps: list[str] = []

    def set(self, client: str, partitions: set[int]) -> None:
        self.owned[client] = partitions
        for other, theirs in self.owned.items():
            if other != client and theirs & partitions:
                self.overlaps.append(f"{client} and {other} both own {theirs & partitions}")


class _Listener(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, owners: Owners, name: str) -> None:
        self.owners, self.name = owners, name

    def on_partitions_revoked(self, revoked: Any) -> None:
        mine = self.owners.owned.get(self.name, set())
        self.owners.set(self.name, mine - {tp.partition for tp in revoked})

    def on_partitions_assigned(self, assigned: Any) -> None:
        mine = self.owners.owned.get(self.name, set())
        self.owners.set(self.name, mine | {tp.partition for tp in assigned})


def _classic(
    cluster: Cluster,
    group: str,
    topic: str,
    owners: Owners,
    name: str,
    instance_id: str | None = None,
) -> KafkaConsumer:
    consumer = KafkaConsumer(
        bootstrap_servers=cluster.bootstrap,
        group_id=group,
        group_instance_id=instance_id,
        client_id=name,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=6000,
        heartbeat_interval_ms=300,
        metadata_max_age_ms=2000,
    )
    consumer.subscribe([topic], listener=_Listener(owners, name))
    return consumer


def _consumer_protocol(
    cluster: Cluster, group: str, topic: str, owners: Owners, instance_id: str | None = None
) -> Consumer:
    settings = {
        "bootstrap.servers": cluster.bootstrap,
        "group.id": group,
        "group.protocol": "consumer",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    }
    if instance_id is not None:
        settings["group.instance.id"] = instance_id
    consumer = Consumer(settings)

    def assigned(c: Consumer, partitions: list[TopicPartition]) -> None:
        owners.set("new", owners.owned.get("new", set()) | {tp.partition for tp in partitions})

    def revoked(c: Consumer, partitions: list[TopicPartition]) -> None:
        owners.set("new", owners.owned.get("new", set()) - {tp.partition for tp in partitions})

    consumer.subscribe([topic], on_assign=assigned, on_revoke=revoked, on_lost=revoked)
    return consumer


class Group:
    """The clients of the group, polled in turn, and what they read."""

    def __init__(self) -> None:
        self.classic: dict[str, KafkaConsumer] = {}
        self.new: Consumer | None = None
        self.read: list[bytes] = []

    def poll(self) -> None:
        for consumer in self.classic.values():
            for records in consumer.poll(timeout_ms=50).values():
                self.read.extend(r.value for r in records)
        if self.new is not None:
            message = self.new.poll(0.05)
            if message is not None and message.error() is None:
                self.read.append(message.value())

    def until(self, done: Callable[[], bool], what: str, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while not done():
            assert time.monotonic() < deadline, what
            self.poll()

    def close(self) -> None:
        for consumer in self.classic.values():
            consumer.close()
        if self.new is not None:
            self.new.close()

    def commit(self) -> None:
        """Every client commits what it read, retried while the group rebalances."""
        for consumer in self.classic.values():
            self.until(lambda c=consumer: _committed(c), "a classic commit")  # type: ignore[misc]
        if self.new is not None:
            self.new.commit(asynchronous=False)


def _committed(consumer: KafkaConsumer) -> bool:
    try:
        consumer.commit()
    except KafkaError:
        return False
    return True


def _offsets(cluster: Cluster, group: str, topic: str) -> dict[int, int]:
    probe = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group})
    try:
        asked = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        return {tp.partition: tp.offset for tp in probe.committed(asked, timeout=20)}
    finally:
        probe.close()


def _group_type(cluster: Cluster, group: str) -> str:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    listed = admin.list_consumer_groups().result(20).valid
    return next(str(g.type.name).lower() for g in listed if g.group_id == group)


def test_a_classic_group_migrates_online_and_back_without_losing_offsets(
    cluster: Cluster,
) -> None:
    topic = create_topic(cluster.bootstrap, "online", PARTITIONS, 3)
    group = f"online-{uuid.uuid4().hex[:6]}"
    owners, clients = Owners(), Group()
    produced: list[bytes] = []
    history: list[dict[int, int]] = []

    def produce(prefix: str, count: int) -> None:
        values = [f"{prefix}{i}".encode() for i in range(count)]
        produce_spread(cluster.bootstrap, topic, values, PARTITIONS)
        produced.extend(values)

    def all_read() -> bool:
        return set(produced) <= set(clients.read)

    def checkpoint() -> None:
        clients.commit()
        offsets = _offsets(cluster, group, topic)
        if history:
            assert all(offsets[p] >= history[-1][p] for p in offsets), (history[-1], offsets)
        history.append(offsets)

    try:
        for name in ("a", "b"):
            clients.classic[name] = _classic(cluster, group, topic, owners, name)
        produce("one-", 16)
        clients.until(all_read, "the classic group reads the first records")
        checkpoint()

        clients.new = _consumer_protocol(cluster, group, topic, owners)
        produce("two-", 16)
        clients.until(lambda: bool(owners.owned.get("new")), "the new member gets partitions")
        assert _group_type(cluster, group) == "consumer"
        clients.until(all_read, "all three read the second records")
        checkpoint()

        clients.classic.pop("b").close()  # a classic LeaveGroup inside the consumer group
        owners.set("b", set())
        produce("three-", 12)
        clients.until(all_read, "a and the new member read the third records")
        clients.until(
            lambda: len(owners.owned.get("a", set()) | owners.owned["new"]) == PARTITIONS,
            "a and the new member own every partition",
        )
        checkpoint()

        clients.new.close()  # the last consumer-protocol member leaves
        clients.new = None
        owners.set("new", set())
        produce("four-", 12)
        clients.until(lambda: len(owners.owned["a"]) == PARTITIONS, "a takes every partition")
        assert _group_type(cluster, group) == "classic"
        clients.until(all_read, "a reads the fourth records")
        checkpoint()
    finally:
        clients.close()
    assert owners.overlaps == []
    assert sum(history[-1].values()) == len(produced)  # every record committed, none lost


def test_a_static_classic_member_replacing_the_last_consumer_protocol_member_downgrades(
    cluster: Cluster,
) -> None:
    """Kafka's ``validateOnlineDowngradeWithReplacedMember``: the librdkafka member with
    ``group.instance.id`` ``s`` stops (a static member's leave keeps its place), and a
    kafka-python member joining with the same instance id takes its place: the group is a
    classic one at once, and the two classic members read on from the committed offsets."""
    topic = create_topic(cluster.bootstrap, "replaced", PARTITIONS, 3)
    group = f"replaced-{uuid.uuid4().hex[:6]}"
    owners, clients = Owners(), Group()
    values = [f"r{i}".encode() for i in range(16)]
    try:
        clients.classic["a"] = _classic(cluster, group, topic, owners, "a")
        clients.until(lambda: len(owners.owned.get("a", ())) == PARTITIONS, "a owns everything")
        clients.new = _consumer_protocol(cluster, group, topic, owners, instance_id="s")
        clients.until(lambda: bool(owners.owned.get("new")), "the static member gets partitions")
        assert _group_type(cluster, group) == "consumer"
        produce_spread(cluster.bootstrap, topic, values, PARTITIONS)
        clients.until(lambda: set(values) <= set(clients.read), "both read the records")
        clients.commit()
        clients.new.close()  # a static member's leave: its place is kept for its session
        clients.new = None
        owners.set("new", set())
        clients.classic["s"] = _classic(cluster, group, topic, owners, "s", instance_id="s")
        clients.until(lambda: _group_type(cluster, group) == "classic", "a classic group", 30)
        more = [f"m{i}".encode() for i in range(16)]
        produce_spread(cluster.bootstrap, topic, more, PARTITIONS)
        clients.until(lambda: set(more) <= set(clients.read), "the classic members read on")
        clients.until(
            lambda: len(owners.owned.get("a", set()) | owners.owned.get("s", set())) == PARTITIONS,
            "a and s own every partition",
        )
        clients.commit()
    finally:
        clients.close()
    assert owners.overlaps == []
    assert sum(_offsets(cluster, group, topic).values()) == len(values) + len(more)
