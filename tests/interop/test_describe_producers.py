"""``describe_producers`` from kafka-python's admin client (Kafka's DescribeProducers, as
``kafka-transactions.sh describe-producers`` sends it): after a librdkafka idempotent producer
wrote to a partition at RF 3, its leader and each follower report the producer id librdkafka
was given, epoch 0, the sequence of its last record and no transaction."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient, TopicPartition
from kafka.errors import NotLeaderForPartitionError, UnknownTopicOrPartitionError

from tests.interop.conftest import Cluster, eventually

TOPIC = "described-producers"
RECORDS = 250


def test_every_replica_reports_the_idempotent_producer(cluster: Cluster) -> None:
    creator = AdminClient({"bootstrap.servers": cluster.bootstrap})
    creator.create_topics([NewTopic(TOPIC, 1, 3)])[TOPIC].result(30)
    started_ms = int(time.time() * 1000)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "enable.idempotence": True,
                         "linger.ms": 5, "batch.num.messages": 100})  # fmt: skip
    for i in range(RECORDS):
        producer.produce(TOPIC, value=b"%d" % i, partition=0)
    assert producer.flush(30) == 0
    ended_ms = int(time.time() * 1000)
    del producer
    replicas = creator.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions[0].replicas
    outside = next(int(b["id"]) for b in cluster.brokers if int(b["id"]) not in replicas)
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30_000)
    try:
        tp = TopicPartition(TOPIC, 0)
        (state,) = admin.describe_producers([tp])[tp].active_producers
        assert (state.producer_epoch, state.last_sequence) == (0, RECORDS - 1)
        assert started_ms <= state.last_timestamp <= ended_ms
        assert (state.coordinator_epoch, state.current_transaction_start_offset) == (-1, -1)
        for replica in replicas:  # the followers too, once they have the last batch
            assert eventually(
                lambda r=replica: (
                    admin.describe_producers([tp], broker_id=r)[tp].active_producers == [state]
                )
            )
        with pytest.raises(NotLeaderForPartitionError):
            admin.describe_producers([tp], broker_id=outside)
        with pytest.raises(UnknownTopicOrPartitionError, match="does not host"):
            admin.describe_producers([TopicPartition("no-such-topic", 0)], broker_id=replicas[0])
    finally:
        admin.close()
