"""The controller process' snapshot worker: a snapshot the controller hands out
(:meth:`Controller.maybe_begin_snapshot <rackwise.controller.Controller.maybe_begin_snapshot>`)
is listed, encoded, written and flushed on a worker thread, at most one at a time, while commits
go on (as Kafka's snapshot generator writes off the request path).

Constraints
    * A snapshot never stalls the event loop: the controller hands out the immutable image as
      of the snapshot's end offset, and only the worker thread touches it. Heartbeats keep
      being answered meanwhile, so no healthy broker's lease runs out.
    * Segments it frees are deleted only after its rename (by the log).
    * A failed snapshot is logged and tried again at the next threshold; it is never fatal and
      never visible (its ``.part`` file is deleted).
    * Logged, one line each: snapshots written (end offset, bytes, seconds) and failures.

Worked example
    A commit crosses ``metadata.log.max.record.bytes.between.snapshots``: the next
    :meth:`SnapshotWorker.maybe_start` gets a job ending at offset 5000 and writes
    ``00000000000000005000-<epoch>.checkpoint`` on a thread; the controller is told
    :meth:`~rackwise.controller.Controller.snapshot_written`, and the next job is due a
    threshold later.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Final

from rackwise.common.collector import paused_gc
from rackwise.controller import Controller, SnapshotJob
from rackwise.metalog import SnapshotId
from rackwise.metalog.replicated import ReplicatedMetadataLog

LOG: Final = logging.getLogger("rackwise.controller")


class SnapshotWorker:
    """Writes the controller's snapshots on a worker thread, one at a time."""

    def __init__(self) -> None:
        self._task: asyncio.Task[None] | None = None

    @property
    def busy(self) -> bool:
        """Whether a snapshot is being written."""
        return self._task is not None

    def maybe_start(self, controller: Controller, log: ReplicatedMetadataLog) -> None:
        """Start writing the snapshot ``controller`` hands out, if one is due and none is being
        written (on the event loop, between group commits)."""
        if self._task is not None:
            return
        job = controller.maybe_begin_snapshot()
        if job is not None:
            self._task = asyncio.get_running_loop().create_task(self._write(controller, log, job))

    async def wait(self) -> None:
        """Until the snapshot being written, if any, is done (the thread cannot be
        interrupted)."""
        if self._task is not None:
            await asyncio.shield(self._task)

    async def _write(
        self, controller: Controller, log: ReplicatedMetadataLog, job: SnapshotJob
    ) -> None:
        """Write ``job`` on a worker thread; log the outcome (never fatal)."""
        started = time.monotonic()
        try:
            snapshot_id, size = await asyncio.to_thread(write_snapshot, log, job)
        except Exception as e:
            controller.snapshot_failed(job)
            LOG.error(
                "failed to write the snapshot ending at offset %d, trying again at the next "
                "threshold: %s: %s",
                job.end_offset,
                type(e).__name__,
                " ".join(str(e).split()),
            )
        else:
            controller.snapshot_written(job)
            LOG.info(
                "wrote snapshot %s: end offset %d, %d bytes, %.3f s",
                snapshot_id.file_name(),
                snapshot_id.end_offset,
                size,
                time.monotonic() - started,
            )
        finally:
            self._task = None


def write_snapshot(log: ReplicatedMetadataLog, job: SnapshotJob) -> tuple[SnapshotId, int]:
    """On a worker thread: the job's image as records, written as a snapshot; its id and
    size in bytes. The cyclic collector is paused meanwhile (the records are millions of
    objects without cycles, and a full collection would hold the interpreter for seconds)."""
    with paused_gc():
        snapshot_id = log.write_snapshot(job.image.to_records(), job.end_offset)
    return snapshot_id, (Path(log.directory) / snapshot_id.file_name()).stat().st_size
