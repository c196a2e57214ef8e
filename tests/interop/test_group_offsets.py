"""Consumers with a group id that assign their partitions: confluent-kafka and aiokafka commit,
read their commits back, and close at once (a closing librdkafka consumer commits first, and
waited for a coordinator before rackwise served one); the admin clients of kafka-python and
confluent-kafka list, describe and delete the groups and their offsets."""

from __future__ import annotations

import asyncio
import time
import uuid

from aiokafka import AIOKafkaConsumer
from aiokafka.structs import OffsetAndMetadata
from aiokafka.structs import TopicPartition as AioTopicPartition
from confluent_kafka import (
    Consumer,
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient
from kafka import TopicPartition as KpTopicPartition

from tests.interop.conftest import Cluster, eventually

RECORDS = 20


def _topic_with_records(cluster: Cluster, prefix: str) -> str:
    topic = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=3)])[topic].result(30)
    eventually(lambda: admin.list_topics(topic, timeout=10).topics[topic].error is None)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(RECORDS):
        producer.produce(topic, f"r{i}".encode(), partition=0)
    assert producer.flush(30) == 0
    return topic


def _commit(cluster: Cluster, group: str, topic: str, offset: int) -> None:
    """Commit ``offset`` for partition 0 of ``topic`` as a simple consumer of ``group``."""
    committer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group})
    try:
        committer.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
    finally:
        committer.close()


def test_confluent_kafka_commits_and_closes_at_once(cluster: Cluster) -> None:
    topic = _topic_with_records(cluster, "ck-commit")
    group = f"ck-group-{uuid.uuid4().hex[:8]}"
    settings = {"bootstrap.servers": cluster.bootstrap, "group.id": group}
    consumer = Consumer({**settings, "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic, 0)])
    values: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(values) < 12 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            values.append(message.value())
    assert values[:12] == [f"r{i}".encode() for i in range(12)]
    (committed,) = consumer.commit(offsets=[TopicPartition(topic, 0, 12)], asynchronous=False)
    assert (committed.offset, committed.error) == (12, None)
    started = time.monotonic()
    consumer.close()  # commits what auto-commit holds: one round trip to the coordinator
    assert time.monotonic() - started < 10

    again = Consumer(settings)
    (read,) = again.committed([TopicPartition(topic, 0)], timeout=30)
    again.close()
    assert read.offset >= 12


def test_aiokafka_commits_and_reads_its_commit(cluster: Cluster) -> None:
    topic = _topic_with_records(cluster, "aio-commit")
    group = f"aio-group-{uuid.uuid4().hex[:8]}"
    partition = AioTopicPartition(topic, 0)

    async def scenario() -> tuple[list[int], int | None, list[int]]:
        first = AIOKafkaConsumer(
            bootstrap_servers=cluster.bootstrap,
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        await first.start()
        try:
            first.assign([partition])
            batch = await first.getmany(partition, timeout_ms=10_000, max_records=7)
            offsets = [m.offset for m in batch.get(partition, [])]
            await first.commit({partition: OffsetAndMetadata(7, "aio")})
            committed = await first.committed(partition)
        finally:
            await first.stop()
        second = AIOKafkaConsumer(
            bootstrap_servers=cluster.bootstrap, group_id=group, enable_auto_commit=False
        )
        await second.start()
        try:
            second.assign([partition])
            resumed = await second.getmany(partition, timeout_ms=10_000, max_records=3)
        finally:
            await second.stop()
        return offsets, committed, [m.offset for m in resumed.get(partition, [])]

    offsets, committed, resumed = asyncio.run(scenario())
    assert offsets == list(range(7))
    assert committed == 7
    assert resumed == [7, 8, 9]


def test_admin_clients_list_and_describe_simple_groups(cluster: Cluster) -> None:
    topic = _topic_with_records(cluster, "admin-groups")
    group = f"admin-group-{uuid.uuid4().hex[:8]}"
    _commit(cluster, group, topic, 5)

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        listed = {g["group_id"]: g for g in admin.list_groups()}
        described = admin.describe_groups([group, "never-committed"])
        offsets = admin.list_group_offsets(group)
    finally:
        admin.close()
    assert listed[group] == {
        "group_id": group,
        "protocol_type": "",
        "group_state": "Empty",
        "group_type": "classic",
    }
    assert (described[group]["group_state"], described[group]["members"]) == ("Empty", [])
    assert described["never-committed"]["group_state"] == "Dead"
    assert "GroupIdNotFound" in str(described["never-committed"]["error"])
    assert [(tp.topic, tp.partition, o.offset) for tp, o in offsets[group].items()] == [
        (topic, 0, 5)
    ]

    confluent = AdminClient({"bootstrap.servers": cluster.bootstrap})
    groups = confluent.list_consumer_groups(states={ConsumerGroupState.EMPTY}).result(30)
    assert group in {g.group_id for g in groups.valid}
    description = confluent.describe_consumer_groups([group])[group].result(30)
    assert (description.state, description.members) == (ConsumerGroupState.EMPTY, [])
    request = [ConsumerGroupTopicPartitions(group)]
    committed = confluent.list_consumer_group_offsets(request)[group].result(30)
    assert [(tp.topic, tp.offset) for tp in committed.topic_partitions] == [(topic, 5)]


def test_admin_clients_delete_offsets_and_groups(cluster: Cluster) -> None:
    topic = _topic_with_records(cluster, "delete-groups")
    group = f"doomed-{uuid.uuid4().hex[:8]}"
    _commit(cluster, group, topic, 3)

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        partition = KpTopicPartition(topic, 0)
        deleted = admin.delete_group_offsets(group, [partition])
        assert [(tp, error.errno) for tp, error in deleted.items()] == [(partition, 0)]
        assert admin.list_group_offsets(group)[group] == {}
        results = admin.delete_groups([group, "never-committed-either"])
    finally:
        admin.close()
    assert results[group] == "OK"
    assert "GroupIdNotFound" in str(results["never-committed-either"])

    confluent = AdminClient({"bootstrap.servers": cluster.bootstrap})
    groups = confluent.list_consumer_groups().result(30)
    assert group not in {g.group_id for g in groups.valid}
    recommitted = f"{group}-again"
    _commit(cluster, recommitted, topic, 4)
    assert confluent.delete_consumer_groups([recommitted])[recommitted].result(30) is None
