"""Properties of the dry run's batches over random small clusters: the limits hold in every
batch, every move starts only where every rule holds, and every move runs or is refused."""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rackwise.common import TopicPartition
from rackwise.rebalance import (
    RULES,
    ClusterState,
    Limits,
    Move,
    Target,
    domains,
    finish,
    moves_for,
    plan_batches,
    spread_floor,
)

from ._clusters import racks_of, scenarios, state_of

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LIMITS = st.builds(
    Limits,
    concurrency_per_broker=st.integers(1, 5),
    intra_per_broker=st.integers(1, 2),
    max_leader_moves=st.integers(1, 3),
    max_disk_use=st.sampled_from((0.5, 0.85, 1.0)),
)


def _assert_safe(state: ClusterState, batch: tuple[Move, ...], limits: Limits) -> None:
    """Checks each rule from its definition, independently of the checks the batches use."""
    tree = state.tree
    incoming: Counter[tuple[int, str]] = Counter()
    for move in batch:
        source, target = move.source, move.target
        assert set(source.isr) == set(source.replicas) and source.leader >= 0
        assert len(target.replicas) >= source.min_insync
        floor = spread_floor(tree, len(target.replicas))
        before = domains(tree, source.replicas)
        during = domains(tree, (*target.replicas, *move.removing))
        after = domains(tree, target.replicas)
        for level, wanted in floor.items():
            need = min(wanted, before.get(level, 0))
            assert during.get(level, 0) >= need and after.get(level, 0) >= need
        for b, d in zip(target.replicas, target.log_dirs, strict=True):
            if d != "any" and (b not in source.replicas or source.dir_of(b) != d):
                incoming[(b, d)] += source.size_bytes
            elif d == "any" and b not in source.replicas:  # the broker chooses: any may fill
                for key in state.log_dirs:
                    if key[0] == b:
                        incoming[key] += source.size_bytes
    for key, size in incoming.items():
        disk = state.log_dirs[key]
        assert disk.used + size <= limits.max_disk_use * disk.capacity


def _assert_within_limits(batch: tuple[Move, ...], limits: Limits) -> None:
    per_broker: Counter[int] = Counter()
    intra: Counter[int] = Counter()
    for move in batch:
        if set(move.source.replicas) != set(move.target.replicas):
            per_broker.update(set(move.source.replicas) | set(move.target.replicas))
        intra.update(b for b, _ in move.dir_moves)
    assert max(per_broker.values(), default=0) <= limits.concurrency_per_broker
    assert max(intra.values(), default=0) <= limits.intra_per_broker
    assert sum(m.kind == "leader" for m in batch) <= limits.max_leader_moves


@SETTINGS
@given(scenarios(), LIMITS)
def test_batches_keep_the_limits_and_the_rules_and_account_for_every_move(
    scenario: tuple[ClusterState, dict[TopicPartition, Target]], limits: Limits
) -> None:
    state, targets = scenario
    wanted = {m.partition for m in moves_for(state, targets)}
    schedule = plan_batches(state, targets, limits)
    started: list[TopicPartition] = []
    for batch in schedule.batches:
        assert batch
        _assert_within_limits(batch, limits)
        _assert_safe(state, batch, limits)
        started += [m.partition for m in batch]
        state = finish(state, batch)
    refused = [h.partition for h in schedule.refused]
    assert len(started) == len(set(started))
    assert {str(tp) for tp in started} | set(refused) == {str(tp) for tp in wanted}
    assert not {str(tp) for tp in started} & set(refused)
    assert all(h.rule in RULES and h.reason for h in schedule.refused)
    assert not moves_for(state, {tp: targets[tp] for tp in started})


def test_the_default_limits_are_cruise_controls() -> None:
    limits = Limits()
    assert (limits.concurrency_per_broker, limits.intra_per_broker) == (5, 2)
    assert (limits.max_leader_moves, limits.max_disk_use) == (1000, 0.85)


def test_moves_through_one_broker_are_split_into_batches_of_the_concurrency() -> None:
    racks = racks_of([[2], [2], [2]])  # 1,2 | 3,4 | 5,6
    rows = {TopicPartition("t", p): ((1, 3, 5), ("/d0",) * 3, 1, 10, True) for p in range(7)}
    state = state_of(racks, rows, 10**6)
    targets = {tp: Target((2, 3, 5)) for tp in rows}
    schedule = plan_batches(state, targets, Limits(concurrency_per_broker=3))
    assert [len(b) for b in schedule.batches] == [3, 3, 1]
    assert schedule.refused == ()


def test_a_move_that_waits_for_room_runs_once_an_earlier_one_frees_it() -> None:
    racks = racks_of([[1], [1], [1], [1]])  # one broker a data centre: 1, 2, 3, 4
    rows = {
        TopicPartition("a", 0): ((1, 2), ("/d0", "/d0"), 1, 60, True),
        TopicPartition("b", 0): ((3, 1), ("/d0", "/d1"), 1, 60, True),
    }
    state = state_of(racks, rows, 100)
    targets = {
        TopicPartition("a", 0): Target((4, 2), ("/d0", "any")),  # frees 1:/d0
        TopicPartition("b", 0): Target((3, 1), ("any", "/d0")),  # needs 60 in 1:/d0
    }
    schedule = plan_batches(state, targets, Limits(max_disk_use=0.85))
    assert [[str(m.partition) for m in b] for b in schedule.batches] == [["a-0"], ["b-0"]]


def test_what_can_never_start_is_refused_with_its_rule() -> None:
    racks = racks_of([[1], [1], [1]])
    rows = {TopicPartition("t", 0): ((1, 2, 3), ("/d0",) * 3, 2, 1, True)}
    state = state_of(racks, rows, 10**6)
    schedule = plan_batches(state, {TopicPartition("t", 0): Target((1,))}, Limits())
    assert schedule.batches == ()
    assert [str(h) for h in schedule.refused] == [
        "t-0: min-insync: the target has 1 replica, fewer than min.insync.replicas=2"
    ]
