"""What ``kafka-dump-log.sh`` prints of a segment's other files: the offset index
(``.index``) and time index (``.timeindex``), checked against their segment as Kafka checks
them, the producer state snapshot (``.snapshot``) and the aborted transactions index
(``.txnindex``).

Constraints
    * Kafka's lines and order: an index entry ``offset: 52 position: 4170`` (and each entry
      checked against the batch at that position: its last offset must be the entry's), a
      time index entry ``timestamp: T offset: O`` (checked against the largest timestamp of
      the batch ending at O); with ``verify_only`` the checks alone, with ``sanity_only`` the
      check a broker makes at start-up (``... passed sanity check.``, or Kafka's
      ``CorruptIndexException`` text as :class:`DumpError`).
    * What the checks find is kept in :class:`IndexProblems` and printed on stderr after every
      file, as Kafka prints it (``Mismatches in :/abs/path``, the newest first).
    * A snapshot entry prints as Kafka's ``producerId: 7 producerEpoch: 0 coordinatorEpoch: -1
      currentTxnFirstOffset: OptionalLong.empty lastTimestamp: T firstSequence: 0
      lastSequence: 9 lastOffset: 9 offsetDelta: 9 timestamp: T``; a corrupt snapshot prints
      Kafka's message on stderr and the dump goes on.
    * Files are read, never written.

Worked example
    An index ``00000000000000000000.index`` holding (159, 5000) whose segment has a batch of
    offsets 150-159 at 5000 prints ``offset: 159 position: 5000`` and no mismatch.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from rackwise.common.errors import RackwiseError
from rackwise.records.batch_v2 import BATCH_HEADER_BYTES, parse_header
from rackwise.storage.producer_state import CorruptSnapshotException, read_snapshot
from rackwise.storage.record_codec import iter_records

Print = Callable[[str], None]
NO_TIMESTAMP: Final = -1
ABORTED_TXN: Final = struct.Struct(">hqqqq")
"""A ``.txnindex`` entry: version, producer id, first, last and last stable offset."""


class DumpError(RackwiseError):
    """A file Kafka's tool stops on, with Kafka's message."""


@dataclass
class IndexProblems:
    """What the index checks found, by the file's absolute path, in the order found."""

    offset_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    timestamp_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    out_of_order: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    not_found: dict[str, list[tuple[int, int]]] = field(default_factory=dict)

    def report(self, err: Print) -> None:
        """Kafka's lines on stderr, after the files' dumps."""
        for name, pairs in self.offset_mismatches.items():
            err(f"Mismatches in :{name}")
            for index_offset, log_offset in reversed(pairs):  # Kafka prepends each
                err(f"  Index offset: {index_offset}, log offset: {log_offset}")
        for name, pairs in self.timestamp_mismatches.items():
            err(f"Found timestamp mismatch in :{name}")
            for indexed, logged in pairs:
                err(f"  Index timestamp: {indexed}, log timestamp: {logged}")
        for name, pairs in self.out_of_order.items():
            err(f"Found out of order timestamp in :{name}")
            for indexed, previous in pairs:
                err(f"  Index timestamp: {indexed}, Previously indexed timestamp: {previous}")
        for pairs in self.not_found.values():
            err("The following indexed offsets are not found in the log.")
            for indexed, logged in pairs:
                err(f"Indexed offset: {indexed}, found log offset: {logged}")


def _base(path: Path) -> int:
    return int(path.name.split(".")[0])


def _segment(path: Path) -> bytes:
    log = path.with_name(path.name.split(".")[0] + ".log")
    try:
        return log.read_bytes()
    except OSError as e:
        raise DumpError(f"{log}: {e.strerror or e}") from None


def _last_offset_at(data: bytes, position: int, limit: int) -> int | None:
    """The last offset of the batch at ``position`` if it lies within ``limit`` bytes."""
    if len(data) - position < BATCH_HEADER_BYTES:
        return None
    header = parse_header(data, position, check=False)
    return header.last_offset if header.size <= limit and header.end <= len(data) else None


def offset_entries(path: Path) -> list[tuple[int, int]]:
    """An offset index's (offset, position) entries, up to the first zero entry after the
    first (a preallocated file's unused tail)."""
    base, data = _base(path), path.read_bytes()
    entries = []
    for i in range(0, len(data) - 7, 8):
        relative, position = struct.unpack_from(">ii", data, i)
        if relative == 0 and i > 0:
            break
        entries.append((base + relative, position))
    return entries


def dump_offset_index(
    path: Path,
    out: Print,
    problems: IndexProblems,
    *,
    sanity_only: bool = False,
    verify_only: bool = False,
    max_message_size: int = 5 * 1024 * 1024,
) -> None:
    """An ``.index`` file as Kafka's ``dumpIndex`` prints and checks it."""
    size = path.stat().st_size
    if size < 8:
        out(f"{path} is empty.")
        return
    if sanity_only:
        _offset_sanity(path, size)
        out(f"{path} passed sanity check.")
        return
    data = _segment(path)
    name = str(path.absolute())
    for offset, position in offset_entries(path):
        last = _last_offset_at(data, position, max_message_size)
        if last is None:
            raise DumpError(
                f"no batch within --max-message-size {max_message_size} at position {position} "
                f"of {path.name.split('.')[0]}.log (index entry offset {offset})"
            )
        if last != offset:
            problems.offset_mismatches.setdefault(name, []).append((offset, last))
        if not verify_only:
            out(f"offset: {offset} position: {position}")


def _offset_sanity(path: Path, size: int) -> None:
    base, data = _base(path), path.read_bytes()
    last = base + struct.unpack_from(">i", data, (size // 8 - 1) * 8)[0]
    if last < base:
        raise DumpError(
            f"Corrupt index found, index file {path.absolute()} has non-zero size but the last "
            f"offset is {last} which is less than the base offset {base}"
        )
    if size % 8:
        raise DumpError(
            f"Index file {path.absolute()} is corrupt, found {size} bytes which is neither "
            "positive nor a multiple of 8"
        )


def _time_entries(path: Path) -> list[tuple[int, int]]:
    base, data = _base(path), path.read_bytes()
    entries = []
    for i in range(0, len(data) - 11, 12):
        timestamp, relative = struct.unpack_from(">qi", data, i)
        if relative == 0 and i > 0:
            break
        entries.append((timestamp, base + relative))
    return entries


def _time_sanity(path: Path) -> None:
    base, data, size = _base(path), path.read_bytes(), path.stat().st_size
    count = size // 12
    if count:
        first = struct.unpack_from(">q", data, 0)[0]
        last_timestamp, relative = struct.unpack_from(">qi", data, (count - 1) * 12)
        where = f"time index file ({path.absolute()}) has non-zero size but the last"
        if last_timestamp < first:
            raise DumpError(
                f"Corrupt time index found, {where} timestamp is {last_timestamp} which is less "
                f"than the first timestamp {first}"
            )
        if base + relative < base:
            raise DumpError(
                f"Corrupt time index found, {where} offset is {base + relative} which is less "
                f"than the first offset {base}"
            )
    if size % 12:
        raise DumpError(
            f"Time index file {path.absolute()} is corrupt, found {size} bytes which is neither "
            "positive nor a multiple of 12"
        )


def dump_time_index(
    path: Path,
    out: Print,
    problems: IndexProblems,
    *,
    sanity_only: bool = False,
    verify_only: bool = False,
) -> None:
    """A ``.timeindex`` file as Kafka's ``dumpTimeIndex`` prints and checks it: each entry's
    offset must end a batch whose largest record timestamp is the entry's."""
    if sanity_only:
        _time_sanity(path)
        out(f"{path} passed sanity check.")
        return
    data = _segment(path)
    index = path.with_name(path.name.split(".")[0] + ".index")
    positions = offset_entries(index) if index.exists() else []
    name = str(path.absolute())
    previous = NO_TIMESTAMP
    for timestamp, offset in _time_entries(path):
        start = max((p for o, p in positions if o <= offset), default=0)
        found = _batch_ending_at(data, start, offset)
        if found is None or found[0] != offset:
            problems.not_found.setdefault(name, []).append(
                (offset, -1 if found is None else found[0])
            )
        else:
            if found[1] != timestamp:
                problems.timestamp_mismatches.setdefault(name, []).append((timestamp, found[1]))
            if previous >= timestamp:
                problems.out_of_order.setdefault(name, []).append((timestamp, previous))
        if not verify_only:
            out(f"timestamp: {timestamp} offset: {offset}")
        previous = timestamp


def _batch_ending_at(data: bytes, position: int, offset: int) -> tuple[int, int] | None:
    """(last offset, largest record timestamp) of the first batch from ``position`` whose
    last offset is at least ``offset``."""
    while len(data) - position >= BATCH_HEADER_BYTES:
        header = parse_header(data, position, check=False)
        if header.size < BATCH_HEADER_BYTES or header.end > len(data):
            return None
        if header.last_offset >= offset:
            records = iter_records(memoryview(data)[header.position : header.end])
            return header.last_offset, max((r.timestamp for r in records), default=NO_TIMESTAMP)
        position = header.end
    return None


def dump_producer_snapshot(path: Path, out: Print, err: Print) -> None:
    """A ``.snapshot`` file: one line per producer, as Kafka's ``dumpProducerIdSnapshot``."""
    try:
        entries = read_snapshot(path)
    except CorruptSnapshotException as e:
        err(str(e))
        return
    for entry in entries:
        txn = entry.current_txn_first_offset
        line = (
            f"producerId: {entry.producer_id} producerEpoch: {entry.producer_epoch} "
            f"coordinatorEpoch: {entry.coordinator_epoch} currentTxnFirstOffset: "
            f"{'OptionalLong.empty' if txn < 0 else f'OptionalLong[{txn}]'} "
            f"lastTimestamp: {entry.last_timestamp} "
        )
        if entry.batches:
            batch = entry.batches[0]
            line += (
                f"firstSequence: {batch.first_seq} lastSequence: {batch.last_seq} lastOffset: "
                f"{batch.last_offset} offsetDelta: {batch.last_offset - batch.first_offset} "
                f"timestamp: {batch.timestamp}"
            )
        out(line)


def dump_txn_index(path: Path, out: Print) -> None:
    """A ``.txnindex`` file: one line per aborted transaction (a partial last entry is not
    read, as Kafka does not read it)."""
    data = path.read_bytes()
    for start in range(0, len(data) - ABORTED_TXN.size + 1, ABORTED_TXN.size):
        version, producer, first, last, stable = ABORTED_TXN.unpack_from(data, start)
        if version > 0:
            raise DumpError(
                f"Unexpected aborted transaction version {version} in transaction index "
                f"{path.absolute()}, current version is 0"
            )
        out(
            f"version: {version} producerId: {producer} firstOffset: {first} lastOffset: "
            f"{last} lastStableOffset: {stable}"
        )
