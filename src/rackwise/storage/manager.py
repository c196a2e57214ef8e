"""A broker's log directories and every partition log in them (Kafka's LogManager).

Goals
    Open every ``<topic>-<partition>`` directory of every ``log.dirs`` entry at startup
    (recovering those of a directory shut down uncleanly), create new replicas, delete removed
    ones, and keep each directory's checkpoints (``recovery-point-offset-checkpoint``,
    ``replication-offset-checkpoint``, ``log-start-offset-checkpoint``) and its clean-shutdown
    marker as Kafka does, so a Kafka broker could take the directories over.

Constraints
    10,000 partitions within 1024 file descriptors: every log shares one
    :class:`~rackwise.storage.files.FileCache` bounded by ``max_open_files``; a directory's
    checkpoints are read once at startup, not per partition. The clean-shutdown marker is
    deleted as soon as a directory is loaded (Kafka, KAFKA-10471), so a crash during startup
    counts as unclean next time, and written back only by :meth:`LogManager.shutdown`.
    Thread-safe: one lock guards the table of logs; each log has its own.

Algorithm
    Startup, per directory: note and delete the marker; read the three checkpoints (an
    unreadable one is treated as empty, as Kafka resets it); delete ``*-delete`` directories
    (a deletion interrupted by a crash); list ``*-future`` directories without opening them;
    open every other partition directory with its checkpointed recovery point, log start
    offset and high watermark. A new replica goes to ``preferred_dir`` if given, else to the
    directory with the largest share of its capacity free (``statvfs``), ties to the one with
    fewer partitions. Kafka picks the directory with the fewest partitions; free bytes serve
    JBOD better because partitions differ in size by orders of magnitude and a full disk
    takes every replica on it offline, whatever their count. Deletion renames the directory
    to Kafka's ``<topic>-<partition>.<32 hex>-delete`` (so a crash mid-delete is finished at
    the next startup), then removes it.

Worked example
    Directories /d1 (1 TB, 100 GB free, 10 partitions) and /d2 (1 TB, 600 GB free, 300 small
    partitions). Kafka would put a new replica on /d1 (fewer partitions) and fill it; rackwise
    puts it on /d2, 60 % free against 10 %.
"""

from __future__ import annotations

import logging
import os
import random
import shutil
import threading
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

from rackwise.common.errors import RackwiseError
from rackwise.common.types import TopicPartition
from rackwise.records import kafka_uuid
from rackwise.storage.checkpoints import (
    CLEAN_SHUTDOWN_MARKER,
    LOG_START_OFFSET_CHECKPOINT,
    NO_BROKER_EPOCH,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    CheckpointFormatError,
    fsync_directory,
    read_offsets,
    write_clean_shutdown_marker,
    write_offsets,
    write_partition_metadata,
)
from rackwise.storage.config import LogConfig
from rackwise.storage.errors import InconsistentTopicIdException, KafkaStorageException
from rackwise.storage.files import FileCache
from rackwise.storage.log import PartitionLog, parse_log_dir_name

LOG: Final = logging.getLogger("rackwise.storage")
DELETE_DIR_SUFFIX: Final = "-delete"
FUTURE_DIR_SUFFIX: Final = "-future"
STRAY_DIR_SUFFIX: Final = "-stray"
MAX_DIR_NAME_BYTES: Final = 255
DEFAULT_MAX_OPEN_FILES: Final = 512


def delete_dir_name(topic: str, partition: int) -> str:
    """Kafka's logDeleteDirName: ``<topic>-<partition>.<uuid hex>-delete``, the topic cut so
    the name fits 255 characters."""
    suffix = f"-{partition}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}"
    return topic[: MAX_DIR_NAME_BYTES - len(suffix)] + suffix


def free_share(directory: Path) -> float:
    """The share of the directory's file system that is free for unprivileged writers."""
    stats = os.statvfs(directory)
    return stats.f_bavail / stats.f_blocks if stats.f_blocks else 0.0


def choose_log_dir(candidates: Sequence[tuple[Path, float, int]]) -> Path:
    """The directory for a new replica among (directory, free share, partitions): the largest
    free share, then the fewest partitions, then the first listed."""
    best = max(range(len(candidates)), key=lambda i: (candidates[i][1], -candidates[i][2], -i))
    return candidates[best][0]


class LogManager:
    """Every partition log of a broker's ``log.dirs`` (module docstring)."""

    def __init__(
        self,
        log_dirs: Sequence[Path],
        *,
        clock: Callable[[], int],
        default_config: LogConfig,
        max_open_files: int = DEFAULT_MAX_OPEN_FILES,
        producer_id_expiration_ms: int = 86_400_000,
    ) -> None:
        if not log_dirs:
            raise ValueError("a LogManager needs at least one log directory")
        self.log_dirs = [Path(d) for d in log_dirs]
        self.clock = clock
        self.default_config = default_config
        self.files = FileCache(max_open_files)
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self.rng = random.Random()
        """Segment roll jitter for every log (Kafka's randomSegmentJitter)."""
        self.future_dirs: list[Path] = []
        """``*-future`` directories found at startup (replicas being moved), left alone."""
        self.had_clean_shutdown: dict[Path, bool] = {}
        self.failed_dirs: list[Path] = []
        """Partition directories that could not be opened at startup (the error is logged)."""
        self._logs: dict[TopicPartition, PartitionLog] = {}
        self._counts: dict[Path, int] = dict.fromkeys(self.log_dirs, 0)
        """Partitions per log directory."""
        self._lock = threading.RLock()

    # ---- startup -----------------------------------------------------------------------------

    def startup(self) -> None:
        """Load every log directory (module docstring)."""
        with self._lock:
            for log_dir in self.log_dirs:
                log_dir.mkdir(parents=True, exist_ok=True)
                self._load_dir(log_dir)

    def _load_dir(self, log_dir: Path) -> None:
        marker = log_dir / CLEAN_SHUTDOWN_MARKER
        clean = marker.exists()
        if clean:
            marker.unlink()
            fsync_directory(log_dir)
        self.had_clean_shutdown[log_dir] = clean
        recovery_points = _read_checkpoint(log_dir / RECOVERY_POINT_CHECKPOINT)
        start_offsets = _read_checkpoint(log_dir / LOG_START_OFFSET_CHECKPOINT)
        high_watermarks = _read_checkpoint(log_dir / REPLICATION_OFFSET_CHECKPOINT)
        entries = sorted((e for e in os.scandir(log_dir) if e.is_dir()), key=lambda e: e.name)
        if not clean and entries:
            LOG.info("Recovering %d logs from %s: no clean shutdown marker", len(entries), log_dir)
        for entry in entries:
            path = Path(entry.path)
            if entry.name.endswith(DELETE_DIR_SUFFIX):
                LOG.info("Deleting %s, a log whose deletion did not finish", path)
                shutil.rmtree(path, ignore_errors=True)
                continue
            if entry.name.endswith((FUTURE_DIR_SUFFIX, STRAY_DIR_SUFFIX)):
                self.future_dirs.append(path)
                continue
            try:
                tp = TopicPartition(*parse_log_dir_name(entry.name))
            except ValueError:
                LOG.warning("Skipping %s: not a topic-partition directory", path)
                continue
            try:
                log = PartitionLog.open(
                    path,
                    self.default_config,
                    topic_id=None,
                    recovery_point=recovery_points.get(tp, 0),
                    log_start_offset=start_offsets.get(tp, 0),
                    had_clean_shutdown=clean,
                    files=self.files,
                    clock=self.clock,
                    high_watermark=high_watermarks.get(tp),
                    producer_id_expiration_ms=self.producer_id_expiration_ms,
                    rng=self.rng,
                )
            except (OSError, RackwiseError) as e:
                self.failed_dirs.append(path)
                LOG.error("Error while loading the log of %s in %s, left unopened: %s", tp, path, e)
                continue
            self._add(tp, log)

    # ---- the table of logs -------------------------------------------------------------------

    def logs(self) -> list[PartitionLog]:
        with self._lock:
            return list(self._logs.values())

    def get(self, topic: str, partition: int) -> PartitionLog | None:
        with self._lock:
            return self._logs.get(TopicPartition(topic, partition))

    def get_or_create(
        self,
        topic: str,
        partition: int,
        *,
        topic_id: uuid.UUID | None,
        config: LogConfig,
        preferred_dir: Path | None = None,
    ) -> PartitionLog:
        """The partition's log, created in ``preferred_dir`` or the emptiest directory if this
        broker has none; InconsistentTopicIdException if it holds one of another topic id."""
        tp = TopicPartition(topic, partition)
        with self._lock:
            log = self._logs.get(tp)
            if log is None:
                log_dir = preferred_dir if preferred_dir is not None else self._next_log_dir()
                log = PartitionLog.open(
                    log_dir / f"{topic}-{partition}",
                    config,
                    topic_id=topic_id,
                    recovery_point=0,
                    log_start_offset=0,
                    had_clean_shutdown=True,
                    files=self.files,
                    clock=self.clock,
                    producer_id_expiration_ms=self.producer_id_expiration_ms,
                    rng=self.rng,
                )
                self._add(tp, log)
                return log
            if topic_id is not None and log.topic_id is not None and log.topic_id != topic_id:
                raise InconsistentTopicIdException(
                    f"Tried to assign topic ID {kafka_uuid(topic_id)} to log for topic partition "
                    f"{tp}, but log already contained topic ID {kafka_uuid(log.topic_id)}"
                )
            if topic_id is not None and log.topic_id is None:
                write_partition_metadata(log.directory, topic_id)
                log.topic_id = topic_id
            if log.config != config:
                log.update_config(config)
            return log

    def _next_log_dir(self) -> Path:
        for d in self.log_dirs:
            d.mkdir(parents=True, exist_ok=True)
        return choose_log_dir([(d, free_share(d), self._counts[d]) for d in self.log_dirs])

    def _add(self, tp: TopicPartition, log: PartitionLog) -> None:
        self._logs[tp] = log
        parent = log.directory.parent
        self._counts[parent] = self._counts.get(parent, 0) + 1

    def delete(self, topic: str, partition: int) -> None:
        """Close and remove the partition's log (module docstring); nothing if it has none."""
        tp = TopicPartition(topic, partition)
        with self._lock:
            log = self._logs.pop(tp, None)
            if log is None:
                return
            log.close()
            parent = log.directory.parent
            self._counts[parent] -= 1
            doomed = parent / delete_dir_name(topic, partition)
            os.replace(log.directory, doomed)
            fsync_directory(parent)
            self._checkpoint_dir(parent)
            shutil.rmtree(doomed, ignore_errors=True)
            LOG.info("Deleted log for partition %s in %s", tp, parent)

    # ---- periodic work -----------------------------------------------------------------------

    def checkpoint(self) -> None:
        """Write each directory's recovery points, high watermarks and log start offsets."""
        with self._lock:
            for log_dir in self.log_dirs:
                self._checkpoint_dir(log_dir)

    def checkpoint_high_watermarks(self) -> None:
        """Write each directory's ``replication-offset-checkpoint`` alone (Kafka writes it
        every ``replica.high.watermark.checkpoint.interval.ms``, the others less often)."""
        with self._lock:
            for log_dir in self.log_dirs:
                logs = self._logs_in(log_dir)
                write_offsets(
                    log_dir / REPLICATION_OFFSET_CHECKPOINT,
                    {tp: g.high_watermark for tp, g in logs.items()},
                )

    def _logs_in(self, log_dir: Path) -> dict[TopicPartition, PartitionLog]:
        return {tp: log for tp, log in self._logs.items() if log.directory.parent == log_dir}

    def _checkpoint_dir(self, log_dir: Path) -> None:
        logs = self._logs_in(log_dir)
        write_offsets(
            log_dir / RECOVERY_POINT_CHECKPOINT, {tp: g.recovery_point for tp, g in logs.items()}
        )
        write_offsets(
            log_dir / REPLICATION_OFFSET_CHECKPOINT,
            {tp: g.high_watermark for tp, g in logs.items()},
        )
        write_offsets(
            log_dir / LOG_START_OFFSET_CHECKPOINT,
            {tp: g.log_start_offset for tp, g in logs.items()},
        )

    def flush_dirty(self, now_ms: int) -> None:
        """Flush every log whose last flush is ``flush.ms`` or more ago."""
        for log in self.logs():
            if now_ms - log.last_flush_ms >= log.config.flush_ms:
                try:
                    log.flush()
                except KafkaStorageException as e:
                    LOG.error("Error flushing %s: %s", log.name, e)

    def run_retention(self, now_ms: int) -> int:
        """Delete old segments of every log whose ``cleanup.policy`` includes ``delete`` (a
        compacted-only log is the cleaner's): the number of segments deleted."""
        deleted = 0
        for log in self.logs():
            if log.config.is_delete:
                deleted += log.delete_old_segments(now_ms)
        return deleted

    def shutdown(self, broker_epoch: int = NO_BROKER_EPOCH) -> None:
        """Flush and close every log, checkpoint, and mark each directory cleanly shut down
        (Kafka 4's marker, with ``broker_epoch``)."""
        with self._lock:
            failed: set[Path] = set()
            for log in self._logs.values():
                try:
                    log.flush()
                    log.close()
                except KafkaStorageException as e:
                    LOG.error("Error closing %s: %s", log.name, e)
                    failed.add(log.directory.parent)
            for log_dir in self.log_dirs:
                self._checkpoint_dir(log_dir)
                if log_dir not in failed:
                    write_clean_shutdown_marker(log_dir, broker_epoch)
            self.files.close_all()


def _read_checkpoint(path: Path) -> dict[TopicPartition, int]:
    try:
        return read_offsets(path)
    except (CheckpointFormatError, OSError) as e:
        LOG.warning("Error reading %s, treating it as empty: %s", path, e)
        return {}
