"""Kafka's small state files, read and written exactly as Kafka does.

Goals
    The files an operator (and Kafka's tools) find in a log directory: per directory
    ``recovery-point-offset-checkpoint``, ``replication-offset-checkpoint`` and
    ``log-start-offset-checkpoint``; per partition ``leader-epoch-checkpoint`` and
    ``partition.metadata``; and the clean-shutdown marker ``.kafka_cleanshutdown``.

Constraints
    A checkpoint is replaced atomically: a crash leaves the old file or the new one, never a
    mix (Kafka's ``CheckpointFile.write``: a ``.tmp`` sibling, fsync, rename, fsync of the
    directory). A file that does not parse raises :class:`CheckpointFormatError` naming the
    file and the line, so the caller decides (Kafka resets a directory's recovery points to 0
    when its checkpoint is unreadable).

Algorithm
    Kafka's checkpoint text: a version line (``0``), a count line, then one entry per line
    with fields separated by spaces: ``<topic> <partition> <offset>`` for the per-directory
    files, ``<epoch> <start offset>`` for the leader epochs. ``partition.metadata`` is
    ``version: 0`` and ``topic_id: <base64 uuid>`` on two lines without a final newline.
    The clean-shutdown marker holds Kafka 4's JSON ``{"version":0,"brokerEpoch":<epoch>}``.

Worked example
    Two partitions of ``orders`` flushed to offsets 120 and 7::

        0
        2
        orders 0 120
        orders 1 7
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Final, TypeVar

from rackwise.common.errors import RackwiseError
from rackwise.common.types import TopicPartition
from rackwise.records import kafka_uuid, parse_kafka_uuid
from rackwise.storage.errors import InconsistentTopicIdException

CHECKPOINT_VERSION: Final = 0
RECOVERY_POINT_CHECKPOINT: Final = "recovery-point-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT: Final = "replication-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT: Final = "log-start-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT: Final = "leader-epoch-checkpoint"
PARTITION_METADATA: Final = "partition.metadata"
CLEAN_SHUTDOWN_MARKER: Final = ".kafka_cleanshutdown"
NO_BROKER_EPOCH: Final = -1
"""The broker epoch Kafka writes in the marker when it has none (LogManager.shutdown's -1)."""
TMP_SUFFIX: Final = ".tmp"

T = TypeVar("T")


class CheckpointFormatError(RackwiseError, ValueError):
    """A checkpoint file that does not parse (Kafka's "Malformed line in checkpoint file")."""


def fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data``: ``.tmp`` sibling, fsync, rename, directory fsync."""
    tmp = path.with_name(path.name + TMP_SUFFIX)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_directory(path.parent)


def _write_entries(path: Path, lines: list[str]) -> None:
    text = f"{CHECKPOINT_VERSION}\n{len(lines)}\n" + "".join(line + "\n" for line in lines)
    atomic_write(path, text.encode("utf-8"))


def _read_entries(path: Path, parse: Callable[[list[str]], T | None]) -> list[T]:
    """Kafka's CheckpointReadBuffer: an empty file or a missing count line is no entries."""
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines:
        return []
    version = _int(path, lines[0])
    if version != CHECKPOINT_VERSION:
        raise CheckpointFormatError(
            f"Unrecognised version:{version}, expected version: {CHECKPOINT_VERSION} in "
            f"checkpoint file at: {path}"
        )
    if len(lines) < 2:
        return []
    expected = _int(path, lines[1])
    entries = []
    for line in lines[2:]:
        entry = parse(line.split())
        if entry is None:
            raise CheckpointFormatError(f"Malformed line in checkpoint file [{path}]: {line}")
        entries.append(entry)
    if len(entries) != expected:
        raise CheckpointFormatError(
            f"Expected [{expected}] entries in checkpoint file [{path}], but found only "
            f"[{len(entries)}]"
        )
    return entries


def _int(path: Path, text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise CheckpointFormatError(f"Malformed line in checkpoint file [{path}]: {text}") from None


def write_offsets(path: Path, offsets: Mapping[TopicPartition, int]) -> None:
    """An offset checkpoint (``<topic> <partition> <offset>`` lines), sorted for stability."""
    _write_entries(path, [f"{tp.topic} {tp.partition} {offsets[tp]}" for tp in sorted(offsets)])


def read_offsets(path: Path) -> dict[TopicPartition, int]:
    """An offset checkpoint; an absent file is empty."""
    if not path.exists():
        return {}

    def parse(fields: list[str]) -> tuple[TopicPartition, int] | None:
        if len(fields) != 3:
            return None
        try:
            return TopicPartition(fields[0], int(fields[1])), int(fields[2])
        except ValueError:
            return None

    return dict(_read_entries(path, parse))


def write_epochs(path: Path, entries: Iterable[tuple[int, int]]) -> None:
    """A leader epoch checkpoint (``<epoch> <start offset>`` lines)."""
    _write_entries(path, [f"{epoch} {start}" for epoch, start in entries])


def read_epochs(path: Path) -> list[tuple[int, int]]:
    if not path.exists():
        return []

    def parse(fields: list[str]) -> tuple[int, int] | None:
        if len(fields) != 2:
            return None
        try:
            return int(fields[0]), int(fields[1])
        except ValueError:
            return None

    return _read_entries(path, parse)


def encode_partition_metadata(topic_id: uuid.UUID) -> bytes:
    return f"version: 0\ntopic_id: {kafka_uuid(topic_id)}".encode()


def write_partition_metadata(directory: Path, topic_id: uuid.UUID) -> None:
    atomic_write(directory / PARTITION_METADATA, encode_partition_metadata(topic_id))


def read_partition_metadata(directory: Path) -> uuid.UUID | None:
    """The topic id in ``partition.metadata``, None if the file is absent."""
    path = directory / PARTITION_METADATA
    if not path.exists():
        return None
    lines = path.read_text(encoding="utf-8").splitlines()
    version = _field(path, lines, 0, "version")
    if _int(path, version) < CHECKPOINT_VERSION:
        raise CheckpointFormatError(
            f"Unrecognized version of partition metadata file ({path}): {version}"
        )
    text = _field(path, lines, 1, "topic_id")
    try:
        topic_id = parse_kafka_uuid(text)
    except ValueError:
        raise CheckpointFormatError(f"Malformed line in checkpoint file [{path}]: {text}") from None
    if topic_id.int == 0:
        raise CheckpointFormatError(f"Invalid topic ID in partition metadata file ({path})")
    return topic_id


def _field(path: Path, lines: list[str], index: int, name: str) -> str:
    line = lines[index] if index < len(lines) else ""
    key, sep, value = line.partition(": ")
    if key != name or not sep or not value.strip():
        raise CheckpointFormatError(f"Malformed line in checkpoint file [{path}]: {line}")
    return value.strip()


def write_clean_shutdown_marker(directory: Path, broker_epoch: int = NO_BROKER_EPOCH) -> None:
    """Kafka 4's CleanShutdownFileHandler.write."""
    content = json.dumps({"version": 0, "brokerEpoch": broker_epoch}, separators=(",", ":"))
    atomic_write(directory / CLEAN_SHUTDOWN_MARKER, content.encode())


def read_clean_shutdown_marker(directory: Path) -> int | None:
    """The broker epoch in the marker; None if there is no readable marker."""
    try:
        content = json.loads((directory / CLEAN_SHUTDOWN_MARKER).read_text(encoding="utf-8"))
        return int(content["brokerEpoch"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def check_topic_id(directory: Path, topic_id: uuid.UUID | None) -> uuid.UUID | None:
    """The partition's topic id: ``partition.metadata`` is written if absent, and must match
    the one given (Kafka's InconsistentTopicIdException)."""
    stored = read_partition_metadata(directory)
    if topic_id is None:
        return stored
    if stored is None:
        write_partition_metadata(directory, topic_id)
    elif stored != topic_id:
        raise InconsistentTopicIdException(
            f"Tried to assign topic ID {kafka_uuid(topic_id)} to log for topic partition "
            f"{directory.name}, but log already contained topic ID {kafka_uuid(stored)}"
        )
    return topic_id
