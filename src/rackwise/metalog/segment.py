"""Segment files of the metadata log: batches back to back, named by their first offset.

:func:`scan` walks a segment's bytes batch by batch, checking each batch's CRC32C, length and
magic (:func:`rackwise.records.batch.check_batch`), that offsets follow on without gap or
overlap and that epochs never go down. It stops at the first batch that fails and says where
and why: everything before that point is the segment's valid prefix, nothing after it is
trusted. The batches' offsets, positions and epochs form the segment's index.
"""

from __future__ import annotations

import bisect
import os
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from rackwise.common.errors import CorruptRecordException
from rackwise.records.batch import check_batch

SEGMENT_SUFFIX: Final = ".log"


def segment_name(base_offset: int) -> str:
    """Kafka's segment file name: the base offset in 20 digits, ``.log``."""
    return f"{base_offset:020d}{SEGMENT_SUFFIX}"


def parse_segment_name(name: str) -> int | None:
    """The base offset in a segment file name, or None if the name is not one."""
    stem = name[: -len(SEGMENT_SUFFIX)] if name.endswith(SEGMENT_SUFFIX) else ""
    if len(stem) != 20 or not stem.isdigit():
        return None
    return int(stem)


@dataclass
class SegmentIndex:
    """Where each batch of a segment starts: parallel arrays, one entry per batch."""

    bases: array[int] = field(default_factory=lambda: array("q"))
    positions: array[int] = field(default_factory=lambda: array("q"))
    epochs: array[int] = field(default_factory=lambda: array("q"))

    def add(self, base_offset: int, position: int, epoch: int) -> None:
        self.bases.append(base_offset)
        self.positions.append(position)
        self.epochs.append(epoch)

    def batch_at(self, offset: int) -> int:
        """The index of the last batch starting at or before ``offset`` (-1 if none)."""
        return bisect.bisect_right(self.bases, offset) - 1


@dataclass
class ScanResult:
    """What :func:`scan` found: the index and extent of the valid prefix, and the problem that
    ended it (None if the whole segment is valid)."""

    index: SegmentIndex
    valid_bytes: int
    end_offset: int
    last_epoch: int
    problem: str | None = None
    problem_offset: int | None = None


EpochAt = Callable[[int], int | None]
"""The epoch the leader-epoch checkpoint gives an offset (None: it does not say)."""


def _any_epoch(offset: int) -> int | None:
    return None


def scan(
    data: bytes, base_offset: int, min_epoch: int, epoch_at: EpochAt = _any_epoch
) -> ScanResult:
    """Check every batch of a segment that should start at ``base_offset`` with epochs from
    ``min_epoch`` on, each the epoch ``epoch_at`` gives its base offset, up to the first that
    fails."""
    index = SegmentIndex()
    pos = 0
    expected = base_offset
    epoch = min_epoch
    while pos < len(data):
        try:
            header = check_batch(data, pos)
        except CorruptRecordException as e:
            return ScanResult(index, pos, expected, epoch, str(e), expected)
        if header.base_offset != expected:
            reason = f"batch starts at offset {header.base_offset}, expected {expected}"
            return ScanResult(index, pos, expected, epoch, reason, expected)
        if header.epoch < epoch:
            reason = f"batch epoch {header.epoch} is older than the epoch before it, {epoch}"
            return ScanResult(index, pos, expected, epoch, reason, expected)
        recorded = epoch_at(expected)
        if recorded is not None and header.epoch != recorded:
            reason = (
                f"batch epoch {header.epoch} differs from epoch {recorded}, which the leader "
                "epoch checkpoint gives its offset"
            )
            return ScanResult(index, pos, expected, epoch, reason, expected)
        index.add(header.base_offset, pos, header.epoch)
        epoch = header.epoch
        expected = header.next_offset
        pos += header.size
    return ScanResult(index, pos, expected, epoch)


@dataclass
class Segment:
    """One segment file as the log tracks it. ``index`` is None for an old segment not yet
    read (those below the snapshot the log recovered from are checked only when read)."""

    base_offset: int
    path: Path
    end_offset: int
    size: int
    index: SegmentIndex | None = None
    last_epoch: int = -1

    @property
    def is_indexed(self) -> bool:
        return self.index is not None


def read_chunks(
    path: Path, positions: list[int], stop: int, chunk_bytes: int
) -> Iterator[tuple[bytes, list[int]]]:
    """Whole batches starting at ``positions`` (the last ending at ``stop``) read in chunks of
    at most ``chunk_bytes`` unless one batch is larger, with each batch's position in its
    chunk."""
    ends = [*positions[1:], stop]
    with open(path, "rb") as f:
        i = 0
        while i < len(positions):
            start = positions[i]
            j = i + 1
            while j < len(positions) and ends[j] - start <= chunk_bytes:
                j += 1
            f.seek(start)
            data = f.read(ends[j - 1] - start)
            if len(data) != ends[j - 1] - start:
                raise CorruptRecordException(f"{path}: shorter than its index says")
            yield data, [p - start for p in positions[i:j]]
            i = j


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
