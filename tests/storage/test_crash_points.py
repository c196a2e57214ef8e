"""A crash at each named point of the log's multi-step changes, then an unclean reopen."""

from __future__ import annotations

from pathlib import Path

import pytest

from rackwise.common.types import TopicPartition
from rackwise.storage.checkpoints import atomic_write, read_offsets, write_offsets
from rackwise.storage.config import LogConfig
from rackwise.storage.log import CRASH_POINTS
from tests.storage.helpers import START_MS, LogHarness, batch, read_all


class SimulatedCrash(Exception):
    """The process dies here."""


def _crash_at(h: LogHarness, point: str) -> None:
    assert h.log is not None

    def hook(reached: str) -> None:
        if reached == point:
            raise SimulatedCrash(point)

    h.log.crash_point = hook


def _die_and_reopen(h: LogHarness, *, recovery_point: int, log_start_offset: int) -> None:
    """Drop the process's descriptors and reopen as after a crash, with the offsets the last
    checkpoint held."""
    h.files.forget_under(h.directory)
    assert h.log is not None
    h.log.log_start_offset = log_start_offset
    h.open(clean=False, recovery_point=recovery_point)


def _filled(tmp_path: Path) -> LogHarness:
    h = LogHarness(tmp_path / "t-0", LogConfig(segment_bytes=10_000, retention_ms=1_000))
    log = h.open()
    for i in range(6):
        log.append_as_leader(batch(2, size=30), leader_epoch=i)
    return h


@pytest.mark.parametrize("point", ["roll.segment-created", "roll.snapshot-written"])
def test_a_crash_during_a_roll_keeps_every_batch(tmp_path: Path, point: str) -> None:
    h = _filled(tmp_path)
    assert h.log is not None
    before = read_all(h.log)
    _crash_at(h, point)
    with pytest.raises(SimulatedCrash):
        h.log.roll()
    _die_and_reopen(h, recovery_point=0, log_start_offset=0)
    assert h.log is not None
    assert read_all(h.log) == before and h.log.log_end_offset == 12
    assert h.log.append_as_leader(batch(1), leader_epoch=6).first_offset == 12
    assert h.log.epochs.epoch_entries[-1] == (6, 12)


@pytest.mark.parametrize("point", ["truncate-fully.old-deleted", "truncate-fully.segment-created"])
def test_a_crash_during_a_full_truncation_leaves_no_stale_data(tmp_path: Path, point: str) -> None:
    h = _filled(tmp_path)
    assert h.log is not None
    _crash_at(h, point)
    with pytest.raises(SimulatedCrash):
        h.log.truncate_fully_and_start_at(50)
    _die_and_reopen(h, recovery_point=0, log_start_offset=0)
    assert h.log is not None
    assert read_all(h.log) == []
    assert h.log.log_end_offset in (0, 50)
    h.log.truncate_fully_and_start_at(50)  # the follower's fetch asks for it again
    assert h.log.append_as_leader(batch(1), leader_epoch=9).first_offset == 50


@pytest.mark.parametrize("point", ["retention.start-offset-moved", "retention.segment-deleted"])
def test_a_crash_during_retention_is_finished_by_the_next_pass(tmp_path: Path, point: str) -> None:
    h = LogHarness(tmp_path / "t-0", LogConfig(segment_bytes=230, retention_ms=1_000))
    log = h.open()
    for i in range(6):
        log.append_as_leader(batch(1, size=40), leader_epoch=i)
    assert len(log.segments) == 3
    log.update_high_watermark(6)
    _crash_at(h, point)
    with pytest.raises(SimulatedCrash):
        log.delete_old_segments(START_MS + 10_000)
    _die_and_reopen(h, recovery_point=0, log_start_offset=0)
    assert h.log is not None
    left = [o for o, _ in read_all(h.log)]
    assert left == list(range(h.log.log_start_offset, 6))  # whatever is left is contiguous
    h.log.update_high_watermark(6)
    h.log.delete_old_segments(START_MS + 10_000)
    assert (h.log.log_start_offset, h.log.log_end_offset) == (6, 6)
    assert [s.base_offset for s in h.log.segments] == [6]


def test_every_crash_point_is_tested() -> None:
    tested = {
        "roll.segment-created",
        "roll.snapshot-written",
        "truncate-fully.old-deleted",
        "truncate-fully.segment-created",
        "retention.start-offset-moved",
        "retention.segment-deleted",
    }
    assert set(CRASH_POINTS) == tested


def test_a_crash_before_a_checkpoints_rename_leaves_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "recovery-point-offset-checkpoint"
    write_offsets(path, {TopicPartition("t", 0): 5})
    # The crash point of atomic_write: the .tmp sibling is written and fsynced, not renamed.
    (tmp_path / "recovery-point-offset-checkpoint.tmp").write_bytes(b"0\n1\nt 0 9")
    assert read_offsets(path) == {TopicPartition("t", 0): 5}
    atomic_write(path, b"0\n1\nt 0 9\n")
    assert read_offsets(path) == {TopicPartition("t", 0): 9}
    assert not (tmp_path / "recovery-point-offset-checkpoint.tmp").exists()
