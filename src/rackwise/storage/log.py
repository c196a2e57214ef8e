"""One partition's log on disk (Kafka's UnifiedLog and LocalLog).

Goals
    Append a producer's batches as the leader (validated, offsets and leader epoch written in
    place) or a leader's batches as a follower; serve reads of whole batches; keep the leader
    epoch cache and the producer state in step; truncate, roll, flush, apply retention; and
    reopen after any crash to a prefix of what was appended, in Kafka's on-disk format.

Constraints
    Durability comes from replication, as in Kafka: an append is written to the page cache and
    fsynced when ``flush.messages`` or ``flush.ms`` says, when its segment rolls, and at a
    clean shutdown; the recovery point records how far data is known to be on disk. No file
    descriptor is held between calls (the broker's :class:`~rackwise.storage.files.FileCache`
    holds them). One lock per log: callers may come from several threads. An I/O error marks
    the log failed: every later call raises KAFKA_STORAGE_ERROR until it is opened again.

Algorithm
    Leader append: validate (:mod:`rackwise.storage.batch`), check the producer's sequence
    and epoch (a retry of one of its last five batches is answered with the original offsets
    and nothing is written), stamp offsets from the log end offset, the leader epoch and (for
    ``LogAppendTime``) the time, record a new epoch in the cache, roll the active segment if
    the batch would overflow it (``segment.bytes``, ``segment.ms`` plus jitter, a full index, an
    offset beyond the index's int32), write, update the producer state, and flush if
    ``flush.messages`` is reached. Follower append: framing, magic and CRC only; the first
    offset may not be below the log end offset. Reads return whole batches from one segment,
    from the batch holding the offset up to ``max_offset`` (exclusive) and ``max_bytes``.
    Opening, recovery and retention are in :mod:`rackwise.storage.recovery` and
    :mod:`rackwise.storage.retention`.

    Crash points (``CRASH_POINTS``, each tested): a roll creates the new segment's files
    (``roll.segment-created``), writes the producer snapshot at its base offset
    (``roll.snapshot-written``), then fsyncs the old segment and moves the recovery point; a
    crash at either point leaves an unflushed tail that recovery scans. Given a background
    thread (:attr:`PartitionLog.flush_later`, as Kafka schedules its ``flush-log`` task),
    the fsyncs after a roll run there without the log's lock: behind gigabytes of dirty pages
    an fsync takes seconds, which appends and reads would otherwise wait out. The recovery
    point moves only once they are done, and not at all if the log was truncated meanwhile.
    Truncating the whole log deletes the old segments (``truncate-fully.old-deleted``) before
    creating the new one (``truncate-fully.segment-created``), so a crash never leaves stale
    data readable.
    Retention moves the log start offset (``retention.start-offset-moved``) before deleting
    files a segment at a time (``retention.segment-deleted``); a crash leaves segments below
    the log start offset, which the next pass deletes.

Worked example
    An empty log at epoch 3 receives a batch of 5 records: offsets 0-4 are written into it,
    epoch entry (3, 0) is checkpointed, the answer is first offset 0, last offset 4. A
    follower fetching from offset 0 with ``max_offset`` = log end (5) gets the batch's bytes
    exactly as stored; a consumer with the high watermark still 0 gets nothing.
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

from rackwise.storage import appends, log_segments, retention, timestamps
from rackwise.storage.appends import LogAppendInfo
from rackwise.storage.checkpoints import LEADER_EPOCH_CHECKPOINT, check_topic_id, fsync_directory
from rackwise.storage.config import LogConfig
from rackwise.storage.dirs import parse_log_dir_name
from rackwise.storage.epochs import LeaderEpochCache
from rackwise.storage.errors import (
    KafkaStorageException,
    OffsetOutOfRangeException,
)
from rackwise.storage.files import FileCache
from rackwise.storage.log_segments import FetchSlice, segment_jitter
from rackwise.storage.producer_state import ProducerEntry, ProducerStateManager, flush_snapshot
from rackwise.storage.recovery import load_segments
from rackwise.storage.segment import LogSegment

__all__ = ["LogAppendInfo", "LogConfig", "PartitionLog"]

LOG: Final = logging.getLogger("rackwise.storage")
NO_OFFSET: Final = -1
CRASH_POINTS: Final = (
    "roll.segment-created",
    "roll.snapshot-written",
    "truncate-fully.old-deleted",
    "truncate-fully.segment-created",
    "retention.start-offset-moved",
    "retention.segment-deleted",
)
"""The points between the steps of the log's multi-step changes where a crash is tested."""


def _no_failure_hook(log_dir: Path) -> None:
    pass


def _not_yet() -> None:
    """An epoch cache's ``write_later`` while its log loads: the change stays unwritten."""


def _no_crash(point: str) -> None:
    """The production crash hook: nothing happens."""


class _LogIO:
    """The context of each call into a log (:meth:`PartitionLog._io`): hold the log's lock;
    refuse a failed or closed log; turn an I/O error into KAFKA_STORAGE_ERROR and fail the log.
    A class rather than a generator-based context manager: it is entered for every append and
    read, and costs a third as much."""

    __slots__ = ("action", "log")

    def __init__(self, log: PartitionLog, action: str) -> None:
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


class PartitionLog:
    """One partition's log (module docstring). Build it with :meth:`open`."""

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
        """Called at each named crash point (CRASH_POINTS); tests make it raise."""
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

    def __repr__(self) -> str:
        return (
            f"PartitionLog({self.name}, logStartOffset={self.log_start_offset}, "
            f"logEndOffset={self.log_end_offset}, highWatermark={self.high_watermark})"
        )

    # ---- opening -----------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        directory: Path,
        config: LogConfig,
        *,
        topic_id: uuid.UUID | None,
        recovery_point: int,
        log_start_offset: int,
        had_clean_shutdown: bool,
        files: FileCache,
        clock: Callable[[], int],
        high_watermark: int | None = None,
        producer_id_expiration_ms: int = 86_400_000,
        rng: random.Random | None = None,
    ) -> PartitionLog:
        """Open (creating if needed) the log in ``directory``, recovering it after an unclean
        shutdown (:mod:`rackwise.storage.recovery`)."""
        directory.mkdir(parents=True, exist_ok=True)
        topic_id = check_topic_id(directory, topic_id)
        log = cls(
            directory,
            config,
            files=files,
            clock=clock,
            epochs=LeaderEpochCache(directory / LEADER_EPOCH_CHECKPOINT),
            producer_state=ProducerStateManager(
                directory, producer_id_expiration_ms=producer_id_expiration_ms
            ),
            topic_id=topic_id,
            rng=rng if rng is not None else random.Random(),
        )
        log.epochs.write_later = _not_yet  # the loader's changes are written after it (epochs.py)
        loaded = load_segments(
            directory,
            files,
            log_segments.settings(config),
            log.epochs,
            had_clean_shutdown=had_clean_shutdown,
            recovery_point=recovery_point,
            log_start_offset=log_start_offset,
            now_ms=clock(),
            jitter=lambda: segment_jitter(config, log.rng),
        )
        log.epochs.write_later = None
        log.segments = loaded.segments
        log.log_start_offset = loaded.log_start_offset
        log.recovery_point = loaded.recovery_point
        log.log_end_offset = loaded.log_end_offset
        log._rebuild_producer_state()
        hw = log.log_start_offset if high_watermark is None else high_watermark
        log.high_watermark = min(max(hw, log.log_start_offset), log.log_end_offset)
        return log

    def _rebuild_producer_state(self) -> None:
        """Load the newest producer snapshot and replay the batches after it."""
        replay_from = self.producer_state.load(
            self.log_start_offset, self.log_end_offset, now_ms=self.clock()
        )
        log_segments.replay_producers(
            self.producer_state, self.segments, replay_from, self.log_end_offset, self.clock()
        )

    def update_config(self, config: LogConfig) -> None:
        """Use ``config`` from now on (new segments take its index settings)."""
        with self._lock:
            self.config = config

    # ---- state -------------------------------------------------------------------------------

    @property
    def latest_epoch(self) -> int | None:
        return self.epochs.latest_epoch

    @property
    def active_segment(self) -> LogSegment:
        return self.segments[-1]

    def size_bytes(self) -> int:
        with self._lock:
            return sum(s.size for s in self.segments)

    def _io(self, action: str) -> _LogIO:
        """Hold the lock; turn an I/O error into KAFKA_STORAGE_ERROR and fail the log."""
        return _LogIO(self, action)

    def active_producers(self) -> list[ProducerEntry]:
        """The producers this log keeps state for, by producer id (DescribeProducers)."""
        with self._lock:
            return [e for _, e in sorted(self.producer_state.active_producers.items())]

    # ---- appends -----------------------------------------------------------------------------

    def append_as_leader(self, records: bytes | memoryview, *, leader_epoch: int) -> LogAppendInfo:
        """Validate, stamp and append a producer's records (:mod:`rackwise.storage.appends`)."""
        with self._io("appending records"):
            now = self.clock()
            batches = appends.leader_batches(
                records,
                leader_epoch,
                config=self.config,
                name=self.name,
                now=now,
                producer_state=self.producer_state,
                epochs=self.epochs,
                log_start_offset=self.log_start_offset,
                log_end_offset=self.log_end_offset,
            )
            if isinstance(batches, LogAppendInfo):
                return batches  # a retry, answered as the original
            return self._write(batches, now)

    def append_as_follower(self, records: bytes | memoryview) -> LogAppendInfo:
        """Append a leader's batches, offsets and epochs as they are."""
        with self._io("appending replicated records"):
            now = self.clock()
            batches = appends.follower_batches(
                records,
                config=self.config,
                name=self.name,
                epochs=self.epochs,
                log_start_offset=self.log_start_offset,
                log_end_offset=self.log_end_offset,
            )
            if isinstance(batches, LogAppendInfo):
                return batches  # no whole batch
            return self._write(batches, now)

    def _write(self, batches: appends.Batches, now: int) -> LogAppendInfo:
        """Roll if the batches would overflow the active segment, write them, move the log
        end offset, update the producer state, and flush at ``flush.messages``."""
        segment = self.active_segment
        if appends.should_roll(segment, batches, self.config, now):
            segment = self.roll_to(batches.headers[0].base_offset)
        info = appends.write(segment, batches, self.log_start_offset)
        self.log_end_offset = info.last_offset + 1
        appends.update_producers(self.producer_state, batches.headers, self.log_end_offset, now)
        if self.log_end_offset - self.recovery_point >= self.config.flush_messages:
            self.flush_to(self.log_end_offset)
        return info

    # ---- rolling and flushing ----------------------------------------------------------------

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

    # ---- reads -------------------------------------------------------------------------------

    def read(
        self,
        offset: int,
        *,
        max_bytes: int,
        max_offset: int,
        min_one_batch: bool,
        zero_copy: bool = False,
    ) -> FetchSlice:
        """Whole batches from the one holding ``offset`` (module docstring); with ``zero_copy``
        as a :class:`~rackwise.storage.files.FileRegion` of the segment file where that pays
        (:meth:`LogSegment.read`)."""
        with self._io("reading"):
            if offset < self.log_start_offset or offset > self.log_end_offset:
                raise OffsetOutOfRangeException(
                    f"Received request for offset {offset} for partition {self.name}, but we "
                    f"only have log segments in the range {self.log_start_offset} to "
                    f"{self.log_end_offset}."
                )
            if offset >= min(max_offset, self.log_end_offset):
                return FetchSlice(b"", offset)
            return log_segments.read(
                self.segments,
                offset,
                max_bytes=max_bytes,
                max_offset=max_offset,
                min_one_batch=min_one_batch,
                zero_copy=zero_copy,
            )

    # ---- offsets -----------------------------------------------------------------------------

    def update_high_watermark(self, offset: int) -> None:
        """Set the high watermark, clamped to [log start offset, log end offset]."""
        with self._lock:
            self.high_watermark = min(max(offset, self.log_start_offset), self.log_end_offset)

    def maybe_increment_log_start_offset(self, offset: int) -> None:
        """DeleteRecords: move the log start offset up to ``offset`` (never above the high
        watermark); the segments wholly below it go at the next retention pass."""
        with self._io("moving the log start offset"):
            if offset > self.high_watermark:
                raise OffsetOutOfRangeException(
                    f"Cannot increment the log start offset to {offset} of partition "
                    f"{self.name} since it is larger than the high watermark "
                    f"{self.high_watermark}"
                )
            self.advance_log_start_offset(offset)

    def advance_log_start_offset(self, offset: int) -> None:
        if offset <= self.log_start_offset:
            return
        self.log_start_offset = offset
        LOG.info("%s: incremented log start offset to %d", self.name, offset)
        self.epochs.truncate_from_start(offset)
        self.producer_state.on_log_start_offset(offset)

    def truncate_to(self, offset: int) -> None:
        """Remove every offset at or above ``offset`` (a follower's truncation)."""
        with self._io("truncating the log"):
            if offset < 0:
                raise ValueError(f"Cannot truncate partition {self.name} to a negative offset")
            if offset >= self.log_end_offset:
                self.epochs.truncate_from_end(self.log_end_offset)
                return
            LOG.info("%s: truncating to offset %d", self.name, offset)
            self._truncations += 1
            if self.segments[0].base_offset > offset:
                self._truncate_fully(offset)
                return
            while len(self.segments) > 1 and self.segments[-1].base_offset > offset:
                self.segments.pop().delete()
            self.active_segment.ensure_indexes()
            self.active_segment.truncate_to(offset)
            self.log_end_offset = offset
            self.recovery_point = min(self.recovery_point, offset)
            self.epochs.truncate_from_end(offset)
            self.log_start_offset = min(self.log_start_offset, offset)
            replay_from = self.producer_state.truncate_and_reload(
                self.log_start_offset, offset, now_ms=self.clock()
            )
            log_segments.replay_producers(
                self.producer_state, self.segments, replay_from, offset, self.clock()
            )
            self.high_watermark = min(self.high_watermark, offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Delete everything; the log restarts empty at ``offset``."""
        with self._io("truncating the whole log"):
            self._truncate_fully(offset)

    def _truncate_fully(self, offset: int) -> None:
        """Old segments first, then the new one: a crash between leaves an empty directory,
        which reopens at the checkpointed log start offset, never stale data."""
        self._truncations += 1
        for segment in self.segments:
            segment.delete()
        self.crash_point("truncate-fully.old-deleted")
        self.segments = [
            log_segments.create_segment(
                self.directory, offset, self.files, self.config, self.rng, now_ms=self.clock()
            )
        ]
        self.crash_point("truncate-fully.segment-created")
        self.epochs.clear()
        self.producer_state.truncate_fully_and_start_at(offset)
        self.log_start_offset = self.log_end_offset = self.high_watermark = offset
        self.recovery_point = offset
        fsync_directory(self.directory)

    # ---- timestamps --------------------------------------------------------------------------

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int, int] | None:
        """(offset, timestamp, leader epoch) of the first record at or after ``timestamp``
        (ListOffsets by timestamp, :mod:`rackwise.storage.timestamps`); None if none."""
        with self._io("searching by timestamp"):
            return timestamps.offset_for_timestamp(self.segments, self.log_start_offset, timestamp)

    def max_timestamp_offset(self) -> tuple[int, int, int] | None:
        """(offset, timestamp, leader epoch) of the record with the largest timestamp
        (ListOffsets MAX_TIMESTAMP); None for a log without timestamps."""
        with self._io("searching the largest timestamp"):
            return timestamps.max_timestamp_offset(self.segments)

    # ---- retention ---------------------------------------------------------------------------

    def delete_old_segments(self, now_ms: int) -> int:
        """Apply the log start offset, ``retention.bytes`` and ``retention.ms`` (the last two
        only with ``cleanup.policy`` delete) in Kafka's order, each after the previous one's
        deletions: the number of segments deleted (:mod:`rackwise.storage.retention`)."""
        with self._io("deleting old segments"):
            start_rule = retention.below_log_start(self.log_start_offset)
            deleted = self._delete_by(start_rule, "log start offset")
            if self.config.is_delete:
                size_rule = retention.over_retention_bytes(self.config, self.size_bytes())
                if size_rule is not None:
                    deleted += self._delete_by(size_rule, "retention.bytes")
                time_rule = retention.past_retention_ms(self.config, now_ms)
                if time_rule is not None:
                    deleted += self._delete_by(time_rule, "retention.ms")
            return deleted

    def _delete_by(self, rule: retention.Predicate, reason: str) -> int:
        """Kafka's deleteSegments: roll first if every segment goes (the log keeps one), move the
        log start offset to the first segment kept, then delete the files."""
        deletable = retention.deletable_segments(
            self.segments,
            rule,
            high_watermark=self.high_watermark,
            log_end_offset=self.log_end_offset,
        )
        if not deletable:
            return 0
        count = len(deletable)
        if count == len(self.segments):
            self.roll_to(self.log_end_offset)
            if deletable[-1].base_offset == self.active_segment.base_offset:
                deletable.pop()
        if deletable:
            self.advance_log_start_offset(self.segments[len(deletable)].base_offset)
            del self.segments[: len(deletable)]
            self.crash_point("retention.start-offset-moved")
            for segment in deletable:
                segment.delete()
                self.crash_point("retention.segment-deleted")
            LOG.info(
                "%s: deleted %d segment(s) by %s: %s",
                self.name,
                len(deletable),
                reason,
                ", ".join(s.log_path.name for s in deletable),
            )
        return count
