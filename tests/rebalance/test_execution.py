"""The executor's state machine against a simulated cluster: seeded runs with brokers lost and
topics deleted mid-batch, a cancel at any point, and a rerun after the executor died."""

from __future__ import annotations

from collections.abc import Mapping

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rackwise.common import TopicPartition
from rackwise.rebalance import (
    ClearThrottles,
    ClusterState,
    Execution,
    Hold,
    Limits,
    Phase,
    Reassign,
    Target,
    is_done,
)

from ._clusters import racks_of, scenarios, state_of
from ._sim import Sim

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
Targets = dict[TopicPartition, Target]


def _replan(state: ClusterState, targets: Mapping[TopicPartition, Target]) -> Targets:
    """A stand-in planner: drops deleted partitions and puts each replica meant for a broker
    that is down on the lowest-numbered broker up that the partition does not use."""
    out: Targets = {}
    for tp, target in targets.items():
        if tp not in state.partitions:
            continue
        replicas = list(target.replicas)
        for j, broker in enumerate(replicas):
            free = [b for b in sorted(state.racks) if b not in replicas]
            if broker not in state.racks and free:
                replicas[j] = free[0]
        out[tp] = Target(tuple(replicas))
    return out


def _run(
    sim: Sim,
    execution: Execution,
    targets: Targets,
    failures: Mapping[int, tuple[str, object]],
    ticks: int = 300,
) -> bool:
    for tick in range(ticks):
        state = sim.observe()
        step = execution.step(state)
        for action in step.actions:
            sim.apply(action)
        if step.needs_plan:
            targets = _replan(sim.observe(), targets)
            execution.retarget(sim.observe(), targets)
        elif step.done:
            return True
        kind, what = failures.get(tick, ("", None))
        if kind == "lose" and isinstance(what, int) and len(sim.racks) > 1:
            sim.lose_broker(what)
        elif kind == "delete" and isinstance(what, str):
            sim.delete_topic(what)
        sim.tick()
    return False


FAILURES = st.dictionaries(
    st.integers(0, 12),
    st.one_of(
        st.tuples(st.just("lose"), st.integers(1, 12)),
        st.tuples(st.just("delete"), st.sampled_from(("t0", "t1", "t2"))),
    ),
    max_size=2,
)


@SETTINGS
@given(scenarios(), FAILURES, st.integers(0, 2**16), st.integers(1, 5))
def test_every_move_ends_verified_refused_or_abandoned_and_no_rule_is_broken(
    scenario: tuple[ClusterState, Targets],
    failures: dict[int, tuple[str, object]],
    seed: int,
    concurrency: int,
) -> None:
    state, targets = scenario
    limits = Limits(concurrency_per_broker=concurrency)
    sim = Sim.of(state, limits.max_disk_use, seed)
    execution = Execution(state, targets, limits)
    assert _run(sim, execution, targets, failures)
    assert sim.problems == []
    assert not sim.flights and not sim.throttled
    for tp, entry in execution.tracked.items():
        assert entry.phase in (Phase.VERIFIED, Phase.REFUSED, Phase.ABANDONED), entry
        if entry.phase == Phase.REFUSED:
            assert isinstance(entry.note, Hold) and entry.note.reason
        if entry.phase == Phase.VERIFIED and tp in sim.partitions:
            assert is_done(sim.partitions[tp], execution.targets[tp])
        if entry.phase == Phase.ABANDONED:
            assert tp not in sim.partitions or tp not in execution.targets


@SETTINGS
@given(scenarios(), st.integers(0, 2**16), st.integers(0, 8))
def test_a_rerun_adopts_the_moves_in_flight_and_never_starts_them_again(
    scenario: tuple[ClusterState, Targets], seed: int, crash_at: int
) -> None:
    state, targets = scenario
    limits = Limits(concurrency_per_broker=2)
    sim = Sim.of(state, limits.max_disk_use, seed)
    _run(sim, Execution(state, targets, limits), targets, {}, ticks=crash_at)
    in_flight = set(sim.flights)
    resumed = Execution(sim.observe(), targets, limits)
    assert {tp for tp, e in resumed.tracked.items() if e.adopted} == in_flight
    first = resumed.step(sim.observe())
    assert not {a.partition for a in first.actions if isinstance(a, Reassign)} & in_flight
    for action in first.actions:
        sim.apply(action)
    sim.tick()
    assert _run(sim, resumed, targets, {})
    assert sim.problems == [] and not sim.flights and not sim.throttled
    for entry in resumed.tracked.values():
        assert entry.phase in (Phase.VERIFIED, Phase.REFUSED), entry


@SETTINGS
@given(scenarios(), st.integers(0, 2**16), st.integers(0, 8))
def test_a_cancel_leaves_each_partition_on_its_original_or_target_replicas_with_a_leader(
    scenario: tuple[ClusterState, Targets], seed: int, cancel_at: int
) -> None:
    state, targets = scenario
    limits = Limits(concurrency_per_broker=3)
    sim = Sim.of(state, limits.max_disk_use, seed)
    execution = Execution(state, targets, limits)
    _run(sim, execution, targets, {}, ticks=cancel_at)
    for action in execution.cancel():
        sim.apply(action)
    assert execution.step(sim.observe()).done
    assert not sim.flights and not sim.throttled
    for tp, p in sim.partitions.items():
        assert set(p.replicas) in (set(state.partitions[tp].replicas), set(targets[tp].replicas))
        assert p.leader in p.replicas and p.leader in p.isr


def test_a_partition_moved_by_someone_else_is_verified_as_already_moved() -> None:
    racks = racks_of([[1], [1], [1], [1]])
    rows = {TopicPartition("t", 0): ((1, 2), ("/d0", "/d0"), 1, 5, True)}
    state = state_of(racks, rows, 10**6)
    targets = {TopicPartition("t", 0): Target((3, 2))}
    execution = Execution(state, targets, Limits())
    moved = state_of(racks, {TopicPartition("t", 0): ((3, 2), ("/d0", "/d0"), 1, 5, True)}, 10**6)
    step = execution.step(moved)
    assert step.done and step.events == ("t-0: verified (already moved)",)
    assert step.actions == (ClearThrottles(),)  # also those of a run that died


def test_a_broker_lost_mid_move_cancels_the_move_and_asks_for_a_new_plan() -> None:
    racks = racks_of([[1], [1], [1], [1]])
    tp = TopicPartition("t", 0)
    state = state_of(racks, {tp: ((1, 2), ("/d0", "/d0"), 1, 5, True)}, 10**6)
    sim = Sim.of(state, 0.85, 0)
    execution = Execution(state, {tp: Target((3, 2))}, Limits())
    for action in execution.step(sim.observe()).actions:
        sim.apply(action)
    assert tp in sim.flights
    sim.lose_broker(3)
    step = execution.step(sim.observe())
    assert step.needs_plan and "t-0: cancelled, broker 3 was lost; re-planning" in step.events
    execution.retarget(sim.observe(), {tp: Target((4, 2))})
    for action in step.actions:
        sim.apply(action)
    assert _run(sim, execution, {tp: Target((4, 2))}, {})
    assert sim.partitions[tp].replicas == (4, 2)


def test_a_move_onto_a_broker_that_went_down_asks_once_for_a_plan_then_is_refused() -> None:
    racks = racks_of([[1], [1], [1], [1]])
    tp = TopicPartition("t", 0)
    state = state_of(racks, {tp: ((1, 2), ("/d0", "/d0"), 1, 5, True)}, 10**6)
    execution = Execution(state, {tp: Target((3, 2))}, Limits())
    sim = Sim.of(state, 0.85, 0)
    sim.lose_broker(3)
    step = execution.step(sim.observe())
    assert step.needs_plan and not step.done and step.actions == ()
    execution.retarget(sim.observe(), {tp: Target((3, 2))})  # a plan that still wants 3
    step = execution.step(sim.observe())
    assert step.done and step.events == ("refused t-0: broker: target broker 3 is not up",)
    assert execution.tracked[tp].phase == Phase.REFUSED
