"""The quorum's state machine (Kafka's ``KafkaRaftClient`` without threads, sockets or files).

Goals
    Raft as KRaft runs it: epochs; elections by Vote after a pre-vote (KIP-996), won only by a
    log at least as up to date as a majority's; the leader announces itself (BeginQuorumEpoch)
    and resigns on shutdown (EndQuorumEpoch); followers pull the log (Fetch) and truncate a
    diverging tail; a voter below the leader's log start loads its snapshot (FetchSnapshot);
    records are committed once a majority of voters hold them durably.

Constraints
    Every input carries the time; every effect is an output, carried out in order by the
    driver: an :class:`~rackwise.raft.messages.PersistElectionState` before any message that
    follows it (a vote is on disk before it is answered), an append is reported back with
    :meth:`RaftClient.handle_flushed` once on stable storage. Randomness comes only from the
    injected source. A voter may restart at any moment from what it persisted (its
    election state, its flushed log and snapshot) and lose everything else.

Algorithm
    Roles and timers as in :mod:`rackwise.raft.roles`; the leader's accounting in
    :mod:`rackwise.raft.leader`; fetch handling on both sides in :mod:`rackwise.raft.fetch`.
    Any answer naming a higher epoch moves this voter to it (following the leader it names,
    if any) before the answer is looked at further.

Worked example
    Three voters start with empty logs in epoch 0. Voter 1's election timer fires first: it
    asks 2 and 3 for a pre-vote in epoch 0, gets both, persists ``(epoch 1, voted 1)``, asks
    for votes, gets voter 2's (which persisted ``(1, voted 1)`` before answering) and leads:
    it appends its LeaderChange batch at offset 0 and sends BeginQuorumEpoch. Voters 2 and 3
    fetch at offset 0, flush the batch, fetch at offset 1; the high watermark becomes 1.
"""

from __future__ import annotations

from collections.abc import Sequence

from rackwise.common import error_codes as codes
from rackwise.common.error_codes import (
    FENCED_LEADER_EPOCH,
    INVALID_REQUEST,
    NONE,
    NOT_LEADER_OR_FOLLOWER,
)
from rackwise.common.errors import RackwiseError
from rackwise.common.java import SupportsRandrange
from rackwise.raft.config import QuorumConfig
from rackwise.raft.fetch import FetchMixin
from rackwise.raft.leader import LeaderState
from rackwise.raft.log import RaftLog, Snapshot
from rackwise.raft.messages import (
    NO_LEADER,
    NO_VOTE,
    AppendBatches,
    Batch,
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    Commit,
    ElectionState,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    LeaderChange,
    LeaderChangeMark,
    Message,
    OffsetAndEpoch,
    Output,
    PersistElectionState,
    Send,
    VoteRequest,
    VoteResponse,
)
from rackwise.raft.roles import (
    Role,
    binary_exponential_backoff_ms,
    random_election_timeout_ms,
    strict_exponential_backoff_ms,
)
from rackwise.raft.votes import VoteMixin


class NotLeaderException(RackwiseError):
    """Kafka's NOT_LEADER_OR_FOLLOWER (6): a write offered to a voter that does not lead;
    ``leader_id`` is the leader it knows (NO_LEADER if none)."""

    error_code = codes.NOT_LEADER_OR_FOLLOWER
    retriable = True

    def __init__(self, message: str, leader_id: int, epoch: int) -> None:
        super().__init__(message)
        self.leader_id = leader_id
        self.epoch = epoch


class RaftClient(VoteMixin, FetchMixin):
    """Voter ``node_id`` of ``voters``, restarted from ``election`` and ``log`` (what it
    persisted). Call :meth:`start` once, then feed it inputs; each returns the outputs to
    carry out, in order."""

    def __init__(
        self,
        node_id: int,
        voters: Sequence[int],
        config: QuorumConfig,
        election: ElectionState,
        log: RaftLog,
        random: SupportsRandrange,
    ) -> None:
        if node_id not in voters:
            raise ValueError(f"node {node_id} is not one of the voters {sorted(voters)}")
        self.node_id = node_id
        self.voters = tuple(sorted(voters))
        self.config = config
        self.random = random
        self.log = log
        self.election = election
        self.role = Role.UNATTACHED
        self.high_watermark = log.start_offset
        self.applied_offset = log.start_offset
        self.out: list[Output] = []
        self.leader: LeaderState | None = None
        self.election_deadline_ms = 0
        self.backoff_until_ms: int | None = None
        self.retries = 0
        self.granted: set[int] = set()
        self.rejected: set[int] = set()
        self.prospective_leader_id = NO_LEADER
        self._init_follower_fields()

    # --- inputs ----------------------------------------------------------------------------

    def start(self, now_ms: int) -> list[Output]:
        """Take up the role the persisted state implies: a voter that led its epoch is
        RESIGNED (it may not lead that epoch again), one that knew a leader follows it. The
        only voter of its quorum stands at once, whatever it persisted (Kafka's
        ``KafkaRaftClient.initialize``): it leads the next epoch without an election
        timeout."""
        state = self.election
        if state.leader_id == self.node_id:
            self._become_resigned(now_ms)
        elif state.leader_id != NO_LEADER:
            self._become_follower(state.epoch, state.leader_id, now_ms)
        else:
            self._become_unattached(state.epoch, now_ms, voted_id=state.voted_id)
        if len(self.voters) == 1:
            self.election_deadline_ms = now_ms
        return self._poll(now_ms)

    def handle_message(self, now_ms: int, source: int, message: Message) -> list[Output]:
        """A message from voter ``source``."""
        if isinstance(message, VoteRequest):
            self._handle_vote_request(now_ms, source, message)
        elif isinstance(message, BeginQuorumEpochRequest):
            self._handle_begin_quorum_epoch(now_ms, source, message)
        elif isinstance(message, EndQuorumEpochRequest):
            self._handle_end_quorum_epoch(now_ms, source, message)
        elif isinstance(message, FetchRequest):
            self._handle_fetch_request(now_ms, message)
        elif isinstance(message, FetchSnapshotRequest):
            self._handle_fetch_snapshot_request(now_ms, message)
        elif self._maybe_follow_answer(now_ms, source, message.leader_id, message.leader_epoch):
            if isinstance(message, VoteResponse):
                self._handle_vote_response(now_ms, source, message)
            elif isinstance(message, BeginQuorumEpochResponse):
                if self.leader is not None and message.error_code == NONE:
                    self.leader.unacknowledged.discard(source)
            elif isinstance(message, FetchResponse):
                self._handle_fetch_response(now_ms, source, message)
            elif isinstance(message, FetchSnapshotResponse):
                self._handle_fetch_snapshot_response(now_ms, source, message)
        return self._poll(now_ms)

    def handle_flushed(self, now_ms: int, end_offset: int) -> list[Output]:
        """The log is on stable storage up to ``end_offset``."""
        self.log.mark_flushed(end_offset)
        if self.leader is not None:
            self.leader.record_local_flush(self.log.durable_end_offset, now_ms)
            self._maybe_advance_high_watermark(now_ms)
        return self._poll(now_ms)

    def tick(self, now_ms: int) -> list[Output]:
        """Time has passed: fire whatever timer is due."""
        return self._poll(now_ms)

    def propose(self, now_ms: int, records: Sequence[object]) -> tuple[int, list[Output]]:
        """Append ``records`` as one batch of the leader's epoch; the offset of its last
        record (committed once the high watermark passes it) and the outputs."""
        if self.role is not Role.LEADER or self.leader is None:
            raise NotLeaderException(
                f"node {self.node_id} is not the leader of epoch {self.election.epoch}",
                self.known_leader_id,
                self.election.epoch,
            )
        batch = Batch(self.log.end_offset, self.election.epoch, tuple(records))
        self._append_as_leader(batch, now_ms)
        return batch.last_offset, self._poll(now_ms)

    def snapshot_taken(self, now_ms: int, snapshot: Snapshot) -> list[Output]:
        """The driver stored ``snapshot`` of the committed prefix; the log may forget it."""
        if snapshot.snapshot_id.offset > self.applied_offset:
            raise ValueError(
                f"BUG: snapshot at {snapshot.snapshot_id.offset} beyond the applied offset "
                f"{self.applied_offset}"
            )
        self.log.take_snapshot(snapshot)
        return self._poll(now_ms)

    def resign(self, now_ms: int) -> list[Output]:
        """Graceful shutdown of a leader: EndQuorumEpoch to the others, then RESIGNED."""
        if self.leader is not None:
            self._resign(now_ms)
        return self._poll(now_ms)

    def snapshot_id_at(self, end_offset: int) -> OffsetAndEpoch:
        """The id a snapshot of everything below ``end_offset`` takes."""
        return OffsetAndEpoch(self.log.epoch_at(end_offset), end_offset)

    @property
    def known_leader_id(self) -> int:
        return self.election.leader_id

    @property
    def epoch(self) -> int:
        return self.election.epoch

    def next_deadline_ms(self) -> int | None:
        """When :meth:`tick` next has something to do (None: only an input can change it)."""
        times: list[int] = []
        if self.role in (Role.UNATTACHED, Role.RESIGNED, Role.PROSPECTIVE, Role.CANDIDATE):
            times.append(self.backoff_until_ms or self.election_deadline_ms)
        elif self.role is Role.FOLLOWER:
            times.append(self.fetch_deadline_ms)
            times.extend(self._follower_timers())
        elif self.leader is not None:
            if len(self.voters) > 1:
                times.append(self.leader.check_quorum_deadline_ms)
                times.append(self.leader.begin_quorum_resend_ms)
            times.extend(h.deadline_ms for h in self.leader.held.values())  # observers' too
        return min(times) if times else None

    # --- the loop --------------------------------------------------------------------------

    def _poll(self, now_ms: int) -> list[Output]:
        """Fire due timers, send what is due, and hand over the outputs."""
        self._fire_timers(now_ms)
        if self.role is Role.FOLLOWER:
            self._maybe_send_fetch(now_ms)
        self._emit_commits()
        out, self.out = self.out, []
        return out

    def _fire_timers(self, now_ms: int) -> None:
        role = self.role
        if role in (Role.UNATTACHED, Role.RESIGNED):
            if now_ms >= self.election_deadline_ms:
                self._become_prospective(now_ms)
        elif role in (Role.PROSPECTIVE, Role.CANDIDATE):
            if self.backoff_until_ms is not None:
                if now_ms >= self.backoff_until_ms:
                    self._become_prospective(now_ms)
            elif now_ms >= self.election_deadline_ms:
                self._election_failed(now_ms)
        elif role is Role.FOLLOWER:
            if now_ms >= self.fetch_deadline_ms:
                self._become_prospective(now_ms)
            else:
                self._follower_timeouts(now_ms)
        elif self.leader is not None:
            self._leader_timers(now_ms)

    def _leader_timers(self, now_ms: int) -> None:
        leader = self.leader
        assert leader is not None
        if leader.check_quorum_expired(now_ms):
            self._resign(now_ms)
            return
        if now_ms >= leader.begin_quorum_resend_ms:
            for voter in sorted(leader.unacknowledged):
                self._send_begin_quorum_epoch(voter)
            leader.begin_quorum_resend_ms = now_ms + self.config.fetch_timeout_ms // 2
        for replica_id, held in sorted(leader.held.items()):
            if now_ms >= held.deadline_ms:
                del leader.held[replica_id]
                self._answer_fetch(now_ms, held.request)

    # --- transitions -----------------------------------------------------------------------

    def _persist(self, state: ElectionState) -> None:
        if state != self.election:
            leader_changed = (state.epoch, state.leader_id) != (
                self.election.epoch,
                self.election.leader_id,
            )
            self.election = state
            self.out.append(PersistElectionState(state))
            if leader_changed:
                self.out.append(LeaderChange(state.leader_id, state.epoch))

    def _leave_role(self) -> None:
        if self.leader is not None:
            held, self.leader.held = self.leader.held, {}
            for replica_id in sorted(held):
                self._send_fetch_response(held[replica_id].request, NOT_LEADER_OR_FOLLOWER)
        self.leader = None
        self.backoff_until_ms = None
        self.granted, self.rejected = set(), set()
        self._reset_follower_fields()

    def _become_unattached(self, epoch: int, now_ms: int, voted_id: int = NO_VOTE) -> None:
        self._leave_role()
        self.role = Role.UNATTACHED
        self._persist(ElectionState(epoch, voted_id, NO_LEADER))
        self.election_deadline_ms = now_ms + random_election_timeout_ms(
            self.config.election_timeout_ms, self.random
        )

    def _become_follower(self, epoch: int, leader_id: int, now_ms: int) -> None:
        voted = self.election.voted_id if epoch == self.election.epoch else NO_VOTE
        if (epoch, leader_id) != (self.election.epoch, self.election.leader_id):
            self.last_leader_contact_ms = None
        self._leave_role()
        self.role = Role.FOLLOWER
        self.retries = 0
        self._persist(ElectionState(epoch, voted, leader_id))
        self.fetch_deadline_ms = now_ms + self.config.fetch_timeout_ms

    def _become_prospective(self, now_ms: int) -> None:
        self.prospective_leader_id = (
            self.election.leader_id if self.role is Role.FOLLOWER else NO_LEADER
        )
        self._leave_role()
        self.role = Role.PROSPECTIVE
        self.granted = {self.node_id}
        self.election_deadline_ms = now_ms + random_election_timeout_ms(
            self.config.election_timeout_ms, self.random
        )
        self._send_vote_requests(is_pre_vote=True)
        self._maybe_count_votes(now_ms)

    def _become_candidate(self, now_ms: int) -> None:
        self._leave_role()
        self.role = Role.CANDIDATE
        self._persist(ElectionState(self.election.epoch + 1, self.node_id, NO_LEADER))
        self.granted = {self.node_id}
        self.election_deadline_ms = now_ms + random_election_timeout_ms(
            self.config.election_timeout_ms, self.random
        )
        self._send_vote_requests(is_pre_vote=False)
        self._maybe_count_votes(now_ms)

    def _become_leader(self, now_ms: int) -> None:
        self._leave_role()
        self.role = Role.LEADER
        self.retries = 0
        epoch = self.election.epoch
        self._persist(ElectionState(epoch, self.node_id, self.node_id))
        start = self.log.end_offset
        self.leader = LeaderState(
            self.node_id, self.voters, epoch, start, self.config.fetch_timeout_ms, now_ms
        )
        self.leader.record_local_flush(self.log.durable_end_offset, now_ms)
        mark = LeaderChangeMark(self.node_id, self.voters)
        self._append_as_leader(Batch(start, epoch, (mark,), is_control=True), now_ms)
        for voter in self.voters:
            if voter != self.node_id:
                self._send_begin_quorum_epoch(voter)
        self._maybe_advance_high_watermark(now_ms)

    def _become_resigned(self, now_ms: int) -> None:
        self._leave_role()
        self.role = Role.RESIGNED
        self.election_deadline_ms = now_ms + random_election_timeout_ms(
            self.config.election_timeout_ms, self.random
        )

    def _resign(self, now_ms: int) -> None:
        assert self.leader is not None
        successors = self.leader.successors()
        request = EndQuorumEpochRequest(self.election.epoch, self.node_id, successors)
        for voter in successors:
            self.out.append(Send(voter, request))
        self._become_resigned(now_ms)

    def _election_failed(self, now_ms: int) -> None:
        """A pre-vote or vote round lost or timed out: follow the leader still known, or
        back off and stand again."""
        if self.role is Role.PROSPECTIVE and self.prospective_leader_id != NO_LEADER:
            self._become_follower(self.election.epoch, self.prospective_leader_id, now_ms)
            return
        self.retries += 1
        self.backoff_until_ms = now_ms + binary_exponential_backoff_ms(
            self.retries, self.config.election_backoff_max_ms, self.random
        )

    def _maybe_follow_answer(self, now_ms: int, source: int, leader_id: int, epoch: int) -> bool:
        """Move to a higher epoch named in an answer (following its leader if named), or
        learn the leader of this epoch; whether the answer is still worth reading."""
        if epoch > self.election.epoch:
            if leader_id in self.voters and leader_id != self.node_id:
                self._become_follower(epoch, leader_id, now_ms)
            else:
                self._become_unattached(epoch, now_ms)
            return False
        if (
            epoch == self.election.epoch
            and leader_id in self.voters
            and leader_id != self.node_id
            and self.election.leader_id == NO_LEADER
            and self.role is not Role.LEADER
        ):
            self._become_follower(epoch, leader_id, now_ms)
            return False
        return epoch == self.election.epoch or source not in self.voters

    # --- BeginQuorumEpoch / EndQuorumEpoch ------------------------------------------------

    def _send_begin_quorum_epoch(self, voter: int) -> None:
        self.out.append(Send(voter, BeginQuorumEpochRequest(self.election.epoch, self.node_id)))

    def _handle_begin_quorum_epoch(
        self, now_ms: int, source: int, req: BeginQuorumEpochRequest
    ) -> None:
        state = self.election
        if req.leader_epoch < state.epoch:
            error = FENCED_LEADER_EPOCH
        elif req.leader_id not in self.voters or (
            req.leader_epoch == state.epoch
            and (self.role is Role.LEADER or state.leader_id not in (NO_LEADER, req.leader_id))
        ):
            error = INVALID_REQUEST
        else:
            error = NONE
            if self.role is not Role.FOLLOWER or (state.epoch, state.leader_id) != (
                req.leader_epoch,
                req.leader_id,
            ):
                self._become_follower(req.leader_epoch, req.leader_id, now_ms)
            self.last_leader_contact_ms = now_ms
        answer = BeginQuorumEpochResponse(error, self.election.leader_id, self.election.epoch)
        self.out.append(Send(source, answer))

    def _handle_end_quorum_epoch(
        self, now_ms: int, source: int, req: EndQuorumEpochRequest
    ) -> None:
        state = self.election
        if req.leader_epoch < state.epoch:
            answer = EndQuorumEpochResponse(FENCED_LEADER_EPOCH, state.leader_id, state.epoch)
            self.out.append(Send(source, answer))
            return
        if req.leader_epoch > state.epoch and req.leader_id in self.voters:
            self._become_follower(req.leader_epoch, req.leader_id, now_ms)
        if self.role is Role.FOLLOWER and self.election.leader_id == req.leader_id:
            self.last_leader_contact_ms = None  # it said it is gone: grant pre-votes
            successors = req.preferred_successors
            position = successors.index(self.node_id) if self.node_id in successors else -1
            wait_ms = strict_exponential_backoff_ms(
                position, len(successors), self.config.election_backoff_max_ms
            )
            self.fetch_deadline_ms = min(self.fetch_deadline_ms, now_ms + wait_ms)
        answer = EndQuorumEpochResponse(NONE, self.election.leader_id, self.election.epoch)
        self.out.append(Send(source, answer))

    # --- the leader's log ------------------------------------------------------------------

    def _append_as_leader(self, batch: Batch, now_ms: int) -> None:
        self.log.append((batch,))
        self.out.append(AppendBatches((batch,)))
        self._answer_held_fetches(now_ms, voters_only=True)

    def _emit_commits(self) -> None:
        if self.high_watermark <= self.applied_offset:
            return
        start = max(self.applied_offset, self.log.start_offset)
        batches = self.log.read_committed(start, self.high_watermark)
        visible = tuple(b for b in batches if not b.is_control)
        self.applied_offset = self.high_watermark
        self.out.append(Commit(visible, self.high_watermark))
