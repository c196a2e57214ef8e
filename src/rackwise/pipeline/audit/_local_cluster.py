"""One cluster audited in process: the figures of :mod:`rackwise.pipeline.audit.spark`, computed
with NumPy from the cluster's replica columns and its small tree tables.

Goals
    Exactly the rows the Spark transforms give for the cluster (a test compares them on random
    fleets), in a fraction of a second for a cluster of a hundred thousand replicas.
Constraints
    The tree is the one :mod:`rackwise.pipeline.audit.tree` builds for Spark (node ids, level
    names, directory numbers): the same rows, not a second construction. Replicas are
    vectorised; only distinct placements (a few thousand at most) are looked at one by one.
Algorithm
    1. Key every replica by integers: its broker's rack node (``leaf``), its directory number
       (0 unknown) and liveness, its partition.
    2. A partition's placement is the sorted list of ``leaf * 2 + is_dead`` of its replicas;
       partitions with the same number of replicas are grouped by placement in one
       ``np.unique`` over rows.
    3. Per placement: the spread violations of its racks (:func:`spread_of`) and the racks'
       exposure over its live replicas (:func:`rack_exposure`), weighted by its partitions.
    4. Per (broker, directory): replicas, live replicas, leaders, bytes, and the fragile
       partitions' exposure (``1 <= live <= min.insync.replicas``), each live replica charged
       to its broker and directory.
Worked example
    Racks ``/dc1/r1`` (2 brokers) and ``/dc1/r2`` (2), a partition on both brokers of
    ``/dc1/r1``: its placement is ``(leaf(r1), leaf(r1))``; at ``/dc1`` the children hold (2, 0),
    ``r2`` is free with 0, so 2 - 0 >= 2: one violation row at depth 1.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rackwise.common import NO_BROKER
from rackwise.pipeline.ingest.arrays import Encoded, filled, group_ids

Violation = tuple[int, str, str, int, int, int]
"""``depth, level, node, replicas, max_child_replicas, min_free_child_replicas``."""

_DEAD: Final = 1
_KEY_BITS: Final = 32
_LOW: Final = (1 << _KEY_BITS) - 1


@dataclass(frozen=True)
class Tree:
    """One cluster's rack nodes (``NODES_DDL`` rows) and brokers (``LEAVES_DDL`` rows) as
    arrays: per node id its path, depth, level, brokers beneath, children, parent, and the
    rack nodes among its children; per broker its rack node and the nodes above it."""

    paths: dict[int, str]
    depth: dict[int, int]
    level: dict[int, str]
    num_brokers: dict[int, int]
    num_children: dict[int, int]
    ancestors: dict[int, list[int]]
    child_racks: dict[int, list[int]]
    brokers: np.ndarray
    homes: np.ndarray
    rack: dict[int, str | None]

    @classmethod
    def of(cls, nodes: Sequence[tuple[Any, ...]], leaves: Sequence[tuple[Any, ...]]) -> Tree:
        node_of = {row[2]: int(row[1]) for row in nodes}
        child_racks: dict[int, list[int]] = defaultdict(list)
        ancestors = {}
        for row in nodes:
            chain = [node_of[path] for path in row[7]]
            ancestors[int(row[1])] = chain
            if len(chain) >= 2:
                child_racks[chain[-2]].append(int(row[1]))
        order = sorted(range(len(leaves)), key=lambda i: leaves[i][2])
        return cls(
            paths={int(r[1]): r[2] for r in nodes},
            depth={int(r[1]): int(r[3]) for r in nodes},
            level={int(r[1]): r[4] for r in nodes},
            num_brokers={int(r[1]): int(r[5]) for r in nodes},
            num_children={int(r[1]): int(r[6]) for r in nodes},
            ancestors=ancestors,
            child_racks=dict(child_racks),
            brokers=np.array([leaves[i][2] for i in order], np.int64),
            homes=np.array([leaves[i][4] for i in order], np.int64),
            rack={int(r[2]): r[3] for r in leaves},
        )


def spread_of(tree: Tree, leaves: tuple[int, ...]) -> list[Violation]:
    """The spread violations of a placement (its replicas' rack nodes): every node holding a
    replica whose children hold them less evenly than the brokers allow (some child holds two
    or more more than a child with a broker free; a child holding none is free)."""
    held: dict[int, int] = defaultdict(int)
    direct: dict[int, int] = defaultdict(int)
    for leaf in leaves:
        direct[leaf] += 1
        for node in tree.ancestors[leaf]:
            held[node] += 1
    out = []
    for node in sorted(held):
        children = tree.num_children[node]
        if children < 2:
            continue
        counts = [(held.get(c, 0), tree.num_brokers[c]) for c in tree.child_racks.get(node, ())]
        counts = [(h, cap) for h, cap in counts if h > 0] + [(1, 1)] * direct.get(node, 0)
        most = max(h for h, _ in counts)
        free = [h for h, cap in counts if cap > h]
        if len(counts) < children:
            least: int | None = 0
        else:
            least = min(free) if free else None
        if least is not None and most - least >= 2:
            row = (tree.depth[node], tree.level[node], tree.paths[node], held[node], most, least)
            out.append(row)
    return out


def rack_exposure(
    tree: Tree, live_leaves: tuple[int, ...], weight: int, min_isr: int, into: dict[int, list[int]]
) -> None:
    """Add a placement's rack exposure to ``into`` (node: ``[partitions, offline_if_lost,
    under_min_isr_if_lost]``): each rack node below the root holding a live replica, and what
    losing it leaves."""
    held: dict[int, int] = defaultdict(int)
    for leaf in live_leaves:
        for node in tree.ancestors[leaf][1:]:
            held[node] += 1
    live = len(live_leaves)
    for node, count in held.items():
        figures = into.setdefault(node, [0, 0, 0])
        remaining = live - count
        figures[0] += weight
        figures[1] += weight if remaining == 0 else 0
        figures[2] += weight if 1 <= remaining < min_isr else 0


def sums_by(index: np.ndarray, values: np.ndarray, size: int) -> np.ndarray:
    """``values`` summed per ``index`` (``0 <= index < size``), exactly (int64)."""
    out = np.zeros(size, np.int64)
    if index.size:
        np.add.at(out, index, values.astype(np.int64))
    return out


@dataclass
class ReplicaKeys:
    """The cluster's replicas keyed by integers (see the module notes)."""

    partition: np.ndarray
    broker_row: np.ndarray
    dir_number: np.ndarray
    is_live: np.ndarray
    is_leader: np.ndarray
    leaf: np.ndarray
    size: np.ndarray
    first_row: np.ndarray
    topics: list[Any] = field(default_factory=list)


def replica_keys(
    replicas: pa.Table, tree: Tree, dirs: Sequence[tuple[Any, ...]]
) -> tuple[ReplicaKeys, np.ndarray, int]:
    """The replicas keyed (those on brokers the cluster lacks are left out, as the Spark
    audit's inner join leaves them), with the cluster's directory numbers and liveness as
    partitions' numbers and the width of a broker's directory numbers (the largest plus one)."""
    brokers = filled(replicas.column("broker_id"), NO_BROKER)
    at = np.minimum(np.searchsorted(tree.brokers, brokers), max(0, tree.brokers.size - 1))
    known = tree.brokers.size > 0
    on_cluster = (tree.brokers[at] == brokers) if known else np.zeros(brokers.size, np.bool_)
    if not on_cluster.all():
        replicas = replicas.filter(pa.array(on_cluster))
        at = at[on_cluster]
    paths = sorted({row[3] for row in dirs})
    width = 1 + max((int(row[4]) for row in dirs), default=0)
    number = np.zeros((tree.brokers.size, max(1, len(paths))), np.int64)
    live = np.ones((tree.brokers.size, width), np.bool_)
    for row in dirs:
        b = int(np.searchsorted(tree.brokers, row[2]))
        number[b, paths.index(row[3])] = int(row[4])
        live[b, int(row[4])] = bool(row[6])
    code = Encoded.of(replicas.column("log_dir")).index_in(pa.array(paths, pa.string()))
    dir_number = np.where(code >= 0, number[at, np.maximum(code, 0)], 0)
    partition = np.asarray(replicas.column("partition").to_numpy(), np.int64)
    pid = group_ids(Encoded.of(replicas.column("topic")).codes, partition & _LOW)
    first = np.unique(pid, return_index=True)[1]
    keys = ReplicaKeys(
        partition=pid,
        broker_row=at,
        dir_number=dir_number,
        is_live=live[at, dir_number],
        is_leader=np.asarray(replicas.column("replica_index").to_numpy(), np.int64) == 0,
        leaf=tree.homes[at],
        size=np.asarray(pc.fill_null(replicas.column("size_bytes"), 0).to_numpy(), np.int64),
        first_row=first,
        topics=replicas.column("topic").take(pa.array(first)).to_pylist(),
    )
    partitions = np.asarray(replicas.column("partition").to_numpy(), np.int64)[first]
    return keys, partitions, width


@dataclass(frozen=True)
class Placements:
    """Distinct placements: ``codes[i]`` the sorted ``leaf * 2 + is_dead`` of placement i,
    ``weight[i]`` its partitions; ``of_partition[p]`` the placement of partition p."""

    codes: list[tuple[int, ...]]
    weight: np.ndarray
    of_partition: np.ndarray


def placements(keys: ReplicaKeys) -> Placements:
    """Group the partitions by placement (see the module notes)."""
    return group_codes(keys.partition, keys.leaf * 2 + np.where(keys.is_live, 0, _DEAD))


def group_codes(partition: np.ndarray, code: np.ndarray) -> Placements:
    """Group the partitions (``partition[i]`` the partition of row i, numbered from 0) by
    the sorted multiset of their rows' non-negative ``code``."""
    num_partitions = int(partition.max()) + 1 if partition.size else 0
    base = int(code.max(initial=0)) + 1
    sorted_codes = code[np.argsort(partition * base + code)]
    counts = np.bincount(partition, minlength=num_partitions)
    starts = np.cumsum(counts) - counts
    of_partition = np.zeros(num_partitions, np.int64)
    codes: list[tuple[int, ...]] = []
    weights: list[int] = []
    for size in np.unique(counts).tolist():
        chosen = np.flatnonzero(counts == size)
        rows = sorted_codes[starts[chosen, None] + np.arange(size)]
        if base**size < 2**62:  # each placement one integer: hashing, not sorting rows
            packed = rows @ (base ** np.arange(size, dtype=np.int64))
            _, first, inverse, weight = np.unique(
                packed, return_index=True, return_inverse=True, return_counts=True
            )
            unique = rows[first]
        else:
            unique, inverse, weight = np.unique(
                rows, axis=0, return_inverse=True, return_counts=True
            )
        of_partition[chosen] = len(codes) + inverse.reshape(-1)
        codes += [tuple(int(c) for c in row) for row in unique]
        weights += weight.tolist()
    return Placements(codes, np.array(weights, np.int64), of_partition)
