"""The heartbeat tracker: leases, their exact expiry, and the broker state machine."""

from __future__ import annotations

import pytest

from rackwise.controller import BrokerControlState, BrokerHeartbeatRequest, BrokerHeartbeatTracker

FENCED = BrokerControlState.FENCED
UNFENCED = BrokerControlState.UNFENCED
SHUTTING = BrokerControlState.CONTROLLED_SHUTDOWN
NOW = BrokerControlState.SHUTDOWN_NOW


def test_lease_runs_out_one_millisecond_after_the_session_timeout() -> None:
    tracker = BrokerHeartbeatTracker(session_timeout_ms=9000)
    tracker.register(1, fenced=False, now_ms=1000)
    assert tracker.has_valid_session(1, 10_000)  # exactly last contact + timeout: still valid
    assert tracker.stale_brokers(10_000) == []
    assert not tracker.has_valid_session(1, 10_001)
    assert tracker.stale_brokers(10_001) == [1]
    assert tracker.next_check_time_ms() == 10_001


def test_stale_brokers_come_longest_silent_first_and_a_heartbeat_renews() -> None:
    tracker = BrokerHeartbeatTracker(session_timeout_ms=100)
    for broker_id, t in ((3, 0), (1, 10), (2, 20)):
        tracker.register(broker_id, fenced=False, now_ms=t)
    tracker.touch(3, fenced=False, metadata_offset=5, now_ms=50)
    assert tracker.stale_brokers(125) == [1, 2]
    assert tracker.stale_brokers(151) == [1, 2, 3]
    state = tracker.state(3)
    assert state is not None and state.metadata_offset == 5


def test_fenced_brokers_hold_no_lease_and_are_never_stale() -> None:
    tracker = BrokerHeartbeatTracker(session_timeout_ms=100)
    tracker.register(1, fenced=True, now_ms=0)
    assert not tracker.has_valid_session(1, 0)
    assert tracker.stale_brokers(10_000) == []
    assert tracker.next_check_time_ms() is None
    tracker.register(2, fenced=False, now_ms=0)
    tracker.fence(2)
    assert tracker.stale_brokers(10_000) == []
    tracker.remove(2)
    assert 2 not in tracker and not tracker.has_valid_session(2, 0)


def test_register_keeps_the_applied_offset_only_when_fencing_changes() -> None:
    tracker = BrokerHeartbeatTracker(session_timeout_ms=100)
    tracker.register(1, fenced=True, now_ms=0)
    tracker.touch(1, fenced=True, metadata_offset=42, now_ms=1)
    tracker.register(1, fenced=False, now_ms=2)  # unfenced by a replayed record
    state = tracker.state(1)
    assert state is not None and (state.metadata_offset, state.last_contact_ms) == (42, 2)
    tracker.register(1, fenced=False, now_ms=3)  # no change of fencing
    assert state.metadata_offset == -1


def _request(
    offset: int = 10, *, fence: bool = False, down: bool = False
) -> BrokerHeartbeatRequest:
    return BrokerHeartbeatRequest(1, 5, offset, want_fence=fence, want_shut_down=down)


@pytest.mark.parametrize(
    ("fenced", "request_", "register_offset", "leads", "expected"),
    [
        (True, _request(10), 10, False, UNFENCED),  # caught up with its registration
        (True, _request(9), 10, False, FENCED),  # not yet
        (True, _request(10, fence=True), 10, False, FENCED),
        (True, _request(10, down=True), 10, False, NOW),
        (False, _request(10), 10, False, UNFENCED),
        (False, _request(0), 10, False, UNFENCED),  # unfenced brokers are never re-checked
        (False, _request(10, fence=True), 10, False, FENCED),
        (False, _request(10, fence=True, down=True), 10, False, NOW),
        (False, _request(10, down=True), 10, True, SHUTTING),
        (False, _request(10, down=True), 10, False, NOW),
    ],
)
def test_next_state_is_kafkas(
    fenced: bool,
    request_: BrokerHeartbeatRequest,
    register_offset: int,
    leads: bool,
    expected: BrokerControlState,
) -> None:
    tracker = BrokerHeartbeatTracker(session_timeout_ms=100)
    tracker.register(1, fenced=fenced, now_ms=0)
    current, following = tracker.next_state(request_, register_offset, lambda: leads)
    assert current == (FENCED if fenced else UNFENCED)
    assert following == expected


def test_controlled_shutdown_waits_for_leaderships_and_the_active_brokers() -> None:
    tracker = BrokerHeartbeatTracker(session_timeout_ms=100)
    tracker.register(1, fenced=False, now_ms=0)
    tracker.register(2, fenced=False, now_ms=0)
    tracker.touch(2, fenced=False, metadata_offset=20, now_ms=1)
    tracker.start_controlled_shutdown(1, offset=30)
    tracker.start_controlled_shutdown(1, offset=99)  # the first offset stays
    request = _request(down=True)
    assert tracker.next_state(request, 0, lambda: True) == (SHUTTING, SHUTTING)
    assert tracker.next_state(request, 0, lambda: False) == (SHUTTING, SHUTTING)  # 2 is at 20
    tracker.touch(2, fenced=False, metadata_offset=30, now_ms=2)
    assert tracker.lowest_active_offset() == 30
    assert tracker.next_state(request, 0, lambda: False) == (SHUTTING, NOW)


def test_a_fenced_broker_cannot_start_a_controlled_shutdown() -> None:
    tracker = BrokerHeartbeatTracker(session_timeout_ms=100)
    tracker.register(1, fenced=True, now_ms=0)
    with pytest.raises(Exception, match="BUG: fenced broker 1 cannot enter controlled shutdown"):
        tracker.start_controlled_shutdown(1, 5)
