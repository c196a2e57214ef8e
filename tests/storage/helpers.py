"""Logs and batches for the storage tests: real files under tmp_path, a settable clock, and an
fsync that can be held."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rackwise.storage.batch import build_batch, iter_headers
from rackwise.storage.config import LogConfig
from rackwise.storage.files import FileCache
from rackwise.storage.log import PartitionLog
from rackwise.storage.manager import LogManager

START_MS = 1_700_000_000_000


class HeldFirstCall:
    """Wraps ``real`` (an fsync) so that, once :attr:`armed`, the first call whose arguments
    ``holds`` accepts waits until :attr:`release` is set: an fsync behind gigabytes of dirty
    pages, in slow motion. :attr:`entered` is set when that call begins to wait."""

    def __init__(self, real: Callable[..., Any], holds: Callable[..., bool] | None = None):
        self.real = real
        self.holds = holds or (lambda *args: True)
        self.armed = False
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self, *args: Any) -> Any:
        if self.armed and not self.entered.is_set() and self.holds(*args):
            self.entered.set()
            assert self.release.wait(10), "the held call was never released"
        return self.real(*args)


def drain(manager: LogManager) -> None:
    """Wait until everything asked of the manager's own thread so far is done."""
    manager._flusher.submit(lambda: None).result(10)


def hold_manager_thread(manager: LogManager) -> threading.Event:
    """Keep the manager's own thread busy until the returned event is set: what is asked of
    it meanwhile waits."""
    gate = threading.Event()
    manager._flusher.submit(gate.wait, 10)
    return gate


@dataclass
class Clock:
    """A clock the test moves by hand (ms)."""

    now_ms: int = START_MS

    def __call__(self) -> int:
        return self.now_ms


@dataclass
class LogHarness:
    """A partition log under a directory, with what reopening it needs."""

    directory: Path
    config: LogConfig = field(default_factory=LogConfig)
    clock: Clock = field(default_factory=Clock)
    files: FileCache = field(default_factory=lambda: FileCache(16))
    log: PartitionLog | None = None

    def open(self, *, clean: bool = True, recovery_point: int | None = None) -> PartitionLog:
        point = recovery_point
        if point is None:
            point = self.log.recovery_point if self.log is not None else 0
        start = self.log.log_start_offset if self.log is not None else 0
        hw = self.log.high_watermark if self.log is not None else None
        self.log = PartitionLog.open(
            self.directory,
            self.config,
            topic_id=None,
            recovery_point=point,
            log_start_offset=start,
            had_clean_shutdown=clean,
            files=self.files,
            clock=self.clock,
            high_watermark=hw,
            rng=random.Random(7),
        )
        return self.log

    def reopen(self, *, clean: bool = True) -> PartitionLog:
        assert self.log is not None
        if clean:
            self.log.flush()
            self.log.close()
        else:
            self.files.forget_under(self.directory)
        return self.open(clean=clean)


def batch(
    n: int = 1, *, key: bytes = b"k", size: int = 10, timestamp_ms: int = START_MS, **kw: int
) -> bytes:
    """An uncompressed batch of ``n`` records with ``size``-byte values."""
    records = [(key + str(i).encode(), bytes([i % 251]) * size, ()) for i in range(n)]
    return build_batch(records, timestamp_ms=timestamp_ms, **kw)


def read_all(log: PartitionLog, start: int | None = None) -> list[tuple[int, bytes]]:
    """(base offset, batch bytes) of every batch from ``start`` (the log start) to the end."""
    offset = log.log_start_offset if start is None else start
    out = []
    while offset < log.log_end_offset:
        got = log.read(offset, max_bytes=1 << 20, max_offset=log.log_end_offset, min_one_batch=True)
        if not got.records:
            break
        for h in iter_headers(got.records):
            out.append((h.base_offset, got.records[h.position : h.end]))
            offset = h.next_offset
    return out
