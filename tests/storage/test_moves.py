"""Moving a replica between log directories: the copy while appends go on, the swap and its
crash points, startup's KIP-113 rules, a failed directory, and the throttle's pacing."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackwise.common.errors import InvalidTopicException
from rackwise.common.types import TopicPartition
from rackwise.storage.checkpoints import read_epochs
from rackwise.storage.config import LogConfig
from rackwise.storage.errors import KafkaStorageException
from rackwise.storage.manager import LogManager
from rackwise.storage.moves import (
    UNLIMITED_RATE,
    Throttle,
    caught_up,
    copy_step,
    future_dir_name,
)
from tests.storage.helpers import Clock, batch, drain, hold_manager_thread, read_all

TOPIC_ID = uuid.UUID(int=0x5EED)


class Crash(Exception):
    pass


def _manager(dirs: list[Path]) -> LogManager:
    manager = LogManager(dirs, clock=Clock(), default_config=LogConfig(), max_open_files=64)
    manager.startup()
    return manager


def _move_all(manager: LogManager, topic: str, partition: int, step: int = 4096) -> None:
    current, future = manager.get(topic, partition), manager.future(topic, partition)
    assert current is not None and future is not None
    while not caught_up(current, future):
        copy_step(current, future, step)


def test_the_copy_follows_appends_and_the_swap_moves_everything(tmp_path: Path) -> None:
    d1, d2 = tmp_path / "d1", tmp_path / "d2"
    manager = _manager([d1, d2])
    log = manager.get_or_create("t", 0, topic_id=TOPIC_ID, config=LogConfig(), preferred_dir=d1)
    for i in range(20):
        log.append_as_leader(
            batch(3, producer_id=7, producer_epoch=0, base_sequence=3 * i), leader_epoch=2
        )
    log.update_high_watermark(50)
    future = manager.create_future("t", 0, d2)
    assert future is not None and future.directory.name.endswith("-future")
    assert future.directory.parent == d2
    for i in range(20, 40):  # appends interleave with the copy
        copy_step(log, future, 1000)
        log.append_as_leader(
            batch(3, producer_id=7, producer_epoch=0, base_sequence=3 * i), leader_epoch=3
        )
    _move_all(manager, "t", 0)
    expected = read_all(log)
    moved, doomed = manager.replace_current_with_future("t", 0)
    assert moved.directory == d2 / "t-0"
    assert doomed.parent == d1 and doomed.name.endswith("-delete") and doomed.exists()
    assert not (d1 / "t-0").exists()
    assert read_all(moved) == expected
    assert (moved.log_end_offset, moved.high_watermark, moved.topic_id) == (120, 50, TOPIC_ID)
    assert moved.epochs.end_offset_for(2, moved.log_end_offset) == (2, 60)
    # The producer state moved too: a retry of the last batch is answered as a duplicate.
    retry = moved.append_as_leader(
        batch(3, producer_id=7, producer_epoch=0, base_sequence=3 * 39), leader_epoch=3
    )
    assert (retry.first_offset, moved.log_end_offset) == (117, 120)
    manager.delete_later(doomed)
    manager.shutdown()
    again = _manager([d1, d2])
    reopened = again.get("t", 0)
    assert reopened is not None and reopened.directory == d2 / "t-0"
    assert read_all(reopened) == expected and reopened.high_watermark == 50


def test_the_future_follows_a_truncated_current_by_epochs(tmp_path: Path) -> None:
    manager = _manager([tmp_path / "a", tmp_path / "b"])
    log = manager.get_or_create(
        "t", 1, topic_id=None, config=LogConfig(), preferred_dir=tmp_path / "a"
    )
    for _ in range(10):
        log.append_as_leader(batch(2), leader_epoch=1)
    future = manager.create_future("t", 1, tmp_path / "b")
    assert future is not None
    _move_all(manager, "t", 1)
    log.truncate_to(8)  # a new leader's log ended at 8: epoch 2 starts there
    for _ in range(10):
        log.append_as_leader(batch(2, size=30), leader_epoch=2)
    assert future.log_end_offset == 20 and log.log_end_offset == 28
    _move_all(manager, "t", 1)
    assert read_all(future) == read_all(log)


def test_the_future_follows_the_log_start(tmp_path: Path) -> None:
    manager = _manager([tmp_path / "a", tmp_path / "b"])
    log = manager.get_or_create(
        "t", 2, topic_id=None, config=LogConfig(), preferred_dir=tmp_path / "a"
    )
    for _ in range(10):
        log.append_as_leader(batch(2), leader_epoch=0)
    log.update_high_watermark(20)
    future = manager.create_future("t", 2, tmp_path / "b")
    assert future is not None
    copy_step(log, future, 1)
    log.maybe_increment_log_start_offset(12)
    _move_all(manager, "t", 2)
    assert (future.log_start_offset, future.log_end_offset) == (12, 20)
    assert read_all(future) == read_all(log)


def test_moving_to_the_current_dir_is_no_move_and_a_new_target_replaces_the_old(
    tmp_path: Path,
) -> None:
    dirs = [tmp_path / "a", tmp_path / "b", tmp_path / "c"]
    manager = _manager(dirs)
    manager.get_or_create("t", 0, topic_id=None, config=LogConfig(), preferred_dir=dirs[0])
    assert manager.create_future("t", 0, dirs[0]) is None
    first = manager.create_future("t", 0, dirs[1])
    assert first is not None
    assert manager.create_future("t", 0, dirs[1]) is first
    second = manager.create_future("t", 0, dirs[2])
    assert second is not None and second.directory.parent == dirs[2]
    assert not first.directory.exists()
    manager.remove_future("t", 0)
    assert manager.future("t", 0) is None and not second.directory.exists()


def test_a_future_name_past_255_characters_is_an_invalid_topic() -> None:
    assert len(future_dir_name("x" * 200, 3)) == 200 + 2 + 1 + 32 + 7
    with pytest.raises(InvalidTopicException, match="255"):
        future_dir_name("x" * 249, 3)


@pytest.mark.parametrize("point", ["move.future-renamed", "move.current-renamed"])
def test_a_crash_in_the_swap_leaves_one_live_copy(tmp_path: Path, point: str) -> None:
    d1, d2 = tmp_path / "d1", tmp_path / "d2"
    manager = _manager([d1, d2])
    log = manager.get_or_create("t", 0, topic_id=TOPIC_ID, config=LogConfig(), preferred_dir=d1)
    for _ in range(5):
        log.append_as_leader(batch(2), leader_epoch=0)
    future = manager.create_future("t", 0, d2)
    assert future is not None
    _move_all(manager, "t", 0)
    expected = read_all(log)

    def crash(at: str) -> None:
        if at == point:
            raise Crash(at)

    log.crash_point = crash
    with pytest.raises(Crash):
        manager.replace_current_with_future("t", 0)
    # kill -9 here: nothing more is written; a new broker opens the directories.
    again = _manager([d1, d2])
    if point == "move.future-renamed":
        assert (d1 / "t-0").exists() and (d2 / "t-0").exists()
        assert again.get("t", 0) is None and list(again.duplicates) == [TopicPartition("t", 0)]
        again.resolve_duplicate("t", 0, keep=d2)  # the directory the metadata names
        strays = [p.name for p in d1.iterdir() if p.name.endswith("-stray")]
        assert len(strays) == 1 and not (d1 / "t-0").exists()
    else:
        assert not [p for p in d1.iterdir() if p.name.endswith("-delete")]
    kept = again.get("t", 0)
    assert kept is not None and kept.directory == d2 / "t-0"
    assert read_all(kept) == expected


def test_startup_resumes_a_move_and_leaves_a_lone_future_alone_when_a_dir_is_offline(
    tmp_path: Path,
) -> None:
    d1, d2 = tmp_path / "d1", tmp_path / "d2"
    manager = _manager([d1, d2])
    log = manager.get_or_create("t", 0, topic_id=None, config=LogConfig(), preferred_dir=d1)
    log.append_as_leader(batch(4), leader_epoch=0)
    future = manager.create_future("t", 0, d2)
    assert future is not None
    copy_step(log, future, 1)
    manager.shutdown()
    resumed = _manager([d1, d2])
    assert resumed.get("t", 0) is not None
    again_future = resumed.future("t", 0)
    assert again_future is not None and again_future.log_end_offset == 4
    resumed.shutdown()
    # Now d1 (the current log's directory) is a file: the future alone must stay untouched.
    future_dir = again_future.directory
    os.system(f"rm -rf {d1}")
    d1.write_text("not a directory")
    offline = _manager([d1, d2])
    assert offline.offline_dirs == {d1}
    assert TopicPartition("t", 0) in offline.offline_partitions and future_dir.exists()
    with pytest.raises(KafkaStorageException):
        offline.get_or_create("t", 0, topic_id=None, config=LogConfig())
    fresh = offline.get_or_create("u", 0, topic_id=None, config=LogConfig())
    assert fresh.directory.parent == d2


def test_a_failed_dir_takes_its_replicas_offline_and_the_others_go_on(tmp_path: Path) -> None:
    d1, d2 = tmp_path / "d1", tmp_path / "d2"
    manager = _manager([d1, d2])
    failures: list[Path] = []
    manager.on_dir_failure = failures.append
    on1 = manager.get_or_create("t", 0, topic_id=None, config=LogConfig(), preferred_dir=d1)
    on2 = manager.get_or_create("t", 1, topic_id=None, config=LogConfig(), preferred_dir=d2)
    os.system(f"rm -rf {d1}")
    d1.write_text("not a directory")
    manager.checkpoint()
    assert failures == [d1]
    assert manager.fail_dir(d1, "test") == [TopicPartition("t", 0)]
    assert manager.get("t", 0) is None and manager.get("t", 1) is on2
    with pytest.raises(KafkaStorageException):
        manager.get_or_create("t", 0, topic_id=None, config=LogConfig())
    on2.append_as_leader(batch(1), leader_epoch=0)
    assert manager.get_or_create("v", 0, topic_id=None, config=LogConfig()).directory.parent == d2
    assert on1.directory.parent == d1
    manager.shutdown()


def test_the_logs_of_a_failed_dir_are_closed_without_writing_to_it(tmp_path: Path) -> None:
    d1, d2 = tmp_path / "d1", tmp_path / "d2"
    manager = _manager([d1, d2])
    log = manager.get_or_create("t", 0, topic_id=None, config=LogConfig(), preferred_dir=d1)
    log.append_as_leader(batch(3), leader_epoch=0)
    log.flush()
    before = sorted(p.name for p in log.directory.iterdir())
    gate = hold_manager_thread(manager)
    log.append_as_leader(batch(3), leader_epoch=1)  # an epoch whose checkpoint waits
    assert manager.fail_dir(d1, "test") == [TopicPartition("t", 0)]
    gate.set()
    drain(manager)
    # No producer snapshot at the log end, no epoch checkpoint with epoch 1: nothing written.
    assert sorted(p.name for p in log.directory.iterdir()) == before
    assert read_epochs(log.directory / "leader-epoch-checkpoint") == [(0, 0)]
    manager.shutdown()


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@settings(max_examples=60, deadline=None)
@given(
    rate=st.integers(min_value=10_000, max_value=200_000_000),
    batch_bytes=st.integers(min_value=100, max_value=300_000),
    copy_s=st.floats(min_value=0.0, max_value=0.02),
)
def test_the_throttle_holds_the_rate_within_five_percent_over_ten_second_windows(
    rate: int, batch_bytes: int, copy_s: float
) -> None:
    clock = FakeClock()
    throttle = Throttle(lambda: rate, clock)
    copies: list[tuple[float, int]] = []
    while clock.now < 60.0:
        step = throttle.step_bytes()
        clock.now += throttle.book(step)
        # whole batches, at least one: what the log really hands out
        copied = max(batch_bytes, step - step % batch_bytes)
        throttle.settle(step, copied)
        copies.append((clock.now, copied))
        clock.now += copy_s
    if copy_s * rate / max(batch_bytes, throttle.step_bytes()) > 0.9:
        return  # the copy itself is slower than the rate: nothing to throttle
    for start in range(0, 50):
        window = sum(n for t, n in copies if start <= t < start + 10)
        assert abs(window - 10 * rate) <= 0.05 * 10 * rate + max(batch_bytes, 0)


def test_an_unlimited_throttle_never_waits() -> None:
    throttle = Throttle(lambda: UNLIMITED_RATE, FakeClock())
    assert throttle.book(throttle.step_bytes()) == 0.0
