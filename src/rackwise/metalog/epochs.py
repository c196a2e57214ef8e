"""The metadata log's ``leader-epoch-checkpoint``: where each controller epoch starts, in the
brokers' leader epoch cache (:class:`~rackwise.storage.epochs.LeaderEpochCache`, Kafka's
``LeaderEpochFileCache``), beside the segments as in Kafka's ``__cluster_metadata-0``.

Goals
    Catch a damaged epoch field. Kafka's batch CRC does not cover the partition leader epoch,
    so a flipped bit there would pass every other check whenever the epoch it makes is not
    lower than the one before; the checkpoint says which epoch wrote each offset, and the
    scan at open (:func:`rackwise.metalog.segment.scan`) refuses a batch whose epoch differs.

Constraints
    The checkpoint is written through (temporary file, fsync, rename) before the first batch
    of a new epoch is written, so every durable batch's epoch is in it: one extra write per
    epoch, none per append. A log without the file (written by an earlier release) or with
    a file that does not parse (set aside as ``.corrupt``) is scanned without the check and
    the file is rebuilt from the batches. A read-only open reads the file and writes nothing.

Worked example
    Epoch 1 wrote offsets 0 to 9 and epoch 3 starts at 10: the file holds ``1 0`` and ``3 10``.
    A bit flipped in the epoch of the batch at 4 makes it 5; the scan truncates the log at
    offset 4, as it would for a failed CRC.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Final

from rackwise.metalog.segment import Segment
from rackwise.storage.checkpoints import (
    LEADER_EPOCH_CHECKPOINT,
    CheckpointFormatError,
    read_epochs,
)
from rackwise.storage.epochs import LeaderEpochCache

CORRUPT_SUFFIX: Final = ".corrupt"

Event = Callable[[str, Path, "int | None", str], None]


class EpochCheckpoint:
    """The checkpoint of the log in ``directory``, as read at open, and (unless
    ``read_only``) the cache that keeps it."""

    def __init__(self, directory: Path, *, read_only: bool, event: Event) -> None:
        self.path = directory / LEADER_EPOCH_CHECKPOINT
        self.read_only = read_only
        entries: list[tuple[int, int]] | None = None
        if self.path.exists():
            try:
                entries = read_epochs(self.path)
            except (CheckpointFormatError, OSError, UnicodeDecodeError) as e:
                aside = self.path.with_name(self.path.name + CORRUPT_SUFFIX)
                if not read_only:
                    self.path.rename(aside)
                event("set aside", self.path, None, f"{e}; now {aside.name}")
        self._loaded = entries is not None
        self._epochs = [epoch for epoch, _ in entries or ()]
        self._starts = [start for _, start in entries or ()]
        self.cache = None if read_only else LeaderEpochCache(self.path)

    def epoch_at(self, offset: int) -> int | None:
        """The epoch the file read at open gives ``offset`` (None if it does not say)."""
        slot = bisect.bisect_right(self._starts, offset) - 1
        return self._epochs[slot] if slot >= 0 else None

    def adopt(self, segments: Iterable[Segment], end_offset: int) -> None:
        """After the scan: drop entries past the log's end, or rebuild a file that was missing
        or unreadable from the batches scanned."""
        cache = self.cache
        if cache is None:
            return
        if self._loaded:
            cache.truncate_from_end(end_offset)
            return
        cache.write_later = _later  # one write for the whole rebuild
        for segment in segments:
            if segment.index is not None:
                for base, epoch in zip(segment.index.bases, segment.index.epochs, strict=True):
                    if epoch >= 0 and cache.latest_epoch != epoch:
                        cache.assign(int(epoch), int(base))
        cache.write_later = None
        cache.write()

    def start_epoch(self, epoch: int, start_offset: int) -> None:
        """Before the first batch of ``epoch`` at ``start_offset`` is written."""
        cache = self.cache
        if cache is not None and epoch >= 0 and cache.latest_epoch != epoch:
            cache.assign(epoch, start_offset)

    def truncate_from_end(self, end_offset: int) -> None:
        if self.cache is not None:
            self.cache.truncate_from_end(end_offset)

    def truncate_from_start(self, start_offset: int) -> None:
        if self.cache is not None:
            self.cache.truncate_from_start(start_offset)

    def clear(self) -> None:
        if self.cache is not None:
            self.cache.clear()

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()


def _later() -> None:
    """The rebuild writes once, at its end."""
