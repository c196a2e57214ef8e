"""The leader epoch cache: Kafka's rules, written through, and its invariants."""

from __future__ import annotations

import itertools
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from rackwise.storage.epochs import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET, LeaderEpochCache


def _cache(tmp_path: Path, entries: list[tuple[int, int]]) -> LeaderEpochCache:
    cache = LeaderEpochCache(tmp_path / "leader-epoch-checkpoint")
    for epoch, start in entries:
        cache.assign(epoch, start)
    return cache


def test_the_worked_example(tmp_path: Path) -> None:
    cache = _cache(tmp_path, [(0, 0), (2, 100), (5, 250)])
    assert cache.end_offset_for(5, 300) == (5, 300)
    assert cache.end_offset_for(3, 300) == (2, 250)
    assert cache.end_offset_for(1, 300) == (0, 100)
    assert cache.end_offset_for(6, 300) == (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
    assert cache.end_offset_for(UNDEFINED_EPOCH, 300) == (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
    cache.truncate_from_end(200)
    assert cache.epoch_entries == [(0, 0), (2, 100)]
    cache.truncate_from_start(120)
    assert cache.epoch_entries == [(2, 120)]
    assert cache.epoch_for_offset(150) == 2
    assert cache.epoch_for_offset(119) is None


def test_an_epoch_below_every_known_one_ends_where_the_first_starts(tmp_path: Path) -> None:
    cache = _cache(tmp_path, [(3, 10), (4, 20)])
    assert cache.end_offset_for(1, 30) == (1, 10)


def test_assign_keeps_the_latest_start_and_drops_conflicts(tmp_path: Path) -> None:
    cache = _cache(tmp_path, [(1, 0), (2, 10)])
    cache.assign(2, 15)
    assert cache.epoch_entries == [(1, 0), (2, 10)]
    cache.assign(2, 5)
    assert cache.epoch_entries == [(1, 0), (2, 5)]
    cache.assign(3, 5)
    assert cache.epoch_entries == [(1, 0), (3, 5)]
    cache.assign(2, 20)
    assert cache.epoch_entries == [(1, 0), (2, 20)]


def test_changes_are_written_through(tmp_path: Path) -> None:
    cache = _cache(tmp_path, [(0, 0), (4, 90)])
    path = tmp_path / "leader-epoch-checkpoint"
    assert path.read_bytes() == b"0\n2\n0 0\n4 90\n"
    cache.truncate_from_start(95)
    assert path.read_bytes() == b"0\n1\n4 95\n"
    assert LeaderEpochCache(path).epoch_entries == [(4, 95)]
    cache.clear()
    assert path.read_bytes() == b"0\n0\n"


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("assign"), st.integers(0, 8), st.integers(0, 100)),
            st.tuples(st.just("end"), st.integers(0, 100), st.just(0)),
            st.tuples(st.just("start"), st.integers(0, 100), st.just(0)),
        ),
        max_size=30,
    )
)
def test_entries_always_increase_and_survive_a_reload(
    tmp_path_factory: object, operations: list[tuple[str, int, int]]
) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "leader-epoch-checkpoint"
        cache = LeaderEpochCache(path)
        for op, a, b in operations:
            if op == "assign":
                cache.assign(a, b)
                assert cache.latest_epoch == a
            elif op == "end":
                cache.truncate_from_end(a)
                assert all(start < a for _, start in cache.epoch_entries)
            else:
                cache.truncate_from_start(a)
                assert all(start >= a for _, start in cache.epoch_entries)
            entries = cache.epoch_entries
            assert all(x[0] < y[0] and x[1] < y[1] for x, y in itertools.pairwise(entries))
        assert LeaderEpochCache(path).epoch_entries == cache.epoch_entries
