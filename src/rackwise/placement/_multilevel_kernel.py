"""The multi-level placer's loop (see :mod:`rackwise.placement.multilevel` for the algorithm).

One kernel, compiled with numba for large placements: it replays the existing assignment
through the rings, then fills the empty slots of the work matrix row by row. Its helpers are
closures over the kernel's arrays (numba inlines them, with no argument passing), and every
array access in the loop indexes through :data:`~rackwise.common.jit.idx`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np

from rackwise.common import RandomSource, draw_ints
from rackwise.common.jit import idx, kernel
from rackwise.topology import RackTree
from rackwise.topology.tree import IntArray

UNSET: Final = -1
"""An empty replica slot in the work matrix; in the replay list, the end of a partition."""

TreeArrays = tuple[IntArray, IntArray, IntArray, IntArray, IntArray, IntArray, IntArray, IntArray]
"""``(position, broker_ring, first_child, child_count, parent, is_fenced, num_brokers,
num_unfenced)``: see :func:`tree_arrays`."""

RingArrays = tuple[
    IntArray, IntArray, IntArray, IntArray, IntArray, IntArray, IntArray, IntArray, IntArray
]
"""The fields of :class:`Rings`, in order."""


def tree_arrays(tree: RackTree) -> TreeArrays:
    """The tree as the kernel reads it. The tree is numbered breadth first, so the children of
    n are the nodes ``first_child[n]`` to ``first_child[n] + child_count[n] - 1``;
    ``position[n]`` is n's index among its parent's children; ``broker_ring[n]`` is 1 if all
    of n's children are brokers (its ring turns by pointer rather than by weight)."""
    position = np.zeros(tree.num_nodes, dtype=np.int64)
    position[tree.children] = np.arange(tree.children.size) - np.repeat(
        tree.child_start, tree.child_count
    )
    is_rack = (tree.broker_of < 0).astype(np.int64)
    racks_below = np.zeros(tree.num_nodes, dtype=np.int64)
    np.add.at(racks_below, tree.parent[1:], is_rack[1:])
    broker_ring = ((racks_below == 0) & (tree.child_count > 0)).astype(np.int64)
    first_child = np.full(tree.num_nodes, UNSET, dtype=np.int64)
    inner = tree.child_count > 0
    first_child[inner] = tree.children[tree.child_start[inner]]
    return (
        position,
        broker_ring,
        first_child,
        tree.child_count,
        tree.parent,
        tree.is_fenced,
        tree.num_brokers,
        tree.num_unfenced,
    )


@dataclass(frozen=True, slots=True)
class Rings:
    """Per-node ring state. ``ring_start[n]``: the random first child of n;
    ``leader_pointer`` / ``follower_pointer[n]``: the next child of a ring of brokers;
    ``leader_turns`` / ``all_turns[n]``: the leaders / replicas n has handed on;
    ``leader_picks`` / ``all_picks[c]``: those c received; ``least[n]``: the fewest replicas a
    broker of n's ring holds, and ``at_least[n]`` how many brokers hold that few."""

    ring_start: IntArray
    leader_pointer: IntArray
    follower_pointer: IntArray
    leader_turns: IntArray
    all_turns: IntArray
    leader_picks: IntArray
    all_picks: IntArray
    least: IntArray
    at_least: IntArray

    @classmethod
    def start(cls, tree: RackTree, random: RandomSource) -> Rings:
        """Fresh rings, each starting at a child drawn from ``random`` (one draw per inner
        node, in node order)."""
        inner = np.flatnonzero(tree.child_count > 0)
        ring_start = np.zeros(tree.num_nodes, dtype=np.int64)
        ring_start[inner] = draw_ints(random, tree.child_count[inner])

        def zeros() -> IntArray:
            return np.zeros(tree.num_nodes, dtype=np.int64)

        return cls(
            ring_start,
            ring_start.copy(),
            ring_start.copy(),
            zeros(),
            zeros(),
            zeros(),
            zeros(),
            zeros(),
            tree.child_count.copy(),
        )

    def arrays(self) -> RingArrays:
        return (
            self.ring_start,
            self.leader_pointer,
            self.follower_pointer,
            self.leader_turns,
            self.all_turns,
            self.leader_picks,
            self.all_picks,
            self.least,
            self.at_least,
        )


@kernel
def place_kernel(
    tree: TreeArrays, rings: RingArrays, replay: IntArray, work: IntArray, has_kept: bool
) -> None:
    """Replay ``replay`` (leaf nodes, leader first, ``UNSET`` after each partition) through the
    rings, then fill ``work`` (rows of leaf nodes) in row order: its ``UNSET`` slots if
    ``has_kept`` (the others hold kept replicas), else every slot (``work`` may hold
    anything)."""
    position, broker_ring, first_child, child_count, parent = tree[:5]
    is_fenced, num_brokers, num_unfenced = tree[5:]
    ring_start, leader_pointer, follower_pointer, leader_turns, all_turns = rings[:5]
    leader_picks, all_picks, least, at_least = rings[5:]
    # The current partition's replicas under each node, and those on unfenced brokers.
    count = np.zeros(parent.shape[0], dtype=np.int64)
    count_unfenced = np.zeros(parent.shape[0], dtype=np.int64)

    def mark(leaf: int) -> None:
        """Count a replica of the current partition on ``leaf``, up to the root."""
        unfenced = 1 - is_fenced[idx(leaf)]
        node = leaf
        while node >= 0:
            count[idx(node)] += 1
            count_unfenced[idx(node)] += unfenced
            node = parent[idx(node)]

    def unmark(leaf: int) -> None:
        """Clear the counts on the path from ``leaf`` up to a node already cleared (whose
        ancestors then are too)."""
        node = leaf
        while node >= 0 and count[idx(node)] != 0:
            count[idx(node)] = 0
            count_unfenced[idx(node)] = 0
            node = parent[idx(node)]

    def record(leaf: int, is_leader: bool) -> None:
        """Turn the rings on the path to ``leaf`` as if each node had chosen its path child."""
        child = leaf
        node = parent[idx(leaf)]
        while node >= 0:
            all_turns[idx(node)] += 1
            all_picks[idx(child)] += 1
            if is_leader:
                leader_turns[idx(node)] += 1
                leader_picks[idx(child)] += 1
            if broker_ring[idx(node)]:
                size = child_count[idx(node)]
                after = position[idx(child)] + 1
                after = 0 if after == size else after
                if is_leader:
                    leader_pointer[idx(node)] = after
                else:
                    follower_pointer[idx(node)] = after
                if all_picks[idx(child)] - 1 == least[idx(node)]:
                    at_least[idx(node)] -= 1
                    if at_least[idx(node)] == 0:  # every broker moved up: the new lowest load
                        first = first_child[idx(node)]
                        low = all_picks[idx(child)]
                        num_low = 0
                        for i in range(size):
                            load = all_picks[idx(first + i)]
                            if load < low:
                                low = load
                                num_low = 0
                            if load == low:
                                num_low += 1
                        least[idx(node)] = low
                        at_least[idx(node)] = num_low
            child = node
            node = parent[idx(node)]

    def leader_in_ring(node: int) -> int:
        """A ring of brokers hands a leader to the next free unfenced broker after the last."""
        first = first_child[idx(node)]
        size = child_count[idx(node)]
        j = leader_pointer[idx(node)]
        for _ in range(size):
            child: int = first + j
            j = 0 if j + 1 == size else j + 1
            if num_unfenced[idx(child)] > count_unfenced[idx(child)]:
                return child
        return UNSET

    def follower_in_ring(node: int) -> int:
        """A follower goes to the least loaded free broker, unfenced first, ties in ring order
        from the last one chosen; a broker at the ring's lowest load cannot be beaten."""
        first = first_child[idx(node)]
        size = child_count[idx(node)]
        j = follower_pointer[idx(node)]
        low = least[idx(node)]
        best = UNSET
        best_fenced = 1
        best_total = 0
        for _ in range(size):
            child = first + j
            j = 0 if j + 1 == size else j + 1
            if count[idx(child)] == num_brokers[idx(child)]:
                continue
            fenced_only = 0 if num_unfenced[idx(child)] > count_unfenced[idx(child)] else 1
            total = all_picks[idx(child)]
            if (
                best < 0
                or fenced_only < best_fenced
                or (fenced_only == best_fenced and total < best_total)
            ):
                best, best_fenced, best_total = child, fenced_only, total
                if fenced_only == 0 and total <= low:
                    break
        return best

    def by_weight(node: int, is_leader: bool) -> int:
        """The child with the fewest of the partition's replicas, then (followers) one with a
        free unfenced broker, then the most credit of a smooth weighted round robin, ties in
        ring order. Weights are unfenced brokers for leaders (only children with a free
        unfenced broker may lead) and all brokers for followers; a child's credit is its weight
        times the node's turns, less the node's weight times the child's picks. Leaders and
        followers have a loop each: a branch per child costs a seventh of the placement."""
        first = first_child[idx(node)]
        size = child_count[idx(node)]
        best = UNSET
        best_rank = 0  # the partition's replicas under the child; twice, +1 if only fenced ones
        best_credit = 0
        j = ring_start[idx(node)]
        if is_leader:
            node_weight = num_unfenced[idx(node)]
            node_turn = leader_turns[idx(node)] + 1
            for _ in range(size):
                child = first + j
                j = 0 if j + 1 == size else j + 1
                weight = num_unfenced[idx(child)]
                if weight == count_unfenced[idx(child)]:
                    continue
                rank = count[idx(child)]
                credit = weight * node_turn - node_weight * leader_picks[idx(child)]
                if best < 0 or rank < best_rank or (rank == best_rank and credit > best_credit):
                    best, best_rank, best_credit = child, rank, credit
            return best
        node_weight = num_brokers[idx(node)]
        node_turn = all_turns[idx(node)] + 1
        for _ in range(size):
            child = first + j
            j = 0 if j + 1 == size else j + 1
            held = count[idx(child)]
            weight = num_brokers[idx(child)]
            if held == weight:
                continue
            rank = 2 * held + (0 if num_unfenced[idx(child)] > count_unfenced[idx(child)] else 1)
            credit = weight * node_turn - node_weight * all_picks[idx(child)]
            if best < 0 or rank < best_rank or (rank == best_rank and credit > best_credit):
                best, best_rank, best_credit = child, rank, credit
        return best

    is_leader = True
    for leaf in replay:
        if leaf < 0:
            is_leader = True
            continue
        record(leaf, is_leader)
        is_leader = False
    for row in range(work.shape[0]):
        if has_kept:
            for slot in range(work.shape[1]):
                if work[row, slot] >= 0:
                    mark(work[row, slot])
        for slot in range(work.shape[1]):
            if has_kept and work[row, slot] >= 0:
                continue
            node = 0
            while child_count[idx(node)] > 0:
                if broker_ring[idx(node)]:
                    node = leader_in_ring(node) if slot == 0 else follower_in_ring(node)
                else:
                    node = by_weight(node, slot == 0)
            record(node, slot == 0)
            mark(node)
            work[row, slot] = node
        for slot in range(work.shape[1]):
            unmark(work[row, slot])
