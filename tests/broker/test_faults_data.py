"""No acknowledged record is lost: RF 3, ``min.insync.replicas=2``, acks=all, an idempotent
producer (librdkafka) writing all along while the partitions' leader is killed with SIGKILL and
restarted, round after round. A checker that shares nothing with the brokers (its own
bookkeeping of the producer's delivery reports, and a librdkafka consumer) then reads every
partition back: every acknowledged record is there exactly once, at the offset it was
acknowledged at, in the order it was sent; nothing is there twice."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from rackwise.protocol import ApiKey
from tests.broker.test_broker_processes import Cluster, call, eventually, topic_metadata

ROUNDS = 20
PARTITIONS = 2
TOPIC = "durable"


@dataclass
class Ledger:
    """What the producer was told: (partition, offset) -> value, for acknowledged records."""

    acked: dict[tuple[int, int], bytes] = field(default_factory=dict)
    failed: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


class SteadyProducer(threading.Thread):
    """Produces numbered values to every partition until stopped."""

    def __init__(self, bootstrap: str, ledger: Ledger) -> None:
        super().__init__(daemon=True)
        self.ledger = ledger
        self.stop_event = threading.Event()
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "message.timeout.ms": 120_000,
                "linger.ms": 2,
                "retry.backoff.ms": 50,
                "topic.metadata.refresh.interval.ms": 1000,
            }
        )
        self.sent = 0

    def _report(self, err: object, msg: object) -> None:
        with self.ledger.lock:
            if err is not None:
                self.ledger.failed += 1
                return
            key = (msg.partition(), msg.offset())  # type: ignore[attr-defined]
            assert key not in self.ledger.acked, f"offset {key} acknowledged twice"
            self.ledger.acked[key] = msg.value()  # type: ignore[attr-defined]

    def run(self) -> None:
        while not self.stop_event.is_set():
            partition = self.sent % PARTITIONS
            value = f"{partition}:{self.sent:09d}".encode()
            try:
                self.producer.produce(
                    TOPIC, value=value, partition=partition, on_delivery=self._report
                )
                self.sent += 1
            except BufferError:
                pass
            self.producer.poll(0.002)
        self.producer.flush(150)


def read_back(bootstrap: str) -> dict[int, list[tuple[int, bytes]]]:
    """Every record of every partition, from the start to the high watermark."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "checker",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    try:
        ends = {}
        for p in range(PARTITIONS):
            _, high = consumer.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=30)
            ends[p] = high
        consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
        out: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(PARTITIONS)}
        done: set[int] = {p for p, end in ends.items() if end == 0}
        deadline = time.monotonic() + 120
        while len(done) < PARTITIONS and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error():
                if message.error().code() == -191:  # _PARTITION_EOF
                    if message.offset() >= ends[message.partition()]:
                        done.add(message.partition())
                    continue
                raise KafkaException(message.error())
            out[message.partition()].append((message.offset(), message.value()))
        assert len(done) == PARTITIONS, f"read back timed out: {done}"
        return out
    finally:
        consumer.close()


def leader_of(cluster: Cluster, partition: int) -> int:
    for broker in cluster.brokers.values():
        if broker.proc is None:
            continue
        try:
            topic = topic_metadata(broker.port, TOPIC)
        except Exception:
            continue
        for p in topic.partitions:
            if p.partition_index == partition and int(p.leader_id) >= 0:
                return int(p.leader_id)
    raise AssertionError("no leader")


def full_isr(cluster: Cluster) -> bool:
    for broker in cluster.brokers.values():
        if broker.proc is None:
            continue
        topic = topic_metadata(broker.port, TOPIC)
        return all(len(p.isr_nodes) == 3 for p in topic.partitions)
    return False


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    running = Cluster(tmp_path)
    try:
        running.start()
        yield running
    finally:
        running.close()


@pytest.mark.slow
def test_no_acknowledged_record_is_lost_across_leader_kills(cluster: Cluster) -> None:
    port = cluster.brokers[1].port
    response = call(
        port,
        ApiKey.CREATE_TOPICS,
        topics=[
            {
                "name": TOPIC,
                "num_partitions": PARTITIONS,
                "replication_factor": 3,
                "assignments": [],
                "configs": [{"name": "min.insync.replicas", "value": "2"}],
            }
        ],
        timeout=30000,
        validate_only=False,
    )
    assert int(response.topics[0].error_code) == 0
    eventually(lambda: full_isr(cluster), timeout_s=30)
    ledger = Ledger()
    producer = SteadyProducer(cluster.bootstrap, ledger)
    producer.start()
    try:
        for round_ in range(ROUNDS):
            time.sleep(0.5)
            victim = leader_of(cluster, round_ % PARTITIONS)
            cluster.brokers[victim].stop(signal.SIGKILL)
            time.sleep(1.0)
            cluster.brokers[victim].start()
            eventually(lambda: full_isr(cluster), timeout_s=60, every_s=0.2)
        time.sleep(1.0)
    finally:
        producer.stop_event.set()
        producer.join(180)
    assert ledger.acked, "nothing was acknowledged"
    records = read_back(cluster.bootstrap)
    seen_values: set[bytes] = set()
    for partition, entries in records.items():
        offsets = [o for o, _ in entries]
        assert offsets == sorted(offsets)
        values = [v for _, v in entries]
        assert values == sorted(values), f"partition {partition} out of order"
        for value in values:
            assert value not in seen_values, f"{value!r} stored twice"
            seen_values.add(value)
    stored = {(p, o): v for p, entries in records.items() for o, v in entries}
    missing = {k: v for k, v in ledger.acked.items() if stored.get(k) != v}
    assert not missing, (
        f"{len(missing)} acknowledged records lost or moved, e.g. {list(missing.items())[:5]}"
    )
    assert len(ledger.acked) > 20 * ROUNDS


def segment_files(cluster: Cluster, broker_id: int, partition: int) -> dict[str, bytes]:
    """The ``.log`` files of a broker's replica of ``durable-<partition>``, by name."""
    broker = cluster.brokers[broker_id]
    out = {}
    for data_dir in broker.config_path.parent.glob("data-*"):
        replica = data_dir / f"{TOPIC}-{partition}"
        if replica.is_dir():
            out.update({f.name: f.read_bytes() for f in sorted(replica.glob("*.log"))})
    return out


def produce(bootstrap: str, count: int) -> None:
    producer = Producer(
        {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "batch.num.messages": 50}
    )
    for i in range(count):
        producer.produce(TOPIC, value=f"r{i:06d}".encode() * 10, partition=0)
    assert producer.flush(60) == 0


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["torn", "bit-flip"])
def test_a_damaged_tail_is_truncated_at_restart_and_fetched_again(
    cluster: Cluster, damage: str
) -> None:
    port = cluster.brokers[1].port
    response = call(
        port,
        ApiKey.CREATE_TOPICS,
        topics=[
            {
                "name": TOPIC,
                "num_partitions": 1,
                "replication_factor": 3,
                "assignments": [],
                "configs": [],
            }
        ],
        timeout=30000,
        validate_only=False,
    )
    assert int(response.topics[0].error_code) == 0
    eventually(lambda: full_isr(cluster), timeout_s=30)
    produce(cluster.bootstrap, 500)
    leader = leader_of(cluster, 0)
    victim = next(b for b in cluster.brokers if b != leader)
    eventually(lambda: segment_files(cluster, victim, 0) == segment_files(cluster, leader, 0))
    cluster.brokers[victim].stop(signal.SIGKILL)
    (name, data), *_ = sorted(segment_files(cluster, victim, 0).items(), reverse=True)
    path = next(cluster.brokers[victim].config_path.parent.glob(f"data-*/{TOPIC}-0/{name}"))
    if damage == "torn":
        path.write_bytes(data[: len(data) - 37])  # cut inside the last batch
    else:
        flipped = bytearray(data)
        flipped[len(data) - 20] ^= 0x40  # a bit inside the last batch's records
        path.write_bytes(bytes(flipped))
    produce(cluster.bootstrap, 200)  # the leader goes on while the victim is down
    cluster.brokers[victim].start()
    eventually(lambda: full_isr(cluster), timeout_s=60)
    eventually(
        lambda: segment_files(cluster, victim, 0) == segment_files(cluster, leader, 0),
        timeout_s=30,
    )
    log = cluster.brokers[victim].stderr()
    assert f"{TOPIC}-0" in log and "truncat" in log.lower()
