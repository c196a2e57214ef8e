"""The failure-domain tree: racks as inner nodes, brokers as leaves.

Nodes are numbered breadth first from the root (node 0); the children of a node are its rack
components in name order, then its brokers in id order, and so have consecutive numbers. The
arrays are what placement kernels and audits iterate over, so they are plain int64 NumPy
arrays.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from rackwise.common import NO_BROKER
from rackwise.common.java import java_string_key
from rackwise.topology.rackpath import parse_rack_path

IntArray = npt.NDArray[np.int64]

ROOT: Final = 0


@dataclass(frozen=True, eq=False)
class RackTree:
    """A tree of racks over a set of brokers.

    ``paths[n]`` is the rack path of node n (``/`` for the root; a broker leaf has its rack's
    path), ``parent[n]`` its parent (-1 for the root), ``depth[n]`` its level (root 0),
    ``children[child_start[n] : child_start[n] + child_count[n]]`` its children,
    ``broker_of[n]`` the broker id of a leaf (``NO_BROKER`` for a rack), ``is_fenced[n]`` 1 for a
    fenced broker leaf, and ``num_brokers[n]`` / ``num_unfenced[n]`` the brokers beneath n.
    """

    paths: tuple[str, ...]
    parent: IntArray
    depth: IntArray
    child_start: IntArray
    child_count: IntArray
    children: IntArray
    broker_of: IntArray
    is_fenced: IntArray
    num_brokers: IntArray
    num_unfenced: IntArray
    leaf_of_broker: dict[int, int]

    @property
    def num_nodes(self) -> int:
        return len(self.paths)

    def is_broker(self, node: int) -> bool:
        return int(self.broker_of[node]) != NO_BROKER

    def path_to_root(self, node: int) -> list[int]:
        """``node`` and its ancestors, the root last."""
        out = [node]
        while out[-1] != ROOT:
            out.append(int(self.parent[out[-1]]))
        return out

    def height(self) -> int:
        """The number of rack levels (a flat cluster without racks has height 0)."""
        inner = [int(d) for d, b in zip(self.depth, self.broker_of, strict=True) if b == NO_BROKER]
        return max(inner)

    @classmethod
    def build(cls, brokers: Sequence[tuple[int, str | None, bool]]) -> RackTree:
        """Build the tree of ``(broker id, rack, is_fenced)``; raises on a malformed rack path."""
        rack_children: dict[tuple[str, ...], set[str]] = {(): set()}
        brokers_at: dict[tuple[str, ...], list[tuple[int, bool]]] = {}
        paths: dict[str | None, tuple[str, ...]] = {}  # each distinct rack parsed once
        for broker_id, rack, fenced in brokers:
            path = paths.get(rack)
            if path is None:
                path = paths[rack] = parse_rack_path(rack, broker_id=broker_id)
                for level in range(len(path)):
                    rack_children.setdefault(path[:level], set()).add(path[level])
                    rack_children.setdefault(path[: level + 1], set())
            brokers_at.setdefault(path, []).append((broker_id, fenced))
        return cls._from_maps(rack_children, brokers_at)

    @classmethod
    def _from_maps(
        cls,
        rack_children: dict[tuple[str, ...], set[str]],
        brokers_at: dict[tuple[str, ...], list[tuple[int, bool]]],
    ) -> RackTree:
        paths: list[str] = []
        parent: list[int] = []
        depth: list[int] = []
        broker_of: list[int] = []
        fenced: list[int] = []
        kids: list[list[int]] = []
        is_fenced = {b: f for members in brokers_at.values() for b, f in members if f}
        queue: list[tuple[tuple[str, ...], int, int | None]] = [((), -1, None)]
        head = 0
        while head < len(queue):
            path, up, broker = queue[head]
            node = head
            head += 1
            paths.append("/" + "/".join(path))
            parent.append(up)
            depth.append(len(path) + (1 if broker is not None else 0))
            kids.append([])
            if up >= 0:
                kids[up].append(node)
            if broker is not None:
                broker_of.append(broker)
                fenced.append(1 if is_fenced.get(broker, False) else 0)
                continue
            broker_of.append(NO_BROKER)
            fenced.append(0)
            for name in sorted(rack_children.get(path, ()), key=java_string_key):
                queue.append(((*path, name), node, None))
            for broker_id in sorted({b for b, _ in brokers_at.get(path, [])}):
                queue.append((path, node, broker_id))
        return cls._arrays(paths, parent, depth, broker_of, fenced, kids)

    @classmethod
    def _arrays(
        cls,
        paths: list[str],
        parent: list[int],
        depth: list[int],
        broker_of: list[int],
        fenced: list[int],
        kids: list[list[int]],
    ) -> RackTree:
        n = len(paths)
        num_brokers = np.zeros(n, dtype=np.int64)
        num_unfenced = np.zeros(n, dtype=np.int64)
        for node in range(n - 1, -1, -1):  # children come after parents (breadth first)
            if broker_of[node] != NO_BROKER:
                num_brokers[node] = 1
                num_unfenced[node] = 1 - fenced[node]
            if parent[node] >= 0:
                num_brokers[parent[node]] += num_brokers[node]
                num_unfenced[parent[node]] += num_unfenced[node]
        counts = np.array([len(k) for k in kids], dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        flat = np.array([c for k in kids for c in k], dtype=np.int64)
        return cls(
            paths=tuple(paths),
            parent=np.array(parent, dtype=np.int64),
            depth=np.array(depth, dtype=np.int64),
            child_start=starts,
            child_count=counts,
            children=flat,
            broker_of=np.array(broker_of, dtype=np.int64),
            is_fenced=np.array(fenced, dtype=np.int64),
            num_brokers=num_brokers,
            num_unfenced=num_unfenced,
            leaf_of_broker={b: i for i, b in enumerate(broker_of) if b != NO_BROKER},
        )
