"""The offset and time indexes: Kafka's entry layout, lookups, truncation, sanity checks."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from rackwise.storage.errors import CorruptIndexException
from rackwise.storage.files import FileCache
from rackwise.storage.index import NO_TIMESTAMP, OffsetIndex, TimeIndex


def test_offset_index_golden_bytes_and_lookups(tmp_path: Path) -> None:
    files = FileCache(4)
    path = tmp_path / "00000000000000000100.index"
    index = OffsetIndex(path, 100, 1024, files)
    index.append(159, 5000)
    index.append(170, 6000)
    index.flush()
    assert path.read_bytes() == bytes.fromhex("0000003b00001388") + bytes.fromhex(
        "0000004600001770"
    )
    assert index.lookup(155) == (100, 0)
    assert index.lookup(159) == (159, 5000)
    assert index.lookup(169) == (159, 5000)
    assert index.lookup(10**9) == (170, 6000)
    reread = OffsetIndex(path, 100, 1024, files)
    assert reread.lookup(171) == (170, 6000) and reread.entries == 2
    with pytest.raises(CorruptIndexException, match="no larger than the last offset"):
        index.append(170, 7000)


def test_offset_index_truncation_rewrites_the_file(tmp_path: Path) -> None:
    files = FileCache(4)
    path = tmp_path / "00000000000000000000.index"
    index = OffsetIndex(path, 0, 1024, files)
    for i in range(1, 6):
        index.append(10 * i, 100 * i)
    index.flush()
    index.truncate_to(30)
    assert index.last_offset == 20
    index.append(25, 250)
    index.flush()
    assert path.read_bytes() == struct.pack(">iiiiii", 10, 100, 20, 200, 25, 250)


def test_offset_index_is_full_at_segment_index_bytes(tmp_path: Path) -> None:
    index = OffsetIndex(tmp_path / "00000000000000000000.index", 0, 20, FileCache(4))
    index.append(1, 10)
    index.append(2, 20)
    assert index.max_entries == 2 and index.is_full()
    with pytest.raises(CorruptIndexException, match="full index"):
        index.append(3, 30)


def test_a_corrupt_offset_index_fails_its_sanity_check(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.index"
    path.write_bytes(struct.pack(">iiii", 20, 200, 10, 300))
    with pytest.raises(CorruptIndexException, match="not above entry"):
        OffsetIndex(path, 0, 1024, FileCache(4)).load()
    path.write_bytes(b"\x00" * 12)
    with pytest.raises(CorruptIndexException, match="multiple of 8"):
        OffsetIndex(path, 0, 1024, FileCache(4)).load()


def test_time_index_golden_bytes_and_rules(tmp_path: Path) -> None:
    files = FileCache(4)
    path = tmp_path / "00000000000000000100.timeindex"
    index = TimeIndex(path, 100, 1200, files)
    assert index.last_entry == (NO_TIMESTAMP, 100)
    index.maybe_append(1_000, 104)
    index.maybe_append(1_000, 108)  # not above the last timestamp: ignored
    index.maybe_append(2_000, 120)
    index.flush()
    assert path.read_bytes() == struct.pack(">qi", 1_000, 4) + struct.pack(">qi", 2_000, 20)
    assert index.lookup(999) == (NO_TIMESTAMP, 100)
    assert index.lookup(1_500) == (1_000, 104)
    assert index.lookup(5_000) == (2_000, 120)
    index.truncate_to(120)
    assert index.last_entry == (1_000, 104)
    with pytest.raises(CorruptIndexException, match="no larger than the last offset"):
        index.maybe_append(3_000, 90)


def test_time_index_keeps_its_last_slot_for_the_roll(tmp_path: Path) -> None:
    index = TimeIndex(tmp_path / "00000000000000000000.timeindex", 0, 36, FileCache(4))
    index.maybe_append(1, 1)
    index.maybe_append(2, 2)
    assert index.max_entries == 3 and index.is_full()
    index.maybe_append(3, 3, skip_full_check=True)
    assert index.entries == 3
