"""The planner's working state: the target partition matrix and the loads it implies, changed only
through :meth:`Work.place` so that counts, bytes and the per-node room stay in step."""

from __future__ import annotations

from typing import Final, Protocol

import numpy as np

from rackwise.balance._layout import PAD, Layout
from rackwise.balance._shares import fixed_splits
from rackwise.balance._tree import PlanTree
from rackwise.balance.model import NO_LOG_DIR, FloatArray, IntArray

# Why a replica was put on a broker it was not on (``Work.cause``): the goal that moved it.
NOT_MOVED: Final = 0
OFFLINE: Final = 1
SPREAD: Final = 2
REPLICAS: Final = 3
BYTES: Final = 4

DOMAIN_LOSS: Final = 5


class MoveGuard(Protocol):
    """What a higher goal lets the balance goals do: move partition p's replica from broker
    ``src`` to ``dst`` (``DomainLossGoal``'s guard)."""

    def allows(self, p: int, src: int, dst: int) -> bool: ...


HOMELESS: Final = -2
"""A replica position whose replica was dropped and is not placed yet (only inside a repair)."""


class Work:
    """Mutable target of one planning run.

    ``tgt[p, j]`` is the broker (index) of replica position j of partition p; a position keeps
    its replica's size as it moves. ``count``/``load`` are replicas and bytes per broker,
    ``room[n]`` the fair share minus the replicas held beneath tree node n, ``excluded[p]`` the
    brokers partition p may not use (they hold it in a failed log directory).
    """

    def __init__(self, lay: Layout, tree: PlanTree, shares: FloatArray) -> None:
        self.lay = lay
        self.tree = tree
        self.tgt = lay.cur.copy()
        self.tgt_dir = np.where(lay.keepable, lay.cur_dir, NO_LOG_DIR)
        self.cause = np.zeros(lay.cur.shape, np.int8)
        self.size = lay.size.copy()
        self.size_order = np.argsort(self.size.ravel(), kind="stable")
        present = lay.cur != PAD
        brokers = lay.num_brokers
        self.count = np.bincount(lay.cur[present], minlength=brokers).astype(np.int64)
        self.load = np.bincount(
            lay.cur[present], weights=lay.size[present], minlength=brokers
        ).astype(np.int64)
        self.shares = shares
        self.fixed = fixed_splits(tree, lay.rf)
        room = np.zeros(tree.num_nodes, np.float64)
        for b in range(brokers):
            chain = tree.chain_list[b]
            if chain:
                room[list(chain)] += shares[b] - self.count[b]
        self.room: list[float] = room.tolist()
        self.excluded: dict[int, tuple[int, ...]] = _excluded(lay, tree)
        self._regions: dict[int, list[tuple[int, IntArray]]] = {}
        self.guard: MoveGuard | None = None

    def allows(self, p: int, src: int, dst: int) -> bool:
        """Whether the goals above the balance ones let p's replica move from src to dst."""
        return self.guard is None or self.guard.allows(p, src, dst)

    def regions(self, broker: int) -> list[tuple[int, IntArray]]:
        """:func:`regions` of ``broker``, cached."""
        if broker not in self._regions:
            self._regions[broker] = regions(self.tree, broker)
        return self._regions[broker]

    def holds(self, p: int, broker: int) -> bool:
        row = self.tgt[p]
        return bool((row == broker).any())

    def is_original(self, p: int, broker: int) -> bool:
        return bool((self.lay.cur[p] == broker).any())

    def place(self, p: int, j: int, dst: int, cause: int) -> None:
        """Put replica position j of partition p on broker ``dst`` (a broker it is not on)."""
        src = int(self.tgt[p, j])
        size = int(self.size[p, j])
        if src >= 0:  # not PAD or HOMELESS
            self.count[src] -= 1
            self.load[src] -= size
            for node in self.tree.chain_list[src]:
                self.room[node] += 1.0
        self.count[dst] += 1
        self.load[dst] += size
        for node in self.tree.chain_list[dst]:
            self.room[node] -= 1.0
        self.tgt[p, j] = dst
        original = np.flatnonzero(self.lay.cur[p] == dst)
        if original.size:  # back on a broker that had it: its old directory, nothing copied
            k = int(original[0])
            self.cause[p, j] = NOT_MOVED
            self.tgt_dir[p, j] = self.lay.cur_dir[p, k] if self.lay.keepable[p, k] else NO_LOG_DIR
        else:
            self.cause[p, j] = cause
            self.tgt_dir[p, j] = NO_LOG_DIR

    def drop(self, p: int, j: int) -> None:
        """Take replica position j of partition p off its broker, to be placed again."""
        src = int(self.tgt[p, j])
        size = int(self.size[p, j])
        self.count[src] -= 1
        self.load[src] -= size
        for node in self.tree.chain_list[src]:
            self.room[node] += 1.0
        self.tgt[p, j] = HOMELESS

    def row(self, p: int) -> list[int]:
        return [int(b) for b in self.tgt[p] if b >= 0]


def _excluded(lay: Layout, tree: PlanTree) -> dict[int, tuple[int, ...]]:
    """Partitions held in a failed directory of a broker that is still in the tree: that broker
    cannot take the partition back (Kafka refuses to create a replica of a partition that is
    offline on it), so it is not free for that partition."""
    stuck = (lay.cur != PAD) & ~lay.keepable
    stuck &= tree.leaf[np.maximum(lay.cur, 0)] >= 0
    out: dict[int, tuple[int, ...]] = {}
    for p, j in zip(*np.nonzero(stuck), strict=True):
        out[int(p)] = (*out.get(int(p), ()), int(lay.cur[p, j]))
    return out


def regions(tree: PlanTree, broker: int) -> list[tuple[int, IntArray]]:
    """The brokers near ``broker``, nearest first, each with the node that encloses them: its
    own rack's brokers, then each enclosing node's brokers outside the previous region."""
    chain = tree.chain_list[broker]
    out: list[tuple[int, IntArray]] = []
    inner: IntArray = np.zeros(0, np.int64)
    for node in reversed(chain[:-1]):
        everyone = tree.subtree[node]
        out.append((node, everyone[~np.isin(everyone, inner)] if inner.size else everyone))
        inner = everyone
    return out


def swap_slots(work: Work, p: int, a: int, b: int) -> None:
    """Exchange replica positions a and b of partition p (a leader change: no data moves)."""
    for array in (work.tgt, work.tgt_dir, work.cause, work.size):
        array[p, a], array[p, b] = array[p, b], array[p, a]


def swap_many(work: Work, rows: IntArray, cols: IntArray) -> None:
    """Exchange position 0 with position ``cols[i]`` of partition ``rows[i]``, for every i (the
    rows distinct)."""
    for array in (work.tgt, work.tgt_dir, work.cause, work.size):
        first = array[rows, 0].copy()
        array[rows, 0] = array[rows, cols]
        array[rows, cols] = first
