"""AllocateProducerIds in the controller: blocks of 1000 from 0, consecutive and never
overlapping, through group commits, restarts and snapshots; stale requesters refused."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackwise.controller import (
    Controller,
    ControllerState,
    CreatableTopic,
    ProducerIdControl,
    ProducerIdsBlock,
    StaleBrokerEpochException,
    UnknownServerException,
)
from rackwise.controller.producer_ids import MAX_PRODUCER_ID
from rackwise.metalog import InMemoryMetadataLog
from rackwise.records import ProducerIdsRecord
from tests.controller.helpers import heartbeat, new_controller, start_brokers


def _epoch(controller: Controller, broker_id: int) -> int:
    return controller.image.brokers[broker_id].broker_epoch


def _last_record(log: InMemoryMetadataLog) -> Any:
    *_, batch = log.read_from(0)
    return batch.records[-1]


def test_blocks_of_1000_from_0_each_written_before_it_is_answered() -> None:
    log = InMemoryMetadataLog()
    controller = new_controller(log=log)
    start_brokers(controller, [1, 2])
    first = controller.allocate_producer_ids(1, _epoch(controller, 1))
    assert first == ProducerIdsBlock(1, 0, 1000)
    assert (first.last_producer_id, first.next_block_first_id) == (999, 1000)
    assert _last_record(log) == ProducerIdsRecord(
        broker_id=1, broker_epoch=_epoch(controller, 1), next_producer_id=1000
    )
    assert controller.image.next_producer_id == 1000
    second = controller.allocate_producer_ids(2, _epoch(controller, 2))
    assert second == ProducerIdsBlock(2, 1000, 1000)
    assert controller.image.next_producer_id == 2000


@pytest.mark.parametrize(
    ("broker_id", "epoch_offset", "message"),
    [
        (9, 0, "No broker registration found for broker id 9"),
        (1, 1, "Expected broker epoch {epoch}, but got broker epoch {asked}"),
    ],
    ids=["unknown-broker", "old-epoch"],
)
def test_a_stale_requester_is_refused_and_nothing_is_written(
    broker_id: int, epoch_offset: int, message: str
) -> None:
    controller = new_controller()
    start_brokers(controller, [1])
    end, image = controller.end_offset, controller.image
    epoch = _epoch(controller, 1)
    asked = epoch + epoch_offset
    with pytest.raises(StaleBrokerEpochException) as caught:
        controller.allocate_producer_ids(broker_id, asked)
    assert caught.value.error_code == 77
    assert str(caught.value) == message.format(epoch=epoch, asked=asked)
    assert (controller.end_offset, controller.image) == (end, image)


def test_a_fenced_broker_of_the_current_epoch_gets_a_block_as_in_kafka() -> None:
    controller = new_controller()
    start_brokers(controller, [1])
    assert heartbeat(controller, 1, want_fence=True).is_fenced
    assert controller.allocate_producer_ids(1, _epoch(controller, 1)).first_producer_id == 0


def test_two_requests_in_one_group_commit_get_consecutive_blocks() -> None:
    log = InMemoryMetadataLog()
    controller = new_controller(log=log)
    start_brokers(controller, [1, 2])
    with controller.group_commit():
        a = controller.allocate_producer_ids(1, _epoch(controller, 1))
        b = controller.allocate_producer_ids(2, _epoch(controller, 2))
    assert (a.first_producer_id, b.first_producer_id) == (0, 1000)
    assert [r.next_producer_id for r in _records_of(log, ProducerIdsRecord)] == [1000, 2000]


def _records_of(log: InMemoryMetadataLog, kind: type) -> list[Any]:
    return [r for batch in log.read_from(0) for r in batch.records if isinstance(r, kind)]


def test_a_restart_goes_on_after_the_last_block() -> None:
    log = InMemoryMetadataLog()
    controller = new_controller(log=log)
    start_brokers(controller, [1])
    for _ in range(3):
        controller.allocate_producer_ids(1, _epoch(controller, 1))
    reopened = new_controller(log=log)
    assert reopened.image.next_producer_id == 3000
    assert reopened.allocate_producer_ids(1, _epoch(reopened, 1)).first_producer_id == 3000


def test_a_snapshot_keeps_the_next_start_and_a_restart_from_it_goes_on() -> None:
    log = InMemoryMetadataLog(max_record_bytes_between_snapshots=2_000)
    controller = new_controller(log=log)
    start_brokers(controller, [1, 2, 3])
    for _ in range(5):
        controller.allocate_producer_ids(2, _epoch(controller, 2))
    for i in range(6):
        controller.create_topics([CreatableTopic(f"t{i}", 8, 3)])
    snapshot = log.latest_snapshot_id()
    assert snapshot is not None
    reader = log.read_snapshot(snapshot)
    assert reader is not None
    records = [r for batch in reader.batches() for r in batch]
    assert records[-1] == ProducerIdsRecord(broker_id=-1, broker_epoch=-1, next_producer_id=5000)
    reopened = new_controller(log=log)
    assert reopened.recovery.snapshot_end_offset == snapshot.end_offset
    assert reopened.image == controller.image
    assert reopened.allocate_producer_ids(3, _epoch(reopened, 3)) == ProducerIdsBlock(3, 5000, 1000)


def _state_at(next_producer_id: int) -> ControllerState:
    controller = new_controller()
    start_brokers(controller, [1])
    state = controller.state
    record = ProducerIdsRecord(broker_id=1, broker_epoch=-1, next_producer_id=next_producer_id)
    state.replay([record], state.end_offset)
    return state


def test_the_last_block_ends_at_the_int64_limit_and_then_ids_are_exhausted() -> None:
    control = ProducerIdControl()
    state = _state_at(MAX_PRODUCER_ID - 999)
    epoch = state.image.brokers[1].broker_epoch
    records: list[Any] = []
    with pytest.raises(UnknownServerException) as caught:
        control.handle_allocate_producer_ids(state, 1, epoch, records)
    assert caught.value.error_code == -1
    assert str(caught.value) == (
        "Exhausted all producerIds as the next block's end producerId has exceeded the int64 "
        "type limit"
    )
    assert records == []
    last = _state_at(MAX_PRODUCER_ID - 1000)
    block = control.handle_allocate_producer_ids(last, 1, epoch, records)
    assert (block.last_producer_id, block.next_block_first_id) == (
        MAX_PRODUCER_ID - 1,
        MAX_PRODUCER_ID,
    )


def test_a_block_size_must_hold_an_id() -> None:
    with pytest.raises(ValueError, match="at least one id, not 0"):
        ProducerIdControl(0)


# A step: (broker asking, whether it gives a stale epoch, whether the controller restarts first)
STEPS = st.lists(st.tuples(st.integers(1, 3), st.booleans(), st.booleans()), max_size=25)


@settings(max_examples=40, deadline=None)
@given(steps=STEPS)
def test_blocks_never_overlap_and_leave_no_gap(steps: list[tuple[int, bool, bool]]) -> None:
    log = InMemoryMetadataLog(max_record_bytes_between_snapshots=300)
    controller = new_controller(log=log)
    start_brokers(controller, [1, 2, 3])
    blocks: list[ProducerIdsBlock] = []
    for broker_id, is_stale, restart in steps:
        if restart:
            controller = new_controller(log=log)
        epoch = _epoch(controller, broker_id) + (1 if is_stale else 0)
        if is_stale:
            with pytest.raises(StaleBrokerEpochException):
                controller.allocate_producer_ids(broker_id, epoch)
            continue
        blocks.append(controller.allocate_producer_ids(broker_id, epoch))
    assert [b.first_producer_id for b in blocks] == [1000 * i for i in range(len(blocks))]
    assert all(b.size == 1000 for b in blocks)
    assert controller.image.next_producer_id == (1000 * len(blocks) if blocks else -1)
