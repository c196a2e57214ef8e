"""The fsyncs after a roll, on the log manager's own thread: appends and reads go on while
they wait, the recovery point moves only once they are done, and never past a truncation that
came in between."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from rackwise.storage.config import LogConfig
from rackwise.storage.files import FileCache
from rackwise.storage.log import PartitionLog
from rackwise.storage.manager import LogManager
from rackwise.storage.producer_state import read_snapshot, snapshot_name
from tests.storage.helpers import Clock, HeldFirstCall, batch, drain, read_all

ROLLING = LogConfig(segment_bytes=2_000)


def _hold_segment_fsyncs(monkeypatch: pytest.MonkeyPatch) -> HeldFirstCall:
    """The first fsync of a ``.log`` file, once armed, waits to be released."""
    held = HeldFirstCall(FileCache.fsync, lambda cache, path: path.suffix == ".log")

    def fsync(cache: FileCache, path: Path) -> None:  # a function, so it binds as a method
        held(cache, path)

    monkeypatch.setattr(FileCache, "fsync", fsync)
    return held


def _manager(tmp_path: Path) -> LogManager:
    manager = LogManager(
        [tmp_path / "data"], clock=Clock(), default_config=ROLLING, max_open_files=32
    )
    manager.startup()
    return manager


def _rolled_while_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, segments: int
) -> tuple[HeldFirstCall, LogManager, PartitionLog]:
    """A log appended to until it has ``segments`` segments, the flush of its first roll
    waiting in the fsync of the rolled segment."""
    held = _hold_segment_fsyncs(monkeypatch)
    manager = _manager(tmp_path)
    log = manager.get_or_create("orders", 0, topic_id=None, config=ROLLING)
    held.armed = True
    while len(log.segments) < segments:
        log.append_as_leader(batch(5), leader_epoch=0)
    assert held.entered.wait(10)
    return held, manager, log


def test_appends_and_reads_go_on_while_a_rolled_segment_is_fsynced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    held, manager, log = _rolled_while_held(tmp_path, monkeypatch, 2)
    rolled_at = log.segments[1].base_offset
    # The flusher waits in its fsync; the log takes appends and serves reads meanwhile.
    done = threading.Event()

    def more() -> None:
        for _ in range(5):
            log.append_as_leader(batch(5), leader_epoch=0)
        done.set()

    threading.Thread(target=more).start()
    assert done.wait(5), "appends waited for the fsync of a rolled segment"
    assert read_all(log)[-1][0] == log.log_end_offset - 5  # the last batch, of 5 records
    assert log.recovery_point < rolled_at  # not flushed yet
    held.release.set()
    manager.shutdown()  # waits for the flusher, then flushes the rest
    reopened = _manager(tmp_path).get("orders", 0)
    assert reopened is not None and reopened.recovery_point == reopened.log_end_offset


def test_the_recovery_point_moves_when_the_background_flush_is_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    held, manager, log = _rolled_while_held(tmp_path, monkeypatch, 2)
    rolled_at = log.segments[1].base_offset
    assert log.recovery_point == 0
    held.release.set()
    drain(manager)  # the flush queued before it is done
    assert log.recovery_point == rolled_at
    # The roll's producer snapshot, written without an fsync, was fsynced with the segment.
    assert read_snapshot(log.directory / snapshot_name(rolled_at)) == []


def test_a_truncation_during_the_flush_keeps_the_recovery_point_below_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two rolls: one flush waiting in its fsync, one queued behind it.
    held, manager, log = _rolled_while_held(tmp_path, monkeypatch, 3)
    cut = log.segments[1].base_offset - 2  # inside the first segment
    log.truncate_to(cut)
    held.release.set()
    drain(manager)
    assert log.log_end_offset == cut
    assert log.recovery_point <= cut


def test_the_flush_ms_flush_lets_appends_through_while_it_fsyncs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = _hold_segment_fsyncs(monkeypatch)
    clock = Clock()
    config = LogConfig(flush_ms=1_000)
    manager = LogManager([tmp_path / "data"], clock=clock, default_config=config)
    manager.startup()
    log = manager.get_or_create("orders", 0, topic_id=None, config=config)
    log.append_as_leader(batch(5), leader_epoch=0)
    clock.now_ms += 1_000
    held.armed = True
    flusher = threading.Thread(target=manager.flush_dirty, args=(clock(),))
    flusher.start()
    assert held.entered.wait(10)
    log.append_as_leader(batch(5), leader_epoch=0)  # would wait for the fsync under the lock
    assert log.recovery_point == 0
    held.release.set()
    flusher.join(10)
    assert log.recovery_point == 5  # the log end when the flush began
    assert log.last_flush_ms == clock()
