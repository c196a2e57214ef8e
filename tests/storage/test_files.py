"""The bounded cache of open files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rackwise.storage.files import FileCache


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_at_most_max_open_files_stay_open(tmp_path: Path) -> None:
    cache = FileCache(3)
    paths = [tmp_path / f"f{i}" for i in range(10)]
    baseline = _open_fds()
    for i, path in enumerate(paths):
        cache.write(path, 0, f"file {i}".encode(), create=True)
    assert cache.num_open == 3 and _open_fds() == baseline + 3
    for i, path in enumerate(paths):
        assert cache.read(path, 0, 100) == f"file {i}".encode()
    assert cache.most_open == 3
    cache.close_all()
    assert cache.num_open == 0 and _open_fds() == baseline


def test_the_least_recently_used_file_is_closed_first(tmp_path: Path) -> None:
    cache = FileCache(2)
    a, b, c = (tmp_path / n for n in "abc")
    for p in (a, b):
        cache.write(p, 0, b"x", create=True)
    cache.read(a, 0, 1)  # a is now the most recent
    cache.write(c, 0, b"y", create=True)
    assert set(cache._fds) == {str(a), str(c)}


def test_a_leased_file_is_not_closed_under_its_user(tmp_path: Path) -> None:
    cache = FileCache(1)
    a, b = tmp_path / "a", tmp_path / "b"
    cache.write(a, 0, b"aaaa", create=True)
    with cache.lease(a) as fd:
        cache.write(b, 0, b"bbbb", create=True)
        assert os.pread(fd, 4, 0) == b"aaaa"
    assert cache.num_open <= 2
    cache.read(b, 0, 4)
    assert cache.num_open == 1


def test_forgetting_files_before_a_rename(tmp_path: Path) -> None:
    cache = FileCache(8)
    d = tmp_path / "t-0"
    d.mkdir()
    cache.write(d / "x.log", 0, b"old", create=True)
    cache.write(tmp_path / "other", 0, b"keep", create=True)
    cache.forget_under(d)
    assert cache.num_open == 1
    (d / "x.log").unlink()
    (d / "x.log").write_bytes(b"new")
    assert cache.read(d / "x.log", 0, 3) == b"new"


def test_missing_files_are_not_created_by_reads(tmp_path: Path) -> None:
    cache = FileCache(2)
    with pytest.raises(FileNotFoundError):
        cache.read(tmp_path / "nothing", 0, 1)
    assert not (tmp_path / "nothing").exists()
    with pytest.raises(ValueError, match="at least 1"):
        FileCache(0)
