"""Idempotent producers' state for one partition: epochs, sequences and the last five batches.

Goals
    A producer that retries a batch gets the original answer instead of a second copy in the
    log; a batch that skips or repeats sequence numbers out of order, or comes from a fenced
    (older) epoch, is refused before anything is written; and all this survives a restart,
    through Kafka's ``<offset>.snapshot`` files, which Kafka's tools can read.

Constraints
    Kafka's rules, as ``ProducerAppendInfo`` / ``ProducerStateEntry`` / ``ProducerStateManager``
    apply them in Kafka 4: an append from a client (the leader's path) is checked in full, an
    append by replication (a follower) only has its epoch looked at (a lower one is logged, not
    refused). Per producer id only the last ``NUM_BATCHES_TO_RETAIN`` (5) batches are
    remembered, the most a producer may have in flight. Only the batch header is read, never a
    record. No wall clock: every time is an argument. Transactions are out of scope beyond
    keeping a transactional producer's first open offset and coordinator epoch round-trip
    through snapshots; a control batch (a transaction marker) ends the open transaction.

Algorithm
    Check (leader): for each batch of a request, in order, with a working copy per producer:
    a batch equal to one of the producer's last five in the applied state (same epoch, first
    and last sequence) makes the request a duplicate: the original offsets are returned and
    nothing is written. Otherwise an epoch below the current one raises
    InvalidProducerEpochException (Kafka 4 answers INVALID_PRODUCER_EPOCH, not the fatal
    PRODUCER_FENCED, so the producer can abort and retry). A new epoch must start at sequence 0,
    unless the producer is unknown (its state expired or was removed with the data it wrote):
    an unknown producer may start at any sequence. Within the same epoch, the first sequence
    must follow the last one, wrapping from 2**31-1 to 0. Anything else raises
    OutOfOrderSequenceException.
    Update (after the write, on leader and follower alike): the batch, with its final offsets
    and timestamp, joins the producer's last five (a new epoch forgets the old batches).
    Snapshot: version int16 (1), CRC32C uint32 of everything after it, then an int32 count and
    per producer: producer id int64, epoch int16, last sequence int32, last offset int64,
    offset delta int32 (last offset minus first offset of the last batch), timestamp int64,
    coordinator epoch int32, current transaction's first offset int64 (-1: none). Only the last
    batch of each producer is kept, as in Kafka. Written to ``<name>.tmp``, fsynced, renamed,
    and the directory fsynced.
    Load: snapshots above the log end offset or at or below the log start offset are deleted;
    the newest remaining one is read (a damaged one is deleted with a warning and the next
    tried); the caller replays every batch from the returned offset through :meth:`update`.

Worked example
    Producer 7, epoch 0, appends sequences 0-4 (offsets 100-104), then 5-9 (offsets 105-109).
    The second request's answer is lost and the producer sends 5-9 again: :meth:`check` finds
    it among the last five and returns ``DuplicateBatch(105, 109, ts)``. A batch 12-14 raises
    OutOfOrderSequenceException (``12 (incoming seq. number), 9 (current end sequence
    number)``). After a restart from ``00000000000000000110.snapshot`` producer 7 is known with
    epoch 0 and last sequence 9 at offset 109, so 10-14 is accepted and 5-9 is still answered
    as a duplicate; 0-4 is no longer remembered (a snapshot keeps one batch per producer).
"""

from __future__ import annotations

import logging
import os
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Final, NamedTuple

from crc32c import crc32c

from rackwise.common.errors import RackwiseError
from rackwise.storage.errors import (
    InvalidProducerEpochException,
    InvalidTxnStateException,
    OutOfOrderSequenceException,
)

if TYPE_CHECKING:
    from rackwise.storage.batch import BatchHeader

LOG: Final = logging.getLogger("rackwise.storage")

NUM_BATCHES_TO_RETAIN: Final = 5
"""Batches remembered per producer (Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN)."""
DEFAULT_PRODUCER_ID_EXPIRATION_MS: Final = 86_400_000
"""``producer.id.expiration.ms``: a producer idle this long is forgotten."""
SNAPSHOT_SUFFIX: Final = ".snapshot"
SNAPSHOT_TMP_SUFFIX: Final = ".snapshot.tmp"
SNAPSHOT_VERSION: Final = 1
NO_PRODUCER_ID: Final = -1
NO_PRODUCER_EPOCH: Final = -1
"""The epoch of a producer never seen (or forgotten): any sequence is accepted from it."""
NO_SEQUENCE: Final = -1
NO_OFFSET: Final = -1
"""A snapshot entry's last offset when the producer has no data batch (only markers)."""
NO_TIMESTAMP: Final = -1
NO_COORDINATOR_EPOCH: Final = -1
NO_TXN_FIRST_OFFSET: Final = -1
"""``current txn first offset`` in a snapshot entry when no transaction is open."""
MAX_SEQUENCE: Final = 2**31 - 1
"""Sequences wrap from here to 0 (Java's Integer.MAX_VALUE)."""

_SNAPSHOT_HEAD: Final = struct.Struct(">hIi")  # version, crc, entry count
_SNAPSHOT_ENTRY: Final = struct.Struct(">qhiqiqiq")
_CRC_OFFSET: Final = 2
_ENTRIES_OFFSET: Final = 6
"""The CRC covers the snapshot from here (the entry count) to the end."""


class CorruptSnapshotException(RackwiseError):
    """Kafka's CorruptSnapshotException: a producer snapshot that does not parse or whose CRC
    does not match. Never reaches a client: the snapshot is deleted and an older one used."""


def increment_sequence(sequence: int, increment: int) -> int:
    """``sequence + increment``, wrapping past MAX_SEQUENCE to 0 (Kafka's
    DefaultRecordBatch.incrementSequence)."""
    if sequence > MAX_SEQUENCE - increment:
        return increment - (MAX_SEQUENCE - sequence) - 1
    return sequence + increment


def decrement_sequence(sequence: int, decrement: int) -> int:
    """``sequence - decrement``, wrapping below 0 to MAX_SEQUENCE."""
    if sequence < decrement:
        return MAX_SEQUENCE - (decrement - sequence) + 1
    return sequence - decrement


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == MAX_SEQUENCE)


def snapshot_name(offset: int) -> str:
    """``<offset, 20 digits>.snapshot``: holds the state of every batch below ``offset``."""
    return f"{offset:020d}{SNAPSHOT_SUFFIX}"


def parse_snapshot_offset(path: Path) -> int | None:
    """The offset a snapshot file is named after, or None for another file."""
    stem = path.name.removesuffix(SNAPSHOT_SUFFIX)
    if stem == path.name or not stem.isdigit():
        return None
    return int(stem)


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    """One appended batch of a producer: sequences and final offsets (inclusive); ``timestamp``
    is the batch's max timestamp (or its log-append time), ms."""

    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass(frozen=True, slots=True)
class DuplicateBatch:
    """The answer of the original append of a retried batch."""

    first_offset: int
    last_offset: int
    timestamp: int


class LastEntry(NamedTuple):
    """What :meth:`ProducerStateManager.last_entry` tells: the producer's epoch, last sequence
    (NO_SEQUENCE if none) and last offset (NO_OFFSET if none)."""

    producer_epoch: int
    last_sequence: int
    last_offset: int


@dataclass(frozen=True, slots=True)
class ProducerEntry:
    """A producer's state; immutable, replaced on each update (Kafka's ProducerStateEntry).
    ``batches`` is oldest first, at most NUM_BATCHES_TO_RETAIN; ``last_timestamp`` (ms) drives
    expiry."""

    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    batches: tuple[BatchMetadata, ...] = ()
    last_timestamp: int = NO_TIMESTAMP
    coordinator_epoch: int = NO_COORDINATOR_EPOCH
    current_txn_first_offset: int = NO_TXN_FIRST_OFFSET

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def last_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else NO_OFFSET

    @property
    def has_open_transaction(self) -> bool:
        return self.current_txn_first_offset != NO_TXN_FIRST_OFFSET

    def with_batch(self, epoch: int, batch: BatchMetadata) -> ProducerEntry:
        """This entry after ``batch`` (of ``epoch``): a new epoch forgets the old batches."""
        kept = self.batches if epoch == self.producer_epoch else ()
        batches = (*kept, batch)[-NUM_BATCHES_TO_RETAIN:]
        return replace(self, producer_epoch=epoch, batches=batches, last_timestamp=batch.timestamp)

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.producer_epoch:
            return None
        for batch in self.batches:
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                return batch
        return None


def _batch_metadata(header: BatchHeader) -> BatchMetadata:
    return BatchMetadata(
        first_seq=header.base_sequence,
        last_seq=header.last_sequence,
        first_offset=header.base_offset,
        last_offset=header.last_offset,
        timestamp=header.max_timestamp,
    )


def _advance(
    entry: ProducerEntry,
    header: BatchHeader,
    *,
    is_client: bool,
    label: str,
    applied_epoch: int = NO_PRODUCER_EPOCH,
) -> ProducerEntry:
    """``entry`` after ``header``, checked as Kafka's ProducerAppendInfo does for a client
    append (``is_client``; ``applied_epoch`` is the producer's epoch before this append,
    NO_PRODUCER_EPOCH if it is unknown) or only logged for replication."""
    epoch = header.producer_epoch
    if epoch < entry.producer_epoch:
        message = (
            f"Epoch of producer {entry.producer_id} at offset {header.base_offset} in {label} "
            f"is {epoch}, which is smaller than the last seen epoch {entry.producer_epoch}"
        )
        if is_client:
            raise InvalidProducerEpochException(message)
        LOG.warning(message)
    if header.is_control:
        return replace(
            entry,
            producer_epoch=epoch,
            batches=entry.batches if epoch == entry.producer_epoch else (),
            current_txn_first_offset=NO_TXN_FIRST_OFFSET,
            last_timestamp=header.max_timestamp,
        )
    if is_client:
        _check_sequence(entry, header, label, applied_epoch)
    updated = entry.with_batch(epoch, _batch_metadata(header))
    if entry.has_open_transaction and not header.is_transactional:
        raise InvalidTxnStateException(
            f"Expected transactional write from producer {entry.producer_id} at offset "
            f"{header.base_offset} in partition {label}"
        )
    if header.is_transactional and not entry.has_open_transaction:
        updated = replace(updated, current_txn_first_offset=header.base_offset)
    return updated


def _check_sequence(
    entry: ProducerEntry, header: BatchHeader, label: str, applied_epoch: int
) -> None:
    epoch, first_seq, pid = header.producer_epoch, header.base_sequence, entry.producer_id
    if epoch != entry.producer_epoch:
        if first_seq != 0 and entry.producer_epoch != NO_PRODUCER_EPOCH:
            raise OutOfOrderSequenceException(
                f"Invalid sequence number for new epoch of producer {pid} at offset "
                f"{header.base_offset} in partition {label}: {epoch} (request epoch), "
                f"{first_seq} (seq. number), {entry.producer_epoch} (current producer epoch)"
            )
        return
    last_seq = entry.last_seq
    # A producer unknown before this append (expired, or its data deleted) may go on at any
    # sequence.
    if applied_epoch != NO_PRODUCER_EPOCH and not _in_sequence(last_seq, first_seq):
        raise OutOfOrderSequenceException(
            f"Out of order sequence number for producer {pid} at offset {header.base_offset} "
            f"in partition {label}: {first_seq} (incoming seq. number), {last_seq} (current "
            "end sequence number)"
        )


class ProducerStateManager:
    """The producer state of the partition log in ``directory`` (Kafka's
    ProducerStateManager). Not thread-safe: the log calls it under its own lock."""

    def __init__(
        self,
        directory: Path,
        *,
        producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
    ) -> None:
        self.directory = Path(directory)
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self._producers: dict[int, ProducerEntry] = {}
        self._map_end_offset = 0

    # ----------------------------------------------------------------- reading the state

    @property
    def map_end_offset(self) -> int:
        """The next offset whose batch has not been applied (Kafka's mapEndOffset)."""
        return self._map_end_offset

    def update_map_end_offset(self, offset: int) -> None:
        """Say that every batch below ``offset`` has been applied (Kafka's updateMapEndOffset)."""
        self._map_end_offset = offset

    @property
    def active_producers(self) -> Mapping[int, ProducerEntry]:
        """A copy of every known producer's entry, by producer id."""
        return dict(self._producers)

    def last_entry(self, producer_id: int) -> LastEntry | None:
        entry = self._producers.get(producer_id)
        if entry is None:
            return None
        return LastEntry(entry.producer_epoch, entry.last_seq, entry.last_offset)

    def entry(self, producer_id: int) -> ProducerEntry | None:
        return self._producers.get(producer_id)

    # ------------------------------------------------------------------- appends

    def check(self, header: BatchHeader, *, is_leader: bool) -> DuplicateBatch | None:
        """Check one batch before it is appended; see :meth:`check_batches`."""
        return self.check_batches((header,), is_leader=is_leader)

    def check_batches(
        self, headers: Iterable[BatchHeader], *, is_leader: bool
    ) -> DuplicateBatch | None:
        """Check the batches of one append, in order, before any is written. Returns the
        original answer when a batch is a retry of one of its producer's last five (the whole
        append is then a duplicate and must not be written); raises
        InvalidProducerEpochException, OutOfOrderSequenceException or
        InvalidTxnStateException for a batch that must be refused. Changes nothing."""
        label = self.directory.name
        working: dict[int, ProducerEntry] = {}
        for header in headers:
            if not header.has_producer_id:
                continue
            pid = header.producer_id
            applied = self._producers.get(pid)
            if is_leader and applied is not None and not header.is_control:
                found = applied.find_duplicate(
                    header.producer_epoch, header.base_sequence, header.last_sequence
                )
                if found is not None:
                    return DuplicateBatch(found.first_offset, found.last_offset, found.timestamp)
            entry = working.get(pid)
            if entry is None:
                # As Kafka's ProducerAppendInfo: checks run against the applied state, but
                # batches of this request are not mixed with the applied batches.
                base = applied if applied is not None else ProducerEntry(pid)
                entry = replace(base, batches=base.batches[-1:])
            working[pid] = _advance(
                entry,
                header,
                is_client=is_leader,
                label=label,
                applied_epoch=applied.producer_epoch if applied is not None else NO_PRODUCER_EPOCH,
            )
        return None

    def update(self, header: BatchHeader, *, now_ms: int) -> None:
        """Apply a batch that has been written with its final offsets and timestamp. A batch
        without a producer id only moves :attr:`map_end_offset`. ``now_ms`` stands in for the
        batch's timestamp when it has none, so that the producer does not expire at once."""
        if header.has_producer_id:
            pid = header.producer_id
            entry = self._producers.get(pid, ProducerEntry(pid))
            updated = _advance(entry, header, is_client=False, label=self.directory.name)
            if updated.last_timestamp == NO_TIMESTAMP:
                updated = replace(updated, last_timestamp=now_ms)
            self._producers[pid] = updated
        self._map_end_offset = max(self._map_end_offset, header.next_offset)

    def remove_expired(self, now_ms: int) -> None:
        """Forget producers idle for ``producer.id.expiration.ms`` or longer (never one with an
        open transaction), as Kafka's removeExpiredProducers."""
        for pid in [p for p, e in self._producers.items() if self._is_expired(e, now_ms)]:
            del self._producers[pid]

    def _is_expired(self, entry: ProducerEntry, now_ms: int) -> bool:
        return (
            not entry.has_open_transaction
            and now_ms - entry.last_timestamp >= self.producer_id_expiration_ms
        )

    # ------------------------------------------------------------------- log start and truncation

    def on_log_start_offset(self, offset: int) -> None:
        """The log now starts at ``offset``: snapshots below it are deleted, and producers whose
        last batch lies below it are forgotten (their data is gone)."""
        for snapshot_offset, path in self._snapshot_files():
            if snapshot_offset < offset:
                path.unlink(missing_ok=True)
        for pid in [p for p, e in self._producers.items() if NO_OFFSET < e.last_offset < offset]:
            del self._producers[pid]
        self._map_end_offset = max(self._map_end_offset, offset)

    def truncate_and_reload(
        self, log_start_offset: int, log_end_offset: int, *, now_ms: int | None = None
    ) -> int:
        """After the log was truncated to ``log_end_offset``: drop the snapshots beyond it and,
        unless the state is already exactly at the log end, reload. Returns the offset from
        which the caller replays batches through :meth:`update`."""
        self._delete_out_of_range(log_start_offset, log_end_offset)
        if log_end_offset != self._map_end_offset:
            return self._load_latest(log_start_offset, now_ms)
        self.on_log_start_offset(log_start_offset)
        return self._map_end_offset

    def load(self, log_start_offset: int, log_end_offset: int, *, now_ms: int | None = None) -> int:
        """Load the newest valid snapshot in ``(log_start_offset, log_end_offset]``, deleting
        those outside, damaged ones and leftover temporary files; producers expired at
        ``now_ms`` (when given) or whose last batch lies below the log start are left out.
        Returns the offset from which the caller replays batches through :meth:`update`, then
        calls :meth:`update_map_end_offset` with the log end offset."""
        for leftover in self.directory.glob(f"*{SNAPSHOT_TMP_SUFFIX}"):
            leftover.unlink(missing_ok=True)
        self._delete_out_of_range(log_start_offset, log_end_offset)
        return self._load_latest(log_start_offset, now_ms)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Forget every producer and delete every snapshot: the log restarts empty at
        ``offset``."""
        self._producers.clear()
        for _, path in self._snapshot_files():
            path.unlink(missing_ok=True)
        self._map_end_offset = offset

    def _delete_out_of_range(self, log_start_offset: int, log_end_offset: int) -> None:
        for snapshot_offset, path in self._snapshot_files():
            if snapshot_offset > log_end_offset or snapshot_offset <= log_start_offset:
                path.unlink(missing_ok=True)

    def _load_latest(self, log_start_offset: int, now_ms: int | None) -> int:
        self._producers.clear()
        for snapshot_offset, path in reversed(self._snapshot_files()):
            try:
                entries = read_snapshot(path)
            except CorruptSnapshotException as e:
                LOG.warning("Failed to load producer snapshot from '%s': %s", path, e)
                path.unlink(missing_ok=True)
                continue
            for entry in entries:
                expired = now_ms is not None and self._is_expired(entry, now_ms)
                if not expired and not NO_OFFSET < entry.last_offset < log_start_offset:
                    self._producers[entry.producer_id] = entry
            self._map_end_offset = snapshot_offset
            return snapshot_offset
        self._map_end_offset = log_start_offset
        return log_start_offset

    # ------------------------------------------------------------------- snapshots

    def snapshot_offsets(self) -> list[int]:
        """The offsets of the snapshot files on disk, ascending."""
        return [offset for offset, _ in self._snapshot_files()]

    def take_snapshot(self, offset: int, *, sync: bool = True) -> Path:
        """Write the state as ``<offset>.snapshot`` (temporary file, fsync, rename, directory
        fsync; without ``sync`` the caller fsyncs later, with :func:`flush_snapshot`, as
        Kafka's roll does). ``offset`` may not be below :attr:`map_end_offset` (the state
        holds batches past it); above it, the offsets between held no producer batch and the
        map end moves up to it."""
        if offset < self._map_end_offset:
            raise ValueError(
                f"BUG: producer snapshot at offset {offset} is below the applied state's end "
                f"{self._map_end_offset}"
            )
        self._map_end_offset = offset
        path = self.directory / snapshot_name(offset)
        write_snapshot(path, self._producers.values(), sync=sync)
        return path

    def _snapshot_files(self) -> list[tuple[int, Path]]:
        found = []
        for path in self.directory.glob(f"*{SNAPSHOT_SUFFIX}"):
            offset = parse_snapshot_offset(path)
            if offset is not None and path.is_file():
                found.append((offset, path))
        return sorted(found)


def encode_snapshot(entries: Iterable[ProducerEntry]) -> bytes:
    """The bytes of a snapshot file holding ``entries`` (sorted by producer id)."""
    body = bytearray()
    ordered = sorted(entries, key=lambda e: e.producer_id)
    for entry in ordered:
        last = entry.batches[-1] if entry.batches else None
        body += _SNAPSHOT_ENTRY.pack(
            entry.producer_id,
            entry.producer_epoch,
            entry.last_seq,
            entry.last_offset,
            last.last_offset - last.first_offset if last is not None else 0,
            entry.last_timestamp,
            entry.coordinator_epoch,
            entry.current_txn_first_offset,
        )
    counted = struct.pack(">i", len(ordered)) + bytes(body)
    return struct.pack(">hI", SNAPSHOT_VERSION, crc32c(counted)) + counted


def decode_snapshot(data: bytes) -> list[ProducerEntry]:
    """The entries of a snapshot file's bytes; raises CorruptSnapshotException."""
    if len(data) < _SNAPSHOT_HEAD.size:
        raise CorruptSnapshotException(
            f"Snapshot failed schema validation: {len(data)} bytes is too short"
        )
    version, crc, count = _SNAPSHOT_HEAD.unpack_from(data)
    if version != SNAPSHOT_VERSION:
        raise CorruptSnapshotException(f"Snapshot contained an unknown file version {version}")
    if count < 0 or len(data) != _SNAPSHOT_HEAD.size + count * _SNAPSHOT_ENTRY.size:
        raise CorruptSnapshotException(
            f"Snapshot failed schema validation: {count} entries in {len(data)} bytes"
        )
    computed = crc32c(data[_ENTRIES_OFFSET:])
    if computed != crc:
        raise CorruptSnapshotException(
            f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {crc}. "
            f"Computed crc: {computed}"
        )
    entries = []
    for fields in _SNAPSHOT_ENTRY.iter_unpack(data[_SNAPSHOT_HEAD.size :]):
        pid, epoch, last_seq, last_offset, delta, timestamp, coordinator_epoch, txn = fields
        batches: tuple[BatchMetadata, ...] = ()
        if last_offset >= 0:
            first_seq = decrement_sequence(last_seq, delta)
            batches = (
                BatchMetadata(first_seq, last_seq, last_offset - delta, last_offset, timestamp),
            )
        entries.append(
            ProducerEntry(
                producer_id=pid,
                producer_epoch=epoch,
                batches=batches,
                last_timestamp=timestamp,
                coordinator_epoch=coordinator_epoch,
                current_txn_first_offset=txn if txn >= 0 else NO_TXN_FIRST_OFFSET,
            )
        )
    return entries


def read_snapshot(path: Path) -> list[ProducerEntry]:
    return decode_snapshot(path.read_bytes())


def write_snapshot(path: Path, entries: Iterable[ProducerEntry], *, sync: bool = True) -> None:
    """Write a snapshot file atomically: temporary file, fsync, rename, directory fsync (the
    fsyncs left to :func:`flush_snapshot` without ``sync``: a crash before it may leave a
    torn file, which loading finds by its CRC and deletes, as Kafka's does)."""
    data = encode_snapshot(entries)
    tmp = path.with_name(path.name.removesuffix(SNAPSHOT_SUFFIX) + SNAPSHOT_TMP_SUFFIX)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    if sync:
        _fsync_path(path.parent)


def flush_snapshot(path: Path) -> None:
    """fsync a snapshot written without ``sync``, and its directory; nothing if it is gone
    (a truncation or retention deleted it meanwhile)."""
    try:
        _fsync_path(path)
    except FileNotFoundError:
        return
    _fsync_path(path.parent)


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
