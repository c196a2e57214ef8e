"""One voter driven by hand: each rule of the state machine, with the exact outputs."""

from __future__ import annotations

import random
from typing import Any

import pytest

from rackwise.common.error_codes import FENCED_LEADER_EPOCH, NONE
from rackwise.raft import NotLeaderException, QuorumConfig, RaftClient, RaftLog, Role
from rackwise.raft.messages import (
    NO_LEADER,
    NO_VOTE,
    AppendBatches,
    Batch,
    BeginQuorumEpochRequest,
    Commit,
    ElectionState,
    EndQuorumEpochRequest,
    FetchRequest,
    FetchResponse,
    LeaderChangeMark,
    OffsetAndEpoch,
    Output,
    PersistElectionState,
    Send,
    TruncateTo,
    VoteRequest,
    VoteResponse,
)

CONFIG = QuorumConfig()


def client(
    node_id: int,
    voters: list[int],
    election: ElectionState | None = None,
    batches: list[Batch] | None = None,
) -> RaftClient:
    log = RaftLog(batches=batches or [])
    return RaftClient(
        node_id, voters, CONFIG, election or ElectionState(0), log, random.Random(node_id)
    )


def sent(outputs: list[Output], kind: type[Any]) -> list[Send]:
    return [o for o in outputs if isinstance(o, Send) and isinstance(o.message, kind)]


def old_batches(epoch: int, count: int) -> list[Batch]:
    return [Batch(i, epoch, (f"r{i}",)) for i in range(count)]


def make_leader(batches: list[Batch]) -> RaftClient:
    """Voter 1 of 1, 2, 3, elected in epoch 2 with ``batches`` (epoch 1) in its log."""
    c = client(1, [1, 2, 3], ElectionState(1), batches)
    c.start(0)
    c.tick(c.election_deadline_ms)
    end = c.log.end_offset_and_epoch()
    c.handle_message(3000, 2, VoteResponse(NONE, NO_LEADER, 1, True, True, 1))
    assert c.role is Role.CANDIDATE
    c.handle_message(3001, 2, VoteResponse(NONE, NO_LEADER, 2, True, False, 2))
    assert c.role is Role.LEADER
    assert c.log.end_offset == end.offset + 1  # the LeaderChange batch
    return c


def test_a_single_voter_leads_at_once_and_commits_after_its_flush() -> None:
    c = client(1, [1])
    outputs = c.start(0)
    assert PersistElectionState(ElectionState(1, 1, 1)) in outputs
    [append] = [o for o in outputs if isinstance(o, AppendBatches)]
    assert append.batches == (Batch(0, 1, (LeaderChangeMark(1, (1,)),), is_control=True),)
    assert c.handle_flushed(5, 1) == [Commit((), 1)]
    last, outputs = c.propose(6, ["a", "b"])
    assert last == 2
    assert outputs == [AppendBatches((Batch(1, 1, ("a", "b")),))]
    assert c.high_watermark == 1  # not durable yet
    assert c.handle_flushed(7, 3) == [Commit((Batch(1, 1, ("a", "b")),), 3)]


def test_a_single_voter_that_led_leads_the_next_epoch_at_once_after_a_restart() -> None:
    c = client(1, [1], ElectionState(3, 1, 1), [Batch(0, 3, ("a",))])
    outputs = c.start(0)
    assert c.role is Role.LEADER and c.epoch == 4
    assert PersistElectionState(ElectionState(4, 1, 1)) in outputs
    [append] = [o for o in outputs if isinstance(o, AppendBatches)]
    assert append.batches == (Batch(1, 4, (LeaderChangeMark(1, (1,)),), is_control=True),)
    assert c.handle_flushed(1, 2) == [Commit((Batch(0, 3, ("a",)),), 2)]


def test_a_vote_is_persisted_before_it_is_answered() -> None:
    c = client(2, [1, 2, 3])
    c.start(0)
    outputs = c.handle_message(10, 1, VoteRequest(1, 1, 0, 0))
    persist = outputs.index(PersistElectionState(ElectionState(1, 1, NO_LEADER)))
    [answer] = sent(outputs, VoteResponse)
    assert persist < outputs.index(answer)
    assert answer.message == VoteResponse(NONE, NO_LEADER, 1, True, False, 1)
    second = c.handle_message(11, 3, VoteRequest(1, 3, 0, 0))
    assert [s.message.vote_granted for s in sent(second, VoteResponse)] == [False]


def test_a_candidate_with_a_less_up_to_date_log_is_refused_but_its_epoch_is_taken() -> None:
    c = client(2, [1, 2, 3], ElectionState(2), [Batch(0, 1, ("a",)), Batch(1, 2, ("b",))])
    c.start(0)
    outputs = c.handle_message(10, 1, VoteRequest(3, 1, 1, 10))
    assert [s.message.vote_granted for s in sent(outputs, VoteResponse)] == [False]
    assert c.election == ElectionState(3, NO_VOTE, NO_LEADER)


def test_a_pre_vote_changes_nothing_and_is_refused_while_the_leader_is_heard() -> None:
    c = client(2, [1, 2, 3])
    c.start(0)
    outputs = c.handle_message(10, 3, VoteRequest(0, 3, 0, 0, is_pre_vote=True))
    assert not any(isinstance(o, PersistElectionState) for o in outputs)
    assert sent(outputs, VoteResponse)[0].message.vote_granted
    assert c.election == ElectionState(0)
    c.handle_message(20, 1, BeginQuorumEpochRequest(1, 1))
    assert c.role is Role.FOLLOWER
    outputs = c.handle_message(30, 3, VoteRequest(1, 3, 0, 0, is_pre_vote=True))
    assert not sent(outputs, VoteResponse)[0].message.vote_granted
    later = 30 + CONFIG.fetch_timeout_ms
    c.tick(later - 1)  # still following; fetches went unanswered
    outputs = c.handle_message(later, 3, VoteRequest(1, 3, 0, 0, is_pre_vote=True))
    assert sent(outputs, VoteResponse)[0].message.vote_granted
    assert c.election == ElectionState(1, NO_VOTE, 1)


def test_a_pre_vote_from_an_older_epoch_is_fenced() -> None:
    c = client(2, [1, 2, 3], ElectionState(4, NO_VOTE, NO_LEADER))
    c.start(0)
    outputs = c.handle_message(10, 3, VoteRequest(3, 3, 3, 50, is_pre_vote=True))
    answer = sent(outputs, VoteResponse)[0].message
    assert (answer.error_code, answer.vote_granted, answer.leader_epoch) == (
        FENCED_LEADER_EPOCH,
        False,
        4,
    )


def test_a_pre_vote_from_a_later_epoch_unseats_the_leader_left_behind() -> None:
    # Kafka's rule: the prospective's epoch was persisted by a voter (a vote in an election
    # that failed), so a leader of an older epoch could never again be followed by it.
    c = make_leader(old_batches(1, 1))
    assert c.epoch == 2
    outputs = c.handle_message(3500, 3, VoteRequest(3, 3, 2, 2, is_pre_vote=True))
    assert c.role is Role.UNATTACHED
    assert c.election == ElectionState(3, NO_VOTE, NO_LEADER)
    assert PersistElectionState(ElectionState(3, NO_VOTE, NO_LEADER)) in outputs
    answer = sent(outputs, VoteResponse)[0].message
    assert (answer.leader_epoch, answer.candidate_epoch, answer.is_pre_vote) == (3, 3, True)
    assert answer.vote_granted  # the prospective's log holds the leader's


def test_a_write_offered_to_a_follower_names_the_leader() -> None:
    c = client(2, [1, 2, 3], ElectionState(4, NO_VOTE, 3))
    c.start(0)
    with pytest.raises(NotLeaderException, match="node 2 is not the leader of epoch 4") as err:
        c.propose(1, ["x"])
    assert (err.value.leader_id, err.value.epoch, err.value.error_code) == (3, 4, 6)


def test_records_of_older_epochs_commit_only_behind_one_of_the_leaders_own() -> None:
    c = make_leader(old_batches(1, 5))
    c.handle_flushed(3002, 6)
    c.handle_message(3003, 2, FetchRequest(2, 2, 5, 1))  # voter 2 holds 0-4, not offset 5
    assert c.high_watermark == 0
    outputs = c.handle_message(3004, 2, FetchRequest(2, 2, 6, 2))
    assert c.high_watermark == 6
    [commit] = [o for o in outputs if isinstance(o, Commit)]
    assert commit == Commit(tuple(old_batches(1, 5)), 6)  # the control batch is not applied


def test_the_leader_answers_a_diverging_fetch_and_the_follower_cuts_its_tail() -> None:
    leader = make_leader(old_batches(1, 3))
    outputs = leader.handle_message(3002, 2, FetchRequest(2, 2, 5, 1))
    [answer] = sent(outputs, FetchResponse)
    assert answer.message.diverging_epoch == OffsetAndEpoch(1, 3)
    stale = [*old_batches(1, 3), Batch(3, 1, ("x", "y"))]
    follower = client(2, [1, 2, 3], ElectionState(2, NO_VOTE, 1), stale)
    [fetch] = sent(follower.start(3000), FetchRequest)
    assert fetch.message == FetchRequest(2, 2, 5, 1)
    outputs = follower.handle_message(3003, 1, answer.message)
    assert outputs[0] == TruncateTo(3)
    assert [s.message for s in sent(outputs, FetchRequest)] == [FetchRequest(2, 2, 3, 1)]
    assert follower.handle_message(3004, 1, answer.message) == []  # a repeat changes nothing


def test_a_resigning_leader_names_its_successors_and_the_first_stands_at_once() -> None:
    leader = make_leader(old_batches(1, 2))
    leader.handle_message(3002, 3, FetchRequest(3, 2, 2, 1))
    outputs = leader.resign(3003)
    assert leader.role is Role.RESIGNED
    request = EndQuorumEpochRequest(2, 1, (3, 2))
    assert [s.destination for s in sent(outputs, EndQuorumEpochRequest)] == [3, 2]
    assert sent(outputs, EndQuorumEpochRequest)[0].message == request
    follower = client(3, [1, 2, 3], ElectionState(2, NO_VOTE, 1))
    follower.start(3000)
    outputs = follower.handle_message(3004, 1, request)
    assert follower.role is Role.PROSPECTIVE
    assert {s.destination for s in sent(outputs, VoteRequest)} == {1, 2}
    assert all(s.message.is_pre_vote for s in sent(outputs, VoteRequest))


def test_a_leader_no_majority_fetches_from_resigns_after_one_and_a_half_fetch_timeouts() -> None:
    leader = make_leader([])
    assert leader.next_deadline_ms() == 3001 + CONFIG.fetch_timeout_ms // 2
    leader.tick(3001 + 2999)
    assert leader.role is Role.LEADER
    outputs = leader.tick(3001 + 3000)
    assert leader.role is Role.RESIGNED
    assert len(sent(outputs, EndQuorumEpochRequest)) == 2


def test_a_restarted_leader_does_not_lead_its_epoch_again() -> None:
    c = client(1, [1, 2, 3], ElectionState(5, 1, 1))
    c.start(0)
    assert c.role is Role.RESIGNED
    with pytest.raises(NotLeaderException):
        c.propose(1, ["x"])


def test_a_fetch_with_nothing_new_is_held_until_a_write_arrives() -> None:
    leader = make_leader([])
    leader.handle_flushed(3002, 1)
    first = leader.handle_message(3003, 2, FetchRequest(2, 2, 1, 2))
    assert sent(first, FetchResponse)[0].message.high_watermark == 1
    held = leader.handle_message(3004, 2, FetchRequest(2, 2, 1, 2))
    assert sent(held, FetchResponse) == []
    _, outputs = leader.propose(3010, ["w"])
    [answer] = sent(outputs, FetchResponse)
    assert answer.message.batches == (Batch(1, 2, ("w",)),)


def test_an_observer_is_tracked_but_never_counts_and_its_fetch_waits_for_the_commit() -> None:
    """Broker 7 fetches as an observer (Kafka's observer states): the leader records its fetch
    offset, lists it apart from the voters, holds its fetch past an append (it can use only
    what is committed) and answers it with the batch once the high watermark covers it."""
    leader = make_leader([])
    leader.handle_flushed(3002, 1)
    leader.handle_message(3003, 2, FetchRequest(2, 2, 1, 2))  # voter 2 commits the mark
    assert leader.high_watermark == 1
    first = leader.handle_message(3004, 7, FetchRequest(7, 2, 1, 2))
    assert sent(first, FetchResponse)[0].message.high_watermark == 1
    assert leader.leader is not None
    assert list(leader.leader.observers(3004)) == [7]
    assert leader.leader.observers(3004)[7].end_offset == 1
    assert sent(leader.handle_message(3005, 7, FetchRequest(7, 2, 1, 2)), FetchResponse) == []
    _, appended = leader.propose(3010, ["w"])
    assert [s.destination for s in sent(appended, FetchResponse)] == []  # still held
    leader.handle_flushed(3011, 2)
    assert leader.high_watermark == 1  # an observer's offset is no vote towards a commit
    outputs = leader.handle_message(3012, 2, FetchRequest(2, 2, 2, 2))
    [answer] = [s for s in sent(outputs, FetchResponse) if s.destination == 7]
    assert answer.message.batches == (Batch(1, 2, ("w",)),)
    assert answer.message.high_watermark == 2
    # An observer silent for five minutes is forgotten; a reader with id -1 is never listed.
    leader.handle_message(3013, -1, FetchRequest(-1, 2, 0, -1))
    assert list(leader.leader.observers(3012 + 300_000)) == []
