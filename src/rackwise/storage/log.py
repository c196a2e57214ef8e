"""One partition's log on disk (Kafka's UnifiedLog, on the files of
:class:`~rackwise.storage.local_log.LocalLog`).

Goals
    Append a producer's batches as the leader (validated, offsets and leader epoch written in
    place) or a leader's batches as a follower; serve reads of whole batches; keep the leader
    epoch cache and the producer state in step; truncate, apply retention; and reopen after
    any crash to a prefix of what was appended, in Kafka's on-disk format.

Constraints
    Every call holds the log's lock and fails the log at an I/O error
    (:mod:`rackwise.storage.local_log`, which also rolls and flushes). The offsets move only
    here: the helpers each call uses answer what changed and the log applies it.

Algorithm
    Appends are checked and stamped by :mod:`rackwise.storage.appends` (the leader's:
    validation, the producer's sequence and epoch, offsets from the log end offset, the
    leader epoch and for ``LogAppendTime`` the time; the follower's: framing, magic and CRC,
    the first offset not below the log end offset); the log then rolls the active segment if
    the batch would overflow it (``segment.bytes``, ``segment.ms`` plus jitter, a full index,
    an offset beyond the index's int32), writes, moves the log end offset, updates the
    producer state and flushes if ``flush.messages`` is reached. Reads return whole batches
    from one segment, from the batch holding the offset up to ``max_offset`` (exclusive) and
    ``max_bytes`` (:mod:`rackwise.storage.log_segments`). Opening, recovery and retention's
    rules are in :mod:`rackwise.storage.recovery` and :mod:`rackwise.storage.retention`.

    Crash points (``CRASH_POINTS``, each tested): the roll's are in
    :mod:`rackwise.storage.local_log`. Truncating the whole log deletes the old segments
    (``truncate-fully.old-deleted``) before creating the new one
    (``truncate-fully.segment-created``), so a crash never leaves stale data readable.
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

import logging
import random
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Final

from rackwise.storage import appends, log_segments, retention, timestamps
from rackwise.storage.appends import LogAppendInfo
from rackwise.storage.checkpoints import LEADER_EPOCH_CHECKPOINT, check_topic_id, fsync_directory
from rackwise.storage.config import LogConfig
from rackwise.storage.epochs import LeaderEpochCache
from rackwise.storage.errors import OffsetOutOfRangeException
from rackwise.storage.files import FileCache
from rackwise.storage.local_log import LocalLog
from rackwise.storage.log_segments import FetchSlice, segment_jitter
from rackwise.storage.producer_state import ProducerEntry, ProducerStateManager
from rackwise.storage.recovery import load_segments

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


def _not_yet() -> None:
    """An epoch cache's ``write_later`` while its log loads: the change stays unwritten."""


class PartitionLog(LocalLog):
    """One partition's log (module docstring). Build it with :meth:`open`."""

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

    # ---- state -------------------------------------------------------------------------------

    @property
    def latest_epoch(self) -> int | None:
        return self.epochs.latest_epoch

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
            for header in log_segments.headers_from(self.segments, replay_from, offset):
                self.producer_state.update(header, now_ms=self.clock())
            self.producer_state.update_map_end_offset(offset)
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
