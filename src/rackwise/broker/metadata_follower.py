"""A broker following the metadata log as an observer of the controller quorum: it fetches
``__cluster_metadata-0`` from the quorum's leader with the voters' own Fetch (and FetchSnapshot
when the leader answers with a snapshot id), never votes, and applies to its image what the
leader says is committed (Kafka's ``BrokerMetadataListener`` over ``KafkaRaftClient`` as an
observer).

Goals
    Keep an image equal to the controller's image at some offset, always advancing, with the
    offset of the last record applied known at every moment (heartbeats carry it, and the
    controller unfences a broker once that offset reaches its own registration). The leader
    lists the broker among DescribeQuorum's observers, with the offset it fetches at.

Constraints
    * State changes only by replay (:class:`~rackwise.image.MetadataDelta`); the records a
      fetch makes committed are applied as one delta, so a reader never sees half an answer.
    * The leader sends what its log holds, committed or not: batches past the high watermark
      wait in :attr:`MetadataFollower.pending` until a later answer's high watermark covers
      them, and a diverging epoch in an answer cuts only those (an applied record is
      committed, and a committed record is never cut).
    * :class:`MetadataFollower` is pure (batches in, image out); :class:`MetadataFetcher` is
      the asyncio loop around it, over one connection of its own (a long poll must not hold
      up heartbeats), speaking Kafka's Fetch v13 and FetchSnapshot v0 exactly as the voters do
      (:mod:`rackwise.node.quorum_wire`), with the broker's id as the replica id.
    * The leader is followed from the answers, as a Kafka observer follows it: an answer
      names the current leader and epoch; FENCED_LEADER_EPOCH or UNKNOWN_LEADER_EPOCH is
      retried in the epoch it names, NOT_LEADER_OR_FOLLOWER moves to the leader it names
      (by ``controller.quorum.voters``, or else by asking the controllers,
      :mod:`rackwise.broker.controller_channel`). A controller that cannot be reached is
      retried with a backoff, never given up on.
    * A fetch the leader holds past its long poll by more than the quorum's fetch timeout
      (``controller.quorum.fetch.timeout.ms``, 2 s) times out: a paused leader keeps its
      connections open, and this deadline is how the broker notices it, forgets it and asks
      the controllers who leads now.

Algorithm
    Fetch at the end of what is held (applied and pending) after the epoch of its last
    batch; the leader holds the fetch while it has nothing new (its fetch max wait, 500 ms).
    An answer with batches appends them to ``pending`` and raises the high watermark (capped
    at what is held); every whole pending batch below it is applied. An answer with a
    snapshot id reads the snapshot in chunks, checks it whole, replays it onto the empty
    image and goes on from its end offset. A diverging epoch below what is applied means the
    quorum's log lost what this broker applied: it starts again from nothing, as a new
    broker would.

Worked example
    A new broker fetches at 0 (epoch -1 at first: the leader answers FENCED_LEADER_EPOCH
    naming epoch 3, and the broker fetches again in epoch 3) and gets the batches at 0-4
    (the leader's mark, metadata.version, its own RegisterBrokerRecord, ...) with high
    watermark 5: ``applied_offset`` becomes 4, which its next heartbeat reports; the
    controller, seeing 4 >= its registration, unfences it. A CreateTopics appends 5-7: the
    held fetch is answered with them and high watermark 5 (pending), the next fetch at 8 is
    answered once the voters hold them, with high watermark 8, and 5-7 are applied.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Final

from rackwise.common.error_codes import (
    FENCED_LEADER_EPOCH,
    UNKNOWN_LEADER_EPOCH,
)
from rackwise.common.errors import RackwiseError
from rackwise.image import MetadataDelta, MetadataImage
from rackwise.metalog.api import SnapshotId
from rackwise.metalog.snapshots import FileSnapshotReader
from rackwise.net import KafkaConnection
from rackwise.raft.messages import (
    Batch,
    LeaderChangeMark,
    OffsetAndEpoch,
)

LOG: Final = logging.getLogger("rackwise.broker.metadata")

NO_OFFSET: Final = -1
"""``applied_offset`` before any record is applied."""
NO_EPOCH: Final = -1
NO_LEADER: Final = -1
DEFAULT_MAX_WAIT_MS: Final = 500
"""How long the leader may hold a fetch while there is nothing new (Kafka's
``replica.fetch.wait.max.ms``; the leader holds it at most its own fetch max wait)."""
RETRY_BACKOFF_S: Final = 0.1
MAX_RETRY_BACKOFF_S: Final = 1.0
LEADER_ERRORS: Final = frozenset({FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH})
"""Answers in another epoch than the fetch's: fetch again in the epoch they name."""

Address = tuple[str, int]


class MetadataFetchError(RackwiseError):
    """A fetch answered with an error the follower cannot act on (the error code and the
    controller's message)."""

    retriable = True


class MetadataFollower:
    """The image and where in the log it stands (pure). ``next_offset`` is the offset of the
    next record to apply; ``applied_offset`` the last one applied (-1: none); ``pending`` the
    batches fetched past the high watermark, not applied yet."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Forget everything: the next fetch starts from offset 0."""
        self.image = MetadataImage()
        self.next_offset = 0
        self.applied_epoch = NO_EPOCH
        self.pending: list[Batch] = []
        self.high_watermark = NO_OFFSET
        self.num_records_applied = 0

    @property
    def applied_offset(self) -> int:
        return self.next_offset - 1

    @property
    def fetch_offset(self) -> int:
        """Where the next fetch starts: the end of what is held."""
        return self.pending[-1].end_offset if self.pending else self.next_offset

    @property
    def last_fetched_epoch(self) -> int:
        return self.pending[-1].epoch if self.pending else self.applied_epoch

    @property
    def is_caught_up(self) -> bool:
        """Whether every record the leader had committed at the last answer is applied."""
        return self.high_watermark >= 0 and self.next_offset >= self.high_watermark

    def append(self, batches: tuple[Batch, ...], high_watermark: int = NO_OFFSET) -> int:
        """Hold ``batches`` (the answer to a fetch at :attr:`fetch_offset`; a first batch
        starting before it is trimmed) and apply what ``high_watermark`` commits; returns how
        many records were applied. A gap, or a record the image refuses, raises and leaves
        the image and what is held as they were."""
        held = list(self.pending)
        end = self.fetch_offset
        for batch in batches:
            if batch.base_offset > end:
                raise MetadataFetchError(
                    f"BUG: the metadata log answered a batch at offset {batch.base_offset} "
                    f"when offset {end} was asked for"
                )
            if batch.end_offset <= end:
                continue
            skip = end - batch.base_offset
            if skip > 0:
                batch = Batch(end, batch.epoch, batch.records[skip:])
            held.append(batch)
            end = batch.end_offset
        hw = max(self.high_watermark, min(high_watermark, end))
        applied = self._apply_committed(held, hw)
        self.high_watermark = hw
        return applied

    def _apply_committed(self, held: list[Batch], high_watermark: int) -> int:
        ready = 0
        while ready < len(held) and held[ready].end_offset <= high_watermark:
            ready += 1
        if ready:
            delta = MetadataDelta(self.image)
            for batch in held[:ready]:  # the leader's mark is the quorum's, not the image's
                delta.replay_all(r for r in batch.records if not isinstance(r, LeaderChangeMark))
            self.image = delta.apply()
            last = held[ready - 1]
            self.next_offset, self.applied_epoch = last.end_offset, last.epoch
        applied = sum(len(b.records) for b in held[:ready])
        self.num_records_applied += applied
        self.pending = held[ready:]
        return applied

    def truncate(self, diverging: OffsetAndEpoch) -> bool:
        """Cut the pending batches where the leader says ``diverging.epoch`` ends (or where
        this follower's own last epoch before it ends); False when that is below what is
        applied, and the follower has started again from nothing."""
        local_end = self.next_offset
        for batch in self.pending:
            if batch.epoch > diverging.epoch:
                break
            local_end = batch.end_offset
        cut = min(diverging.offset, local_end)
        if cut < self.next_offset:
            LOG.warning(
                "the metadata log diverges at offset %d (epoch %d), before offset %d that "
                "this broker applied: starting again from 0",
                cut,
                diverging.epoch,
                self.next_offset,
            )
            self.reset()
            return False
        self.pending = [b for b in self.pending if b.end_offset <= cut]
        return True

    def load_snapshot(self, snapshot_id: SnapshotId, data: bytes) -> int:
        """Replace the image with the snapshot in ``data`` (a whole snapshot file, checked);
        fetching goes on from its end offset. Returns the number of records loaded."""
        reader = FileSnapshotReader(Path(snapshot_id.file_name()), data)
        if reader.snapshot_id != snapshot_id:
            raise MetadataFetchError(
                f"asked for snapshot {snapshot_id}, got snapshot {reader.snapshot_id}"
            )
        delta = MetadataDelta()
        for records in reader.batches():
            delta.replay_all(records)
        self.image = delta.apply()
        self.next_offset = snapshot_id.end_offset
        self.applied_epoch = snapshot_id.epoch
        self.pending = []
        self.high_watermark = max(self.high_watermark, snapshot_id.end_offset)
        self.num_records_applied += reader.record_count
        return reader.record_count


Connector = Callable[[], Awaitable[KafkaConnection]]
"""Opens a connection to the quorum's leader as the controllers name it (raises
NetworkException when it cannot)."""
AddressConnector = Callable[[Address], Awaitable[KafkaConnection]]
"""Opens a connection to the controller at an address."""
