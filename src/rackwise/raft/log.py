"""One replica's view of the replicated log: the batches after its snapshot, their epochs, and
how far they are durable (Kafka's ``ReplicatedLog`` and its leader-epoch cache, in memory).

Goals
    Answer the questions Raft asks of a log (where does an epoch end, is a fetch position
    consistent with this log, where must a diverging follower cut) exactly as Kafka's
    ``ReplicatedLog.validateOffsetAndEpoch`` and ``truncateToEndOffset`` answer them.

Constraints
    Pure: the state machine mutates this model and, through its outputs, asks the driver to
    make the same change on disk; what is durable is known only from the driver's flush
    reports (:meth:`RaftLog.mark_flushed`). Offsets count records; a batch takes as many
    offsets as it has records. Epochs never go down along the log.

Algorithm
    ``_epochs`` lists ``(epoch, start offset)`` for each run of batches of one epoch.
    ``end_offset_for_epoch(e)``: the largest epoch ``<= e`` and the offset where it ends (the
    start of the next epoch, or the log end for the latest). ``validate(offset, epoch)``:
    a snapshot is needed if the position is below the log start, at it with another epoch, or
    has an epoch older than the snapshot's; otherwise the position is valid if
    ``end_offset_for_epoch(epoch)`` is that very epoch ending at or after ``offset``, and
    diverges (to that answer) if not.

Worked example
    Batches at 0-1 (epoch 1), 2-4 (epoch 1), 5 (epoch 3). ``end_offset_for_epoch(2)`` is
    ``(epoch 1, offset 5)``. A follower fetching at offset 7 with last epoch 2 gets
    ``diverging (1, 5)``; its own log says epoch 1 ends at 4 there, so it truncates to 4.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum

from rackwise.raft.messages import PRIMORDIAL_EPOCH, Batch, OffsetAndEpoch


class Validity(Enum):
    VALID = "valid"
    DIVERGING = "diverging"
    SNAPSHOT = "snapshot"


@dataclass(frozen=True, slots=True)
class ValidOffsetAndEpoch:
    """Kafka's ``ValidOffsetAndEpoch``: the verdict on a fetch position and the position that
    goes with it (the diverging end, or the snapshot to load)."""

    kind: Validity
    offset_and_epoch: OffsetAndEpoch


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A snapshot: the state after every record below ``snapshot_id.offset``."""

    snapshot_id: OffsetAndEpoch
    payload: bytes


class RaftLog:
    """The log after ``snapshot`` (or from offset 0), with ``batches`` durable."""

    def __init__(self, snapshot: Snapshot | None = None, batches: Iterable[Batch] = ()) -> None:
        self.snapshot = snapshot
        self._batches: list[Batch] = []
        self._bases: list[int] = []
        self._epochs: list[tuple[int, int]] = []
        self.append(tuple(batches))
        self.durable_end_offset = self.end_offset

    # --- positions -------------------------------------------------------------------------

    @property
    def start_offset(self) -> int:
        return self.snapshot.snapshot_id.offset if self.snapshot else 0

    @property
    def end_offset(self) -> int:
        return self._batches[-1].end_offset if self._batches else self.start_offset

    @property
    def last_fetched_epoch(self) -> int:
        if self._batches:
            return self._batches[-1].epoch
        return self.snapshot.snapshot_id.epoch if self.snapshot else PRIMORDIAL_EPOCH

    def end_offset_and_epoch(self) -> OffsetAndEpoch:
        return OffsetAndEpoch(self.last_fetched_epoch, self.end_offset)

    @property
    def batches(self) -> Sequence[Batch]:
        return self._batches

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        """The largest epoch ``<= epoch`` this log knows and the offset where it ends."""
        latest = self.last_fetched_epoch
        if epoch >= latest:
            return OffsetAndEpoch(latest, self.end_offset)
        i = bisect.bisect_right(self._epochs, (epoch, self.end_offset + 1)) - 1
        if i < 0:
            base_epoch = self.snapshot.snapshot_id.epoch if self.snapshot else PRIMORDIAL_EPOCH
            return OffsetAndEpoch(min(base_epoch, epoch), self.start_offset)
        return OffsetAndEpoch(self._epochs[i][0], self._epochs[i + 1][1])

    def epoch_at(self, end_offset: int) -> int:
        """The epoch of the record before ``end_offset`` (of the snapshot at the start)."""
        if end_offset == self.start_offset:
            return self._base_epoch()
        return self._batch_holding(end_offset - 1).epoch

    def validate(self, offset: int, epoch: int) -> ValidOffsetAndEpoch:
        """Kafka's ``validateOffsetAndEpoch`` for a fetch at ``offset`` after ``epoch``."""
        if self.start_offset == 0 and offset == 0:
            return ValidOffsetAndEpoch(Validity.VALID, OffsetAndEpoch(PRIMORDIAL_EPOCH, 0))
        snap = self.snapshot
        if snap is not None and (
            offset < self.start_offset
            or (offset == self.start_offset and epoch != snap.snapshot_id.epoch)
            or epoch < snap.snapshot_id.epoch
        ):
            return ValidOffsetAndEpoch(Validity.SNAPSHOT, snap.snapshot_id)
        end = self.end_offset_for_epoch(epoch)
        if end.epoch != epoch or end.offset < offset:
            return ValidOffsetAndEpoch(Validity.DIVERGING, end)
        return ValidOffsetAndEpoch(Validity.VALID, OffsetAndEpoch(epoch, offset))

    # --- reads -----------------------------------------------------------------------------

    def read(self, offset: int, max_batches: int, upto: int | None = None) -> tuple[Batch, ...]:
        """At most ``max_batches`` batches from ``offset`` (the first trimmed to start there),
        none starting at or after ``upto``."""
        if offset < self.start_offset or offset > self.end_offset:
            raise ValueError(
                f"BUG: read at {offset} outside the log [{self.start_offset}, {self.end_offset})"
            )
        if offset == self.end_offset:
            return ()
        i = bisect.bisect_right(self._bases, offset) - 1
        out: list[Batch] = []
        for batch in self._batches[i : i + max_batches]:
            if upto is not None and batch.base_offset >= upto:
                break
            out.append(_trimmed(batch, offset) if batch.base_offset < offset else batch)
        return tuple(out)

    def read_committed(self, offset: int, high_watermark: int) -> tuple[Batch, ...]:
        """Every batch from ``offset`` below ``high_watermark``, cut to end there."""
        batches = self.read(offset, len(self._batches) + 1, upto=high_watermark)
        if batches and batches[-1].end_offset > high_watermark:
            batches = (*batches[:-1], _cut(batches[-1], high_watermark))
        return batches

    # --- changes ---------------------------------------------------------------------------

    def append(self, batches: Sequence[Batch]) -> None:
        for batch in batches:
            if batch.base_offset != self.end_offset:
                raise ValueError(
                    f"BUG: batch at {batch.base_offset} appended to a log ending at "
                    f"{self.end_offset}"
                )
            if batch.epoch < self.last_fetched_epoch:
                raise ValueError(
                    f"BUG: batch of epoch {batch.epoch} after epoch {self.last_fetched_epoch}"
                )
            if not self._epochs or self._epochs[-1][0] != batch.epoch:
                self._epochs.append((batch.epoch, batch.base_offset))
            self._batches.append(batch)
            self._bases.append(batch.base_offset)

    def truncate_to(self, offset: int) -> None:
        """Drop every record at ``offset`` and after."""
        if offset < self.start_offset:
            raise ValueError(
                f"BUG: truncation to {offset}, below the log start {self.start_offset}"
            )
        while self._batches and self._batches[-1].base_offset >= offset:
            self._batches.pop()
            self._bases.pop()
        if self._batches and self._batches[-1].end_offset > offset:
            self._batches[-1] = _cut(self._batches[-1], offset)
        while self._epochs and self._epochs[-1][1] >= offset:
            self._epochs.pop()
        self.durable_end_offset = min(self.durable_end_offset, offset)

    def truncate_to_end_offset(self, diverging: OffsetAndEpoch) -> int:
        """Kafka's ``truncateToEndOffset``: cut where the leader says ``diverging.epoch``
        ends, or where this log's own last epoch before it ends; the offset cut at."""
        if diverging.epoch == PRIMORDIAL_EPOCH:
            offset = min(diverging.offset, self.end_offset)
        else:
            local = self.end_offset_for_epoch(diverging.epoch)
            if local.epoch == diverging.epoch:
                offset = min(local.offset, diverging.offset)
            else:
                offset = local.offset
        self.truncate_to(offset)
        return offset

    def mark_flushed(self, end_offset: int) -> None:
        """Everything below ``end_offset`` is on stable storage."""
        self.durable_end_offset = max(self.durable_end_offset, min(end_offset, self.end_offset))

    def take_snapshot(self, snapshot: Snapshot) -> None:
        """A snapshot of this log's own committed prefix: drop the batches it covers."""
        offset = snapshot.snapshot_id.offset
        if not self.start_offset <= offset <= self.end_offset:
            raise ValueError(
                f"BUG: snapshot at {offset} outside the log [{self.start_offset}, "
                f"{self.end_offset}]"
            )
        if snapshot.snapshot_id.epoch != self.epoch_at(offset):
            raise ValueError(
                f"BUG: snapshot id {snapshot.snapshot_id} but the record before "
                f"{offset} has epoch {self.epoch_at(offset)}"
            )
        kept = [
            _trimmed(b, offset) if b.base_offset < offset else b
            for b in self._batches
            if b.end_offset > offset
        ]
        self._reset(snapshot, kept)

    def install_snapshot(self, snapshot: Snapshot) -> None:
        """A snapshot fetched from the leader replaces the whole log."""
        self._reset(snapshot, [])
        self.durable_end_offset = snapshot.snapshot_id.offset

    def _reset(self, snapshot: Snapshot, batches: list[Batch]) -> None:
        durable = self.durable_end_offset
        self.snapshot = snapshot
        self._batches, self._bases, self._epochs = [], [], []
        self.append(batches)
        self.durable_end_offset = max(durable, snapshot.snapshot_id.offset)

    def _base_epoch(self) -> int:
        return self.snapshot.snapshot_id.epoch if self.snapshot else PRIMORDIAL_EPOCH

    def _batch_holding(self, offset: int) -> Batch:
        i = bisect.bisect_right(self._bases, offset) - 1
        if i < 0 or self._batches[i].end_offset <= offset:
            raise ValueError(f"BUG: no batch holds offset {offset}")
        return self._batches[i]


def _trimmed(batch: Batch, offset: int) -> Batch:
    """``batch`` without its records below ``offset``."""
    return Batch(offset, batch.epoch, batch.records[offset - batch.base_offset :], batch.is_control)


def _cut(batch: Batch, end_offset: int) -> Batch:
    """``batch`` without its records at ``end_offset`` and after."""
    return Batch(
        batch.base_offset,
        batch.epoch,
        batch.records[: end_offset - batch.base_offset],
        batch.is_control,
    )
