"""Reads at the tail of a segment answered from the positions of the batches appended last
are the reads the index and the batch headers give: the same bytes from the same batch, for
any start (between batches, inside one, in a gap of offsets), byte limit and offset limit,
through appends, truncations and a reopen."""

from __future__ import annotations

import os
from pathlib import Path

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

from rackwise.storage.files import FileRegion
from rackwise.storage.segment import TAIL_BATCHES, LogSegment
from tests.storage.helpers import LogHarness, batch


def _plain(answer: tuple[bytes | FileRegion, int] | None) -> tuple[bytes, int] | None:
    if answer is None:
        return None
    records, base = answer
    return (records.read() if isinstance(records, FileRegion) else bytes(records)), base


def _read_both(
    segment: LogSegment, start: int, max_bytes: int, max_offset: int, min_one: bool, zero: bool
) -> tuple[tuple[bytes, int] | None, tuple[bytes, int] | None]:
    kept = segment._tail
    tail = _plain(segment.read(start, max_bytes=max_bytes, max_offset=max_offset,
                               min_one_batch=min_one, zero_copy=zero))  # fmt: skip
    segment._tail = []  # the index and the headers alone
    walked = _plain(segment.read(start, max_bytes=max_bytes, max_offset=max_offset,
                                 min_one_batch=min_one, zero_copy=zero))  # fmt: skip
    segment._tail = kept
    return tail, walked


appends = st.lists(
    st.tuples(st.integers(1, 6), st.integers(0, 3), st.integers(1, 3000)), min_size=1, max_size=14
)
"""Per append: records in the batch, the gap in offsets before it, value size."""
reads = st.lists(
    st.tuples(
        st.integers(-2, 60),
        st.integers(0, 20_000),
        st.integers(0, 70),
        st.booleans(),
        st.booleans(),
    ),
    min_size=1,
    max_size=12,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(appends=appends, reads=reads, truncate_at=st.one_of(st.none(), st.integers(0, 60)))
def test_tail_reads_are_the_reads_the_index_gives(
    tmp_path: Path,
    appends: list[tuple[int, int, int]],
    reads: list[tuple[int, int, int, bool, bool]],
    truncate_at: int | None,
) -> None:
    directory = tmp_path / f"t-{len(list(tmp_path.iterdir()))}"
    h = LogHarness(directory)
    log = h.open()
    offset = 0
    for count, gap, size in appends:
        offset += gap
        log.append_as_follower(batch(count, size=size, base_offset=offset))
        offset += count
    if truncate_at is not None and truncate_at < log.log_end_offset:
        log.truncate_to(truncate_at)
        log.append_as_follower(batch(2, size=100, base_offset=log.log_end_offset))
    segment = log.active_segment
    assert len(segment._tail) <= TAIL_BATCHES
    for start, max_bytes, shift, min_one, zero in reads:
        start = segment.base_offset + start
        max_offset = start + shift
        tail, walked = _read_both(segment, start, max_bytes, max_offset, min_one, zero)
        assert tail == walked, (start, max_bytes, max_offset, min_one, zero)
    reopened = h.reopen()  # a reopened segment remembers nothing and reads the same
    assert reopened.active_segment._tail == []


def test_a_follower_read_from_its_log_end_reads_no_header(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = LogHarness(tmp_path / "t-0")
    log = h.open()
    for i in range(4):
        log.append_as_follower(batch(3, size=2000, base_offset=3 * i))
    segment = log.active_segment
    preads = []
    real_pread = os.pread

    def counting(fd: int, size: int, position: int) -> bytes:
        preads.append((size, position))
        return real_pread(fd, size, position)

    monkeypatch.setattr(os, "pread", counting)
    records, base = segment.read(6, max_bytes=1 << 20, max_offset=12, min_one_batch=True,
                                 zero_copy=True)  # fmt: skip
    assert base == 6 and isinstance(records, FileRegion)
    assert (records.position, records.size) == (
        segment._tail[2][2],
        segment.size - records.position,
    )
    assert preads == []
    segment._tail = []
    again, _ = segment.read(6, max_bytes=1 << 20, max_offset=12, min_one_batch=True,
                            zero_copy=True)  # fmt: skip
    assert isinstance(again, FileRegion) and (again.position, again.size) == (
        records.position,
        records.size,
    )
    assert preads  # the index and the headers: reads of the file
