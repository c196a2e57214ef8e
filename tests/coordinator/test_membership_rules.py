"""The membership rules without an event loop: given the time, a JoinGroup, a rebalance's
timers, a SyncGroup, a Heartbeat and a LeaveGroup change the group and return their effects
as values (answers, timers, records), which these tests carry out by hand."""

from __future__ import annotations

from typing import Any

from rackwise.common.error_codes import (
    MEMBER_ID_REQUIRED,
    NONE,
    REBALANCE_IN_PROGRESS,
    UNKNOWN_MEMBER_ID,
)
from rackwise.groups.classic import COMPLETING_REBALANCE, EMPTY, PREPARING_REBALANCE, STABLE
from rackwise.groups.classic_effects import (
    Answer,
    CancelTimer,
    Effect,
    JoinRequest,
    StartTimer,
    Store,
)
from rackwise.groups.classic_joins import JoinRules
from rackwise.groups.classic_rebalance import Rebalancer
from rackwise.groups.group_metadata import decode_metadata

T0 = 1_700_000_000_000


class Waiter:
    """A JoinGroup or SyncGroup waiting: the rules only keep it and name it in an Answer."""


def request(member_id: str = "", version: int = 9, session_ms: int = 10_000) -> JoinRequest:
    return JoinRequest(
        group_id="billing",
        member_id=member_id,
        instance_id=None,
        protocol_type="consumer",
        protocols=(("range", b"sub"),),
        session_timeout_ms=session_ms,
        rebalance_timeout_ms=1_000,
        client_id="c",
        client_host="/127.0.0.1",
        version=version,
    )


def answers(effects: list[Effect]) -> dict[Any, dict[str, Any]]:
    return {e.waiter: e.values for e in effects if isinstance(e, Answer)}


def timers(effects: list[Effect]) -> dict[tuple[str, ...], StartTimer]:
    return {e.key: e for e in effects if isinstance(e, StartTimer)}


def rules(initial_delay_ms: int = 3_000, max_size: int = 10) -> tuple[JoinRules, Rebalancer]:
    rebalancer = Rebalancer(initial_delay_ms)
    return JoinRules(max_size, rebalancer), rebalancer


def test_a_new_member_gets_its_id_and_a_session_and_the_new_group_is_stored() -> None:
    joins, _ = rules()
    waiter = Waiter()
    group, effects = joins.join(None, request(session_ms=6_000), waiter, T0)
    assert group is not None and group.state == EMPTY and group.state_timestamp_ms == T0
    answer = answers(effects)[waiter]
    assert answer["error_code"] == MEMBER_ID_REQUIRED
    member_id = answer["member_id"]
    assert member_id in group.pending_join
    session = timers(effects)[("heartbeat", "billing", member_id)]
    assert session.delay_ms == 6_000
    (store,) = [e for e in effects if isinstance(e, Store)]
    assert store.group_id == "billing" and decode_metadata(store.record()).members == ()
    # the session runs out: the pending member is gone, and nothing else happens
    assert session.fire(T0 + 6_000) == []
    assert member_id not in group.pending_join


def test_an_unknown_member_id_to_no_group_is_answered_at_once() -> None:
    joins, _ = rules()
    waiter = Waiter()
    group, effects = joins.join(None, request("c-gone"), waiter, T0)
    assert group is None
    assert effects == [Answer(waiter, answers(effects)[waiter])]
    assert answers(effects)[waiter]["error_code"] == UNKNOWN_MEMBER_ID


def test_the_first_rebalance_waits_its_delay_and_forms_the_generation_when_it_fires() -> None:
    joins, rebalancer = rules(initial_delay_ms=3_000)
    group, effects = joins.join(None, request(), Waiter(), T0)
    assert group is not None
    member_id = answers(effects)[next(iter(answers(effects)))]["member_id"]
    waiter = Waiter()
    _, effects = joins.join(group, request(member_id), waiter, T0 + 5)
    assert group.state == PREPARING_REBALANCE and group.state_timestamp_ms == T0 + 5
    assert waiter not in answers(effects)  # it waits for the generation
    delay = timers(effects)[("join", "billing")]
    assert delay.delay_ms == 3_000
    formed = delay.fire(T0 + 3_005)
    assert group.state == COMPLETING_REBALANCE and group.generation == 1
    assert group.state_timestamp_ms == T0 + 3_005
    answer = answers(formed)[waiter]
    assert (answer["error_code"], answer["generation_id"], answer["leader"]) == (
        NONE,
        1,
        member_id,
    )
    assert CancelTimer(("join", "billing")) in formed
    assert timers(formed)[("sync", "billing")].delay_ms == 1_000

    # the leader's SyncGroup: stored first, then answered, and the group is Stable
    sync_waiter = Waiter()
    effects = rebalancer.sync(
        group, member_id, None, 1, "consumer", "range", {member_id: b"a"}, sync_waiter
    )
    assert sync_waiter not in answers(effects)
    (store,) = [e for e in effects if isinstance(e, Store)]
    assert [m.assignment for m in decode_metadata(store.record()).members] == [b"a"]
    stored = store.then(NONE, T0 + 3_010)
    assert answers(stored)[sync_waiter]["assignment"] == b"a"
    assert group.state == STABLE and group.state_timestamp_ms == T0 + 3_010


def test_a_heartbeat_starts_the_session_again_and_a_leave_starts_a_rebalance() -> None:
    joins, rebalancer = rules(initial_delay_ms=0)
    group, effects = joins.join(None, request(version=3), waiter := Waiter(), T0)
    assert group is not None
    formed = timers(effects)[("join", "billing")].fire(T0)
    member_id = answers(formed)[waiter]["member_id"]
    code, effects = rebalancer.heartbeat(group, member_id, None, 1)
    assert code == NONE
    assert timers(effects)[("heartbeat", "billing", member_id)].delay_ms == 10_000
    assert rebalancer.heartbeat(None, member_id, None, 1) == (UNKNOWN_MEMBER_ID, [])
    # A group the coordinator does not hold: the whole request fails, as Kafka's
    # classicGroupLeave throws UnknownMemberIdException for a group not found.
    assert rebalancer.leave(None, [(member_id, None)], T0 + 7) == (UNKNOWN_MEMBER_ID, [], [])
    code, codes, effects = rebalancer.leave(group, [(member_id, None)], T0 + 7)
    assert (code, codes) == (NONE, [NONE])
    assert group.state == EMPTY and group.generation == 2 and group.state_timestamp_ms == T0 + 7
    assert any(isinstance(e, Store) for e in effects)  # the empty group's metadata


def test_a_rebalance_answers_a_waiting_sync_with_rebalance_in_progress() -> None:
    joins, rebalancer = rules(initial_delay_ms=0)
    group, effects = joins.join(None, request(version=3), waiter := Waiter(), T0)
    assert group is not None
    formed = timers(effects)[("join", "billing")].fire(T0)
    leader = answers(formed)[waiter]["member_id"]
    sync_waiter = Waiter()
    rebalancer.sync(group, leader, None, 1, "consumer", "range", {}, sync_waiter)
    assert group.state == COMPLETING_REBALANCE
    effects = rebalancer.prepare_rebalance(group, "a test", T0 + 1)
    assert answers(effects)[sync_waiter]["error_code"] == REBALANCE_IN_PROGRESS
    assert group.state == PREPARING_REBALANCE and group.state_timestamp_ms == T0 + 1
    assert timers(effects)[("join", "billing")].delay_ms == 1_000
