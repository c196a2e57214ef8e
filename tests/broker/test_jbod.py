"""JBOD with real processes: ``rackwise cluster up --log-dirs 2``, replicas moved between a
broker's directories while an idempotent producer and a consumer run (KIP-113's first system
test, its intra-broker part), a broker killed in the middle of a move, and directories that
fail under load (KIP-113's second system test: a follower's, the leader's, then every
broker's second directory replaced by a file), and the first system test in full: replicas
moved on to the next broker by a partition reassignment (KIP-455), and a reassignment
cancelled. Kafka's own admin client (kafka-python) sends
AlterReplicaLogDirs and DescribeLogDirs; a librdkafka producer and consumer check the data."""

from __future__ import annotations

import json
import os
import shutil
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient, TopicPartitionReplica
from kafka import TopicPartition as KafkaTopicPartition

from rackwise.protocol import ApiKey
from tests.broker.test_broker_processes import call
from tests.interop.conftest import eventually, rackwise

pytestmark = pytest.mark.slow  # three broker processes with two log directories each


@dataclass
class Jbod:
    dir: Path
    nodes: list[dict[str, Any]]

    @property
    def brokers(self) -> list[dict[str, Any]]:
        return [n for n in self.nodes if n["role"] == "broker"]

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{b['host']}:{b['port']}" for b in self.brokers)

    def log_dirs(self, broker: int) -> list[str]:
        return [str(self.dir / f"broker-{broker}" / f"data-{i}") for i in (1, 2)]

    def pid(self, broker: int) -> int:
        return int(next(b["pid"] for b in self.brokers if b["id"] == broker))


def _up(directory: Path, *extra: str) -> Jbod:
    up = rackwise(
        "cluster",
        "up",
        "--dir",
        str(directory),
        "--brokers",
        "3",
        "--log-dirs",
        "2",
        "--json",
        "--override",
        "replica.high.watermark.checkpoint.interval.ms=300",
        "--override",
        "log.segment.delete.delay.ms=1000",
        *extra,
    )
    assert up.returncode == 0, up.stderr
    return Jbod(directory, json.loads(up.stdout)["nodes"])


@pytest.fixture
def jbod(tmp_path: Path) -> Iterator[Jbod]:
    cluster = _up(tmp_path / "jbod")
    try:
        yield cluster
    finally:
        rackwise("cluster", "down", "--dir", str(cluster.dir))


@dataclass
class Ledger:
    acked: dict[tuple[str, int, int], bytes] = field(default_factory=dict)
    unplaced: list[tuple[str, int, bytes]] = field(default_factory=list)
    """Records librdkafka delivered without an offset: an idempotent producer whose request's
    answer was lost (a timeout, a closed connection) acknowledges its records once a later
    batch of the partition succeeds, since the broker took that batch's sequence only after
    theirs (``rd_kafka_dr_implicit_ack``)."""
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def placed(self, got: dict[tuple[str, int, int], bytes]) -> dict[tuple[str, int, int], bytes]:
        """:attr:`acked`, with each of :attr:`unplaced` at the offset where ``got`` (a read-back)
        holds its value, in its partition; one ``got`` lacks keeps an offset no log has, so
        that comparing the two shows it."""
        where = {(t, p, value): (t, p, o) for (t, p, o), value in got.items()}
        placed = dict(self.acked)
        for n, (topic, partition, value) in enumerate(self.unplaced):
            key = where.get((topic, partition, value))
            if key is None or key in placed:
                key = (topic, partition, -1 - n)
            placed[key] = value
        return placed


class Writer(threading.Thread):
    """An idempotent producer, acks=all, writing numbered values until stopped."""

    def __init__(
        self,
        bootstrap: str,
        topics: list[tuple[str, int]],
        ledger: Ledger,
        timeout_ms: int = 60_000,
        **settings: object,
    ) -> None:
        super().__init__(daemon=True)
        self.topics, self.ledger = topics, ledger
        self.stop_event = threading.Event()
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
                "message.timeout.ms": timeout_ms,
                **settings,
            }
        )

    def _report(self, err: Any, msg: Any) -> None:
        with self.ledger.lock:
            if err is not None:
                self.ledger.errors.append(str(err))
                return
            if msg.offset() is None:
                self.ledger.unplaced.append((msg.topic(), msg.partition(), msg.value()))
                return
            key = (msg.topic(), msg.partition(), msg.offset())
            assert key not in self.ledger.acked, f"{key} acknowledged twice"
            self.ledger.acked[key] = msg.value()

    def run(self) -> None:
        sent = 0
        while not self.stop_event.is_set():
            topic, partitions = self.topics[sent % len(self.topics)]
            try:
                self.producer.produce(
                    topic,
                    value=f"{sent:09d}".encode() + b"." * 300,
                    partition=sent % partitions,
                    on_delivery=self._report,
                )
                sent += 1
            except BufferError:
                pass
            self.producer.poll(0.001)
        self.producer.flush(60)


def read_back(bootstrap: str, topic: str, partitions: int) -> dict[tuple[str, int, int], bytes]:
    """Everything in the topic, by (topic, partition, offset), read by librdkafka. An offset
    out of range is an error here, not a silent jump to the end (``auto.offset.reset``), and a
    read that stops short of the high watermarks fails with what the consumer reported."""
    ends = _end_offsets(bootstrap, topic, partitions)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"check-{topic}",
            "enable.auto.commit": False,
            "auto.offset.reset": "error",
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got: dict[tuple[str, int, int], bytes] = {}
    errors: list[str] = []
    deadline = time.monotonic() + 60
    while sum(1 for k in got if k[0] == topic) < sum(ends) and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is None:
            continue
        if message.error():
            errors.append(f"partition {message.partition()}: {message.error()}")
            continue
        key = (topic, message.partition(), message.offset())
        assert key not in got, f"{key} read twice"
        got[key] = message.value()
    consumer.close()
    read = [sum(1 for k in got if k[1] == p) for p in range(partitions)]
    assert sum(read) >= sum(ends), (
        f"read {read} records of {topic}'s partitions in 60 s, the high watermarks are {ends}; "
        f"the consumer reported {errors[:5]}"
    )
    return got


def _end_offsets(bootstrap: str, topic: str, partitions: int) -> list[int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "ends"})
    try:
        return [
            consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in range(partitions)
        ]
    finally:
        consumer.close()


def create(bootstrap: str, topic: str, partitions: int, rf: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, rf)])[topic].result(30)


def where(admin: KafkaAdminClient) -> dict[tuple[int, str, int], tuple[str, bool, int]]:
    """(broker, topic, partition) -> (log dir, is future, offset lag) from DescribeLogDirs."""
    found: dict[tuple[int, str, int], tuple[str, bool, int]] = {}
    for entry in admin.describe_log_dirs():
        broker = entry["broker"] if "broker" in entry else entry.get("node_id")
        for log_dir in entry["log_dirs"]:
            for topic in log_dir["topics"]:
                for p in topic["partitions"]:
                    found[(broker, topic["name"], p["partition_index"])] = (
                        log_dir["log_dir"],
                        p["is_future_key"],
                        p["offset_lag"],
                    )
    return found


def test_replicas_move_between_directories_while_writes_go_on(jbod: Jbod) -> None:
    create(jbod.bootstrap, "moving", 3, 1)
    create(jbod.bootstrap, "unretried", 3, 1)
    ledger, unretried = Ledger(), Ledger()
    writer = Writer(jbod.bootstrap, [("moving", 3)], ledger)
    # A second producer may not retry at all: any request the move failed would show.
    plain = Writer(
        jbod.bootstrap,
        [("unretried", 3)],
        unretried,
        **{"enable.idempotence": False, "retries": 0},
    )
    writer.start()
    plain.start()
    admin = KafkaAdminClient(bootstrap_servers=jbod.bootstrap)
    try:
        time.sleep(2)
        before = where(admin)
        replicas = {k: v for k, v in before.items() if k[1] in ("moving", "unretried") and not v[1]}
        assert len(replicas) == 6
        targets = {}
        for (broker, topic, partition), (log_dir, _, _) in replicas.items():
            other = next(d for d in jbod.log_dirs(broker) if d != log_dir)
            targets[TopicPartitionReplica(topic, partition, broker)] = other
        admin.alter_replica_log_dirs(targets)

        def moved() -> bool:
            now = where(admin)
            return all(
                now.get((r.broker_id, r.topic, r.partition), ("", True, 0))[:2] == (d, False)
                for r, d in targets.items()
            )

        eventually(moved, 60)
        time.sleep(2)  # writes go on after the swap
    finally:
        writer.stop_event.set()
        plain.stop_event.set()
        writer.join(90)
        plain.join(90)
        admin.close()
    assert ledger.errors == [] and unretried.errors == []
    assert len(ledger.acked) > 500 and len(unretried.acked) > 500
    got = read_back(jbod.bootstrap, "moving", 3)
    assert got == ledger.placed(got)
    got = read_back(jbod.bootstrap, "unretried", 3)
    assert got == unretried.placed(got)
    for broker in (1, 2, 3):
        names = [p.name for d in jbod.log_dirs(broker) for p in Path(d).iterdir()]
        assert not [n for n in names if n.endswith("-future")]
    # The controller knows where each replica is now: the metadata lists the new directory.
    dump = rackwise(
        "metadata",
        "dump",
        "--dir",
        str(jbod.dir / "controller-3000" / "metadata"),
        "--format",
        "json",
        "--section",
        "image",
    )
    assert dump.returncode == 0, dump.stderr
    image = json.loads(dump.stdout)
    ids = {
        str(p.parent.name) + "/" + p.name: line.split("=", 1)[1].strip()
        for broker in (1, 2, 3)
        for p in map(Path, jbod.log_dirs(broker))
        for line in (p / "meta.properties").read_text().splitlines()
        if line.startswith("directory.id=")
    }
    text = json.dumps(image)
    for replica, log_dir in targets.items():
        assert ids[f"broker-{replica.broker_id}/{Path(log_dir).name}"] in text


def test_a_broker_killed_in_a_move_completes_it_after_restart(tmp_path: Path) -> None:
    cluster = _up(
        tmp_path / "jbod",
        "--override",
        "replica.alter.log.dirs.io.max.bytes.per.second=200000",
    )
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        create(cluster.bootstrap, "crash", 1, 3)
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
        for i in range(4000):
            producer.produce("crash", value=f"{i:06d}".encode() + b"x" * 500, partition=0)
            if i % 500 == 0:
                producer.poll(0)
        assert producer.flush(60) == 0
        before = where(admin)
        victim = 2
        current = before[(victim, "crash", 0)][0]
        target = next(d for d in cluster.log_dirs(victim) if d != current)
        admin.alter_replica_log_dirs({TopicPartitionReplica("crash", 0, victim): target})
        eventually(lambda: where(admin).get((victim, "crash", 0), ("", False, 0))[1], 20)
        os.kill(cluster.pid(victim), signal.SIGKILL)  # mid-copy: 2 MB at 200 kB/s
        again = rackwise("cluster", "up", "--dir", str(cluster.dir))
        assert again.returncode == 0, again.stderr

        def done() -> bool:
            now = where(admin)
            return now.get((victim, "crash", 0), ("", True, 0))[:2] == (target, False)

        eventually(done, 90)
        got = read_back(cluster.bootstrap, "crash", 1)
        assert [v[:6] for _, v in sorted(got.items())] == [f"{i:06d}".encode() for i in range(4000)]
    finally:
        admin.close()
        rackwise("cluster", "down", "--dir", str(cluster.dir))


def _fail(directory: str) -> None:
    """A disk gone: the directory replaced by a file (permission bits stop no root process).
    It is renamed away first, at once, so that a checkpoint or segment the broker creates
    meanwhile cannot land in it while it is being removed."""
    gone = f"{directory}.gone"
    os.rename(directory, gone)
    Path(directory).write_text("failed disk\n")
    shutil.rmtree(gone)


def _leader_and_isr(bootstrap: str, topic: str) -> tuple[int, list[int]]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    meta = admin.list_topics(topic, timeout=10).topics[topic].partitions[0]
    return meta.leader, sorted(meta.isrs)


def test_failed_directories_take_only_their_replicas_offline(jbod: Jbod) -> None:
    create(jbod.bootstrap, "topic1", 1, 3)
    create(jbod.bootstrap, "topic2", 1, 3)
    admin = KafkaAdminClient(bootstrap_servers=jbod.bootstrap)
    try:
        first = {b: jbod.log_dirs(b)[0] for b in (1, 2, 3)}
        second = {b: jbod.log_dirs(b)[1] for b in (1, 2, 3)}
        plan = {TopicPartitionReplica("topic1", 0, b): first[b] for b in (1, 2, 3)}
        plan |= {TopicPartitionReplica("topic2", 0, b): second[b] for b in (1, 2, 3)}
        admin.alter_replica_log_dirs(plan)
        eventually(
            lambda: all(
                where(admin).get((r.broker_id, r.topic, 0), ("", True, 0))[:2] == (d, False)
                for r, d in plan.items()
            ),
            60,
        )
        ledger, ledger2 = Ledger(), Ledger()
        writer = Writer(jbod.bootstrap, [("topic1", 1)], ledger)
        writer2 = Writer(jbod.bootstrap, [("topic2", 1)], ledger2, timeout_ms=5_000)
        writer.start()
        writer2.start()
        # Both producers running before the first disk fails, however slow they were to start.
        eventually(lambda: len(ledger.acked) > 10 and len(ledger2.acked) > 10, 60)
        leader1, _ = _leader_and_isr(jbod.bootstrap, "topic1")
        follower = next(b for b in (1, 2, 3) if b != leader1)
        steps = [[follower], [leader1], [1, 2, 3]]
        failed: set[int] = set()
        for brokers in steps:
            for b in brokers:
                if b not in failed:
                    _fail(second[b])
                    failed.add(b)
            # topic1 lives on the first directories: untouched, every replica in sync
            eventually(lambda: _leader_and_isr(jbod.bootstrap, "topic1")[1] == [1, 2, 3], 30)
            alive = sorted({1, 2, 3} - failed)

            def topic2_settled(alive: list[int] = alive) -> bool:
                leader, isr = _leader_and_isr(jbod.bootstrap, "topic2")
                return isr == alive and (leader in alive if alive else leader == -1)

            eventually(topic2_settled, 30)
            for entry in admin.describe_log_dirs():
                for log_dir in entry["log_dirs"]:
                    if log_dir["log_dir"] in {second[b] for b in failed}:
                        assert log_dir["error_code"] == 56
            time.sleep(1)
        writer.stop_event.set()
        writer2.stop_event.set()
        writer.join(90)
        writer2.join(90)
        for b in (1, 2, 3):  # every broker still serves its first directory
            os.kill(jbod.pid(b), 0)
        assert ledger.errors == []
        acked2 = {k: v for k, v in ledger2.acked.items() if k[0] == "topic2"}
        assert len(acked2) > 10  # topic2 was written while it had a replica left
        got = read_back(jbod.bootstrap, "topic1", 1)
        acked1 = {k: v for k, v in ledger.placed(got).items() if k[0] == "topic1"}
        assert got == acked1 and len(acked1) > 100
    finally:
        admin.close()


def _alter(port: int, path: str, topic: str, partitions: list[int]) -> dict[int, int]:
    response = call(
        port,
        ApiKey.ALTER_REPLICA_LOG_DIRS,
        dirs=[{"path": path, "topics": [{"name": topic, "partitions": partitions}]}],
    )
    return {
        int(p.partition_index): int(p.error_code) for t in response.results for p in t.partitions
    }


def test_alter_and_describe_answer_as_kafka_does(jbod: Jbod) -> None:
    broker = jbod.brokers[0]
    port, broker_id = int(broker["port"]), int(broker["id"])
    d1, d2 = jbod.log_dirs(broker_id)
    # Remembered before the topic exists (UNKNOWN_TOPIC_OR_PARTITION now), used at creation.
    assert _alter(port, d2, "later", [0]) == {0: 3}
    admin = AdminClient({"bootstrap.servers": jbod.bootstrap})
    admin.create_topics([NewTopic("later", 1, replica_assignment=[[broker_id]])])["later"].result(
        30
    )
    eventually((Path(d2) / "later-0").is_dir, 20)
    assert _alter(port, "/no/such/dir", "later", [0]) == {0: 57}  # LOG_DIR_NOT_FOUND
    other = next(int(b["id"]) for b in jbod.brokers if int(b["id"]) != broker_id)
    admin.create_topics([NewTopic("elsewhere", 1, replica_assignment=[[other]])])[
        "elsewhere"
    ].result(30)
    eventually(lambda: _alter(port, d1, "elsewhere", [0]) == {0: 9}, 20)  # REPLICA_NOT_AVAILABLE
    long_topic = "l" * 215
    create(jbod.bootstrap, long_topic, 1, 3)
    eventually(lambda: any((Path(d) / f"{long_topic}-0").is_dir() for d in (d1, d2)), 20)
    away = d2 if (Path(d1) / f"{long_topic}-0").is_dir() else d1
    assert _alter(port, away, long_topic, [0]) == {0: 17}  # the -future name: 257 characters
    # "any" cancels a move and forgets the destination
    assert _alter(port, "any", "later", [0]) == {0: 0}
    response = describe(port)
    assert [r.log_dir for r in response.results] == [d1, d2]
    for result in response.results:
        assert result.error_code == 0 and result.total_bytes > 0 and result.usable_bytes > 0
    _fail(d2)
    eventually(lambda: int(describe(port).results[1].error_code) == 56, 20)
    offline = describe(port).results[1]
    assert (offline.total_bytes, offline.usable_bytes, len(offline.topics)) == (-1, -1, 0)
    assert _alter(port, d2, "later", [0]) == {0: 56}  # KAFKA_STORAGE_ERROR: offline target
    assert _alter(port, d1, "elsewhere", [0]) == {0: 9}
    # the replica that lived on d2 is offline: its clients get KAFKA_STORAGE_ERROR
    assert _alter(port, d1, "later", [0]) == {0: 56}


def describe(port: int) -> Any:
    return call(port, ApiKey.DESCRIBE_LOG_DIRS, topics=None)


def _reassignments(admin: KafkaAdminClient) -> dict[Any, Any]:
    return dict(admin.list_partition_reassignments())


def test_every_replica_moves_to_another_directory_then_to_the_next_broker(jbod: Jbod) -> None:
    """KIP-113's first system test in full: 3 brokers x 2 directories, a topic of 3 partitions
    (RF 1), an idempotent producer running while every replica moves to its broker's other
    directory, then to the unused directory of the next broker (1 -> 2, 2 -> 3, 3 -> 1:
    AlterReplicaLogDirs names the directory first, then AlterPartitionReassignments moves it);
    every acknowledged record is read back exactly once."""
    create(jbod.bootstrap, "seed", 3, 1)
    ledger = Ledger()
    writer = Writer(jbod.bootstrap, [("seed", 3)], ledger)
    writer.start()
    admin = KafkaAdminClient(bootstrap_servers=jbod.bootstrap)
    try:
        time.sleep(2)
        before = {k: v for k, v in where(admin).items() if k[1] == "seed" and not v[1]}
        assert len(before) == 3
        inside = {
            TopicPartitionReplica("seed", p, b): next(d for d in jbod.log_dirs(b) if d != log_dir)
            for (b, _, p), (log_dir, _, _) in before.items()
        }
        admin.alter_replica_log_dirs(inside)
        eventually(
            lambda: all(
                where(admin).get((r.broker_id, "seed", r.partition), ("", True, 0))[:2]
                == (d, False)
                for r, d in inside.items()
            ),
            60,
        )
        now = {(r.broker_id, r.partition): d for r, d in inside.items()}
        moves: dict[int, tuple[int, str]] = {}  # partition -> (next broker, its unused dir)
        for (broker, partition), _ in now.items():
            target = broker % 3 + 1
            used = {d for (b, _), d in now.items() if b == target}
            moves[partition] = (target, next(d for d in jbod.log_dirs(target) if d not in used))
        named = admin.alter_replica_log_dirs(
            {TopicPartitionReplica("seed", p, b): d for p, (b, d) in moves.items()}
        )
        # The target broker has no replica yet: REPLICA_NOT_AVAILABLE, and it remembers the dir.
        assert {e.__name__ for e in named.values()} <= {"NoError", "ReplicaNotAvailableError"}
        accepted = admin.alter_partition_reassignments(
            {KafkaTopicPartition("seed", p): [b] for p, (b, _) in moves.items()}
        )
        assert accepted == {KafkaTopicPartition("seed", p): None for p in moves}

        def reassigned() -> bool:
            placed = where(admin)
            seed = {k: v for k, v in placed.items() if k[1] == "seed"}
            return _reassignments(admin) == {} and seed == {
                (b, "seed", p): (d, False, seed.get((b, "seed", p), ("", False, 0))[2])
                for p, (b, d) in moves.items()
            }

        eventually(reassigned, 90)
        time.sleep(2)  # writes go on after the moves
    finally:
        writer.stop_event.set()
        writer.join(90)
        admin.close()
    assert ledger.errors == []
    assert len(ledger.acked) > 500
    got = read_back(jbod.bootstrap, "seed", 3)
    assert got == ledger.placed(got)
    for partition, (broker, _) in moves.items():
        others = [b for b in (1, 2, 3) if b != broker]
        eventually(
            lambda others=others, partition=partition: (
                not any(
                    (Path(d) / f"seed-{partition}").exists()
                    for b in others
                    for d in jbod.log_dirs(b)
                )
            ),
            30,
        )


def test_a_cancelled_reassignment_goes_back_to_the_original_replica(jbod: Jbod) -> None:
    """Broker 3 is dead, so a move of ``back-0`` from broker 1 to broker 3 cannot complete;
    cancelling it (null replicas) returns the partition to broker 1, and a second cancel is
    NO_REASSIGNMENT_IN_PROGRESS."""
    first = next(b for b in jbod.brokers if int(b["id"]) == 1)
    source = AdminClient({"bootstrap.servers": jbod.bootstrap})
    source.create_topics([NewTopic("back", 1, replica_assignment=[[1]])])["back"].result(30)
    producer = Producer({"bootstrap.servers": jbod.bootstrap, "acks": "all"})
    for i in range(100):
        producer.produce("back", value=f"{i:04d}".encode(), partition=0)
    assert producer.flush(30) == 0
    # Broker 3 dies: once fenced it is out of the metadata clients see (so no admin request
    # goes to it), but it stays registered, so a move to it is accepted and cannot finish.
    os.kill(jbod.pid(3), signal.SIGKILL)

    def fenced() -> bool:
        try:
            return 3 not in source.list_topics(timeout=5).brokers
        except KafkaException:  # asked the dead broker: ask again
            return False

    eventually(fenced, 60)
    admin = KafkaAdminClient(bootstrap_servers=f"{first['host']}:{first['port']}")
    try:
        tp = KafkaTopicPartition("back", 0)
        assert admin.alter_partition_reassignments({tp: [3]}) == {tp: None}
        ongoing = _reassignments(admin)
        assert ongoing == {
            tp: {"replicas": [3, 1], "adding_replicas": [3], "removing_replicas": [1]}
        }
        assert admin.alter_partition_reassignments({tp: None}) == {tp: None}
        assert _reassignments(admin) == {}
        again = admin.alter_partition_reassignments({tp: None})
        assert again[tp] is not None and again[tp].__name__ == "NoReassignmentInProgressError"
    finally:
        admin.close()
    meta = source.list_topics("back", timeout=10).topics["back"].partitions[0]
    assert (meta.replicas, meta.leader) == ([1], 1)
    got = read_back(jbod.bootstrap, "back", 1)
    assert [v for _, v in sorted(got.items())] == [f"{i:04d}".encode() for i in range(100)]


@pytest.mark.parametrize(
    "point", ["move.caught-up", "move.recorded", "move.future-renamed", "move.current-renamed"]
)
def test_a_broker_dying_at_each_step_of_a_swap_loses_nothing(tmp_path: Path, point: str) -> None:
    """The broker exits at once (as kill -9 stops it) at each named step of a move's end; after
    a restart the move completes, there is one live copy of the partition, in the directory the
    controller names, and every acknowledged record is there once."""
    os.environ["RACKWISE_CRASH_AT"] = point
    try:
        cluster = _up(tmp_path / "jbod")
    finally:
        del os.environ["RACKWISE_CRASH_AT"]  # the restart below runs without it
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        client = AdminClient({"bootstrap.servers": cluster.bootstrap})
        client.create_topics([NewTopic("swap", 1, replica_assignment=[[1]])])["swap"].result(30)
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
        for i in range(2000):
            producer.produce("swap", value=f"{i:06d}".encode() + b"." * 200, partition=0)
        assert producer.flush(60) == 0
        current = where(admin)[(1, "swap", 0)][0]
        target = next(d for d in cluster.log_dirs(1) if d != current)
        admin.alter_replica_log_dirs({TopicPartitionReplica("swap", 0, 1): target})
        eventually(lambda: not _alive(cluster.pid(1)), 30)  # it died at the step
        again = rackwise("cluster", "up", "--dir", str(cluster.dir))
        assert again.returncode == 0, again.stderr
        eventually(
            lambda: where(admin).get((1, "swap", 0), ("", True, 0))[:2] == (target, False), 60
        )

        def copies() -> list[Path]:
            return [
                p
                for d in cluster.log_dirs(1)
                for p in Path(d).iterdir()
                if p.name.startswith("swap-0")
            ]

        def settled() -> bool:
            live = [p for p in copies() if p.name == "swap-0"]
            left = [p for p in copies() if p.name.endswith(("-future", "-delete"))]
            return live == [Path(target) / "swap-0"] and not left

        # the old copy goes log.segment.delete.delay.ms after the swap
        eventually(settled, 20)
        strays = [p for p in copies() if p.name.endswith("-stray")]
        # two current copies after a crash between the renames: one set aside, never deleted
        assert len(strays) == (1 if point == "move.future-renamed" else 0)
        got = read_back(cluster.bootstrap, "swap", 1)
        assert [v[:6] for _, v in sorted(got.items())] == [f"{i:06d}".encode() for i in range(2000)]
    finally:
        admin.close()
        rackwise("cluster", "down", "--dir", str(cluster.dir))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie until its parent reaps it: dead for our purpose
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"
