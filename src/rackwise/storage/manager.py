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
    Thread-safe: one lock guards the table of logs; each log has its own. Checkpoints are
    written outside that lock (a file's fsync can take seconds while the disk has gigabytes of
    dirty pages to write back, and the table is consulted on every request), one writer at a
    time, each with the offsets it read after the previous writer finished: a later write
    never carries older offsets than an earlier one. A rolled segment is fsynced on a thread
    of the manager's own (:meth:`PartitionLog.flush_outside_lock`); :meth:`LogManager.shutdown`
    waits for it before the final flush.

Algorithm
    Startup, per directory: note and delete the marker, then open the partition directories with
    their checkpointed offsets (:mod:`rackwise.storage.log_dir`: ``*-delete`` directories are
    removed, ``*-future`` ones opened as the future logs of moves). A new replica goes to
    ``preferred_dir`` if given, else to the directory with the largest share of its capacity
    free (``statvfs``) among those not cordoned (KIP-1066, :attr:`LogManager.cordoned`), ties
    to the one with fewer partitions. Kafka picks the directory with
    the fewest partitions; free bytes serve JBOD better because partitions differ in size by
    orders of magnitude and a full disk takes every replica on it offline, whatever their count.
    Deletion renames the directory to Kafka's ``<topic>-<partition>.<32 hex>-delete`` (so a
    crash mid-delete is finished at the next startup); the checkpoints without it are written,
    and the directory removed, on the manager's thread: a topic of a thousand partitions deleted
    costs the caller a rename each, not three checkpoint fsyncs and the unlinking of every
    segment. The checkpoints of deletions queued together are written once.

Worked example
    Directories /d1 (1 TB, 100 GB free, 10 partitions) and /d2 (1 TB, 600 GB free, 300 small
    partitions). Kafka would put a new replica on /d1 (fewer partitions) and fill it; rackwise
    puts it on /d2, 60 % free against 10 %.
"""

from __future__ import annotations

import functools
import logging
import random
import shutil
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Final

from rackwise.common.types import TopicPartition
from rackwise.records import kafka_uuid
from rackwise.storage.checkpoints import (
    CLEAN_SHUTDOWN_MARKER,
    NO_BROKER_EPOCH,
    REPLICATION_OFFSET_CHECKPOINT,
    fsync_directory,
    write_clean_shutdown_marker,
    write_offsets,
    write_partition_metadata,
)
from rackwise.storage.config import LogConfig
from rackwise.storage.dirs import (
    choose_log_dir,
    delete_dir_name,
    free_share,
    rename_within,
    stray_dir_name,
)
from rackwise.storage.errors import InconsistentTopicIdException, KafkaStorageException
from rackwise.storage.files import FileCache
from rackwise.storage.log import PartitionLog
from rackwise.storage.log_dir import ALL_CHECKPOINTS, checkpoint_contents, load_partitions
from rackwise.storage.moves import future_dir_name

LOG: Final = logging.getLogger("rackwise.storage")
DEFAULT_MAX_OPEN_FILES: Final = 512


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
        dir_ids: Mapping[Path, uuid.UUID] | None = None,
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
        self.dir_ids: dict[Path, uuid.UUID] = {Path(p): i for p, i in (dir_ids or {}).items()}
        """Each directory's id (its ``meta.properties``), where known."""
        self.offline_dirs: set[Path] = set()
        self.offline_partitions: set[TopicPartition] = set()
        """Partitions whose log was in a directory that failed (served again after a restart)."""
        self.futures: dict[TopicPartition, PartitionLog] = {}
        """Future logs: replicas being moved to another directory (:mod:`.moves`)."""
        self.preferred_dirs: dict[TopicPartition, Path] = {}
        self.cordoned: Callable[[], frozenset[Path]] = frozenset
        """The directories cordoned now (``cordoned.log.dirs``): no new replica goes there."""
        """Where AlterReplicaLogDirs asked a replica to be, even before it exists."""
        self.duplicates: dict[TopicPartition, list[PartitionLog]] = {}
        """Partitions found current in two directories (a crash between the renames of a
        move), opened but not served until :meth:`resolve_duplicate` keeps one."""
        self.stray_dirs: list[Path] = []
        """``*-stray`` directories: set aside, never deleted by the broker."""
        self.on_dir_failure: Callable[[Path], None] = lambda log_dir: None
        """Told (from any thread) when a directory has an I/O error: the owner then calls
        :meth:`fail_dir` from its own loop (Kafka's LogDirFailureChannel)."""
        self.had_clean_shutdown: dict[Path, bool] = {}
        self.failed_dirs: list[Path] = []
        """Partition directories that could not be opened at startup (the error is logged)."""
        self._logs: dict[TopicPartition, PartitionLog] = {}
        self._counts: dict[Path, int] = dict.fromkeys(self.log_dirs, 0)
        """Partitions per log directory."""
        self._lock = threading.RLock()
        self._checkpoint_lock = threading.Lock()
        """Held while checkpoints are written; taken before :attr:`_lock`, never after."""
        self._flusher = ThreadPoolExecutor(1, thread_name_prefix="log-flush")
        """The manager's own thread: the fsyncs after rolls (Kafka's ``flush-log`` task), the
        leader epoch checkpoints, and the end of each deletion."""
        self._deleted_from: set[Path] = set()
        """Directories whose checkpoints still list a deleted partition."""

    # ---- startup -----------------------------------------------------------------------------

    def startup(self) -> None:
        """Load every log directory (module docstring)."""
        with self._lock:
            found: dict[TopicPartition, list[PartitionLog]] = {}
            for log_dir in self.log_dirs:
                try:
                    log_dir.mkdir(parents=True, exist_ok=True)
                    if not log_dir.is_dir():
                        raise NotADirectoryError(f"{log_dir} is not a directory")
                    self._load_dir(log_dir, found)
                except OSError as e:
                    self.offline_dirs.add(log_dir)
                    LOG.error("Error while loading log dir %s, it is offline: %s", log_dir, e)
            self._settle(found)

    def _load_dir(self, log_dir: Path, found: dict[TopicPartition, list[PartitionLog]]) -> None:
        marker = log_dir / CLEAN_SHUTDOWN_MARKER
        clean = marker.exists()
        if clean:
            marker.unlink()
            fsync_directory(log_dir)
        self.had_clean_shutdown[log_dir] = clean
        loaded = load_partitions(log_dir, clean=clean, open_log=self._open)
        self.stray_dirs.extend(loaded.stray_dirs)
        self.failed_dirs.extend(loaded.failed_dirs)
        for tp, log in loaded.futures:
            self._adopt(log)
            self.futures[tp] = log
        for tp, log in loaded.current:
            found.setdefault(tp, []).append(log)

    def _open(
        self,
        directory: Path,
        *,
        config: LogConfig | None = None,
        topic_id: uuid.UUID | None = None,
        recovery_point: int = 0,
        log_start_offset: int = 0,
        had_clean_shutdown: bool = True,
        high_watermark: int | None = None,
    ) -> PartitionLog:
        """Open the log in ``directory`` (the default config unless given) with this
        manager's files, clock, producer id expiry and roll jitter."""
        return PartitionLog.open(
            directory,
            self.default_config if config is None else config,
            topic_id=topic_id,
            recovery_point=recovery_point,
            log_start_offset=log_start_offset,
            had_clean_shutdown=had_clean_shutdown,
            files=self.files,
            clock=self.clock,
            high_watermark=high_watermark,
            producer_id_expiration_ms=self.producer_id_expiration_ms,
            rng=self.rng,
        )

    def _settle(self, found: dict[TopicPartition, list[PartitionLog]]) -> None:
        """KIP-113's rules at startup: a current log is served; two current logs of one
        partition (a crash between the two renames of a move) wait for the metadata to say
        which to keep; a future log beside its current one resumes its move; a future log
        alone is promoted, unless a directory is offline (its current log may be there): then
        the partition is offline and the future log is left alone."""
        for tp, logs in found.items():
            if len(logs) == 1:
                self._add(tp, logs[0])
            else:
                self.duplicates[tp] = logs
                for log in logs:
                    self._adopt(log)
        for tp, future in list(self.futures.items()):
            if tp in self._logs or tp in self.duplicates:
                continue
            del self.futures[tp]
            if self.offline_dirs:
                future.close()
                self.offline_partitions.add(tp)
                LOG.warning(
                    "%s: only its future log %s is left and a log dir is offline: the "
                    "partition is offline, the future log left alone",
                    tp,
                    future.directory,
                )
                continue
            LOG.info("%s: promoting future log %s, its current log is gone", tp, future.directory)
            self._add(tp, self._rename_and_reopen(future, future.directory.parent / str(tp)))

    def _rename_and_reopen(self, log: PartitionLog, target: Path) -> PartitionLog:
        """Flush and close ``log``, rename its directory to ``target``, open it there (clean:
        everything was just flushed)."""
        log.flush()
        high_watermark, start = log.high_watermark, log.log_start_offset
        log.close()
        rename_within(log.directory, target.name)
        return self._open(
            target,
            config=log.config,
            topic_id=log.topic_id,
            recovery_point=log.log_end_offset,
            log_start_offset=start,
            high_watermark=high_watermark,
        )

    # ---- failed directories ------------------------------------------------------------------

    def _log_failed(self, log_dir: Path) -> None:
        self.on_dir_failure(log_dir)

    def _adopt(self, log: PartitionLog) -> None:
        """A log of this manager's: its I/O errors reach :attr:`on_dir_failure`; the flushes
        after its rolls and the writes of its leader epoch checkpoint run on
        :attr:`_flusher`."""
        log.on_failure = self._log_failed
        log.flush_later = self._flush_later
        log.epochs.write_later = log.write_epochs_later
        if log.epochs.unwritten:  # what its loading changed
            log.write_epochs_later()

    def _flush_later(self, job: Callable[[], None]) -> None:
        try:
            self._flusher.submit(_logged, job)
        except RuntimeError:  # shut down: no thread left to wait for
            job()

    def is_online(self, log_dir: Path) -> bool:
        return log_dir in self._counts and log_dir not in self.offline_dirs

    def fail_dir(self, log_dir: Path, reason: object) -> list[TopicPartition]:
        """Take ``log_dir`` offline until restart (KIP-112): close every log in it, current
        and future (a move from or to it stops), writing nothing more to it; the partitions
        whose current log was there."""
        with self._lock:
            if log_dir in self.offline_dirs or log_dir not in self._counts:
                return []
            self.offline_dirs.add(log_dir)
            lost = [tp for tp, log in self._logs.items() if log.directory.parent == log_dir]
            for tp in lost:
                self._logs.pop(tp).close_handlers()
                self.offline_partitions.add(tp)
            self._counts[log_dir] = 0
            for tp, future in list(self.futures.items()):
                current = self._logs.get(tp)
                if future.directory.parent == log_dir or current is None:
                    self.futures.pop(tp).close_handlers()
            LOG.error(
                "Stopped serving replicas in dir %s (%d partitions offline): %s",
                log_dir,
                len(lost),
                reason,
            )
            return lost

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
        """The partition's log, created in ``preferred_dir``, else where AlterReplicaLogDirs
        asked for it, else the directory with the most free space, if this broker has none;
        InconsistentTopicIdException if it holds one of another topic id,
        KAFKA_STORAGE_ERROR if the partition was in a directory that failed (or is asked
        for an offline one): it is not created again elsewhere."""
        tp = TopicPartition(topic, partition)
        with self._lock:
            log = self._logs.get(tp)
            if log is None and tp in self.offline_partitions:
                raise KafkaStorageException(f"The log of {tp} is in an offline log dir")
            if log is None:
                log_dir = preferred_dir or self.preferred_dirs.get(tp) or self._next_log_dir()
                if not self.is_online(log_dir):
                    raise KafkaStorageException(f"Cannot create the log of {tp} in {log_dir}")
                log = self._open(log_dir / f"{topic}-{partition}", config=config, topic_id=topic_id)
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
        online = [d for d in self.log_dirs if d not in self.offline_dirs]
        if not online:
            raise KafkaStorageException("No log directory is online")
        cordoned = self.cordoned()
        online = [d for d in online if d not in cordoned]
        if not online:
            raise KafkaStorageException("Every online log directory is cordoned")
        return choose_log_dir([(d, free_share(d), self._counts[d]) for d in online])

    def dir_of(self, directory_id: uuid.UUID) -> Path | None:
        for path, known in self.dir_ids.items():
            if known == directory_id:
                return path
        return None

    def _add(self, tp: TopicPartition, log: PartitionLog) -> None:
        self._logs[tp] = log
        self._adopt(log)
        parent = log.directory.parent
        self._counts[parent] = self._counts.get(parent, 0) + 1

    # ---- moves between directories (KIP-113; the copying is in .moves) ----------------------

    def future(self, topic: str, partition: int) -> PartitionLog | None:
        with self._lock:
            return self.futures.get(TopicPartition(topic, partition))

    def create_future(self, topic: str, partition: int, log_dir: Path) -> PartitionLog | None:
        """The future log of the partition in ``log_dir`` (an existing one there is kept, one
        elsewhere removed); None if the current log is already there."""
        tp = TopicPartition(topic, partition)
        with self._lock:
            current = self._logs.get(tp)
            if current is None:
                raise KafkaStorageException(f"No current log of {tp} to move")
            existing = self.futures.get(tp)
            if existing is not None and existing.directory.parent == log_dir:
                return existing
            if existing is not None:
                self.remove_future(topic, partition)
            if current.directory.parent == log_dir:
                return None
            future = self._open(
                log_dir / future_dir_name(topic, partition),
                config=current.config,
                topic_id=current.topic_id,
            )
            self._adopt(future)
            future.truncate_fully_and_start_at(current.log_start_offset)
            self.futures[tp] = future
            LOG.info("%s: moving from %s to %s", tp, current.directory.parent, log_dir)
            return future

    def remove_future(self, topic: str, partition: int) -> None:
        """Cancel a move: close and delete the future log."""
        tp = TopicPartition(topic, partition)
        with self._lock:
            future = self.futures.pop(tp, None)
            if future is None:
                return
            future.close()
            self._delete_dir(future.directory, topic, partition)
            LOG.info("%s: move to %s cancelled", tp, future.directory.parent)

    def replace_current_with_future(self, topic: str, partition: int) -> tuple[PartitionLog, Path]:
        """The swap of a move whose future log has caught up, appends held by the caller: the
        future directory becomes ``<topic>-<partition>``, the old one is renamed
        ``...-delete`` (the caller deletes it after ``file.delete.delay.ms``). The new current
        log, and the directory to delete."""
        tp = TopicPartition(topic, partition)
        with self._lock:
            current, future = self._logs[tp], self.futures.pop(tp)
            source = current.directory.parent
            future.update_high_watermark(current.high_watermark)
            future.flush()
            moved = self._rename_and_reopen(future, future.directory.parent / str(tp))
            moved.update_high_watermark(current.high_watermark)
            moved.crash_point = current.crash_point
            current.crash_point("move.future-renamed")
            current.close()
            doomed = rename_within(current.directory, delete_dir_name(topic, partition))
            moved.crash_point("move.current-renamed")
            self._counts[source] -= 1
            self._add(tp, moved)
        self._write_checkpoints(ALL_CHECKPOINTS, [source, moved.directory.parent])
        LOG.info("%s: moved from %s to %s", tp, source, moved.directory.parent)
        return moved, doomed

    def resolve_duplicate(self, topic: str, partition: int, keep: Path | None) -> None:
        """Keep the current log in directory ``keep`` (the one the metadata assigns; None: the
        longest) and set the others aside as ``...-stray``, never deleted."""
        tp = TopicPartition(topic, partition)
        with self._lock:
            logs = self.duplicates.pop(tp, None)
            if not logs:
                return
            chosen = next((g for g in logs if g.directory.parent == keep), None)
            if chosen is None:
                chosen = max(logs, key=lambda g: g.log_end_offset)
            for log in logs:
                if log is chosen:
                    continue
                log.close()
                aside = rename_within(log.directory, stray_dir_name(topic, partition))
                self.stray_dirs.append(aside)
                LOG.warning(
                    "%s: current logs in %s and %s after a move stopped between its renames: "
                    "kept the one in %s (the metadata's), set %s aside",
                    tp,
                    chosen.directory.parent,
                    log.directory.parent,
                    chosen.directory.parent,
                    aside,
                )
            self._add(tp, chosen)

    def delete_later(self, doomed: Path) -> None:
        """Delete a ``...-delete`` directory left by :meth:`replace_current_with_future`."""
        shutil.rmtree(doomed, ignore_errors=True)
        LOG.info("Deleted %s", doomed)

    def _delete_dir(self, directory: Path, topic: str, partition: int) -> None:
        doomed = rename_within(directory, delete_dir_name(topic, partition))
        shutil.rmtree(doomed, ignore_errors=True)

    def delete(self, topic: str, partition: int) -> None:
        """Close and remove the partition's log (module docstring); nothing if it has none."""
        tp = TopicPartition(topic, partition)
        with self._lock:
            self.remove_future(topic, partition)
            self.preferred_dirs.pop(tp, None)
            self.offline_partitions.discard(tp)
            log = self._logs.pop(tp, None)
            if log is None:
                return
            log.close_handlers()
            parent = log.directory.parent
            self._counts[parent] -= 1
            doomed = rename_within(log.directory, delete_dir_name(topic, partition))
            self._deleted_from.add(parent)
        self._flush_later(functools.partial(self._finish_delete, tp, doomed))

    def _finish_delete(self, tp: TopicPartition, doomed: Path) -> None:
        """The rest of :meth:`delete`, on :attr:`_flusher`: the checkpoints of every directory
        with a deletion since the last such write, then the renamed directory's removal."""
        with self._lock:
            dirs = sorted(d for d in self._deleted_from if d not in self.offline_dirs)
            self._deleted_from = set()
        if dirs:
            self._write_checkpoints(ALL_CHECKPOINTS, dirs)
        shutil.rmtree(doomed, ignore_errors=True)
        LOG.info("Deleted log for partition %s in %s", tp, doomed.parent)

    # ---- periodic work -----------------------------------------------------------------------

    def checkpoint(self) -> None:
        """Write each online directory's recovery points, high watermarks and log start
        offsets (from any thread)."""
        self._write_checkpoints(ALL_CHECKPOINTS)

    def checkpoint_high_watermarks(self) -> None:
        """Write each online directory's ``replication-offset-checkpoint`` alone (Kafka writes
        it every ``replica.high.watermark.checkpoint.interval.ms``, the others less often)."""
        self._write_checkpoints((REPLICATION_OFFSET_CHECKPOINT,))

    def _online_dirs(self) -> list[Path]:
        return [d for d in self.log_dirs if d not in self.offline_dirs]

    def _write_checkpoints(self, names: Sequence[str], dirs: Sequence[Path] | None = None) -> None:
        """Write the checkpoint files ``names`` of ``dirs`` (every online directory when None),
        current and future logs alike, as Kafka's checkpoints include a move's future log. A
        directory whose write fails is reported to :attr:`on_dir_failure`."""
        with self._checkpoint_lock:
            with self._lock:
                wanted = self._online_dirs() if dirs is None else dirs
                contents = {d: self._checkpoint_contents(d, names) for d in wanted}
            for log_dir, files in contents.items():
                try:
                    _write_files(log_dir, files)
                except OSError as e:
                    LOG.error("Error writing the checkpoints of %s: %s", log_dir, e)
                    self.on_dir_failure(log_dir)

    def _checkpoint_contents(
        self, log_dir: Path, names: Sequence[str]
    ) -> dict[str, dict[TopicPartition, int]]:
        logs = {tp: log for tp, log in self._logs.items() if log.directory.parent == log_dir}
        logs.update((tp, g) for tp, g in self.futures.items() if g.directory.parent == log_dir)
        return checkpoint_contents(logs, names)

    def flush_dirty(self, now_ms: int) -> None:
        """Flush every log whose last flush is ``flush.ms`` or more ago, the fsyncs outside
        its lock (a background thread's work: :meth:`PartitionLog.flush_unlocked`)."""
        for log in self.logs():
            if now_ms - log.last_flush_ms >= log.config.flush_ms:
                log.flush_unlocked()

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
        self._flusher.shutdown(wait=True)
        with self._checkpoint_lock, self._lock:
            failed: set[Path] = set(self.offline_dirs)
            aside = [*self.futures.values(), *(g for gs in self.duplicates.values() for g in gs)]
            for log in [*self._logs.values(), *aside]:
                try:
                    log.flush()
                    log.close()
                except KafkaStorageException as e:
                    LOG.error("Error closing %s: %s", log.name, e)
                    failed.add(log.directory.parent)
            for log_dir in self.log_dirs:
                if log_dir in failed:
                    continue
                try:
                    _write_files(log_dir, self._checkpoint_contents(log_dir, ALL_CHECKPOINTS))
                    write_clean_shutdown_marker(log_dir, broker_epoch)
                except OSError as e:
                    LOG.error("Error writing the checkpoints of %s at shutdown: %s", log_dir, e)
            self.files.close_all()


def _logged(job: Callable[[], None]) -> None:
    try:
        job()
    except Exception:
        LOG.exception("a job on the log manager's thread failed")


def _write_files(log_dir: Path, files: Mapping[str, Mapping[TopicPartition, int]]) -> None:
    for name, offsets in files.items():
        write_offsets(log_dir / name, offsets)
