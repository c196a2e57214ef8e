"""Partition reassignment (KIP-455) in the controller: starting, completing through
AlterPartition, cancelling, listing, Kafka's errors, and the state machine under hypothesis."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackwise.common.error_codes import NEW_LEADER_ELECTED
from rackwise.controller import Controller, CreatableTopic
from rackwise.controller.alter_partition import (
    AlterPartitionData,
    AlterPartitionRequest,
    AlterPartitionResult,
    AlterPartitionTopic,
    IsrMember,
)
from rackwise.controller.messages import (
    ListPartitionReassignmentsTopic,
    OngoingPartitionReassignment,
    OngoingTopicReassignment,
    ReassignablePartition,
    ReassignableTopic,
)
from rackwise.controller.reassignment import ReassignmentReplicas
from rackwise.image import replay
from rackwise.records.constants import DIRECTORY_UNASSIGNED
from tests.controller.helpers import (
    check_invariants,
    heartbeat,
    log_dir,
    new_controller,
    registration,
    start_brokers,
)


def _cluster(brokers: Sequence[int] = (1, 2, 3, 4), **assignments: Any) -> Controller:
    controller = new_controller()
    start_brokers(controller, list(brokers))
    for name, rows in assignments.items():
        assignment = dict(enumerate(tuple(r) for r in rows))
        controller.create_topics([CreatableTopic(name, assignments=assignment)])
    return controller


def _partition(controller: Controller, topic: str = "t", index: int = 0) -> Any:
    current = controller.image.topic(topic)
    assert current is not None
    return current.partitions[index]


def _reassign(controller: Controller, *targets: tuple[str, int, Any], **kw: Any) -> list[int]:
    """The error code of each (topic, partition, replicas or None), in order."""
    by_topic: dict[str, list[ReassignablePartition]] = {}
    for topic, index, replicas in targets:
        by_topic.setdefault(topic, []).append(
            ReassignablePartition(index, None if replicas is None else tuple(replicas))
        )
    results = controller.alter_partition_reassignments(
        [ReassignableTopic(t, tuple(p)) for t, p in by_topic.items()], **kw
    )
    return [p.error.error_code for r in results for p in r.partitions]


def _alter_isr(controller: Controller, isr: Sequence[int], topic: str = "t") -> Any:
    """The leader of ``topic``-0 asks for ``isr``; its answer."""
    p = _partition(controller, topic)
    current = controller.image.topic(topic)
    assert current is not None
    data = AlterPartitionData(0, p.leader_epoch, p.partition_epoch, tuple(map(IsrMember, isr)))
    request = AlterPartitionRequest(
        p.leader,
        controller.image.brokers[p.leader].broker_epoch,
        (AlterPartitionTopic(current.topic_id, (data,)),),
    )
    (result,) = controller.alter_partition(request)
    (answer,) = result.partitions
    assert isinstance(answer, AlterPartitionResult)
    return answer


def test_reassignment_replicas_as_kafka_computes_them() -> None:
    moving = ReassignmentReplicas.of((1, 2, 3), (4, 3, 5))
    assert moving == ReassignmentReplicas((4, 3, 5, 1, 2), (4, 5), (1, 2))
    assert moving.target == (4, 3, 5) and moving.original == (3, 1, 2)
    assert moving.maybe_complete((1, 2, 3, 4)) == ((), ())  # 5 not in sync yet
    assert moving.maybe_complete((3, 1, 5, 4)) == ((4, 3, 5), (3, 5, 4))
    assert ReassignmentReplicas.of((1, 2), (2, 1)).is_in_progress is False


def test_a_replica_moves_to_another_broker_and_leadership_follows() -> None:
    controller = _cluster(t=[[1]])
    before = _partition(controller)
    assert _reassign(controller, ("t", 0, [2])) == [0]
    p = _partition(controller)
    assert (p.replicas, p.adding_replicas, p.removing_replicas, p.isr) == ((2, 1), (2,), (1,), (1,))
    assert p.leader == 1 and p.leader_epoch == before.leader_epoch  # nobody left yet
    assert controller.list_partition_reassignments(None) == [
        OngoingTopicReassignment("t", (OngoingPartitionReassignment(0, (2, 1), (2,), (1,)),))
    ]
    # broker 2 caught up: the leader adds it, which completes the reassignment and elects 2
    assert _alter_isr(controller, [1, 2]).error_code == NEW_LEADER_ELECTED
    p = _partition(controller)
    assert (p.replicas, p.isr, p.leader) == ((2,), (2,), 2)
    assert (p.adding_replicas, p.removing_replicas) == ((), ())
    assert p.directories == (log_dir(2),)
    assert controller.list_partition_reassignments(None) == []
    check_invariants(controller.image)
    assert replay(controller.image.to_records()) == controller.image


def test_reordering_in_sync_replicas_completes_at_once() -> None:
    controller = _cluster(t=[[1, 2, 3]])
    assert _reassign(controller, ("t", 0, [3, 2, 1])) == [0]
    p = _partition(controller)
    assert (p.replicas, p.adding_replicas, p.removing_replicas, p.leader) == ((3, 2, 1), (), (), 1)
    assert p.directories == (log_dir(3), log_dir(2), log_dir(1))


def test_the_leader_stays_when_it_is_kept() -> None:
    controller = _cluster(t=[[1, 2]])
    assert _reassign(controller, ("t", 0, [1, 3])) == [0]
    epoch = _partition(controller).leader_epoch
    answer = _alter_isr(controller, [1, 2, 3])
    p = _partition(controller)
    assert (p.replicas, p.isr, p.leader) == ((1, 3), (1, 3), 1)
    assert answer.error_code == 0 and answer.leader_epoch == p.leader_epoch == epoch + 1


def test_a_new_replica_on_a_broker_of_several_directories_is_unassigned() -> None:
    controller = new_controller()
    for broker, dirs in ((1, 1), (2, 2)):
        controller.register_broker(registration(broker, dirs=dirs))
        assert not heartbeat(controller, broker).is_fenced
    controller.create_topics([CreatableTopic("t", assignments={0: (1,)})])
    assert _reassign(controller, ("t", 0, [2])) == [0]
    assert _partition(controller).directories == (DIRECTORY_UNASSIGNED, log_dir(1))


def test_cancelling_reverts_to_the_original_replicas() -> None:
    controller = _cluster(t=[[1, 2]])
    assert _reassign(controller, ("t", 0, [3, 4])) == [0]
    assert _partition(controller).replicas == (3, 4, 1, 2)
    assert _alter_isr(controller, [1, 2, 3]).error_code == 0  # 3 caught up, 4 not yet
    assert _reassign(controller, ("t", 0, None)) == [0]
    p = _partition(controller)
    assert (p.replicas, p.isr, p.leader) == ((1, 2), (1, 2), 1)
    assert (p.adding_replicas, p.removing_replicas) == ((), ())
    assert p.directories == (log_dir(1), log_dir(2))
    check_invariants(controller.image)


def test_errors_are_kafkas() -> None:
    controller = _cluster(t=[[1, 2]])
    codes = _reassign(
        controller,
        ("t", 0, []),  # empty
        ("t", 0, [1, 1]),  # twice
        ("t", 0, [1, 9]),  # not registered
        ("t", 0, None),  # nothing to cancel
        ("t", 7, [1, 2]),  # no such partition
        ("nope", 0, [1, 2]),  # no such topic
    )
    assert codes == [39, 39, 39, 85, 3, 3]
    results = controller.alter_partition_reassignments(
        [ReassignableTopic("t", (ReassignablePartition(0, (1, 9)), ReassignablePartition(0, None)))]
    )
    messages = [p.error.message for r in results for p in r.partitions]
    assert messages == [
        "The manual partition assignment includes broker 9, but no such broker is registered.",
        "No partition reassignment is in progress.",
    ]
    assert _reassign(controller, ("t", 0, [1, 2, 3]), allow_replication_factor_change=False) == [38]
    results = controller.alter_partition_reassignments(
        [ReassignableTopic("t", (ReassignablePartition(0, (3,)),))],
        allow_replication_factor_change=False,
    )
    assert results[0].partitions[0].error.message == "The replication factor is changed from 2 to 1"
    assert _partition(controller).partition_epoch == 0  # nothing was written


def test_listing_named_partitions_skips_the_unknown_and_the_settled() -> None:
    controller = _cluster(t=[[1], [2]], u=[[3]])
    assert _reassign(controller, ("t", 1, [3]), ("u", 0, [4])) == [0, 0]
    asked = [
        ListPartitionReassignmentsTopic("t", (0, 1, 5)),
        ListPartitionReassignmentsTopic("missing", (0,)),
    ]
    assert controller.list_partition_reassignments(asked) == [
        OngoingTopicReassignment("t", (OngoingPartitionReassignment(1, (3, 2), (3,), (2,)),))
    ]
    assert [t.name for t in controller.list_partition_reassignments(None)] == ["t", "u"]


def test_fencing_a_removed_leader_elects_a_target_replica() -> None:
    controller = _cluster(t=[[1, 2]])
    assert _reassign(controller, ("t", 0, [2, 3])) == [0]
    assert heartbeat(controller, 1, want_fence=True).is_fenced
    p = _partition(controller)
    assert p.leader == 2 and 1 not in p.isr
    check_invariants(controller.image)


# ---- the state machine -----------------------------------------------------------------------

BROKERS = (1, 2, 3, 4, 5)
replica_sets = st.lists(st.sampled_from(BROKERS), min_size=1, max_size=3, unique=True)


@settings(max_examples=60, deadline=None)
@given(
    current=replica_sets,
    target=replica_sets,
    steps=st.lists(st.tuples(st.booleans(), st.integers(0, 4)), max_size=8),
)
def test_every_reassignment_ends_on_its_target_and_stays_led(
    current: list[int], target: list[int], steps: list[tuple[bool, int]]
) -> None:
    controller = _cluster(BROKERS, t=[current])
    assert _reassign(controller, ("t", 0, target)) == [0]
    for is_grow, pick in steps:
        _check(controller)
        p = _partition(controller)
        outside = [r for r in p.replicas if r not in p.isr]
        others = [r for r in p.isr if r != p.leader]
        if is_grow and outside:  # a follower caught up
            _alter_isr(controller, [*p.isr, outside[pick % len(outside)]])
        elif not is_grow and others:  # a follower fell behind
            _alter_isr(controller, [r for r in p.isr if r != others[pick % len(others)]])
    for _ in range(3):  # every replica catches up in the end
        _check(controller)
        p = _partition(controller)
        if not (p.adding_replicas or p.removing_replicas):
            break
        _alter_isr(controller, [*p.isr, *(r for r in p.replicas if r not in p.isr)])
    p = _partition(controller)
    assert (p.replicas, p.adding_replicas, p.removing_replicas) == (tuple(target), (), ())
    assert set(p.isr) <= set(target) and p.leader in target
    _check(controller)


def _check(controller: Controller) -> None:
    check_invariants(controller.image)
    p = _partition(controller)
    assert p.isr and p.leader in p.isr  # never without a leader while the ISR has one
    assert set(p.adding_replicas) <= set(p.replicas) and set(p.removing_replicas) <= set(p.replicas)
    assert not set(p.adding_replicas) & set(p.removing_replicas)


@pytest.mark.parametrize("target", [[2, 3], [3, 1]])
def test_a_restarted_controller_resumes_a_reassignment(target: list[int]) -> None:
    controller = _cluster(t=[[1, 2]])
    assert _reassign(controller, ("t", 0, target)) == [0]
    again = new_controller(controller.log)
    assert again.image == controller.image
    assert [t.name for t in again.list_partition_reassignments(None)] == ["t"]
