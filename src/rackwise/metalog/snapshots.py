"""Snapshot files: the image as records, written atomically and checksummed as a whole.

A snapshot file, named by its id (``<end offset>-<epoch>.checkpoint``, as Kafka names them)::

    header   40 bytes   magic "RWMSNAP0", format (int32, 0), end_offset (int64), epoch (int32),
                        last_append_time_ms (int64), record_count (int64)
    batches             record batches (:mod:`rackwise.records.batch`), offsets counting the
                        snapshot's records from 0, each with its own CRC32C
    trailer  20 bytes   magic "RWMSEND0", batches_length (int64), CRC32C (uint32) of the
                        header and the batches

It is written to ``<name>.part``, flushed with fsync, renamed into place and the directory
flushed, so a crash leaves either no snapshot or a whole one; a ``.part`` file found later is
the remains of a crash and is deleted (a write that fails deletes its own). A file whose
trailer is missing, whose CRC differs or whose header disagrees with its name is not a
snapshot, whatever else it holds.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Final

from crc32c import crc32c

from rackwise.common.errors import CorruptRecordException
from rackwise.metalog.api import SnapshotId, SnapshotReader
from rackwise.records.batch import check_batch, decode_records, encode_batch, encode_frames
from rackwise.records.codec import InternCache

SNAPSHOT_SUFFIX: Final = ".checkpoint"
PART_SUFFIX: Final = ".part"
CORRUPT_SUFFIX: Final = ".corrupt"
HEADER: Final = struct.Struct(">8siqiqq")
TRAILER: Final = struct.Struct(">8sqI")
HEADER_MAGIC: Final = b"RWMSNAP0"
TRAILER_MAGIC: Final = b"RWMSEND0"
FORMAT: Final = 0
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
    header = HEADER.pack(
        HEADER_MAGIC,
        FORMAT,
        snapshot_id.end_offset,
        snapshot_id.epoch,
        last_append_time_ms,
        len(records),
    )
    crc = crc32c(header)
    length = 0
    try:
        with open(temp, "wb") as f:
            f.write(header)
            for start in range(0, len(records), BATCH_RECORDS):
                frames = encode_frames(records[start : start + BATCH_RECORDS])
                batch = encode_batch(start, snapshot_id.epoch, last_append_time_ms, frames)
                crc = crc32c(batch, value=crc)
                length += len(batch)
                f.write(batch)
            f.write(TRAILER.pack(TRAILER_MAGIC, length, crc))
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
    """A snapshot file read whole and checked: header, trailer, CRC and name agree."""

    def __init__(self, path: Path, data: bytes | None = None) -> None:
        self.path = path
        raw = path.read_bytes() if data is None else data
        expected = parse_snapshot_name(path.name)
        minimum = HEADER.size + TRAILER.size
        if len(raw) < minimum:
            raise CorruptRecordException(f"{len(raw)} bytes, shorter than a header and trailer")
        magic, length, crc = TRAILER.unpack_from(raw, len(raw) - TRAILER.size)
        if magic != TRAILER_MAGIC:
            raise CorruptRecordException("no trailer: the file was not written to the end")
        if length != len(raw) - minimum:
            raise CorruptRecordException(f"the trailer counts {length} bytes of batches")
        body_end = len(raw) - TRAILER.size
        computed = crc32c(memoryview(raw)[:body_end])
        if computed != crc:
            raise CorruptRecordException(
                f"CRC32C mismatch: stored {crc:#010x}, computed {computed:#010x}"
            )
        magic, fmt, end_offset, epoch, append_ms, count = HEADER.unpack_from(raw, 0)
        if magic != HEADER_MAGIC or fmt != FORMAT:
            raise CorruptRecordException(f"not a snapshot of format {FORMAT}")
        self.snapshot_id = SnapshotId(end_offset, epoch)
        if expected is not None and expected != self.snapshot_id:
            raise CorruptRecordException(f"the header says snapshot {self.snapshot_id}")
        self.last_append_time_ms = append_ms
        self.record_count = count
        self.size = len(raw)
        self._raw = raw
        self._body_end = body_end

    def batches(self) -> Iterator[Sequence[Any]]:
        raw = self._raw
        pos = HEADER.size
        cache: InternCache = {}
        seen = 0
        while pos < self._body_end:
            header = check_batch(raw, pos, self._body_end)
            if header.base_offset != seen:
                raise CorruptRecordException(
                    f"{self.path.name}: batch at offset {header.base_offset}, expected {seen}"
                )
            yield decode_records(raw, pos, header, cache)
            seen += header.record_count
            pos += header.size
        if seen != self.record_count:
            raise CorruptRecordException(
                f"{self.path.name}: {seen} records, the header says {self.record_count}"
            )
