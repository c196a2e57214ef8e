"""The files of a segment: Kafka's names for them (LogFileUtils: the base offset in 20 digits
and ``.log``, ``.index`` or ``.timeindex``) and the walk of the batch headers of a segment file.

A walk reads the file in chunks (:data:`SCAN_CHUNK_BYTES` unless told) through the broker's
:class:`~rackwise.storage.files.FileCache` and parses the 61-byte header of each batch only,
with its position in the file; it stops before an incomplete tail.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Final

from rackwise.storage.batch import BATCH_HEADER_BYTES, BatchHeader, parse_header
from rackwise.storage.files import FileCache

LOG_SUFFIX: Final = ".log"
INDEX_SUFFIX: Final = ".index"
TIME_INDEX_SUFFIX: Final = ".timeindex"
SCAN_CHUNK_BYTES: Final = 64 * 1024


def iter_file_headers(
    files: FileCache, path: Path, start: int, end: int, chunk: int = SCAN_CHUNK_BYTES
) -> Iterator[BatchHeader]:
    """Headers of the whole batches of the file ``path`` between ``start`` and ``end``, read in
    chunks of ``chunk`` bytes, with their positions in the file; stops before an incomplete
    tail."""
    pos = start
    buf = b""
    buf_start = start
    while end - pos >= BATCH_HEADER_BYTES:
        rel = pos - buf_start
        if rel + BATCH_HEADER_BYTES > len(buf):
            buf = files.read(path, pos, min(chunk, end - pos))
            buf_start, rel = pos, 0
            if len(buf) < BATCH_HEADER_BYTES:
                return
        header = parse_header(buf, rel, file_position=pos)
        if pos + header.size > end:
            return
        yield header
        pos += header.size


def segment_file_name(base_offset: int, suffix: str = LOG_SUFFIX) -> str:
    """Kafka's name: the base offset in 20 digits and the suffix."""
    return f"{base_offset:020d}{suffix}"


def parse_base_offset(name: str, suffix: str = LOG_SUFFIX) -> int | None:
    """The base offset in a file name with ``suffix``, or None."""
    if not name.endswith(suffix):
        return None
    stem = name[: -len(suffix)]
    return int(stem) if len(stem) == 20 and stem.isdigit() else None
