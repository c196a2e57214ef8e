"""What kafka-python's own ``test/integration/test_sasl_integration.py`` checks, against a
rackwise controller and broker started for real over SASL_PLAINTEXT: for each of PLAIN,
SCRAM-SHA-256 and SCRAM-SHA-512, the admin client creates a topic; a producer sends 100 records
over two partitions and a consumer reads 50 from each; the low-level client bootstraps and
answers a Metadata v1 request naming the topic. (kafka-python's suite itself starts Kafka from
its jars and skips those cases against an external broker, so they are written again here,
named as there.)"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic
from kafka.net.compat import KafkaNetClient
from kafka.protocol.metadata import MetadataRequest

from tests.interop.sasl_cluster import SaslCluster, start_sasl_cluster
from tests.processes import free_ports

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
USER, PASSWORD = "admin", "admin-secret"
"""A PLAIN user of the listener's JAAS config, given SCRAM credentials of both kinds too."""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SaslCluster]:
    ports = free_ports(2)
    started = start_sasl_cluster(tmp_path_factory.mktemp("sasl-it"), (ports[0], ports[1]))
    try:
        admin = AdminClient({"bootstrap.servers": started.plain_bootstrap})
        for mechanism in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512):
            info = ScramCredentialInfo(mechanism, 4096)  # one per request, as Kafka requires
            upsertion = UserScramCredentialUpsertion(USER, info, PASSWORD.encode())
            for future in admin.alter_user_scram_credentials([upsertion]).values():
                future.result(timeout=30)
        yield started
    finally:
        started.stop()


def params(cluster: SaslCluster, mechanism: str, **overrides: Any) -> dict[str, Any]:
    return {
        "bootstrap_servers": cluster.sasl_bootstrap,
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": mechanism,
        "sasl_plain_username": USER,
        "sasl_plain_password": PASSWORD,
        **overrides,
    }


def create_topic(cluster: SaslCluster, mechanism: str, name: str, partitions: int) -> None:
    admin = KafkaAdminClient(**params(cluster, mechanism))
    try:
        admin.create_topics([NewTopic(name, partitions, 1)])
    finally:
        admin.close()


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_admin(cluster: SaslCluster, mechanism: str) -> None:
    name = f"admin-{mechanism.lower()}"
    create_topic(cluster, mechanism, name, 1)
    admin = KafkaAdminClient(**params(cluster, mechanism))
    try:
        assert name in admin.list_topics()
    finally:
        admin.close()


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_produce_and_consume(cluster: SaslCluster, mechanism: str) -> None:
    name = f"produce-{mechanism.lower()}"
    create_topic(cluster, mechanism, name, 2)
    producer = KafkaProducer(**params(cluster, mechanism))
    try:
        values = [f"{i}-{uuid.uuid4()}".encode() for i in range(100)]
        futures = [producer.send(name, v, partition=i % 2) for i, v in enumerate(values)]
        producer.flush()
    finally:
        producer.close()
    assert all(future.succeeded() for future in futures)
    consumer = KafkaConsumer(
        name, **params(cluster, mechanism, auto_offset_reset="earliest", consumer_timeout_ms=20000)
    )
    by_partition: dict[int, list[bytes]] = {0: [], 1: []}
    try:
        for count, message in enumerate(consumer, 1):
            by_partition[message.partition].append(message.value)
            if count >= 100:
                break
    finally:
        consumer.close()
    assert [len(by_partition[0]), len(by_partition[1])] == [50, 50]
    assert sorted(by_partition[0] + by_partition[1]) == sorted(values)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_client(cluster: SaslCluster, mechanism: str) -> None:
    name = f"client-{mechanism.lower()}"
    create_topic(cluster, mechanism, name, 1)
    client = KafkaNetClient(**params(cluster, mechanism))
    try:
        assert client.check_version(timeout_ms=10000) is not None
        future = client.send(client.least_loaded_node(), MetadataRequest(topics=None, version=1))
        client.poll(future=future, timeout_ms=10000)
        assert future.is_done and future.succeeded(), future.exception
        assert name in [topic[1] for topic in future.value.topics]
    finally:
        client.close()
