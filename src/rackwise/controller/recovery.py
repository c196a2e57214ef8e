"""Opening the controller's metadata log: the image rebuilt from the newest snapshot and the
records after it (Kafka's ``QuorumController`` loading its snapshot and log at start).

Constraints
    The records replay through the same :meth:`ControllerState.replay_batches` as every commit,
    so a recovered image is the image the commits made. A log that starts after the snapshot's
    end lost records in between: refused, never papered over.

Worked example
    A snapshot ending at offset 100 and five records after it: the state ends at offset 105 and
    :class:`Recovery` reads ``(100, <records in the snapshot>, 5)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from rackwise.common.collector import paused_gc
from rackwise.common.errors import RackwiseError
from rackwise.controller.log import MetadataLogLike
from rackwise.controller.state import ControllerState, ReplayBatch


@dataclass(frozen=True, slots=True)
class Recovery:
    """What opening the log found: the snapshot's end offset (None: no snapshot) and how many
    records came from the snapshot and from the log after it."""

    snapshot_end_offset: int | None
    num_snapshot_records: int
    num_log_records: int


def recover(log: MetadataLogLike, state: ControllerState) -> Recovery:
    """Replay ``log``'s snapshot and records into ``state`` (module docstring)."""
    reader = log.read_snapshot()
    start = 0 if reader is None else reader.snapshot_id.end_offset
    if log.start_offset > start:
        raise RackwiseError(
            f"the log starts at offset {log.start_offset} but the snapshot ends at {start}: "
            "the records between are lost"
        )
    counts = [0, 0]

    def batches() -> Iterator[ReplayBatch]:
        if reader is not None:
            for records in reader.batches():
                counts[0] += len(records)
                yield records, start, start - 1
        for batch in log.read_from(start):
            counts[1] += len(batch.records)
            yield batch.records, batch.base_offset, None

    with paused_gc():
        state.replay_batches(batches())
    state.end_offset = log.end_offset
    return Recovery(None if reader is None else start, counts[0], counts[1])
