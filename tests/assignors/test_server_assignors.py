"""The server-side assignors: Kafka's ``uniform`` and ``range`` on Kafka's own test cases
(``OptimizedUniformAssignmentBuilderTest`` and ``RangeAssignorTest``, as data), and the
properties every server assignor keeps."""

from __future__ import annotations

import base64
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackwise.assignors import create_assignor
from rackwise.assignors.model import PartitionInfo
from rackwise.assignors.server import (
    PartitionAssignorException,
    ServerGroupSpec,
    ServerMember,
    group_spec,
)
from rackwise.assignors.server_registry import DEFAULT_ASSIGNORS, create_server_assignor
from rackwise.assignors.server_uniform import java_uuid_hash


def kafka_uuid(text: str) -> uuid.UUID:
    """Kafka's ``Uuid.fromString``: URL-safe base64 of the 16 bytes, unpadded."""
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))


IDS = {
    "topic1": kafka_uuid("T1-A4s3VTwiI5CTbEp6POw"),
    "topic2": kafka_uuid("T2-B4s3VTwiI5YHbPp6YUe"),
    "topic3": kafka_uuid("T3-CU8fVTLCz5YMkLoDQsa"),
}

# (test name, topic -> partitions, member -> (topics, current assignment), expected)
UNIFORM_CASES = [
    (
        "testFirstAssignmentTwoMembersTwoTopicsNoMemberRacks",
        {"topic1": 3, "topic3": 2},
        {"A": (["topic1", "topic3"], {}), "B": (["topic1", "topic3"], {})},
        {"A": {"topic1": [0], "topic3": [0, 1]}, "B": {"topic1": [1, 2]}},
    ),
    (
        "testFirstAssignmentNumMembersGreaterThanTotalNumPartitions",
        {"topic3": 2},
        {"A": (["topic3"], {}), "B": (["topic3"], {}), "C": (["topic3"], {})},
        {"A": {"topic3": [0]}, "B": {"topic3": [1]}, "C": {}},
    ),
    (
        "testReassignmentForTwoMembersTwoTopicsGivenUnbalancedPrevAssignment",
        {"topic1": 3, "topic2": 3},
        {
            "A": (["topic1", "topic2"], {"topic1": [0, 1], "topic2": [0, 1]}),
            "B": (["topic1", "topic2"], {"topic1": [2], "topic2": [2]}),
        },
        {"A": {"topic1": [0, 1], "topic2": [0]}, "B": {"topic1": [2], "topic2": [1, 2]}},
    ),
    (
        "testReassignmentWhenPartitionsAreAddedForTwoMembersTwoTopics",
        {"topic1": 6, "topic2": 5},
        {
            "A": (["topic1", "topic2"], {"topic1": [0, 2], "topic2": [0]}),
            "B": (["topic1", "topic2"], {"topic1": [1], "topic2": [1, 2]}),
        },
        {
            "A": {"topic1": [0, 2, 3], "topic2": [0, 3, 4]},
            "B": {"topic1": [1, 4, 5], "topic2": [1, 2]},
        },
    ),
    (
        "testReassignmentWhenOneMemberAddedAfterInitialAssignmentWithTwoMembersTwoTopics",
        {"topic1": 3, "topic2": 3},
        {
            "A": (["topic1", "topic2"], {"topic1": [0, 2], "topic2": [0]}),
            "B": (["topic1", "topic2"], {"topic1": [1], "topic2": [1, 2]}),
            "C": (["topic1", "topic2"], {}),
        },
        {"A": {"topic1": [0, 2]}, "B": {"topic1": [1], "topic2": [1]}, "C": {"topic2": [0, 2]}},
    ),
    (
        "testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithThreeMembersTwoTopics",
        {"topic1": 3, "topic2": 3},
        {
            "A": (["topic1", "topic2"], {"topic1": [0], "topic2": [0]}),
            "B": (["topic1", "topic2"], {"topic1": [1], "topic2": [1]}),
        },
        {"A": {"topic1": [0], "topic2": [0, 2]}, "B": {"topic1": [1, 2], "topic2": [1]}},
    ),
    (
        "testReassignmentWhenOneSubscriptionRemovedAfterInitialAssignmentWithTwoMembersTwoTopics",
        {"topic1": 2, "topic2": 2},
        {
            "A": (["topic2"], {"topic1": [0], "topic2": [0]}),
            "B": (["topic2"], {"topic1": [1], "topic2": [1]}),
        },
        {"A": {"topic2": [0]}, "B": {"topic2": [1]}},
    ),
]

RANGE_CASES = [
    (
        "testFirstAssignmentTwoMembersTwoTopicsSameSubscriptions",
        {"topic1": 3, "topic3": 2},
        {"A": (["topic1", "topic3"], {}), "B": (["topic1", "topic3"], {})},
        {"A": {"topic1": [0, 1], "topic3": [0]}, "B": {"topic1": [2], "topic3": [1]}},
    ),
    (
        "testFirstAssignmentThreeMembersThreeTopicsDifferentSubscriptions",
        {"topic1": 3, "topic2": 3, "topic3": 2},
        {"A": (["topic1", "topic2"], {}), "B": (["topic3"], {}), "C": (["topic2", "topic3"], {})},
        {
            "A": {"topic1": [0, 1, 2], "topic2": [0, 1]},
            "B": {"topic3": [0]},
            "C": {"topic2": [2], "topic3": [1]},
        },
    ),
    (
        "testReassignmentWhenOneMemberAddedAfterInitialAssignmentWithTwoMembersTwoTopics",
        {"topic1": 3, "topic2": 3},
        {
            "A": (["topic1", "topic2"], {"topic1": [0, 1], "topic2": [0, 1]}),
            "B": (["topic1", "topic2"], {"topic1": [2], "topic2": [2]}),
            "C": (["topic1", "topic2"], {}),
        },
        {
            "A": {"topic1": [0], "topic2": [0]},
            "B": {"topic1": [1], "topic2": [1]},
            "C": {"topic1": [2], "topic2": [2]},
        },
    ),
]


def spec_of(
    topics: dict[str, int], members: dict[str, tuple[list[str], dict[str, list[int]]]]
) -> ServerGroupSpec:
    return ServerGroupSpec(
        tuple(
            ServerMember(m, frozenset(subs), assigned={t: tuple(ps) for t, ps in current.items()})
            for m, (subs, current) in members.items()  # a TreeMap in Kafka's tests: sorted
        ),
        {t: tuple(PartitionInfo(()) for _ in range(n)) for t, n in topics.items()},
        {t: IDS[t] for t in topics},
    )


def as_lists(answer: dict[str, dict[str, frozenset[int]]]) -> dict[str, dict[str, list[int]]]:
    return {m: {t: sorted(ps) for t, ps in a.items() if ps} for m, a in answer.items()}


@pytest.mark.parametrize(
    ("name", "topics", "members", "expected"), UNIFORM_CASES, ids=[c[0] for c in UNIFORM_CASES]
)
def test_uniform_gives_kafkas_answer(
    name: str, topics: dict, members: dict, expected: dict
) -> None:  # type: ignore[type-arg]
    assert as_lists(create_server_assignor("uniform").assign(spec_of(topics, members))) == expected


@pytest.mark.parametrize(
    ("name", "topics", "members", "expected"), RANGE_CASES, ids=[c[0] for c in RANGE_CASES]
)
def test_range_gives_kafkas_answer(name: str, topics: dict, members: dict, expected: dict) -> None:  # type: ignore[type-arg]
    assert as_lists(create_server_assignor("range").assign(spec_of(topics, members))) == expected


def test_kafka_uuid_hash() -> None:
    # Uuid.hashCode: (int)(hilo >> 32) ^ (int) hilo, hilo = msb ^ lsb
    u = uuid.UUID(int=(0x0000000100000002 << 64) | 0x0000000400000008)
    assert java_uuid_hash(u) == (0x1 ^ 0x4) ^ (0x2 ^ 0x8)


def test_a_missing_topic_is_refused() -> None:
    spec = ServerGroupSpec((ServerMember("A", frozenset({"topic2"})),), {}, {})
    for name in ("uniform", "range"):
        with pytest.raises(PartitionAssignorException):
            create_server_assignor(name).assign(spec)


def test_rack_aware_uniform_prefers_the_nearest_replica() -> None:
    parts = (
        PartitionInfo(("/dc2/r1",)),
        PartitionInfo(("/dc1/r9",)),
        PartitionInfo(("/dc1/r1",)),
        PartitionInfo(("/dc3/r1",)),
    )
    spec = ServerGroupSpec(
        (
            ServerMember("a", frozenset({"t"}), rack="/dc1/r1"),
            ServerMember("b", frozenset({"t"}), rack="/dc2/r1"),
        ),
        {"t": parts},
        {"t": IDS["topic1"]},
    )
    answer = create_server_assignor("rack-aware-uniform").assign(spec)
    assert answer["b"]["t"] >= {0}
    assert answer["a"]["t"] >= {2}
    assert len(answer["a"]["t"]) == len(answer["b"]["t"]) == 2


def test_library_assignors_equal_the_client_side_answer() -> None:
    racks = ("/dc1/r1", "/dc2/r1", "/dc3/r1")
    parts = tuple(PartitionInfo((racks[i % 3], racks[(i + 1) % 3])) for i in range(9))
    spec = ServerGroupSpec(
        tuple(ServerMember(f"m{i}", frozenset({"t"}), rack=racks[i]) for i in range(3)),
        {"t": parts},
        {"t": IDS["topic1"]},
    )
    for name in ("leader-rack-aware-range", "rack-local-optimal"):
        client = create_assignor(name).assign(group_spec(spec))
        server = create_server_assignor(name).assign(spec)
        assert {m: sorted(tp.partition for tp in tps) for m, tps in client.items()} == {
            m: sorted(a.get("t", ())) for m, a in server.items()
        }


RACKS = st.sampled_from(["/dc1/r1", "/dc1/r2", "/dc2/r1", "r1", None])


@st.composite
def groups(draw: st.DrawFn) -> ServerGroupSpec:
    topics = {f"t{i}": draw(st.integers(1, 8)) for i in range(draw(st.integers(1, 3)))}
    names = sorted(topics)
    members = []
    for i in range(draw(st.integers(1, 6))):
        subs = frozenset(draw(st.lists(st.sampled_from(names), min_size=1, unique=True)))
        current = {
            t: tuple(draw(st.sets(st.integers(0, topics[t] - 1), max_size=2))) for t in sorted(subs)
        }
        members.append(ServerMember(f"m{i}", subs, rack=draw(RACKS), assigned=current))
    # current assignments must not overlap, as the coordinator's never do
    seen: set[tuple[str, int]] = set()
    clean = []
    for m in members:
        mine = {t: tuple(p for p in ps if (t, p) not in seen) for t, ps in m.assigned.items()}
        seen |= {(t, p) for t, ps in mine.items() for p in ps}
        clean.append(ServerMember(m.member_id, m.topics, rack=m.rack, assigned=mine))
    partitions = {
        t: tuple(
            PartitionInfo(tuple(draw(st.lists(RACKS, min_size=1, max_size=3)))) for _ in range(n)
        )
        for t, n in topics.items()
    }
    return ServerGroupSpec(
        tuple(clean), partitions, {t: uuid.UUID(int=i + 1) for i, t in enumerate(names)}
    )


@settings(max_examples=60, deadline=None)
@given(groups(), st.sampled_from(DEFAULT_ASSIGNORS))
def test_every_subscribed_partition_goes_to_one_subscriber(
    spec: ServerGroupSpec, name: str
) -> None:
    answer = create_server_assignor(name).assign(spec)
    assert set(answer) == {m.member_id for m in spec.members}
    topics_of = {m.member_id: m.topics for m in spec.members}
    owners: dict[tuple[str, int], str] = {}
    for member, assignment in answer.items():
        for t, ps in assignment.items():
            assert t in topics_of[member]
            for p in ps:
                assert (t, p) not in owners
                owners[(t, p)] = member
    wanted = {
        (t, p) for m in spec.members for t in m.topics for p in range(len(spec.partitions[t]))
    }
    assert set(owners) == wanted
    if name in ("uniform", "rack-aware-uniform", "range") and spec.homogeneous:
        counts = [sum(len(ps) for ps in a.values()) for a in answer.values()]
        if name != "range":
            assert max(counts) - min(counts) <= 1
