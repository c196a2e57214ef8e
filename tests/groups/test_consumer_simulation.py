"""The consumer group coordinator under faults, over seeds (tests/groups/consumer_sim.py)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.groups.consumer_sim import Simulation


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=0, max_value=2**32 - 1), st.booleans())
def test_no_partition_has_two_owners_and_the_group_settles(seed: int, offload: bool) -> None:
    sim = Simulation(seed, offload)
    for _ in range(80):
        sim.step()
    sim.settle()


def test_a_long_run_settles_after_every_fault_burst() -> None:
    sim = Simulation(20261202)
    for _ in range(5):
        for _ in range(60):
            sim.step()
        sim.settle()


def test_targets_computed_elsewhere_arrive_late_and_stale_and_the_group_still_settles() -> None:
    sim = Simulation(20261203, offload=True)
    for _ in range(5):
        for _ in range(60):
            sim.step()
        sim.settle()
    # every kind of result happened: installed, stale (the epoch moved on), from a lost
    # coordinator
    assert all(n > 0 for n in sim.results.values()), sim.results
