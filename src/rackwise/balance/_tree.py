"""The rack tree as the planner walks it: broker indices instead of ids, each broker's chain of
nodes from the root, and plain Python lists for the per-partition loops."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rackwise.balance.model import BoolArray, IntArray
from rackwise.topology import RackTree, as_rack_path


@dataclass(frozen=True, eq=False)
class PlanTree:
    """``chains[b]``: the nodes from the root (column 0) down to broker b's leaf, ``-1`` after
    it, and a row of ``-1`` for a broker outside the tree; ``cap[n]``: brokers beneath node n;
    ``broker_only[n]``: every child of n is a broker (no partition can be badly spread there:
    each broker holds at most one replica of it)."""

    rack_tree: RackTree
    leaf: IntArray
    chains: IntArray
    chain_list: tuple[tuple[int, ...], ...]
    children: tuple[tuple[int, ...], ...]
    cap: tuple[int, ...]
    broker_only: tuple[bool, ...]
    sorted_caps: tuple[tuple[int, ...], ...]
    node_broker: tuple[int, ...]
    subtree: tuple[IntArray, ...]

    @property
    def num_nodes(self) -> int:
        return len(self.cap)

    def contains(self, broker: int) -> bool:
        return bool(self.leaf[broker] >= 0)


def flat_racks(racks: Sequence[str | None]) -> list[str | None]:
    """KIP-36's view of racks: every distinct rack path becomes one rack directly under the root
    (``/dc1/r1`` -> ``/dc1|r1``), so only leaf racks count for spread."""
    names: dict[str, str] = {}
    used: set[str] = set()
    out: list[str | None] = []
    for rack in racks:
        path = as_rack_path(rack)
        if path is None:
            out.append(None)
            continue
        if path not in names:
            name = "/" + path[1:].replace("/", "|")
            suffix = 1
            while name in used:
                suffix += 1
                name = f"/{path[1:].replace('/', '|')}#{suffix}"
            names[path] = name
            used.add(name)
        out.append(names[path])
    return out


def build_tree(
    broker_ids: IntArray, racks: Sequence[str | None], members: BoolArray, *, flat: bool
) -> PlanTree:
    """The tree of the brokers with ``members[b]`` (racks flattened with ``flat``)."""
    paths = flat_racks(racks) if flat else [as_rack_path(r) for r in racks]
    chosen = np.flatnonzero(members)
    tree = RackTree.build([(int(broker_ids[b]), paths[b], False) for b in chosen])
    num_brokers = broker_ids.size
    leaf = np.full(num_brokers, -1, np.int64)
    for b in chosen:
        leaf[b] = tree.leaf_of_broker[int(broker_ids[b])]
    index_of_id = {int(broker_ids[b]): int(b) for b in chosen}
    node_broker = tuple(index_of_id[int(x)] if x >= 0 else -1 for x in tree.broker_of.tolist())
    chain_list = tuple(
        tuple(reversed(tree.path_to_root(int(leaf[b])))) if leaf[b] >= 0 else ()
        for b in range(num_brokers)
    )
    height = max((len(c) for c in chain_list), default=1)
    chains = np.full((num_brokers, max(height, 1)), -1, np.int64)
    for i, chain in enumerate(chain_list):
        chains[i, : len(chain)] = chain
    starts, counts, flat_children = (
        tree.child_start.tolist(),
        tree.child_count.tolist(),
        tree.children.tolist(),
    )
    children = tuple(
        tuple(flat_children[starts[n] : starts[n] + counts[n]]) for n in range(tree.num_nodes)
    )
    cap = tuple(int(c) for c in tree.num_brokers.tolist())
    broker_only = tuple(all(node_broker[k] >= 0 for k in kids) for kids in children)
    sorted_caps = tuple(tuple(sorted(cap[k] for k in kids)) for kids in children)
    under: list[list[int]] = [[] for _ in range(tree.num_nodes)]
    for i, chain in enumerate(chain_list):
        for node in chain:
            under[node].append(i)
    return PlanTree(
        rack_tree=tree,
        leaf=leaf,
        chains=chains,
        chain_list=chain_list,
        children=children,
        cap=cap,
        broker_only=broker_only,
        sorted_caps=sorted_caps,
        node_broker=node_broker,
        subtree=tuple(np.array(u, dtype=np.int64) for u in under),
    )
