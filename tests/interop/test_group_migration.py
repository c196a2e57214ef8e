"""A group moving between the classic protocol and KIP-848's without losing its offsets:
kafka-python members commit and leave one by one, a librdkafka consumer with
``group.protocol=consumer`` takes over from the committed offsets, and kafka-python takes the
group back once it has left (the online conversion of a group with members is
test_group_online_migration's)."""

from __future__ import annotations

import time
import uuid

from confluent_kafka import Consumer
from kafka import KafkaConsumer, TopicPartition
from kafka.errors import IllegalStateError

from tests.interop.conftest import Cluster, create_topic, eventually, produce_spread

PARTITIONS = 4


def _topic(cluster: Cluster) -> str:
    return create_topic(cluster.bootstrap, "migrate", PARTITIONS, 3)


def _produce(cluster: Cluster, topic: str, values: list[bytes]) -> None:
    produce_spread(cluster.bootstrap, topic, values, PARTITIONS)


def _classic(cluster: Cluster, group: str, topic: str) -> KafkaConsumer:
    consumer = KafkaConsumer(
        bootstrap_servers=cluster.bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
        # The group's leader assigns from its own metadata; one read before the topic reached
        # every broker lacks the topic's partitions, and the next refresh corrects it.
        metadata_max_age_ms=2000,
    )
    consumer.subscribe([topic])
    return consumer


def _read_classic(consumers: list[KafkaConsumer], topic: str, values: list[bytes]) -> set[bytes]:
    """The values the consumers read, once every one of ``values`` is read and the group has
    settled: each member holds its share of the partitions and has read them to their end.

    Only then does each member's ``commit()`` (its positions in what it holds) cover what the
    group read: an eager rebalance while reading hands a partition over at its last commit,
    so a member that read it in the generation before gives it up uncommitted, and the one
    that takes it over reads it again from there (or, when it has not fetched yet, would
    commit its start)."""
    read: set[bytes] = set()
    partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    ends = consumers[0].end_offsets(partitions)
    deadline = time.monotonic() + 60
    while not (read >= set(values) and _settled(consumers, ends)):
        assert time.monotonic() < deadline, (len(read), len(values))
        for consumer in consumers:
            for records in consumer.poll(timeout_ms=100).values():
                read.update(r.value for r in records)
    return read


def _settled(consumers: list[KafkaConsumer], ends: dict[TopicPartition, int]) -> bool:
    owned = [consumer.assignment() for consumer in consumers]
    share = PARTITIONS // len(consumers)
    if any(len(o) != share for o in owned) or set().union(*owned) != set(ends):
        return False
    try:
        return all(
            consumer.position(tp, timeout_ms=500) == ends[tp]
            for consumer, held in zip(consumers, owned, strict=True)
            for tp in held
        )
    except IllegalStateError:  # a rebalance took the partition meanwhile
        return False


def _read_consumer_protocol(consumer: Consumer, count: int) -> list[bytes]:
    read: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(read) < count:
        assert time.monotonic() < deadline, (len(read), count)
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            read.append(message.value())
    return read


def test_a_classic_group_moves_to_the_consumer_protocol_and_back_with_its_offsets(
    cluster: Cluster,
) -> None:
    topic = _topic(cluster)
    group = f"migrate-{uuid.uuid4().hex[:6]}"
    first = [f"a{i}".encode() for i in range(16)]
    _produce(cluster, topic, first)
    members = [_classic(cluster, group, topic) for _ in range(2)]
    try:
        assert _read_classic(members, topic, first) == set(first)
        for member in members:
            member.commit()
        members.pop().close()  # one leaves: the other holds the classic group alone
        (alone,) = members
        eventually(lambda: alone.poll(timeout_ms=100) == {} and len(alone.assignment()) == 4, 60)
    finally:
        for member in members:
            member.close()

    second = [f"b{i}".encode() for i in range(12)]
    _produce(cluster, topic, second)
    upgraded = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": group,
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        upgraded.subscribe([topic])
        assert sorted(_read_consumer_protocol(upgraded, len(second))) == sorted(second)
        extra = upgraded.poll(1.0)  # nothing before the classic group's offsets comes again
        assert extra is None or extra.error() is not None
        upgraded.commit(asynchronous=False)
    finally:
        upgraded.close()

    third = [f"c{i}".encode() for i in range(8)]
    _produce(cluster, topic, third)
    back = _classic(cluster, group, topic)
    try:
        assert _read_classic([back], topic, third) == set(third)
        assert not back.poll(timeout_ms=1000)  # from the consumer group's offsets
    finally:
        back.close()
