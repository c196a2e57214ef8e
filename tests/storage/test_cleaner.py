"""The log cleaner on real partition logs: compaction, tombstones, producers, crash points."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rackwise.storage.batch import iter_headers
from rackwise.storage.cleaner import (
    CLEANER_OFFSET_CHECKPOINT,
    CRASH_POINTS,
    LogCleaner,
    SimulatedCrash,
    Throttler,
)
from rackwise.storage.config import LogConfig
from rackwise.storage.files import FileCache
from rackwise.storage.log import PartitionLog
from rackwise.storage.record_codec import Record, build_batch_from_records, iter_records

DAY_MS = 86_400_000
NOW = 1_700_000_000_000
COMPACT = LogConfig(cleanup_policy=frozenset({"compact"}), min_cleanable_dirty_ratio=0.0)


def open_log(directory: Path, config: LogConfig = COMPACT, *, clean: bool = True) -> PartitionLog:
    return PartitionLog.open(
        directory,
        config,
        topic_id=None,
        recovery_point=0,
        log_start_offset=0,
        had_clean_shutdown=clean,
        files=FileCache(64),
        clock=lambda: NOW,
    )


def append(
    log: PartitionLog, pairs: list[tuple[bytes, bytes | None]], *, compression: int = 0, **kw: int
) -> None:
    records = [Record(i, NOW, k, v) for i, (k, v) in enumerate(pairs)]
    batch = build_batch_from_records(records, base_offset=0, compression=compression, **kw)
    log.append_as_leader(batch, leader_epoch=0)


def all_batches(log: PartitionLog) -> list[bytes]:
    """Every batch of the log, read segment by segment as a fetch would."""
    out: list[bytes] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(
            offset, max_bytes=1 << 30, max_offset=log.log_end_offset, min_one_batch=True
        ).records
        headers = list(iter_headers(data))
        assert headers, f"no batch at offset {offset}"
        out.extend(bytes(data[h.position : h.position + h.size]) for h in headers)
        offset = headers[-1].next_offset
    return out


def all_records(log: PartitionLog) -> list[Record]:
    return [r for batch in all_batches(log) for r in iter_records(batch)]


def settle(log: PartitionLog) -> None:
    """Everything below the active segment, and below the high watermark."""
    log.roll()
    log.update_high_watermark(log.log_end_offset)


def latest(history: list[Record]) -> dict[bytes, Record]:
    return {r.key: r for r in history if r.key is not None}


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    return tmp_path / "logs" / "compacted-0"


def test_keeps_the_latest_record_of_each_key(log_dir: Path) -> None:
    log = open_log(log_dir)
    append(log, [(b"k1", b"a"), (b"k2", b"b"), (b"k1", b"c")])
    log.roll()
    append(log, [(b"k2", None), (b"k3", b"d")], compression=1)
    settle(log)
    result = LogCleaner().clean_once(log, NOW)
    assert result.cleaned and result.end_offset == 5
    assert result.records_read == 5 and result.records_retained == 3
    got = all_records(log)
    assert [(r.offset, r.key, r.value) for r in got] == [
        (2, b"k1", b"c"),
        (3, b"k2", None),
        (4, b"k3", b"d"),
    ]
    assert [s.base_offset for s in log.segments] == [0, 5]
    assert (log_dir.parent / CLEANER_OFFSET_CHECKPOINT).read_text() == "0\n1\ncompacted 0 5\n"
    log.close()
    reopened = open_log(log_dir, clean=False)
    assert all_records(reopened) == got
    reopened.close()


def test_tombstones_go_after_delete_retention(log_dir: Path) -> None:
    log = open_log(log_dir)
    append(log, [(b"k", b"v"), (b"k", None), (b"j", b"w")])
    settle(log)
    cleaner = LogCleaner()
    cleaner.clean_once(log, NOW)
    assert [(r.key, r.value) for r in all_records(log)] == [(b"k", None), (b"j", b"w")]
    # New dirty data makes the log cleanable again; the horizon has not passed yet.
    append(log, [(b"j", b"x")])
    settle(log)
    cleaner.clean_once(log, NOW + DAY_MS - 1)
    assert [(r.key, r.value) for r in all_records(log)] == [(b"k", None), (b"j", b"x")]
    append(log, [(b"j", b"y")])
    settle(log)
    cleaner.clean_once(log, NOW + DAY_MS)
    assert [(r.key, r.value) for r in all_records(log)] == [(b"j", b"y")]
    log.close()


def test_idempotent_producers_last_batch_stays_as_an_empty_header(log_dir: Path) -> None:
    log = open_log(log_dir)
    append(log, [(b"k", b"1")], producer_id=77, producer_epoch=0, base_sequence=0)
    append(log, [(b"k", b"2")])
    append(log, [(b"k", b"3")])
    settle(log)
    LogCleaner().clean_once(log, NOW)
    headers = [next(iter_headers(batch)) for batch in all_batches(log)]
    assert [(h.base_offset, h.record_count, h.producer_id) for h in headers] == [
        (0, 0, 77),
        (2, 1, -1),
    ]
    assert headers[0].base_sequence == 0 and headers[0].last_offset == 0
    log.close()
    reopened = open_log(log_dir, clean=False)
    assert reopened.producer_state.last_entry(77) == (0, 0, 0)
    reopened.close()


def test_not_dirty_enough(log_dir: Path) -> None:
    log = open_log(log_dir, LogConfig(cleanup_policy=frozenset({"compact"})))
    append(log, [(b"k", b"v")])
    settle(log)
    cleaner = LogCleaner()
    assert cleaner.clean_once(log, NOW).cleaned
    append(log, [(b"k", b"w")])
    settle(log)
    result = cleaner.clean_once(log, NOW)
    assert not result.cleaned
    assert result.reason == "dirty ratio 0.500 <= min.cleanable.dirty.ratio"
    log.close()


def test_delete_policy_is_not_cleaned(log_dir: Path) -> None:
    log = open_log(log_dir, LogConfig())
    result = LogCleaner().clean_once(log, NOW)
    assert result.reason == "cleanup.policy does not include compact"
    log.close()


def test_min_compaction_lag_keeps_young_segments_dirty(log_dir: Path) -> None:
    config = LogConfig(
        cleanup_policy=frozenset({"compact"}),
        min_cleanable_dirty_ratio=0.0,
        min_compaction_lag_ms=60_000,
    )
    log = open_log(log_dir, config)
    append(log, [(b"k", b"1"), (b"k", b"2")])
    settle(log)
    assert not LogCleaner().clean_once(log, NOW + 59_999).cleaned
    assert LogCleaner().clean_once(log, NOW + 60_001).cleaned
    assert [r.value for r in all_records(log)] == [b"2"]
    log.close()


def test_high_watermark_bounds_the_cleaning(log_dir: Path) -> None:
    log = open_log(log_dir)
    append(log, [(b"k", b"1")])
    log.roll()
    append(log, [(b"k", b"2")])
    log.roll()
    log.update_high_watermark(1)
    result = LogCleaner().clean_once(log, NOW)
    assert result.end_offset == 1
    assert [r.value for r in all_records(log)] == [b"1", b"2"]
    log.close()


def test_small_offset_map_cleans_in_rounds(log_dir: Path) -> None:
    log = open_log(log_dir)
    for i in range(6):
        append(log, [(b"k%d" % i, b"a"), (b"k%d" % i, b"b")])
    settle(log)
    cleaner = LogCleaner(max_offset_map_entries=4)
    first = cleaner.clean_once(log, NOW)
    assert first.end_offset == 6  # three batches fit: a fourth might bring two new keys
    while cleaner.clean_once(log, NOW).cleaned:
        pass
    assert [(r.key, r.value) for r in all_records(log)] == [(b"k%d" % i, b"b") for i in range(6)]
    log.close()


def test_throttler_sleeps_to_the_desired_rate() -> None:
    now = [0]
    slept: list[float] = []
    throttler = Throttler(1000.0, clock=lambda: now[0], sleep=slept.append)
    throttler.maybe_throttle(500)
    assert slept == []
    now[0] = 300
    throttler.maybe_throttle(500)  # 1000 bytes in 0.3 s: should have taken 1 s
    assert slept == [pytest.approx(0.7)]


# --------------------------------------------------------------------------- properties

Op = tuple[str, list[tuple[bytes, bytes | None]], int]
operations = st.lists(
    st.one_of(
        st.tuples(
            st.just("append"),
            st.lists(
                st.tuples(
                    st.sampled_from([b"a", b"b", b"c", b"d"]), st.none() | st.binary(max_size=4)
                ),
                min_size=1,
                max_size=4,
            ),
            st.sampled_from([0, 1, 4]),
        ),
        st.tuples(st.just("roll"), st.just([]), st.just(0)),
    ),
    min_size=1,
    max_size=25,
)


def replay(
    log: PartitionLog, ops: list[tuple[str, list[tuple[bytes, bytes | None]], int]]
) -> list[Record]:
    history: list[Record] = []
    for op, pairs, compression in ops:
        if op == "roll":
            if log.active_segment.size:
                log.roll()
            continue
        base = log.log_end_offset
        append(log, pairs, compression=compression)
        history.extend(Record(base + i, NOW, k, v) for i, (k, v) in enumerate(pairs))
    settle(log)
    return history


def check_compacted(got: list[Record], history: list[Record], *, tombstones_kept: bool) -> None:
    assert [r.offset for r in got] == sorted({r.offset for r in got})
    want = latest(history)
    expected = [r for r in want.values() if r.value is not None or tombstones_kept]
    assert sorted(got, key=lambda r: r.offset) == sorted(expected, key=lambda r: r.offset)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=operations)
def test_compaction_keeps_exactly_the_latest(tmp_path: Path, ops: list[Op]) -> None:
    directory = tmp_path / f"prop-{next(_counter)}" / "t-0"
    log = open_log(directory)
    history = replay(log, ops)
    cleaner = LogCleaner()
    cleaner.clean_once(log, NOW)
    check_compacted(all_records(log), history, tombstones_kept=True)
    # After the horizon, with fresh dirty data, the tombstones go.
    base = log.log_end_offset
    append(log, [(b"z", b"fresh")])
    history.append(Record(base, NOW, b"z", b"fresh"))
    settle(log)
    cleaner.clean_once(log, NOW + DAY_MS)
    check_compacted(all_records(log), history, tombstones_kept=False)
    log.close()


_counter = itertools.count()


# --------------------------------------------------------------------------- crash points


@pytest.mark.parametrize("point", CRASH_POINTS)
def test_recovers_from_each_crash_point(log_dir: Path, point: str) -> None:
    log = open_log(log_dir)
    history = replay(
        log,
        [
            ("append", [(b"a", b"1"), (b"b", b"1")], 0),
            ("roll", [], 0),
            ("append", [(b"a", b"2"), (b"c", None)], 1),
            ("roll", [], 0),
            ("append", [(b"b", b"2"), (b"d", b"1")], 0),
        ],
    )
    before = all_records(log)

    def hook(name: str) -> None:
        if name == point:
            raise SimulatedCrash(name)

    with pytest.raises(SimulatedCrash):
        LogCleaner(crash_hook=hook).clean_once(log, NOW)
    log.files.close_all()  # the process dies: nothing is closed or flushed properly

    reopened = open_log(log_dir, clean=False)
    got = all_records(reopened)
    leftovers = [p.name for p in log_dir.iterdir() if p.suffix in (".cleaned", ".swap")]
    assert leftovers == []
    if point in ("cleaned-written", "swap-partial"):
        assert got == before
    else:
        check_compacted(got, history, tombstones_kept=True)
    # The next cleaning finishes the job.
    reopened.update_high_watermark(reopened.log_end_offset)
    LogCleaner().clean_once(reopened, NOW)
    check_compacted(all_records(reopened), history, tombstones_kept=True)
    reopened.close()


def test_truncation_brings_the_checkpoint_down(log_dir: Path) -> None:
    log = open_log(log_dir)
    append(log, [(b"k", b"1"), (b"k", b"2"), (b"j", b"1")])
    settle(log)
    cleaner = LogCleaner()
    assert cleaner.clean_once(log, NOW).end_offset == 3
    cleaner.maybe_truncate_checkpoint(log, 2)
    assert cleaner.last_clean_offset(log) == 2
    cleaner.maybe_truncate_checkpoint(log, 7)
    assert cleaner.last_clean_offset(log) == 2
    log.close()


def test_cleaning_aborts_when_the_log_changes_underneath(log_dir: Path) -> None:
    log = open_log(log_dir)
    append(log, [(b"k", b"1"), (b"k", b"2")])
    settle(log)

    def truncate_meanwhile(name: str) -> None:
        if name == "swap-renamed":
            log.truncate_fully_and_start_at(10)

    result = LogCleaner(crash_hook=truncate_meanwhile).clean_once(log, NOW)
    assert not result.cleaned and result.reason.startswith("aborted: compacted-0: segment(s) [0]")
    assert [p.name for p in log_dir.iterdir() if p.suffix in (".swap", ".cleaned")] == []
    assert log.log_end_offset == 10
    log.close()
