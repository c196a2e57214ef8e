"""The fsyncs after a roll, on the log manager's own thread: appends and reads go on while
they wait, the recovery point moves only once they are done, and never past a truncation that
came in between."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from rackwise.storage.config import LogConfig
from rackwise.storage.files import FileCache
from rackwise.storage.manager import LogManager
from rackwise.storage.producer_state import read_snapshot, snapshot_name
from tests.storage.helpers import Clock, batch, read_all

ROLLING = LogConfig(segment_bytes=2_000)


class _HeldFsync:
    """FileCache.fsync that, once armed, holds the first fsync of a ``.log`` file until
    released: an fsync behind gigabytes of dirty pages, in slow motion."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.armed = False
        self.entered = threading.Event()
        self.release = threading.Event()
        real = FileCache.fsync

        def fsync(cache: FileCache, path: Path) -> None:
            if self.armed and path.suffix == ".log" and not self.entered.is_set():
                self.entered.set()
                assert self.release.wait(10), "the held fsync was never released"
            real(cache, path)

        monkeypatch.setattr(FileCache, "fsync", fsync)


def _manager(tmp_path: Path) -> LogManager:
    manager = LogManager(
        [tmp_path / "data"], clock=Clock(), default_config=ROLLING, max_open_files=32
    )
    manager.startup()
    return manager


def _append_until_rolled(log, segments: int) -> None:  # type: ignore[no-untyped-def]
    while len(log.segments) < segments:
        log.append_as_leader(batch(5), leader_epoch=0)


def test_appends_and_reads_go_on_while_a_rolled_segment_is_fsynced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = _HeldFsync(monkeypatch)
    manager = _manager(tmp_path)
    log = manager.get_or_create("orders", 0, topic_id=None, config=ROLLING)
    held.armed = True
    _append_until_rolled(log, 2)
    rolled_at = log.segments[1].base_offset
    assert held.entered.wait(10)
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
    held = _HeldFsync(monkeypatch)
    manager = _manager(tmp_path)
    log = manager.get_or_create("orders", 0, topic_id=None, config=ROLLING)
    held.armed = True
    _append_until_rolled(log, 2)
    rolled_at = log.segments[1].base_offset
    assert held.entered.wait(10)
    assert log.recovery_point == 0
    held.release.set()
    manager._flusher.submit(lambda: None).result(10)  # the flush queued before it is done
    assert log.recovery_point == rolled_at
    # The roll's producer snapshot, written without an fsync, was fsynced with the segment.
    assert read_snapshot(log.directory / snapshot_name(rolled_at)) == []


def test_a_truncation_during_the_flush_keeps_the_recovery_point_below_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = _HeldFsync(monkeypatch)
    manager = _manager(tmp_path)
    log = manager.get_or_create("orders", 0, topic_id=None, config=ROLLING)
    held.armed = True
    _append_until_rolled(log, 3)  # two rolls: one flush in its fsync, one queued behind it
    assert held.entered.wait(10)
    cut = log.segments[1].base_offset - 2  # inside the first segment
    log.truncate_to(cut)
    held.release.set()
    manager._flusher.submit(lambda: None).result(10)
    assert log.log_end_offset == cut
    assert log.recovery_point <= cut


def test_the_flush_ms_flush_lets_appends_through_while_it_fsyncs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = _HeldFsync(monkeypatch)
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
