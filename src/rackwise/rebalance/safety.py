"""The safety rules a move must pass before it starts, each refusal naming its partition and rule.

``broker``
    every target replica is on a broker that is up.
``under-replicated``
    the partition has a leader and all its replicas in sync before the move (otherwise the move
    waits: copying onto a new broker while one is behind leaves fewer copies to lose).
``min-insync``
    the partition keeps at least ``min.insync.replicas`` in-sync replicas while the move runs
    and after it. Kafka adds before it removes (the new replicas join the ISR, then the leaving
    ones go), so while it runs the ISR holds the one before the move; at the end it is the target.
``spread``
    at every level of the rack tree the replicas sit in at least as many failure domains as the
    spread rule gives a partition of that size (:func:`spread_floor`), or as many as before the
    move where there were fewer: checked on the replica list while the move runs (target and
    leaving replicas together) and on the target.
``max-disk-use``
    every directory a copy goes to stays within ``max_disk_use`` of its capacity, counting its
    bytes now, the copies already going to it and this one (the source keeps its copy until the
    move ends, so a directory's own replicas count until they leave). A copy whose broker chooses
    its directory (``"any"``) must fit in every directory of that broker.

Example: a partition with ``min.insync.replicas=2`` and a target of one replica is refused:
``t-0: min-insync: the target has 1 replica, fewer than min.insync.replicas=2``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from rackwise.rebalance.model import UNKNOWN, ClusterState, LogDir, Move, has_leader
from rackwise.topology import ROOT, RackTree

Rule = Literal["broker", "under-replicated", "min-insync", "spread", "max-disk-use", "failed"]

RULES: Final[tuple[Rule, ...]] = (
    "broker",
    "under-replicated",
    "min-insync",
    "spread",
    "max-disk-use",
    "failed",
)

TRANSIENT: Final = frozenset({"under-replicated", "max-disk-use"})
"""Rules that may pass later without a new plan: the move waits rather than being refused."""


@dataclass(frozen=True, slots=True)
class Hold:
    """Why move ``partition`` did not start: the rule it broke and the detail."""

    partition: str
    rule: Rule
    reason: str

    def __str__(self) -> str:
        return f"{self.partition}: {self.rule}: {self.reason}"


def domains(tree: RackTree, brokers: Sequence[int]) -> dict[int, int]:
    """The number of distinct racks holding ``brokers`` at each rack level (1 = under the root);
    brokers the tree does not know (not up) hold nothing. Levels count racks, not brokers."""
    seen: dict[int, set[int]] = {}
    for broker in brokers:
        leaf = tree.leaf_of_broker.get(broker)
        if leaf is None:
            continue
        for node in tree.path_to_root(leaf)[1:]:
            if node != ROOT:
                seen.setdefault(int(tree.depth[node]), set()).add(node)
    return {level: len(nodes) for level, nodes in seen.items()}


def spread_floor(tree: RackTree, replicas: int) -> dict[int, int]:
    """The fewest racks per level that any evenly spread partition of ``replicas`` replicas
    occupies (``rackwise.topology.spread``'s rule: at every rack, no child holds two more than
    a child with a broker free). A level's floor is met by every placement the planner's
    spread goal accepts, so the rule never refuses a well spread target."""
    count = min(replicas, int(tree.num_brokers[ROOT]))
    levels = {int(tree.depth[n]) for n in range(1, tree.num_nodes) if not tree.is_broker(n)}
    return {level: _fewest(tree, ROOT, count, level, {}) for level in sorted(levels)}


def _fewest(
    tree: RackTree, node: int, count: int, level: int, memo: dict[tuple[int, int], int]
) -> int:
    """The fewest racks at ``level`` under ``node`` holding ``count`` replicas evenly spread:
    each child gets ``min(its brokers, t)`` and the rest go one each to children with room,
    where choosing which is the only freedom (the cheapest ones are chosen)."""
    if count <= 0 or tree.is_broker(node):
        return 0
    if node != ROOT and int(tree.depth[node]) >= level:
        return 1
    key = (node, count)
    if key in memo:
        return memo[key]
    start, size = int(tree.child_start[node]), int(tree.child_count[node])
    kids = [int(k) for k in tree.children[start : start + size]]
    caps = [int(tree.num_brokers[k]) for k in kids]
    share = 0
    while share < max(caps) and sum(min(c, share + 1) for c in caps) <= count:
        share += 1
    base = [min(c, share) for c in caps]
    extra = count - sum(base)
    total = sum(_fewest(tree, k, a, level, memo) for k, a in zip(kids, base, strict=True))
    gains = sorted(
        _fewest(tree, k, a + 1, level, memo) - _fewest(tree, k, a, level, memo)
        for k, a, c in zip(kids, base, caps, strict=True)
        if c > a
    )
    memo[key] = total + sum(gains[:extra])
    return memo[key]


def check(
    state: ClusterState,
    move: Move,
    incoming: Mapping[tuple[int, str], int],
    max_disk_use: float,
) -> Hold | None:
    """The first rule ``move`` breaks in ``state``, or None. ``incoming`` holds the bytes already
    on their way to each directory (the moves in flight and those chosen for this batch)."""
    name = str(move.partition)
    down = [b for b in move.target.replicas if b not in state.racks]
    if down:
        return Hold(name, "broker", f"target broker {down[0]} is not up")
    source = move.source
    if not has_leader(source) or set(source.isr) != set(source.replicas):
        return Hold(
            name,
            "under-replicated",
            f"{len(source.isr)} of {len(source.replicas)} replicas in sync (ISR "
            f"{list(source.isr)}, leader {source.leader}); waiting",
        )
    size = len(move.target.replicas)
    if size < source.min_insync:
        noun = "replica" if size == 1 else "replicas"
        return Hold(
            name,
            "min-insync",
            f"the target has {size} {noun}, fewer than min.insync.replicas={source.min_insync}",
        )
    return _check_spread(state, move) or _check_disk(state, move, incoming, max_disk_use)


def _check_spread(state: ClusterState, move: Move) -> Hold | None:
    tree = state.tree
    floor = spread_floor(tree, len(move.target.replicas))
    before = domains(tree, move.source.replicas)
    for label, brokers in (("while it runs", move.union), ("after it", move.target.replicas)):
        now = domains(tree, brokers)
        for level, wanted in sorted(floor.items()):
            need = min(wanted, before.get(level, 0))
            if now.get(level, 0) < need:
                return Hold(
                    str(move.partition),
                    "spread",
                    f"{now.get(level, 0)} racks at level {level} {label}, fewer than the "
                    f"{need} the spread rule gives it",
                )
    return None


def _check_disk(
    state: ClusterState,
    move: Move,
    incoming: Mapping[tuple[int, str], int],
    max_disk_use: float,
) -> Hold | None:
    size = max(move.source.size_bytes, 0)
    for key in move.landing(state.log_dirs):
        disk = state.log_dirs.get(key, LogDir(UNKNOWN, 0))
        if disk.capacity == UNKNOWN:
            continue
        after = disk.used + incoming.get(key, 0) + size
        if after > max_disk_use * disk.capacity:
            return Hold(
                str(move.partition),
                "max-disk-use",
                f"log directory {key[1]} of broker {key[0]} would hold {after} of "
                f"{disk.capacity} bytes, over {max_disk_use:g} of it",
            )
    return None
