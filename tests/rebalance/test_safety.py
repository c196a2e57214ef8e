"""Each safety rule on its own, with the refusal it prints, and the spread floor against every
evenly spread placement of small trees."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from rackwise.common import TopicPartition
from rackwise.rebalance import (
    ClusterState,
    LogDir,
    Move,
    PartitionState,
    Target,
    check,
    domains,
    spread_floor,
)
from rackwise.topology import RackTree, spread_violations

from ._clusters import racks_of

TP = TopicPartition("t", 0)
RACKS = racks_of([[1, 1], [1, 1], [1, 1]])  # 1,2 in dc0; 3,4 in dc1; 5,6 in dc2


def _state(**changes: object) -> tuple[ClusterState, PartitionState]:
    values: dict[str, object] = {
        "replicas": (1, 3, 5),
        "log_dirs": ("/d0", "/d0", "/d0"),
        "isr": (1, 3, 5),
        "leader": 1,
        "min_insync": 2,
        "size_bytes": 100,
    }
    values.update(changes)
    source = PartitionState(**values)  # type: ignore[arg-type]
    dirs = {(b, d): LogDir(1000, 0) for b in RACKS for d in ("/d0", "/d1")}
    return ClusterState(RACKS, {TP: source}, dirs), source


def _hold(
    target: Target, incoming: dict[tuple[int, str], int] | None = None, **changes: object
) -> str:
    state, source = _state(**changes)
    hold = check(state, Move(TP, source, target), incoming or {}, 0.85)
    return "" if hold is None else str(hold)


def test_a_well_spread_move_passes() -> None:
    assert _hold(Target((2, 3, 5))) == ""


def test_a_target_on_a_broker_that_is_down_is_refused() -> None:
    assert _hold(Target((9, 3, 5))) == "t-0: broker: target broker 9 is not up"


def test_an_under_replicated_partition_waits() -> None:
    assert _hold(Target((2, 3, 5)), isr=(1, 3)) == (
        "t-0: under-replicated: 2 of 3 replicas in sync (ISR [1, 3], leader 1); waiting"
    )
    assert _hold(Target((2, 3, 5)), leader=-1).startswith("t-0: under-replicated:")


def test_a_target_below_min_insync_is_refused() -> None:
    assert _hold(Target((2,))) == (
        "t-0: min-insync: the target has 1 replica, fewer than min.insync.replicas=2"
    )


def test_a_target_in_fewer_data_centres_is_refused() -> None:
    assert _hold(Target((1, 2, 5))) == (
        "t-0: spread: 2 racks at level 1 after it, fewer than the 3 the spread rule gives it"
    )


def test_a_badly_spread_partition_may_improve_without_reaching_the_rule() -> None:
    assert _hold(Target((1, 3, 2)), replicas=(1, 2, 4), isr=(1, 2, 4)) == ""


def test_a_directory_filled_past_the_share_is_refused_counting_copies_on_their_way() -> None:
    target = Target((2, 3, 5), ("/d1", "any", "any"))
    assert _hold(target, {(2, "/d1"): 751}) == (
        "t-0: max-disk-use: log directory /d1 of broker 2 would hold 851 of 1000 bytes, "
        "over 0.85 of it"
    )
    assert _hold(target, {(2, "/d1"): 750}) == ""


def test_a_move_between_directories_counts_against_the_new_directory() -> None:
    target = Target((1, 3, 5), ("/d1", "any", "any"))
    assert _hold(target, {(1, "/d1"): 800}).startswith("t-0: max-disk-use: log directory /d1")


@st.composite
def _trees(draw: st.DrawFn) -> dict[int, str | None]:
    shape = draw(
        st.lists(st.lists(st.integers(1, 3), min_size=1, max_size=3), min_size=1, max_size=3)
    )
    return racks_of(shape)


@settings(max_examples=80, deadline=None)
@given(_trees(), st.integers(1, 4))
def test_every_evenly_spread_placement_meets_the_floor_and_one_reaches_it(
    racks: dict[int, str | None], rf: int
) -> None:
    tree = RackTree.build([(b, r, False) for b, r in racks.items()])
    rf = min(rf, len(racks))
    floor = spread_floor(tree, rf)
    reached = {level: 10**9 for level in floor}
    for combo in itertools.combinations(sorted(racks), rf):
        if spread_violations(tree, [combo]):
            continue
        held = domains(tree, combo)
        for level, wanted in floor.items():
            assert held.get(level, 0) >= wanted, (combo, floor)
            reached[level] = min(reached[level], held.get(level, 0))
    assert reached == floor
