"""The classic groups of one partition, pure (ClassicGroups): its outcomes as data (answers,
timers to set, records to write), driven here by hand with a clock of our own."""

from __future__ import annotations

from typing import Any

from rackwise.common.error_codes import FENCED_INSTANCE_ID, MEMBER_ID_REQUIRED, NONE
from rackwise.groups.classic import STABLE
from rackwise.groups.classic_coordinator import ClassicGroups, ClassicOutcome
from rackwise.groups.classic_effects import JoinRequest
from rackwise.groups.group_metadata import decode_metadata
from rackwise.groups.offsets import decode_key

T0 = 1_700_000_000_000


def request(member_id: str = "", instance: str | None = None) -> JoinRequest:
    return JoinRequest(
        group_id="billing",
        member_id=member_id,
        instance_id=instance,
        protocol_type="consumer",
        protocols=(("range", b"sub"),),
        session_timeout_ms=10_000,
        rebalance_timeout_ms=1_000,
        client_id="c",
        client_host="/127.0.0.1",
        version=9,
    )


def answer(out: ClassicOutcome, waiter: object) -> dict[str, Any]:
    (found,) = [a for w, a in out.answers if w is waiter]
    return found


def stable_static_group() -> tuple[ClassicGroups, str]:
    """pod-1 alone in a Stable generation 1 (initial delay 0, every write acknowledged)."""
    groups = ClassicGroups(0, max_size=10)
    out = groups.join(request(instance="pod-1"), "j1", T0)
    (timer,) = [t for t in out.timers if t.key == ("join", "billing")]
    assert timer.delay_ms == 0
    formed = groups.fire(timer.key, T0)
    joined = answer(formed, "j1")
    member_id = joined["member_id"]
    out = groups.sync(
        "billing", member_id, "pod-1", 1, "consumer", "range", {member_id: b"a"}, "s1"
    )
    (write,) = out.writes
    assert decode_key(write.records[0][0]) == "billing"
    assert answer(groups.written(write.token, NONE, T0), "s1")["assignment"] == b"a"
    return groups, member_id


def test_timers_and_writes_are_data_and_a_write_continues_when_it_is_acknowledged() -> None:
    groups = ClassicGroups(3_000, max_size=10)
    out = groups.join(request(), "w1", T0)
    assert answer(out, "w1")["error_code"] == MEMBER_ID_REQUIRED
    member_id = answer(out, "w1")["member_id"]
    assert [(t.key, t.delay_ms) for t in out.timers] == [
        (("heartbeat", "billing", member_id), 10_000)
    ]
    (write,) = out.writes
    assert decode_metadata(write.records[0][1] or b"").members == ()
    out = groups.join(request(member_id), "w2", T0 + 1)
    assert out.answers == []  # it waits for the first rebalance's delay
    delay = [t for t in out.timers if t.key == ("join", "billing")]
    assert [t.delay_ms for t in delay] == [3_000]
    assert answer(groups.fire(("join", "billing"), T0 + 3_001), "w2")["generation_id"] == 1
    assert groups.fire(("join", "billing"), T0 + 3_002).answers == []  # fired once


def test_a_deleted_group_created_again_does_not_inherit_its_timers() -> None:
    groups = ClassicGroups(0, max_size=10)
    member_id = answer(groups.join(request(), "w1", T0), "w1")["member_id"]
    key = ("heartbeat", "billing", member_id)
    forgotten = groups.forget("billing")
    assert [(t.key, t.delay_ms) for t in forgotten.timers] == [(key, None)]
    groups.join(request(), "w2", T0)
    assert groups.fire(key, T0 + 10_000).answers == []
    assert "billing" in groups.groups


def test_a_static_member_restarting_twice_before_its_first_store_is_answered_once() -> None:
    """The second restart fences the first one's JoinGroup; the first one's store then ends
    with nothing to answer (it answered that JoinGroup twice, and counted its waiting join
    out of the group's a second time)."""
    groups, original = stable_static_group()
    first = groups.join(request(instance="pod-1"), "r1", T0 + 10)
    (first_write,) = first.writes
    second = groups.join(request(instance="pod-1"), "r2", T0 + 20)
    assert answer(second, "r1")["error_code"] == FENCED_INSTANCE_ID
    (second_write,) = second.writes
    assert groups.written(first_write.token, NONE, T0 + 30).answers == []
    done = groups.written(second_write.token, NONE, T0 + 40)
    rejoined = answer(done, "r2")
    assert (rejoined["error_code"], rejoined["generation_id"]) == (NONE, 1)
    group = groups.groups["billing"]
    assert group.state == STABLE and original not in group.members
    assert group.awaiting_join_count == 0
    assert list(group.members) == [rejoined["member_id"]]


def test_unloading_answers_the_waiting_requests_and_cancels_every_timer() -> None:
    groups = ClassicGroups(3_000, max_size=10)
    member_id = answer(groups.join(request(), "w1", T0), "w1")["member_id"]
    groups.join(request(member_id), "w2", T0)
    out = groups.unload()
    assert answer(out, "w2")["error_code"] == 16  # NOT_COORDINATOR
    assert {t.key for t in out.timers} == {("heartbeat", "billing", member_id), ("join", "billing")}
    assert all(t.delay_ms is None for t in out.timers)


def test_a_static_members_failed_store_after_a_rebalance_leaves_the_new_generation_alone() -> None:
    """The replaced static member's store fails once a rebalance has formed generation 2 with
    its new id: the old id does not come back with generation 1's assignment beside
    generation 2's (found by the simulation, seed 1497)."""
    groups, _ = stable_static_group()
    replaced = groups.join(request(instance="pod-1"), "r1", T0 + 10)
    (static_write,) = replaced.writes
    new_id = answer(groups.join(request(), "n1", T0 + 11), "n1")["member_id"]
    formed = groups.join(request(new_id), "n2", T0 + 12)  # everyone has joined: at once
    pod = answer(formed, "r1")
    assert pod["generation_id"] == 2 and pod["leader"] == pod["member_id"]
    full = {pod["member_id"]: b"a-0", new_id: b"a-1"}
    synced = groups.sync("billing", pod["member_id"], "pod-1", 2, "consumer", "range", full, "s")
    (assignment_write,) = synced.writes
    assert groups.written(static_write.token, 15, T0 + 14).answers == []
    groups.written(assignment_write.token, NONE, T0 + 15)
    group = groups.groups["billing"]
    assert group.state == STABLE and group.generation == 2
    assert {m: group.members[m].assignment for m in group.members} == full
