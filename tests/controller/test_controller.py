"""The controller facade: commit then replay, recovery through the same replay, snapshots,
a refused append, epochs."""

from __future__ import annotations

import pytest

from rackwise.controller import (
    METADATA_VERSION_LEVEL,
    CreatableTopic,
    CreatePartitionsTopic,
    ManualClock,
    MetadataLogLike,
)
from rackwise.image import replay
from rackwise.metalog import InMemoryMetadataLog, MetadataLogError, load_image
from rackwise.records import FeatureLevelRecord
from tests.controller.helpers import (
    check_invariants,
    heartbeat,
    new_controller,
    partitions,
    registration,
    start_brokers,
)


def test_the_interface_is_what_the_logs_offer() -> None:
    def takes(log: MetadataLogLike) -> MetadataLogLike:
        return log

    log = InMemoryMetadataLog()
    assert takes(log) is log
    for name in ("append_batches", "read_from", "read_snapshot", "write_snapshot", "snapshot_due"):
        assert callable(getattr(log, name))


def test_an_empty_log_gets_the_metadata_version_first() -> None:
    controller = new_controller()
    records = [r for b in controller.log.read_from(0) for r in b.records]
    assert records == [
        FeatureLevelRecord(name="metadata.version", feature_level=METADATA_VERSION_LEVEL)
    ]
    assert controller.end_offset == 1 and controller.epoch == 1


def test_the_image_is_the_replay_of_the_log() -> None:
    clock = ManualClock(0)
    log = InMemoryMetadataLog()
    controller = new_controller(log=log, clock=clock)
    start_brokers(controller, {1: "/a", 2: "/b", 3: "/c"})
    controller.create_topics([CreatableTopic("t", 6, 3), CreatableTopic("u", 2, 2)])
    clock.advance(9001)
    heartbeat(controller, 2)
    controller.maybe_fence_stale_brokers()
    controller.delete_topics(names=["u"])
    log_records = [r for b in controller.log.read_from(0) for r in b.records]
    assert replay(log_records) == controller.image
    assert load_image(log).image == controller.image
    check_invariants(controller.image)


def test_reopening_recovers_the_same_image_and_derived_state() -> None:
    controller = new_controller()
    start_brokers(controller, [1, 2])
    controller.create_topics([CreatableTopic("a.b", 2, 2)])
    reopened = new_controller(log=controller.log)
    assert reopened.image == controller.image
    assert reopened.state.register_offsets == controller.state.register_offsets
    assert reopened.recovery.num_log_records == controller.end_offset
    assert reopened.epoch == 2
    # Derived views are rebuilt from the records: the collision check still sees "a.b".
    (result,) = reopened.create_topics([CreatableTopic("a_b", 1, 1)])
    assert result.error.error_code == 17


def test_snapshots_are_written_when_due_and_recovery_starts_from_them() -> None:
    log = InMemoryMetadataLog(max_record_bytes_between_snapshots=2_000)
    controller = new_controller(log=log)
    start_brokers(controller, [1, 2, 3])
    for i in range(6):
        controller.create_topics([CreatableTopic(f"t{i}", 8, 3)])
    snapshot = log.latest_snapshot_id()
    assert snapshot is not None and snapshot.end_offset > 0
    reopened = new_controller(log=log)
    assert reopened.recovery.snapshot_end_offset == snapshot.end_offset
    assert reopened.recovery.num_snapshot_records > 0
    assert reopened.image == controller.image
    # Registrations from a snapshot count as at its last offset, as in Kafka.
    assert controller.state.register_offsets[1] < snapshot.end_offset - 1
    assert reopened.state.register_offsets[1] == snapshot.end_offset - 1


def test_a_refused_append_changes_nothing() -> None:
    log = InMemoryMetadataLog()
    controller = new_controller(log=log)
    start_brokers(controller, [1])
    before_image, before_offset = controller.image, controller.end_offset
    log.fail_next_append(MetadataLogError("disk on fire"))
    with pytest.raises(MetadataLogError, match="disk on fire"):
        controller.create_topics([CreatableTopic("t", 1, 1)])
    assert controller.image is before_image and controller.end_offset == before_offset
    (result,) = controller.create_topics([CreatableTopic("t", 1, 1)])
    assert result.error.is_success
    assert [p.partition_id for p in partitions(controller.image, "t")] == [0]


def test_each_stale_broker_is_fenced_in_its_own_batch() -> None:
    clock = ManualClock(0)
    controller = new_controller(clock=clock)
    start_brokers(controller, [1, 2, 3])
    controller.create_topics([CreatableTopic("t", assignments={0: (1, 2, 3)})])
    clock.advance(9001)
    heartbeat(controller, 3)
    start = controller.end_offset
    assert controller.maybe_fence_stale_brokers() == [1, 2]
    batches = [b.records for b in controller.log.read_from(start)]
    assert len(batches) == 2
    (p,) = partitions(controller.image, "t")
    # Each fencing sees the one before: fencing 1 elects 2, then fencing 2 elects 3.
    assert (p.leader, p.isr, p.leader_epoch, p.partition_epoch) == (3, (3,), 2, 2)


def test_group_commit_appends_once_and_each_command_sees_the_previous() -> None:
    log = InMemoryMetadataLog()
    controller = new_controller(log=log)
    start_brokers(controller, [1, 2, 3])
    start = controller.end_offset
    with controller.group_commit():
        first = controller.create_topics([CreatableTopic("a", 2, 2)])
        again = controller.create_topics([CreatableTopic("a", 2, 2)])  # sees the first
        controller.create_partitions([CreatePartitionsTopic("a", 3)])
        assert log.end_offset == start  # nothing durable inside the block
    assert first[0].error.is_success and again[0].error.error_code == 36
    batches = list(log.read_from(start))
    assert len(batches) == 2 and controller.end_offset == log.end_offset
    assert replay([r for b in log.read_from(0) for r in b.records]) == controller.image


def test_a_failed_group_commit_goes_back_to_before_the_block() -> None:
    log = InMemoryMetadataLog()
    controller = new_controller(log=log)
    start_brokers(controller, [1, 2])
    before_image, before_offsets = controller.image, dict(controller.state.register_offsets)
    log.fail_next_append(MetadataLogError("no space left"))
    with pytest.raises(MetadataLogError), controller.group_commit():
        controller.register_broker(registration(3))
        controller.create_topics([CreatableTopic("a", 1, 1)])
    assert controller.image is before_image and controller.end_offset == log.end_offset
    assert controller.state.register_offsets == before_offsets
    assert 3 not in controller.tracker
    (result,) = controller.create_topics([CreatableTopic("a", 1, 1)])
    assert result.error.is_success
