"""The leader epoch cache of a partition and its ``leader-epoch-checkpoint`` (Kafka's
LeaderEpochFileCache).

Goals
    Answer "where did epoch E end?" (OffsetForLeaderEpoch, a follower's truncation after a
    leader change) and "which epoch wrote offset O?", from the (epoch, start offset) pairs of
    every leader the log has seen, kept durable in Kafka's checkpoint format.

Constraints
    Epochs and start offsets both increase along the list. The file is written whole
    (temporary file, fsync, rename: :func:`~rackwise.storage.checkpoints.atomic_write`).

    When :attr:`LeaderEpochCache.write_later` is set (a log of a broker's log manager), a
    change is made in memory at once and the file is written on the manager's thread: a new
    leader epoch for a thousand partitions at a failover must not hold the request loop for a
    thousand fsyncs, nor for one fsync behind gigabytes of writeback. Kafka writes a new
    entry through and flushes truncations in the background; rackwise keeps the guarantee that
    Kafka's synchronous write gives (recovery never trusts data whose epoch entry the file
    lacks) by ordering instead: a flush calls :meth:`LeaderEpochCache.write` before it moves
    the log's recovery point, and an unclean restart recovers every batch after the recovery
    point, assigning the epoch of each. A truncation the file has not yet seen is harmless:
    the loader truncates the cache to the log again at open. The loader's own changes (those
    truncations, and the epochs of the batches it recovers) are written after the load, by
    the next flush or close, or on the manager's thread once it owns the log: none of them
    moves the recovery point, so a crash before they are written only repeats them.
    :meth:`~LeaderEpochCache.clear` is written through, as Kafka's ``clearAndFlush`` is: the
    loader cannot tell entries of a log restarted at a new offset from real history. Without
    ``write_later`` every change is written through before the call returns.

Algorithm
    Kafka's rules, exactly. :meth:`LeaderEpochCache.assign` ignores an entry that repeats the
    latest epoch at the same or a later offset; otherwise it first removes, from the newest
    down, every entry whose epoch or start offset is not below the new one's (warning when
    that removes real history), then appends. :meth:`~LeaderEpochCache.end_offset_for`: the
    latest epoch ends at the log end offset; an earlier epoch E ends where the first epoch
    above E starts, reported with the largest known epoch <= E (or E itself when no known
    epoch is below it); an unknown request, or one above every epoch, is
    (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET).

Worked example
    Entries [(0, 0), (2, 100), (5, 250)], log end 300: ``end_offset_for(5, 300)`` is
    (5, 300); ``end_offset_for(3, 300)`` is (2, 250); ``end_offset_for(1, 300)`` is (0, 100).
    ``truncate_from_end(200)`` leaves [(0, 0), (2, 100)]; ``truncate_from_start(120)`` then
    leaves [(2, 120)]; ``epoch_for_offset(150)`` is 2.
"""

from __future__ import annotations

import bisect
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Final

from rackwise.storage.checkpoints import read_epochs, write_epochs

LOG: Final = logging.getLogger("rackwise.storage")
UNDEFINED_EPOCH: Final = -1
UNDEFINED_EPOCH_OFFSET: Final = -1


class LeaderEpochCache:
    """The (epoch, start offset) entries of one partition (module docstring)."""

    def __init__(self, checkpoint_path: Path) -> None:
        self.checkpoint_path = checkpoint_path
        self._epochs: list[int] = []
        self._starts: list[int] = []
        self._lock = threading.RLock()
        for epoch, start in read_epochs(checkpoint_path):
            self._assign(epoch, start)
        self.write_later: Callable[[], None] | None = None
        """Asks for :meth:`write` on another thread after a change; None: written through."""
        self._unwritten = False
        """Entries changed since the file was last written."""
        self._file_lock = threading.Lock()
        """Held while the file is written; taken before :attr:`_lock`, never after."""
        self._closed = False

    # ---- reading -----------------------------------------------------------------------------

    @property
    def latest_epoch(self) -> int | None:
        with self._lock:
            return self._epochs[-1] if self._epochs else None

    @property
    def epoch_entries(self) -> list[tuple[int, int]]:
        with self._lock:
            return list(zip(self._epochs, self._starts, strict=True))

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """Kafka's endOffsetFor (module docstring)."""
        with self._lock:
            epochs = self._epochs
            if requested_epoch == UNDEFINED_EPOCH:
                return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
            if epochs and epochs[-1] == requested_epoch:
                return requested_epoch, log_end_offset
            higher = bisect.bisect_right(epochs, requested_epoch)
            if higher == len(epochs):
                return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
            if higher == 0:
                return requested_epoch, self._starts[0]
            return epochs[higher - 1], self._starts[higher]

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch that wrote ``offset`` (the last entry starting at or before it)."""
        with self._lock:
            slot = bisect.bisect_right(self._starts, offset) - 1
            return self._epochs[slot] if slot >= 0 else None

    # ---- changes -----------------------------------------------------------------------------

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that ``epoch`` starts at ``start_offset`` (module docstring); when that
        changes the cache, the file follows (:meth:`_changed`)."""
        with self._lock:
            if not self._assign(epoch, start_offset):
                return
        self._changed()

    def _assign(self, epoch: int, start_offset: int) -> bool:
        if epoch < 0 or start_offset < 0:
            raise ValueError(
                f"Received invalid partition leader epoch entry EpochEntry(epoch={epoch}, "
                f"startOffset={start_offset})"
            )
        if self._epochs and epoch == self._epochs[-1] and start_offset >= self._starts[-1]:
            return False
        removed = []
        while self._epochs and (self._epochs[-1] >= epoch or self._starts[-1] >= start_offset):
            removed.append((self._epochs.pop(), self._starts.pop()))
        if len(removed) > 1 or (removed and removed[0][1] != start_offset):
            LOG.warning(
                "%s: new epoch entry (%d, %d) caused truncation of conflicting entries %s",
                self.checkpoint_path.parent.name,
                epoch,
                start_offset,
                removed,
            )
        self._epochs.append(epoch)
        self._starts.append(start_offset)
        return True

    def truncate_from_end(self, end_offset: int) -> None:
        """Remove the entries that start at or after ``end_offset``."""
        with self._lock:
            if end_offset < 0 or not self._starts or self._starts[-1] < end_offset:
                return
            keep = bisect.bisect_left(self._starts, end_offset)
            del self._epochs[keep:]
            del self._starts[keep:]
        self._changed()

    def truncate_from_start(self, start_offset: int) -> None:
        """Remove the entries wholly before ``start_offset``; the entry covering it is kept,
        moved to start there (Kafka's truncateFromStart)."""
        with self._lock:
            covered = bisect.bisect_right(self._starts, start_offset)
            if covered == 0 or (covered == 1 and self._starts[0] == start_offset):
                return
            epoch = self._epochs[covered - 1]
            del self._epochs[:covered]
            del self._starts[:covered]
            self._epochs.insert(0, epoch)
            self._starts.insert(0, start_offset)
        self._changed()

    def clear(self) -> None:
        """Remove every entry (the log restarts at a new offset); written through."""
        with self._lock:
            self._epochs.clear()
            self._starts.clear()
            self._unwritten = True
        self.write()

    # ---- the file ------------------------------------------------------------------------------

    @property
    def unwritten(self) -> bool:
        """Whether the entries changed since the file was last written."""
        return self._unwritten

    def _changed(self) -> None:
        """After a change, outside :attr:`_lock`: write it now, or ask for it once."""
        with self._lock:
            asked = self._unwritten
            self._unwritten = True
        if self.write_later is None:
            self.write()
        elif not asked:
            self.write_later()

    def write(self) -> None:
        """Write the entries if they changed since the file was last written (any thread).
        Writes run one at a time, and each takes the entries when it begins, so a later write
        never carries older entries. An error leaves the change unwritten and is raised."""
        with self._file_lock:
            with self._lock:
                if not self._unwritten or self._closed:
                    return
                entries = list(zip(self._epochs, self._starts, strict=True))
                self._unwritten = False
            try:
                if self.checkpoint_path.parent.exists():
                    write_epochs(self.checkpoint_path, entries)
            except BaseException:
                with self._lock:
                    self._unwritten = True
                raise

    def close(self) -> None:
        """Write no more (the directory may be renamed or deleted next): a write asked for and
        still waiting does nothing, and one under way is finished first."""
        with self._file_lock:
            self._closed = True
