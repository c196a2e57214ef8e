"""The files of one partition's log and when they reach the disk (Kafka's LocalLog, with the
producer snapshot of a roll and the leader epoch checkpoint's writes, which Kafka's UnifiedLog
adds around it): the segments, the recovery point, rolling, flushing at once or from a
background thread, closing, and the lock and failure state every call into the log goes
through. :class:`~rackwise.storage.log.PartitionLog` builds on it.

Goals
    Know how far the log is on disk (the recovery point) and move it only once the data
    below it is fsynced; never let a slow fsync hold up appends and reads when the owner has
    a thread for it; fail the log at the first I/O error.

Constraints
    Durability comes from replication, as in Kafka: an append is written to the page cache and
    fsynced when ``flush.messages`` or ``flush.ms`` says, when its segment rolls, and at a
    clean shutdown. No file descriptor is held between calls (the broker's
    :class:`~rackwise.storage.files.FileCache` holds them). One lock per log: callers may come
    from several threads. An I/O error marks the log failed: every later call raises
    KAFKA_STORAGE_ERROR until it is opened again.

Algorithm
    A roll creates the new segment's files (crash point ``roll.segment-created``), writes the
    producer snapshot at its base offset (``roll.snapshot-written``), then fsyncs the old
    segment and moves the recovery point; a crash at either point leaves an unflushed tail
    that recovery scans. Given a background thread (:attr:`LocalLog.flush_later`, as Kafka
    schedules its ``flush-log`` task), the fsyncs after a roll run there without the log's
    lock: behind gigabytes of dirty pages an fsync takes seconds, which appends and reads
    would otherwise wait out. The indexes are written under the lock, the files fsynced
    outside it, and the recovery point moves under it again, only once they are done, and not
    at all if the log was truncated meanwhile (:attr:`LocalLog._truncations` counts them).
    The leader epoch checkpoint is written before the recovery point passes an entry's start
    (:mod:`rackwise.storage.epochs`).

Worked example
    A roll at offset 1000 of a log with a background thread: segment 1000 and the producer
    snapshot 1000 are created under the lock and the call returns; on the thread, the
    snapshot is fsynced, the segments from the recovery point (say 0) up to 1000 have their
    indexes written, then their files and the directory are fsynced, and the recovery point
    becomes 1000. Had a truncation come between, the recovery point would stay at 0.
"""

from __future__ import annotations

import functools
import logging
import random
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Final

from rackwise.storage import log_segments
from rackwise.storage.checkpoints import fsync_directory
from rackwise.storage.config import LogConfig
from rackwise.storage.dirs import parse_log_dir_name
from rackwise.storage.epochs import LeaderEpochCache
from rackwise.storage.errors import KafkaStorageException
from rackwise.storage.files import FileCache
from rackwise.storage.producer_state import ProducerStateManager, flush_snapshot
from rackwise.storage.segment import LogSegment

LOG: Final = logging.getLogger("rackwise.storage")


def _no_failure_hook(log_dir: Path) -> None:
    pass


def _no_crash(point: str) -> None:
    """The production crash hook: nothing happens."""


class _LogIO:
    """The context of each call into a log (:meth:`LocalLog._io`): hold the log's lock;
    refuse a failed or closed log; turn an I/O error into KAFKA_STORAGE_ERROR and fail the log.
    A class rather than a generator-based context manager: it is entered for every append and
    read, and costs a third as much."""

    __slots__ = ("action", "log")

    def __init__(self, log: LocalLog, action: str) -> None:
        self.log = log
        self.action = action

    def __enter__(self) -> None:
        log = self.log
        log._lock.acquire()
        if log._failed is None and not log._closed:
            return
        log._lock.release()
        if log._failed is not None:
            raise KafkaStorageException(
                f"The log of {log.name} in dir {log.directory.parent} failed earlier "
                f"({log._failed}); it must be opened again"
            )
        raise KafkaStorageException(f"The log of {log.name} is closed")

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: object
    ) -> None:
        log = self.log
        try:
            if isinstance(error, OSError):
                log._failed = error
                log.on_failure(log.directory.parent)
                raise KafkaStorageException(
                    f"Error while {self.action} for {log.name} in dir {log.directory.parent}: "
                    f"{error}"
                ) from error
        finally:
            log._lock.release()


class LocalLog:
    """The files of one partition's log (module docstring)."""

    def __init__(
        self,
        directory: Path,
        config: LogConfig,
        *,
        files: FileCache,
        clock: Callable[[], int],
        epochs: LeaderEpochCache,
        producer_state: ProducerStateManager,
        topic_id: uuid.UUID | None,
        rng: random.Random,
    ) -> None:
        self.directory = directory
        self.topic, self.partition = parse_log_dir_name(directory.name)
        self.config = config
        self.files = files
        self.clock = clock
        self.epochs = epochs
        self.producer_state = producer_state
        self.topic_id = topic_id
        self.rng = rng
        self.segments: list[LogSegment] = []
        self.log_start_offset = 0
        self.log_end_offset = 0
        self.high_watermark = 0
        self.recovery_point = 0
        self.last_flush_ms = clock()
        self.crash_point: Callable[[str], None] = _no_crash
        """Called at each named crash point (:data:`rackwise.storage.log.CRASH_POINTS`); tests
        make it raise."""
        self.on_failure: Callable[[Path], None] = _no_failure_hook
        """Told the log directory when an I/O error fails this log (Kafka's
        LogDirFailureChannel): it must only take note, never call back into the log."""
        self.flush_later: Callable[[Callable[[], None]], None] | None = None
        """Runs a job on the owner's background thread; None: a roll flushes at once."""
        self._lock = threading.RLock()
        self._failed: BaseException | None = None
        self._closed = False
        self._truncations = 0
        """Counts truncations, so a flush that ran outside the lock knows if one came between."""

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    @property
    def active_segment(self) -> LogSegment:
        return self.segments[-1]

    def size_bytes(self) -> int:
        with self._lock:
            return sum(s.size for s in self.segments)

    def _io(self, action: str) -> _LogIO:
        """Hold the lock; turn an I/O error into KAFKA_STORAGE_ERROR and fail the log."""
        return _LogIO(self, action)

    def update_config(self, config: LogConfig) -> None:
        """Use ``config`` from now on (new segments take its index settings)."""
        with self._lock:
            self.config = config

    # ---- rolling and flushing --------------------------------------------------------------

    def roll(self) -> None:
        """Start a new active segment at the log end offset (an empty active segment stays)."""
        with self._io("rolling the log"):
            if self.active_segment.size:
                self.roll_to(self.log_end_offset)

    def roll_to(self, expected_next_offset: int) -> LogSegment:
        """Kafka's LocalLog.roll, then a producer snapshot and a flush up to the new segment."""
        new_offset = max(expected_next_offset, self.log_end_offset)
        active = self.active_segment
        now = self.clock()
        if new_offset == active.base_offset and active.size == 0:
            active.delete()
            self.segments.pop()
        elif new_offset <= active.base_offset:
            raise ValueError(
                f"BUG: rolling {self.name} at {new_offset}, not above the active segment "
                f"{active.base_offset}"
            )
        else:
            active.on_become_inactive()
        segment = log_segments.create_segment(
            self.directory, new_offset, self.files, self.config, self.rng, now_ms=now
        )
        self.segments.append(segment)
        self.crash_point("roll.segment-created")
        self.producer_state.update_map_end_offset(new_offset)
        snapshot = self.producer_state.take_snapshot(new_offset, sync=self.flush_later is None)
        self.crash_point("roll.snapshot-written")
        if self.flush_later is None:
            self.flush_to(new_offset)
        else:
            truncations = self._truncations
            self.flush_later(
                functools.partial(self.flush_outside_lock, new_offset, truncations, snapshot)
            )
        LOG.info("%s: rolled new log segment at offset %d", self.name, new_offset)
        return segment

    def flush(self, offset: int | None = None) -> None:
        """fsync everything below ``offset`` (the log end offset) and move the recovery point
        there."""
        with self._io("flushing the log"):
            self.flush_to(
                self.log_end_offset if offset is None else min(offset, self.log_end_offset)
            )

    def flush_to(self, offset: int) -> None:
        """:meth:`flush` with the lock held (the storage package's appends and rolls)."""
        self.epochs.write()  # before the recovery point passes an entry's start (epochs.py)
        if offset <= self.recovery_point:
            return
        dirty, new_segment = log_segments.unflushed(self.segments, self.recovery_point, offset)
        for segment in dirty:
            segment.flush()
        if new_segment:  # Kafka's rule: a segment created since the last flush needs its entry
            fsync_directory(self.directory)
        self.recovery_point = offset
        self.last_flush_ms = self.clock()

    def flush_unlocked(self) -> None:
        """:meth:`flush` to the log end with the fsyncs outside the lock, for a background
        thread (the periodic flush of ``flush.ms``): appends and reads go on meanwhile."""
        with self._lock:
            offset, truncations = self.log_end_offset, self._truncations
        self.flush_outside_lock(offset, truncations)

    def flush_outside_lock(
        self, offset: int, truncations: int, snapshot: Path | None = None
    ) -> None:
        """:meth:`flush_to` ``offset`` from a background thread, the fsyncs outside the lock
        (module docstring), after a roll's producer ``snapshot``; nothing if the log was
        truncated since ``offset`` was taken (``truncations`` is the count then). An I/O error
        fails the log, unless the files went meanwhile with a truncation, retention or the
        log's close."""
        if snapshot is not None:
            try:
                flush_snapshot(snapshot)
            except OSError as e:
                with self._lock:
                    self._fail(e, "flushing a producer snapshot")
                return
        with self._lock:
            if self._closed or self._failed is not None or truncations != self._truncations:
                return
            if offset <= self.recovery_point:
                return
            segments, new_segment = log_segments.unflushed(
                self.segments, self.recovery_point, offset
            )
            try:
                paths = [path for s in segments for path in s.write_indexes()]
            except OSError as e:
                self._fail(e, "flushing the log")
                return
        try:
            for path in paths:
                self.files.fsync(path)
            if new_segment:
                fsync_directory(self.directory)
            self.epochs.write()  # before the recovery point passes an entry's start (epochs.py)
        except OSError as e:
            with self._lock:
                if not self._closed and all(s in self.segments for s in segments):
                    self._fail(e, "flushing the log")
            return
        with self._lock:
            moved = not self._closed and self._truncations == truncations
            if moved and offset > self.recovery_point:
                self.recovery_point = offset
                self.last_flush_ms = self.clock()

    def _fail(self, error: OSError, action: str) -> None:
        """An I/O error outside any caller's request: the log fails, its directory is told."""
        if self._failed is None:
            self._failed = error
            LOG.error(
                "Error while %s for %s in dir %s: %s",
                action,
                self.name,
                self.directory.parent,
                error,
            )
            self.on_failure(self.directory.parent)

    def close(self) -> None:
        """Snapshot the producer state at the log end, write the indexes, release files."""
        with self._lock:
            if self._closed:
                return
            try:
                if self._failed is None:
                    self.producer_state.take_snapshot(self.log_end_offset)
                    for segment in self.segments:
                        segment.close()
                    self.epochs.write()
            finally:
                self._closed = True
                self.epochs.close()
                self.files.forget_under(self.directory)

    def close_handlers(self) -> None:
        """Release the files and write nothing (Kafka's ``closeHandlers``): for a log whose
        directory is renamed for deletion next (one left by a crash is deleted at startup),
        and for a log in a failed directory, where a write would fail again or hang on the
        failing disk."""
        with self._lock:
            self._closed = True
            self.epochs.close()
            try:
                self.files.forget_under(self.directory)
            except OSError as e:  # a descriptor of a failing disk may fail to close
                LOG.info("%s: error releasing the files of %s: %s", self.name, self.directory, e)

    def write_epochs_later(self) -> None:
        """Write the leader epoch checkpoint on :attr:`flush_later`'s thread (set as the epoch
        cache's ``write_later`` by an owner that has that thread)."""
        if self.flush_later is None:
            self._write_epochs()
        else:
            self.flush_later(self._write_epochs)

    def _write_epochs(self) -> None:
        try:
            self.epochs.write()
        except OSError as e:
            with self._lock:
                if not self._closed:
                    self._fail(e, "writing the leader epoch checkpoint")
