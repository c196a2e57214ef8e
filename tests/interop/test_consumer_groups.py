"""Consumers that ``subscribe``: the classic group protocol (JoinGroup, SyncGroup, Heartbeat,
LeaveGroup) as confluent-kafka, kafka-python and aiokafka speak it. Two librdkafka consumers
share a topic's partitions and one takes them all when the other leaves; kafka-python and
aiokafka commit and resume; the admin clients see a live group as Stable with its member and
assignment, cannot delete it until it is Empty; and three kafka-python consumers, one per data
centre, get the assignment rackwise's leader-rack-aware cooperative sticky assignor promises.

Every wait has a deadline, so a broker that never completes a rebalance fails the test."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka.structs import TopicPartition as AioTopicPartition
from confluent_kafka import (
    Consumer,
    ConsumerGroupState,
    KafkaError,
    KafkaException,
    Producer,
)
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient, KafkaConsumer
from kafka import TopicPartition as KpTopicPartition

from rackwise.client.kafka_python import LeaderRackAwareCooperativeStickyAssignor
from tests.interop.conftest import Cluster, eventually

PARTITIONS = 6
SESSION = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 1000}
"""librdkafka group timings: the broker's minimum session timeout, a heartbeat a second."""


def _topic(cluster: Cluster, prefix: str, partitions: int = PARTITIONS) -> str:
    """A new topic of ``partitions`` partitions, replication factor 3, once every partition
    has a leader."""
    topic = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=3)])[
        topic
    ].result(30)

    def ready() -> bool:
        described = admin.list_topics(topic, timeout=10).topics[topic]
        return (
            described.error is None
            and len(described.partitions) == partitions
            and all(p.leader >= 0 for p in described.partitions.values())
        )

    eventually(ready, 30)
    return topic


def _produce(cluster: Cluster, topic: str, records: list[tuple[int, bytes]]) -> None:
    """Write ``(partition, value)`` records, each keyed by its value, and wait for all acks."""
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for partition, value in records:
        producer.produce(topic, value, key=value, partition=partition)
    assert producer.flush(30) == 0


def _spread(prefix: str, count: int, partitions: int = PARTITIONS) -> list[tuple[int, bytes]]:
    """``count`` records named ``<prefix><i>``, record ``i`` in partition ``i % partitions``."""
    return [(i % partitions, f"{prefix}{i}".encode()) for i in range(count)]


def _partitions(consumer: Consumer) -> set[int]:
    return {tp.partition for tp in consumer.assignment()}


def test_confluent_kafka_consumers_share_a_topic_and_take_over(cluster: Cluster) -> None:
    topic = _topic(cluster, "ck-share")
    group = f"ck-share-{uuid.uuid4().hex[:8]}"
    settings = {
        "bootstrap.servers": cluster.bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        **SESSION,
    }
    first = Consumer({**settings, "client.id": "ck-first"})
    second = Consumer({**settings, "client.id": "ck-second"})
    first_closed = False
    read: dict[str, list[bytes]] = {"first": [], "second": []}

    def poll_both() -> None:
        for name, consumer in (("first", first), ("second", second)):
            if name == "first" and first_closed:
                continue
            message = consumer.poll(0.1)
            if message is None:
                continue
            assert message.error() is None, message.error()
            value = message.value()
            assert isinstance(value, bytes)
            read[name].append(value)

    try:
        first.subscribe([topic])
        second.subscribe([topic])
        # Both in the group before there is anything to read, so no record is read by one
        # member and again by the next owner of its partition.
        deadline = time.monotonic() + 30
        while not (_partitions(first) and _partitions(second)):
            assert time.monotonic() < deadline, (first.assignment(), second.assignment())
            poll_both()
        records = _spread("v", 60)
        _produce(cluster, topic, records)
        deadline = time.monotonic() + 30
        while len(read["first"]) + len(read["second"]) < len(records):
            assert time.monotonic() < deadline, read
            poll_both()
        for _ in range(5):  # anything read twice would arrive now
            poll_both()

        everything = read["first"] + read["second"]
        assert Counter(everything) == Counter(value for _, value in records)
        mine, theirs = _partitions(first), _partitions(second)
        assert mine and theirs
        assert not mine & theirs
        assert mine | theirs == set(range(PARTITIONS))
        # Each read only its own partitions' records.
        for name, owned in (("first", mine), ("second", theirs)):
            assert {int(v[1:]) % PARTITIONS for v in read[name]} <= owned

        first.close()  # commits what it read and leaves the group
        first_closed = True
        deadline = time.monotonic() + 30
        while _partitions(second) != set(range(PARTITIONS)):
            assert time.monotonic() < deadline, second.assignment()
            poll_both()

        # The second consumer resumes every partition after what the group committed: the
        # first consumer's partitions from its commit on close, its own from its position.
        before = len(read["second"])
        more = _spread("w", PARTITIONS)
        _produce(cluster, topic, more)
        deadline = time.monotonic() + 30
        while len(read["second"]) < before + len(more):
            assert time.monotonic() < deadline, read["second"][before:]
            poll_both()
        for _ in range(5):
            poll_both()
        assert sorted(read["second"][before:]) == sorted(value for _, value in more)
    finally:
        if not first_closed:
            first.close()
        second.close()


def _kafka_python_subscriber(topic: str, partitions: int, **settings: Any) -> KafkaConsumer:
    """A kafka-python consumer subscribed to ``topic`` that has the topic's metadata before it
    first joins the group.

    kafka-python 3.0.12 loses a rebalance that outlives a ``poll`` when the group leader
    rejoins because the metadata it assigned with has changed: ``need_rejoin()`` turns False as
    soon as the leader has assigned, so later polls never wait for the JoinGroup/SyncGroup task
    still in flight, its heartbeat stays disabled, and the broker rightly expires the member,
    which never rejoins (seen here about once in ten runs of the three-member test, with
    200 ms polls). A leader that joins before its first metadata answer (an empty topic list)
    always rejoins for that reason; one that has the metadata first does not."""
    consumer = KafkaConsumer(topic, **settings)
    try:
        deadline = time.monotonic() + 20
        while consumer.partitions_for_topic(topic) != set(range(partitions)):
            assert time.monotonic() < deadline, consumer.partitions_for_topic(topic)
            time.sleep(0.1)
    except BaseException:
        consumer.close()
        raise
    return consumer


def _kafka_python_read(consumer: KafkaConsumer, count: int, timeout_s: float = 30) -> list[bytes]:
    """At least ``count`` values from ``consumer``, polled until then (or the deadline), then
    whatever more a last short poll brings."""
    values: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    while len(values) < count and time.monotonic() < deadline:
        for batch in consumer.poll(timeout_ms=500).values():
            values.extend(record.value for record in batch)
    for batch in consumer.poll(timeout_ms=1000).values():
        values.extend(record.value for record in batch)
    return values


def test_kafka_python_commits_and_a_new_member_resumes_after_the_commit(
    cluster: Cluster,
) -> None:
    topic = _topic(cluster, "kp-resume", partitions=3)
    group = f"kp-resume-{uuid.uuid4().hex[:8]}"
    records = _spread("a", 30, partitions=3)
    _produce(cluster, topic, records)
    settings: dict[str, Any] = {
        "bootstrap_servers": cluster.bootstrap,
        "group_id": group,
        "auto_offset_reset": "earliest",
        "enable_auto_commit": False,
        "consumer_timeout_ms": 10_000,
        "session_timeout_ms": 6000,
        "heartbeat_interval_ms": 1000,
    }

    first = _kafka_python_subscriber(topic, 3, **settings)
    try:
        values = _kafka_python_read(first, len(records))
        assert sorted(values) == sorted(value for _, value in records)
        assert {tp.partition for tp in first.assignment()} == {0, 1, 2}
        first.commit()
        committed = {p: first.committed(KpTopicPartition(topic, p)) for p in range(3)}
        assert committed == {0: 10, 1: 10, 2: 10}
    finally:
        first.close()

    more = _spread("b", 6, partitions=3)
    _produce(cluster, topic, more)
    second = _kafka_python_subscriber(topic, 3, **settings)
    try:
        resumed = _kafka_python_read(second, len(more))
        assert sorted(resumed) == sorted(value for _, value in more)
    finally:
        second.close()


def test_aiokafka_subscribes_reads_and_commits(cluster: Cluster) -> None:
    topic = _topic(cluster, "aio-group", partitions=3)
    group = f"aio-group-{uuid.uuid4().hex[:8]}"
    records = _spread("c", 21, partitions=3)
    _produce(cluster, topic, records)

    async def scenario() -> tuple[list[bytes], set[int], dict[int, int | None]]:
        consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=cluster.bootstrap,
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=6000,
            heartbeat_interval_ms=1000,
        )
        await consumer.start()
        try:
            values: list[bytes] = []
            deadline = time.monotonic() + 30
            while len(values) < len(records) and time.monotonic() < deadline:
                batches = await consumer.getmany(timeout_ms=500)
                values.extend(m.value for batch in batches.values() for m in batch if m.value)
            assigned = {tp.partition for tp in consumer.assignment()}
            await consumer.commit()
            committed = {p: await consumer.committed(AioTopicPartition(topic, p)) for p in range(3)}
            return values, assigned, committed
        finally:
            await consumer.stop()

    values, assigned, committed = asyncio.run(asyncio.wait_for(scenario(), 50))
    assert sorted(values) == sorted(value for _, value in records)
    assert assigned == {0, 1, 2}
    assert committed == {0: 7, 1: 7, 2: 7}


def _describe(admin: AdminClient, group: str) -> Any:
    return admin.describe_consumer_groups([group], request_timeout=20)[group].result(30)


def _listed(admin: AdminClient, group: str) -> ConsumerGroupState | None:
    listed = admin.list_consumer_groups(request_timeout=20).result(30)
    states = {g.group_id: g.state for g in listed.valid}
    return states.get(group)


def test_admin_clients_see_a_live_group_and_delete_it_once_empty(cluster: Cluster) -> None:
    topic = _topic(cluster, "admin-live", partitions=3)
    group = f"admin-live-{uuid.uuid4().hex[:8]}"
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": group,
            "client.id": "live-member",
            "auto.offset.reset": "earliest",
            **SESSION,
        }
    )
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    kp_admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=20000)
    closed = False
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 30
        while _partitions(consumer) != {0, 1, 2}:
            assert time.monotonic() < deadline, consumer.assignment()
            consumer.poll(0.2)

        def stable() -> Any:
            consumer.poll(0.1)
            described = _describe(admin, group)
            return described if described.state == ConsumerGroupState.STABLE else None

        described = eventually(stable, 20)
        assert described.group_id == group
        assert not described.is_simple_consumer_group
        # librdkafka's default strategies are "range,roundrobin"; a lone member's first choice.
        assert described.partition_assignor == "range"
        (member,) = described.members
        assert member.client_id == "live-member"
        assert member.member_id.startswith("live-member-")
        assert member.host
        assigned = sorted((tp.topic, tp.partition) for tp in member.assignment.topic_partitions)
        assert assigned == [(topic, 0), (topic, 1), (topic, 2)]
        assert _listed(admin, group) == ConsumerGroupState.STABLE
        stable_only = admin.list_consumer_groups(
            states={ConsumerGroupState.STABLE}, request_timeout=20
        ).result(30)
        assert group in {g.group_id for g in stable_only.valid}

        kp_described = kp_admin.describe_groups([group])[group]
        assert kp_described["error"] is None
        assert (kp_described["group_state"], kp_described["protocol_type"]) == (
            "Stable",
            "consumer",
        )
        assert kp_described["protocol_data"] == "range"
        (kp_member,) = kp_described["members"]
        assert (kp_member["member_id"], kp_member["client_id"]) == (
            member.member_id,
            "live-member",
        )
        assert kp_member["client_host"] == member.host
        assert kp_member["member_metadata"]["topics"] == [topic]
        assert kp_member["member_assignment"]["assigned_partitions"] == [
            {"topic": topic, "partitions": [0, 1, 2]}
        ]
        kp_listed = {g["group_id"]: g for g in kp_admin.list_groups()}
        assert kp_listed[group]["group_state"] == "Stable"
        assert kp_listed[group]["protocol_type"] == "consumer"

        with pytest.raises(KafkaException) as refused:
            admin.delete_consumer_groups([group], request_timeout=20)[group].result(30)
        assert refused.value.args[0].code() == KafkaError.NON_EMPTY_GROUP
        assert kp_admin.delete_groups([group])[group] == "NonEmptyGroupError"
        assert _describe(admin, group).state == ConsumerGroupState.STABLE

        consumer.close()  # leaves the group: the last member gone, it is Empty
        closed = True

        def empty() -> Any:
            described = _describe(admin, group)
            return described if described.state == ConsumerGroupState.EMPTY else None

        assert eventually(empty, 20).members == []
        assert _listed(admin, group) == ConsumerGroupState.EMPTY
        assert admin.delete_consumer_groups([group], request_timeout=20)[group].result(30) is None
        assert _listed(admin, group) is None
    finally:
        if not closed:
            consumer.close()
        kp_admin.close()


class _PollingThread(threading.Thread):
    """A kafka-python consumer polled in its own thread (a member joins and rebalances inside
    ``poll``), publishing its assignment after every poll; closed in the thread at the end."""

    def __init__(self, make: Callable[[], KafkaConsumer]) -> None:
        super().__init__(daemon=True)
        self.make = make
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.assignment: frozenset[int] = frozenset()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            consumer = self.make()
        except BaseException as error:  # reported by the test, not by the thread
            self.error = error
            return
        try:
            while not self.stop.is_set():
                consumer.poll(timeout_ms=200)
                with self.lock:
                    self.assignment = frozenset(tp.partition for tp in consumer.assignment())
        except BaseException as error:
            self.error = error
        finally:
            try:
                consumer.close()
            except BaseException as error:
                self.error = self.error or error

    def assigned(self) -> frozenset[int]:
        with self.lock:
            return self.assignment


def test_kafka_python_members_get_the_leader_rack_aware_assignment(cluster: Cluster) -> None:
    """Three consumers, one per data centre, each in that DC's rack ``r1``, run
    ``leader-rack-aware-cooperative-sticky``. Its promises (``rackwise.assignors.sticky``,
    ``rackwise.assignors.racks``, ``rackwise.assignors._constrained``): balance first (6
    partitions, 3 members: 2 each); then a partition goes to a member in its leader's rack where
    the quotas allow, and failing that to a member in its leader's data centre. As each
    partition counts only its leader's rack and each rack and DC has at most one consumer, no
    two members compete for a partition: each gets ``min(2, partitions led in its rack)`` led
    in its rack and ``min(2, partitions led in its DC)`` led in its DC, whatever the order in
    which they join and whatever they owned before (in rack-aware mode a member keeps only
    owned partitions of its own rack)."""
    topic = _topic(cluster, "kp-racks")
    group = f"kp-racks-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    described = admin.list_topics(topic, timeout=10).topics[topic].partitions
    leader_rack = {p: cluster.racks[described[p].leader] for p in range(PARTITIONS)}
    racks = ["/dc1/r1", "/dc2/r1", "/dc3/r1"]

    def dc(rack: str) -> str:
        return rack.split("/")[1]

    def make(rack: str) -> Callable[[], KafkaConsumer]:
        return lambda: _kafka_python_subscriber(
            topic,
            PARTITIONS,
            bootstrap_servers=cluster.bootstrap,
            group_id=group,
            client_id=f"kp-{dc(rack)}",
            client_rack=rack,
            partition_assignment_strategy=[LeaderRackAwareCooperativeStickyAssignor(rack=rack)],
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=6000,
            heartbeat_interval_ms=1000,
        )

    threads = {rack: _PollingThread(make(rack)) for rack in racks}
    try:
        for thread in threads.values():
            thread.start()

        def seen() -> dict[str, frozenset[int]]:
            errors = [t.error for t in threads.values() if t.error is not None]
            assert not errors, errors
            return {rack: t.assigned() for rack, t in threads.items()}

        def complete(assigned: dict[str, frozenset[int]]) -> bool:
            """Every partition assigned to exactly one member, and no member without any."""
            sizes = [len(parts) for parts in assigned.values()]
            union = frozenset().union(*assigned.values())
            return sum(sizes) == PARTITIONS and union == set(range(PARTITIONS)) and all(sizes)

        # Stable: the same complete assignment twice, two heartbeats apart (the cooperative
        # protocol hands moved partitions over in a second rebalance, never in the first).
        deadline = time.monotonic() + 45
        assignment = seen()
        while True:
            assert time.monotonic() < deadline, f"no stable assignment: {assignment}"
            assignment = seen()
            if complete(assignment):
                time.sleep(2.5)
                if seen() == assignment:
                    break
            time.sleep(0.1)

        assert sorted(len(parts) for parts in assignment.values()) == [2, 2, 2]
        for rack, parts in assignment.items():
            in_rack = {p for p in range(PARTITIONS) if leader_rack[p] == rack}
            in_dc = {p for p in range(PARTITIONS) if dc(leader_rack[p]) == dc(rack)}
            assert len(parts & in_rack) == min(2, len(in_rack)), (rack, assignment, leader_rack)
            assert len(parts & in_dc) == min(2, len(in_dc)), (rack, assignment, leader_rack)
        # The upper bound of any balanced assignment for leader-rack locality is reached.
        local = sum(leader_rack[p] == rack for rack, parts in assignment.items() for p in parts)
        reachable = sum(
            min(2, sum(leader_rack[p] == rack for p in range(PARTITIONS))) for rack in racks
        )
        assert local == reachable
    finally:
        for thread in threads.values():
            thread.stop.set()
        for thread in threads.values():
            thread.join(20)
    assert not any(t.is_alive() for t in threads.values())
    assert [t.error for t in threads.values()] == [None, None, None]
