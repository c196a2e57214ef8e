"""Follower fetching with the multi-level replica selector (KIP-392, KIP-879): on a cluster of
three data centres of two racks, librdkafka consumers that set ``client.rack`` read every record
from the replica in their own data centre. The brokers count the record bytes they send to
consumers per topic and log them; the test reads those counts."""

from __future__ import annotations

import re
import time
import uuid

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.interop.conftest import Cluster, eventually

TOPIC = "dp-nearest"
RECORDS = 2000
BYTES_OUT = re.compile(r"bytes out to consumers \(totals of the topics that changed\): (.*?); ")


def served(cluster: Cluster) -> dict[int, int]:
    """Each broker's latest logged count of record bytes sent to consumers of ``TOPIC``."""
    out = {}
    for broker in cluster.brokers:
        broker_id = int(str(broker["id"]))
        log = (cluster.dir / f"broker-{broker_id}" / "server.log").read_text("utf-8")
        count = 0
        for match in BYTES_OUT.finditer(log):
            for item in match.group(1).split():
                name, _, value = item.rpartition("=")
                if name == TOPIC:
                    count = int(value)
        out[broker_id] = count
    return out


def consume_everything(cluster: Cluster, rack: str) -> int:
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": f"nearest-{uuid.uuid4()}",
            "client.rack": rack,
            "enable.auto.commit": False,
            "topic.metadata.refresh.interval.ms": 1000,
        }
    )
    try:
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        got = 0
        deadline = time.monotonic() + 60
        while got < RECORDS and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error():
                raise KafkaException(message.error())
            got += 1
        return got
    finally:
        consumer.close()


def test_each_consumer_reads_from_the_replica_in_its_data_centre(cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 3)], operation_timeout=20)[TOPIC].result(30)

    def placed() -> list[int] | None:
        topic = admin.list_topics(topic=TOPIC, timeout=10).topics.get(TOPIC)
        if topic is None or topic.error is not None or not topic.partitions:
            return None
        partition = topic.partitions[0]
        return list(partition.replicas) if len(partition.isrs) == 3 else None

    replicas = eventually(placed, timeout_s=30)
    racks = cluster.racks
    by_dc = {racks[b].split("/")[1]: b for b in replicas}
    assert sorted(by_dc) == ["dc1", "dc2", "dc3"]  # multi-level placement: one per DC
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(RECORDS):
        producer.produce(TOPIC, value=f"{i:08d}".encode() * 16)
    assert producer.flush(30) == 0
    before = served(cluster)
    for dc in ("dc1", "dc2", "dc3"):
        # Another rack than the replica's, in the same data centre: nearest by path prefix.
        replica_rack = racks[by_dc[dc]]
        other_rack = next(
            r for r in racks.values() if r.startswith(f"/{dc}/") and r != replica_rack
        )
        assert consume_everything(cluster, other_rack) == RECORDS
    payload = RECORDS * 128

    def counted() -> dict[int, int] | None:
        delta = {b: n - before.get(b, 0) for b, n in served(cluster).items()}
        return delta if all(delta[by_dc[dc]] >= payload for dc in by_dc) else None

    delta = eventually(counted, timeout_s=20)
    for dc, broker in by_dc.items():
        # Each replica served its own data centre's consumer the whole log, once (a batch
        # fetched twice at most around the redirect), and nobody else.
        assert payload <= delta[broker] < 2.2 * payload, (dc, delta)
    for broker, count in delta.items():
        if broker not in replicas:
            assert count == 0, delta
