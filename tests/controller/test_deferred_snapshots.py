"""Deferred snapshots: the controller hands out the image as of an offset and its caller writes
it; at most one is out at a time, commits go on meanwhile, and a failed one is tried again only
at the next threshold."""

from __future__ import annotations

import pytest

from rackwise.common.errors import RackwiseError
from rackwise.controller import Controller, CreatableTopic, SnapshotJob
from rackwise.image import MetadataDelta
from rackwise.metalog import InMemoryMetadataLog
from tests.controller.helpers import new_controller, start_brokers

THRESHOLD_BYTES = 2_000


def deferred(log: InMemoryMetadataLog) -> Controller:
    controller = new_controller(log=log)
    controller.is_snapshot_deferred = True
    return controller


def fill(controller: Controller, first: int, count: int) -> None:
    for i in range(first, first + count):
        controller.create_topics([CreatableTopic(f"t{i}", 8, 3)])


def test_nothing_is_written_until_the_caller_writes_the_job() -> None:
    log = InMemoryMetadataLog(max_record_bytes_between_snapshots=THRESHOLD_BYTES)
    controller = deferred(log)
    start_brokers(controller, [1, 2, 3])
    assert not log.snapshot_due() and controller.maybe_begin_snapshot() is None
    fill(controller, 0, 6)
    assert log.snapshot_ids() == [] and log.snapshot_due()
    job = controller.maybe_begin_snapshot()
    assert job is not None
    assert (job.image, job.end_offset) == (controller.image, controller.end_offset)
    # Commits go on while the job is out; no second job is handed out meanwhile.
    fill(controller, 6, 6)
    assert controller.end_offset > job.end_offset
    assert controller.maybe_begin_snapshot() is None
    snapshot_id = log.write_snapshot(job.image.to_records(), job.end_offset)
    controller.snapshot_written(job)
    assert snapshot_id.end_offset == job.end_offset
    # The snapshot holds the image it was made from, not the later one.
    reader = log.read_snapshot()
    assert reader is not None
    delta = MetadataDelta()
    for records in reader.batches():
        delta.replay_all(records)
    assert delta.apply() == job.image != controller.image
    # The log after the snapshot replays to the controller's image.
    reopened = new_controller(log=log)
    assert reopened.recovery.snapshot_end_offset == job.end_offset
    assert reopened.image == controller.image


def test_a_failed_job_is_retried_at_the_next_threshold() -> None:
    log = InMemoryMetadataLog(max_record_bytes_between_snapshots=THRESHOLD_BYTES)
    controller = deferred(log)
    start_brokers(controller, [1, 2, 3])
    fill(controller, 0, 6)
    job = controller.maybe_begin_snapshot()
    assert job is not None
    controller.snapshot_failed(job)
    failed_at = log.bytes_since_snapshot
    assert controller.maybe_begin_snapshot() is None  # still due, but not yet retried
    i = 6
    while log.bytes_since_snapshot < failed_at + THRESHOLD_BYTES:
        assert controller.maybe_begin_snapshot() is None
        fill(controller, i, 1)
        i += 1
    retry = controller.maybe_begin_snapshot()
    assert retry is not None and retry.end_offset > job.end_offset
    log.write_snapshot(retry.image.to_records(), retry.end_offset)
    controller.snapshot_written(retry)
    assert controller.maybe_begin_snapshot() is None
    assert not log.snapshot_due()


def test_ending_a_job_that_is_not_out_is_a_bug() -> None:
    log = InMemoryMetadataLog(max_record_bytes_between_snapshots=THRESHOLD_BYTES)
    controller = deferred(log)
    stray = SnapshotJob(controller.image, controller.end_offset)
    with pytest.raises(RackwiseError, match="BUG: snapshot job at offset 1 is not the one out"):
        controller.snapshot_written(stray)


def test_no_snapshot_begins_inside_a_group_commit() -> None:
    controller = deferred(InMemoryMetadataLog())
    with (
        pytest.raises(RackwiseError, match="BUG: a snapshot begun inside a group commit"),
        controller.group_commit(),
    ):
        controller.maybe_begin_snapshot()


def test_inline_snapshots_still_happen_in_the_commit() -> None:
    log = InMemoryMetadataLog(max_record_bytes_between_snapshots=THRESHOLD_BYTES)
    controller = new_controller(log=log)
    start_brokers(controller, [1, 2, 3])
    fill(controller, 0, 6)
    assert log.snapshot_ids() and not log.snapshot_due()
    assert controller.maybe_begin_snapshot() is None
