"""A segment's sparse offset index (``.index``) and time index (``.timeindex``), in Kafka's
file formats.

Goals
    Find the file position of an offset, and the offset of a timestamp, without reading the
    segment: Kafka's ``OffsetIndex`` and ``TimeIndex`` with their lookup, append and
    truncation rules, in files ``kafka-dump-log`` reads.

Constraints
    A file-descriptor budget (:class:`~rackwise.storage.files.FileCache`) and 10,000
    partitions: an index is read from its file only when first needed, and its entries are
    written to the file when the segment is flushed, rolled or closed, not on every append.
    Kafka preallocates index files to ``segment.index.bytes`` and memory-maps them, then trims
    them to their entries when the segment rolls or closes; rackwise does not preallocate or
    memory-map, so its index files always have that trimmed shape. After a crash the entries
    not yet written are lost with the rest of the unflushed tail, which recovery rebuilds from
    the segment as Kafka does. "Full" is computed from ``segment.index.bytes`` as Kafka's
    ``maxEntries`` is (the time index keeps its last slot for the entry written at roll).

Algorithm
    ``.index``: 8-byte entries, relative offset int32 and file position int32, big-endian. An
    entry (o, p) is written after an append that starts at position p and ends at offset o,
    once more than ``index.interval.bytes`` were appended since the last entry (Kafka's
    ``LogSegment.append``); so a lookup takes the largest entry with offset <= target and scans
    the segment forward from its position. ``.timeindex``: 12-byte entries, timestamp int64
    and relative offset int32 (the last offset of the batch holding the segment's largest
    timestamp so far); an entry is added only when its timestamp exceeds the last entry's.
    Both are searched by bisection.

Worked example
    Segment 100, ``index.interval.bytes`` 4096, appends of one 1000-byte batch of 10 offsets
    each. After five appends 5000 bytes were written without an entry (4000 > 4096 was false
    before the fifth); the sixth (offsets 150-159 at position 5000) writes the entry
    (159, 5000), bytes ``00 00 00 3b 00 00 13 88``. A lookup of 155 finds no entry <= 155 and
    scans from position 0; a lookup of 170 finds (159, 5000) and scans from there.
"""

from __future__ import annotations

import bisect
import struct
from array import array
from pathlib import Path
from typing import Final

from rackwise.storage.errors import CorruptIndexException
from rackwise.storage.files import FileCache

NO_TIMESTAMP: Final = -1
OFFSET_ENTRY_BYTES: Final = 8
TIME_ENTRY_BYTES: Final = 12
INT32_MAX: Final = 2**31 - 1
_OFFSET_ENTRY: Final = struct.Struct(">ii")
_TIME_ENTRY: Final = struct.Struct(">qi")


class _Index:
    """What both indexes share: a key array, a value array, the file, and how many entries
    the file already holds."""

    entry_bytes: int = OFFSET_ENTRY_BYTES

    def __init__(self, path: Path, base_offset: int, max_index_bytes: int, files: FileCache):
        self.path = path
        self.base_offset = base_offset
        self.max_entries = max_index_bytes // self.entry_bytes
        self._files = files
        self._keys: array[int] = array("q")
        self._values: array[int] = array("q")
        self._loaded = False
        self._persisted = 0
        """Entries the file holds that match memory; the file is rewritten from there."""
        self._file_dirty = False

    # ---- loading ---------------------------------------------------------------------------

    def _ensure_loaded(self) -> None:
        if self._loaded:
            return
        try:
            size = self._files.size(self.path)
        except FileNotFoundError:
            size = 0
        if size % self.entry_bytes:
            raise CorruptIndexException(
                f"Index file {self.path} is corrupt, found {size} bytes which is neither "
                f"positive nor a multiple of {self.entry_bytes}"
            )
        data = self._files.read(self.path, 0, size) if size else b""
        self._decode(data)
        self._loaded = True
        self._persisted = len(self._keys)
        self._sanity_check()

    def _decode(self, data: bytes) -> None:
        raise NotImplementedError

    def _sanity_check(self) -> None:
        raise NotImplementedError

    def load(self) -> None:
        """Read the file now (CorruptIndexException if it fails the sanity check)."""
        self._ensure_loaded()

    @property
    def entries(self) -> int:
        self._ensure_loaded()
        return len(self._keys)

    def is_full(self) -> bool:
        return self.entries >= self.max_entries

    def relative(self, offset: int) -> int:
        relative = offset - self.base_offset
        if not 0 <= relative <= INT32_MAX:
            raise CorruptIndexException(f"Integer overflow for offset: {offset} ({self.path.name})")
        return relative

    def can_append_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= INT32_MAX

    # ---- changes ---------------------------------------------------------------------------

    def _truncate_to_entries(self, entries: int) -> None:
        del self._keys[entries:]
        del self._values[entries:]
        if entries < self._persisted:
            self._persisted = entries
            self._file_dirty = True

    def reset(self) -> None:
        """Drop every entry (the segment is being recovered)."""
        self._loaded = True
        self._truncate_to_entries(0)
        self._persisted = 0
        self._file_dirty = True

    def start_empty(self) -> None:
        """The index of a new segment whose index file was just created empty."""
        self.reset()
        self._file_dirty = False

    def flush(self, *, sync: bool = True) -> None:
        """Write the entries not yet in the file, cut the file to the entries, fsync (unless
        ``sync`` is false: the caller fsyncs the file itself, later, outside its lock)."""
        if not self._loaded:
            return
        count = len(self._keys)
        if self._persisted == count and not self._file_dirty:
            return
        data = b"".join(self._encode(i) for i in range(self._persisted, count))
        self._files.write(self.path, self._persisted * self.entry_bytes, data, create=True)
        self._files.truncate(self.path, count * self.entry_bytes)
        if sync:
            self._files.fsync(self.path)
        self._persisted = count
        self._file_dirty = False

    def _encode(self, i: int) -> bytes:
        raise NotImplementedError


class OffsetIndex(_Index):
    """Kafka's OffsetIndex (module docstring)."""

    entry_bytes = OFFSET_ENTRY_BYTES

    def _decode(self, data: bytes) -> None:
        for relative, position in _OFFSET_ENTRY.iter_unpack(data):
            self._keys.append(self.base_offset + relative)
            self._values.append(position)

    def _encode(self, i: int) -> bytes:
        return _OFFSET_ENTRY.pack(self._keys[i] - self.base_offset, self._values[i])

    def _sanity_check(self) -> None:
        keys, values = self._keys, self._values
        for i in range(1, len(keys)):
            if keys[i] <= keys[i - 1] or values[i] <= values[i - 1]:
                raise CorruptIndexException(
                    f"Corrupt index found, index file ({self.path}) has entry {i} "
                    f"({keys[i]}, {values[i]}) not above entry {i - 1} "
                    f"({keys[i - 1]}, {values[i - 1]})"
                )
        if keys and (keys[0] < self.base_offset or values[0] < 0):
            raise CorruptIndexException(
                f"Corrupt index found, index file ({self.path}) has non-zero size but the "
                f"first offset is {keys[0]} which is less than the base offset "
                f"{self.base_offset}"
            )

    @property
    def last_offset(self) -> int:
        """The offset of the last entry, the base offset if there is none."""
        self._ensure_loaded()
        return self._keys[-1] if self._keys else self.base_offset

    @property
    def last_position(self) -> int:
        self._ensure_loaded()
        return self._values[-1] if self._values else 0

    def check_positions(self, segment_size: int) -> None:
        """CorruptIndexException if an entry points past the segment's end."""
        self._ensure_loaded()
        if self._values and self._values[-1] >= max(segment_size, 1):
            raise CorruptIndexException(
                f"Corrupt index found, index file ({self.path}) points at position "
                f"{self._values[-1]} of a {segment_size}-byte segment"
            )

    def append(self, offset: int, position: int) -> None:
        self._ensure_loaded()
        if self._keys and offset <= self._keys[-1]:
            raise CorruptIndexException(
                f"Attempt to append an offset ({offset}) to position {len(self._keys)} no "
                f"larger than the last offset appended ({self._keys[-1]}) to {self.path}."
            )
        if self.is_full():
            raise CorruptIndexException(
                f"Attempt to append to a full index (size = {len(self._keys)})."
            )
        self.relative(offset)
        self._keys.append(offset)
        self._values.append(position)

    def lookup(self, target_offset: int) -> tuple[int, int]:
        """(offset, position) of the largest entry with offset <= target, else (base, 0)."""
        self._ensure_loaded()
        slot = bisect.bisect_right(self._keys, target_offset) - 1
        if slot < 0:
            return self.base_offset, 0
        return self._keys[slot], self._values[slot]

    def truncate_to(self, offset: int) -> None:
        """Remove the entries with offset >= ``offset``."""
        self._ensure_loaded()
        self._truncate_to_entries(bisect.bisect_left(self._keys, offset))


class TimeIndex(_Index):
    """Kafka's TimeIndex (module docstring)."""

    entry_bytes = TIME_ENTRY_BYTES

    def _decode(self, data: bytes) -> None:
        for timestamp, relative in _TIME_ENTRY.iter_unpack(data):
            self._keys.append(timestamp)
            self._values.append(self.base_offset + relative)

    def _encode(self, i: int) -> bytes:
        return _TIME_ENTRY.pack(self._keys[i], self._values[i] - self.base_offset)

    def _sanity_check(self) -> None:
        keys, values = self._keys, self._values
        if keys and keys[-1] < keys[0]:
            raise CorruptIndexException(
                f"Corrupt time index found, time index file ({self.path}) has non-zero size "
                f"but the last timestamp is {keys[-1]} which is less than the first timestamp "
                f"{keys[0]}"
            )
        if values and values[-1] < self.base_offset:
            raise CorruptIndexException(
                f"Corrupt time index found, time index file ({self.path}) has non-zero size "
                f"but the last offset is {values[-1]} which is less than the first offset "
                f"{self.base_offset}"
            )
        for i in range(1, len(keys)):
            if keys[i] <= keys[i - 1] or values[i] < values[i - 1]:
                raise CorruptIndexException(
                    f"Corrupt time index found, time index file ({self.path}) entry {i} is "
                    f"not above entry {i - 1}"
                )

    def is_full(self) -> bool:
        """Kafka keeps the last slot for the entry appended when the segment rolls."""
        return self.entries >= self.max_entries - 1

    @property
    def last_entry(self) -> tuple[int, int]:
        """(timestamp, offset) of the last entry, (NO_TIMESTAMP, base offset) if none."""
        self._ensure_loaded()
        if not self._keys:
            return NO_TIMESTAMP, self.base_offset
        return self._keys[-1], self._values[-1]

    def maybe_append(self, timestamp: int, offset: int, *, skip_full_check: bool = False) -> None:
        """Add (timestamp, offset) if the timestamp is above the last entry's."""
        self._ensure_loaded()
        if not skip_full_check and self.is_full():
            raise CorruptIndexException(
                f"Attempt to append to a full time index (size = {len(self._keys)})."
            )
        if self._keys and offset < self._values[-1]:
            raise CorruptIndexException(
                f"Attempt to append an offset ({offset}) to slot {len(self._keys)} no larger "
                f"than the last offset appended ({self._values[-1]}) to {self.path}."
            )
        last_timestamp = self._keys[-1] if self._keys else NO_TIMESTAMP
        if timestamp > last_timestamp:
            self.relative(offset)
            self._keys.append(timestamp)
            self._values.append(offset)

    def lookup(self, target_timestamp: int) -> tuple[int, int]:
        """(timestamp, offset) of the largest entry with timestamp <= target, else
        (NO_TIMESTAMP, base offset)."""
        self._ensure_loaded()
        slot = bisect.bisect_right(self._keys, target_timestamp) - 1
        if slot < 0:
            return NO_TIMESTAMP, self.base_offset
        return self._keys[slot], self._values[slot]

    def truncate_to(self, offset: int) -> None:
        """Remove the entries with offset >= ``offset``."""
        self._ensure_loaded()
        self._truncate_to_entries(bisect.bisect_left(self._values, offset))
