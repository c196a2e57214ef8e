"""Log directories in the controller (KIP-858): AssignReplicasToDirs records where each replica
is; a heartbeat naming an offline directory moves its replicas' leaderships and ISR places
and shrinks the broker's registration to its online directories."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackwise.controller import BrokerHeartbeatRequest, Controller, CreatableTopic
from rackwise.controller.brokers import replica_directory
from rackwise.controller.errors import StaleBrokerEpochException
from rackwise.records.constants import DIRECTORY_UNASSIGNED
from tests.controller.helpers import (
    check_invariants,
    heartbeat,
    log_dir,
    new_controller,
    partitions,
    registration,
)


def _cluster(brokers: int = 3, dirs: int = 2) -> Controller:
    controller = new_controller()
    for broker_id in range(1, brokers + 1):
        controller.register_broker(registration(broker_id, dirs=dirs))
        assert not heartbeat(controller, broker_id).is_fenced
    return controller


def _epoch(controller: Controller, broker_id: int) -> int:
    return controller.image.brokers[broker_id].broker_epoch


def test_a_new_replica_on_a_broker_of_several_dirs_is_unassigned_until_the_broker_says() -> None:
    controller = _cluster()
    controller.create_topics([CreatableTopic("t", assignments={0: (1, 2, 3)})])
    (partition,) = partitions(controller.image, "t")
    assert replica_directory(partition, 2) == DIRECTORY_UNASSIGNED
    topic_id = controller.image.topic("t").topic_id  # type: ignore[union-attr]
    codes = controller.assign_replicas_to_dirs(
        2, _epoch(controller, 2), [(topic_id, 0, log_dir(2, 1))]
    )
    assert codes == {(topic_id, 0): 0}
    (partition,) = partitions(controller.image, "t")
    assert replica_directory(partition, 2) == log_dir(2, 1)
    assert replica_directory(partition, 1) == DIRECTORY_UNASSIGNED
    assert (partition.leader, partition.isr) == (1, (1, 2, 3))  # nothing else changed


def test_assignments_are_answered_per_partition_and_a_stale_epoch_fails_them_all() -> None:
    controller = _cluster()
    controller.create_topics([CreatableTopic("t", assignments={0: (1, 2), 1: (2, 3)})])
    topic_id = controller.image.topic("t").topic_id  # type: ignore[union-attr]
    unknown = uuid.UUID(int=99999)
    codes = controller.assign_replicas_to_dirs(
        1,
        _epoch(controller, 1),
        [
            (topic_id, 0, log_dir(1, 0)),
            (topic_id, 1, log_dir(1, 0)),  # broker 1 holds no replica of t-1
            (topic_id, 7, log_dir(1, 0)),
            (unknown, 0, log_dir(1, 0)),
        ],
    )
    assert codes == {(topic_id, 0): 0, (topic_id, 1): 6, (topic_id, 7): 3, (unknown, 0): 100}
    with pytest.raises(StaleBrokerEpochException):
        controller.assign_replicas_to_dirs(1, _epoch(controller, 1) + 1, [])


def test_an_offline_directory_moves_leadership_and_isr_off_its_replicas_only() -> None:
    controller = _cluster()
    controller.create_topics(
        [CreatableTopic("t", assignments={0: (2, 1, 3), 1: (2, 3, 1), 2: (1, 2, 3)})]
    )
    topic_id = controller.image.topic("t").topic_id  # type: ignore[union-attr]
    epoch = _epoch(controller, 2)
    controller.assign_replicas_to_dirs(
        2,
        epoch,
        [(topic_id, 0, log_dir(2, 1)), (topic_id, 1, log_dir(2, 0)), (topic_id, 2, log_dir(2, 1))],
    )
    controller.broker_heartbeat(
        BrokerHeartbeatRequest(
            2, epoch, controller.end_offset - 1, offline_log_dirs=(log_dir(2, 1),)
        )
    )
    t0, t1, t2 = partitions(controller.image, "t")
    assert (t0.leader, t0.isr) == (1, (1, 3))
    assert (t1.leader, t1.isr) == (2, (2, 3, 1))  # on the good directory: untouched
    assert (t2.leader, t2.isr) == (1, (1, 3))
    assert controller.image.brokers[2].log_dirs == (log_dir(2, 0),)
    assert not controller.image.brokers[2].fenced
    before = controller.end_offset
    controller.broker_heartbeat(  # said again: nothing more to write
        BrokerHeartbeatRequest(
            2, epoch, controller.end_offset - 1, offline_log_dirs=(log_dir(2, 1),)
        )
    )
    assert controller.end_offset == before
    check_invariants(controller.image)
    # a replica later reported in the offline directory leaves its ISR at once
    controller.create_topics([CreatableTopic("u", assignments={0: (2, 3)})])
    u_id = controller.image.topic("u").topic_id  # type: ignore[union-attr]
    controller.assign_replicas_to_dirs(2, epoch, [(u_id, 0, log_dir(2, 1))])
    (u0,) = partitions(controller.image, "u")
    assert (u0.leader, u0.isr) == (3, (3,))


@settings(max_examples=40, deadline=None)
@given(
    placements=st.lists(
        st.tuples(st.permutations([1, 2, 3]), st.integers(0, 1)), min_size=1, max_size=8
    ),
    failed=st.integers(0, 1),
)
def test_after_a_directory_fails_no_replica_in_it_leads_or_is_in_sync(
    placements: list[tuple[list[int], int]], failed: int
) -> None:
    controller = _cluster()
    controller.create_topics(
        [CreatableTopic("p", assignments={i: tuple(r) for i, (r, _) in enumerate(placements)})]
    )
    topic_id = controller.image.topic("p").topic_id  # type: ignore[union-attr]
    epoch = _epoch(controller, 1)
    controller.assign_replicas_to_dirs(
        1, epoch, [(topic_id, i, log_dir(1, d)) for i, (_, d) in enumerate(placements)]
    )
    controller.broker_heartbeat(
        BrokerHeartbeatRequest(
            1, epoch, controller.end_offset - 1, offline_log_dirs=(log_dir(1, failed),)
        )
    )
    for i, partition in enumerate(partitions(controller.image, "p")):
        on_failed = placements[i][1] == failed
        assert (1 in partition.isr) != on_failed
        assert (partition.leader == 1) == (not on_failed and partition.replicas[0] == 1)
    check_invariants(controller.image)
