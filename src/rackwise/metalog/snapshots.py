"""Snapshot files in Kafka's ``.checkpoint`` format: the image as records in v2 batches, written
atomically, each batch checked by its CRC32C.

A snapshot file, named by its id (``<end offset>-<epoch>.checkpoint``) as Kafka's
``Snapshots.filenameFromSnapshotId``, is what Kafka's ``RecordsSnapshotWriter`` writes: record
batches (:mod:`rackwise.records.batch`) whose offsets count the snapshot's records from 0 and
whose partition leader epoch is the snapshot's epoch::

    offset 0            control batch: SnapshotHeaderRecord (version 0, the last contained
                        log timestamp)
    offsets 1 to n      batches of the image's records, BATCH_RECORDS a batch
    offset n + 1        control batch: SnapshotFooterRecord (version 0)

It is written to ``<name>.part`` (Kafka's suffix for a snapshot being written), flushed with
fsync, renamed into place and the directory flushed, so a crash leaves either no snapshot or a
whole one; a ``.part`` file found later is the remains of a crash and is deleted (a write that
fails deletes its own).

Kafka's format has no checksum of the whole file; what stands for it here: every batch's CRC32C
is checked when the file is opened, offsets must follow on from 0, the first batch must be the
header and the file must end exactly with the footer's batch. A file torn anywhere lacks its
footer or ends inside a batch, and damage inside a batch fails its CRC (a flipped bit in a
base offset breaks the offsets' sequence, one in a batch's epoch makes it differ from the
snapshot's). Such a file is not a snapshot, whatever else it holds: the log sets it aside as
``.corrupt``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Final

from rackwise.common.errors import CorruptRecordException
from rackwise.metalog.api import SnapshotId, SnapshotReader
from rackwise.records.batch import (
    BatchHeader,
    check_batch,
    decode_records,
    encode_batch,
    encode_control_batch,
    encode_frames,
)
from rackwise.records.codec import InternCache
from rackwise.records.control import SnapshotFooterRecord, SnapshotHeaderRecord

SNAPSHOT_SUFFIX: Final = ".checkpoint"
PART_SUFFIX: Final = ".part"
CORRUPT_SUFFIX: Final = ".corrupt"
BATCH_RECORDS: Final = 4096
"""Records per batch in a snapshot file."""


def parse_snapshot_name(name: str) -> SnapshotId | None:
    """The id in a snapshot file name, or None if the name is not one."""
    if not name.endswith(SNAPSHOT_SUFFIX):
        return None
    stem = name[: -len(SNAPSHOT_SUFFIX)]
    offset, dash, epoch = stem.partition("-")
    if not dash or len(offset) != 20 or len(epoch) != 10:
        return None
    if not (offset.isdigit() and epoch.isdigit()):
        return None
    return SnapshotId(int(offset), int(epoch))


def write_snapshot_file(
    directory: Path, snapshot_id: SnapshotId, records: Sequence[Any], last_append_time_ms: int
) -> Path:
    """Write the snapshot atomically; returns its path."""
    final = directory / snapshot_id.file_name()
    temp = final.with_name(final.name + PART_SUFFIX)
    epoch = snapshot_id.epoch
    try:
        with open(temp, "wb") as f:
            header = SnapshotHeaderRecord(last_append_time_ms)
            f.write(encode_control_batch(0, epoch, last_append_time_ms, [header]))
            offset = 1
            for start in range(0, len(records), BATCH_RECORDS):
                frames = encode_frames(records[start : start + BATCH_RECORDS])
                f.write(encode_batch(offset, epoch, last_append_time_ms, frames))
                offset += len(frames)
            footer = SnapshotFooterRecord()
            f.write(encode_control_batch(offset, epoch, last_append_time_ms, [footer]))
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, final)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    fsync_directory(directory)
    return final


def fsync_directory(directory: Path) -> None:
    """Flush a directory's entries (a rename or a new file) to stable storage."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class FileSnapshotReader(SnapshotReader):
    """A snapshot file read whole and checked: every batch's CRC, offsets following on from
    0, the header first and the footer last. ``path``'s name gives the id."""

    def __init__(self, path: Path, data: bytes | None = None) -> None:
        self.path = path
        raw = path.read_bytes() if data is None else data
        snapshot_id = parse_snapshot_name(path.name)
        if snapshot_id is None:
            raise CorruptRecordException(f"{path.name} is not a snapshot file name")
        self.snapshot_id = snapshot_id
        headers = _check_batches(raw, snapshot_id.epoch)
        first = decode_records(raw, 0, headers[0])
        if not headers[0].is_control or not isinstance(first[0], SnapshotHeaderRecord):
            raise CorruptRecordException("the file does not start with a snapshot header")
        last = headers[-1]
        if len(headers) < 2 or not last.is_control:
            raise CorruptRecordException("no snapshot footer: the file was not written to the end")
        if not isinstance(decode_records(raw, last.position, last)[-1], SnapshotFooterRecord):
            raise CorruptRecordException("no snapshot footer: the file was not written to the end")
        self.last_append_time_ms = first[0].last_contained_log_timestamp
        self._data_batches = [h for h in headers[1:-1] if not h.is_control]
        self.record_count = sum(h.record_count for h in self._data_batches)
        self.size = len(raw)
        self._raw = raw

    def batches(self) -> Iterator[Sequence[Any]]:
        cache: InternCache = {}
        for header in self._data_batches:
            yield decode_records(self._raw, header.position, header, cache)


def _check_batches(raw: bytes, epoch: int) -> list[BatchHeader]:
    """Every batch's header, checked, with offsets following on from 0 and the snapshot's
    epoch."""
    headers = []
    pos = 0
    expected = 0
    while pos < len(raw):
        header = check_batch(raw, pos)
        if header.base_offset != expected:
            raise CorruptRecordException(
                f"batch at offset {header.base_offset}, expected {expected}"
            )
        if header.epoch != epoch:
            raise CorruptRecordException(
                f"batch at offset {header.base_offset} has epoch {header.epoch}, the snapshot's "
                f"is {epoch}"
            )
        headers.append(header)
        expected = header.next_offset
        pos += header.size
    if not headers:
        raise CorruptRecordException("an empty file")
    return headers
