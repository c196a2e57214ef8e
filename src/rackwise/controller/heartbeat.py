"""Broker heartbeats: the controller's soft state, never logged (Kafka's
``BrokerHeartbeatManager``).

Goals
    Know, for every registered broker, when it last heartbeated and which metadata offset it
    has applied, so the controller can (1) unfence a broker once it has caught up with its own
    registration, (2) fence a broker whose lease ran out, (3) refuse a second incarnation while
    the first one's lease is alive, and (4) let a broker in controlled shutdown go once every
    active broker has seen the records that moved its leaderships.

Constraints
    Nothing here enters the metadata log: after a controller restart every broker starts a
    fresh lease from the moment of activation, as in Kafka (a standby controller keeps no
    heartbeat state). A heartbeat costs O(1); finding the stale brokers costs O(stale + 1).

Algorithm
    Each broker has a :class:`BrokerHeartbeatState`. The unfenced brokers sit in an insertion
    ordered dict in order of last contact: a heartbeat moves its broker to the end, and since
    the clock never goes back the dict stays sorted, so the stale brokers are a prefix. A lease
    is valid while ``now <= last_contact_ms + session_timeout_ms`` (Kafka's
    ``hasValidSession``): it runs out at the first millisecond after the session timeout.
    A fenced broker has no lease.

Worked example
    Session timeout 9000 ms. Broker 1 heartbeats at t=0 and is unfenced; broker 2 at t=1000.
    At t=9000 both leases hold; at t=9001 :meth:`BrokerHeartbeatTracker.stale_brokers` gives
    ``[1]``, and at t=10001 ``[1, 2]`` (unless 2 heartbeated meanwhile).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from rackwise.common.errors import RackwiseError
from rackwise.controller.messages import BrokerHeartbeatRequest

NO_OFFSET: Final = -1
"""``metadata_offset`` / ``controlled_shutdown_offset`` when there is none."""


class BrokerControlState(enum.Enum):
    """Kafka's ``BrokerControlState``: a broker's state as a heartbeat sees it."""

    FENCED = "fenced"
    UNFENCED = "unfenced"
    CONTROLLED_SHUTDOWN = "controlled_shutdown"
    SHUTDOWN_NOW = "shutdown_now"

    @property
    def is_fenced(self) -> bool:
        return self in (BrokerControlState.FENCED, BrokerControlState.SHUTDOWN_NOW)

    @property
    def in_controlled_shutdown(self) -> bool:
        return self is BrokerControlState.CONTROLLED_SHUTDOWN

    @property
    def should_shut_down(self) -> bool:
        return self is BrokerControlState.SHUTDOWN_NOW


@dataclass(slots=True)
class BrokerHeartbeatState:
    """One broker's soft state. ``last_contact_ms`` is on the controller's clock;
    ``metadata_offset`` is the last offset the broker reported applied (:data:`NO_OFFSET`
    before its first heartbeat); ``controlled_shutdown_offset`` the offset of the records that
    began its controlled shutdown (:data:`NO_OFFSET` when it is not shutting down)."""

    broker_id: int
    fenced: bool
    last_contact_ms: int
    metadata_offset: int = NO_OFFSET
    controlled_shutdown_offset: int = NO_OFFSET

    @property
    def shutting_down(self) -> bool:
        return self.controlled_shutdown_offset >= 0


class BrokerHeartbeatTracker:
    """Every registered broker's heartbeat state (see the module docstring)."""

    def __init__(self, session_timeout_ms: int) -> None:
        self.session_timeout_ms = session_timeout_ms
        self._brokers: dict[int, BrokerHeartbeatState] = {}
        self._unfenced: dict[int, BrokerHeartbeatState] = {}  # by last contact, oldest first

    def __contains__(self, broker_id: object) -> bool:
        return broker_id in self._brokers

    def state(self, broker_id: int) -> BrokerHeartbeatState | None:
        return self._brokers.get(broker_id)

    def _get(self, broker_id: int) -> BrokerHeartbeatState:
        state = self._brokers.get(broker_id)
        if state is None:
            raise RackwiseError(f"BUG: broker {broker_id} is not registered with the tracker")
        return state

    def register(self, broker_id: int, fenced: bool, now_ms: int) -> None:
        """Track ``broker_id`` if it is not yet tracked, and make its fencing ``fenced``
        (Kafka's ``register``): the contact time becomes now; the applied offset is kept only
        when the fencing changes."""
        state = self._brokers.get(broker_id)
        offset = NO_OFFSET
        if state is None:
            state = BrokerHeartbeatState(broker_id, fenced=True, last_contact_ms=now_ms)
            self._brokers[broker_id] = state
        elif state.fenced != fenced:
            offset = state.metadata_offset
        self.touch(broker_id, fenced, offset, now_ms)

    def touch(self, broker_id: int, fenced: bool, metadata_offset: int, now_ms: int) -> None:
        """Record a contact at ``now_ms`` with the broker's fencing and applied offset."""
        state = self._get(broker_id)
        self._unfenced.pop(broker_id, None)
        state.last_contact_ms = now_ms
        state.metadata_offset = metadata_offset
        state.fenced = fenced
        if fenced:
            state.controlled_shutdown_offset = NO_OFFSET
        else:
            self._unfenced[broker_id] = state

    def note_contact(self, broker_id: int, at_ms: int) -> None:
        """Count a contact at ``at_ms`` from an unfenced broker, keeping its fencing and
        applied offset: a heartbeat that arrived at ``at_ms`` and waits to be processed. A
        contact no later than the last one counted changes nothing."""
        state = self._brokers.get(broker_id)
        if state is None or state.fenced or at_ms <= state.last_contact_ms:
            return
        state.last_contact_ms = at_ms
        self._unfenced.pop(broker_id, None)
        last = next(reversed(self._unfenced.values()), None)
        self._unfenced[broker_id] = state
        if last is not None and last.last_contact_ms > at_ms:  # keep the order of contact
            ordered = sorted(self._unfenced.values(), key=lambda s: s.last_contact_ms)
            self._unfenced = {s.broker_id: s for s in ordered}

    def fence(self, broker_id: int) -> None:
        """Take away the broker's lease (it stays tracked, fenced)."""
        state = self._brokers.get(broker_id)
        if state is not None:
            self._unfenced.pop(broker_id, None)
            state.fenced = True
            state.controlled_shutdown_offset = NO_OFFSET

    def remove(self, broker_id: int) -> None:
        self._unfenced.pop(broker_id, None)
        self._brokers.pop(broker_id, None)

    def clear(self) -> None:
        self._brokers.clear()
        self._unfenced.clear()

    def has_valid_session(self, broker_id: int, now_ms: int) -> bool:
        """Whether the broker holds a live lease: unfenced, and heard from within the session
        timeout (the lease still holds at exactly ``last_contact_ms + session_timeout_ms``)."""
        state = self._brokers.get(broker_id)
        if state is None or state.fenced:
            return False
        return state.last_contact_ms + self.session_timeout_ms >= now_ms

    def stale_brokers(self, now_ms: int) -> list[int]:
        """The unfenced brokers whose lease has run out, longest silent first."""
        stale = []
        for broker_id, state in self._unfenced.items():
            if state.last_contact_ms + self.session_timeout_ms >= now_ms:
                break
            stale.append(broker_id)
        return stale

    def next_check_time_ms(self) -> int | None:
        """When the next lease runs out if nobody heartbeats (None: no unfenced broker)."""
        for state in self._unfenced.values():
            return state.last_contact_ms + self.session_timeout_ms + 1
        return None

    def start_controlled_shutdown(self, broker_id: int, offset: int) -> None:
        """Mark the broker as shutting down once the records at ``offset`` are durable (kept
        from the first time, as Kafka's ``maybeUpdateControlledShutdownOffset``)."""
        state = self._get(broker_id)
        if state.fenced:
            raise RackwiseError(f"BUG: fenced broker {broker_id} cannot enter controlled shutdown")
        if state.controlled_shutdown_offset < 0:
            state.controlled_shutdown_offset = offset

    def lowest_active_offset(self) -> int | None:
        """The lowest offset applied by an active broker (unfenced, not shutting down); None
        when there is none."""
        offsets = [s.metadata_offset for s in self._unfenced.values() if not s.shutting_down]
        return min(offsets) if offsets else None

    def next_state(
        self,
        request: BrokerHeartbeatRequest,
        register_record_offset: int,
        has_leaderships: Callable[[], bool],
    ) -> tuple[BrokerControlState, BrokerControlState]:
        """The broker's current state and the one this heartbeat moves it to (Kafka's
        ``calculateNextBrokerState``). A fenced broker is unfenced once it has applied the
        offset of its own RegisterBrokerRecord. ``has_leaderships`` is asked only when a
        shutdown depends on it."""
        state = self._get(request.broker_id)
        if state.shutting_down:
            current = BrokerControlState.CONTROLLED_SHUTDOWN
        elif state.fenced:
            current = BrokerControlState.FENCED
        else:
            current = BrokerControlState.UNFENCED
        return current, self._next(state, current, request, register_record_offset, has_leaderships)

    def _next(
        self,
        state: BrokerHeartbeatState,
        current: BrokerControlState,
        request: BrokerHeartbeatRequest,
        register_record_offset: int,
        has_leaderships: Callable[[], bool],
    ) -> BrokerControlState:
        if current is BrokerControlState.FENCED:
            if request.want_shut_down:
                return BrokerControlState.SHUTDOWN_NOW
            if not request.want_fence and request.current_metadata_offset >= register_record_offset:
                return BrokerControlState.UNFENCED
            return BrokerControlState.FENCED
        if current is BrokerControlState.UNFENCED:
            if request.want_fence:
                if request.want_shut_down:
                    return BrokerControlState.SHUTDOWN_NOW
                return BrokerControlState.FENCED
            if request.want_shut_down:
                if has_leaderships():
                    return BrokerControlState.CONTROLLED_SHUTDOWN
                return BrokerControlState.SHUTDOWN_NOW
            return BrokerControlState.UNFENCED
        if has_leaderships():
            return BrokerControlState.CONTROLLED_SHUTDOWN
        lowest = self.lowest_active_offset()
        if lowest is None or state.controlled_shutdown_offset <= lowest:
            return BrokerControlState.SHUTDOWN_NOW
        return BrokerControlState.CONTROLLED_SHUTDOWN
