from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rackwise.raft.log import RaftLog, Snapshot, Validity
from rackwise.raft.messages import Batch, OffsetAndEpoch


def batch(base: int, epoch: int, count: int = 1) -> Batch:
    return Batch(base, epoch, tuple(f"r{base + i}" for i in range(count)))


def worked_example() -> RaftLog:
    """The module docstring's log: 0-1 and 2-4 in epoch 1, 5 in epoch 3."""
    return RaftLog(batches=[batch(0, 1, 2), batch(2, 1, 3), batch(5, 3)])


def test_end_offset_for_epoch_finds_the_largest_epoch_not_above() -> None:
    log = worked_example()
    assert log.end_offset_for_epoch(1) == OffsetAndEpoch(1, 5)
    assert log.end_offset_for_epoch(2) == OffsetAndEpoch(1, 5)
    assert log.end_offset_for_epoch(3) == OffsetAndEpoch(3, 6)
    assert log.end_offset_for_epoch(9) == OffsetAndEpoch(3, 6)
    assert log.end_offset_for_epoch(0) == OffsetAndEpoch(0, 0)


def test_validate_a_diverging_position_and_truncate_as_the_worked_example() -> None:
    leader = worked_example()
    verdict = leader.validate(7, 2)
    assert verdict.kind is Validity.DIVERGING
    assert verdict.offset_and_epoch == OffsetAndEpoch(1, 5)
    follower = RaftLog(batches=[batch(0, 1, 2), batch(2, 1, 2), batch(4, 2, 3)])
    assert follower.truncate_to_end_offset(verdict.offset_and_epoch) == 4
    assert follower.end_offset_and_epoch() == OffsetAndEpoch(1, 4)
    assert leader.validate(4, 1).kind is Validity.VALID


def test_validate_asks_for_the_snapshot_below_or_before_it() -> None:
    log = RaftLog(Snapshot(OffsetAndEpoch(2, 10), b"state"), [batch(10, 3, 2)])
    assert log.validate(4, 1).kind is Validity.SNAPSHOT
    assert log.validate(10, 1).kind is Validity.SNAPSHOT
    assert log.validate(12, 1).kind is Validity.SNAPSHOT  # epoch older than the snapshot's
    assert log.validate(10, 2).kind is Validity.VALID
    assert log.validate(12, 3).kind is Validity.VALID
    assert log.validate(0, 0).kind is Validity.SNAPSHOT


def test_take_snapshot_drops_covered_batches_and_keeps_epochs() -> None:
    log = worked_example()
    log.take_snapshot(Snapshot(OffsetAndEpoch(1, 5), b"s"))
    assert log.start_offset == 5
    assert [b.base_offset for b in log.batches] == [5]
    assert log.end_offset_for_epoch(2) == OffsetAndEpoch(1, 5)
    with pytest.raises(ValueError, match=r"BUG: snapshot id OffsetAndEpoch\(epoch=1, offset=6\)"):
        log.take_snapshot(Snapshot(OffsetAndEpoch(1, 6), b"s"))


def test_read_trims_and_stops_at_the_limit() -> None:
    log = worked_example()
    assert log.read(3, 1) == (Batch(3, 1, ("r3", "r4")),)
    assert [b.base_offset for b in log.read(0, 2)] == [0, 2]
    assert log.read(6, 5) == ()
    assert log.read_committed(0, 4)[-1] == Batch(2, 1, ("r2", "r3"))


def test_truncation_lowers_the_durable_end_and_refuses_the_snapshot() -> None:
    log = worked_example()
    assert log.durable_end_offset == 6
    log.truncate_to(3)
    assert log.durable_end_offset == 3
    assert log.end_offset_and_epoch() == OffsetAndEpoch(1, 3)
    log.take_snapshot(Snapshot(OffsetAndEpoch(1, 2), b""))
    with pytest.raises(ValueError, match="BUG: truncation to 1, below the log start 2"):
        log.truncate_to(1)


@given(st.lists(st.tuples(st.integers(0, 2), st.integers(1, 3)), min_size=1, max_size=20))
def test_a_log_validates_its_own_end_and_every_batch_boundary(runs: list[tuple[int, int]]) -> None:
    batches, offset, epoch = [], 0, 1
    for bump, count in runs:
        epoch += bump
        batches.append(batch(offset, epoch, count))
        offset += count
    log = RaftLog(batches=batches)
    for b in batches:
        assert log.validate(b.end_offset, b.epoch).kind is Validity.VALID
        assert log.end_offset_for_epoch(b.epoch).offset >= b.end_offset
    end = log.end_offset_and_epoch()
    assert log.validate(end.offset + 1, end.epoch).kind is Validity.DIVERGING
