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

KEY_SHIFT: Final = 1 << 32
"""A ring of brokers ranks a broker with f followers and l leaders by ``f * KEY_SHIFT + l``
for a follower (fewest followers, then fewest leaders) and by ``l * KEY_SHIFT + f + l`` for a
leader (fewest leaders, then fewest replicas). Balancing followers and leaders each, and
breaking each one's ties by the other, keeps every broker's replicas within one of the others'
whatever order leaders and followers arrive in: a broker that is one leader ahead of another is
never also one follower ahead of it, since the step that would make it so had the other broker
to choose at the same first key and a lower second one. Both keys only grow."""

TreeArrays = tuple[IntArray, IntArray, IntArray, IntArray, IntArray, IntArray, IntArray, IntArray]
"""``(position, broker_ring, first_child, child_count, parent, is_fenced, num_brokers,
num_unfenced)``: see :func:`tree_arrays`."""

RingArrays = tuple[
    IntArray,
    IntArray,
    IntArray,
    IntArray,
    IntArray,
    IntArray,
    IntArray,
    IntArray,
    IntArray,
    IntArray,
    IntArray,
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
    ``leader_picks`` / ``all_picks[c]``: those c received. A ring of brokers ranks its brokers
    by two keys (see :data:`KEY_SHIFT`); ``least_follower[n]`` is the
    lowest follower key in n's ring and ``at_least_follower[n]`` how many brokers have it, and
    ``least_leader`` / ``at_least_leader`` the same for the leader key."""

    ring_start: IntArray
    leader_pointer: IntArray
    follower_pointer: IntArray
    leader_turns: IntArray
    all_turns: IntArray
    leader_picks: IntArray
    all_picks: IntArray
    least_follower: IntArray
    at_least_follower: IntArray
    least_leader: IntArray
    at_least_leader: IntArray

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
            self.least_follower,
            self.at_least_follower,
            self.least_leader,
            self.at_least_leader,
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
    leader_picks, all_picks, least_follower, at_least_follower = rings[5:9]
    least_leader, at_least_leader = rings[9:]
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

    def lowest(node: int, for_leader: bool) -> None:
        """Find the lowest key of n's ring of brokers, and how many brokers have it."""
        first = first_child[idx(node)]
        low = -1
        num_low = 0
        for i in range(child_count[idx(node)]):
            leaders = leader_picks[idx(first + i)]
            followers = all_picks[idx(first + i)] - leaders
            key = (
                leaders * KEY_SHIFT + followers + leaders
                if for_leader
                else followers * KEY_SHIFT + leaders
            )
            if low < 0 or key < low:
                low = key
                num_low = 0
            if key == low:
                num_low += 1
        if for_leader:
            least_leader[idx(node)] = low
            at_least_leader[idx(node)] = num_low
        else:
            least_follower[idx(node)] = low
            at_least_follower[idx(node)] = num_low

    def moved_up(node: int, child: int, is_leader: bool) -> None:
        """Keep n's lowest keys after ``child`` took a replica (``is_leader``: as leader)."""
        leaders = leader_picks[idx(child)]
        followers = all_picks[idx(child)] - leaders
        # The child's keys before this replica.
        before_l = leaders - is_leader
        before_f = followers - (1 - is_leader)
        if before_l * KEY_SHIFT + before_f + before_l == least_leader[idx(node)]:
            at_least_leader[idx(node)] -= 1
            if at_least_leader[idx(node)] == 0:
                lowest(node, True)
        if before_f * KEY_SHIFT + before_l == least_follower[idx(node)]:
            at_least_follower[idx(node)] -= 1
            if at_least_follower[idx(node)] == 0:
                lowest(node, False)

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
                after = position[idx(child)] + 1
                after = 0 if after == child_count[idx(node)] else after
                if is_leader:
                    leader_pointer[idx(node)] = after
                else:
                    follower_pointer[idx(node)] = after
                moved_up(node, child, is_leader)
            child = node
            node = parent[idx(node)]

    def leader_in_ring(node: int) -> int:
        """A leader goes to the free unfenced broker with the lowest leader key, ties in ring
        order from the last one chosen; a broker at the ring's lowest key cannot be beaten."""
        first = first_child[idx(node)]
        size = child_count[idx(node)]
        j = leader_pointer[idx(node)]
        low = least_leader[idx(node)]
        best = UNSET
        best_key = 0
        for _ in range(size):
            child: int = first + j
            j = 0 if j + 1 == size else j + 1
            if num_unfenced[idx(child)] == count_unfenced[idx(child)]:
                continue
            leaders = leader_picks[idx(child)]
            key = leaders * KEY_SHIFT + all_picks[idx(child)]
            if best < 0 or key < best_key:
                best, best_key = child, key
                if key <= low:
                    break
        return best

    def follower_in_ring(node: int) -> int:
        """A follower goes to the free broker with the lowest follower key, unfenced first, ties
        in ring order from the last one chosen; a broker at the ring's lowest key cannot be
        beaten."""
        first = first_child[idx(node)]
        size = child_count[idx(node)]
        j = follower_pointer[idx(node)]
        low = least_follower[idx(node)]
        best = UNSET
        best_fenced = 1
        best_key = 0
        for _ in range(size):
            child = first + j
            j = 0 if j + 1 == size else j + 1
            if count[idx(child)] == num_brokers[idx(child)]:
                continue
            fenced_only = 0 if num_unfenced[idx(child)] > count_unfenced[idx(child)] else 1
            leaders = leader_picks[idx(child)]
            key = (all_picks[idx(child)] - leaders) * KEY_SHIFT + leaders
            if (
                best < 0
                or fenced_only < best_fenced
                or (fenced_only == best_fenced and key < best_key)
            ):
                best, best_fenced, best_key = child, fenced_only, key
                if fenced_only == 0 and key <= low:
                    break
        return best

    def by_weight(node: int, is_leader: bool) -> int:
        """The child with the fewest of the partition's replicas, then (followers) one with a
        free unfenced broker, then the most credit of a smooth weighted round robin, ties by
        the most credit of the round robin of all replicas, then in ring order. Leaders count
        leaders, weighted by unfenced brokers (only children with a free unfenced broker may
        lead); followers count followers, weighted by all brokers; a child's credit is its
        weight times the node's turns, less the node's weight times the child's picks. The
        tie-break is :data:`KEY_SHIFT`'s rule, so a child ahead by a leader is never ahead by a
        follower too. Leaders and followers have a loop each: a branch per child costs a
        seventh of the placement."""
        first = first_child[idx(node)]
        size = child_count[idx(node)]
        best = UNSET
        best_rank = 0  # the partition's replicas under the child; twice, +1 if only fenced ones
        best_credit = 0
        best_all = 0
        j = ring_start[idx(node)]
        all_weight = num_brokers[idx(node)]
        all_turn = all_turns[idx(node)] + 1
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
                if best >= 0 and (rank > best_rank or (rank == best_rank and credit < best_credit)):
                    continue
                total = num_brokers[idx(child)] * all_turn - all_weight * all_picks[idx(child)]
                if best < 0 or rank < best_rank or credit > best_credit or total > best_all:
                    best, best_rank, best_credit, best_all = child, rank, credit, total
            return best
        node_turn = all_turn - leader_turns[idx(node)]
        for _ in range(size):
            child = first + j
            j = 0 if j + 1 == size else j + 1
            held = count[idx(child)]
            weight = num_brokers[idx(child)]
            if held == weight:
                continue
            rank = 2 * held + (0 if num_unfenced[idx(child)] > count_unfenced[idx(child)] else 1)
            picks = all_picks[idx(child)]
            credit = weight * node_turn - all_weight * (picks - leader_picks[idx(child)])
            if best >= 0 and (rank > best_rank or (rank == best_rank and credit < best_credit)):
                continue
            total = weight * all_turn - all_weight * picks
            if best < 0 or rank < best_rank or credit > best_credit or total > best_all:
                best, best_rank, best_credit, best_all = child, rank, credit, total
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
