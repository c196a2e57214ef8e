"""Moving a replica between the log directories of one broker (KIP-113's future replica:
Kafka's ``ReplicaAlterLogDirsThread`` and ``Partition.maybeReplaceCurrentWithFutureReplica``).

Goals
    A future log in the destination directory, named as Kafka names it today
    (``<topic>-<partition>.<32 hex>-future``; KIP-113 called it ``.move``), is filled from the
    current log a step at a time while the current log goes on taking appends; the steps are
    paced by :class:`Throttle` to ``replica.alter.log.dirs.io.max.bytes.per.second``.

Constraints
    Files yes, sockets no. A step never holds a log's lock across both logs: it reads whole
    batches from the current log under that log's lock, then appends them to the future log
    under the future's, so appends to the current log wait at most one read. What the
    current log did meanwhile (truncated by a new leader, its start moved by retention or
    DeleteRecords) is caught at the next step: the future log follows it as a follower
    follows its leader, by leader epochs, so it never keeps a batch the current log lost.

Algorithm
    :func:`copy_step`: (1) if the current log's start passed the future's end, restart the
    future empty at that start, else move the future's start up to it; (2) find where the
    two logs part: the future's latest epoch ``E`` ends in the current log where the
    current's own epoch cache says (Kafka's OffsetsForLeaderEpoch between the two); truncate
    the future there, and never beyond the current's end; (3) copy whole batches from the
    future's end, at most ``max_bytes`` (but one whole batch at least). The caller repeats
    until :func:`caught_up`.

    :class:`Throttle` books each step before it runs: a step of ``n`` bytes may start at
    ``max(now, next)``, then ``next`` moves ``n / rate`` on (corrected by the bytes the step
    really copied). Steps are a tenth of a second's worth of bytes, so over any window of 10
    s the bytes copied are within one step (1 %) of the rate; an idle mover earns no credit.

Worked example
    Rate 10 MB/s: steps of 1 MB, one every 0.1 s. The current log holds offsets 0-999 at
    epoch 3, the future 0-499 at epoch 3: step (2) finds epoch 3 ends at 1000 in the
    current, nothing to truncate; step (3) copies from 500. Had the current been truncated
    to 400 and refilled at epoch 4 meanwhile, epoch 3 would end at 400 there: the future is
    truncated to 400 and fetches the epoch-4 batches next.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Final

from rackwise.common.errors import InvalidTopicException
from rackwise.storage.log import PartitionLog

FUTURE_DIR_SUFFIX: Final = "-future"
MAX_DIR_NAME_LENGTH: Final = 255
UNLIMITED_RATE: Final = 2**63 - 1
"""Kafka's default for ``replica.alter.log.dirs.io.max.bytes.per.second``: Long.MAX_VALUE."""
STEPS_PER_SECOND: Final = 10
MIN_STEP_BYTES: Final = 4096
MAX_STEP_BYTES: Final = 1024 * 1024
"""A step of an unthrottled move (Kafka's ``replica.fetch.max.bytes`` default)."""


def future_dir_name(topic: str, partition: int) -> str:
    """Kafka's logFutureDirName; INVALID_TOPIC_EXCEPTION if it would pass 255 characters."""
    name = f"{topic}-{partition}.{uuid.uuid4().hex}{FUTURE_DIR_SUFFIX}"
    if len(name) > MAX_DIR_NAME_LENGTH:
        raise InvalidTopicException(
            f"The future log directory name of {topic}-{partition} would be {len(name)} "
            f"characters long, more than the {MAX_DIR_NAME_LENGTH} a file system allows"
        )
    return name


def caught_up(current: PartitionLog, future: PartitionLog) -> bool:
    """Whether the future log holds everything the current one does."""
    return (
        future.log_end_offset == current.log_end_offset
        and future.log_start_offset == current.log_start_offset
    )


def copy_step(current: PartitionLog, future: PartitionLog, max_bytes: int) -> int:
    """One step of the move (module docstring); the bytes copied."""
    start = current.log_start_offset
    if future.log_end_offset < start or future.log_end_offset == future.log_start_offset:
        if future.log_start_offset != start or future.log_end_offset != start:
            future.truncate_fully_and_start_at(start)
    elif future.log_start_offset < start:
        future.advance_log_start_offset(start)
    parted = diverging_offset(current, future)
    if parted is not None:
        future.truncate_to(parted)
    if future.log_end_offset >= current.log_end_offset:
        return 0
    piece = current.read(
        future.log_end_offset,
        max_bytes=max_bytes,
        max_offset=current.log_end_offset,
        min_one_batch=True,
    )
    if not piece.records:
        return 0
    future.append_as_follower(bytes(piece.records))  # bytes already: no zero-copy asked
    return len(piece.records)


def diverging_offset(current: PartitionLog, future: PartitionLog) -> int | None:
    """Where the future log must be truncated to agree with the current (None: it agrees)."""
    end = min(future.log_end_offset, current.log_end_offset)
    latest = future.latest_epoch
    if latest is not None and end > future.log_start_offset:
        epoch, epoch_end = current.epochs.end_offset_for(latest, current.log_end_offset)
        if epoch >= 0 and epoch_end >= 0:
            end = min(end, epoch_end)
    return end if end < future.log_end_offset else None


class Throttle:
    """Paces the steps of every move of a broker to one shared rate (module docstring)."""

    def __init__(
        self, rate: Callable[[], int], clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate = rate
        """Bytes per second, read at every step (a dynamic config may change it)."""
        self.clock = clock
        self._next = 0.0

    def step_bytes(self) -> int:
        rate = self.rate()
        if rate >= UNLIMITED_RATE:
            return MAX_STEP_BYTES
        return max(MIN_STEP_BYTES, min(MAX_STEP_BYTES, rate // STEPS_PER_SECOND))

    def book(self, size: int) -> float:
        """Book a step of ``size`` bytes: the seconds to wait before it may start."""
        rate = self.rate()
        now = self.clock()
        if rate >= UNLIMITED_RATE or rate <= 0:
            self._next = now
            return 0.0
        start = max(now, self._next)
        self._next = start + size / rate
        return start - now

    def settle(self, booked: int, copied: int) -> None:
        """Correct the booking by what the step really copied (a whole batch may be more
        than the step, or the log may have held less)."""
        rate = self.rate()
        if 0 < rate < UNLIMITED_RATE:
            self._next += (copied - booked) / rate
