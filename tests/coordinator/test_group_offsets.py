"""Committed offsets of simple groups with real processes: a controller and three brokers.
kafka-python commits and resumes; the group's coordinator is killed with SIGKILL and the new
leader of its ``__consumer_offsets`` partition answers with the same offsets; the refusals are
Kafka's error codes."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.structs import OffsetAndMetadata

from rackwise.groups.offsets import OFFSETS_TOPIC
from rackwise.protocol import ApiKey
from tests.broker.test_broker_processes import Cluster, call, eventually
from tests.broker.test_faults_broker import create_topic

pytestmark = pytest.mark.slow

GROUP_ID_NOT_FOUND = 69
INVALID_GROUP_ID = 24
OFFSET_METADATA_TOO_LARGE = 12
NOT_COORDINATOR = 16
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
UNKNOWN_TOPIC_OR_PARTITION = 3
CHECK_INTERVAL_MS = 500


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = Cluster(tmp_path_factory.mktemp("groups"))
    for broker in running.brokers.values():
        with broker.config_path.open("a", encoding="utf-8") as config:
            config.write(f"offsets.retention.check.interval.ms={CHECK_INTERVAL_MS}\n")
    try:
        running.start()
        yield running
    finally:
        running.close()


def coordinator(cluster: Cluster, group: str, other_than: int | None = None) -> int:
    """The broker FindCoordinator names for ``group``, once it names one (other than
    ``other_than``: a killed broker stays its partition's leader until its lease runs out)."""

    def ask() -> int | None:
        port = next(b.port for b in cluster.brokers.values() if b.proc is not None)
        answer = call(
            port, ApiKey.FIND_COORDINATOR, key=group, key_type=0, coordinator_keys=[group]
        )
        found = answer.coordinators[0]
        named = int(found.node_id)
        return named if int(found.error_code) == 0 and named != other_than else None

    return eventually(ask, timeout_s=60)


def consumer(cluster: Cluster, group: str, topic: str) -> KafkaConsumer:
    reader = KafkaConsumer(
        bootstrap_servers=cluster.bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=10_000,
    )
    reader.assign([TopicPartition(topic, 0)])
    return reader


def test_offsets_outlive_the_coordinator(cluster: Cluster) -> None:
    port = cluster.brokers[1].port
    create_topic(port, "orders", 1, 3)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all")
    for i in range(10):
        producer.send("orders", f"order-{i}".encode(), partition=0)
    producer.flush()
    producer.close()

    first = consumer(cluster, "billing", "orders")
    read = [m.value for _, m in zip(range(6), first, strict=False)]
    assert read == [f"order-{i}".encode() for i in range(6)]
    first.commit()
    assert first.committed(TopicPartition("orders", 0)) == 6
    first.close()

    victim = coordinator(cluster, "billing")
    cluster.brokers[victim].stop(signal.SIGKILL)
    successor = coordinator(cluster, "billing", other_than=victim)  # the partition's new leader
    # It loads the partition on election, before any request about the group reaches it.
    loaded = "loaded the offsets of 1 groups"
    eventually(lambda: loaded in cluster.brokers[successor].stderr(), timeout_s=30)

    second = consumer(cluster, "billing", "orders")
    assert [m.offset for m in second][:1] == [6]  # resumed where the first one committed
    second.commit({TopicPartition("orders", 0): OffsetAndMetadata(8, "", -1)})
    second.close()

    cluster.brokers[victim].start()
    third = consumer(cluster, "billing", "orders")
    assert third.committed(TopicPartition("orders", 0)) == 8
    third.close()


def _offset(offset: int) -> Any:
    from kafka.structs import OffsetAndMetadata

    return OffsetAndMetadata(offset, "", -1)


def _commit(port: int, group: str, generation: int = -1, metadata: str = "") -> Any:
    return call(
        port,
        ApiKey.OFFSET_COMMIT,
        group_id=group,
        generation_id_or_member_epoch=generation,
        member_id="",
        group_instance_id=None,
        topics=[
            {
                "name": "audit",
                "partitions": [
                    {"partition_index": 0, "committed_offset": 3, "committed_metadata": metadata},
                    {"partition_index": 1, "committed_offset": 4, "committed_metadata": ""},
                    {"partition_index": 2, "committed_offset": 5, "committed_metadata": ""},
                ],
            },
            {
                "name": "no-such-topic",
                "partitions": [
                    {"partition_index": 0, "committed_offset": 1, "committed_metadata": None}
                ],
            },
        ],
    )


def _codes(answer: Any) -> list[int]:
    return [int(p.error_code) for t in answer.topics for p in t.partitions]


def test_refusals_are_kafkas(cluster: Cluster) -> None:
    group = "auditors"
    leader = cluster.brokers[coordinator(cluster, group)].port
    other = next(b.port for b in cluster.brokers.values() if b.port != leader)
    create_topic(leader, "audit", 2, 3)
    # Partitions the cluster does not have (audit-2, no-such-topic-0) are answered whatever
    # the group; then a commit naming a generation, for a group that does not exist (v9).
    unknown = [UNKNOWN_TOPIC_OR_PARTITION] * 2
    assert _codes(_commit(leader, group, generation=3)) == [GROUP_ID_NOT_FOUND] * 2 + unknown
    assert _codes(_commit(leader, "")) == [INVALID_GROUP_ID] * 2 + unknown
    assert _codes(_commit(other, group)) == [NOT_COORDINATOR] * 2 + unknown
    # offset.metadata.max.bytes (4096) refuses that partition only.
    refused = _codes(_commit(leader, group, metadata="m" * 4097))
    assert refused == [OFFSET_METADATA_TOO_LARGE, 0, *unknown]
    fetched = call(leader, ApiKey.OFFSET_FETCH, groups=[{"group_id": group, "topics": None}])
    (answer,) = fetched.groups
    assert [
        (t.name, [(p.partition_index, p.committed_offset) for p in t.partitions])
        for t in answer.topics
    ] == [("audit", [(1, 4)])]
    transactional = call(
        leader, ApiKey.FIND_COORDINATOR, key="tx", key_type=1, coordinator_keys=["tx"]
    )
    assert int(transactional.coordinators[0].error_code) == TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def test_clients_may_not_write_the_offsets_topic(cluster: Cluster) -> None:
    coordinator(cluster, "anyone")  # the topic exists
    errors: list[Any] = []
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "retries": 0})
    producer.produce(
        OFFSETS_TOPIC,
        b"not a commit",
        key=b"junk",
        partition=0,
        on_delivery=lambda error, _: errors.append(error),
    )
    assert producer.flush(30) == 0
    assert [e.code() for e in errors] == [KafkaError.TOPIC_EXCEPTION]


def _describe(port: int, group: str) -> Any:
    answer = call(port, ApiKey.DESCRIBE_GROUPS, groups=[group], include_authorized_operations=False)
    (described,) = answer.groups
    return described


class _Member:
    """A confluent-kafka consumer of the group, counting the assignments it was given."""

    def __init__(self, cluster: Cluster, group: str, name: str) -> None:
        self.assignments = 0
        self.seen: list[tuple[int, int, bytes]] = []
        self.consumer = Consumer(
            {
                "bootstrap.servers": cluster.bootstrap,
                "group.id": group,
                "client.id": name,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "session.timeout.ms": 45_000,  # longer than the broker's lease: it must wait
                "heartbeat.interval.ms": 1_000,
            }
        )
        self.consumer.subscribe(["ledger"], on_assign=self._assigned)

    def _assigned(self, consumer: Any, partitions: list[Any]) -> None:
        self.assignments += 1

    def poll(self) -> None:
        message = self.consumer.poll(0.1)
        if message is not None and message.error() is None:
            self.seen.append((message.partition(), message.offset(), message.value()))

    def partitions(self) -> set[int]:
        return {p.partition for p in self.consumer.assignment()}


def test_a_group_outlives_its_coordinator(cluster: Cluster) -> None:
    """Two subscribed consumers share four partitions; the group's coordinator is killed with
    SIGKILL. The next leader of its ``__consumer_offsets`` partition loads the group Stable with
    the same members, so the consumers carry on without a rebalance, and every record is read
    exactly once."""
    port = cluster.brokers[1].port
    create_topic(port, "ledger", 4, 3)
    group = "ledger-readers"
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(40):
        producer.produce("ledger", f"entry-{i}".encode(), partition=i % 4)
    assert producer.flush(30) == 0
    members = [_Member(cluster, group, f"ledger-{n}") for n in range(2)]
    victim = None
    try:

        def settled() -> bool:
            for member in members:
                member.poll()
            parts = [m.partitions() for m in members]
            return (
                sum(len(m.seen) for m in members) == 40 and all(parts) and not parts[0] & parts[1]
            )

        eventually(settled, timeout_s=60, every_s=0)
        for member in members:
            member.consumer.commit(asynchronous=False)
        victim = coordinator(cluster, group)
        before = _describe(cluster.brokers[victim].port, group)
        assert str(before.group_state) == "Stable"
        ids = sorted(str(m.member_id) for m in before.members)
        assert [i.rsplit("-", 5)[0] for i in ids] == ["ledger-0", "ledger-1"]
        assigned = [m.assignments for m in members]

        cluster.brokers[victim].stop(signal.SIGKILL)
        successor = coordinator(cluster, group, other_than=victim)
        after = _describe(cluster.brokers[successor].port, group)
        assert str(after.group_state) == "Stable"
        assert sorted(str(m.member_id) for m in after.members) == ids

        for i in range(40, 60):
            producer.produce("ledger", f"entry-{i}".encode(), partition=i % 4)
        assert producer.flush(30) == 0

        def all_read() -> bool:
            for member in members:
                member.poll()
            return sum(len(m.seen) for m in members) >= 60

        eventually(all_read, timeout_s=60, every_s=0)
        seen = [s for m in members for s in m.seen]
        assert sorted(v for _, _, v in seen) == sorted(f"entry-{i}".encode() for i in range(60))
        assert len({(p, o) for p, o, _ in seen}) == 60
        # no rebalance: nobody was assigned anything again, and the members are the same
        assert [m.assignments for m in members] == assigned
        final = _describe(cluster.brokers[successor].port, group)
        assert sorted(str(m.member_id) for m in final.members) == ids
    finally:
        for member in members:
            member.consumer.close()
        if victim is not None and cluster.brokers[victim].proc is None:
            cluster.brokers[victim].start()


def _fetch(port: int, group: str, topic: str) -> list[int]:
    answer = call(
        port,
        ApiKey.OFFSET_FETCH,
        groups=[{"group_id": group, "topics": [{"name": topic, "partition_indexes": [0, 1]}]}],
        require_stable=False,
    )
    (found,) = answer.groups
    return [int(p.committed_offset) for t in found.topics for p in t.partitions]


def _listed(port: int) -> set[str]:
    answer = call(port, ApiKey.LIST_GROUPS, states_filter=[], types_filter=[])
    return {str(g.group_id) for g in answer.groups}


def test_the_coordinator_removes_expired_offsets_and_deleted_topics_offsets(
    cluster: Cluster,
) -> None:
    """A commit that asked for a short retention (OffsetCommit v2-v4) is gone at the next
    check, and the group with it; a deleted topic's offsets go with the topic."""
    port = cluster.brokers[1].port
    create_topic(port, "short", 2, 3)
    create_topic(port, "doomed", 2, 3)
    leader = cluster.brokers[coordinator(cluster, "brief")].port
    brief = call(
        leader,
        ApiKey.OFFSET_COMMIT,
        version=2,  # asks for a retention time of its own
        group_id="brief",
        generation_id_or_member_epoch=-1,
        member_id="",
        retention_time=timedelta(milliseconds=1),
        topics=[
            {
                "name": "short",
                "partitions": [
                    {"partition_index": 0, "committed_offset": 3, "committed_metadata": ""}
                ],
            }
        ],
    )
    assert _codes(brief) == [0]
    eventually(lambda: "brief" not in _listed(leader), timeout_s=15)
    assert _fetch(leader, "brief", "short") == [-1, -1]

    keeper = cluster.brokers[coordinator(cluster, "keeper")].port
    for topic in ("short", "doomed"):
        kept = _commit_to(keeper, "keeper", topic)
        assert _codes(kept) == [0, 0]
    time.sleep(3 * CHECK_INTERVAL_MS / 1000)  # checks ran: a week's retention keeps them
    assert _fetch(keeper, "keeper", "doomed") == [7, 8]
    deleted = call(
        port,
        ApiKey.DELETE_TOPICS,
        topic_names=["doomed"],
        topics=[{"name": "doomed", "topic_id": None}],
        timeout=30000,
    )
    assert [int(r.error_code) for r in deleted.responses] == [0]
    eventually(lambda: _fetch(keeper, "keeper", "doomed") == [-1, -1], timeout_s=15)
    assert _fetch(keeper, "keeper", "short") == [7, 8]


def _commit_to(port: int, group: str, topic: str) -> Any:
    return call(
        port,
        ApiKey.OFFSET_COMMIT,
        group_id=group,
        generation_id_or_member_epoch=-1,
        member_id="",
        group_instance_id=None,
        topics=[
            {
                "name": topic,
                "partitions": [
                    {"partition_index": i, "committed_offset": 7 + i, "committed_metadata": ""}
                    for i in (0, 1)
                ],
            }
        ],
    )
