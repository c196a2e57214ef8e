"""The partition directories of a log directory: Kafka's names for them (``<topic>-<partition>``
and the ``.<32 hex>-delete`` and ``-stray`` forms a broker renames one to; the ``-future`` form
is :mod:`rackwise.storage.moves`'), their renames (the log directory fsynced after each, so
the new name survives a crash), and the choice of log directory for a new replica.

A new replica goes to the directory with the largest share of its capacity free (``statvfs``),
ties to the one with fewer partitions, then to the first listed (the reasons are in
:mod:`rackwise.storage.manager`).
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from rackwise.storage.checkpoints import fsync_directory

DELETE_DIR_SUFFIX: Final = "-delete"
STRAY_DIR_SUFFIX: Final = "-stray"
MAX_DIR_NAME_BYTES: Final = 255
_SUFFIXED_DIR: Final = re.compile(r"^(?P<base>.+)\.[0-9a-f]{32}-(?:future|delete|stray)$")


def parse_log_dir_name(name: str) -> tuple[str, int]:
    """(topic, partition) of a ``<topic>-<partition>`` directory name, or of one with Kafka's
    ``.<32 hex>-future``, ``-delete`` or ``-stray`` suffix (Kafka's parseTopicPartitionName)."""
    suffixed = _SUFFIXED_DIR.match(name)
    if suffixed is not None:
        name = suffixed.group("base")
    topic, sep, partition = name.rpartition("-")
    if not sep or not topic or not partition.isdigit():
        raise ValueError(f"{name!r} is not in the form of topic-partition")
    return topic, int(partition)


def delete_dir_name(topic: str, partition: int) -> str:
    """Kafka's logDeleteDirName: ``<topic>-<partition>.<uuid hex>-delete``, the topic cut so
    the name fits 255 characters."""
    suffix = f"-{partition}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}"
    return topic[: MAX_DIR_NAME_BYTES - len(suffix)] + suffix


def stray_dir_name(topic: str, partition: int) -> str:
    """Kafka's logStrayDirName: ``<topic>-<partition>.<uuid hex>-stray``."""
    suffix = f"-{partition}.{uuid.uuid4().hex}{STRAY_DIR_SUFFIX}"
    return topic[: MAX_DIR_NAME_BYTES - len(suffix)] + suffix


def rename_within(directory: Path, name: str) -> Path:
    """Rename a partition directory to ``name`` in the same log directory, durably: its new
    path."""
    target = directory.parent / name
    os.replace(directory, target)
    fsync_directory(directory.parent)
    return target


def free_share(directory: Path) -> float:
    """The share of the directory's file system that is free for unprivileged writers."""
    stats = os.statvfs(directory)
    return stats.f_bavail / stats.f_blocks if stats.f_blocks else 0.0


def choose_log_dir(candidates: Sequence[tuple[Path, float, int]]) -> Path:
    """The directory for a new replica among (directory, free share, partitions): the largest
    free share, then the fewest partitions, then the first listed."""
    best = max(range(len(candidates)), key=lambda i: (candidates[i][1], -candidates[i][2], -i))
    return candidates[best][0]
