"""Kafka's ``AdminUtils.assignReplicasToBrokers``: rack-unaware and rack-aware (KIP-36), exact.

Goals (Kafka's): spread replicas evenly over brokers; for the partitions led by one broker,
spread their followers over the other brokers; and, when every broker has a rack, put each
partition's replicas in as many racks as possible.

Constraints: rack information is all or nothing (``AdminOperationException`` otherwise);
Kafka's validation order and messages; the same output as Kafka for every input, including
``fixedStartIndex``, ``startPartitionId``, duplicated broker ids and the random draws.

Algorithm: the first replica of partition p is broker ``(p + startIndex) mod n`` of the broker
list; follower j sits ``1 + (shift + j) mod (n - 1)`` places after it, where the shift starts at
``startIndex`` (or a second random draw) and grows by one at every positive multiple of n. The
rack-aware form runs the same walk over the *rack-alternated* list (racks in Java string order,
brokers by id within a rack, taken round robin), scales the shift by the number of racks, and
skips a broker whose rack (or itself) already holds a replica while another rack (or broker)
holds none.

Existing replicas (``--existing``, a replication factor that grows): a partition that holds
replicas keeps them, in order, and only its empty slots are filled. The walk starts at its
leader (the first replica it holds, wherever the algorithm would have put a new leader) with
that partition's shift, passes its other replicas in order, and goes on from the last of them
with every replica it holds counted as used, broker and rack, so the same rules put the new
ones on racks the partition lacks. Replicas that this placer made with the same start index
(or seed) are continued exactly: raising the replication factor from r to r' gives what
placing at r' would have given.

Example (KIP-36): brokers 0..5 on racks rack1, rack3, rack3, rack2, rack2, rack1 give the
alternated list 0, 3, 1, 5, 4, 2; with start index 0 and RF 3 partitions 0..5 are (0,3,1),
(3,1,5), (1,5,4), (5,4,2), (4,2,0), (2,0,3), and partition 6 gets the shifted (0,4,2). Raising
partition 0 from (0,3) to RF 3 gives (0,3,1), as above; from (0,5), both in rack1, the walk
from broker 0 passes 3 and 1, meets 5, and goes on to 4, in rack2, which the partition lacks:
(0,5,4). Rack-unaware over 0..5, start index 0: partition 1 holding (4) gets (4,5,0).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

import numpy as np

from rackwise.common import (
    AdminOperationException,
    InvalidPartitionsException,
    InvalidReplicationFactorException,
    InvalidRequestException,
    RandomSource,
    draw_ints,
)
from rackwise.common.java import java_string_key
from rackwise.common.jit import kernel
from rackwise.placement.model import (
    ArrayReplicaPlacer,
    Assignment,
    BrokerInfo,
    ClusterView,
    PlacementSpec,
    existing_rows,
)
from rackwise.topology.tree import IntArray

_INT32_MAX = 2**31 - 1
UNPLACED: Final = -1
"""A slot of the position matrix still to fill."""


class RackUnawareReplicaPlacer(ArrayReplicaPlacer):
    """Kafka's rack-unaware assignment over the brokers in the order given. Fencing is not
    considered, as in ``AdminUtils``: the caller passes the brokers it wants used."""

    name = "rack-unaware"

    def place_array(
        self,
        spec: PlacementSpec,
        cluster: ClusterView,
        broker_ids: Sequence[int] | None = None,
    ) -> Assignment:
        brokers = cluster.select(broker_ids)
        validate_admin(spec, len(brokers))
        broker_list = [b.id for b in brokers]
        existing = existing_rows(spec, cluster, broker_list)
        if not existing:
            return assign_rack_unaware(spec, broker_list, self._random)
        return assign_around_existing(spec, broker_list, None, existing, self._random)


class RackAwareReplicaPlacer(ArrayReplicaPlacer):
    """Kafka's ``AdminUtils.assignReplicasToBrokers``: rack-aware when brokers have racks,
    rack-unaware when none has, ``AdminOperationException`` when only some have."""

    name = "rack-aware"

    def place_array(
        self,
        spec: PlacementSpec,
        cluster: ClusterView,
        broker_ids: Sequence[int] | None = None,
    ) -> Assignment:
        brokers = cluster.select(broker_ids)
        validate_admin(spec, len(brokers))
        existing = existing_rows(spec, cluster, [b.id for b in brokers])
        if all(b.rack is None for b in brokers):
            broker_list = [b.id for b in brokers]
            if not existing:
                return assign_rack_unaware(spec, broker_list, self._random)
            return assign_around_existing(spec, broker_list, None, existing, self._random)
        alternated, rack_of = rack_alternated_list(brokers)
        return assign_around_existing(spec, alternated, rack_of, existing, self._random)


def validate_admin(spec: PlacementSpec, num_brokers: int) -> None:
    """AdminUtils' checks, in its order and with its messages (duplicates counted)."""
    if spec.num_partitions <= 0:
        raise InvalidPartitionsException("Number of partitions must be larger than 0.")
    if spec.replication_factor <= 0:
        raise InvalidReplicationFactorException("Replication factor must be larger than 0.")
    if spec.replication_factor > num_brokers:
        raise InvalidReplicationFactorException(
            f"Replication factor: {spec.replication_factor} larger than available brokers: "
            f"{num_brokers}."
        )
    if spec.first_partition + spec.num_partitions - 1 > _INT32_MAX:
        raise InvalidPartitionsException(
            f"Partition ids up to {spec.first_partition + spec.num_partitions - 1} exceed "
            f"the largest partition id {_INT32_MAX}."
        )


def _start_and_shift(spec: PlacementSpec, n: int, random: RandomSource) -> tuple[int, int]:
    """Kafka's two draws: the start index, then the initial follower shift."""
    if spec.start_index >= 0:
        return spec.start_index, spec.start_index
    start, shift = draw_ints(random, [n, n]).tolist()
    return int(start), int(shift)


def assign_rack_unaware(
    spec: PlacementSpec, broker_list: Sequence[int], random: RandomSource
) -> Assignment:
    n = len(broker_list)
    start, shift = _start_and_shift(spec, n, random)
    first = spec.first_partition
    pids = np.arange(first, first + spec.num_partitions, dtype=np.int64)
    # The shift grows by one at each positive multiple of n among the partitions placed so far.
    already = (first - 1) // n if first > 0 else 0
    shifts = shift + pids // n - already
    lead = (pids + start) % n
    out = np.empty((spec.num_partitions, spec.replication_factor), dtype=np.int64)
    out[:, 0] = lead
    for j in range(spec.replication_factor - 1):
        out[:, j + 1] = (lead + 1 + (shifts + j) % (n - 1)) % n
    return np.asarray(broker_list, dtype=np.int64)[out]


def rack_alternated_list(brokers: Sequence[BrokerInfo]) -> tuple[list[int], dict[int, str]]:
    """Kafka's rack-alternated broker list and the broker -> rack map it was built from."""
    rack_of: dict[int, str] = {}
    for b in brokers:
        if b.rack is None:
            raise AdminOperationException(
                "Not all brokers have rack information for replica rack aware assignment."
            )
        rack_of[b.id] = b.rack
    by_rack: dict[str, list[int]] = {}
    for broker_id, rack in rack_of.items():
        by_rack.setdefault(rack, []).append(broker_id)
    racks = sorted(by_rack, key=java_string_key)
    columns = [sorted(by_rack[r]) for r in racks]
    alternated: list[int] = []
    for row in range(max(len(c) for c in columns)):
        alternated.extend(c[row] for c in columns if row < len(c))
    return alternated, rack_of


def assign_around_existing(
    spec: PlacementSpec,
    broker_list: Sequence[int],
    rack_of: Mapping[int, str] | None,
    existing: Mapping[int, Sequence[int]],
    random: RandomSource,
) -> Assignment:
    """Kafka's walk over ``broker_list`` (the rack-alternated list when ``rack_of`` gives racks;
    the plain list, as one rack, when it is None), rows in ``existing`` keeping their replicas
    and walking on from their leader (see :func:`_walk_kernel`)."""
    n = len(broker_list)
    if n == 1 and spec.replication_factor > 1:
        # Kafka divides by zero here (n - 1); say what is wrong instead.
        raise InvalidReplicationFactorException(
            f"Replication factor: {spec.replication_factor} larger than available brokers: 1 "
            "(distinct ids)."
        )
    if existing and len(set(broker_list)) != n:
        raise InvalidRequestException(
            "A broker id is listed twice: replicas cannot be added to existing partitions"
        )
    if rack_of is None:
        racks: list[str] = [""]
        rack_at = np.zeros(n, dtype=np.int64)
    else:
        racks = sorted(set(rack_of.values()), key=java_string_key)
        rack_index = {r: i for i, r in enumerate(racks)}
        rack_at = np.array([rack_index[rack_of[b]] for b in broker_list], dtype=np.int64)
    start, shift = _start_and_shift(spec, n, random)
    positions = np.full((spec.num_partitions, spec.replication_factor), UNPLACED, dtype=np.int64)
    position_of = {broker: i for i, broker in enumerate(broker_list)}
    for row, replicas in existing.items():
        positions[row, : len(replicas)] = [position_of[b] for b in replicas]
    _walk_kernel.for_work(positions.size)(
        rack_at, len(racks), start, shift, spec.first_partition, positions
    )
    return np.asarray(broker_list, dtype=np.int64)[positions]


def assign_rack_aware(
    spec: PlacementSpec, brokers: Sequence[BrokerInfo], random: RandomSource
) -> Assignment:
    """Kafka's rack-aware assignment of fresh partitions."""
    alternated, rack_of = rack_alternated_list(brokers)
    return assign_around_existing(spec, alternated, rack_of, {}, random)


@kernel
def _walk_kernel(
    rack_at: IntArray, num_racks: int, start: int, shift: int, first: int, out: IntArray
) -> None:
    """Fill the ``UNPLACED`` slots of ``out`` with positions in the broker list, exactly as
    AdminUtils walks it; a row that already holds replicas (a prefix) keeps them.

    A fresh row's leader is ``(p + start) mod n``; a row with replicas keeps its leader. The
    followers come from the walk ``lead + 1 + (shift * racks + k) mod (n - 1)``, k = 0, 1, ...,
    taking a broker when its rack (or, once every rack is used, the broker itself) is new to
    the partition. A kept follower is met at the first step after the previous one where the
    walk reaches it (where Kafka took it, if Kafka placed it: the rule's answer changes only
    when a replica is taken). The new replicas continue the walk from the last kept one, with
    every kept replica counted as used. Row ``p``'s shift is ``shift`` plus the positive
    multiples of n among the partitions placed up to p, as Kafka grows it.
    """
    n = rack_at.shape[0]
    racks_used = np.zeros(num_racks, dtype=np.int64)
    brokers_used = np.zeros(n, dtype=np.int64)
    grown_before = (first - 1) // n if first > 0 else 0
    for row in range(out.shape[0]):
        pid = first + row
        step = (shift + pid // n - grown_before) * num_racks
        if out[row, 0] < 0:
            out[row, 0] = (pid + start) % n
        lead = out[row, 0]
        stamp = row + 1  # racks_used / brokers_used hold the row that used them last
        racks_used[rack_at[lead]] = stamp
        brokers_used[lead] = stamp
        num_racks_used = 1
        num_brokers_used = 1
        k = 0
        for j in range(1, out.shape[1]):
            target = out[row, j]
            while True:
                pos = (lead + 1 + (step + k) % (n - 1)) % n
                k += 1
                rack_free = racks_used[rack_at[pos]] != stamp
                broker_free = brokers_used[pos] != stamp
                if pos == target or (
                    target < 0
                    and (rack_free or num_racks_used == num_racks)
                    and (broker_free or num_brokers_used == n)
                ):
                    break
            out[row, j] = pos
            if rack_free:
                racks_used[rack_at[pos]] = stamp
                num_racks_used += 1
            if broker_free:
                brokers_used[pos] = stamp
                num_brokers_used += 1
