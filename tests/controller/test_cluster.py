"""Broker registration, heartbeats, leases and fencing (ClusterControl through the controller)."""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

import pytest

from rackwise.controller import (
    BrokerHeartbeatRequest,
    BrokerHeartbeatTracker,
    BrokerIdNotRegisteredException,
    ClusterControl,
    ConfigControl,
    ControllerState,
    CreatableTopic,
    DuplicateBrokerRegistrationException,
    FeatureRange,
    InvalidRegistrationException,
    ManualClock,
    ReplicationControl,
    StaleBrokerEpochException,
    UnsupportedVersionException,
)
from rackwise.placement import create_placer
from rackwise.records import RegisterBrokerRecord
from rackwise.records.constants import UNFENCE
from rackwise.records.metadata import BrokerRegistrationChangeRecordV0
from tests.controller.helpers import (
    CONTROLLER_ID,
    check_invariants,
    config,
    heartbeat,
    new_controller,
    partitions,
    registration,
    start_brokers,
)


def test_registration_is_a_fenced_record_whose_offset_is_the_epoch() -> None:
    state = ControllerState()
    tracker = BrokerHeartbeatTracker(9000)
    cfg = config()
    replication = ReplicationControl(cfg, ConfigControl(cfg), create_placer("striped"), uuid.uuid4)
    cluster = ClusterControl(cfg, tracker, replication)
    records: list[Any] = []
    reply = cluster.handle_broker_registration(
        state, registration(3, "/r1"), records, next_offset=7, now_ms=0
    )
    assert reply.broker_epoch == 7
    assert [type(r).__name__ for r in records] == ["RegisterBrokerRecordV3"]
    state.replay(records, 7)
    broker = state.image.brokers[3]
    assert (broker.broker_epoch, broker.fenced, broker.rack) == (7, True, "/r1")
    assert [(e.name, e.port) for e in broker.end_points] == [("PLAINTEXT", 9095)]
    assert state.register_offsets == {3: 7}


def test_heartbeat_unfences_once_the_registration_record_is_applied() -> None:
    controller = new_controller()
    epoch = controller.register_broker(registration(1)).broker_epoch
    assert epoch == 1  # offset 0 holds metadata.version
    behind = controller.broker_heartbeat(BrokerHeartbeatRequest(1, epoch, 0))
    assert (behind.is_caught_up, behind.is_fenced) == (False, True)
    assert controller.image.brokers[1].fenced
    caught_up = controller.broker_heartbeat(BrokerHeartbeatRequest(1, epoch, 1))
    assert (caught_up.is_caught_up, caught_up.is_fenced) == (True, False)
    assert not controller.image.brokers[1].fenced
    (batch,) = list(controller.log.read_from(2))
    (change,) = batch.records
    assert type(change) is BrokerRegistrationChangeRecordV0  # as Kafka writes it
    assert (change.broker_id, change.broker_epoch, change.fenced) == (1, epoch, UNFENCE)


def test_a_broker_id_of_a_controller_is_refused() -> None:
    controller = new_controller()
    with pytest.raises(InvalidRegistrationException, match="node id of a controller") as caught:
        controller.register_broker(registration(CONTROLLER_ID))
    assert caught.value.error_code == 119
    assert controller.image.brokers == {}


def test_second_incarnation_is_refused_while_the_first_lease_lives() -> None:
    clock = ManualClock(0)
    controller = new_controller(clock=clock)
    start_brokers(controller, [1])
    first_epoch = controller.image.brokers[1].broker_epoch
    clock.advance(9000)  # the lease of the heartbeat at t=0 holds until t=9000 inclusive
    with pytest.raises(DuplicateBrokerRegistrationException) as caught:
        controller.register_broker(registration(1, incarnation=1))
    assert caught.value.error_code == 101
    assert caught.value.message == "Another broker is registered with that broker id."
    clock.advance(1)
    reply = controller.register_broker(registration(1, incarnation=1))
    assert reply.broker_epoch > first_epoch
    broker = controller.image.brokers[1]
    assert broker.fenced and broker.incarnation_id == registration(1, incarnation=1).incarnation_id


def test_same_incarnation_amends_with_a_new_epoch_keeping_fencing() -> None:
    controller = new_controller()
    start_brokers(controller, [1])
    epoch = controller.image.brokers[1].broker_epoch
    reply = controller.register_broker(replace(registration(1), rack="/moved"))
    assert reply.broker_epoch > epoch
    assert reply.broker_epoch == controller.state.register_offsets[1]
    broker = controller.image.brokers[1]
    assert (broker.broker_epoch, broker.fenced, broker.rack) == (
        reply.broker_epoch,
        False,
        "/moved",
    )
    # The epoch it had is stale now: its next heartbeat is refused, and it registers again.
    with pytest.raises(StaleBrokerEpochException, match=f"but got broker epoch {epoch}"):
        controller.broker_heartbeat(BrokerHeartbeatRequest(1, epoch, reply.broker_epoch))


def test_restart_gets_a_new_epoch_and_leaves_every_isr() -> None:
    clock = ManualClock(0)
    controller = new_controller(clock=clock)
    start_brokers(controller, [1, 2, 3])
    controller.create_topics([CreatableTopic("t", num_partitions=3, replication_factor=3)])
    clock.advance(9001)
    for broker_id in (2, 3):
        heartbeat(controller, broker_id)
    old_epoch = controller.image.brokers[1].broker_epoch
    controller.register_broker(registration(1, incarnation=1))  # lease gone: a restart
    assert controller.image.brokers[1].broker_epoch > old_epoch
    for p in partitions(controller.image, "t"):
        assert 1 not in p.isr and p.leader != 1
    check_invariants(controller.image)
    # It is unfenced once it has applied its own RegisterBrokerRecord, which comes after the
    # partition changes the registration wrote in the same batch.
    epoch = controller.image.brokers[1].broker_epoch
    register_offset = controller.state.register_offsets[1]
    assert register_offset > epoch
    early = controller.broker_heartbeat(BrokerHeartbeatRequest(1, epoch, register_offset - 1))
    assert early.is_fenced and not early.is_caught_up
    assert not heartbeat(controller, 1).is_fenced


@pytest.mark.parametrize(
    ("dirs", "message"),
    [
        ((), "No directories specified in request"),
        ((uuid.UUID(int=1),), "Reserved directory ID in request"),
        ((uuid.UUID(int=1 << 70),) * 2, "Duplicate directory ID in request"),
    ],
)
def test_log_directories_are_checked(dirs: tuple[uuid.UUID, ...], message: str) -> None:
    controller = new_controller()
    with pytest.raises(InvalidRegistrationException, match=message):
        controller.register_broker(replace(registration(1), log_dirs=dirs))


def test_a_directory_belongs_to_one_broker() -> None:
    controller = new_controller()
    controller.register_broker(registration(1))
    taken = registration(1).log_dirs
    with pytest.raises(InvalidRegistrationException, match="Broker 1 is already registered with"):
        controller.register_broker(replace(registration(2), log_dirs=taken))


def test_unsupported_metadata_version_is_refused() -> None:
    controller = new_controller()
    old = replace(registration(1), features=(FeatureRange("metadata.version", 1, 7),))
    with pytest.raises(UnsupportedVersionException) as caught:
        controller.register_broker(old)
    assert caught.value.message == (
        "Unable to register because the broker does not support finalized version 23 of "
        "metadata.version. The broker wants a version between 1 and 7, inclusive."
    )
    fine = replace(registration(1), features=(FeatureRange("metadata.version", 1, 30),))
    controller.register_broker(fine)
    features = controller.image.brokers[1].features
    assert [(f.name, f.min_supported_version, f.max_supported_version) for f in features] == [
        ("metadata.version", 1, 30)
    ]


def test_heartbeats_with_a_stale_epoch_or_before_registering_are_refused() -> None:
    controller = new_controller()
    with pytest.raises(StaleBrokerEpochException, match="before registration"):
        controller.broker_heartbeat(BrokerHeartbeatRequest(4, 1, 0))
    epoch = controller.register_broker(registration(4)).broker_epoch
    with pytest.raises(StaleBrokerEpochException) as caught:
        controller.broker_heartbeat(BrokerHeartbeatRequest(4, epoch + 5, 0))
    assert caught.value.error_code == 77
    assert (
        caught.value.message == f"Expected broker epoch {epoch}, but got broker epoch {epoch + 5}"
    )


def test_lease_expiry_fences_exactly_at_the_session_timeout() -> None:
    clock = ManualClock(1_000)
    controller = new_controller(clock=clock, session_timeout_ms=5_000)
    start_brokers(controller, [1, 2])
    clock.advance(5_000)
    assert controller.maybe_fence_stale_brokers() == []
    assert controller.next_check_time_ms() == 6_001
    clock.advance(1)
    assert controller.maybe_fence_stale_brokers() == [1, 2]
    assert controller.image.brokers[1].fenced and controller.image.brokers[2].fenced
    assert controller.next_check_time_ms() is None


def test_fencing_moves_leaderships_and_shrinks_isrs_with_epoch_bumps() -> None:
    clock = ManualClock(0)
    controller = new_controller(clock=clock)
    start_brokers(controller, [1, 2, 3])
    controller.create_topics(
        [
            CreatableTopic("t", assignments={0: (1, 2, 3), 1: (2, 1, 3)}),
            CreatableTopic("solo", assignments={0: (1,)}),
        ]
    )
    clock.advance(9001)
    heartbeat(controller, 2)
    heartbeat(controller, 3)
    assert controller.maybe_fence_stale_brokers() == [1]
    p0, p1 = partitions(controller.image, "t")
    (p2,) = partitions(controller.image, "solo")
    assert (p0.leader, p0.isr, p0.leader_epoch, p0.partition_epoch) == (2, (2, 3), 1, 1)
    assert (p1.leader, p1.isr, p1.leader_epoch, p1.partition_epoch) == (2, (2, 3), 0, 1)
    # Its only replica fenced: no leader, the ISR empties, the broker is eligible (ELR).
    assert (p2.leader, p2.isr, p2.eligible_leader_replicas, p2.last_known_elr) == (
        -1,
        (),
        (1,),
        (1,),
    )
    check_invariants(controller.image)
    # Unfenced again: the leaderless partition elects it from the ELR.
    assert not heartbeat(controller, 1).is_fenced
    (p2,) = partitions(controller.image, "solo")
    assert (p2.leader, p2.isr, p2.eligible_leader_replicas, p2.leader_epoch) == (1, (1,), None, 2)
    check_invariants(controller.image)


def test_without_elr_the_last_replica_stays_in_the_isr_as_kafka_3() -> None:
    clock = ManualClock(0)
    controller = new_controller(clock=clock, elr_enabled=False)
    start_brokers(controller, [1])
    controller.create_topics([CreatableTopic("t", assignments={0: (1,)})])
    clock.advance(9001)
    controller.maybe_fence_stale_brokers()
    (p,) = partitions(controller.image, "t")
    assert (p.leader, p.isr) == (-1, (1,))
    heartbeat(controller, 1)
    (p,) = partitions(controller.image, "t")
    assert (p.leader, p.isr, p.leader_epoch) == (1, (1,), 2)


def test_want_fence_and_controlled_shutdown() -> None:
    controller = new_controller()
    start_brokers(controller, [1, 2])
    controller.create_topics([CreatableTopic("t", assignments={0: (1, 2)})])
    reply = heartbeat(controller, 1, want_shut_down=True)
    assert (reply.is_in_controlled_shutdown, reply.should_shut_down) == (True, False)
    broker = controller.image.brokers[1]
    assert broker.in_controlled_shutdown and not broker.fenced
    (p,) = partitions(controller.image, "t")
    assert (p.leader, p.isr) == (2, (2,))
    heartbeat(controller, 2)  # the only active broker has seen everything
    reply = heartbeat(controller, 1, want_shut_down=True)
    assert reply.should_shut_down and reply.is_fenced
    assert controller.image.brokers[1].fenced
    assert heartbeat(controller, 2, want_fence=True).is_fenced
    (p,) = partitions(controller.image, "t")
    assert (p.leader, p.isr, p.eligible_leader_replicas) == (-1, (), (2,))
    check_invariants(controller.image)


def test_unregister_takes_the_broker_out() -> None:
    controller = new_controller()
    start_brokers(controller, [1, 2])
    controller.create_topics([CreatableTopic("t", assignments={0: (1, 2)})])
    controller.unregister_broker(1)
    assert 1 not in controller.image.brokers
    (p,) = partitions(controller.image, "t")
    assert (p.leader, p.isr) == (2, (2,))
    with pytest.raises(BrokerIdNotRegisteredException, match="Broker ID 1 is not currently"):
        controller.unregister_broker(1)
    with pytest.raises(StaleBrokerEpochException):
        controller.broker_heartbeat(BrokerHeartbeatRequest(1, 1, 100))


def test_controller_restart_gives_every_broker_a_fresh_lease() -> None:
    clock = ManualClock(0)
    controller = new_controller(clock=clock)
    start_brokers(controller, [1])
    clock.advance(8000)
    reopened = new_controller(log=controller.log, clock=clock)
    assert reopened.epoch == controller.epoch + 1
    clock.advance(8000)  # 16 s after the last heartbeat, 8 s after activation
    assert reopened.maybe_fence_stale_brokers() == []
    assert not reopened.image.brokers[1].fenced
    clock.advance(1001)
    assert reopened.maybe_fence_stale_brokers() == [1]
    assert isinstance(reopened.image.brokers[1], RegisterBrokerRecord)


def test_a_broker_told_to_shut_down_comes_back_only_as_a_new_incarnation() -> None:
    controller = new_controller()
    start_brokers(controller, [1, 2])
    controller.create_topics([CreatableTopic("solo", assignments={0: (1,)})])
    assert heartbeat(controller, 1, want_shut_down=True).is_in_controlled_shutdown
    heartbeat(controller, 2)
    assert heartbeat(controller, 1, want_shut_down=True).should_shut_down
    end = controller.end_offset
    again = heartbeat(controller, 1)  # it did not stop, and asks to be unfenced
    assert (again.is_fenced, again.should_shut_down) == (True, True)
    assert controller.end_offset == end  # and nothing is written
    (p,) = partitions(controller.image, "solo")
    assert (p.leader, p.eligible_leader_replicas) == (-1, (1,))
    controller.register_broker(registration(1, incarnation=1))  # restarted
    assert not heartbeat(controller, 1).is_fenced
    (p,) = partitions(controller.image, "solo")
    # Its unclean restart took it out of the ELR; as the last known leader it is elected
    # anyway (KIP-966's balanced recovery), marked as recovering.
    assert (p.leader, p.isr, p.leader_recovery_state, p.last_known_elr) == (1, (1,), 1, None)
    check_invariants(controller.image)


@pytest.mark.parametrize("elr", [True, False])
def test_a_restarted_broker_leads_nothing_until_unfenced(elr: bool) -> None:
    clock = ManualClock(0)
    controller = new_controller(clock=clock, elr_enabled=elr)
    start_brokers(controller, [1, 2])
    controller.create_topics(
        [
            CreatableTopic("t", assignments={0: (1, 2)}),
            CreatableTopic("solo", assignments={0: (1,)}),
        ]
    )
    clock.advance(9001)  # 1's lease runs out; it restarts before anyone fences it
    heartbeat(controller, 2)
    controller.register_broker(registration(1, incarnation=1))
    (p0,) = partitions(controller.image, "t")
    (p1,) = partitions(controller.image, "solo")
    assert (p0.leader, p0.isr) == (2, (2,))
    assert p1.leader == -1
    assert p1.isr == (() if elr else (1,))  # without ELR the last in-sync replica stays
    check_invariants(controller.image, elr=elr)
