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
    ring. A node whose children are all brokers gives a leader to the free unfenced broker with the
    fewest leaders and a follower to the free broker with the fewest followers, unfenced first.
    Leaders and followers keep separate rings, so both are balanced; a tie on one's count goes to
    the child with fewer of all replicas (fewer leaders, for a follower), then follows the ring.
    That tie-break is what keeps replicas within one per broker when the replication factor is
    not a multiple of a node's children: a child one leader ahead of another never also gets one
    follower ahead of it (54 brokers, fan-outs 3, 2, 3 with three brokers a rack, RF 4 and 216
    partitions: 16 replicas and 4 leaders each). The rings carry over from partition to
    partition; adding partitions or replicas replays the existing assignment through them first,
    so placement picks up where it left off.

Existing replicas
    A partition that already holds replicas keeps them, in order; they count as the partition's
    replicas on every node above them, so the rules above place its new replicas around them.
    Plain rack names (``rack1``, as KIP-36 names racks) are one-level paths (``/rack1``).

Example (3 data centres x 2 racks x 2 brokers, RF 3): every partition gets one replica in each
data centre, the leaders rotate over the data centres, and inside each data centre the racks
and brokers alternate, so 12 partitions give every broker exactly one leader and three replicas.
With brokers 1 ``/dc1/r1``, 2 ``/dc1/r2``, 3 ``/dc2/r1``, 4 ``/dc2/r2`` and RF 3, a partition
holding ``[1, 2]`` (both in ``/dc1``) gets its third replica in ``/dc2``: ``[1, 2, 4]`` under
``JavaRandom(7)``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rackwise.common import (
    InvalidReplicationFactorException,
    InvalidRequestException,
    UnknownBrokerException,
)
from rackwise.common.collector import paused_gc
from rackwise.placement._multilevel_kernel import UNSET, Rings, place_kernel, tree_arrays
from rackwise.placement.admin import validate_admin
from rackwise.placement.model import ArrayReplicaPlacer, Assignment, ClusterView, PlacementSpec
from rackwise.topology import RackTree, as_rack_path


class MultiLevelReplicaPlacer(ArrayReplicaPlacer):
    """Places replicas over a hierarchy of racks (``/dc/rack/host``). See the module docstring."""

    name = "multi-level"

    def place_array(
        self,
        spec: PlacementSpec,
        cluster: ClusterView,
        broker_ids: Sequence[int] | None = None,
    ) -> Assignment:
        tree, work = self._place_leaves(spec, cluster, broker_ids)
        return tree.broker_of[work]

    def place(
        self,
        spec: PlacementSpec,
        cluster: ClusterView,
        broker_ids: Sequence[int] | None = None,
    ) -> list[list[int]]:
        """As :meth:`place_array`, as lists: each tree leaf maps straight to its broker's int
        object (no array of broker ids in between), with the cyclic collector paused."""
        tree, work = self._place_leaves(spec, cluster, broker_ids)
        with paused_gc():
            brokers = np.array([None, *tree.broker_of.tolist()], dtype=object)[1:]
            rows: list[list[int]] = brokers[work].tolist()
        return rows

    def _place_leaves(
        self,
        spec: PlacementSpec,
        cluster: ClusterView,
        broker_ids: Sequence[int] | None,
    ) -> tuple[RackTree, Assignment]:
        """The rack tree and the placement as rows of its leaf nodes."""
        brokers = cluster.select(broker_ids)
        _validate(spec, len(brokers), sum(1 for b in brokers if not b.fenced))
        seen: set[int] = set()
        for b in brokers:
            if b.id in seen:
                raise InvalidRequestException(f"Broker id {b.id} is listed twice")
            seen.add(b.id)
        tree = RackTree.build([(b.id, as_rack_path(b.rack), b.fenced) for b in brokers])
        rings = Rings.start(tree, self._random)
        existing = cluster.topic_assignment(spec.topic)
        first = spec.first_partition
        replay: list[int] = []
        kept: dict[int, list[int]] = {}
        for pid in sorted(existing):
            leaves = _leaves(tree, existing[pid], pid)
            replay.extend(leaves)
            replay.append(UNSET)  # end of partition
            if first <= pid < first + spec.num_partitions and leaves:
                if len(leaves) > spec.replication_factor:
                    raise InvalidReplicationFactorException(
                        f"Partition {pid} already has {len(leaves)} replicas, more than the "
                        f"replication factor {spec.replication_factor}"
                    )
                kept[pid - first] = leaves
        shape = (spec.num_partitions, spec.replication_factor)
        work = np.full(shape, UNSET, dtype=np.int64) if kept else np.empty(shape, dtype=np.int64)
        for row, leaves in kept.items():
            work[row, : len(leaves)] = leaves
        run = place_kernel.for_work(work.size + len(replay))
        run(tree_arrays(tree), rings.arrays(), np.array(replay, dtype=np.int64), work, bool(kept))
        return tree, work


def _validate(spec: PlacementSpec, num_brokers: int, num_unfenced: int) -> None:
    """AdminUtils' checks and messages, then Kafka's striped placer's check for fencing."""
    validate_admin(spec, num_brokers)
    if num_unfenced == 0:
        raise InvalidReplicationFactorException("All brokers are currently fenced.")


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
