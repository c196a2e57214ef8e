"""The kafka-python plug-ins against kafka-python's own classes: subscription and assignment
bytes, cluster metadata built from a real Metadata response, and the group leader's path through
kafka-python's own consumer coordinator."""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator
from typing import Any

import pytest
from kafka import KafkaConsumer
from kafka.cluster import ClusterMetadata
from kafka.coordinator.assignors.abstract import RebalanceProtocol
from kafka.coordinator.assignors.cooperative_sticky import (
    CooperativeStickyAssignor as KafkaPythonCooperativeSticky,
)
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.errors import KafkaConfigurationError
from kafka.protocol.consumer.group import JoinGroupResponse
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)
from kafka.protocol.metadata import MetadataResponse

from rackwise.assignors import ASSIGNOR_NAMES
from rackwise.assignors.model import Member, PartitionInfo
from rackwise.client.kafka_python import (
    ASSIGNOR_CLASSES,
    CooperativeStickyAssignor,
    RackLocalOptimalAssignor,
    RangeAssignor,
    group_from_cluster,
    member_from_subscription,
    protocol_assignment,
    subscription,
)
from rackwise.common import TopicPartition

METADATA_VERSION = 9

Broker = MetadataResponse.MetadataResponseBroker
Topic = MetadataResponse.MetadataResponseTopic
Partition = MetadataResponse.MetadataResponseTopic.MetadataResponsePartition


def _string(s: str) -> bytes:
    data = s.encode()
    return struct.pack(">h", len(data)) + data


def _metadata_response(brokers: list[tuple[int, str | None]], topics: dict[str, Any]) -> Any:
    """A Metadata response built with kafka-python's classes, through bytes and back."""
    response = MetadataResponse(
        version=METADATA_VERSION,
        throttle_time_ms=0,
        brokers=[Broker(node_id=i, host=f"b{i}", port=9092, rack=r) for i, r in brokers],
        cluster_id="cluster",
        controller_id=brokers[0][0],
        topics=[
            Topic(
                error_code=0 if partitions is not None else 3,  # UNKNOWN_TOPIC_OR_PARTITION
                name=name,
                is_internal=False,
                partitions=[
                    Partition(
                        error_code=0,
                        partition_index=index,
                        leader_id=leader,
                        leader_epoch=0,
                        replica_nodes=replicas,
                        isr_nodes=replicas,
                        offline_replicas=[],
                    )
                    for index, (leader, replicas) in enumerate(partitions or [])
                ],
            )
            for name, partitions in topics.items()
        ],
    )
    data = response.encode(version=METADATA_VERSION)
    return MetadataResponse.decode(data, version=METADATA_VERSION)


def _cluster(brokers: list[tuple[int, str | None]], topics: dict[str, Any]) -> Any:
    """A ClusterMetadata fed that response."""
    cluster = ClusterMetadata()
    cluster.update_metadata(_metadata_response(brokers, topics))
    return cluster


def _join_members(subscriptions: dict[str, bytes]) -> list[Any]:
    """Members as the leader gets them: a JoinGroup response through bytes and back, then each
    member's metadata decoded as kafka-python's coordinator does it."""
    response = JoinGroupResponse(
        version=7,
        throttle_time_ms=0,
        error_code=0,
        generation_id=4,
        protocol_type="consumer",
        protocol_name="rack-local-optimal",
        leader=min(subscriptions),
        member_id=min(subscriptions),
        members=[
            JoinGroupResponse.JoinGroupResponseMember(
                member_id=member_id, group_instance_id=None, metadata=metadata
            )
            for member_id, metadata in subscriptions.items()
        ],
    )
    members = JoinGroupResponse.decode(response.encode(version=7), version=7).members
    for member in members:
        member.metadata = ConsumerProtocolSubscription.decode(member.metadata)
    return list(members)


def _partitions(assignment: ConsumerProtocolAssignment) -> list[str]:
    return [f"{tp.topic}-{tp.partition}" for tp in assignment.partitions()]


# -- subscriptions -------------------------------------------------------------------------


def test_subscription_bytes_are_kafkas_version_3_layout() -> None:
    owned = [TopicPartition("t2", 1), TopicPartition("t1", 2), TopicPartition("t1", 0)]
    data = subscription(["t2", "t1", "t2"], owned, 5, "/dc1/r1").encode()
    expected = (
        struct.pack(">h", 3)  # version
        + struct.pack(">i", 2)
        + _string("t1")
        + _string("t2")  # topics
        + struct.pack(">i", -1)  # user data: null
        + struct.pack(">i", 2)  # owned partitions, by topic
        + _string("t1")
        + struct.pack(">iii", 2, 0, 2)
        + _string("t2")
        + struct.pack(">ii", 1, 1)
        + struct.pack(">i", 5)  # generation
        + _string("/dc1/r1")  # rack
    )
    assert bytes(data) == expected
    decoded = ConsumerProtocolSubscription.decode(data)
    assert decoded.version == 3
    assert decoded.topics == ["t1", "t2"]
    assert [(tp.topic, tp.partitions) for tp in decoded.owned_partitions] == [
        ("t1", [0, 2]),
        ("t2", [1]),
    ]
    assert (decoded.generation_id, decoded.rack_id, decoded.user_data) == (5, "/dc1/r1", None)


def test_a_consumer_without_rack_sends_a_null_rack() -> None:
    data = RangeAssignor().metadata({"t"}).encode()
    assert bytes(data)[-2:] == struct.pack(">h", -1)
    assert ConsumerProtocolSubscription.decode(data).rack_id is None


def test_subscriptions_written_by_kafka_python_are_read() -> None:
    # Version 3, written by kafka-python's own class.
    own = ConsumerProtocolSubscription(
        version=3,
        topics=["a", "b"],
        user_data=b"",
        owned_partitions=[ConsumerProtocolSubscription.TopicPartition(topic="a", partitions=[3])],
        generation_id=7,
        rack_id="r2",
    ).encode()
    assert member_from_subscription(
        "m", "static-1", ConsumerProtocolSubscription.decode(own)
    ) == Member("m", ("a", "b"), (TopicPartition("a", 3),), "r2", "static-1", 7)
    # Version 1, as kafka-python's cooperative sticky assignor writes it: owned, no generation.
    legacy = KafkaPythonCooperativeSticky()
    received = ConsumerProtocolAssignment(
        version=0,
        assigned_partitions=[
            ConsumerProtocolAssignment.TopicPartition(topic="a", partitions=[0, 1])
        ],
        user_data=b"",
    ).encode()
    legacy.on_assignment(ConsumerProtocolAssignment.decode(received), 3)
    v1 = ConsumerProtocolSubscription.decode(legacy.metadata({"a"}).encode())
    assert v1.version == 1
    member = member_from_subscription("m", None, v1)
    assert (member.owned, member.generation, member.rack) == (
        (TopicPartition("a", 0), TopicPartition("a", 1)),
        -1,
        None,
    )
    # Version 0, as kafka-python's range assignor writes it.
    v0 = ConsumerProtocolSubscription.decode(RangePartitionAssignor.metadata({"a"}).encode())
    assert member_from_subscription("m", None, v0) == Member("m", ("a",))


def test_assignment_bytes_are_read_by_kafka_python() -> None:
    parts = [TopicPartition("b", 2), TopicPartition("a", 1), TopicPartition("b", 0)]
    data = protocol_assignment(parts).encode()
    expected = (
        struct.pack(">h", 3)
        + struct.pack(">i", 2)
        + _string("a")
        + struct.pack(">ii", 1, 1)
        + _string("b")
        + struct.pack(">iii", 2, 2, 0)
        + struct.pack(">i", -1)
    )
    assert bytes(data) == expected
    assert _partitions(ConsumerProtocolAssignment.decode(data)) == ["a-1", "b-2", "b-0"]


# -- cluster metadata ------------------------------------------------------------------------


BROKERS = [(1, "/dc1/a"), (2, "/dc1/b"), (3, None), (4, "/dc2/c")]
TOPICS = {
    "t": [(2, [2, 1, 3]), (1, [4, 1]), (-1, [4, 3])],
    "gone": None,
}


def test_group_from_a_real_metadata_response() -> None:
    cluster = _cluster(BROKERS, TOPICS)
    members = _join_members(
        {
            "m1": subscription(["t", "gone"], [], -1, "/dc1/a").encode(),
            "m2": subscription(["t"], [TopicPartition("t", 1)], 2, None).encode(),
        }
    )
    group = group_from_cluster(cluster, members)
    assert dict(group.partitions) == {
        "t": [
            PartitionInfo(("/dc1/b", "/dc1/a", None)),
            PartitionInfo(("/dc1/a", "/dc2/c")),
            PartitionInfo(("/dc2/c", None), has_leader=False),
        ]
    }
    assert group.members == (
        Member("m1", ("gone", "t"), rack="/dc1/a"),
        Member("m2", ("t",), (TopicPartition("t", 1),), None, None, 2),
    )
    assert group.prefer_rack_aware_logic is False


class _PublicOnly:
    """A cluster that offers only kafka-python's public ClusterMetadata methods."""

    def __init__(self, cluster: Any) -> None:
        self._cluster = cluster

    def brokers(self) -> Any:
        return self._cluster.brokers()

    def partitions_for_topic(self, topic: str) -> Any:
        return self._cluster.partitions_for_topic(topic)

    def leader_for_partition(self, tp: Any) -> Any:
        return self._cluster.leader_for_partition(tp)

    def is_replica_node(self, tp: Any, node_id: int) -> Any:
        return self._cluster.is_replica_node(tp, node_id)


def test_public_methods_give_the_same_racks() -> None:
    cluster = _cluster(BROKERS, TOPICS)
    members = _join_members({"m": subscription(["t"], [], -1, None).encode()})
    private = group_from_cluster(cluster, members).partitions["t"]
    public = group_from_cluster(_PublicOnly(cluster), members).partitions["t"]
    assert [(p.leader_rack, p.has_leader, sorted(map(str, p.replica_racks))) for p in public] == [
        (p.leader_rack, p.has_leader, sorted(map(str, p.replica_racks))) for p in private
    ]


# -- the leader's path -------------------------------------------------------------------------


def _round(assignors: dict[str, Any], cluster: Any, generation: int) -> dict[str, list[str]]:
    """One rebalance: every member's subscription bytes to the leader (the smallest id), its
    assignment bytes back to each member, who takes them with ``on_assignment``."""
    members = _join_members({m: a.metadata({"t"}).encode() for m, a in assignors.items()})
    leader = assignors[min(assignors)]
    out = leader.assign(cluster, members)
    result = {}
    for member_id, assignor in assignors.items():
        received = ConsumerProtocolAssignment.decode(out[member_id].encode())
        assignor.on_assignment(received, generation)
        result[member_id] = _partitions(received)
    return result


def test_rack_local_optimal_end_to_end_with_a_cooperative_handover() -> None:
    # Leaders: t-0, t-1 in rack a; t-2, t-3 in rack b.
    cluster = _cluster(
        [(1, "a"), (2, "b")], {"t": [(1, [1, 2]), (1, [1, 2]), (2, [2, 1]), (2, [2, 1])]}
    )
    first = {"ca": RackLocalOptimalAssignor(rack="a")}
    assert _round(first, cluster, 1) == {"ca": ["t-0", "t-1", "t-2", "t-3"]}
    sub = ConsumerProtocolSubscription.decode(first["ca"].metadata({"t"}).encode())
    assert (sub.generation_id, sub.rack_id) == (1, "a")
    # cb joins in rack b: t-2 and t-3 are its, but ca still owns them, so this round they go to
    # nobody; ca revokes them, and the next round hands them to cb.
    both = {**first, "cb": RackLocalOptimalAssignor(rack="b")}
    assert _round(both, cluster, 2) == {"ca": ["t-0", "t-1"], "cb": []}
    assert _round(both, cluster, 3) == {"ca": ["t-0", "t-1"], "cb": ["t-2", "t-3"]}
    assert _round(both, cluster, 4) == {"ca": ["t-0", "t-1"], "cb": ["t-2", "t-3"]}


@pytest.mark.parametrize("cls", ASSIGNOR_CLASSES, ids=lambda c: c.name)
def test_every_assignor_on_the_leader_path(cls: Any) -> None:
    cluster = _cluster(
        [(1, "a"), (2, "b"), (3, "c")],
        {"t": [(1 + p % 3, [1 + p % 3, 1 + (p + 1) % 3]) for p in range(9)]},
    )
    assignors = {f"c{r}": cls(rack=r) for r in "abc"}
    result = _round(assignors, cluster, 1)
    given = sorted(tp for parts in result.values() for tp in parts)
    assert given == sorted(f"t-{p}" for p in range(9))
    assert sorted(len(parts) for parts in result.values()) == [3, 3, 3]
    assert cls.name in ASSIGNOR_NAMES


def test_names_and_protocols() -> None:
    assert [c.name for c in ASSIGNOR_CLASSES] == list(ASSIGNOR_NAMES)
    assert RangeAssignor().supported_protocols() == [RebalanceProtocol.EAGER]
    assert CooperativeStickyAssignor().supported_protocols() == [RebalanceProtocol.COOPERATIVE]


@pytest.fixture
def silent_broker() -> Iterator[str]:
    """A listening socket that never answers: KafkaConsumer connects to it and is closed."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    try:
        yield f"127.0.0.1:{server.getsockname()[1]}"
    finally:
        server.close()


def test_kafka_consumers_coordinator_runs_the_instances(silent_broker: str) -> None:
    assignor = RackLocalOptimalAssignor(rack="a")
    consumer = KafkaConsumer(
        group_id="g",
        bootstrap_servers=silent_broker,
        api_version=(3, 5),
        partition_assignment_strategy=[assignor],
    )
    try:
        coordinator = consumer._coordinator
        assert coordinator._assignors == {"rack-local-optimal": assignor}
        assert coordinator._rebalance_protocol == RebalanceProtocol.COOPERATIVE
        consumer.subscribe(["t"])
        [(name, metadata)] = coordinator.group_protocols()
        mine = ConsumerProtocolSubscription.decode(metadata.encode())
        assert (name, mine.topics, mine.rack_id) == ("rack-local-optimal", ["t"], "a")
        # The coordinator's own leader path, on the consumer's own ClusterMetadata.
        response = _metadata_response(
            [(1, "a"), (2, "b")], {"t": [(1, [1, 2]), (1, [1, 2]), (2, [2, 1]), (2, [2, 1])]}
        )
        coordinator._cluster.update_metadata(response)
        other = RackLocalOptimalAssignor(rack="b").metadata({"t"})
        members = [
            JoinGroupResponse.JoinGroupResponseMember(
                member_id=member_id, group_instance_id=None, metadata=bytes(sub.encode())
            )
            for member_id, sub in (("ca", metadata), ("cb", other))
        ]
        out = coordinator._perform_assignment("ca", "rack-local-optimal", members)
        assert {
            m: _partitions(ConsumerProtocolAssignment.decode(a.encode())) for m, a in out.items()
        } == {
            "ca": ["t-0", "t-1"],
            "cb": ["t-2", "t-3"],
        }
        # kafka-python refuses to mix eager and cooperative strategies.
        coordinator._assignors = {"range": RangeAssignor(), "rack-local-optimal": assignor}
        with pytest.raises(KafkaConfigurationError):
            coordinator._validate_rebalance_protocol()
    finally:
        consumer.close()
