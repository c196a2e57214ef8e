"""What a client may make the controller do: the partitions one request may create are bounded
before any is placed, an existing topic is TOPIC_ALREADY_EXISTS whatever its name, a broker is
fenced or stopped only from the connection it registered on, and a heartbeat that arrived but
waits to be processed keeps its broker's lease."""

from __future__ import annotations

import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rackwise.controller import (
    BrokerHeartbeatRequest,
    CreatableTopic,
    CreatePartitionsTopic,
    CreateReplicaPlacementRequest,
    ManualClock,
    PolicyViolationException,
    StaleBrokerEpochException,
)
from rackwise.controller.topics import (
    EXCESSIVE_PARTITIONS,
    MAX_PARTITIONS_PER_REQUEST,
    check_partitions_per_request,
    requested_partitions,
)
from tests.controller.helpers import heartbeat, new_controller, registration, start_brokers

POLICY_VIOLATION = 44


def test_create_topics_over_the_bound_is_refused_whole_before_placing() -> None:
    controller = new_controller(num_partitions=2)
    start_brokers(controller, [1, 2, 3])
    before = controller.end_offset
    # Kafka's count: 5,000 + 5,000 + the default 2 for -1 is over 10,000.
    topics = [
        CreatableTopic("foo", 5000, 1),
        CreatableTopic("bar", 5000, 1),
        CreatableTopic("baz", -1, 1),
    ]
    began = time.monotonic()
    with pytest.raises(PolicyViolationException) as caught:
        controller.create_topics(topics, validate_only=True)
    with pytest.raises(PolicyViolationException):
        controller.create_topics(topics)
    assert time.monotonic() - began < 0.5  # nothing was placed
    assert caught.value.message == "Excessively large number of partitions per request."
    assert caught.value.error_code == POLICY_VIOLATION
    assert controller.end_offset == before and controller.image.topic("foo") is None


def test_the_count_is_kafkas() -> None:
    assert MAX_PARTITIONS_PER_REQUEST == 10_000
    assert EXCESSIVE_PARTITIONS == "Excessively large number of partitions per request."
    topics = [
        CreatableTopic("default", -1, 1),
        CreatableTopic("manual", -1, -1, assignments={0: (1,), 1: (2,), 2: (3,)}),
        CreatableTopic("zero", 0, 1),
        CreatableTopic("negative", -7, 1),
        CreatableTopic("many", 9990, 1),
    ]
    assert requested_partitions(topics, 6) == 6 + 3 + 9990  # 9,999: within the bound
    assert requested_partitions(topics, 8) == 10_001
    controller = new_controller(num_partitions=8)
    start_brokers(controller, [1, 2, 3])
    with pytest.raises(PolicyViolationException, match="Excessively large number"):
        controller.create_topics(topics)


@given(st.lists(st.integers(-2, 4000), min_size=1, max_size=8))
def test_a_request_is_refused_exactly_when_it_asks_for_more_than_the_bound(
    counts: list[int],
) -> None:
    topics = [CreatableTopic(f"t{i}", count, 1) for i, count in enumerate(counts)]
    total = sum(1 if c == -1 else max(c, 0) for c in counts)
    assert requested_partitions(topics, 1) == total
    if total > MAX_PARTITIONS_PER_REQUEST:
        with pytest.raises(PolicyViolationException):
            check_partitions_per_request(total)
    else:
        check_partitions_per_request(total)


def test_create_partitions_over_the_bound_is_refused_whole() -> None:
    controller = new_controller()
    start_brokers(controller, [1, 2, 3])
    controller.create_topics([CreatableTopic("a", 10, 1), CreatableTopic("b", 1, 1)])
    before = controller.end_offset
    grow = [CreatePartitionsTopic("a", 5010), CreatePartitionsTopic("b", 5002)]
    with pytest.raises(PolicyViolationException, match="Excessively large number"):
        controller.create_partitions(grow)
    assert controller.end_offset == before
    assert len(controller.image.topic("a").partitions) == 10
    # Unknown topics and decreases add nothing: answered one by one as before.
    results = controller.create_partitions(
        [CreatePartitionsTopic("a", 5), CreatePartitionsTopic("missing", 20_000)]
    )
    assert [r.error.error_code for r in results] == [37, 3]


def test_create_replica_placement_is_bounded_too() -> None:
    controller = new_controller()
    start_brokers(controller, [1, 2, 3])
    began = time.monotonic()
    reply = controller.create_replica_placement(CreateReplicaPlacementRequest(3_000_000, 3))
    assert time.monotonic() - began < 0.5
    assert reply.error.error_code == POLICY_VIOLATION
    assert reply.error.message == EXCESSIVE_PARTITIONS
    assert reply.placements == ()
    fine = controller.create_replica_placement(CreateReplicaPlacementRequest(10, 3))
    assert fine.error.is_success and len(fine.placements) == 10


@pytest.mark.parametrize("name", ["orders.v1", "orders_v1", "a.b_c"])
def test_an_existing_topic_with_dots_or_underscores_already_exists(name: str) -> None:
    controller = new_controller()
    start_brokers(controller, [1, 2, 3])
    (created,) = controller.create_topics([CreatableTopic(name, 1, 1)])
    assert created.error.is_success
    (again,) = controller.create_topics([CreatableTopic(name, 1, 1)])
    assert (again.error.error_code, again.error.message) == (
        36,
        f"Topic '{name}' already exists.",
    )
    # Another name that collides with it is still refused as a collision.
    other = name.replace(".", "#").replace("_", ".").replace("#", "_")
    (colliding,) = controller.create_topics([CreatableTopic(other, 1, 1)])
    assert (colliding.error.error_code, colliding.error.message) == (
        17,
        f"Topic '{other}' collides with existing topic: {name}",
    )


def test_only_the_registering_connection_may_fence_or_stop_its_broker() -> None:
    controller = new_controller()
    broker, stranger = object(), object()
    for broker_id in (1, 2):
        controller.register_broker(registration(broker_id), session=broker)
        heartbeat(controller, broker_id)
    epoch = controller.image.brokers[2].broker_epoch
    applied = controller.end_offset - 1
    for flags in ({"want_shut_down": True}, {"want_fence": True}):
        with pytest.raises(StaleBrokerEpochException, match="connection it registered on"):
            controller.broker_heartbeat(
                BrokerHeartbeatRequest(2, epoch, applied, **flags), session=stranger
            )
        assert not controller.image.brokers[2].fenced
    # A heartbeat that asks for nothing is accepted from anywhere, as in Kafka.
    plain = controller.broker_heartbeat(BrokerHeartbeatRequest(2, epoch, applied), session=stranger)
    assert not plain.is_fenced
    # The broker itself may ask.
    asked = controller.broker_heartbeat(
        BrokerHeartbeatRequest(2, epoch, applied, want_shut_down=True), session=broker
    )
    assert asked.should_shut_down and controller.image.brokers[2].fenced


def test_registering_again_moves_the_session() -> None:
    controller = new_controller()
    old, new = object(), object()
    controller.register_broker(registration(1), session=old)
    heartbeat(controller, 1)
    reply = controller.register_broker(registration(1), session=new)
    applied = controller.end_offset - 1
    with pytest.raises(StaleBrokerEpochException):
        controller.broker_heartbeat(
            BrokerHeartbeatRequest(1, reply.broker_epoch, applied, want_fence=True), session=old
        )
    fenced = controller.broker_heartbeat(
        BrokerHeartbeatRequest(1, reply.broker_epoch, applied, want_fence=True), session=new
    )
    assert fenced.is_fenced


def test_heartbeats_heard_but_not_processed_keep_the_lease() -> None:
    clock = ManualClock(0)
    controller = new_controller(clock=clock)
    start_brokers(controller, [1, 2, 3])
    epochs = {b: controller.image.brokers[b].broker_epoch for b in (1, 2, 3)}
    clock.advance(9001)  # every lease has run out...
    # ...but 1 and 2 heartbeated meanwhile (their requests wait behind a long command), at
    # t=5000 and t=3000, and 3 only with an epoch that is not its registration's.
    heard = {1: (epochs[1], 5000), 2: (epochs[2], 3000), 3: (-5, 9000)}
    assert controller.maybe_fence_stale_brokers(heard=heard) == [3]
    assert not controller.image.brokers[1].fenced and not controller.image.brokers[2].fenced
    clock.advance(3000)  # t=12001: 2's lease (from t=3000) has run out, 1's has not
    assert controller.maybe_fence_stale_brokers() == [2]
    clock.advance(2000)
    assert controller.maybe_fence_stale_brokers() == [1]


def test_a_heartbeat_heard_and_already_processed_extends_nothing() -> None:
    clock = ManualClock(0)
    controller = new_controller(clock=clock)
    start_brokers(controller, [1])
    epoch = controller.image.brokers[1].broker_epoch
    clock.advance(100)
    heartbeat(controller, 1)  # processed at t=100, heard at t=50
    clock.advance(9001)
    assert controller.maybe_fence_stale_brokers(heard={1: (epoch, 50)}) == [1]


@given(st.lists(st.tuples(st.integers(1, 4), st.integers(0, 20_000)), max_size=12))
def test_leases_stay_in_order_of_contact(contacts: list[tuple[int, int]]) -> None:
    clock = ManualClock(0)
    controller = new_controller(clock=clock)
    start_brokers(controller, [1, 2, 3, 4])
    epochs = {b: controller.image.brokers[b].broker_epoch for b in (1, 2, 3, 4)}
    last = {b: 0 for b in epochs}
    for broker, at in contacts:
        controller.maybe_fence_stale_brokers(now_ms=0, heard={broker: (epochs[broker], at)})
        last[broker] = max(last[broker], at)
    clock.advance(30_000)
    stale = controller.tracker.stale_brokers(clock())
    assert set(stale) == set(epochs)  # all silent for longer than a session
    assert [last[b] for b in stale] == sorted(last[b] for b in stale)  # longest silent first
