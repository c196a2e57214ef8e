"""The leader epoch checkpoint of a broker's log, written on the log manager's thread: a new
epoch is in memory at once, the file follows, and the recovery point never passes an epoch's
start before the file holds it, so an unclean restart still knows every epoch."""

from __future__ import annotations

import errno
import shutil
import threading
from pathlib import Path

import pytest

from rackwise.storage import epochs as epochs_module
from rackwise.storage.checkpoints import read_epochs, write_epochs
from rackwise.storage.config import LogConfig
from rackwise.storage.files import FileCache
from rackwise.storage.log import PartitionLog
from rackwise.storage.manager import LogManager
from tests.storage.helpers import Clock, HeldFirstCall, batch, drain, hold_manager_thread

CHECKPOINT = "leader-epoch-checkpoint"


def _hold_epoch_writes(monkeypatch: pytest.MonkeyPatch) -> HeldFirstCall:
    held = HeldFirstCall(write_epochs)
    monkeypatch.setattr(epochs_module, "write_epochs", held)
    return held


def _manager(tmp_path: Path, failed: list[Path] | None = None) -> LogManager:
    manager = LogManager(
        [tmp_path / "data"], clock=Clock(), default_config=LogConfig(), max_open_files=32
    )
    if failed is not None:
        manager.on_dir_failure = failed.append
    manager.startup()
    return manager


def _log_at_epoch_zero(manager: LogManager) -> PartitionLog:
    log = manager.get_or_create("orders", 0, topic_id=None, config=LogConfig())
    log.append_as_leader(batch(5), leader_epoch=0)
    log.flush()
    assert read_epochs(log.directory / CHECKPOINT) == [(0, 0)]
    return log


def _epoch_two_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[HeldFirstCall, LogManager, PartitionLog]:
    """A log at epoch 0 (offsets 0-4, on disk), then 5 records at epoch 2, the write of the
    new entry waiting in the manager's thread."""
    held = _hold_epoch_writes(monkeypatch)
    manager = _manager(tmp_path)
    log = _log_at_epoch_zero(manager)
    held.armed = True
    log.append_as_leader(batch(5), leader_epoch=2)  # returns while the write waits
    assert held.entered.wait(10)
    return held, manager, log


def _open(directory: Path, *, recovery_point: int, clean: bool) -> PartitionLog:
    """The log in ``directory`` opened on its own, as a restarted broker loads it."""
    return PartitionLog.open(
        directory,
        LogConfig(),
        topic_id=None,
        recovery_point=recovery_point,
        log_start_offset=0,
        had_clean_shutdown=clean,
        files=FileCache(8),
        clock=Clock(),
    )


def test_a_new_epoch_is_taken_while_its_checkpoint_waits_in_an_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    held, manager, log = _epoch_two_held(tmp_path, monkeypatch)
    log.append_as_leader(batch(5), leader_epoch=3)
    assert log.epochs.epoch_entries == [(0, 0), (2, 5), (3, 10)]
    assert log.epochs.end_offset_for(2, log.log_end_offset) == (2, 10)
    assert read_epochs(log.directory / CHECKPOINT) == [(0, 0)]
    held.release.set()
    drain(manager)
    # The second change, made while the first write waited, is written too: the file ends
    # with the newest entries, not with the ones the held write began with.
    assert read_epochs(log.directory / CHECKPOINT) == [(0, 0), (2, 5), (3, 10)]
    assert not log.epochs.unwritten
    manager.shutdown()


def test_the_recovery_point_waits_for_the_new_epoch_to_be_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    held, manager, log = _epoch_two_held(tmp_path, monkeypatch)
    flusher = threading.Thread(target=log.flush)
    flusher.start()
    flusher.join(0.2)
    assert flusher.is_alive(), "the flush moved on before the epoch entry was on disk"
    assert log.recovery_point == 5
    held.release.set()
    flusher.join(10)
    assert log.recovery_point == 10
    assert read_epochs(log.directory / CHECKPOINT) == [(0, 0), (2, 5)]
    manager.shutdown()


def test_a_crash_before_the_checkpoint_is_written_loses_no_epoch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    held, manager, log = _epoch_two_held(tmp_path, monkeypatch)
    log.append_as_leader(batch(5), leader_epoch=2)
    # The broker dies here: the files as they are now, epoch 2 only in memory.
    crashed = tmp_path / "crashed" / log.directory.name
    shutil.copytree(log.directory, crashed)
    assert read_epochs(crashed / CHECKPOINT) == [(0, 0)]
    assert log.recovery_point <= 5
    reopened = _open(crashed, recovery_point=log.recovery_point, clean=False)
    assert reopened.log_end_offset == 15
    assert reopened.epochs.epoch_entries == [(0, 0), (2, 5)]
    reopened.close()
    held.release.set()
    manager.shutdown()


def test_closing_writes_the_entries_and_a_write_asked_for_earlier_then_does_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = _manager(tmp_path)
    log = _log_at_epoch_zero(manager)
    gate = hold_manager_thread(manager)
    log.append_as_leader(batch(5), leader_epoch=4)
    log.close()
    assert read_epochs(log.directory / CHECKPOINT) == [(0, 0), (4, 5)]
    # The directory goes (a deletion); the write still queued must not bring it back.
    shutil.rmtree(log.directory)
    gate.set()
    drain(manager)
    assert not log.directory.exists()
    manager.shutdown()


def test_a_checkpoint_write_that_fails_fails_the_log_and_tells_its_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    failed: list[Path] = []
    manager = _manager(tmp_path, failed)
    log = _log_at_epoch_zero(manager)

    def broken(path: Path, entries: list[tuple[int, int]]) -> None:
        raise OSError(errno.EIO, "Input/output error", str(path))

    monkeypatch.setattr(epochs_module, "write_epochs", broken)
    log.append_as_leader(batch(5), leader_epoch=1)
    drain(manager)
    assert failed == [tmp_path / "data"]
    with pytest.raises(Exception, match="failed earlier"):
        log.append_as_leader(batch(5), leader_epoch=1)
    manager.shutdown()


def test_what_loading_changes_is_written_once_the_manager_owns_the_log(
    tmp_path: Path,
) -> None:
    manager = _manager(tmp_path)
    log = _log_at_epoch_zero(manager)
    log.epochs.assign(3, log.log_end_offset)  # a leader with no record yet in its epoch
    manager.shutdown()
    path = tmp_path / "data" / "orders-0" / CHECKPOINT
    assert read_epochs(path) == [(0, 0), (3, 5)]
    # Loading truncates the cache to the log (epoch 3 starts at the log end), and leaves the
    # file to the manager's thread.
    reopened = _open(path.parent, recovery_point=5, clean=True)
    assert reopened.epochs.epoch_entries == [(0, 0)] and reopened.epochs.unwritten
    assert read_epochs(path) == [(0, 0), (3, 5)]
    reopened.close()
    assert read_epochs(path) == [(0, 0)]
    # A broker's startup: the manager loads the log and writes the truncation on its thread.
    write_epochs(path, [(0, 0), (3, 5)])
    again = _manager(tmp_path)
    drain(again)
    assert read_epochs(path) == [(0, 0)]
    again.shutdown()
