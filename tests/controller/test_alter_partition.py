"""AlterPartition (KIP-497) in the controller: validation in Kafka's order, the record written,
the answer, and invariants over random requests."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from rackwise.common.error_codes import (
    FENCED_LEADER_EPOCH,
    INELIGIBLE_REPLICA,
    INVALID_REQUEST,
    INVALID_UPDATE_VERSION,
    NOT_CONTROLLER,
    UNKNOWN_TOPIC_ID,
    UNKNOWN_TOPIC_OR_PARTITION,
)
from rackwise.controller import Controller, CreatableTopic, StaleBrokerEpochException
from rackwise.controller.alter_partition import (
    AlterPartitionData,
    AlterPartitionRequest,
    AlterPartitionResult,
    AlterPartitionTopic,
    IsrMember,
)
from rackwise.records import PartitionChangeRecord
from rackwise.records.constants import LEADER_RECOVERED, LEADER_RECOVERING
from tests.controller.helpers import (
    check_invariants,
    heartbeat,
    new_controller,
    partitions,
    start_brokers,
)


def _cluster() -> Controller:
    """Brokers 1-3, topic "t" (3 partitions, RF 3), broker 3 fenced then unfenced: out of
    every ISR, unfenced."""
    controller = new_controller()
    start_brokers(controller, [1, 2, 3])
    controller.create_topics([CreatableTopic("t", 3, 3)])
    assert heartbeat(controller, 3, want_fence=True).is_fenced
    assert not heartbeat(controller, 3).is_fenced
    return controller


def _expand(controller: Controller, index: int, **changes: Any) -> AlterPartitionRequest:
    """The request the leader of t-``index`` sends to add every replica to the ISR."""
    topic = controller.image.topic("t")
    assert topic is not None
    p = topic.partitions[index]
    values: dict[str, Any] = {
        "broker_id": p.leader,
        "broker_epoch": controller.image.brokers[p.leader].broker_epoch,
        "leader_epoch": p.leader_epoch,
        "partition_epoch": p.partition_epoch,
        "isr": p.replicas,
        "topic_id": topic.topic_id,
        "recovery": LEADER_RECOVERED,
    }
    values.update(changes)
    data = AlterPartitionData(
        partition_index=index,
        leader_epoch=values["leader_epoch"],
        partition_epoch=values["partition_epoch"],
        new_isr=tuple(IsrMember(b) for b in values["isr"]),
        leader_recovery_state=values["recovery"],
    )
    return AlterPartitionRequest(
        values["broker_id"],
        values["broker_epoch"],
        (AlterPartitionTopic(values["topic_id"], (data,)),),
    )


def _only(results: Any) -> AlterPartitionResult:
    (topic,) = results
    (partition,) = topic.partitions
    assert isinstance(partition, AlterPartitionResult)
    return partition


def test_the_leader_adds_a_caught_up_replica_to_the_isr() -> None:
    controller = _cluster()
    before = partitions(controller.image, "t")[0]
    assert 3 not in before.isr
    end = controller.end_offset
    answer = _only(controller.alter_partition(_expand(controller, 0)))
    after = partitions(controller.image, "t")[0]
    assert set(after.isr) == {1, 2, 3}
    assert after.partition_epoch == before.partition_epoch + 1
    assert after.leader_epoch == before.leader_epoch and after.leader == before.leader
    assert answer == AlterPartitionResult(
        0,
        0,
        after.leader,
        after.leader_epoch,
        tuple(after.isr),
        LEADER_RECOVERED,
        after.partition_epoch,
    )
    (record,) = controller.log.read_from(end).__next__().records
    assert isinstance(record, PartitionChangeRecord)
    assert record.isr == tuple(before.replicas)
    check_invariants(controller.image)


def test_the_same_request_twice_is_at_an_old_partition_epoch() -> None:
    controller = _cluster()
    request = _expand(controller, 0)
    controller.alter_partition(request)
    end = controller.end_offset
    assert _only(controller.alter_partition(request)).error_code == INVALID_UPDATE_VERSION
    assert controller.end_offset == end


def test_no_change_writes_nothing_and_answers_the_state() -> None:
    controller = _cluster()
    p = partitions(controller.image, "t")[0]
    end = controller.end_offset
    answer = _only(controller.alter_partition(_expand(controller, 0, isr=p.isr)))
    assert controller.end_offset == end
    assert (answer.error_code, answer.isr, answer.partition_epoch) == (
        0,
        tuple(p.isr),
        p.partition_epoch,
    )


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"leader_epoch": 99}, NOT_CONTROLLER),
        ({"partition_epoch": 99}, NOT_CONTROLLER),
        ({"leader_epoch": -1}, FENCED_LEADER_EPOCH),
        ({"broker_id": 2, "broker_epoch": None}, INVALID_REQUEST),
        ({"partition_epoch": 0}, INVALID_UPDATE_VERSION),
        ({"isr": (1, 2, 4)}, INVALID_REQUEST),
        ({"isr": (1, 2, 2)}, INVALID_REQUEST),
        ({"isr": (2, 3)}, INVALID_REQUEST),
        ({"isr": (1, 3), "recovery": LEADER_RECOVERING}, INVALID_REQUEST),
        ({"isr": (1,), "recovery": LEADER_RECOVERING}, INVALID_REQUEST),
    ],
)
def test_refusals_in_kafkas_order(changes: dict[str, Any], error: int) -> None:
    controller = _cluster()
    assert partitions(controller.image, "t")[0].leader == 1
    if changes.get("broker_epoch", 0) is None:
        changes["broker_epoch"] = controller.image.brokers[changes["broker_id"]].broker_epoch
    end = controller.end_offset
    assert _only(controller.alter_partition(_expand(controller, 0, **changes))).error_code == error
    assert controller.end_offset == end


def test_a_fenced_or_shutting_down_member_is_ineligible() -> None:
    controller = _cluster()
    heartbeat(controller, 3, want_fence=True)
    assert _only(controller.alter_partition(_expand(controller, 0))).error_code == (
        INELIGIBLE_REPLICA
    )
    heartbeat(controller, 3)
    heartbeat(controller, 2, want_shut_down=True)  # it leads t-1: it shuts down slowly
    assert controller.image.brokers[2].in_controlled_shutdown
    assert _only(controller.alter_partition(_expand(controller, 0))).error_code == (
        INELIGIBLE_REPLICA
    )


def test_a_member_of_another_broker_epoch_is_ineligible() -> None:
    controller = _cluster()
    request = _expand(controller, 0)
    topic = request.topics[0]
    data = topic.partitions[0]
    stale = AlterPartitionData(
        data.partition_index,
        data.leader_epoch,
        data.partition_epoch,
        (IsrMember(1), IsrMember(2), IsrMember(3, broker_epoch=12345)),
    )
    request = AlterPartitionRequest(
        request.broker_id, request.broker_epoch, (AlterPartitionTopic(topic.topic_id, (stale,)),)
    )
    assert controller.image.brokers[3].broker_epoch != 12345
    assert _only(controller.alter_partition(request)).error_code == INELIGIBLE_REPLICA


def test_unknown_topic_and_partition() -> None:
    controller = _cluster()
    unknown = _expand(controller, 0, topic_id=uuid.UUID(int=77))
    assert _only(controller.alter_partition(unknown)).error_code == UNKNOWN_TOPIC_ID
    request = _expand(controller, 0)
    data = request.topics[0].partitions[0]
    missing = AlterPartitionData(9, data.leader_epoch, data.partition_epoch, data.new_isr)
    request = AlterPartitionRequest(
        request.broker_id,
        request.broker_epoch,
        (AlterPartitionTopic(request.topics[0].topic_id, (missing,)),),
    )
    assert _only(controller.alter_partition(request)).error_code == UNKNOWN_TOPIC_OR_PARTITION


def test_a_stale_requester_is_refused_as_a_whole() -> None:
    controller = _cluster()
    request = _expand(controller, 0, broker_epoch=12345)
    with pytest.raises(StaleBrokerEpochException, match="Expected broker epoch"):
        controller.alter_partition(request)


def test_a_recovering_leader_reports_recovered() -> None:
    controller = _cluster()
    end = controller.end_offset
    topic = controller.image.topic("t")
    assert topic is not None
    p = topic.partitions[0]
    # The partition as an unclean election leaves it: leader 1 alone, RECOVERING.
    controller._commit(
        [
            [
                PartitionChangeRecord(
                    partition_id=0,
                    topic_id=topic.topic_id,
                    isr=(1,),
                    leader_recovery_state=LEADER_RECOVERING,
                )
            ]
        ]
    )
    p = partitions(controller.image, "t")[0]
    assert p.leader_recovery_state == LEADER_RECOVERING and controller.end_offset == end + 1
    answer = _only(controller.alter_partition(_expand(controller, 0, isr=(1, 2))))
    assert answer.error_code == 0 and answer.leader_recovery_state == LEADER_RECOVERED
    assert partitions(controller.image, "t")[0].leader_recovery_state == LEADER_RECOVERED


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 2),
            st.sampled_from([None] * 6 + [1, 2, 3]),  # None: the leader asks
            st.sampled_from([0] * 6 + [-1, 1]),
            st.sampled_from([0] * 6 + [-1, 1]),
            st.tuples(
                st.sampled_from([True] * 6 + [False]),
                st.lists(st.sampled_from([1, 2, 3] * 3 + [4]), max_size=3, unique=True),
            ),
            st.sampled_from(["none", "none", "fence", "unfence"]),
        ),
        max_size=12,
    )
)
def test_random_requests_keep_the_invariants(steps: list[Any]) -> None:
    """Whatever is asked, in whatever state: an accepted change's ISR is the one asked for
    and the answer is the image's partition; a refused one writes nothing."""
    controller = _cluster()
    num_accepted = 0
    for index, chosen, leader_delta, partition_delta, (with_leader, others), fencing in steps:
        if fencing == "fence":
            heartbeat(controller, 3, want_fence=True)
        elif fencing == "unfence":
            heartbeat(controller, 3)
        p = partitions(controller.image, "t")[index]
        requester = p.leader if chosen is None and p.leader > 0 else (chosen or 1)
        isr = [requester] * with_leader + [b for b in others if b != requester]
        request = _expand(
            controller,
            index,
            broker_id=requester,
            broker_epoch=controller.image.brokers[requester].broker_epoch,
            leader_epoch=p.leader_epoch + leader_delta,
            partition_epoch=p.partition_epoch + partition_delta,
            isr=tuple(isr),
        )
        end = controller.end_offset
        answer = _only(controller.alter_partition(request))
        after = partitions(controller.image, "t")[index]
        if answer.error_code != 0:
            assert controller.end_offset == end
            assert after == p
            continue
        assert (requester, leader_delta, partition_delta) == (p.leader, 0, 0)
        assert tuple(after.isr) == tuple(isr) and after.leader == requester
        assert answer.isr == tuple(after.isr)
        assert answer.partition_epoch == after.partition_epoch
        assert answer.leader_epoch == after.leader_epoch
        check_invariants(controller.image)
        num_accepted += 1
    event(f"accepted: {num_accepted if num_accepted < 3 else '3 or more'}")
