"""Classic groups: the protocol Kafka's coordinator selects (ties checked against Java 17's
``HashMap``), the topics a group subscribes to, a group stored and restored, the answers to a
commit, a heartbeat and a sync, and the group's bookkeeping under any sequence of member changes
(hypothesis)."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription

from rackwise.common.error_codes import (
    COORDINATOR_NOT_AVAILABLE,
    FENCED_INSTANCE_ID,
    ILLEGAL_GENERATION,
    INCONSISTENT_GROUP_PROTOCOL,
    NONE,
    REBALANCE_IN_PROGRESS,
    UNKNOWN_MEMBER_ID,
)
from rackwise.groups.classic import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    ClassicGroup,
    Member,
    restored,
    stored,
)
from rackwise.groups.group_metadata import decode_metadata, encode_metadata

# Each member's vote, in member order, and the protocol Kafka's selectProtocol picks, as
# Java 17 runs its code (a HashMap of votes, Stream.max): ties go to the earlier bucket.
JAVA_VOTES = [
    ("range roundrobin", "range"),
    ("roundrobin range", "range"),
    ("cooperative-sticky range", "range"),
    ("sticky roundrobin range", "sticky"),
    ("leader-rack-aware-range rack-local-optimal", "rack-local-optimal"),
    ("rack-local-optimal leader-rack-aware-range", "rack-local-optimal"),
    (
        "cooperative-sticky leader-rack-aware-cooperative-sticky",
        "leader-rack-aware-cooperative-sticky",
    ),
    ("d c b a", "a"),
    ("range range roundrobin roundrobin sticky", "range"),
]


def member(
    member_id: str,
    *protocols: str,
    instance: str | None = None,
    waiting: bool = False,
    protocol_type: str = "consumer",
) -> Member:
    found = Member(
        member_id,
        instance,
        "client",
        "/127.0.0.1",
        60_000,
        10_000,
        protocol_type,
        tuple((name, f"{member_id}:{name}".encode()) for name in protocols),
    )
    return found


def formed(*members: Member) -> ClassicGroup:
    """A group in CompletingRebalance at generation 1 with ``members``, all joined."""
    group = ClassicGroup("billing")
    for m in members:
        group.add(m, join_waiter=object())
    group.transition_to(PREPARING_REBALANCE, 1)
    group.init_next_generation(2)
    for m in members:
        group.set_join_waiter(m, None)
    return group


@pytest.mark.parametrize(("votes", "java"), JAVA_VOTES)
def test_the_protocol_is_the_one_kafka_selects(votes: str, java: str) -> None:
    """Each member lists only the protocol it votes for, then every protocol any member
    voted for (so that all are candidates and its vote is its first)."""
    names = list(dict.fromkeys(votes.split()))
    group = ClassicGroup("billing")
    for i, vote in enumerate(votes.split()):
        others = [n for n in names if n != vote]
        group.add(member(f"m{i}", vote, *others))
    assert group.select_protocol() == java


def test_only_a_protocol_every_member_lists_is_a_candidate() -> None:
    group = ClassicGroup("billing")
    group.add(member("a", "sticky", "range"))
    group.add(member("b", "range"))
    assert group.select_protocol() == "range"  # sticky is a's choice but b lacks it


def test_a_member_must_share_the_type_and_a_protocol_once_the_group_has_members() -> None:
    group = formed(member("a", "range"))
    assert group.supports_protocols("consumer", ["range", "sticky"])
    assert not group.supports_protocols("consumer", ["sticky"])
    assert not group.supports_protocols("connect", ["range"])
    empty = ClassicGroup("new")
    assert empty.supports_protocols("anything", ["x"])
    assert not empty.supports_protocols("", ["x"])
    assert not empty.supports_protocols("consumer", [])


def test_the_next_generation_keeps_the_leader_that_rejoined_or_elects_one_that_did() -> None:
    a, b = member("a", "range"), member("b", "range")
    group = formed(a, b)
    assert (group.generation, group.state, group.leader) == (1, COMPLETING_REBALANCE, "a")
    group.transition_to(STABLE, 3)
    group.transition_to(PREPARING_REBALANCE, 4)
    group.set_join_waiter(b, object())
    assert not group.has_all_members_joined()
    assert group.maybe_elect_new_joined_leader()
    assert group.leader == "b"
    group.remove("a")
    assert group.has_all_members_joined()
    group.init_next_generation(5)
    assert (group.generation, group.state) == (2, COMPLETING_REBALANCE)
    assert group.protocol_name == "range"


def test_a_group_without_members_moves_to_empty_with_no_protocol() -> None:
    group = formed(member("a", "range"))
    group.transition_to(PREPARING_REBALANCE, 3)
    group.remove("a")
    assert group.leader is None
    group.init_next_generation(4)
    assert (group.state, group.generation, group.protocol_name) == (EMPTY, 2, None)


def test_transitions_kafka_does_not_allow_raise() -> None:
    group = ClassicGroup("billing")
    with pytest.raises(ValueError, match="cannot go from Empty to Stable"):
        group.transition_to(STABLE, 1)
    with pytest.raises(ValueError, match="cannot go from Empty to CompletingRebalance"):
        group.transition_to(COMPLETING_REBALANCE, 1)


# ---- answers ----------------------------------------------------------------------------------


def test_heartbeat_answers() -> None:
    group = formed(member("a", "range"), member("s", "range", instance="pod-1"))
    assert group.heartbeat_error("a", None, 1) == NONE  # CompletingRebalance counts as alive
    assert group.heartbeat_error("a", None, 0) == ILLEGAL_GENERATION
    assert group.heartbeat_error("x", None, 1) == UNKNOWN_MEMBER_ID
    assert group.heartbeat_error("s", "pod-1", 1) == NONE
    assert group.heartbeat_error("a", "pod-1", 1) == FENCED_INSTANCE_ID
    assert group.heartbeat_error("s", "pod-2", 1) == UNKNOWN_MEMBER_ID
    group.transition_to(STABLE, 3)
    assert group.heartbeat_error("a", None, 1) == NONE
    group.transition_to(PREPARING_REBALANCE, 4)
    assert group.heartbeat_error("a", None, 1) == REBALANCE_IN_PROGRESS
    group.state = DEAD
    assert group.heartbeat_error("a", None, 1) == COORDINATOR_NOT_AVAILABLE


def test_sync_answers() -> None:
    group = formed(member("a", "range"))
    assert group.sync_error("a", None, 1, None, None) == NONE
    assert group.sync_error("a", None, 1, "consumer", "range") == NONE
    assert group.sync_error("a", None, 1, "consumer", "sticky") == INCONSISTENT_GROUP_PROTOCOL
    assert group.sync_error("a", None, 1, "connect", "range") == INCONSISTENT_GROUP_PROTOCOL
    assert group.sync_error("a", None, 2, None, None) == ILLEGAL_GENERATION
    assert group.sync_error("b", None, 1, None, None) == UNKNOWN_MEMBER_ID
    group.transition_to(PREPARING_REBALANCE, 3)
    assert group.sync_error("a", None, 1, None, None) == REBALANCE_IN_PROGRESS


def test_commit_answers_as_kafka_validates_them() -> None:
    group = formed(member("a", "range"))
    # CompletingRebalance: the member knows its generation but has no assignment yet
    assert group.commit_error("a", None, 1) == REBALANCE_IN_PROGRESS
    group.transition_to(STABLE, 3)
    assert group.commit_error("a", None, 1) == NONE
    assert group.commit_error("a", None, 0) == ILLEGAL_GENERATION
    assert group.commit_error("b", None, 1) == UNKNOWN_MEMBER_ID
    # an admin client's commit (no generation, no member) to a group with members
    assert group.commit_error("", None, -1) == UNKNOWN_MEMBER_ID
    empty = ClassicGroup("idle")
    assert empty.commit_error("", None, -1) == NONE
    assert empty.commit_error("a", None, 3) == UNKNOWN_MEMBER_ID
    empty.state = DEAD
    assert empty.commit_error("", None, -1) == COORDINATOR_NOT_AVAILABLE


# ---- subscriptions ------------------------------------------------------------------------------


def test_a_group_knows_its_topics_only_for_the_consumer_protocol_type() -> None:
    subscription = bytes(
        ConsumerProtocolSubscription(
            topics=["orders"], user_data=None, owned_partitions=[], generation_id=-1, rack_id=None
        ).encode(version=0)
    )
    a = Member("a", None, "c", "/h", 1, 1, "consumer", (("range", subscription),))
    group = formed(a)
    assert group.subscribed_topics() == {"orders"}
    assert group.is_subscribed_to("orders") and not group.is_subscribed_to("payments")
    broken = formed(Member("b", None, "c", "/h", 1, 1, "consumer", (("range", b"\x00"),)))
    assert broken.subscribed_topics() is None
    assert broken.is_subscribed_to("anything")  # unknown: Kafka assumes it is
    connect = formed(member("w", "default", protocol_type="connect"))
    assert connect.subscribed_topics() is None
    assert not connect.is_subscribed_to("orders")


def test_a_stored_generation_comes_back_stable_with_its_members() -> None:
    a, b = member("a", "range", "sticky"), member("b", "range", instance="pod-b")
    group = formed(a, b)
    group.leader = "b"
    value = stored(group, {"a": b"A", "b": b"B"})
    assert [(m.member_id, m.subscription, m.assignment) for m in value.members] == [
        ("a", b"a:range", b"A"),
        ("b", b"b:range", b"B"),
    ]
    back = restored("billing", decode_metadata(encode_metadata(value)))
    assert (back.state, back.generation, back.protocol_name, back.leader) == (
        STABLE,
        1,
        "range",
        "b",
    )
    assert back.static_members == {"pod-b": "b"}
    assert {m: back.members[m].assignment for m in back.members} == {"a": b"A", "b": b"B"}
    assert back.heartbeat_error("a", None, 1) == NONE


def test_a_new_group_is_stored_without_members() -> None:
    group = ClassicGroup("billing")
    group.add(member("a", "range"), join_waiter=object())
    value = stored(group)
    assert value.members == () and value.protocol is None and value.generation == 0
    back = restored("billing", value)
    assert (back.state, back.members) == (EMPTY, {})


# ---- bookkeeping under any sequence of changes -------------------------------------------------

NAMES = ["range", "sticky", "roundrobin"]


class GroupMachine(RuleBasedStateMachine):
    """Members come, change their protocols, wait and stop waiting, and leave; rebalances
    complete whenever every member has joined. The counts the coordinator relies on must
    always equal what they count."""

    def __init__(self) -> None:
        super().__init__()
        self.group = ClassicGroup("g")
        self.next_id = 0

    @rule(
        protocols=st.lists(st.sampled_from(NAMES), min_size=1, max_size=3, unique=True),
        static=st.booleans(),
        waiting=st.booleans(),
    )
    def join(self, protocols: list[str], static: bool, waiting: bool) -> None:
        self.next_id += 1
        m = member(f"m{self.next_id}", *protocols, instance=f"i{self.next_id}" if static else None)
        names = [n for n, _ in m.protocols]
        if self.group.supports_protocols("consumer", names):
            self.group.add(m, join_waiter=object() if waiting else None)
        else:
            with pytest.raises(ValueError):
                self.group.add(m)

    @precondition(lambda self: self.group.members)
    @rule(data=st.data())
    def leave(self, data: st.DataObject) -> None:
        self.group.remove(data.draw(st.sampled_from(sorted(self.group.members))))

    @precondition(lambda self: self.group.members)
    @rule(data=st.data(), waiting=st.booleans())
    def wait_or_not(self, data: st.DataObject, waiting: bool) -> None:
        m = self.group.members[data.draw(st.sampled_from(sorted(self.group.members)))]
        self.group.set_join_waiter(m, object() if waiting else None)

    @precondition(lambda self: self.group.members)
    @rule(data=st.data(), protocols=st.lists(st.sampled_from(NAMES), min_size=1, unique=True))
    def change_protocols(self, data: st.DataObject, protocols: list[str]) -> None:
        m = self.group.members[data.draw(st.sampled_from(sorted(self.group.members)))]
        new = tuple((n, b"") for n in protocols)
        self.group.update_member(m, new, 1, 1, object())

    @precondition(lambda self: self.group.has_all_members_joined() and self.group.members)
    @rule()
    def rebalance(self) -> None:
        group = self.group
        if group.state in (EMPTY, STABLE, COMPLETING_REBALANCE):
            group.transition_to(PREPARING_REBALANCE, 0)
        listed = [dict(m.protocols) for m in group.members.values()]
        candidates = [n for n in NAMES if all(n in protocols for protocols in listed)]
        if not candidates:
            with pytest.raises(ValueError):
                group.init_next_generation(0)
            return
        assert group.maybe_elect_new_joined_leader()
        before = group.generation
        group.init_next_generation(0)
        assert group.generation == before + 1
        assert group.protocol_name in candidates
        for m in group.members.values():
            group.set_join_waiter(m, None)

    @invariant()
    def counts_are_what_they_count(self) -> None:
        group = self.group
        members = group.members.values()
        assert group.awaiting_join_count == sum(m.awaiting_join for m in members)
        counted = Counter(n for m in members for n, _ in m.protocols)
        assert {n: c for n, c in group.supported.items() if c} == dict(counted)
        assert all(c >= 0 for c in group.supported.values())
        assert group.static_members == {
            m.instance_id: m.member_id for m in members if m.instance_id is not None
        }
        assert (group.leader is None) == (not group.members) or group.leader in group.members
        if group.members:
            assert group.leader in group.members


TestGroupMachine = GroupMachine.TestCase
TestGroupMachine.settings = settings(max_examples=150, stateful_step_count=30, deadline=None)
