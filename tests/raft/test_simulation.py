"""The quorum under a seeded scheduler that drops, delays, duplicates and reorders messages,
cuts the network and crashes voters; Raft's invariants after every event, and progress once
the network heals. Broken variants of the state machine show the checks can fail, each at an
exact seed that reproduces it."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rackwise.common.error_codes import NONE
from rackwise.raft import RaftClient, Role
from rackwise.raft.messages import NO_LEADER, ElectionState, VoteRequest
from tests.raft.simulation import Faults, Simulation, Violation, run_seed

SEEDS = st.integers(min_value=0, max_value=2**32 - 1)
SIZES = st.sampled_from([1, 3, 5])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=SEEDS, num_voters=SIZES)
def test_invariants_hold_and_the_healed_quorum_makes_progress(seed: int, num_voters: int) -> None:
    sim = run_seed(seed, num_voters, fault_ms=8_000)
    assert sim.leader() is not None
    assert all(len(n.applied) >= 1 for n in sim.nodes.values())


@pytest.mark.slow(reason="400 simulated runs of 20 s each, about 40 s")
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=SEEDS, num_voters=SIZES)
def test_invariants_hold_over_many_seeds(seed: int, num_voters: int) -> None:
    run_seed(seed, num_voters)


def test_a_seed_replays_exactly() -> None:
    first = run_seed(20240611, 5, fault_ms=10_000)
    second = run_seed(20240611, 5, fault_ms=10_000)
    assert first.trace == second.trace
    assert first.committed == second.committed
    assert len(first.trace) > 100


def test_the_simulation_exercises_elections_snapshots_and_truncation() -> None:
    counts = {"epochs": 0, "installs": 0, "truncations": 0}
    for seed in range(6):
        sim = run_seed(seed, 5, fault_ms=10_000)
        counts["epochs"] += len(sim.leaders_by_epoch)
        counts["installs"] += sum(" snapshot " in line for line in sim.trace)
        counts["truncations"] += sum("diverging_epoch=OffsetAndEpoch" in line for line in sim.trace)
    assert counts["epochs"] > 6
    assert counts["installs"] > 0
    assert counts["truncations"] > 0


# --- broken variants: the checks must catch them, at a seed that replays ------------------


class VotesForAnyLog(RaftClient):
    """Grants votes without comparing logs: a leader may miss committed records."""

    def _log_up_to_date(self, req: VoteRequest) -> bool:
        return True


class CommitsOnOneCopy(RaftClient):
    """Moves the high watermark to the most advanced copy instead of a majority's."""

    def _maybe_advance_high_watermark(self, now_ms: int) -> bool:
        leader = self.leader
        if leader is None:
            return False
        ends = [e for v in leader.voters if (e := leader.replicas[v].end_offset) is not None]
        if ends and max(ends) > max(self.high_watermark, leader.epoch_start_offset):
            self.high_watermark = max(ends)
            self._answer_held_fetches(now_ms)
            return True
        return False


class VotesTwice(RaftClient):
    """Forgets whom it voted for: two candidates may win one epoch."""

    def _handle_vote_request(self, now_ms: int, source: int, req: VoteRequest) -> None:
        if req.is_pre_vote or req.candidate_epoch < self.election.epoch:
            super()._handle_vote_request(now_ms, source, req)
            return
        if req.candidate_epoch > self.election.epoch:
            self._become_unattached(req.candidate_epoch, now_ms)
        granted = self.election.leader_id == NO_LEADER and self._log_up_to_date(req)
        self._answer_vote(source, req, NONE, granted=granted)


@pytest.mark.parametrize(
    ("factory", "seed", "num_voters", "message"),
    [
        (VotesForAnyLog, 1, 5, "leader 1 (epoch 2) lacks committed record (182, 1, 'w91.0')"),
        (CommitsOnOneCopy, 0, 3, "leader 1 (epoch 2) lacks committed record (13, 1, 'w7.0')"),
        (VotesTwice, 3, 5, "voters 2 and 5 both lead epoch 1"),
    ],
)
def test_a_broken_quorum_is_caught_and_its_seed_replays(
    factory: Any, seed: int, num_voters: int, message: str
) -> None:
    for _ in range(2):
        with pytest.raises(Violation, match=rf"seed {seed}, t=\d+ ms: ") as caught:
            run_seed(seed, num_voters, client_factory=factory)
        assert message in str(caught.value)


# --- pre-vote ----------------------------------------------------------------------------


def test_a_voter_cut_off_and_back_does_not_disturb_the_leader() -> None:
    quiet = Faults(drop=0, duplicate=0, max_delay_ms=5, crash_every_ms=0, partition_every_ms=0)
    sim = Simulation(7, 3, faults=quiet)
    assert sim.run_until(10_000, lambda: sim.leader() is not None and len(sim.committed) > 5)
    leader = sim.leader()
    assert leader is not None and leader.client is not None
    epoch = leader.client.epoch
    outsider = next(v for v in sim.voters if v != leader.node_id)
    sim.cut = {frozenset((outsider, v)) for v in sim.voters if v != outsider}
    sim.run_until(sim.now_ms + 15_000)
    isolated = sim.nodes[outsider].client
    assert isolated is not None
    assert isolated.epoch == epoch  # pre-votes failed: it never started an election
    assert isolated.role in (Role.PROSPECTIVE, Role.FOLLOWER)
    sim.heal()
    mark = len(sim.committed)
    assert sim.run_until(sim.now_ms + 5_000, lambda: len(sim.nodes[outsider].applied) > mark)
    assert sim.leader() is leader
    assert leader.client.epoch == epoch


# --- voters left in a later epoch ---------------------------------------------------------


def test_seed_352_voters_left_in_a_later_epoch_catch_up_after_healing() -> None:
    # Five voters: voters 1 and 3 persisted epoch 2 (a vote in an election that failed) while
    # voter 4 went on leading epoch 1 with 2 and 5. Their pre-votes in epoch 2 were refused
    # and the leader never learnt of epoch 2: they never fetched again.
    sim = run_seed(352, 5)
    assert all(len(n.applied) >= len(sim.committed) - 3 for n in sim.nodes.values())
    leader = sim.leader()
    assert leader is not None and leader.client is not None
    assert leader.client.epoch > 2


def test_a_leader_learns_of_a_later_epoch_from_a_pre_vote_and_the_quorum_moves_on() -> None:
    quiet = Faults(drop=0, duplicate=0, max_delay_ms=5, crash_every_ms=0, partition_every_ms=0)
    sim = Simulation(11, 5, faults=quiet)
    assert sim.run_until(10_000, lambda: sim.leader() is not None and len(sim.committed) > 5)
    leader = sim.leader()
    assert leader is not None and leader.client is not None
    epoch = leader.client.epoch
    behind = [v for v in sim.voters if v != leader.node_id][:2]
    for v in behind:  # each voted for itself in epoch + 1, in an election that went nowhere
        node = sim.nodes[v]
        sim._crash(node)
        node.disk.election = ElectionState(epoch + 1, v, NO_LEADER)
        sim._restart(v)
    mark = len(sim.committed)

    def caught_up() -> bool:
        return all(len(sim.nodes[v].applied) > mark + 1 for v in behind)

    assert sim.run_until(sim.now_ms + 10_000, caught_up)
    now = sim.leader()
    assert now is not None and now.client is not None
    assert now.client.epoch > epoch + 1
