"""A group migrating online under faults, over seeds (tests/groups/migration_sim.py)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.groups.migration_sim import MigrationSimulation


@settings(max_examples=30, deadline=None)
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_classic_and_consumer_members_never_share_a_partition_and_settle(seed: int) -> None:
    sim = MigrationSimulation(seed)
    for _ in range(80):
        sim.step()
    sim.settle()


def test_a_long_migration_settles_after_every_fault_burst() -> None:
    sim = MigrationSimulation(20261204)
    for _ in range(4):
        for _ in range(60):
            sim.step()
        sim.settle()
