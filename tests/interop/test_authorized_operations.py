"""librdkafka asks for authorized operations (as its admin test does) and gets every operation
the resource supports, as from a Kafka cluster without an authorizer."""

from __future__ import annotations

from confluent_kafka import TopicCollection
from confluent_kafka.admin import AclOperation, AdminClient, NewTopic

from tests.interop.conftest import Cluster, eventually

TOPIC = {
    "READ",
    "WRITE",
    "CREATE",
    "DELETE",
    "ALTER",
    "DESCRIBE",
    "DESCRIBE_CONFIGS",
    "ALTER_CONFIGS",
}
CLUSTER = {
    "CREATE",
    "ALTER",
    "DESCRIBE",
    "CLUSTER_ACTION",
    "DESCRIBE_CONFIGS",
    "ALTER_CONFIGS",
    "IDEMPOTENT_WRITE",
}


def _names(operations: list[AclOperation] | None) -> set[str]:
    assert operations is not None
    return {op.name for op in operations}


def test_confluent_kafka_reads_every_supported_operation(cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    described = admin.describe_cluster(include_authorized_operations=True).result(timeout=30)
    assert _names(described.authorized_operations) == CLUSTER
    created = admin.create_topics([NewTopic("ops-orders", 1, 1)], operation_timeout=20)
    assert created["ops-orders"].result(timeout=30) is None
    eventually(lambda: "ops-orders" in admin.list_topics(timeout=10).topics)
    futures = admin.describe_topics(
        TopicCollection(["ops-orders"]), include_authorized_operations=True
    )
    topic = futures["ops-orders"].result(timeout=30)
    assert _names(topic.authorized_operations) == TOPIC
