"""Checking a segment's batches and rebuilding its indexes from them (the scan of Kafka's
LogSegment.recover).

Goals
    After an unclean shutdown, or when an index fails its sanity check, find how much of a
    segment file is whole, valid batches, and rebuild its offset and time indexes from them
    with the rules of an append (an entry every ``index.interval.bytes``, a time index entry
    for the largest timestamp so far).

Constraints
    Given the file, its size and the segment's two indexes, which it resets and fills; it
    does not cut the file or touch the segment: :meth:`~rackwise.storage.segment.LogSegment.recover`
    applies what it answers. The file is read in chunks of :data:`RECOVER_CHUNK_BYTES` (a
    larger batch alone), and every batch's CRC32C is computed: this is the one place that does.

Algorithm
    Walk the batches from position 0; stop at the first that fails (a length too short for a
    header, a magic other than 2, a CRC32C mismatch, a base offset below the one expected or a
    negative last offset delta, a last offset beyond the index's int32 of the segment's base),
    or at a torn tail (bytes left that hold no whole batch). Every valid batch is indexed and
    given to ``on_batch``.

Worked example
    A segment at base 100 of 2000 bytes: batches 100-109 (1000 bytes) and 110-119 (1000 bytes,
    its CRC32C wrong). The scan answers 1000 valid bytes, one valid batch, first bad offset
    110 and "the batch at position 1000 fails its CRC32C"; the segment then cuts the file at
    1000.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from rackwise.storage.batch import (
    BATCH_HEADER_BYTES,
    MAGIC_V2,
    NO_TIMESTAMP,
    BatchHeader,
    compute_crc,
    parse_header,
)
from rackwise.storage.files import FileCache
from rackwise.storage.index import INT32_MAX, OffsetIndex, TimeIndex

RECOVER_CHUNK_BYTES: Final = 8 * 1024 * 1024
NO_OFFSET: Final = -1


@dataclass(frozen=True, slots=True)
class Scan:
    """What :func:`scan_batches` found."""

    valid_bytes: int
    """Where the whole, valid batches end (the file is cut there)."""
    valid_batches: int
    max_timestamp: int
    """The largest batch max timestamp of the valid batches (NO_TIMESTAMP if none)."""
    offset_of_max_timestamp: int
    bytes_since_index_entry: int
    first_bad_offset: int
    """The base offset the bad batch claims (or the next expected offset), NO_OFFSET if none."""
    reason: str
    """Why the scan stopped before the end, "" if it did not."""


def scan_batches(
    files: FileCache,
    path: Path,
    size: int,
    base_offset: int,
    index_interval_bytes: int,
    offset_index: OffsetIndex,
    time_index: TimeIndex,
    on_batch: Callable[[BatchHeader], None],
) -> Scan:
    """Check the batches of the segment file ``path`` (``size`` bytes) and rebuild its
    indexes (module docstring)."""
    offset_index.reset()
    time_index.reset()
    max_timestamp, offset_of_max = NO_TIMESTAMP, base_offset
    valid = last_index_entry = count = 0
    expected = base_offset
    problem = ""
    bad_offset = NO_OFFSET
    for header, data in _iter_batches_with_data(files, path, size):
        problem = _batch_problem(header, data, expected, base_offset)
        if problem:
            bad_offset = header.base_offset
            break
        if header.max_timestamp > max_timestamp:
            max_timestamp, offset_of_max = header.max_timestamp, header.last_offset
        if valid - last_index_entry > index_interval_bytes:
            offset_index.append(header.last_offset, valid)
            time_index.maybe_append(max_timestamp, offset_of_max)
            last_index_entry = valid
        valid += header.size
        count += 1
        expected = header.next_offset
        on_batch(header)
    if not problem and valid < size:
        problem, bad_offset = f"a torn batch: {size - valid} bytes remain", expected
    return Scan(
        valid, count, max_timestamp, offset_of_max, valid - last_index_entry, bad_offset, problem
    )


def _iter_batches_with_data(
    files: FileCache, path: Path, size: int
) -> Iterator[tuple[BatchHeader, memoryview | None]]:
    """Each whole batch with its bytes, in chunks; a header whose length field is too
    short comes with None and ends the walk; a torn tail ends it silently."""
    pos = 0
    while size - pos >= BATCH_HEADER_BYTES:
        chunk = files.read(path, pos, min(RECOVER_CHUNK_BYTES, size - pos))
        rel = 0
        while len(chunk) - rel >= BATCH_HEADER_BYTES:
            header = parse_header(chunk, rel, file_position=pos + rel, check=False)
            if header.size < BATCH_HEADER_BYTES:
                yield header, None
                return
            if rel + header.size <= len(chunk):
                yield header, memoryview(chunk)[rel : rel + header.size]
                rel += header.size
            elif rel == 0 and pos + header.size <= size:
                chunk = files.read(path, pos, header.size)  # a large batch
                if len(chunk) < header.size:
                    return
            else:
                break
        if rel == 0:
            return  # nothing whole in what the file holds
        pos += rel


def _batch_problem(header: BatchHeader, data: memoryview | None, expected: int, base: int) -> str:
    """Why recovery must stop at this batch, or "" if it checks out."""
    if data is None:
        return f"the batch at position {header.position} has an invalid length {header.size}"
    if header.magic != MAGIC_V2:
        return f"the batch at position {header.position} has magic {header.magic}"
    if compute_crc(data) != header.crc:
        return f"the batch at position {header.position} fails its CRC32C"
    if header.base_offset < expected or header.last_offset_delta < 0:
        return (
            f"the batch at position {header.position} has offsets {header.base_offset}-"
            f"{header.last_offset}, below the expected {expected}"
        )
    if header.last_offset - base > INT32_MAX:
        return f"offset {header.last_offset} does not fit the index of segment {base}"
    return ""
