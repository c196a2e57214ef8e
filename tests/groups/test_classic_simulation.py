"""The classic group coordinator under faults, over seeds (tests/groups/classic_sim.py)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.groups.classic_sim import Simulation


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_generations_go_forward_no_partition_has_two_owners_and_the_group_settles(
    seed: int,
) -> None:
    sim = Simulation(seed)
    for _ in range(150):
        sim.step()
    sim.settle()


def test_a_long_run_settles_after_every_fault_burst() -> None:
    sim = Simulation(20261202)
    for _ in range(6):
        for _ in range(100):
            sim.step()
        sim.settle()
