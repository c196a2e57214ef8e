"""Broker registrations and their lifecycle (Kafka's ``ClusterControlManager`` and the broker
side of ``ReplicationControlManager``).

Hard state, in the log: registrations (RegisterBrokerRecord), fencing and controlled shutdown
(BrokerRegistrationChangeRecord), unregistrations. Soft state, never logged: the heartbeat
tracker (:mod:`rackwise.controller.heartbeat`), which this class keeps in step with the
registrations as their records are replayed (:meth:`ClusterControl.observe`), and which starts
afresh, every broker with a new lease, when a controller activates.

A registration's epoch is the offset of the batch that holds its RegisterBrokerRecord; the
broker is unfenced by its first heartbeat that reports having applied the offset of that
record itself (which comes after any records the registration also wrote). Every accepted
registration gets a new epoch, as Kafka's up to 3.7 (3.8 keeps the epoch of a re-registering
incarnation, KAFKA-16952): a registration that reuses a live broker's incarnation id to
advertise another address or rack makes the real broker's next heartbeat STALE_BROKER_EPOCH,
and the broker registers again, restoring its own. The same incarnation keeps its fencing and
controlled shutdown, as in Kafka 3.8, so that registering again moves no leadership.

Sessions (soft state, never logged): the connection each broker registered on, given by the
network layer as an opaque token. A heartbeat that asks to be fenced or to shut down is
accepted only on that connection, so that an anonymous client that knows a broker's epoch
cannot stop it; a heartbeat that asks for nothing is accepted from anywhere, as in Kafka.
Anyone who can reach the controller listener can still register a broker (PLAINTEXT has no
authentication), and so take over a broker id until the broker registers again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from rackwise.common.errors import RackwiseError
from rackwise.controller.config import ControllerConfig
from rackwise.controller.directories import handle_directories_offline
from rackwise.controller.errors import (
    BrokerIdNotRegisteredException,
    DuplicateBrokerRegistrationException,
    InvalidRegistrationException,
    StaleBrokerEpochException,
)
from rackwise.controller.heartbeat import BrokerControlState, BrokerHeartbeatTracker
from rackwise.controller.messages import (
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
)
from rackwise.controller.replication import ReplicationControl
from rackwise.controller.state import (
    REGISTER_BROKER,
    UNREGISTER_BROKER,
    ControllerState,
    record_classes,
)
from rackwise.image import MetadataImage
from rackwise.protocol.errors import UnsupportedVersionException
from rackwise.records.constants import FENCE, METADATA_VERSION_FEATURE, UNFENCE
from rackwise.records.metadata import RegisterBrokerRecord

_FENCE: Final = record_classes("FenceBrokerRecord")
_UNFENCE: Final = record_classes("UnfenceBrokerRecord")
_CHANGE: Final = record_classes("BrokerRegistrationChangeRecord")
_RESERVED_DIRECTORY_BELOW: Final = 100
"""Kafka's ``DirectoryId.reserved``: ids below this (most significant half zero) are not
directory ids."""
_MAX_PORT: Final = 65535


class ClusterControl:
    """Registers brokers, answers their heartbeats, fences those whose lease ran out."""

    def __init__(
        self,
        config: ControllerConfig,
        tracker: BrokerHeartbeatTracker,
        replication: ReplicationControl,
    ) -> None:
        self.config = config
        self.tracker = tracker
        self.replication = replication
        self._sessions: dict[int, object] = {}
        """Broker id -> the connection token its registration came on (module docstring)."""

    # ---- soft state ------------------------------------------------------------------------

    def activate(self, image: MetadataImage, now_ms: int) -> None:
        """Start heartbeat tracking afresh: every registered broker gets a lease from now (and
        no session: a broker asking to be fenced or to shut down registers again first)."""
        self.tracker.clear()
        self._sessions.clear()
        for broker_id, registration in image.brokers.items():
            self.tracker.register(broker_id, registration.fenced, now_ms)

    def observe(
        self, records: Sequence[Any], old: MetadataImage, new: MetadataImage, now_ms: int
    ) -> None:
        """Keep the tracker in step with replayed registration records (Kafka's replay
        calls ``heartbeatManager.register``): a new incarnation starts a new state."""
        for record in records:
            kind = type(record)
            if kind in REGISTER_BROKER:
                previous = old.brokers.get(record.broker_id)
                if previous is None or previous.incarnation_id != record.incarnation_id:
                    self.tracker.remove(record.broker_id)
                self.tracker.register(record.broker_id, record.fenced, now_ms)
            elif kind in _FENCE:
                self._refence(new, record.id, True, now_ms)
            elif kind in _UNFENCE:
                self._refence(new, record.id, False, now_ms)
            elif kind in _CHANGE:
                change = {FENCE: True, UNFENCE: False}.get(record.fenced)
                self._refence(new, record.broker_id, change, now_ms)
            elif kind in UNREGISTER_BROKER:
                self.tracker.remove(record.broker_id)

    def _refence(
        self, image: MetadataImage, broker_id: int, fenced: bool | None, now_ms: int
    ) -> None:
        """A replayed registration change: the tracker takes the new fencing (None: no
        change) and counts the change as contact."""
        if broker_id not in image.brokers:
            return
        state = self.tracker.state(broker_id)
        if fenced is None:
            fenced = image.brokers[broker_id].fenced if state is None else state.fenced
        self.tracker.register(broker_id, fenced, now_ms)

    # ---- registration ----------------------------------------------------------------------

    def _check_request(self, image: MetadataImage, request: BrokerRegistrationRequest) -> None:
        broker_id = request.broker_id
        if broker_id < 0:
            raise InvalidRegistrationException(f"Invalid broker id {broker_id}")
        if broker_id in self.config.controller_ids:
            raise InvalidRegistrationException(
                f"Broker id {broker_id} is the node id of a controller; controllers and "
                "brokers share one id space"
            )
        names = [listener.name for listener in request.listeners]
        if len(set(names)) != len(names):
            raise InvalidRegistrationException(f"Duplicate listener name in request: {names}")
        for listener in request.listeners:
            if not 0 <= listener.port <= _MAX_PORT:
                raise InvalidRegistrationException(
                    f"Invalid port {listener.port} for listener {listener.name}"
                )
        dirs = request.log_dirs
        if not dirs:
            raise InvalidRegistrationException("No directories specified in request")
        if any(d.int >> 64 == 0 and d.int < _RESERVED_DIRECTORY_BELOW for d in dirs):
            raise InvalidRegistrationException("Reserved directory ID in request")
        if len(set(dirs)) != len(dirs):
            raise InvalidRegistrationException("Duplicate directory ID in request")
        for other_id, other in image.brokers.items():
            if other_id != broker_id:
                shared = set(other.log_dirs) & set(dirs)
                if shared:
                    raise InvalidRegistrationException(
                        f"Broker {other_id} is already registered with directory {min(shared)}"
                    )

    def _features(self, image: MetadataImage, request: BrokerRegistrationRequest) -> list[Any]:
        """The broker's feature ranges, each checked to hold the finalized level (Kafka's
        ``processRegistrationFeature``). A broker that names no metadata.version range is
        taken to support the current level."""
        finalized = dict(image.features)
        ranges = {f.name: (f.min_version, f.max_version) for f in request.features}
        level = finalized.get(METADATA_VERSION_FEATURE)
        if METADATA_VERSION_FEATURE not in ranges and level is not None:
            ranges[METADATA_VERSION_FEATURE] = (level, level)
        for name, version in finalized.items():
            low, high = ranges.get(name, (0, 0))
            if not low <= version <= high:
                raise UnsupportedVersionException(
                    f"Unable to register because the broker does not support finalized version "
                    f"{version} of {name}. The broker wants a version between {low} and {high}, "
                    "inclusive."
                )
        return [
            RegisterBrokerRecord.BrokerFeature(
                name=name, min_supported_version=low, max_supported_version=high
            )
            for name, (low, high) in ranges.items()
        ]

    def handle_broker_registration(
        self,
        state: ControllerState,
        request: BrokerRegistrationRequest,
        records: list[Any],
        *,
        next_offset: int,
        now_ms: int,
        session: object | None = None,
    ) -> BrokerRegistrationResponse:
        """Register (or amend the registration of) a broker (Kafka's ``registerBroker``). Every
        accepted registration gets the epoch ``next_offset`` (the offset its batch will start
        at); a new incarnation starts fenced, the same one keeps its fencing and controlled
        shutdown. While another incarnation's lease is alive the registration is refused.
        ``session`` (the connection it came on) becomes the broker's session."""
        image = state.image
        self._check_request(image, request)
        existing = image.brokers.get(request.broker_id)
        if (
            existing is not None
            and self.tracker.has_valid_session(request.broker_id, now_ms)
            and existing.incarnation_id != request.incarnation_id
        ):
            raise DuplicateBrokerRegistrationException(
                "Another broker is registered with that broker id."
            )
        features = self._features(image, request)
        is_new = existing is None or existing.incarnation_id != request.incarnation_id
        epoch = next_offset
        if is_new:
            self.replication.handle_broker_unclean_shutdown(state, request.broker_id, records)
            fenced, shutting_down = True, False
        else:
            assert existing is not None
            fenced, shutting_down = existing.fenced, existing.in_controlled_shutdown
        self._sessions[request.broker_id] = session
        records.append(
            RegisterBrokerRecord(
                broker_id=request.broker_id,
                incarnation_id=request.incarnation_id,
                broker_epoch=epoch,
                end_points=tuple(
                    RegisterBrokerRecord.BrokerEndpoint(
                        name=listener.name,
                        host=listener.host,
                        port=listener.port,
                        security_protocol=listener.security_protocol,
                    )
                    for listener in request.listeners
                ),
                features=tuple(features),
                rack=request.rack,
                fenced=fenced,
                in_controlled_shutdown=shutting_down,
                log_dirs=tuple(request.log_dirs),
            )
        )
        return BrokerRegistrationResponse(epoch)

    def handle_unregister_broker(
        self, state: ControllerState, broker_id: int, records: list[Any]
    ) -> None:
        """UnregisterBroker: the broker leaves every ISR and leadership, then the cluster."""
        registration = state.image.brokers.get(broker_id)
        if registration is None:
            raise BrokerIdNotRegisteredException(
                f"Broker ID {broker_id} is not currently registered"
            )
        self.replication.handle_broker_unregistered(
            state, broker_id, registration.broker_epoch, records
        )

    # ---- heartbeats ------------------------------------------------------------------------

    @staticmethod
    def check_broker_epoch(image: MetadataImage, broker_id: int, broker_epoch: int) -> None:
        registration = image.brokers.get(broker_id)
        if registration is None:
            raise StaleBrokerEpochException(
                f"No broker registration found for broker id {broker_id}"
            )
        if registration.broker_epoch != broker_epoch:
            raise StaleBrokerEpochException(
                f"Expected broker epoch {registration.broker_epoch}, but got broker epoch "
                f"{broker_epoch}"
            )

    def handle_broker_heartbeat(
        self,
        state: ControllerState,
        request: BrokerHeartbeatRequest,
        records: list[Any],
        *,
        now_ms: int,
        session: object | None = None,
    ) -> BrokerHeartbeatResponse:
        """A heartbeat (Kafka's ``processBrokerHeartbeat``): renew the lease, record the
        applied offset, and move the broker to its next state, with the records that takes
        (unfence and elect; fence and move leaderships; begin a controlled shutdown). Asking
        to be fenced or to shut down from a ``session`` other than the registration's is
        refused (STALE_BROKER_EPOCH: the broker registers again on its connection)."""
        broker_id = request.broker_id
        register_offset = state.register_offsets.get(broker_id)
        if register_offset is None:
            raise StaleBrokerEpochException(
                f"Receive a heartbeat from broker {broker_id} before registration"
            )
        self.check_broker_epoch(state.image, broker_id, request.broker_epoch)
        self._check_session(request, session)
        if broker_id not in self.tracker:
            raise RackwiseError(f"BUG: registered broker {broker_id} has no heartbeat state")
        current, following = self.tracker.next_state(
            request,
            register_offset,
            lambda: self.replication.has_leaderships(state, broker_id),
        )
        told_to_stop = False
        shutting_down = state.image.brokers[broker_id].in_controlled_shutdown
        if current is BrokerControlState.FENCED and shutting_down:
            # Its registration says it is shutting down: only a new incarnation (a restart)
            # clears that. Kafka would unfence it and might then make it a leader; it stays
            # fenced and is told again to shut down.
            told_to_stop = True
            following = BrokerControlState.FENCED
        if current != following:
            if following.is_fenced:
                self.replication.handle_broker_fenced(state, broker_id, records)
            elif following is BrokerControlState.UNFENCED:
                self.replication.handle_broker_unfenced(
                    state, broker_id, request.broker_epoch, records
                )
            else:
                self.replication.handle_broker_in_controlled_shutdown(
                    state, broker_id, request.broker_epoch, records
                )
        if request.offline_log_dirs:
            handle_directories_offline(
                self.replication,
                state,
                broker_id,
                request.broker_epoch,
                request.offline_log_dirs,
                records,
            )
        self.tracker.touch(broker_id, following.is_fenced, request.current_metadata_offset, now_ms)
        return BrokerHeartbeatResponse(
            is_caught_up=request.current_metadata_offset >= register_offset,
            is_fenced=following.is_fenced,
            is_in_controlled_shutdown=following.in_controlled_shutdown,
            should_shut_down=following.should_shut_down or told_to_stop,
        )

    def _check_session(self, request: BrokerHeartbeatRequest, session: object | None) -> None:
        if session is None or not (request.want_fence or request.want_shut_down):
            return
        if self._sessions.get(request.broker_id) is not session:
            raise StaleBrokerEpochException(
                f"Broker {request.broker_id} may ask to be fenced or to shut down only on the "
                "connection it registered on; it must register again on this one"
            )

    def note_heartbeats(self, image: MetadataImage, heard: Mapping[int, tuple[int, int]]) -> None:
        """Count the heartbeats that arrived but are not processed yet (broker id -> epoch
        and arrival time, of the current registration) as contacts (Kafka's lockless
        ``trackBrokerHeartbeat``): a busy controller does not fence a broker it has not yet
        had time to answer. A heartbeat already processed changes nothing."""
        for broker_id, (epoch, at_ms) in heard.items():
            registration = image.brokers.get(broker_id)
            if registration is not None and registration.broker_epoch == epoch:
                self.tracker.note_contact(broker_id, at_ms)

    def maybe_fence_one_stale_broker(
        self, state: ControllerState, records: list[Any], *, now_ms: int
    ) -> int | None:
        """Fence the broker silent the longest if its lease has run out (Kafka fences one at
        a time, so each fencing's elections see the previous ones). Its id, or None."""
        stale = self.tracker.stale_brokers(now_ms)
        if not stale:
            return None
        broker_id = stale[0]
        self.replication.handle_broker_fenced(state, broker_id, records)
        self.tracker.fence(broker_id)
        return broker_id
