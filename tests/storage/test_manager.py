"""The broker's log directories: startup, checkpoints, the clean-shutdown marker, creation,
deletion, retention and flushing across logs."""

from __future__ import annotations

import logging
import os
import threading
import uuid
from collections.abc import Mapping
from pathlib import Path

import pytest

from rackwise.common.types import TopicPartition
from rackwise.storage import manager as manager_module
from rackwise.storage.checkpoints import CLEAN_SHUTDOWN_MARKER, RECOVERY_POINT_CHECKPOINT
from rackwise.storage.config import LogConfig
from rackwise.storage.dirs import delete_dir_name
from rackwise.storage.errors import InconsistentTopicIdException
from rackwise.storage.manager import LogManager
from tests.storage.helpers import (
    START_MS,
    Clock,
    HeldFirstCall,
    batch,
    drain,
    hold_manager_thread,
    read_all,
)

TOPIC_ID = uuid.UUID(int=0xABCDEF)


def _manager(dirs: list[Path], clock: Clock | None = None) -> LogManager:
    manager = LogManager(
        dirs, clock=clock or Clock(), default_config=LogConfig(), max_open_files=32
    )
    manager.startup()
    return manager


def test_shutdown_writes_checkpoints_and_the_marker_and_startup_reads_them(
    tmp_path: Path,
) -> None:
    d = tmp_path / "data"
    manager = _manager([d])
    orders = manager.get_or_create("orders", 0, topic_id=TOPIC_ID, config=LogConfig())
    other = manager.get_or_create("other-topic", 3, topic_id=None, config=LogConfig())
    for _ in range(3):
        orders.append_as_leader(batch(2), leader_epoch=1)
    other.append_as_leader(batch(1), leader_epoch=0)
    orders.update_high_watermark(4)
    before = read_all(orders)
    manager.shutdown(broker_epoch=7)
    assert (d / CLEAN_SHUTDOWN_MARKER).read_bytes() == b'{"version":0,"brokerEpoch":7}'
    assert (d / "recovery-point-offset-checkpoint").read_bytes() == (
        b"0\n2\norders 0 6\nother-topic 3 1\n"
    )
    assert (d / "replication-offset-checkpoint").read_bytes() == (
        b"0\n2\norders 0 4\nother-topic 3 0\n"
    )
    assert (d / "log-start-offset-checkpoint").read_bytes() == (
        b"0\n2\norders 0 0\nother-topic 3 0\n"
    )
    again = _manager([d])
    assert not (d / CLEAN_SHUTDOWN_MARKER).exists()
    assert again.had_clean_shutdown == {d: True}
    reloaded = again.get("orders", 0)
    assert reloaded is not None and reloaded.topic_id == TOPIC_ID
    assert (reloaded.log_end_offset, reloaded.high_watermark) == (6, 4)
    assert read_all(reloaded) == before
    assert {(g.topic, g.partition) for g in again.logs()} == {("orders", 0), ("other-topic", 3)}


def test_the_high_watermark_checkpoint_is_written_alone(tmp_path: Path) -> None:
    d = tmp_path / "data"
    manager = _manager([d])
    orders = manager.get_or_create("orders", 0, topic_id=TOPIC_ID, config=LogConfig())
    orders.append_as_leader(batch(3), leader_epoch=1)
    orders.update_high_watermark(2)
    manager.checkpoint_high_watermarks()
    assert (d / "replication-offset-checkpoint").read_bytes() == b"0\n1\norders 0 2\n"
    assert not (d / "recovery-point-offset-checkpoint").exists()
    assert not (d / "log-start-offset-checkpoint").exists()


def test_without_the_marker_the_directory_is_recovered(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    d = tmp_path / "data"
    manager = _manager([d])
    log = manager.get_or_create("t", 0, topic_id=None, config=LogConfig())
    log.append_as_leader(batch(2), leader_epoch=0)
    log.append_as_leader(batch(2), leader_epoch=0)
    manager.checkpoint()  # recovery point 0: nothing flushed yet
    segment = d / "t-0" / "00000000000000000000.log"
    data = segment.read_bytes()
    manager.files.close_all()  # the process dies
    segment.write_bytes(data[:-5])
    caplog.set_level(logging.INFO, "rackwise.storage")
    again = _manager([d])
    assert again.had_clean_shutdown == {d: False}
    recovered = again.get("t", 0)
    assert recovered is not None and recovered.log_end_offset == 2
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(lines) == 1 and lines[0].startswith("t-0: recovered after an unclean shutdown")


def test_delete_renames_then_removes_and_leftovers_are_finished_at_startup(
    tmp_path: Path,
) -> None:
    d = tmp_path / "data"
    manager = _manager([d])
    manager.get_or_create("gone", 0, topic_id=None, config=LogConfig()).append_as_leader(
        batch(1), leader_epoch=0
    )
    manager.delete("gone", 0)
    assert manager.get("gone", 0) is None
    drain(manager)  # the removal queued before it is done
    assert [p.name for p in d.iterdir() if p.is_dir()] == []
    assert (d / "recovery-point-offset-checkpoint").read_bytes() == b"0\n0\n"
    manager.shutdown()
    name = delete_dir_name("gone", 1)
    assert name.startswith("gone-1.") and name.endswith("-delete") and len(name) == 46
    (d / name).mkdir()
    (d / "moving-2.0123456789abcdef0123456789abcdef-future").mkdir()
    again = _manager([d])
    assert not (d / name).exists()
    # A future log whose current log is gone, with no directory offline, is promoted (KIP-113).
    assert not (d / "moving-2.0123456789abcdef0123456789abcdef-future").exists()
    assert [g.name for g in again.logs()] == ["moving-2"]
    assert (d / "moving-2").is_dir()
    long_name = delete_dir_name("x" * 300, 12)
    assert len(long_name) == 255


def test_a_recreated_topic_with_another_id_is_refused(tmp_path: Path) -> None:
    manager = _manager([tmp_path / "data"])
    manager.get_or_create("orders", 0, topic_id=TOPIC_ID, config=LogConfig())
    manager.shutdown()
    again = _manager([tmp_path / "data"])
    with pytest.raises(InconsistentTopicIdException) as caught:
        again.get_or_create("orders", 0, topic_id=uuid.UUID(int=1), config=LogConfig())
    assert "AAAAAAAAAAAAAAAAAAAAAQ" in str(caught.value)
    assert "AAAAAAAAAAAAAAAAAKvN7w" in str(caught.value)


def test_on_one_file_system_replicas_spread_by_count(tmp_path: Path) -> None:
    dirs = [tmp_path / "a", tmp_path / "b"]
    manager = _manager(dirs)
    for p in range(4):
        manager.get_or_create("t", p, topic_id=None, config=LogConfig())
    placed = sorted(g.directory.parent.name for g in manager.logs())
    assert placed == ["a", "a", "b", "b"]
    explicit = manager.get_or_create(
        "u", 0, topic_id=None, config=LogConfig(), preferred_dir=dirs[1]
    )
    assert explicit.directory == dirs[1] / "u-0"


def test_retention_skips_compacted_only_logs(tmp_path: Path) -> None:
    clock = Clock()
    manager = _manager([tmp_path / "data"], clock)
    policies = {"d": "delete", "c": "compact", "cd": "compact,delete"}
    for topic, policy in policies.items():
        config = LogConfig.from_topic_configs(
            {"cleanup.policy": policy, "retention.ms": "1000", "segment.bytes": "100"}
        )
        log = manager.get_or_create(topic, 0, topic_id=None, config=config)
        log.append_as_leader(batch(1, key=b"k", size=30), leader_epoch=0)
        log.append_as_leader(batch(1, key=b"k", size=30), leader_epoch=0)
        log.update_high_watermark(2)
    clock.now_ms = START_MS + 10_000
    assert manager.run_retention(clock.now_ms) == 4
    starts = {g.topic: g.log_start_offset for g in manager.logs()}
    assert starts == {"d": 2, "c": 0, "cd": 2}


def test_flush_dirty_honours_flush_ms(tmp_path: Path) -> None:
    clock = Clock()
    manager = _manager([tmp_path / "data"], clock)
    log = manager.get_or_create(
        "t", 0, topic_id=None, config=LogConfig.from_topic_configs({"flush.ms": "5000"})
    )
    log.append_as_leader(batch(3), leader_epoch=0)
    manager.flush_dirty(clock.now_ms + 4_999)
    assert log.recovery_point == 0
    manager.flush_dirty(clock.now_ms + 5_000)
    assert log.recovery_point == 3


def test_a_partition_that_cannot_be_opened_is_left_out_and_named(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    d = tmp_path / "data"
    manager = _manager([d])
    for p in range(2):
        manager.get_or_create("t", p, topic_id=TOPIC_ID, config=LogConfig())
    manager.shutdown()
    (d / "t-1" / "partition.metadata").write_bytes(b"version: 0\ntopic_id: nonsense")
    again = _manager([d])
    assert [(g.topic, g.partition) for g in again.logs()] == [("t", 0)]
    assert again.failed_dirs == [d / "t-1"]
    assert any("Error while loading the log of t-1" in r.getMessage() for r in caplog.records)


def test_a_slow_checkpoint_write_holds_up_neither_the_table_nor_a_later_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = tmp_path / "data"
    manager = _manager([d])
    orders = manager.get_or_create("orders", 0, topic_id=TOPIC_ID, config=LogConfig())
    orders.append_as_leader(batch(9), leader_epoch=0)
    orders.update_high_watermark(5)
    orders.flush()  # its leader epoch checkpoint too: the fsync held below is the table's
    held = HeldFirstCall(os.fsync)
    monkeypatch.setattr("rackwise.storage.checkpoints.os.fsync", held)
    held.armed = True
    first = threading.Thread(target=manager.checkpoint_high_watermarks)
    first.start()
    assert held.entered.wait(10)
    # The table answers while the first write waits in its fsync...
    assert manager.get("orders", 0) is orders
    manager.get_or_create("other", 0, topic_id=None, config=LogConfig())
    # ...and a later write, started after the offsets moved, waits for it and writes them.
    orders.update_high_watermark(9)
    second = threading.Thread(target=manager.checkpoint_high_watermarks)
    second.start()
    second.join(0.2)
    assert second.is_alive(), "the later write did not wait for the earlier one"
    held.release.set()
    first.join(10)
    second.join(10)
    assert (d / "replication-offset-checkpoint").read_bytes() == b"0\n2\norders 0 9\nother 0 0\n"


def test_deletions_wait_for_no_checkpoint_write_and_share_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = tmp_path / "data"
    manager = _manager([d])
    for p in range(3):
        manager.get_or_create("t", p, topic_id=None, config=LogConfig()).append_as_leader(
            batch(1), leader_epoch=0
        )
    writes: list[set[str]] = []
    real = manager_module._write_files

    def counted(log_dir: Path, files: Mapping[str, Mapping[TopicPartition, int]]) -> None:
        writes.append({f"{tp.topic}-{tp.partition}" for tp in files[RECOVERY_POINT_CHECKPOINT]})
        real(log_dir, files)

    monkeypatch.setattr(manager_module, "_write_files", counted)
    gate = hold_manager_thread(manager)
    manager.delete("t", 0)
    manager.delete("t", 1)
    # Both deletions are done for their callers: renamed, out of the table, no write yet.
    assert sorted(p.name for p in d.iterdir() if p.is_dir() and "delete" not in p.name) == ["t-2"]
    assert manager.get("t", 0) is None and writes == []
    gate.set()
    drain(manager)
    assert writes == [{"t-2"}]  # one write for the two deletions queued together
    assert [p.name for p in d.iterdir() if p.is_dir()] == ["t-2"]
    assert (d / RECOVERY_POINT_CHECKPOINT).read_text().splitlines()[1:] == ["1", "t 2 0"]
    manager.shutdown()
