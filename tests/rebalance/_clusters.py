"""Random small clusters, their states and targets, for the executor's tests."""

from __future__ import annotations

from hypothesis import strategies as st

from rackwise.common import TopicPartition
from rackwise.rebalance import ClusterState, LogDir, PartitionState, Target

DIRS = ("/d0", "/d1")


def racks_of(shape: list[list[int]]) -> dict[int, str | None]:
    """Brokers numbered from 1 over ``shape[dc][rack]`` brokers a rack."""
    racks: dict[int, str | None] = {}
    for dc, rack_sizes in enumerate(shape):
        for rack, size in enumerate(rack_sizes):
            for _ in range(size):
                racks[len(racks) + 1] = f"/dc{dc}/r{rack}"
    return racks


def state_of(
    racks: dict[int, str | None],
    rows: dict[TopicPartition, tuple[tuple[int, ...], tuple[str, ...], int, int, bool]],
    capacity: int,
) -> ClusterState:
    """A state from rows of (replicas, dirs, min.insync.replicas, size, in sync); every log
    directory's use is the sum of its replicas' sizes."""
    partitions = {}
    used = {(b, d): 0 for b in racks for d in DIRS}
    for tp, (replicas, dirs, min_isr, size, in_sync) in rows.items():
        isr = replicas if in_sync else replicas[:-1]
        partitions[tp] = PartitionState(replicas, dirs, isr, replicas[0], min_isr, size)
        for b, d in zip(replicas, dirs, strict=True):
            used[(b, d)] += size
    dirs_state = {key: LogDir(capacity, u) for key, u in used.items()}
    return ClusterState(racks, partitions, dirs_state)


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[ClusterState, dict[TopicPartition, Target]]:
    """A cluster of 1-3 data centres of 1-2 racks of 1-2 brokers, 1-10 partitions of RF 1-3,
    each with a random current placement and a random target (brokers, order, directories)."""
    shape = draw(
        st.lists(st.lists(st.integers(1, 2), min_size=1, max_size=2), min_size=1, max_size=3)
    )
    racks = racks_of(shape)
    brokers = sorted(racks)
    rows = {}
    targets = {}
    for p in range(draw(st.integers(1, 10))):
        rf = draw(st.integers(1, min(3, len(brokers))))
        current = tuple(draw(st.permutations(brokers))[:rf])
        wanted = tuple(draw(st.permutations(brokers))[:rf])
        dirs = tuple(draw(st.sampled_from(DIRS)) for _ in current)
        wanted_dirs = tuple(draw(st.sampled_from((*DIRS, "any"))) for _ in wanted)
        min_isr = draw(st.integers(1, 3))
        size = draw(st.integers(0, 100))
        in_sync = rf == 1 or draw(st.integers(0, 9)) > 0
        tp = TopicPartition(f"t{p % 3}", p)
        rows[tp] = (current, dirs, min_isr, size, in_sync)
        targets[tp] = Target(wanted, wanted_dirs)
    capacity = draw(st.integers(150, 1500))
    return state_of(racks, rows, capacity), targets
