"""The metadata log behind an interface, so that a replicated quorum log can replace the local
one without the controller noticing.

The log is a sequence of record batches numbered by offset (the first record is offset 0), each
batch written by one controller epoch, plus snapshots: the image written out as records at some
offset (:class:`SnapshotId`'s ``end_offset``: the offset after the last record it covers, as
Kafka's ``OffsetAndEpoch`` snapshot ids). A snapshot lets the records before it go.

Acknowledgement is durability: :meth:`MetadataLog.append` returns only once the batch is on
stable storage, and no reader sees a batch before that. What a log found and repaired when it
opened (a torn tail, a corrupt snapshot) is in :attr:`MetadataLog.recovery_events`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

from rackwise.common.errors import RackwiseError
from rackwise.records.batch import RecordBatch

DEFAULT_MAX_RECORD_BYTES_BETWEEN_SNAPSHOTS: Final = 20 * 1024 * 1024
"""Kafka's default ``metadata.log.max.record.bytes.between.snapshots``: 20 MiB."""
DEFAULT_SEGMENT_BYTES: Final = 64 * 1024 * 1024
"""Segment size at which the file log starts a new segment (Kafka's ``metadata.log.segment.bytes``
defaults to 1 GiB; smaller segments let snapshots free space sooner)."""
SNAPSHOTS_RETAINED: Final = 2
"""Snapshots kept: the newest and one before it, to fall back on if the newest is damaged. The
log keeps every record after the older one."""
NO_EPOCH: Final = -1
"""Epoch of an empty log (no batch written yet)."""


class MetadataLogError(RackwiseError):
    """The log cannot go on: its directory is locked by another process, a write or fsync
    failed (the log must be reopened, which repairs the tail), or nothing can rebuild the
    records before the log's start."""


@dataclass(frozen=True, slots=True, order=True)
class SnapshotId:
    """A snapshot's id: it covers every record below ``end_offset``; ``epoch`` is the epoch of
    the last of them (0 for a snapshot of the empty log)."""

    end_offset: int
    epoch: int

    def file_name(self) -> str:
        """Kafka's snapshot file name: ``<end offset, 20 digits>-<epoch, 10 digits>.checkpoint``."""
        return f"{self.end_offset:020d}-{self.epoch:010d}.checkpoint"


@dataclass(frozen=True, slots=True)
class RecoveryEvent:
    """Something the log found and did when it opened, e.g. a torn tail truncated. ``offset``
    is the first offset affected (None when there is none) and ``path`` the file."""

    action: str
    path: str
    offset: int | None
    reason: str

    def __str__(self) -> str:
        at = "" if self.offset is None else f" at offset {self.offset}"
        return f"{self.action} {self.path}{at}: {self.reason}"


class SnapshotReader(ABC):
    """One snapshot, read batch by batch."""

    snapshot_id: SnapshotId
    last_append_time_ms: int
    record_count: int

    @abstractmethod
    def batches(self) -> Iterator[Sequence[Any]]:
        """The snapshot's records, one batch's worth at a time, in order."""


class MetadataLog(ABC):
    """The durable metadata log and its snapshots."""

    recovery_events: tuple[RecoveryEvent, ...] = ()
    max_record_bytes_between_snapshots: int = DEFAULT_MAX_RECORD_BYTES_BETWEEN_SNAPSHOTS

    @abstractmethod
    def append_batches(self, batches: Sequence[Sequence[Any]], epoch: int) -> list[int]:
        """Append each list of records as one batch, all with one flush to stable storage
        (group commit), and return each batch's last offset once durable. Nothing is written
        if a record does not encode; ``epoch`` may not be older than :attr:`latest_epoch`."""

    def append(self, records: Sequence[Any], epoch: int) -> int:
        """Append one batch; its last offset, once durable."""
        return self.append_batches([records], epoch)[0]

    @property
    @abstractmethod
    def start_offset(self) -> int:
        """The first offset the log still holds (records below it are in a snapshot only)."""

    @property
    @abstractmethod
    def end_offset(self) -> int:
        """The offset the next record will get: one past the last durable record."""

    @property
    def latest_offset(self) -> int:
        """The last durable record's offset; -1 for an empty log."""
        return self.end_offset - 1

    @property
    @abstractmethod
    def latest_epoch(self) -> int:
        """The epoch of the last batch, or of the snapshot the log starts from; NO_EPOCH."""

    @abstractmethod
    def read_from(self, offset: int) -> Iterator[RecordBatch]:
        """Durable batches from ``offset`` on; the first is trimmed to start at ``offset``.
        Raises OffsetOutOfRangeException below :attr:`start_offset` or past the end."""

    @abstractmethod
    def read_raw(self, offset: int, max_bytes: int) -> bytes:
        """Whole encoded batches (see :mod:`rackwise.records.batch`) from the one holding
        ``offset``, at most ``max_bytes`` unless the first batch alone is larger: what a broker
        fetching the log is sent. Empty at the end of the log."""

    @abstractmethod
    def snapshot_ids(self) -> list[SnapshotId]:
        """The snapshots kept, oldest first."""

    def latest_snapshot_id(self) -> SnapshotId | None:
        ids = self.snapshot_ids()
        return ids[-1] if ids else None

    @abstractmethod
    def read_snapshot(self, snapshot_id: SnapshotId | None = None) -> SnapshotReader | None:
        """A snapshot (the newest by default), or None if there is none."""

    @abstractmethod
    def write_snapshot(self, records: Iterable[Any], end_offset: int) -> SnapshotId:
        """Store ``records`` (the image at ``end_offset``) as a snapshot, atomically, then let
        go of the snapshots and records no longer needed. A log may allow this on another
        thread while appends go on (:class:`~rackwise.metalog.FileMetadataLog` does); a
        failure leaves nothing of the snapshot visible."""

    @property
    @abstractmethod
    def bytes_since_snapshot(self) -> int:
        """Bytes of batches appended after the newest snapshot's end offset."""

    def snapshot_due(self) -> bool:
        """Whether ``metadata.log.max.record.bytes.between.snapshots`` has been reached."""
        return self.bytes_since_snapshot >= self.max_record_bytes_between_snapshots

    @abstractmethod
    def close(self) -> None:
        """Release files and locks; the log is unusable afterwards."""

    def __enter__(self) -> MetadataLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
