"""Real Kafka clients produce to and consume from a rackwise cluster: every acks level, every
compression codec, idempotent producers, seeks and ListOffsets, DeleteRecords; records read
back byte for byte with their keys, headers and timestamps."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.structs import TopicPartition as AioTopicPartition
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KpTopicPartition
from kafka.admin import NewTopic as KpNewTopic
from kafka.errors import TransactionalIdAuthorizationFailedError

from tests.interop.conftest import Cluster, eventually

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


def create_topic(cluster: Cluster, name: str, partitions: int = 1, rf: int = 3) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=partitions, replication_factor=rf)], operation_timeout=20
    )
    futures[name].result(timeout=30)

    def ready() -> bool:
        topic = admin.list_topics(topic=name, timeout=10).topics.get(name)
        return (
            topic is not None
            and topic.error is None
            and len(topic.partitions) == partitions
            and all(p.leader >= 0 for p in topic.partitions.values())
        )

    eventually(ready, timeout_s=30)


def consume_all(cluster: Cluster, topic: str, count: int, **extra: object) -> list[object]:
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": f"unused-{uuid.uuid4()}",
            "enable.auto.commit": False,
            **extra,
        }
    )
    try:
        metadata = consumer.list_topics(topic, timeout=10).topics[topic]
        consumer.assign([TopicPartition(topic, p, 0) for p in sorted(metadata.partitions)])
        out: list[object] = []
        deadline = time.monotonic() + 60
        while len(out) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error():
                raise KafkaException(message.error())
            out.append(message)
        return out
    finally:
        consumer.close()


@pytest.mark.parametrize("acks", ["0", "1", "all"])
def test_confluent_kafka_round_trip_every_acks(cluster: Cluster, acks: str) -> None:
    topic = f"dp-acks-{acks}"
    create_topic(cluster, topic, partitions=2)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": acks, "linger.ms": 5})
    delivered: list[tuple[int, int]] = []

    def report(err: object, msg: object) -> None:
        assert err is None, err
        delivered.append((msg.partition(), msg.offset()))  # type: ignore[attr-defined]

    sent = {}
    for i in range(200):
        key = f"k{i}".encode()
        value = f"value-{i}".encode() * (i % 7 + 1)
        sent[key] = value
        producer.produce(
            topic,
            value=value,
            key=key,
            partition=i % 2,
            headers=[("h", str(i).encode())],
            timestamp=1_700_000_000_000 + i,
            on_delivery=report,
        )
    assert producer.flush(30) == 0
    assert len(delivered) == 200
    got = consume_all(cluster, topic, 200)
    assert len(got) == 200
    for message in got:
        key = message.key()  # type: ignore[attr-defined]
        assert message.value() == sent[key]  # type: ignore[attr-defined]
        i = int(key[1:])
        assert message.headers() == [("h", str(i).encode())]  # type: ignore[attr-defined]
        assert message.timestamp() == (1, 1_700_000_000_000 + i)  # type: ignore[attr-defined]
    if acks != "0":  # acks=0 gets no offsets back
        per_partition: dict[int, list[int]] = {}
        for partition, offset in delivered:
            per_partition.setdefault(partition, []).append(offset)
        for offsets in per_partition.values():
            assert sorted(offsets) == list(range(len(offsets)))


@pytest.mark.parametrize("codec", CODECS)
def test_every_codec_from_each_client(cluster: Cluster, codec: str) -> None:
    topic = f"dp-codec-{codec}"
    create_topic(cluster, topic)
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "compression.type": codec,
            "enable.idempotence": True,
        }
    )
    for i in range(50):
        producer.produce(topic, value=f"ck-{i}".encode() * 20, key=str(i).encode())
    assert producer.flush(30) == 0
    kp_codec = None if codec == "none" else codec
    kp = KafkaProducer(bootstrap_servers=cluster.bootstrap, compression_type=kp_codec, acks="all")
    for i in range(50):
        kp.send(topic, value=f"kp-{i}".encode() * 20, key=str(i).encode()).get(timeout=30)
    kp.close()

    async def aio() -> None:
        producer = AIOKafkaProducer(
            bootstrap_servers=cluster.bootstrap,
            compression_type=kp_codec,
            enable_idempotence=True,
        )
        await producer.start()
        try:
            for i in range(50):
                await producer.send_and_wait(topic, f"aio-{i}".encode() * 20, key=str(i).encode())
        finally:
            await producer.stop()

    asyncio.run(aio())
    values = [m.value() for m in consume_all(cluster, topic, 150)]  # type: ignore[attr-defined]
    assert values == (
        [f"ck-{i}".encode() * 20 for i in range(50)]
        + [f"kp-{i}".encode() * 20 for i in range(50)]
        + [f"aio-{i}".encode() * 20 for i in range(50)]
    )


def test_kafka_python_seek_and_list_offsets(cluster: Cluster) -> None:
    topic = "dp-seek"
    create_topic(cluster, topic)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all")
    for i in range(30):
        producer.send(topic, value=str(i).encode(), timestamp_ms=1_000_000 + i * 1000)
    producer.flush()
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap, enable_auto_commit=False)
    try:
        tp = KpTopicPartition(topic, 0)
        consumer.assign([tp])
        assert consumer.beginning_offsets([tp]) == {tp: 0}
        assert consumer.end_offsets([tp]) == {tp: 30}
        found = consumer.offsets_for_times({tp: 1_000_000 + 10_500})
        assert found[tp] is not None and found[tp].offset == 11
        assert found[tp].timestamp == 1_000_000 + 11_000
        consumer.seek(tp, 20)
        records: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(records) < 10 and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=500).values():
                records.extend(r.value for r in batch)
        assert records == [str(i).encode() for i in range(20, 30)]
    finally:
        consumer.close()


def test_aiokafka_consumes_and_delete_records_moves_the_start(cluster: Cluster) -> None:
    topic = "dp-delete"
    create_topic(cluster, topic)

    async def scenario() -> tuple[list[bytes], int]:
        producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all")
        await producer.start()
        try:
            for i in range(20):
                await producer.send_and_wait(topic, str(i).encode())
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(bootstrap_servers=cluster.bootstrap, enable_auto_commit=False)
        await consumer.start()
        try:
            tp = AioTopicPartition(topic, 0)
            consumer.assign([tp])
            consumer.seek(tp, 5)
            values: list[bytes] = []
            while len(values) < 15:
                batch = await asyncio.wait_for(consumer.getmany(timeout_ms=500), 30)
                for messages in batch.values():
                    values.extend(m.value for m in messages)
            return values, 0
        finally:
            await consumer.stop()

    values, _ = asyncio.run(scenario())
    assert values == [str(i).encode() for i in range(5, 20)]
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        tp = KpTopicPartition(topic, 0)
        result = admin.delete_records({tp: 12})
        assert result[tp]["low_watermark"] == 12
    finally:
        admin.close()
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap)
    try:
        assert consumer.beginning_offsets([tp]) == {tp: 12}
    finally:
        consumer.close()


def test_auto_creation_on_produce(cluster: Cluster) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap})
    producer.produce("dp-auto-created", value=b"hello")
    assert producer.flush(30) == 0
    kp = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        eventually(lambda: "dp-auto-created" in kp.list_topics())
    finally:
        kp.close()
    assert [m.value() for m in consume_all(cluster, "dp-auto-created", 1)] == [b"hello"]  # type: ignore[attr-defined]


def test_transactional_producer_is_refused_clearly(cluster: Cluster) -> None:
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "transactional.id": "tx-1",
            "socket.timeout.ms": 5000,
        }
    )
    started = time.monotonic()
    with pytest.raises(KafkaException) as refused:
        producer.init_transactions(10)
    error = refused.value.args[0]
    assert (error.code(), error.fatal()) == (KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, True)
    assert "Failed to find transaction coordinator" in error.str()
    assert time.monotonic() - started < 5  # final at once, not retried until the timeout
    transactional = KafkaProducer(bootstrap_servers=cluster.bootstrap, transactional_id="tx-2")
    try:
        with pytest.raises(TransactionalIdAuthorizationFailedError):
            transactional.init_transactions()
    finally:
        transactional.close(timeout=5)


def test_kafka_python_admin_can_create_and_produce_rf3(cluster: Cluster) -> None:
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        admin.create_topics([KpNewTopic("dp-kp-admin", 3, 3)])
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all", retries=5)
    futures = [producer.send("dp-kp-admin", str(i).encode(), partition=i % 3) for i in range(30)]
    offsets = sorted((f.get(timeout=30).partition, f.get(timeout=30).offset) for f in futures)
    producer.close()
    assert offsets == sorted((p, o) for p in range(3) for o in range(10))


def test_a_compacted_topic_keeps_the_latest_record_of_each_key(cluster: Cluster) -> None:
    topic = "dp-compacted"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    configs = {
        "cleanup.policy": "compact",
        "segment.bytes": "4096",
        "min.cleanable.dirty.ratio": "0.01",
        "delete.retention.ms": "0",
    }
    new = NewTopic(topic, num_partitions=1, replication_factor=3, config=configs)
    admin.create_topics([new], operation_timeout=20)[topic].result(30)
    eventually(lambda: admin.list_topics(topic=topic, timeout=10).topics[topic].error is None)
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "linger.ms": 0,
            "acks": "all",
            "batch.num.messages": 5,  # batches well under segment.bytes, many segments
        }
    )
    failures: list[object] = []
    latest: dict[bytes, bytes | None] = {}
    for i in range(300):
        key = f"key-{i % 10}".encode()
        value = None if i % 10 == 3 and i > 200 else f"value-{i}".encode() * 4
        producer.produce(topic, key=key, value=value, on_delivery=lambda e, _m: failures.append(e))
        producer.poll(0)
        latest[key] = value
    assert producer.flush(30) == 0
    assert len(failures) == 300 and not any(failures), failures[:3]

    # The cleaner runs every 500 ms on this cluster; a consumer then sees far fewer records.
    deadline = time.monotonic() + 40
    while True:
        seen, count = read_partition(cluster, topic)
        if count < 100 or time.monotonic() > deadline:
            break
        time.sleep(1.0)
    assert count < 100, f"still {count} records after compaction"
    # Every key's latest value survives; a tombstone may be gone already, and its key with it.
    for key, value in latest.items():
        assert seen.get(key) == value, (key, count, sorted(seen))


@pytest.mark.parametrize("codec", ["none", "lz4"])
def test_a_compacted_topic_fails_only_the_records_without_a_key(
    cluster: Cluster, codec: str
) -> None:
    # librdkafka's own 0011 test_message_single_partition_record_fail: 100 records in one batch
    # to a compacted topic, every tenth without a key. The broker refuses the batch naming the
    # ten (KIP-467's record errors), so the client fails those with INVALID_RECORD and the 90
    # others with _INVALID_DIFFERENT_RECORD, as against Kafka.
    topic = f"dp-keys-{codec}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    new = NewTopic(
        topic, num_partitions=1, replication_factor=3, config={"cleanup.policy": "compact"}
    )
    admin.create_topics([new], operation_timeout=20)[topic].result(30)
    eventually(lambda: admin.list_topics(topic=topic, timeout=10).topics[topic].error is None)
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap, "linger.ms": 500, "compression.codec": codec}
    )
    errors: list[int] = []
    for i in range(100):
        key = None if i % 10 == 0 else f"key-{i}".encode()
        producer.produce(
            topic, key=key, value=b"v", partition=0,
            on_delivery=lambda e, _m: errors.append(e.code() if e else 0),
        )  # fmt: skip
    assert producer.flush(30) == 0
    assert sorted(errors).count(KafkaError.INVALID_RECORD) == 10, errors
    assert errors.count(KafkaError._INVALID_DIFFERENT_RECORD) == 90, errors


def read_partition(cluster: Cluster, topic: str) -> tuple[dict[bytes, bytes | None], int]:
    """Partition 0 read to its end: the last value of each key, and the number of records."""
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": f"read-{uuid.uuid4()}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        seen: dict[bytes, bytes | None] = {}
        count = 0
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error():
                if message.error().code() == -191:  # _PARTITION_EOF: the end
                    return seen, count
                raise KafkaException(message.error())
            seen[message.key()] = message.value()
            count += 1
        raise AssertionError(f"{topic} not read to its end in 30 s")
    finally:
        consumer.close()
