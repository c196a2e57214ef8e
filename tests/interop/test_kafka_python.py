"""kafka-python's ``KafkaAdminClient`` against a rackwise cluster: topics with and without
explicit assignments, the brokers' racks as registered, listing, describing, growing and
deleting topics; and multi-level placement spreading every partition over three DCs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kafka import KafkaAdminClient

from tests.interop.conftest import RACKS, Cluster, eventually


@pytest.fixture(scope="module")
def admin(cluster: Cluster) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=20000)
    yield client
    client.close()


def _partitions(admin: KafkaAdminClient, topic: str, count: int) -> list[dict[str, Any]] | None:
    """The topic's partitions, by index, once a broker knows all ``count`` of them."""
    [described] = admin.describe_topics([topic])
    if described["error_code"] != 0 or len(described["partitions"]) != count:
        return None
    return sorted(described["partitions"], key=lambda p: p["partition_index"])


def test_describe_cluster_shows_the_racks_as_registered(
    admin: KafkaAdminClient, cluster: Cluster
) -> None:
    described = admin.describe_cluster()
    racks = {b["broker_id"]: b["rack"] for b in described["brokers"]}
    assert racks == cluster.racks == {i + 1: rack for i, rack in enumerate(RACKS)}
    ports = {b["broker_id"]: b["port"] for b in described["brokers"]}
    assert ports == {b["id"]: b["port"] for b in cluster.brokers}


def test_multi_level_placement_puts_each_partition_in_three_dcs(
    admin: KafkaAdminClient, cluster: Cluster
) -> None:
    response = admin.create_topics({"kp-stretch": {"num_partitions": 6, "replication_factor": 3}})
    assert [t["error_code"] for t in response["topics"]] == [0]
    partitions = eventually(lambda: _partitions(admin, "kp-stretch", 6))
    for partition in partitions:
        replicas = partition["replica_nodes"]
        assert len(set(replicas)) == 3
        assert {cluster.racks[r].split("/")[1] for r in replicas} == {"dc1", "dc2", "dc3"}
        assert partition["leader_id"] == replicas[0]
    assert "kp-stretch" in admin.list_topics()


def test_explicit_assignments_are_kept_and_partitions_grow(admin: KafkaAdminClient) -> None:
    wanted = {0: [1, 2], 1: [3, 4], 2: [5, 6]}
    admin.create_topics({"kp-manual": {"assignments": wanted}})
    partitions = eventually(lambda: _partitions(admin, "kp-manual", 3))
    assert {p["partition_index"]: list(p["replica_nodes"]) for p in partitions} == wanted
    admin.create_partitions({"kp-manual": 5})
    grown = eventually(lambda: _partitions(admin, "kp-manual", 5))
    assert all(len(p["replica_nodes"]) == 2 for p in grown)
    assert [p["partition_index"] for p in grown] == [0, 1, 2, 3, 4]


def test_describe_topic_partitions_pages_through_a_topic(admin: KafkaAdminClient) -> None:
    """DescribeTopicPartitions (KIP-966), as kafka-python's admin client pages with it: the
    same partitions as Metadata shows, three at a time."""
    admin.create_topics({"kp-paged": {"num_partitions": 7, "replication_factor": 2}})
    expected = eventually(lambda: _partitions(admin, "kp-paged", 7))
    pages: list[list[dict[str, Any]]] = []
    cursor = None
    while len(pages) < 5:
        page = admin.describe_topic_partitions(
            ["kp-paged"], response_partition_limit=3, cursor=cursor
        )
        (topic,) = page["topics"]
        assert (topic["name"], topic["error_code"]) == ("kp-paged", 0)
        pages.append(topic["partitions"])
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert [len(p) for p in pages] == [3, 3, 1]
    seen = [p for page in pages for p in page]
    assert [
        (p["partition_index"], p["leader_id"], p["replica_nodes"], p["isr_nodes"]) for p in seen
    ] == [
        (p["partition_index"], p["leader_id"], list(p["replica_nodes"]), list(p["isr_nodes"]))
        for p in expected
    ]
    missing = admin.describe_topic_partitions(["kp-no-such-topic"])
    assert [(t["name"], t["error_code"]) for t in missing["topics"]] == [("kp-no-such-topic", 3)]


def test_create_errors_come_per_topic(admin: KafkaAdminClient) -> None:
    admin.create_topics({"kp-twice": {"num_partitions": 1, "replication_factor": 1}})
    again = admin.create_topics(
        {"kp-twice": {"num_partitions": 1, "replication_factor": 1}}, raise_errors=False
    )
    assert [t["error_code"] for t in again["topics"]] == [36]  # TOPIC_ALREADY_EXISTS
    too_many = admin.create_topics(
        {"kp-rf7": {"num_partitions": 1, "replication_factor": 7}}, raise_errors=False
    )
    assert [t["error_code"] for t in too_many["topics"]] == [38]  # INVALID_REPLICATION_FACTOR


def test_delete_topics(admin: KafkaAdminClient) -> None:
    admin.create_topics({"kp-gone": {"num_partitions": 2, "replication_factor": 2}})
    eventually(lambda: "kp-gone" in admin.list_topics())
    response = admin.delete_topics(["kp-gone"])
    assert [t["error_code"] for t in response["topics"]] == [0]
    eventually(lambda: "kp-gone" not in admin.list_topics())
