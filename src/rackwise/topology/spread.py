"""How a partition's replicas sit on the failure-domain tree: spread and load per node."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rackwise.topology.tree import ROOT, RackTree


@dataclass(frozen=True, slots=True)
class SpreadViolation:
    """Partition ``partition`` has ``counts`` replicas under the children of ``node`` although a
    child with ``counts`` two below another still had a free broker."""

    partition: int
    node: str
    level: int
    counts: tuple[int, ...]


def spread_violations(
    tree: RackTree, assignment: Sequence[Sequence[int]], first_partition: int = 0
) -> list[SpreadViolation]:
    """Every (partition, node) where the replicas are not spread over the node's children as
    evenly as the brokers beneath them allow: some child holds two more replicas than another
    child that still has a broker free for the partition."""
    out: list[SpreadViolation] = []
    for offset, replicas in enumerate(assignment):
        count = np.zeros(tree.num_nodes, dtype=np.int64)
        for broker in replicas:
            for node in tree.path_to_root(tree.leaf_of_broker[broker]):
                count[node] += 1
        for node in range(tree.num_nodes):
            size = int(tree.child_count[node])
            if size < 2 or count[node] == 0:
                continue
            kids = tree.children[tree.child_start[node] : tree.child_start[node] + size]
            held = count[kids]
            has_free = tree.num_brokers[kids] > held
            if has_free.any() and held.max() - held[has_free].min() >= 2:
                out.append(
                    SpreadViolation(
                        partition=first_partition + offset,
                        node=tree.paths[node],
                        level=int(tree.depth[node]),
                        counts=tuple(int(c) for c in held),
                    )
                )
    return out


@dataclass(frozen=True, slots=True)
class NodeLoad:
    """Replicas and leaders under one node of the tree (a rack or a broker)."""

    level: int
    node: str
    broker: int | None
    num_brokers: int
    replicas: int
    leaders: int


def node_loads(tree: RackTree, assignment: Sequence[Sequence[int]]) -> list[NodeLoad]:
    """Replicas and leaders per node, racks by level then name, brokers last by id."""
    replicas = np.zeros(tree.num_nodes, dtype=np.int64)
    leaders = np.zeros(tree.num_nodes, dtype=np.int64)
    for row in assignment:
        for slot, broker in enumerate(row):
            for node in tree.path_to_root(tree.leaf_of_broker[broker]):
                replicas[node] += 1
                if slot == 0:
                    leaders[node] += 1
    rows = [
        NodeLoad(
            level=int(tree.depth[n]),
            node=tree.paths[n],
            broker=None if not tree.is_broker(n) else int(tree.broker_of[n]),
            num_brokers=int(tree.num_brokers[n]),
            replicas=int(replicas[n]),
            leaders=int(leaders[n]),
        )
        for n in range(tree.num_nodes)
    ]
    racks = sorted((r for r in rows if r.broker is None), key=lambda r: (r.level, r.node))
    brokers = sorted((r for r in rows if r.broker is not None), key=lambda r: r.broker or 0)
    return [r for r in racks if r.node != "/" or r.level == ROOT] + brokers
