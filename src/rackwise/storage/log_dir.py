"""One log directory at startup and in its checkpoints (Kafka's LogManager.loadLogs for one
directory, and the offsets its checkpoint files hold).

Goals
    Open every partition directory of one ``log.dirs`` entry with the offsets its checkpoints
    recorded (``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint``,
    ``replication-offset-checkpoint``); finish the deletions a crash interrupted; list the
    directories set aside. Answer what each checkpoint file of a directory is to hold.

Constraints
    The checkpoints are read once per directory, not per partition; an unreadable one is
    treated as empty, as Kafka resets it. A partition directory that fails to open is left
    unopened and listed, and the others still open. The clean-shutdown marker is the
    manager's (:mod:`rackwise.storage.manager`): it is told whether there was one. Nothing
    here changes the manager's table: :class:`~rackwise.storage.manager.LogManager` applies
    what :func:`load_partitions` answers.

Algorithm
    Partition directories in name order: ``*-delete`` is removed (a deletion interrupted by a
    crash), ``*-stray`` listed and kept, a name that is not ``<topic>-<partition>`` (with
    Kafka's suffixes) skipped; every other one opened, a ``*-future`` one as a move's future
    log.

Worked example
    ``/d1`` holds ``t-0``, ``t-1.<hex>-future``, ``t-2.<hex>-delete`` and ``notes``, and its
    recovery point checkpoint says ``t 0 40``: ``t-2...-delete`` is removed, ``notes`` skipped,
    ``t-0`` opened with recovery point 40 as a current log, ``t-1`` opened from 0 as a future.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Protocol

from rackwise.common.errors import RackwiseError
from rackwise.common.types import TopicPartition
from rackwise.storage.checkpoints import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    CheckpointFormatError,
    read_offsets,
)
from rackwise.storage.dirs import DELETE_DIR_SUFFIX, STRAY_DIR_SUFFIX, parse_log_dir_name
from rackwise.storage.log import PartitionLog
from rackwise.storage.moves import FUTURE_DIR_SUFFIX

LOG: Final = logging.getLogger("rackwise.storage")
ALL_CHECKPOINTS: Final = (
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
)
_OFFSET_OF: Final[Mapping[str, Callable[[PartitionLog], int]]] = {
    RECOVERY_POINT_CHECKPOINT: lambda g: g.recovery_point,
    REPLICATION_OFFSET_CHECKPOINT: lambda g: g.high_watermark,
    LOG_START_OFFSET_CHECKPOINT: lambda g: g.log_start_offset,
}


class OpenLog(Protocol):
    """Opens the log in a partition directory found at startup."""

    def __call__(
        self,
        directory: Path,
        *,
        recovery_point: int,
        log_start_offset: int,
        had_clean_shutdown: bool,
        high_watermark: int | None,
    ) -> PartitionLog: ...


@dataclass
class LoadedDir:
    """What :func:`load_partitions` found in one log directory."""

    current: list[tuple[TopicPartition, PartitionLog]] = field(default_factory=list)
    futures: list[tuple[TopicPartition, PartitionLog]] = field(default_factory=list)
    stray_dirs: list[Path] = field(default_factory=list)
    failed_dirs: list[Path] = field(default_factory=list)
    """Partition directories that could not be opened (the error is logged)."""


def load_partitions(log_dir: Path, *, clean: bool, open_log: OpenLog) -> LoadedDir:
    """Open the partition directories of ``log_dir`` (module docstring); ``clean`` tells
    whether it had a clean-shutdown marker."""
    recovery_points = read_checkpoint(log_dir / RECOVERY_POINT_CHECKPOINT)
    start_offsets = read_checkpoint(log_dir / LOG_START_OFFSET_CHECKPOINT)
    high_watermarks = read_checkpoint(log_dir / REPLICATION_OFFSET_CHECKPOINT)
    entries = sorted((e for e in os.scandir(log_dir) if e.is_dir()), key=lambda e: e.name)
    if not clean and entries:
        LOG.info("Recovering %d logs from %s: no clean shutdown marker", len(entries), log_dir)
    loaded = LoadedDir()
    for entry in entries:
        path = Path(entry.path)
        if entry.name.endswith(DELETE_DIR_SUFFIX):
            LOG.info("Deleting %s, a log whose deletion did not finish", path)
            shutil.rmtree(path, ignore_errors=True)
            continue
        if entry.name.endswith(STRAY_DIR_SUFFIX):
            loaded.stray_dirs.append(path)
            continue
        try:
            tp = TopicPartition(*parse_log_dir_name(entry.name))
        except ValueError:
            LOG.warning("Skipping %s: not a topic-partition directory", path)
            continue
        try:
            log = open_log(
                path,
                recovery_point=recovery_points.get(tp, 0),
                log_start_offset=start_offsets.get(tp, 0),
                had_clean_shutdown=clean,
                high_watermark=high_watermarks.get(tp),
            )
        except (OSError, RackwiseError) as e:
            loaded.failed_dirs.append(path)
            LOG.error("Error while loading the log of %s in %s, left unopened: %s", tp, path, e)
            continue
        found = loaded.futures if entry.name.endswith(FUTURE_DIR_SUFFIX) else loaded.current
        found.append((tp, log))
    return loaded


def read_checkpoint(path: Path) -> dict[TopicPartition, int]:
    """An offset checkpoint file's entries; empty (and a warning) if it cannot be read."""
    try:
        return read_offsets(path)
    except (CheckpointFormatError, OSError) as e:
        LOG.warning("Error reading %s, treating it as empty: %s", path, e)
        return {}


def checkpoint_contents(
    logs: Mapping[TopicPartition, PartitionLog], names: Sequence[str]
) -> dict[str, dict[TopicPartition, int]]:
    """The entries of each checkpoint file ``names`` of one directory, whose logs are
    ``logs``."""
    return {name: {tp: _OFFSET_OF[name](g) for tp, g in logs.items()} for name in names}
