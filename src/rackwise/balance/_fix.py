"""The two hard goals: replicas that cannot stay (offline) and partitions badly spread.

Both are repaired partition by partition with :class:`~rackwise.balance._repair.PartitionRepair`:
first every repaired partition drops the replicas it does not keep, then each one places its
missing replicas (so placement sees the cluster after all the drops). With the ``multi-level``
strategy the missing replicas are placed by KIP-879's multi-level placer instead, given the kept
replicas as the partition's existing ones; a row the placer cannot complete evenly (a kept set
that only a particular count per rack can extend, or a broker the partition may not use) is
placed by the repair instead.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rackwise.balance._layout import PAD
from rackwise.balance._repair import PartitionRepair
from rackwise.balance._spread import spread_ok, violations_by_level
from rackwise.balance._work import HOMELESS, Work
from rackwise.balance.model import IntArray
from rackwise.common import (
    InvalidReplicationFactorException,
    JavaRandom,
    RackwiseError,
    TopicPartition,
)
from rackwise.placement import BrokerInfo, ClusterView, MultiLevelReplicaPlacer, PlacementSpec
from rackwise.topology import as_rack_path


def offline_partitions(work: Work) -> IntArray:
    """Partitions with a replica that cannot stay where it is."""
    lay = work.lay
    return np.flatnonzero(((lay.cur != PAD) & ~lay.keepable).any(axis=1)).astype(np.int64)


def spread_partitions(work: Work, skip: IntArray) -> IntArray:
    """Partitions badly spread on the planning tree, except those in ``skip``."""
    bad, _ = violations_by_level(work.tree, work.tgt)
    bad[skip] = False
    return np.flatnonzero(bad).astype(np.int64)


def repair(
    work: Work, parts: IntArray, cause: int, *, use_placer: bool = False, seed: int = 0
) -> IntArray:
    """Repair ``parts`` (see the module docstring), recording ``cause`` on every moved replica.
    Returns, per partition of the cluster, how many replicas the repair had to replace (the
    fewest any even spread needs)."""
    must = np.zeros(work.lay.num_partitions, np.int64)
    pending: list[tuple[int, dict[int, int]]] = []
    for p in parts.tolist():
        kept = _drop(work, p)
        pending.append((p, kept))
        must[p] = int(work.lay.rf[p]) - len(kept)
    if use_placer and pending:
        pending = _place_multilevel(work, pending, cause, seed)
    for p, kept in pending:
        repair = PartitionRepair(work.tree, kept, work.excluded.get(p, ()))
        _, new = repair.build(int(work.lay.rf[p]), work.room)
        homeless = np.flatnonzero(work.tgt[p] == HOMELESS).tolist()
        if len(new) != len(homeless):
            raise RackwiseError(f"BUG: repair of {work.lay.name(p)} placed {new} for {homeless}")
        for j, dst in zip(homeless, new, strict=True):
            work.place(p, j, dst, cause)
    return must


def _drop(work: Work, p: int) -> dict[int, int]:
    """Drop the replicas of p that the repair does not keep; return the kept ones (broker ->
    size). Ties between equally good keeps favour brokers with more room."""
    lay, tree = work.lay, work.tree
    holders: dict[int, int] = {}
    for j in range(int(lay.rf[p])):
        b = int(work.tgt[p, j])
        if lay.keepable[p, j] and tree.contains(b):
            holders[b] = int(work.size[p, j])
    excluded = work.excluded.get(p, ())
    rf = int(lay.rf[p])
    if tree.cap[0] - len(excluded) < rf:
        raise InvalidReplicationFactorException(
            f"Partition {lay.name(p)} has {rf} replicas but only "
            f"{tree.cap[0] - len(excluded)} brokers with a live log directory can hold it"
        )
    kept, _ = PartitionRepair(tree, holders, excluded, work.room).build(rf, None)
    keep = set(kept)
    for j in range(rf):
        if int(work.tgt[p, j]) not in keep:
            work.drop(p, j)
    return {b: holders[b] for b in kept}


def _place_multilevel(
    work: Work, pending: list[tuple[int, dict[int, int]]], cause: int, seed: int
) -> list[tuple[int, dict[int, int]]]:
    """Place the homeless replicas of ``pending`` with the multi-level placer; return the
    partitions it could not complete evenly."""
    lay, tree = work.lay, work.tree
    members = np.flatnonzero(tree.leaf >= 0)
    infos = [BrokerInfo(int(lay.broker_ids[b]), as_rack_path(lay.racks[b])) for b in members]
    index_of_id = {int(lay.broker_ids[b]): int(b) for b in members}
    by_rf: dict[int, list[tuple[int, dict[int, int]]]] = {}
    for item in pending:
        by_rf.setdefault(int(lay.rf[item[0]]), []).append(item)
    left: list[tuple[int, dict[int, int]]] = []
    placer = MultiLevelReplicaPlacer(JavaRandom(seed))
    for rf, items in sorted(by_rf.items()):
        kept = {
            TopicPartition("repair", i): [int(lay.broker_ids[b]) for b in work.row(p)]
            for i, (p, _kept) in enumerate(items)
        }
        spec = PlacementSpec(len(items), rf, start_partition_id=0, topic="repair")
        rows = placer.place_array(spec, ClusterView(infos, kept)).tolist()
        for (p, kept_sizes), row in zip(items, rows, strict=True):
            if not _accept(work, p, [index_of_id[b] for b in row], cause):
                left.append((p, kept_sizes))
    return left


def _accept(work: Work, p: int, row: Sequence[int], cause: int) -> bool:
    excluded = work.excluded.get(p, ())
    if any(b in excluded for b in row) or not spread_ok(work.tree, row, excluded):
        return False
    held = set(work.row(p))
    new = [b for b in row if b not in held]
    homeless = np.flatnonzero(work.tgt[p] == HOMELESS).tolist()
    if len(new) != len(homeless):
        return False
    for j, dst in zip(homeless, new, strict=True):
        work.place(p, j, dst, cause)
    return True
