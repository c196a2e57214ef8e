"""The coordinator's classic group membership on an event loop, with the partition's log
replaced by a list (the process and client tests run it for real): joining, MEMBER_ID_REQUIRED,
rebalances, SyncGroup waiting for the leader, sessions and SyncGroups that run out, leaving,
static members, a failed store, losing the partition, and groups loaded from their record."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest

from rackwise.common.error_codes import (
    FENCED_INSTANCE_ID,
    GROUP_MAX_SIZE_REACHED,
    ILLEGAL_GENERATION,
    MEMBER_ID_REQUIRED,
    NONE,
    NOT_COORDINATOR,
    REBALANCE_IN_PROGRESS,
    UNKNOWN_MEMBER_ID,
)
from rackwise.coordinator.membership import GroupMembership
from rackwise.groups.classic import (
    COMPLETING_REBALANCE,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    ClassicGroup,
    stored,
)
from rackwise.groups.classic_effects import JoinRequest
from rackwise.groups.group_metadata import decode_metadata, encode_metadata
from rackwise.groups.offsets import (
    CommittedOffset,
    GroupOffsets,
    decode_key,
    encode_group_key,
    encode_key,
    encode_value,
)
from rackwise.node.data_config import DataPathConfig

T = TypeVar("T")
INDEX = 7
COORDINATOR_NOT_AVAILABLE = 15


class Log:
    """The partition: what was appended, replayed into its state as the coordinator does."""

    def __init__(self) -> None:
        self.records: list[tuple[bytes, bytes | None]] = []
        self.fail_with = NONE
        self.delay_s = 0.0

    async def append(
        self, index: int, records: list[tuple[bytes, bytes | None]], state: GroupOffsets
    ) -> int:
        assert index == INDEX
        await asyncio.sleep(self.delay_s)
        if self.fail_with != NONE:
            return self.fail_with
        self.records.extend(records)
        for key, value in records:
            state.replay(key, value)
        return NONE

    def stored(self, group: str) -> list[Any]:
        return [
            decode_metadata(value)
            for key, value in self.records
            if value is not None and decode_key(key) == group
        ]


def membership(**overrides: str) -> tuple[GroupMembership, Log, GroupOffsets]:
    props = {
        "group.min.session.timeout.ms": "0",
        "group.initial.rebalance.delay.ms": "0",
        **overrides,
    }
    log = Log()
    return GroupMembership(DataPathConfig.from_properties(props), log.append), log, GroupOffsets()


def join(
    member_id: str = "",
    *,
    group: str = "billing",
    protocols: tuple[tuple[str, bytes], ...] = (("range", b"sub"),),
    session_ms: int = 10_000,
    rebalance_ms: int = 1_000,
    instance: str | None = None,
    client: str = "c",
    version: int = 9,
) -> JoinRequest:
    return JoinRequest(
        group_id=group,
        member_id=member_id,
        instance_id=instance,
        protocol_type="consumer",
        protocols=protocols,
        session_timeout_ms=session_ms,
        rebalance_timeout_ms=rebalance_ms,
        client_id=client,
        client_host="/127.0.0.1",
        version=version,
    )


def run(test: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(asyncio.wait_for(test(), 20))


async def member_id(groups: GroupMembership, state: GroupOffsets, **kw: Any) -> str:
    """Join as a new member of JoinGroup v4+: the MEMBER_ID_REQUIRED answer gives the id."""
    answer = await groups.join(INDEX, state, join(**kw))
    assert answer["error_code"] == MEMBER_ID_REQUIRED
    assert answer["member_id"].startswith(kw.get("client", "c") + "-")
    return str(answer["member_id"])


async def form(
    groups: GroupMembership, state: GroupOffsets, clients: list[str], **kw: Any
) -> list[dict[str, Any]]:
    """``clients`` join together; their JoinGroup answers, in the same order."""
    ids = [await member_id(groups, state, client=c, **kw) for c in clients]
    return list(await asyncio.gather(*(groups.join(INDEX, state, join(m, **kw)) for m in ids)))


async def sync(
    groups: GroupMembership,
    state: GroupOffsets,
    member: str,
    generation: int,
    assignments: dict[str, bytes] | None = None,
    group: str = "billing",
) -> dict[str, Any]:
    return await groups.sync(
        INDEX, state, group, member, None, generation, "consumer", "range", assignments or {}
    )


def test_two_members_form_a_generation_and_get_the_leaders_assignment() -> None:
    async def scenario() -> None:
        groups, log, state = membership()
        a, b = await form(groups, state, ["a", "b"])
        assert a["error_code"] == b["error_code"] == NONE
        assert a["generation_id"] == b["generation_id"] == 1
        assert a["leader"] == b["leader"] == a["member_id"]
        assert (a["protocol_type"], a["protocol_name"]) == ("consumer", "range")
        # the leader alone gets every member's subscription
        assert sorted(m["member_id"] for m in a["members"]) == sorted(
            [a["member_id"], b["member_id"]]
        )
        assert all(m["metadata"] == b"sub" for m in a["members"]) and b["members"] == []
        group = groups.group(INDEX, state, "billing")
        assert group is not None and group.state == COMPLETING_REBALANCE
        follower = asyncio.ensure_future(sync(groups, state, b["member_id"], 1))
        await asyncio.sleep(0.01)
        assert not follower.done()  # waits for the leader's assignment
        assignments = {a["member_id"]: b"A", b["member_id"]: b"B"}
        leader = await sync(groups, state, a["member_id"], 1, assignments)
        assert (leader["error_code"], leader["assignment"]) == (NONE, b"A")
        assert ((await follower)["error_code"], (await follower)["assignment"]) == (NONE, b"B")
        assert group.state == STABLE
        # the generation was stored before anyone was answered
        last = log.stored("billing")[-1]
        assert (last.generation, last.protocol, last.leader) == (1, "range", a["member_id"])
        assert {m.member_id: m.assignment for m in last.members} == assignments
        # a SyncGroup in Stable gets the member's assignment at once
        again = await sync(groups, state, b["member_id"], 1)
        assert again["assignment"] == b"B"

    run(scenario)


def test_a_new_member_starts_a_rebalance_the_others_learn_from_their_heartbeats() -> None:
    async def scenario() -> None:
        groups, _, state = membership()
        (a,) = await form(groups, state, ["a"])
        await sync(groups, state, a["member_id"], 1, {a["member_id"]: b"A"})
        assert groups.heartbeat(INDEX, state, "billing", a["member_id"], None, 1) == NONE
        b_id = await member_id(groups, state, client="b")
        b_join = asyncio.ensure_future(groups.join(INDEX, state, join(b_id)))
        await asyncio.sleep(0.01)
        assert not b_join.done()  # waits for a to rejoin
        code = groups.heartbeat(INDEX, state, "billing", a["member_id"], None, 1)
        assert code == REBALANCE_IN_PROGRESS
        a2 = await groups.join(INDEX, state, join(a["member_id"]))
        b2 = await b_join
        assert a2["generation_id"] == b2["generation_id"] == 2
        assert a2["leader"] == a["member_id"]
        # the old generation is over
        assert groups.heartbeat(INDEX, state, "billing", a["member_id"], None, 1) == (
            ILLEGAL_GENERATION
        )

    run(scenario)


def test_a_member_whose_session_runs_out_is_removed_and_the_group_rebalances() -> None:
    async def scenario() -> None:
        groups, _, state = membership()
        a, b = await form(groups, state, ["a", "b"], session_ms=300)
        assignments = {a["member_id"]: b"A", b["member_id"]: b"B"}
        await asyncio.gather(
            sync(groups, state, a["member_id"], 1, assignments),
            sync(groups, state, b["member_id"], 1),
        )
        group = groups.group(INDEX, state, "billing")
        assert group is not None
        # a keeps heartbeating, b goes silent
        for _ in range(6):
            await asyncio.sleep(0.1)
            code = groups.heartbeat(INDEX, state, "billing", a["member_id"], None, 1)
            if code == REBALANCE_IN_PROGRESS:
                break
        assert code == REBALANCE_IN_PROGRESS
        assert b["member_id"] not in group.members
        rejoined = await groups.join(INDEX, state, join(a["member_id"], session_ms=300))
        assert (rejoined["generation_id"], [m["member_id"] for m in rejoined["members"]]) == (
            2,
            [a["member_id"]],
        )
        # b's late heartbeat is refused: it must join again
        assert groups.heartbeat(INDEX, state, "billing", b["member_id"], None, 1) == (
            UNKNOWN_MEMBER_ID
        )

    run(scenario)


def test_a_member_id_handed_out_and_never_used_expires() -> None:
    async def scenario() -> None:
        groups, _, state = membership()
        pending = await member_id(groups, state, session_ms=100)
        group = groups.group(INDEX, state, "billing")
        assert group is not None and pending in group.pending_join
        await asyncio.sleep(0.3)
        assert pending not in group.pending_join
        late = await groups.join(INDEX, state, join(pending))
        assert late["error_code"] == UNKNOWN_MEMBER_ID

    run(scenario)


def test_leaving_a_group_that_is_not_there_is_unknown_member_id_for_the_request() -> None:
    # Kafka's classicGroupLeave: a group it does not have fails the request with
    # UNKNOWN_MEMBER_ID; a group of committed offsets only is an Empty classic group, whose
    # members are each unknown.
    groups, _, state = membership()
    assert groups.leave(INDEX, state, "nobody", [("m", None)]) == (UNKNOWN_MEMBER_ID, [])
    state.replay(encode_key("simple", "t", 0), encode_value(CommittedOffset(5)))
    assert groups.leave(INDEX, state, "simple", [("m", None), ("n", None)]) == (
        NONE,
        [UNKNOWN_MEMBER_ID, UNKNOWN_MEMBER_ID],
    )


def test_leaving_rebalances_and_the_last_one_out_stores_an_empty_group() -> None:
    async def scenario() -> None:
        groups, log, state = membership()
        a, b = await form(groups, state, ["a", "b"])
        assignments = {a["member_id"]: b"A", b["member_id"]: b"B"}
        await asyncio.gather(
            sync(groups, state, a["member_id"], 1, assignments),
            sync(groups, state, b["member_id"], 1),
        )
        code, codes = groups.leave(
            INDEX, state, "billing", [(b["member_id"], None), ("stranger", None)]
        )
        assert (code, codes) == (NONE, [NONE, UNKNOWN_MEMBER_ID])
        group = groups.group(INDEX, state, "billing")
        assert group is not None and group.state == PREPARING_REBALANCE
        again = await groups.join(INDEX, state, join(a["member_id"]))
        assert again["generation_id"] == 2 and len(again["members"]) == 1
        await sync(groups, state, a["member_id"], 2, {a["member_id"]: b"A"})
        assert groups.leave(INDEX, state, "billing", [(a["member_id"], None)]) == (NONE, [NONE])
        assert (group.state, group.generation) == (EMPTY, 3)
        await asyncio.sleep(0.01)  # the empty group's record is written in the background
        last = log.stored("billing")[-1]
        assert (last.generation, last.members, last.protocol) == (3, (), None)

    run(scenario)


def test_a_member_that_never_syncs_is_removed() -> None:
    async def scenario() -> None:
        groups, _, state = membership()
        a, b = await form(groups, state, ["a", "b"], rebalance_ms=200)
        group = groups.group(INDEX, state, "billing")
        assert group is not None and set(group.members) == {a["member_id"], b["member_id"]}
        # neither syncs; after the rebalance timeout both are dropped and the group empties
        await asyncio.sleep(0.4)
        assert group.members == {}
        assert group.state == EMPTY

    run(scenario)


def test_a_store_that_fails_answers_every_sync_with_the_error_and_rebalances() -> None:
    async def scenario() -> None:
        groups, log, state = membership()
        a, b = await form(groups, state, ["a", "b"])
        log.fail_with = COORDINATOR_NOT_AVAILABLE
        follower = asyncio.ensure_future(sync(groups, state, b["member_id"], 1))
        leader = await sync(groups, state, a["member_id"], 1, {a["member_id"]: b"A"})
        assert leader["error_code"] == (await follower)["error_code"] == COORDINATOR_NOT_AVAILABLE
        group = groups.group(INDEX, state, "billing")
        assert group is not None and group.state == PREPARING_REBALANCE
        assert all(m.assignment == b"" for m in group.members.values())

    run(scenario)


def test_losing_the_partition_answers_waiting_requests_not_coordinator() -> None:
    async def scenario() -> None:
        groups, _, state = membership()
        (a,) = await form(groups, state, ["a"])
        b_id = await member_id(groups, state, client="b")
        waiting = asyncio.ensure_future(groups.join(INDEX, state, join(b_id)))
        await asyncio.sleep(0.01)
        groups.unloaded(INDEX)
        assert (await waiting)["error_code"] == NOT_COORDINATOR
        # the next request sees the partition anew (as after a reload): the group is gone
        assert groups.heartbeat(INDEX, GroupOffsets(), "billing", a["member_id"], None, 1) == (
            UNKNOWN_MEMBER_ID
        )

    run(scenario)


def test_a_loaded_group_is_stable_and_its_silent_members_expire() -> None:
    async def scenario() -> None:
        groups, log, state = membership()
        a, b = await form(groups, state, ["a", "b"], session_ms=300)
        assignments = {a["member_id"]: b"A", b["member_id"]: b"B"}
        await asyncio.gather(
            sync(groups, state, a["member_id"], 1, assignments),
            sync(groups, state, b["member_id"], 1),
        )
        # another broker loads the partition from the records alone
        other, _, loaded = membership()
        for key, value in log.records:
            loaded.replay(key, value)
        other.loaded(INDEX, loaded)
        group = other.group(INDEX, loaded, "billing")
        assert group is not None
        assert (group.state, group.generation, group.leader) == (STABLE, 1, a["member_id"])
        assert {m: group.members[m].assignment for m in group.members} == assignments
        back = await sync(other, loaded, b["member_id"], 1)
        assert back["assignment"] == b"B"
        for _ in range(5):  # a heartbeats, b does not
            await asyncio.sleep(0.1)
            other.heartbeat(INDEX, loaded, "billing", a["member_id"], None, 1)
        assert list(group.members) == [a["member_id"]]
        await other.close()

    run(scenario)


def test_a_static_member_that_joins_again_fences_its_old_id() -> None:
    async def scenario() -> None:
        groups, _, state = membership()
        first = await groups.join(INDEX, state, join(instance="pod-1", client="p"))
        assert first["error_code"] == NONE  # static members need no second JoinGroup
        assert first["member_id"].startswith("pod-1-")
        await sync(groups, state, first["member_id"], 1, {first["member_id"]: b"P"})
        # restarted (a new member id), same protocols: no rebalance, its assignment kept
        second = await groups.join(INDEX, state, join(instance="pod-1", client="p"))
        assert second["error_code"] == NONE and second["member_id"] != first["member_id"]
        assert second["generation_id"] == 1
        assert second["skip_assignment"] is True  # the leader keeps the assignment (KIP-814)
        group = groups.group(INDEX, state, "billing")
        assert group is not None and group.state == STABLE
        assert list(group.members) == [second["member_id"]] and group.leader == second["member_id"]
        again = await sync(groups, state, second["member_id"], 1)
        assert again["assignment"] == b"P"
        old = groups.heartbeat(INDEX, state, "billing", first["member_id"], "pod-1", 1)
        assert old == FENCED_INSTANCE_ID
        code, codes = groups.leave(INDEX, state, "billing", [("", "pod-1")])
        assert (code, codes) == (NONE, [NONE])
        assert group.members == {}

    run(scenario)


def test_a_static_member_replaced_while_a_store_fails_gets_its_old_id_back() -> None:
    async def scenario() -> None:
        groups, log, state = membership()
        first = await groups.join(INDEX, state, join(instance="pod-1", client="p", version=5))
        await sync(groups, state, first["member_id"], 1, {first["member_id"]: b"P"})
        log.fail_with = COORDINATOR_NOT_AVAILABLE
        second = await groups.join(INDEX, state, join(instance="pod-1", client="p", version=5))
        assert (second["error_code"], second["member_id"]) == (COORDINATOR_NOT_AVAILABLE, "")
        group = groups.group(INDEX, state, "billing")
        assert group is not None and list(group.members) == [first["member_id"]]
        assert groups.heartbeat(INDEX, state, "billing", first["member_id"], "pod-1", 1) == NONE

    run(scenario)


def test_a_static_member_replaced_while_completing_a_rebalance_starts_another() -> None:
    async def scenario() -> None:
        groups, _, state = membership()
        first = await groups.join(INDEX, state, join(instance="pod-1", client="p"))
        group = groups.group(INDEX, state, "billing")
        assert group is not None and group.state == COMPLETING_REBALANCE
        second = await groups.join(INDEX, state, join(instance="pod-1", client="p"))
        assert (second["error_code"], second["generation_id"]) == (NONE, 2)
        assert second["member_id"] != first["member_id"]

    run(scenario)


def test_join_group_before_v4_joins_without_a_second_request() -> None:
    async def scenario() -> None:
        groups, _, state = membership()
        answer = await groups.join(INDEX, state, join(version=3))
        assert answer["error_code"] == NONE and answer["generation_id"] == 1

    run(scenario)


def test_the_group_size_is_bounded() -> None:
    async def scenario() -> None:
        groups, _, state = membership(**{"group.max.size": "1"})
        (a,) = await form(groups, state, ["a"])
        refused = await groups.join(INDEX, state, join(client="b"))
        assert (refused["error_code"], refused["member_id"]) == (GROUP_MAX_SIZE_REACHED, "")
        group = groups.group(INDEX, state, "billing")
        assert group is not None and list(group.members) == [a["member_id"]]

    run(scenario)


def test_a_member_that_rejoins_with_the_same_protocols_gets_its_generation_back() -> None:
    async def scenario() -> None:
        groups, _, state = membership()
        a, b = await form(groups, state, ["a", "b"])
        # b lost its JoinGroup answer and asks again: no new rebalance
        again = await groups.join(INDEX, state, join(b["member_id"]))
        assert (again["generation_id"], again["leader"]) == (1, a["member_id"])
        group = groups.group(INDEX, state, "billing")
        assert group is not None and group.state == COMPLETING_REBALANCE
        # with other protocols it starts one
        changed = asyncio.ensure_future(
            groups.join(INDEX, state, join(b["member_id"], protocols=(("range", b"new"),)))
        )
        await asyncio.sleep(0.01)
        assert group.state == PREPARING_REBALANCE
        rejoin = await groups.join(INDEX, state, join(a["member_id"]))
        assert rejoin["generation_id"] == (await changed)["generation_id"] == 2

    run(scenario)


def test_a_stored_group_that_does_not_parse_is_skipped() -> None:
    async def scenario() -> None:
        groups, _, state = membership()
        state.replay(encode_group_key("broken"), b"\x00\x09")
        state.replay(encode_group_key("fine"), encode_metadata(stored(ClassicGroup("fine"))))
        groups.loaded(INDEX, state)
        assert groups.group(INDEX, state, "broken") is None
        assert groups.group(INDEX, state, "fine") is not None

    run(scenario)


@pytest.mark.parametrize("rejoin_first", [True, False])
def test_the_first_rebalance_waits_for_the_initial_delay(rejoin_first: bool) -> None:
    async def scenario() -> None:
        groups, _, state = membership(**{"group.initial.rebalance.delay.ms": "150"})
        a_id = await member_id(groups, state, client="a")
        started = asyncio.get_running_loop().time()
        a = asyncio.ensure_future(groups.join(INDEX, state, join(a_id, rebalance_ms=5_000)))
        if rejoin_first:
            await asyncio.sleep(0.1)
            b_id = await member_id(groups, state, client="b")
            b = await groups.join(INDEX, state, join(b_id, rebalance_ms=5_000))
            assert b["generation_id"] == 1
        answer = await a
        waited = asyncio.get_running_loop().time() - started
        assert answer["generation_id"] == 1
        assert len(answer["members"]) == (2 if rejoin_first else 1)
        # a member arriving during the delay extends it by another delay
        assert waited >= (0.25 if rejoin_first else 0.15)

    run(scenario)
