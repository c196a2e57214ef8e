"""The consumer group coordinator's answers, one rule at a time, with Kafka's error codes and
messages (``GroupMetadataManager`` and ``ConsumerGroup``)."""

from __future__ import annotations

import uuid
from dataclasses import replace

import pytest

from rackwise.assignors.model import PartitionInfo
from rackwise.common.error_codes import (
    FENCED_MEMBER_EPOCH,
    GROUP_ID_NOT_FOUND,
    GROUP_MAX_SIZE_REACHED,
    INVALID_REGULAR_EXPRESSION,
    INVALID_REQUEST,
    NONE,
    STALE_MEMBER_EPOCH,
    UNKNOWN_MEMBER_ID,
    UNRELEASED_INSTANCE_ID,
    UNSUPPORTED_ASSIGNOR,
)
from rackwise.groups.consumer_coordinator import ConsumerGroups
from rackwise.groups.consumer_group import RECONCILING, STABLE_STATE
from rackwise.groups.consumer_member import UNRELEASED_PARTITIONS, UNREVOKED_PARTITIONS
from rackwise.groups.consumer_target import compute
from rackwise.groups.consumer_types import (
    REBALANCE,
    SESSION,
    ConsumerGroupConfig,
    Heartbeat,
    HeartbeatAnswer,
    TopicsView,
    TopicView,
)

T = uuid.UUID(int=0xA)
U = uuid.UUID(int=0xB)


def view(
    partitions: int = 4, version: int = 1, racks: tuple[str, ...] = ("/dc1/r1",)
) -> TopicsView:
    return TopicsView(
        version,
        {
            "t": TopicView("t", T, tuple(PartitionInfo(racks) for _ in range(partitions))),
            "u": TopicView("u", U, (PartitionInfo(racks),)),
        },
    )


def join(member: str = "a", **changes: object) -> Heartbeat:
    base = Heartbeat("g", member, 0, rebalance_timeout_ms=5000, topic_names=("t",), owned=())
    return replace(base, **changes)  # type: ignore[arg-type]


def owned(*partitions: int) -> tuple[tuple[uuid.UUID, tuple[int, ...]], ...]:
    return ((T, partitions),)


def answer(
    c: ConsumerGroups, request: Heartbeat, now: int = 0, v: TopicsView | None = None
) -> HeartbeatAnswer:
    out = c.heartbeat(request, now, v or view())
    assert out.answer is not None
    return out.answer


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (join(group_id=" "), "GroupId can't be empty."),
        (join(instance_id=""), "InstanceId can't be empty."),
        (join(rack_id=""), "RackId can't be empty."),
        (join(member_epoch=3, member_id=""), "MemberId can't be empty."),
        (join(rebalance_timeout_ms=-1), "RebalanceTimeoutMs must be provided in first request."),
        (join(owned=owned(0)), "TopicPartitions must be empty when (re-)joining."),
        (join(owned=None), "TopicPartitions must be empty when (re-)joining."),
        (
            join(topic_names=()),
            "SubscribedTopicNames or SubscribedTopicRegex must be set in first request.",
        ),
        (join(member_epoch=-2), "InstanceId can't be null."),
        (join(member_epoch=-3), "MemberEpoch is invalid."),
    ],
)
def test_invalid_requests(request_: Heartbeat, message: str) -> None:
    got = answer(ConsumerGroups(), request_)
    assert (got.error_code, got.error_message) == (INVALID_REQUEST, message)


def test_unsupported_assignor_names_the_supported_ones() -> None:
    c = ConsumerGroups(ConsumerGroupConfig(assignors=("uniform", "range")))
    got = answer(c, join(server_assignor="sticky"))
    assert got.error_code == UNSUPPORTED_ASSIGNOR
    assert (
        got.error_message
        == "ServerAssignor sticky is not supported. Supported assignors: uniform, range."
    )


def test_a_bad_regex() -> None:
    got = answer(ConsumerGroups(), join(topic_names=None, topic_regex="t("))
    assert got.error_code == INVALID_REGULAR_EXPRESSION
    assert got.error_message is not None and got.error_message.startswith(
        "SubscribedTopicRegex `t(`"
    )


def test_unknown_group_and_member() -> None:
    c = ConsumerGroups()
    got = answer(c, Heartbeat("g", "a", 1, owned=()))
    assert (got.error_code, got.error_message) == (
        GROUP_ID_NOT_FOUND,
        "Consumer group g not found.",
    )
    answer(c, join("a"))
    got = answer(c, Heartbeat("g", "b", 1, owned=()))
    assert (got.error_code, got.error_message) == (
        UNKNOWN_MEMBER_ID,
        "Member b is not a member of group g.",
    )


def test_fenced_member_epoch() -> None:
    c = ConsumerGroups()
    assert answer(c, join("a")).member_epoch == 1
    got = answer(c, Heartbeat("g", "a", 5, owned=owned(0, 1, 2, 3)))
    assert got.error_code == FENCED_MEMBER_EPOCH
    assert got.error_message == (
        "The consumer group member has a greater member epoch (5) than the one known by the "
        "group coordinator (1). The member must abandon all its partitions and rejoin."
    )


def test_group_max_size() -> None:
    c = ConsumerGroups(ConsumerGroupConfig(max_size=1))
    answer(c, join("a"))
    got = answer(c, join("b"))
    assert got.error_code == GROUP_MAX_SIZE_REACHED
    assert got.error_message == "The consumer group has reached its maximum capacity of 1 members."
    assert answer(c, Heartbeat("g", "a", 1, owned=owned(0, 1, 2, 3))).error_code == NONE


def test_revoke_before_assign_and_the_timers() -> None:
    c = ConsumerGroups()
    first = answer(c, join("a"))
    assert first.assignment == {T: frozenset({0, 1, 2, 3})}
    assert first.heartbeat_interval_ms == 5000
    assert answer(c, join("b")).assignment == {}
    out = c.heartbeat(Heartbeat("g", "a", 1, owned=owned(0, 1, 2, 3)), 100, view())
    assert out.answer is not None and out.answer.member_epoch == 1
    kept = out.answer.assignment
    assert kept is not None and len(kept[T]) == 2
    assert c.groups["g"].members["a"].state == UNREVOKED_PARTITIONS
    rebalance = [t for t in out.timers if t.kind == REBALANCE]
    assert rebalance[0].deadline_ms == 5100 and rebalance[0].epoch == 1
    assert [t.deadline_ms for t in out.timers if t.kind == SESSION] == [45100]
    assert c.groups["g"].members["b"].state == UNRELEASED_PARTITIONS
    assert c.groups["g"].state == RECONCILING
    answer(c, Heartbeat("g", "a", 1, owned=((T, tuple(sorted(kept[T]))),)))
    got = answer(c, Heartbeat("g", "b", 2, owned=()))
    assert got.assignment == {T: frozenset({0, 1, 2, 3}) - kept[T]}
    assert c.groups["g"].state == STABLE_STATE


def test_a_lost_answer_is_accepted_with_the_previous_epoch() -> None:
    c = ConsumerGroups()
    answer(c, join("a"))
    answer(c, join("a2", topic_names=("u",)))  # bumps to epoch 2
    got = answer(c, Heartbeat("g", "a", 1, owned=owned(0, 1, 2, 3)))
    assert got.error_code == NONE and got.member_epoch == 2
    got = answer(c, Heartbeat("g", "a", 1, owned=owned(0, 1, 2, 3)))
    assert got.error_code == NONE  # previous epoch, owning a subset of its assignment
    got = answer(c, Heartbeat("g", "a", 0 + 1, owned=owned(0, 1, 2, 3, 4)))
    assert got.error_code == FENCED_MEMBER_EPOCH


def test_static_member_leaves_for_a_while_and_comes_back() -> None:
    c = ConsumerGroups()
    answer(c, join("a", instance_id="i"))
    assert answer(c, Heartbeat("g", "a", -2, instance_id="i")).member_epoch == -2
    got = answer(c, join("a2", instance_id="i"))
    assert got.error_code == NONE
    assert got.assignment == {T: frozenset({0, 1, 2, 3})}
    assert set(c.groups["g"].members) == {"a2"}
    assert c.groups["g"].epoch == 1  # no new rebalance
    got = answer(c, join("a3", instance_id="i"))
    assert got.error_code == UNRELEASED_INSTANCE_ID
    assert got.error_message == (
        "Static member a3 with instance id i cannot join the group because the instance id is "
        "owned by a2 member."
    )


def test_session_expiry_fences_and_bumps_the_epoch() -> None:
    c = ConsumerGroups()
    out = c.heartbeat(join("a"), 0, view())
    timer = next(t for t in out.timers if t.kind == SESSION)
    after = c.expire(timer, 45000, view())
    assert "a" not in c.groups["g"].members and c.groups["g"].epoch == 2
    assert len(after.records) == 5  # three tombstones, the topics (none now), the epoch


def test_partitions_added_bump_the_epoch_and_regexes_resolve() -> None:
    c = ConsumerGroups()
    answer(c, join("a", topic_names=None, topic_regex="[tu]"))
    assert c.groups["g"].members["a"].assigned == {T: frozenset(range(4)), U: frozenset({0})}
    got = answer(c, Heartbeat("g", "a", 1, owned=()), v=view(partitions=6, version=2))
    assert got.member_epoch == 2
    assert got.assignment is not None and got.assignment[T] == frozenset(range(6))


def test_leader_moves_wait_for_the_damping_interval() -> None:
    c = ConsumerGroups(ConsumerGroupConfig(leader_rack_damping_ms=1000))
    here = view(racks=("/dc1/r1", "/dc2/r1"))
    answer(c, join("a", server_assignor="leader-rack-aware-range", rack_id="/dc1/r1"), v=here)
    moved = view(version=2, racks=("/dc2/r1", "/dc1/r1"))  # the same replicas, a new leader
    hb = Heartbeat("g", "a", 1, owned=owned(0, 1, 2, 3))
    assert answer(c, hb, now=100, v=moved).member_epoch == 1
    assert answer(c, hb, now=600, v=moved).member_epoch == 1
    assert answer(c, hb, now=1100, v=moved).member_epoch == 2
    # a leader that moves and comes back within the interval changes nothing
    hb = replace(hb, member_epoch=2)
    assert answer(c, hb, now=1200, v=replace(here, version=3)).member_epoch == 2
    assert answer(c, hb, now=1300, v=replace(moved, version=4)).member_epoch == 2
    assert answer(c, hb, now=2400, v=replace(moved, version=4)).member_epoch == 2


def test_offset_commits_check_the_member_epoch() -> None:
    c = ConsumerGroups()
    answer(c, join("a"))
    assert c.commit_error("g", "a", 1) is None
    stale = c.commit_error("g", "a", 0)
    assert stale is not None and stale.code == STALE_MEMBER_EPOCH
    assert str(stale) == "The received member epoch 0 does not match the expected member epoch 1."
    unknown = c.commit_error("g", "b", 1)
    assert unknown is not None and unknown.code == UNKNOWN_MEMBER_ID
    assert c.commit_error("other", "", -1) is None


def test_a_version_0_join_gets_a_member_id_as_kafka_makes_them() -> None:
    got = answer(ConsumerGroups(), join(""))
    assert got.error_code == NONE and got.member_id is not None
    assert len(got.member_id) == 22 and "=" not in got.member_id


def test_a_large_groups_target_is_a_job_whose_result_is_an_event_of_its_own() -> None:
    c = ConsumerGroups(ConsumerGroupConfig(offload_partitions=0))
    first = c.heartbeat(join("a"), 0, view())
    # no target yet: a is answered the group epoch, waiting for its partitions
    assert first.answer is not None and first.answer.member_epoch == 1
    assert first.answer.assignment == {}
    assert c.groups["g"].members["a"].state == UNRELEASED_PARTITIONS
    [job] = first.jobs
    assert answer(c, Heartbeat("g", "a", 1, owned=())).member_epoch == 1  # still waiting
    c.assigned(compute(job), view())
    assert answer(c, Heartbeat("g", "a", 1, owned=())).assignment == {T: frozenset(range(4))}
    out = c.heartbeat(join("b"), 0, view())
    assert out.answer is not None and out.answer.member_epoch == 1  # the previous target's
    assert out.answer.assignment == {}
    [job] = out.jobs
    assert (job.epoch, c.groups["g"].state) == (2, "Assigning")
    # a's heartbeats go on against the previous target: it keeps its four partitions
    again = c.heartbeat(Heartbeat("g", "a", 1, owned=owned(0, 1, 2, 3)), 0, view())
    assert again.jobs == [] and again.answer is not None and again.answer.error_code == NONE
    installed = c.assigned(compute(job), view())
    assert c.groups["g"].target_epoch == 2 and installed.jobs == []
    assert {len(c.groups["g"].target(m).get(T, ())) for m in "ab"} == {2}
    assert answer(c, Heartbeat("g", "a", 1, owned=owned(0, 1, 2, 3))).member_epoch == 1


def test_a_result_for_an_epoch_that_moved_on_is_dropped_and_asked_again() -> None:
    c = ConsumerGroups(ConsumerGroupConfig(offload_partitions=0))
    [first] = c.heartbeat(join("a"), 0, view()).jobs
    c.assigned(compute(first), view())
    [old] = c.heartbeat(join("b"), 0, view()).jobs
    assert c.heartbeat(join("c"), 0, view()).jobs == []  # one job out per group
    again = c.assigned(compute(old), view())
    assert again.records == [] and c.groups["g"].target_epoch == 1
    [new] = again.jobs
    assert new.epoch == c.groups["g"].epoch == 3
    assert set(new.members) == {"a", "b", "c"}
    assert c.assigned(compute(old), view()).records == []  # not out any more
    c.assigned(compute(new), view())
    assert c.groups["g"].target_epoch == 3


def test_a_result_for_a_static_member_replaced_meanwhile_is_dropped() -> None:
    c = ConsumerGroups(ConsumerGroupConfig(offload_partitions=0))
    [first] = c.heartbeat(join("a", instance_id="i1"), 0, view()).jobs
    c.assigned(compute(first), view())
    [out] = c.heartbeat(join("b"), 0, view()).jobs
    c.heartbeat(Heartbeat("g", "a", -2, instance_id="i1"), 0, view())
    assert answer(c, join("a2", instance_id="i1")).error_code == NONE  # a2 takes a's place
    assert c.groups["g"].epoch == out.epoch  # a replaced static member bumps no epoch
    again = c.assigned(compute(out), view())
    assert again.records == [] and "a" not in c.groups["g"].targets
    [new] = again.jobs
    assert set(new.members) == {"a2", "b"}
    c.assigned(compute(new), view())
    assert set(c.groups["g"].targets) == {"a2", "b"}
