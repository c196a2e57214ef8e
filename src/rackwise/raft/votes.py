"""Elections (Kafka's ``KafkaRaftClient`` vote handling, with KIP-996's pre-vote).

Goals
    At most one leader per epoch, and only a voter whose log holds every committed record can
    win; a voter cut off from the others cannot disturb a healthy leader when it returns.

Constraints
    A vote is persisted before it is answered and is never given twice in one epoch. A
    pre-vote changes nothing on the voter asked (no epoch, no vote persisted).

Algorithm
    Vote: refuse an older epoch; move to a newer one (UNATTACHED); grant if no leader is known
    in the epoch, no other candidate got this voter's vote, and the candidate's log is at
    least as up to date (its last epoch, then its end offset, compared with this log's).
    Pre-vote for epoch ``e``: refuse if this voter is already in ``e`` or later, leads, or
    heard from its leader within the fetch timeout; grant on the log check otherwise.
    A majority of grants moves a prospective to CANDIDATE and a candidate to LEADER; enough
    refusals that no majority is left ends the round (:meth:`_election_failed`).

Worked example
    Voter 3 was cut off for a minute while voters 1 (leader) and 2 went on in epoch 4. Back,
    it asks for pre-votes for epoch 5: voter 2 heard from voter 1 200 ms ago and refuses,
    voter 1 leads and refuses; voter 3 goes back to fetching from voter 1, and epoch 4 goes on.
"""

from __future__ import annotations

from rackwise.raft.config import QuorumConfig
from rackwise.raft.log import RaftLog
from rackwise.raft.messages import (
    FENCED_LEADER_EPOCH,
    INVALID_REQUEST,
    NO_LEADER,
    NO_VOTE,
    NONE,
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
        epoch = self.election.epoch + 1 if is_pre_vote else self.election.epoch
        request = VoteRequest(epoch, self.node_id, end.epoch, end.offset, is_pre_vote)
        for voter in self.voters:
            if voter != self.node_id:
                self.out.append(Send(voter, request))

    def _handle_vote_request(self, now_ms: int, source: int, req: VoteRequest) -> None:
        if req.candidate_id not in self.voters or req.last_offset_epoch >= req.candidate_epoch:
            self._answer_vote(source, req, INVALID_REQUEST, granted=False)
            return
        if req.is_pre_vote:
            self._handle_pre_vote(now_ms, source, req)
            return
        if req.candidate_epoch < self.election.epoch:
            self._answer_vote(source, req, FENCED_LEADER_EPOCH, granted=False)
            return
        if req.candidate_epoch > self.election.epoch:
            self._become_unattached(req.candidate_epoch, now_ms)
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
        """KIP-996: grant without changing anything, unless this voter still hears from a
        leader (or leads) or already is in the epoch the prospective would start."""
        if req.candidate_epoch <= self.election.epoch:
            self._answer_vote(source, req, NONE, granted=False)
            return
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
        if resp.is_pre_vote:
            wanted = (
                self.role is Role.PROSPECTIVE and resp.candidate_epoch == self.election.epoch + 1
            )
        else:
            wanted = self.role is Role.CANDIDATE and resp.candidate_epoch == self.election.epoch
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
