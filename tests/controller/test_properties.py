"""Random sequences of broker and topic commands keep the image's invariants: every leader is in
its ISR and active, no fenced broker is in an ISR, replicas are distinct, epochs never go back,
the image is the replay of the log, and a reopened controller recovers the same image."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from rackwise.controller import (
    BrokerHeartbeatRequest,
    CreatableTopic,
    CreatePartitionsTopic,
    DuplicateBrokerRegistrationException,
    ManualClock,
)
from rackwise.image import replay
from rackwise.metalog import InMemoryMetadataLog
from tests.controller.helpers import check_invariants, new_controller, registration

BROKERS = st.integers(1, 5)
MOSTLY_TRUE = st.sampled_from([True, True, True, False])
RARELY = st.sampled_from([False] * 5 + [True])
TOPICS = st.sampled_from(["a", "b", "c", "d"])
SESSION_MS = 9000
TOPIC_ERRORS = {36, 37, 38}  # exists; bad count; RF unreachable (too few, or all fenced)


class ControllerMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.clock = ManualClock(0)
        self.log = InMemoryMetadataLog(max_record_bytes_between_snapshots=4096)
        self.controller = new_controller(log=self.log, clock=self.clock)
        self.incarnations: dict[int, int] = {}
        self.broker_epochs: dict[int, int] = {}
        self.partition_epochs: dict[Any, tuple[int, int]] = {}

    @property
    def image(self) -> Any:
        return self.controller.image

    @rule(broker=BROKERS, restart=RARELY)
    def register(self, broker: int, restart: bool) -> None:
        incarnation = self.incarnations.get(broker, 0) + (1 if restart else 0)
        existing = self.image.brokers.get(broker)
        try:
            reply = self.controller.register_broker(
                registration(broker, f"/r{broker % 3}", incarnation=incarnation)
            )
        except DuplicateBrokerRegistrationException:
            assert existing is not None and restart
            assert self.controller.tracker.has_valid_session(broker, self.clock())
            return
        # Every accepted registration gets a new epoch; the same incarnation keeps its fencing.
        assert reply.broker_epoch > self.broker_epochs.get(broker, -1)
        if existing is not None and not restart and broker in self.incarnations:
            assert self.image.brokers[broker].fenced == existing.fenced
        self.incarnations[broker] = incarnation
        self.broker_epochs[broker] = reply.broker_epoch

    @rule(broker=BROKERS)
    def bring_up(self, broker: int) -> None:
        """Register (or amend) and heartbeat caught up, as a starting broker does."""
        self.register(broker, restart=False)
        if broker in self.image.brokers:
            self.heartbeat(broker, caught_up=True, fence=False, down=False)

    @rule(broker=BROKERS, caught_up=MOSTLY_TRUE, fence=RARELY, down=RARELY)
    def heartbeat(self, broker: int, caught_up: bool, fence: bool, down: bool) -> None:
        registered = self.image.brokers.get(broker)
        if registered is None:
            return
        applied = self.controller.end_offset - 1 if caught_up else -1
        reply = self.controller.broker_heartbeat(
            BrokerHeartbeatRequest(broker, registered.broker_epoch, applied, fence, down)
        )
        now = self.image.brokers[broker]
        assert reply.is_fenced == now.fenced
        assert reply.is_caught_up == caught_up

    @rule(ms=st.integers(0, 2 * SESSION_MS))
    def time_passes(self, ms: int) -> None:
        self.clock.advance(ms)
        fenced = self.controller.maybe_fence_stale_brokers()
        event(f"lease ran out for {min(len(fenced), 2)}+ brokers")
        assert self.controller.tracker.stale_brokers(self.clock()) == []

    @rule(name=TOPICS, count=st.integers(1, 4), rf=st.integers(1, 3))
    def create(self, name: str, count: int, rf: int) -> None:
        (result,) = self.controller.create_topics([CreatableTopic(name, count, rf)])
        event(f"create topic: error {result.error.error_code}")
        assert result.error.is_success or result.error.error_code in TOPIC_ERRORS, result.error

    @rule(name=TOPICS, more=st.integers(1, 3))
    def add_partitions(self, name: str, more: int) -> None:
        topic = self.image.topic(name)
        total = more + (len(topic.partitions) if topic is not None else 0)
        (result,) = self.controller.create_partitions([CreatePartitionsTopic(name, total)])
        assert result.error.is_success or result.error.error_code in {3, 38}, result.error

    @rule(name=TOPICS)
    def delete(self, name: str) -> None:
        existed = name in self.image.topics_by_name
        (result,) = self.controller.delete_topics(names=[name])
        assert result.error.is_success == existed
        assert self.image.topic(name) is None

    @precondition(lambda self: bool(self.image.brokers))
    @rule(data=st.data())
    def unregister(self, data: st.DataObject) -> None:
        broker = data.draw(st.sampled_from(sorted(self.image.brokers)))
        self.controller.unregister_broker(broker)
        assert broker not in self.image.brokers
        self.incarnations.pop(broker, None)

    @rule(broker=BROKERS, name=TOPICS, ms=st.integers(0, 2 * SESSION_MS))
    def grouped(self, broker: int, name: str, ms: int) -> None:
        """Several commands in one group commit: each sees the ones before it."""
        with self.controller.group_commit():
            self.bring_up(broker)
            self.create(name, 2, 2)
            self.time_passes(ms)
        assert self.log.end_offset == self.controller.end_offset

    @rule()
    def reopen(self) -> None:
        reopened = new_controller(log=self.log, clock=self.clock)
        assert reopened.image == self.controller.image
        assert reopened.state.end_offset == self.controller.end_offset
        self.controller = reopened

    @invariant()
    def image_invariants(self) -> None:
        check_invariants(self.image)
        for _, p in self.image.iter_partitions():
            if p.leader == -1:
                event("a partition without a leader")
            if p.eligible_leader_replicas:
                event("a partition with an ELR")

    @invariant()
    def epochs_never_go_back(self) -> None:
        seen: dict[Any, tuple[int, int]] = {}
        for topic, p in self.image.iter_partitions():
            key = (topic.topic_id, p.partition_id)
            epochs = (p.leader_epoch, p.partition_epoch)
            before = self.partition_epochs.get(key, (0, 0))
            assert epochs[0] >= before[0] and epochs[1] >= before[1], (key, before, epochs)
            seen[key] = epochs
        self.partition_epochs = seen

    def teardown(self) -> None:
        records = []
        reader = self.log.read_snapshot()
        start = 0
        if reader is not None:
            records = [r for batch in reader.batches() for r in batch]
            start = reader.snapshot_id.end_offset
        records += [r for b in self.log.read_from(start) for r in b.records]
        assert replay(records) == self.image


ControllerMachine.TestCase.settings = settings(
    max_examples=100,
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    report_multiple_bugs=False,
)
TestControllerProperties = ControllerMachine.TestCase
