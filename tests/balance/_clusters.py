"""Small clusters for the planner's tests: a readable builder and a hypothesis strategy."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from rackwise.balance import (
    NO_LOG_DIR,
    UNKNOWN_BYTES,
    BrokerTable,
    ClusterInput,
    LogDirTable,
    Plan,
    ReplicaTable,
)
from rackwise.topology import RackTree, as_rack_path, spread_violations

Dir = tuple[str, int, bool]  # path, total_bytes (-1 unknown), is_live


def make(
    brokers: Mapping[int, str | None],
    assignment: Mapping[tuple[str, int], Sequence[int]],
    *,
    dirs: Mapping[int, Sequence[Dir]] | None = None,
    sizes: Mapping[tuple[str, int], int] | None = None,
    placed: Mapping[tuple[str, int, int], str] | None = None,
) -> ClusterInput:
    """A cluster from ``{broker: rack}``, ``{(topic, partition): [brokers]}``, ``{broker: [(path,
    total, live)]}``, ``{(topic, partition): size}`` (default 100) and ``{(topic, partition,
    broker): path}`` (the replica's directory; unknown if absent)."""
    dirs = dirs or {}
    sizes = sizes or {}
    placed = placed or {}
    dir_rows = [(b, d) for b in sorted(dirs) for d in dirs[b]]
    row_of = {(b, d[0]): i for i, (b, d) in enumerate(dir_rows)}
    topics = sorted({t for t, _ in assignment})
    code = {t: i for i, t in enumerate(topics)}
    cols: dict[str, list[int]] = {k: [] for k in ("t", "p", "i", "b", "d", "s")}
    for (topic, part), replicas in assignment.items():
        for index, broker in enumerate(replicas):
            path = placed.get((topic, part, broker))
            cols["t"].append(code[topic])
            cols["p"].append(part)
            cols["i"].append(index)
            cols["b"].append(broker)
            cols["d"].append(NO_LOG_DIR if path is None else row_of[(broker, path)])
            cols["s"].append(sizes.get((topic, part), 100))
    return ClusterInput(
        BrokerTable(
            np.array(sorted(brokers), np.int64), tuple(brokers[b] for b in sorted(brokers))
        ),
        LogDirTable(
            np.array([b for b, _ in dir_rows], np.int64),
            tuple(d[0] for _, d in dir_rows),
            np.array([d[1] for _, d in dir_rows], np.int64),
            np.array([d[2] for _, d in dir_rows], np.bool_),
        ),
        ReplicaTable(
            tuple(topics),
            *(np.array(cols[k], np.int64) for k in ("t", "p", "i", "b", "d", "s")),
        ),
    )


def targets(plan: Plan) -> dict[tuple[str, int], list[int]]:
    """The plan's target replica lists by partition."""
    return {
        (plan.topic_names[int(plan.topics[p])], int(plan.partitions[p])): [
            int(b) for b in plan.target[p, : int(plan.rf[p])]
        ]
        for p in range(plan.rf.size)
    }


def usable(cluster: ClusterInput) -> set[int]:
    """Brokers with a live log directory (or none known)."""
    dirs = cluster.log_dirs
    live_by: dict[int, list[bool]] = {}
    for owner, live in zip(dirs.broker_ids.tolist(), dirs.is_live.tolist(), strict=True):
        live_by.setdefault(owner, []).append(live)
    return {b for b in cluster.brokers.ids.tolist() if not live_by.get(b) or any(live_by[b])}


def flat(rack: str | None) -> str | None:
    path = as_rack_path(rack)
    return None if path is None else "/" + path[1:].replace("/", "|")


def tree_of(cluster: ClusterInput, members: set[int], *, rack_aware: bool = False) -> RackTree:
    racks = dict(zip(cluster.brokers.ids.tolist(), cluster.brokers.racks, strict=True))
    return RackTree.build(
        [
            (b, flat(racks[b]) if rack_aware else as_rack_path(racks[b]), False)
            for b in sorted(members)
        ]
    )


def badly_spread(
    cluster: ClusterInput,
    rows: Mapping[tuple[str, int], Sequence[int]],
    excluded: Mapping[tuple[str, int], set[int]],
    *,
    rack_aware: bool = False,
) -> list[tuple[str, int]]:
    """Partitions whose rows are badly spread by ``rackwise.topology``'s definition, on the tree
    of usable brokers less those the partition may not use."""
    live = usable(cluster)
    base = tree_of(cluster, live, rack_aware=rack_aware)
    out = []
    for key, row in rows.items():
        tree = base
        if excluded.get(key):
            tree = tree_of(cluster, live - excluded[key], rack_aware=rack_aware)
        if spread_violations(tree, [list(row)]):
            out.append(key)
    return out


def stuck(cluster: ClusterInput) -> dict[tuple[str, int], set[int]]:
    """Per partition, the usable brokers that hold it in a failed log directory: a directory
    reported as failed, or, once any replica's directory is reported, an unreported one on a
    broker with a failed directory (kafka-log-dirs lists no replica of an offline directory)."""
    reps, dirs = cluster.replicas, cluster.log_dirs
    live = usable(cluster)
    failed_on = {
        b for b, ok in zip(dirs.broker_ids.tolist(), dirs.is_live.tolist(), strict=True) if not ok
    }
    reported = bool((reps.log_dirs != NO_LOG_DIR).any())
    out: dict[tuple[str, int], set[int]] = {}
    for t, p, b, d in zip(
        reps.topics.tolist(),
        reps.partitions.tolist(),
        reps.broker_ids.tolist(),
        reps.log_dirs.tolist(),
        strict=True,
    ):
        own = [i for i, o in enumerate(dirs.broker_ids.tolist()) if o == b]
        if d == NO_LOG_DIR and len(own) == 1:
            d = own[0]
        in_failed = not dirs.is_live[d] if d != NO_LOG_DIR else reported and b in failed_on
        if in_failed and b in live:
            out.setdefault((reps.topic_names[t], p), set()).add(b)
    return out


@dataclass(frozen=True)
class Shape:
    """What the cluster strategy may draw."""

    max_brokers: int = 12
    max_partitions: int = 24
    max_rf: int = 4
    failures: bool = True


@st.composite
def clusters(draw: st.DrawFn, shape: Shape | None = None) -> ClusterInput:
    """A random small cluster: 1-3 rack levels (some brokers without a rack), a random current
    assignment, 0-3 log directories per broker (some failed, capacities known or not), replica
    directories and sizes known or not."""
    shape = shape or Shape()
    levels = draw(st.integers(1, 3))
    fan = [draw(st.integers(1, 3)) for _ in range(levels)]
    num = draw(st.integers(2, shape.max_brokers))
    racks: dict[int, str | None] = {}
    for b in range(num):
        if draw(st.integers(0, 9)) == 0:
            racks[b * 2 + 1] = None
        else:
            racks[b * 2 + 1] = "".join(
                f"/l{lvl}n{draw(st.integers(0, fan[lvl] - 1))}" for lvl in range(levels)
            )
    ids = sorted(racks)
    dirs: dict[int, list[Dir]] = {}
    for b in ids:
        count = draw(st.integers(0, 3))
        dirs[b] = [
            (
                f"/data/d{k}",
                draw(st.sampled_from([UNKNOWN_BYTES, 1000, 4000])),
                not (shape.failures and draw(st.integers(0, 6)) == 0),
            )
            for k in range(count)
        ]
    assignment: dict[tuple[str, int], list[int]] = {}
    sizes: dict[tuple[str, int], int] = {}
    placed: dict[tuple[str, int, int], str] = {}
    for part in range(draw(st.integers(1, shape.max_partitions))):
        topic = draw(st.sampled_from(["a", "b"]))
        key = (topic, part)
        rf = draw(st.integers(1, min(shape.max_rf, num)))
        row = draw(st.permutations(ids))[:rf]
        assignment[key] = list(row)
        sizes[key] = draw(st.sampled_from([UNKNOWN_BYTES, 0, 10, 100, 700]))
        for b in row:
            if dirs[b] and draw(st.booleans()):
                placed[(topic, part, b)] = draw(st.sampled_from(dirs[b]))[0]
    return make(racks, assignment, dirs=dirs, sizes=sizes, placed=placed)
