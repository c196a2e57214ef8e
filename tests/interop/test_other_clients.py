"""confluent-kafka (librdkafka) and aiokafka against a rackwise cluster."""

from __future__ import annotations

import asyncio

from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin import NewTopic as AioNewTopic
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient

from tests.interop.conftest import Cluster, eventually


def test_confluent_kafka_creates_and_lists_topics(cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    futures = admin.create_topics(
        [NewTopic("ck-orders", num_partitions=3, replication_factor=2)], operation_timeout=20
    )
    assert futures["ck-orders"].result(timeout=30) is None
    topic = eventually(lambda: admin.list_topics(timeout=10).topics.get("ck-orders"))
    partitions = topic.partitions
    assert sorted(partitions) == [0, 1, 2]
    assert all(len(p.replicas) == 2 for p in partitions.values())
    brokers = admin.list_topics(timeout=10).brokers
    assert sorted(brokers) == sorted(int(str(b["id"])) for b in cluster.brokers)


def test_aiokafka_creates_topics_and_describes_the_cluster(cluster: Cluster) -> None:
    async def scenario() -> dict[str, object]:
        admin = AIOKafkaAdminClient(bootstrap_servers=cluster.bootstrap)
        await admin.start()
        try:
            await admin.create_topics([AioNewTopic("aio-orders", 2, 3)])
            return await admin.describe_cluster()
        finally:
            await admin.close()

    described = asyncio.run(scenario())
    brokers = described["brokers"]
    assert isinstance(brokers, list)
    assert {b["node_id"]: b["rack"] for b in brokers} == cluster.racks
    check = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        eventually(lambda: "aio-orders" in check.list_topics())
    finally:
        check.close()
