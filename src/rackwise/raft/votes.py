"""Elections (Kafka's ``KafkaRaftClient`` vote handling, with KIP-996's pre-vote).

Goals
    At most one leader per epoch, and only a voter whose log holds every committed record can
    win; a voter cut off from the others cannot disturb a healthy leader when it returns.

Constraints
    A vote is persisted before it is answered and is never given twice in one epoch. A
    pre-vote persists no vote and raises no epoch: the voter asked changes only if the
    prospective is already in a later epoch than its own.

Algorithm
    A request carries the sender's epoch (Kafka's ``ReplicaEpoch``): a candidate's new epoch,
    a prospective's current one (a pre-vote does not raise it). Either kind: refuse an older
    epoch (FENCED_LEADER_EPOCH); move to a newer one (UNATTACHED), even a leader, as Kafka
    does: that epoch was persisted by some voter, and a leader left behind in an older epoch
    would never be heard by it again. Vote: grant if no leader is known in the epoch, no other
    candidate got this voter's vote, and the candidate's log is at least as up to date (its
    last epoch, then its end offset, compared with this log's). Pre-vote: refuse if this voter
    leads or heard from its leader within the fetch timeout; grant on the log check otherwise.
    A majority of grants moves a prospective to CANDIDATE and a candidate to LEADER; enough
    refusals that no majority is left ends the round (:meth:`_election_failed`).

Worked example
    Voter 3 was cut off for a minute while voters 1 (leader) and 2 went on in epoch 4. Back,
    it asks for pre-votes in epoch 4 (to stand in 5): voter 2 heard from voter 1 200 ms ago
    and refuses, voter 1 leads and refuses; voter 3 goes back to fetching from voter 1, and
    epoch 4 goes on.
    Had voter 3 come back in epoch 5 (it persisted a vote for a candidate that lost), its
    pre-vote in epoch 5 moves voters 1 and 2 to epoch 5, and the quorum elects in epoch 6.
"""

from __future__ import annotations

from rackwise.common.error_codes import FENCED_LEADER_EPOCH, INVALID_REQUEST, NONE
from rackwise.raft.config import QuorumConfig
from rackwise.raft.log import RaftLog
from rackwise.raft.messages import (
    NO_LEADER,
    NO_VOTE,
    ElectionState,
    OffsetAndEpoch,
    Output,
    Send,
    VoteRequest,
    VoteResponse,
)
from rackwise.raft.roles import Role, majority


class VoteMixin:
    """The election half of :class:`~rackwise.raft.client.RaftClient`."""

    node_id: int
    voters: tuple[int, ...]
    config: QuorumConfig
    log: RaftLog
    election: ElectionState
    role: Role
    out: list[Output]
    granted: set[int]
    rejected: set[int]
    backoff_until_ms: int | None
    last_leader_contact_ms: int | None

    def _become_unattached(self, epoch: int, now_ms: int, voted_id: int = NO_VOTE) -> None:
        raise NotImplementedError

    def _become_candidate(self, now_ms: int) -> None:
        raise NotImplementedError

    def _become_leader(self, now_ms: int) -> None:
        raise NotImplementedError

    def _election_failed(self, now_ms: int) -> None:
        raise NotImplementedError

    def _send_vote_requests(self, *, is_pre_vote: bool) -> None:
        end = self.log.end_offset_and_epoch()
        request = VoteRequest(self.election.epoch, self.node_id, end.epoch, end.offset, is_pre_vote)
        for voter in self.voters:
            if voter != self.node_id:
                self.out.append(Send(voter, request))

    def _handle_vote_request(self, now_ms: int, source: int, req: VoteRequest) -> None:
        # A prospective may hold records of its own epoch; a candidate never of its new one.
        if req.is_pre_vote:
            illegal_epoch = req.last_offset_epoch > req.candidate_epoch
        else:
            illegal_epoch = req.last_offset_epoch >= req.candidate_epoch
        if req.candidate_id not in self.voters or illegal_epoch:
            self._answer_vote(source, req, INVALID_REQUEST, granted=False)
            return
        if req.candidate_epoch < self.election.epoch:
            self._answer_vote(source, req, FENCED_LEADER_EPOCH, granted=False)
            return
        if req.candidate_epoch > self.election.epoch:
            self._become_unattached(req.candidate_epoch, now_ms)
        if req.is_pre_vote:
            self._handle_pre_vote(now_ms, source, req)
            return
        state = self.election
        granted = (
            state.leader_id == NO_LEADER
            and state.voted_id in (NO_VOTE, req.candidate_id)
            and self._log_up_to_date(req)
        )
        if granted and state.voted_id == NO_VOTE:
            self._become_unattached(state.epoch, now_ms, voted_id=req.candidate_id)
        self._answer_vote(source, req, NONE, granted=granted)

    def _handle_pre_vote(self, now_ms: int, source: int, req: VoteRequest) -> None:
        """KIP-996, for a prospective in this voter's epoch: grant without persisting
        anything, unless this voter still hears from a leader (or leads)."""
        contact = self.last_leader_contact_ms
        hears_leader = self.role is Role.LEADER or (
            self.role in (Role.FOLLOWER, Role.PROSPECTIVE)
            and contact is not None
            and now_ms < contact + self.config.fetch_timeout_ms
        )
        self._answer_vote(source, req, NONE, granted=not hears_leader and self._log_up_to_date(req))

    def _log_up_to_date(self, req: VoteRequest) -> bool:
        theirs = OffsetAndEpoch(req.last_offset_epoch, req.last_offset)
        return theirs >= self.log.end_offset_and_epoch()

    def _answer_vote(self, source: int, req: VoteRequest, error: int, *, granted: bool) -> None:
        response = VoteResponse(
            error,
            self.election.leader_id,
            self.election.epoch,
            granted,
            req.is_pre_vote,
            req.candidate_epoch,
        )
        self.out.append(Send(source, response))

    def _handle_vote_response(self, now_ms: int, source: int, resp: VoteResponse) -> None:
        if resp.error_code != NONE:
            return
        nominee = Role.PROSPECTIVE if resp.is_pre_vote else Role.CANDIDATE
        wanted = self.role is nominee and resp.candidate_epoch == self.election.epoch
        if not wanted or self.backoff_until_ms is not None:
            return
        (self.granted if resp.vote_granted else self.rejected).add(source)
        self._maybe_count_votes(now_ms)

    def _maybe_count_votes(self, now_ms: int) -> None:
        needed = majority(len(self.voters))
        if len(self.granted) >= needed:
            if self.role is Role.PROSPECTIVE:
                self._become_candidate(now_ms)
            else:
                self._become_leader(now_ms)
        elif len(self.rejected) >= len(self.voters) - needed + 1:
            self._election_failed(now_ms)
