"""The metadata log as the controller sees it: the part of
:class:`rackwise.metalog.MetadataLog` it calls, as a structural type.

The controller sits below the log's implementations in the layering (``metalog`` may use the
controller, not the other way round), so it names the interface here instead of importing it;
any :class:`~rackwise.metalog.MetadataLog` (the file log, the in-memory fake, a replicated quorum
log later) fits.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol


class SnapshotIdLike(Protocol):
    @property
    def end_offset(self) -> int: ...


class SnapshotReaderLike(Protocol):
    @property
    def snapshot_id(self) -> SnapshotIdLike: ...

    def batches(self) -> Iterator[Sequence[Any]]: ...


class RecordBatchLike(Protocol):
    @property
    def base_offset(self) -> int: ...

    @property
    def records(self) -> Sequence[Any]: ...


class MetadataLogLike(Protocol):
    """What the controller needs of the durable metadata log (see
    :class:`rackwise.metalog.MetadataLog` for the contract of each member)."""

    def append_batches(self, batches: Sequence[Sequence[Any]], epoch: int) -> list[int]: ...

    @property
    def start_offset(self) -> int: ...

    @property
    def end_offset(self) -> int: ...

    @property
    def latest_epoch(self) -> int: ...

    def read_from(self, offset: int) -> Iterator[Any]: ...

    def read_snapshot(self, snapshot_id: Any = None) -> Any: ...

    def write_snapshot(self, records: Iterable[Any], end_offset: int) -> Any: ...

    def snapshot_due(self) -> bool: ...

    @property
    def bytes_since_snapshot(self) -> int: ...

    @property
    def max_record_bytes_between_snapshots(self) -> int: ...
