"""What the leader tracks of its epoch (Kafka's ``LeaderState``): how far each voter holds the
log, the high watermark, whether a majority still fetches, who has yet to hear of the epoch,
and the fetches it holds until there is something to answer.

Goals
    A record is committed once a majority of voters hold it durably, and never earlier.
    Observers (brokers, which fetch but never vote) are tracked beside the voters for
    DescribeQuorum and never count towards the high watermark.

Constraints
    Raft's rule for a new leader: the high watermark moves only to an offset past the leader's
    epoch start offset (its own LeaderChange batch), so records of earlier epochs are exposed
    only behind one of the leader's own, which every later leader must then hold. A voter's
    fetch offset counts as durable on it (a voter fetches only after flushing what it has);
    the leader's own count is its flushed end offset. The high watermark never goes down.

Algorithm
    After a fetch or a local flush: sort the voters' durable end offsets, highest first, and
    take the one at index ``voters // 2`` (the leader included); if it is past the epoch start
    offset and past the current high watermark, it is the new high watermark.
    Check quorum: a timer of 1.5 fetch timeouts restarts whenever a majority of the other
    voters (with the leader, a majority of all) have fetched since it last restarted.

Worked example
    Five voters, epoch start offset 10. Durable ends: leader 14, voter 2 at 14, voter 3 at 12,
    voters 4 and 5 at 8. Sorted: 14, 14, 12, 8, 8; index 2 gives 12 > 10: the high watermark
    is 12. Had voter 3 been at 10 the high watermark would stay where it was.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from rackwise.raft.messages import FetchRequest
from rackwise.raft.roles import CHECK_QUORUM_TIMEOUT_FACTOR, majority

OBSERVER_SESSION_TIMEOUT_MS: Final = 300_000
"""An observer that has not fetched for this long is forgotten (Kafka's
``LeaderState.OBSERVER_SESSION_TIMEOUT_MS``, five minutes)."""


@dataclass(slots=True)
class ReplicaProgress:
    """One voter as the leader sees it. ``end_offset`` is None until it has fetched in this
    epoch; times are in ms."""

    end_offset: int | None = None
    last_fetch_time_ms: int | None = None
    last_caught_up_time_ms: int | None = None
    last_sent_high_watermark: int | None = None


@dataclass(slots=True)
class HeldFetch:
    """A fetch that found nothing to send, answered at ``deadline_ms`` at the latest."""

    request: FetchRequest
    deadline_ms: int


@dataclass(slots=True)
class LeaderState:
    """The leader ``local_id``'s view of ``voters`` in ``epoch``, which began at offset
    ``epoch_start_offset``."""

    local_id: int
    voters: tuple[int, ...]
    epoch: int
    epoch_start_offset: int
    fetch_timeout_ms: int
    now_ms: int
    replicas: dict[int, ReplicaProgress] = field(default_factory=dict)
    fetched_voters: set[int] = field(default_factory=set)
    check_quorum_deadline_ms: int = 0
    unacknowledged: set[int] = field(default_factory=set)
    """Voters that have neither fetched nor answered BeginQuorumEpoch in this epoch."""
    begin_quorum_resend_ms: int = 0
    held: dict[int, HeldFetch] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.replicas = {v: ReplicaProgress() for v in self.voters}
        self.check_quorum_deadline_ms = self.now_ms + self.check_quorum_timeout_ms
        self.unacknowledged = {v for v in self.voters if v != self.local_id}
        self.begin_quorum_resend_ms = self.now_ms + self.fetch_timeout_ms // 2

    @property
    def check_quorum_timeout_ms(self) -> int:
        return int(self.fetch_timeout_ms * CHECK_QUORUM_TIMEOUT_FACTOR)

    def check_quorum_expired(self, now_ms: int) -> bool:
        """Whether a majority has failed to fetch in time (never with a single voter)."""
        return len(self.voters) > 1 and now_ms >= self.check_quorum_deadline_ms

    def record_fetch(
        self, replica_id: int, fetch_offset: int, leader_end: int, now_ms: int
    ) -> None:
        """A fetch by ``replica_id`` at ``fetch_offset`` (durable on it) was accepted."""
        progress = self.record_contact(replica_id, now_ms)
        if progress is None:
            return
        progress.end_offset = fetch_offset
        if fetch_offset >= leader_end:
            progress.last_caught_up_time_ms = now_ms

    def record_contact(self, replica_id: int, now_ms: int) -> ReplicaProgress | None:
        """``replica_id`` fetched (a log or a snapshot) in this epoch: it follows this leader,
        as a voter or an observer (a broker). A negative id is a reader that is no replica
        and is not tracked (None), as Kafka's leader ignores it."""
        if replica_id < 0 or replica_id == self.local_id:
            return None
        progress = self.replicas.setdefault(replica_id, ReplicaProgress())
        progress.last_fetch_time_ms = now_ms
        if replica_id in self.voters:
            self.unacknowledged.discard(replica_id)
            self.fetched_voters.add(replica_id)
            if len(self.fetched_voters) >= majority(len(self.voters)) - 1:
                self.fetched_voters.clear()
                self.check_quorum_deadline_ms = now_ms + self.check_quorum_timeout_ms
        return progress

    def observers(self, now_ms: int) -> dict[int, ReplicaProgress]:
        """The replicas that fetch but do not vote (brokers), by id; those that have not
        fetched for :data:`OBSERVER_SESSION_TIMEOUT_MS` are forgotten first."""
        for replica_id in [r for r in self.replicas if r not in self.voters]:
            last = self.replicas[replica_id].last_fetch_time_ms
            if last is None or now_ms - last >= OBSERVER_SESSION_TIMEOUT_MS:
                del self.replicas[replica_id]
        return {r: p for r, p in sorted(self.replicas.items()) if r not in self.voters}

    def record_local_flush(self, durable_end_offset: int, now_ms: int) -> None:
        progress = self.replicas[self.local_id]
        progress.end_offset = durable_end_offset
        progress.last_fetch_time_ms = now_ms
        progress.last_caught_up_time_ms = now_ms

    def high_watermark_candidate(self, current: int) -> int | None:
        """The new high watermark if the majority's durable offset moved it, else None."""
        ends = sorted(
            (end for v in self.voters if (end := self.replicas[v].end_offset) is not None),
            reverse=True,
        )
        index = len(self.voters) // 2
        if len(ends) <= index:
            return None
        offset = ends[index]
        if offset > self.epoch_start_offset and offset > current:
            return offset
        return None

    def successors(self) -> tuple[int, ...]:
        """The other voters, most up to date first (EndQuorumEpoch's preferred successors)."""
        others = [v for v in self.voters if v != self.local_id]
        return tuple(sorted(others, key=lambda v: (-(self.replicas[v].end_offset or 0), v)))
