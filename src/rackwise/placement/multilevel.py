"""KIP-879's multi-level rack-aware replica placer.

Goals
    Spread each partition's replicas over the failure-domain tree (data centres, then racks, then
    hosts...) as evenly as its brokers allow, at every level; and, over many partitions, give each
    broker a fair share of replicas and of leaders.

Constraints
    No broker holds two replicas of a partition. A leader is never fenced. A fenced broker is used
    only where no unfenced broker gives the same spread (Kafka's striped placer decides the same
    way: spread wins over avoiding fenced brokers). Existing replicas never move.

What "fair" means
    Each node hands its replicas to its children in proportion to the brokers beneath them
    (unfenced brokers for leaders, all brokers for replicas), as far as the spread of each
    partition allows. On a symmetric tree this is plain round robin, and every broker gets the same
    number of replicas and of leaders (within one). On an uneven tree a big rack gets more than a
    small one, so brokers end up equally loaded wherever the spread rule leaves a choice; where it
    does not (one replica per data centre, whatever its size), spread wins.

    Worked example: racks ``/a`` with brokers 1, 2 and ``/b`` with brokers 3, 4, 5, 6; RF 1 and
    six partitions. Plain round robin over racks would give ``/a`` three replicas (1.5 per broker)
    and ``/b`` three (0.75 per broker). Weighted by brokers, ``/a`` gets 2 and ``/b`` gets 4: one
    replica per broker. With RF 2 the spread rule puts one replica of every partition in each
    rack, so ``/a``'s brokers carry three replicas each and ``/b``'s carry 1.5: spread wins.

Algorithm
    The rack paths form a tree (:class:`rackwise.topology.RackTree`); every node has a ring over
    its children that starts at a random child, so that following the rings from the root leads
    to a random leaf (KIP-879). A replica enters at the root and is passed down: at each node it
    goes to the child that (1) still has a broker free for this partition, (2) holds the fewest of
    the partition's replicas so far, (3) has a free unfenced broker, if any such child does, and
    (4) is furthest behind its share: a smooth weighted round robin, which on equal weights is the
    ring. Ties follow the ring. A node whose children are all brokers turns its ring directly: the
    next free broker after the last one chosen, unfenced first. Leaders and followers keep separate
    rings, so both are balanced. The rings carry over from partition to partition; adding
    partitions or replicas replays the existing assignment through them first, so placement picks
    up where it left off.

Example (3 data centres x 2 racks x 2 brokers, RF 3): every partition gets one replica in each
data centre, the leaders rotate over the data centres, and inside each data centre the racks
and brokers alternate, so 12 partitions give every broker exactly one leader and three replicas.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np

from rackwise.common import (
    InvalidReplicationFactorException,
    InvalidRequestException,
    RandomSource,
    UnknownBrokerException,
    draw_ints,
)
from rackwise.placement._jit import inline_kernel, kernel
from rackwise.placement.admin import validate_admin
from rackwise.placement.model import ArrayReplicaPlacer, Assignment, ClusterView, PlacementSpec
from rackwise.topology import RackTree
from rackwise.topology.tree import IntArray

LEADER: Final = 0
FOLLOWER: Final = 1
_UNSET: Final = -1  # an empty replica slot in the work matrix


class MultiLevelReplicaPlacer(ArrayReplicaPlacer):
    """Places replicas over a hierarchy of racks (``/dc/rack/host``). See the module docstring."""

    name = "multi-level"

    def place_array(
        self,
        spec: PlacementSpec,
        cluster: ClusterView,
        broker_ids: Sequence[int] | None = None,
    ) -> Assignment:
        brokers = cluster.select(broker_ids)
        _validate(spec, len(brokers), sum(1 for b in brokers if not b.fenced))
        seen: set[int] = set()
        for b in brokers:
            if b.id in seen:
                raise InvalidRequestException(f"Broker id {b.id} is listed twice")
            seen.add(b.id)
        tree = RackTree.build([(b.id, b.rack, b.fenced) for b in brokers])
        state = _RingState.start(tree, self._random)
        existing = cluster.topic_assignment(spec.topic)
        first = spec.first_partition
        work = np.full((spec.num_partitions, spec.replication_factor), _UNSET, dtype=np.int64)
        replay: list[int] = []
        for pid in sorted(existing):
            leaves = _leaves(tree, existing[pid], pid)
            replay.extend(leaves)
            replay.append(_UNSET)  # end of partition
            if first <= pid < first + spec.num_partitions:
                if len(leaves) > spec.replication_factor:
                    raise InvalidReplicationFactorException(
                        f"Partition {pid} already has {len(leaves)} replicas, more than the "
                        f"replication factor {spec.replication_factor}"
                    )
                work[pid - first, : len(leaves)] = leaves
        total = spec.num_partitions * spec.replication_factor + len(replay)
        position, broker_ring = _ring_shape(tree)
        run = _place_kernel.for_work(total)
        run(
            position,
            broker_ring,
            tree.child_start,
            tree.child_count,
            tree.children,
            tree.parent,
            tree.broker_of,
            tree.is_fenced,
            tree.num_brokers,
            tree.num_unfenced,
            state.ring_start,
            state.pointer,
            state.turns,
            state.picks,
            np.zeros(tree.num_nodes, dtype=np.int64),
            tree.child_count.copy(),
            np.array(replay, dtype=np.int64),
            work,
        )
        return tree.broker_of[work]


def _validate(spec: PlacementSpec, num_brokers: int, num_unfenced: int) -> None:
    """AdminUtils' checks and messages, then Kafka's striped placer's check for fencing."""
    validate_admin(spec, num_brokers)
    if num_unfenced == 0:
        raise InvalidReplicationFactorException("All brokers are currently fenced.")


def _ring_shape(tree: RackTree) -> tuple[IntArray, IntArray]:
    """``position[n]``: n's index among its parent's children; ``broker_ring[n]``: 1 if all of
    n's children are brokers (its ring turns by pointer rather than by weight)."""
    position = np.zeros(tree.num_nodes, dtype=np.int64)
    position[tree.children] = np.arange(tree.children.size) - np.repeat(
        tree.child_start, tree.child_count
    )
    is_rack = (tree.broker_of < 0).astype(np.int64)
    racks_below = np.zeros(tree.num_nodes, dtype=np.int64)
    np.add.at(racks_below, tree.parent[1:], is_rack[1:])
    broker_ring = ((racks_below == 0) & (tree.child_count > 0)).astype(np.int64)
    return position, broker_ring


def _leaves(tree: RackTree, replicas: Sequence[int], pid: int) -> list[int]:
    out: list[int] = []
    for broker in replicas:
        leaf = tree.leaf_of_broker.get(broker)
        if leaf is None:
            raise UnknownBrokerException(
                f"Partition {pid} has a replica on broker {broker}, which is not a candidate broker"
            )
        if leaf in out:
            raise InvalidRequestException(f"Partition {pid} lists broker {broker} twice")
        out.append(leaf)
    return out


class _RingState:
    """Per-node ring state, for leaders (row 0) and followers (row 1): ``ring_start[n]`` the
    random first child of n, ``pointer[role, n]`` the next child of a ring of brokers,
    ``turns[role, n]`` the replicas n has handed on, ``picks[role, c]`` those c received."""

    def __init__(
        self, ring_start: IntArray, pointer: IntArray, turns: IntArray, picks: IntArray
    ) -> None:
        self.ring_start = ring_start
        self.pointer = pointer
        self.turns = turns
        self.picks = picks

    @classmethod
    def start(cls, tree: RackTree, random: RandomSource) -> _RingState:
        inner = np.flatnonzero(tree.child_count > 0)
        ring_start = np.zeros(tree.num_nodes, dtype=np.int64)
        ring_start[inner] = draw_ints(random, tree.child_count[inner])
        pointer = np.vstack([ring_start, ring_start]).astype(np.int64)
        turns = np.zeros((2, tree.num_nodes), dtype=np.int64)
        picks = np.zeros((2, tree.num_nodes), dtype=np.int64)
        return cls(ring_start, pointer, turns, picks)


@kernel
def _place_kernel(
    position: IntArray,
    broker_ring: IntArray,
    child_start: IntArray,
    child_count: IntArray,
    children: IntArray,
    parent: IntArray,
    broker_of: IntArray,
    is_fenced: IntArray,
    num_brokers: IntArray,
    num_unfenced: IntArray,
    ring_start: IntArray,
    pointer: IntArray,
    turns: IntArray,
    picks: IntArray,
    least: IntArray,
    at_least: IntArray,
    replay: IntArray,
    work: IntArray,
) -> None:
    """Replay ``replay`` (leaf nodes, -1 between partitions, leader first) through the rings,
    then fill the empty slots of ``work`` (rows of leaf nodes, -1 = to place) in row order."""
    n = parent.shape[0]
    count = np.zeros(n, dtype=np.int64)
    free = num_brokers.copy()
    free_unfenced = num_unfenced.copy()
    role = LEADER
    for leaf in replay:
        if leaf < 0:
            role = LEADER
            continue
        _record(
            leaf,
            role,
            position,
            broker_ring,
            parent,
            child_start,
            child_count,
            children,
            num_brokers,
            num_unfenced,
            pointer,
            turns,
            picks,
            least,
            at_least,
        )
        role = FOLLOWER
    for row in range(work.shape[0]):
        for slot in range(work.shape[1]):
            if work[row, slot] >= 0:
                _mark(work[row, slot], 1, parent, is_fenced, count, free, free_unfenced)
        for slot in range(work.shape[1]):
            if work[row, slot] >= 0:
                continue
            slot_role = LEADER if slot == 0 else FOLLOWER
            leaf = _descend(
                slot_role,
                broker_ring,
                child_start,
                child_count,
                children,
                broker_of,
                count,
                free,
                free_unfenced,
                num_brokers,
                num_unfenced,
                ring_start,
                pointer,
                turns,
                picks,
                least,
                at_least,
            )
            _record(
                leaf,
                slot_role,
                position,
                broker_ring,
                parent,
                child_start,
                child_count,
                children,
                num_brokers,
                num_unfenced,
                pointer,
                turns,
                picks,
                least,
                at_least,
            )
            _mark(leaf, 1, parent, is_fenced, count, free, free_unfenced)
            work[row, slot] = leaf
        for slot in range(work.shape[1]):
            _mark(work[row, slot], -1, parent, is_fenced, count, free, free_unfenced)


@inline_kernel
def _mark(
    leaf: int,
    sign: int,
    parent: IntArray,
    is_fenced: IntArray,
    count: IntArray,
    free: IntArray,
    free_unfenced: IntArray,
) -> None:
    """Add (sign 1) or remove (sign -1) a replica of the current partition on ``leaf``."""
    unfenced = 1 - is_fenced[leaf]
    node = leaf
    while node >= 0:
        count[node] += sign
        free[node] -= sign
        free_unfenced[node] -= sign * unfenced
        node = parent[node]


@inline_kernel
def _descend(
    role: int,
    broker_ring: IntArray,
    child_start: IntArray,
    child_count: IntArray,
    children: IntArray,
    broker_of: IntArray,
    count: IntArray,
    free: IntArray,
    free_unfenced: IntArray,
    num_brokers: IntArray,
    num_unfenced: IntArray,
    ring_start: IntArray,
    pointer: IntArray,
    turns: IntArray,
    picks: IntArray,
    least: IntArray,
    at_least: IntArray,
) -> int:
    """The leaf a new replica of the current partition goes to."""
    node = 0
    while broker_of[node] < 0:
        start = child_start[node]
        size = child_count[node]
        best = -1
        if broker_ring[node]:
            # A ring of brokers: the next free one after the last chosen, unfenced first.
            j = pointer[role, node]
            best_fenced = 1
            best_total = 0
            for _ in range(size):
                child = children[start + j]
                j += 1
                if j == size:
                    j = 0
                if free[child] == 0 or (role == 0 and free_unfenced[child] == 0):
                    continue
                if role == 0:  # leaders turn the ring: the next free unfenced broker
                    best = child
                    break
                # Followers go to the least loaded free broker, unfenced first, ties in ring
                # order; a broker at the rack's lowest load cannot be beaten.
                fenced_only = 0 if free_unfenced[child] > 0 else 1
                total = picks[0, child] + picks[1, child]
                if (
                    best < 0
                    or fenced_only < best_fenced
                    or (fenced_only == best_fenced and total < best_total)
                ):
                    best, best_fenced, best_total = child, fenced_only, total
                    if fenced_only == 0 and total <= least[node]:
                        break
        else:
            best_key0 = 0
            best_key1 = 0
            best_credit = 0
            node_weight = num_unfenced[node] if role == 0 else num_brokers[node]
            # Leaders balance leaders; followers balance all replicas (leaders included).
            node_turn = turns[0, node] + 1 if role == 0 else turns[0, node] + turns[1, node] + 1
            j = ring_start[node]
            for _ in range(size):
                child = children[start + j]
                j += 1
                if j == size:
                    j = 0
                if free[child] == 0 or (role == 0 and free_unfenced[child] == 0):
                    continue
                weight = num_unfenced[child] if role == 0 else num_brokers[child]
                if weight == 0:
                    continue
                key0 = count[child]
                key1 = 0 if free_unfenced[child] > 0 else 1
                # Smooth weighted round robin, kept lazily: a child's credit after this turn is
                # its weight times the node's turns minus the node's weight times its picks.
                held = picks[0, child] if role == 0 else picks[0, child] + picks[1, child]
                c = weight * node_turn - node_weight * held
                if (
                    best < 0
                    or key0 < best_key0
                    or (key0 == best_key0 and key1 < best_key1)
                    or (key0 == best_key0 and key1 == best_key1 and c > best_credit)
                ):
                    best, best_key0, best_key1, best_credit = child, key0, key1, c
        node = best
    return node


@inline_kernel
def _record(
    leaf: int,
    role: int,
    position: IntArray,
    broker_ring: IntArray,
    parent: IntArray,
    child_start: IntArray,
    child_count: IntArray,
    children: IntArray,
    num_brokers: IntArray,
    num_unfenced: IntArray,
    pointer: IntArray,
    turns: IntArray,
    picks: IntArray,
    least: IntArray,
    at_least: IntArray,
) -> None:
    """Turn the rings on the path to ``leaf`` as if each node had chosen its path child."""
    child = leaf
    node = parent[leaf]
    while node >= 0:
        start = child_start[node]
        size = child_count[node]
        turns[role, node] += 1
        picks[role, child] += 1
        if broker_ring[node]:
            after = position[child] + 1
            pointer[role, node] = 0 if after == size else after
            if picks[0, child] + picks[1, child] - 1 == least[node]:
                at_least[node] -= 1
                if at_least[node] == 0:  # every broker moved up: find the new lowest load
                    low = picks[0, child] + picks[1, child]
                    num_low = 0
                    for i in range(size):
                        kid = children[start + i]
                        load = picks[0, kid] + picks[1, kid]
                        if load < low:
                            low = load
                            num_low = 0
                        if load == low:
                            num_low += 1
                    least[node] = low
                    at_least[node] = num_low
        child = node
        node = parent[node]
