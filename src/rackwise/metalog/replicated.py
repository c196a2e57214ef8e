"""The metadata log replicated by the controller quorum: a :class:`MetadataLog` whose appends
go through the Raft state machine (:class:`~rackwise.raft.RaftClient`) and whose readers see
only what a majority holds.

Goals
    The controller keeps calling ``append_batches`` as over the file log; on the leader that
    appends (and fsyncs) locally and the records become committed once a majority of voters
    hold them; readers (brokers fetching) see nothing beyond the high watermark; followers'
    logs follow the leader's, cut where they diverge and replaced by its snapshot when too far
    behind. Election state is in Kafka's ``quorum-state`` file beside the segments.

Constraints
    Single-threaded: every method but :meth:`ReplicatedMetadataLog.write_snapshot` and the
    reads runs on one thread (the event loop), which carries out the state machine's outputs
    in order: the quorum state is written (fsynced) before any message that follows it, an
    append is fsynced before the state machine hears of it. Sending is the caller's
    (``send``), as is calling :meth:`tick` when :meth:`next_deadline_ms` comes.
    A log written without a quorum-state file (by a single controller of an earlier release)
    is taken over as is: the quorum starts in the epoch of its last batch.
    The leader's mark at the start of its epoch is stored as Kafka stores it, a control batch
    holding a LeaderChangeMessage, which the controller's replay skips.

Algorithm
    ``append_batches``: refuse unless leading (NOT_CONTROLLER, naming the leader known);
    propose each batch, then carry out the outputs: consecutive appends of one epoch go to the
    file log with one fsync, then ``handle_flushed``, whose outputs are carried out in turn.
    ``write_snapshot`` (on a worker thread) waits until the high watermark reaches the
    snapshot's end offset, so no snapshot holds an uncommitted record; the loop thread hands
    the new snapshot to the state machine at its next :meth:`tick`.

Worked example
    Three voters; voter 1 leads epoch 2. The controller appends a TopicRecord batch at offset
    9: the file log fsyncs it; voters 2 and 3 fetch at 9 (receiving it), flush, fetch at 10;
    at the first of those fetches the high watermark becomes 10, ``on_commit(10)`` is called,
    and the CreateTopics that wrote it is answered.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Final

from rackwise.common import error_codes as codes
from rackwise.common.errors import OffsetOutOfRangeException, RackwiseError
from rackwise.common.java import SupportsRandrange
from rackwise.metalog.api import (
    DEFAULT_MAX_RECORD_BYTES_BETWEEN_SNAPSHOTS,
    DEFAULT_SEGMENT_BYTES,
    MetadataLog,
    MetadataLogError,
    SnapshotId,
    SnapshotReader,
)
from rackwise.metalog.quorum_state import FileQuorumStateStore
from rackwise.metalog.raft_file_log import RaftFileLog
from rackwise.raft import QuorumConfig, RaftClient, RaftLog, Role, Snapshot
from rackwise.raft.messages import (
    PRIMORDIAL_EPOCH,
    AppendBatches,
    Batch,
    Commit,
    ElectionState,
    InstallSnapshot,
    LeaderChange,
    LeaderChangeMark,
    Message,
    OffsetAndEpoch,
    Output,
    PersistElectionState,
    Send,
    TruncateTo,
)
from rackwise.records.batch import RecordBatch, check_batch
from rackwise.records.control import LeaderChangeMessage

SNAPSHOT_COMMIT_WAIT_S: Final = 30.0
"""How long a snapshot waits for the high watermark to reach its end offset."""


class NotControllerException(RackwiseError):
    """Kafka's NOT_CONTROLLER (41): this controller does not lead the quorum; ``leader_id`` is
    the leader it knows (-1 if none)."""

    error_code = codes.NOT_CONTROLLER
    retriable = True

    def __init__(self, message: str, leader_id: int, epoch: int) -> None:
        super().__init__(message)
        self.leader_id = leader_id
        self.epoch = epoch


def stored_records(batch: Batch) -> list[Any]:
    """A batch's records as the file log stores them (the leader's mark as Kafka's
    LeaderChangeMessage, which makes its batch a control batch)."""
    return [
        LeaderChangeMessage(r.leader_id, r.voters, ()) if isinstance(r, LeaderChangeMark) else r
        for r in batch.records
    ]


def raft_batch(batch: RecordBatch) -> Batch:
    """A stored batch as the quorum's state machine holds it (a LeaderChangeMessage as the
    leader's mark)."""
    records = tuple(
        LeaderChangeMark(r.leader_id, r.voters) if isinstance(r, LeaderChangeMessage) else r
        for r in batch.records
    )
    return Batch(batch.base_offset, max(batch.epoch, PRIMORDIAL_EPOCH), records, batch.is_control)


class ReplicatedMetadataLog(MetadataLog):
    """Voter ``node_id``'s replica of the metadata log in ``directory``."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        node_id: int,
        voters: Sequence[int],
        config: QuorumConfig,
        *,
        random: SupportsRandrange,
        clock: Callable[[], int],
        send: Callable[[int, Message], None],
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        max_record_bytes_between_snapshots: int = DEFAULT_MAX_RECORD_BYTES_BETWEEN_SNAPSHOTS,
    ) -> None:
        self.file = RaftFileLog(
            directory,
            segment_bytes=segment_bytes,
            max_record_bytes_between_snapshots=max_record_bytes_between_snapshots,
        )
        self.max_record_bytes_between_snapshots = max_record_bytes_between_snapshots
        self.recovery_events = self.file.recovery_events
        self.store = FileQuorumStateStore(directory)
        self.voters = tuple(sorted(voters))
        self.clock = clock
        self.send = send
        self.on_commit: Callable[[int], None] = _ignore
        self.on_leader_change: Callable[[int, int], None] = _ignore_pair
        self.on_snapshot_installed: Callable[[], None] = _nothing
        self._hw_changed = threading.Condition()
        self._high_watermark = 0
        self._hw_epoch = PRIMORDIAL_EPOCH
        self.snapshot_epoch: int | None = None
        """The epoch the next snapshot's image was taken in (set by the active controller as it
        hands out a snapshot job); None: any."""
        raft_log = self._load_raft_log()
        election = self.store.read()
        if election.epoch < raft_log.last_fetched_epoch:
            election = ElectionState(raft_log.last_fetched_epoch)
        self.raft = RaftClient(node_id, self.voters, config, election, raft_log, random)
        self._high_watermark = self.raft.high_watermark

    def _load_raft_log(self) -> RaftLog:
        sid = self.file.latest_snapshot_id()
        snapshot = None
        start = self.file.start_offset
        if sid is not None:
            snapshot = Snapshot(
                OffsetAndEpoch(sid.epoch, sid.end_offset), self.file.snapshot_bytes(sid)
            )
            start = sid.end_offset
        return RaftLog(snapshot, [raft_batch(b) for b in self.file.read_from(start)])

    @property
    def directory(self) -> Path:
        return self.file.directory

    def _file_snapshot(self, sid: SnapshotId) -> Snapshot:
        return Snapshot(OffsetAndEpoch(sid.epoch, sid.end_offset), self.file.snapshot_bytes(sid))

    # --- the quorum ------------------------------------------------------------------------

    def start(self) -> None:
        self._carry_out(self.raft.start(self.clock()))

    def handle_message(self, source: int, message: Message) -> None:
        self._carry_out(self.raft.handle_message(self.clock(), source, message))

    def tick(self) -> None:
        self._adopt_snapshot()
        self._carry_out(self.raft.tick(self.clock()))

    def resign(self) -> None:
        self._carry_out(self.raft.resign(self.clock()))

    def next_deadline_ms(self) -> int | None:
        return self.raft.next_deadline_ms()

    @property
    def is_leader(self) -> bool:
        return self.raft.role is Role.LEADER

    @property
    def leader_id(self) -> int:
        return self.raft.known_leader_id

    @property
    def epoch(self) -> int:
        return self.raft.epoch

    @property
    def high_watermark(self) -> int:
        """The end of what is committed: readers see nothing at or past it."""
        return self._high_watermark

    @property
    def epoch_start_offset(self) -> int | None:
        """Where the leader's epoch began (None unless leading)."""
        leader = self.raft.leader
        return leader.epoch_start_offset if leader is not None else None

    def _carry_out(self, outputs: list[Output]) -> None:
        pending = list(outputs)
        while pending:
            output = pending.pop(0)
            if isinstance(output, AppendBatches):
                batches = list(output.batches)
                while pending and isinstance(pending[0], AppendBatches):
                    next_output = pending.pop(0)
                    assert isinstance(next_output, AppendBatches)
                    batches.extend(next_output.batches)
                self._append(batches)
                pending = self.raft.handle_flushed(self.clock(), self.file.end_offset) + pending
            elif isinstance(output, PersistElectionState):
                self.store.write(output.state, self.voters)
            elif isinstance(output, Send):
                self.send(output.destination, output.message)
            elif isinstance(output, TruncateTo):
                self.file.truncate_to(output.offset)
            elif isinstance(output, InstallSnapshot):
                sid = SnapshotId(output.snapshot_id.offset, output.snapshot_id.epoch)
                self.file.replace_with_snapshot(sid, output.payload)
                self.on_snapshot_installed()
            elif isinstance(output, Commit):
                self._set_high_watermark(output.high_watermark)
            elif isinstance(output, LeaderChange):
                with self._hw_changed:
                    self._hw_changed.notify_all()  # a snapshot waiting in the old epoch gives up
                self.on_leader_change(output.leader_id, output.epoch)

    def _append(self, batches: list[Batch]) -> None:
        start = 0
        while start < len(batches):
            epoch = batches[start].epoch
            end = start
            while end < len(batches) and batches[end].epoch == epoch:
                end += 1
            if batches[start].base_offset != self.file.end_offset:
                raise MetadataLogError(
                    f"BUG: batch at {batches[start].base_offset}, the file log ends at "
                    f"{self.file.end_offset}"
                )
            self.file.append_batches([stored_records(b) for b in batches[start:end]], epoch)
            start = end

    def _set_high_watermark(self, offset: int) -> None:
        with self._hw_changed:
            self._high_watermark = offset
            self._hw_epoch = self.raft.epoch
            self._hw_changed.notify_all()
        self.on_commit(offset)

    def _adopt_snapshot(self) -> None:
        """Tell the state machine of a snapshot written since (on a worker thread)."""
        sid = self.file.latest_snapshot_id()
        known = self.raft.log.snapshot
        if sid is None or (known is not None and known.snapshot_id.offset >= sid.end_offset):
            return
        if sid.end_offset > self.raft.applied_offset:
            return
        snapshot = Snapshot(
            OffsetAndEpoch(sid.epoch, sid.end_offset), self.file.snapshot_bytes(sid)
        )
        self._carry_out(self.raft.snapshot_taken(self.clock(), snapshot))

    # --- MetadataLog -----------------------------------------------------------------------

    def append_batches(self, batches: Sequence[Sequence[Any]], epoch: int) -> list[int]:
        """Propose ``batches`` in the quorum's epoch (``epoch`` is the caller's and is not
        used); each batch's last offset once durable here. Committed later: see
        :attr:`high_watermark`."""
        if not self.is_leader:
            raise NotControllerException(
                f"controller {self.raft.node_id} is not the active controller of epoch "
                f"{self.epoch}",
                self.leader_id,
                self.epoch,
            )
        self._adopt_snapshot()  # a single voter's leader has no timer to tick it
        lasts: list[int] = []
        outputs: list[Output] = []
        for records in batches:
            last, more = self.raft.propose(self.clock(), list(records))
            lasts.append(last)
            outputs.extend(more)
        self._carry_out(outputs)
        return lasts

    @property
    def start_offset(self) -> int:
        return self.file.start_offset

    @property
    def end_offset(self) -> int:
        return self.file.end_offset

    @property
    def latest_epoch(self) -> int:
        return self.file.latest_epoch

    def read_from(self, offset: int) -> Iterator[RecordBatch]:
        return self.file.read_from(offset)

    def read_raw(self, offset: int, max_bytes: int) -> bytes:
        """Whole committed batches from ``offset`` (none at or past the high watermark)."""
        high_watermark = self._high_watermark
        if not self.start_offset <= offset <= self.end_offset:
            raise OffsetOutOfRangeException(
                f"offset {offset} is outside the log's range {self.start_offset} to "
                f"{self.end_offset}"
            )
        if offset >= high_watermark:
            return b""
        data = self.file.read_raw(offset, max_bytes)
        pos = 0
        while pos < len(data):
            header = check_batch(data, pos)
            if header.base_offset >= high_watermark:
                break
            pos += header.size
        return data[:pos]

    def snapshot_ids(self) -> list[SnapshotId]:
        return self.file.snapshot_ids()

    def read_snapshot(self, snapshot_id: SnapshotId | None = None) -> SnapshotReader | None:
        return self.file.read_snapshot(snapshot_id)

    def write_snapshot(self, records: Iterable[Any], end_offset: int) -> SnapshotId:
        """On a worker thread: wait for ``end_offset`` to be committed in the epoch the image
        was taken in (:attr:`snapshot_epoch`), then write. Once the epoch has moved on, the
        records the image holds may have been cut: the snapshot is refused."""
        epoch = self.snapshot_epoch

        def settled() -> bool:
            moved_on = epoch is not None and self.raft.epoch != epoch
            return moved_on or self._high_watermark >= end_offset

        with self._hw_changed:
            self._hw_changed.wait_for(settled, SNAPSHOT_COMMIT_WAIT_S)
            committed = self._high_watermark >= end_offset and epoch in (None, self._hw_epoch)
            if not committed:
                raise MetadataLogError(
                    f"snapshot at {end_offset} of epoch {epoch}: not committed in that epoch "
                    f"(high watermark {self._high_watermark} in epoch {self._hw_epoch})"
                )
        return self.file.write_snapshot(records, end_offset)

    @property
    def bytes_since_snapshot(self) -> int:
        return self.file.bytes_since_snapshot

    def close(self) -> None:
        self.file.close()


def _ignore(offset: int) -> None:
    """No listener."""


def _ignore_pair(leader_id: int, epoch: int) -> None:
    """No listener."""


def _nothing() -> None:
    """No listener."""
