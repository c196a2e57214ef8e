"""Which replica a consumer reads from, on real partition logs: the leader names only followers
of the ISR that are caught up, unfenced and staying; a follower out of the ISR, fenced or being
removed answers OFFSET_NOT_AVAILABLE; a valid follower sends its consumer to a nearer in-sync
replica and keeps it among equals. A property checks the two sides over random states."""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rackwise.replica.errors import OffsetNotAvailableException
from rackwise.replica.hosting import HostedReplicas, ReplicaConfig
from rackwise.replica.partition import Partition, PartitionState
from rackwise.replica.read_replicas import (
    NO_PREFERRED_REPLICA,
    follower_choice,
    invalid_read_replica,
    leader_choice,
    may_serve,
)
from rackwise.replica.selector import (
    ClientMetadata,
    MultiLevelReplicaSelector,
    RackAwareReplicaSelector,
)
from rackwise.storage.batch import build_batch
from rackwise.storage.config import LogConfig
from rackwise.storage.files import FileCache
from rackwise.storage.log import PartitionLog

TOPIC_ID = uuid.UUID(int=777)
LAG_MS = 1_000
RACKS = {1: "/dc2/r1", 2: "/dc1/r1", 3: "/dc1/r2", 4: "/dc3/r1"}
"""Leader 1 in data centre 2; followers 2 and 3 in data centre 1; 4 in data centre 3."""
CONSUMER = ClientMetadata("/dc1/r1")
MULTI = MultiLevelReplicaSelector()


@dataclass
class Registration:
    fenced: bool = False


@dataclass
class Image:
    brokers: dict[int, Registration] = field(
        default_factory=lambda: {b: Registration() for b in RACKS}
    )


@dataclass
class Hosted:
    """What the read-replica rules read of :class:`HostedReplicas`."""

    broker_id: int
    image: Image
    now: list[int]
    config: ReplicaConfig = field(init=False)
    racks: dict[int, str | None] = field(default_factory=lambda: dict(RACKS))

    def __post_init__(self) -> None:
        self.config = ReplicaConfig(self.broker_id, replica_lag_time_max_ms=LAG_MS)

    def clock(self) -> int:
        return self.now[0]


def open_log(directory: Path, files: FileCache) -> PartitionLog:
    return PartitionLog.open(
        directory,
        LogConfig(),
        topic_id=TOPIC_ID,
        recovery_point=0,
        log_start_offset=0,
        had_clean_shutdown=True,
        files=files,
        clock=lambda: 0,
        rng=random.Random(1),
    )


def state(isr: tuple[int, ...] = (1, 2, 3, 4), removing: tuple[int, ...] = ()) -> PartitionState:
    return PartitionState(TOPIC_ID, (1, 2, 3, 4), isr, 1, 1, 1, removing)


class Cluster:
    """Leader 1 of t-0 and its three followers, replicating by hand."""

    def __init__(self, root: Path) -> None:
        files = FileCache(32)
        self.now = [0]
        self.image = Image()
        self.partitions = {
            b: Partition(
                "t", 0, b, open_log(root / f"b{b}" / "t-0", files), state(()), lag_max_ms=LAG_MS
            )
            for b in RACKS
        }
        self.hosted = {b: cast(HostedReplicas, Hosted(b, self.image, self.now)) for b in RACKS}
        self.apply(state())

    def apply(self, new: PartitionState) -> None:
        for partition in self.partitions.values():
            partition.apply_registration(new, self.now[0])

    def produce(self, n: int) -> None:
        records = [(None, f"v{i}".encode(), ()) for i in range(n)]
        self.partitions[1].append_as_leader(
            build_batch(records, timestamp_ms=1000),
            required_acks=1,
            min_insync_replicas=1,
            now_ms=self.now[0],
        )

    def fetch(self, follower: int) -> None:
        leader, replica = self.partitions[1], self.partitions[follower]
        leader.update_follower(
            follower,
            fetch_offset=replica.log_end_offset,
            log_start_offset=replica.log.log_start_offset,
            now_ms=self.now[0],
            lag_max_ms=LAG_MS,
        )
        chunk = leader.log.read(
            replica.log_end_offset,
            max_bytes=1 << 20,
            max_offset=leader.log_end_offset,
            min_one_batch=True,
        )
        if chunk.records:
            replica.log.append_as_follower(chunk.records)
        replica.log.update_high_watermark(min(leader.high_watermark, replica.log_end_offset))

    def replicate(self, *followers: int) -> None:
        for _ in range(2):
            for follower in followers:
                self.fetch(follower)

    def leader_names(self, client: ClientMetadata = CONSUMER, selector: Any = MULTI) -> int:
        leader = self.partitions[1]
        return leader_choice(self.hosted[1], leader, client, selector, leader.high_watermark)

    def follower_says(self, broker: int, selector: Any = MULTI) -> int:
        return follower_choice(self.hosted[broker], self.partitions[broker], CONSUMER, selector)


@pytest.fixture
def cluster(tmp_path: Path) -> Cluster:
    c = Cluster(tmp_path)
    c.produce(10)
    c.replicate(2, 3, 4)
    return c


def test_worked_example_a_stopped_follower_loses_its_consumer_and_gets_it_back(
    cluster: Cluster,
) -> None:
    assert cluster.leader_names() == 2
    assert cluster.follower_says(2) == NO_PREFERRED_REPLICA  # it serves
    cluster.now[0] = 500
    cluster.produce(5)
    cluster.replicate(3, 4)  # 2 is stopped
    assert cluster.leader_names() == 2  # not yet out of sync
    cluster.now[0] = 1_200
    cluster.replicate(3, 4)
    # 2 has not been caught up for replica.lag.time.max.ms: its ISR check would drop it, and
    # the leader names the next nearest before the controller has written the smaller ISR.
    assert cluster.leader_names() == 3
    cluster.apply(state(isr=(1, 3, 4)))
    assert cluster.leader_names() == 3
    with pytest.raises(OffsetNotAvailableException, match="broker 2 is not in the ISR"):
        cluster.follower_says(2)
    assert cluster.follower_says(3) == NO_PREFERRED_REPLICA  # the nearest it knows of
    cluster.replicate(2)
    cluster.apply(state())
    # Back in the ISR: the consumer reading from 3 is sent back to 2 at its next fetch.
    assert cluster.follower_says(3) == 2
    assert cluster.follower_says(2) == NO_PREFERRED_REPLICA
    assert cluster.leader_names() == 2


def test_a_replica_being_removed_is_not_named_and_sends_its_consumers_away(
    cluster: Cluster,
) -> None:
    cluster.apply(state(removing=(2,)))
    assert cluster.leader_names() == 3
    with pytest.raises(OffsetNotAvailableException, match="reassignment is removing broker 2"):
        cluster.follower_says(2)
    assert cluster.follower_says(3) == NO_PREFERRED_REPLICA


def test_a_fenced_broker_is_not_named_and_refuses_consumers(cluster: Cluster) -> None:
    cluster.image.brokers[2].fenced = True
    assert cluster.leader_names() == 3
    with pytest.raises(OffsetNotAvailableException, match="broker 2 is fenced"):
        cluster.follower_says(2)
    assert not may_serve(cluster.hosted[2], cluster.partitions[2])
    assert may_serve(cluster.hosted[1], cluster.partitions[1])


def test_kafkas_rack_aware_selector_is_offered_only_the_isr(cluster: Cluster) -> None:
    exact = RackAwareReplicaSelector()
    assert cluster.leader_names(selector=exact) == 2
    cluster.apply(state(isr=(1, 3, 4)))
    # KAFKA-14372: a follower out of the ISR is no candidate, whatever the selector.
    assert cluster.leader_names(selector=exact) == 1
    # With no in-sync replica in the consumer's rack Kafka's rule gives the leader, so a
    # follower in another rack sends the consumer there, as the leader would have kept it.
    assert cluster.follower_says(3, selector=exact) == 1


def test_among_equally_near_replicas_a_follower_keeps_its_consumer(cluster: Cluster) -> None:
    elsewhere = ClientMetadata("/dc1/r9")  # as near to 2 as to 3
    for broker in (2, 3):
        got = follower_choice(cluster.hosted[broker], cluster.partitions[broker], elsewhere, MULTI)
        assert got == NO_PREFERRED_REPLICA
    # A follower in another data centre sends it to the nearer one.
    got = follower_choice(cluster.hosted[4], cluster.partitions[4], elsewhere, MULTI)
    assert got in (2, 3)


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    isr=st.sets(st.sampled_from([2, 3, 4])),
    removing=st.sets(st.sampled_from([2, 3, 4]), max_size=1),
    fenced=st.sets(st.sampled_from([2, 3, 4])),
    stopped=st.sets(st.sampled_from([2, 3, 4])),
    rack=st.sampled_from(["/dc1/r1", "/dc1/r2", "/dc2/r1", "/dc3/r5", "/dc9/r1"]),
)
def test_no_consumer_is_named_or_served_by_a_replica_that_may_be_stale(
    tmp_path_factory: pytest.TempPathFactory,
    isr: set[int],
    removing: set[int],
    fenced: set[int],
    stopped: set[int],
    rack: str,
) -> None:
    cluster = Cluster(tmp_path_factory.mktemp("prop"))
    cluster.produce(10)
    cluster.replicate(2, 3, 4)
    cluster.now[0] = 2 * LAG_MS
    cluster.produce(3)
    cluster.replicate(*sorted({2, 3, 4} - stopped))
    cluster.apply(state(isr=(1, *sorted(isr)), removing=tuple(sorted(removing))))
    for broker in fenced:
        cluster.image.brokers[broker].fenced = True
    client = ClientMetadata(rack)
    valid = isr - removing - fenced
    named = cluster.leader_names(client)
    assert named == 1 or named in valid - stopped
    for broker in (2, 3, 4):
        hosted, partition = cluster.hosted[broker], cluster.partitions[broker]
        assert (invalid_read_replica(hosted, partition) is None) == (broker in valid)
        if broker not in valid:
            with pytest.raises(OffsetNotAvailableException):
                follower_choice(hosted, partition, client, MULTI)
            continue
        moved = follower_choice(hosted, partition, client, MULTI)
        assert moved in {NO_PREFERRED_REPLICA, 1} | (valid - {broker})
