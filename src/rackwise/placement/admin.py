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

Example (KIP-36): brokers 0..5 on racks rack1, rack3, rack3, rack2, rack2, rack1 give the
alternated list 0, 3, 1, 5, 4, 2; with start index 0 and RF 3 partitions 0..5 are (0,3,1),
(3,1,5), (1,5,4), (5,4,2), (4,2,0), (2,0,3), and partition 6 gets the shifted (0,4,2).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rackwise.common import (
    AdminOperationException,
    InvalidPartitionsException,
    InvalidReplicationFactorException,
    RandomSource,
    draw_ints,
)
from rackwise.common.java import java_string_key
from rackwise.placement._jit import kernel
from rackwise.placement.model import (
    ArrayReplicaPlacer,
    Assignment,
    BrokerInfo,
    ClusterView,
    PlacementSpec,
)
from rackwise.topology.tree import IntArray

_INT32_MAX = 2**31 - 1


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
        return assign_rack_unaware(spec, [b.id for b in brokers], self._random)


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
        if all(b.rack is None for b in brokers):
            return assign_rack_unaware(spec, [b.id for b in brokers], self._random)
        return assign_rack_aware(spec, brokers, self._random)


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


def assign_rack_aware(
    spec: PlacementSpec, brokers: Sequence[BrokerInfo], random: RandomSource
) -> Assignment:
    alternated, rack_of = rack_alternated_list(brokers)
    n = len(alternated)
    if n == 1 and spec.replication_factor > 1:
        # Kafka divides by zero here (n - 1); say what is wrong instead.
        raise InvalidReplicationFactorException(
            f"Replication factor: {spec.replication_factor} larger than available brokers: 1 "
            "(distinct ids)."
        )
    racks = sorted(set(rack_of.values()), key=java_string_key)
    rack_index = {r: i for i, r in enumerate(racks)}
    rack_at = np.array([rack_index[rack_of[b]] for b in alternated], dtype=np.int64)
    start, shift = _start_and_shift(spec, n, random)
    positions = np.empty((spec.num_partitions, spec.replication_factor), dtype=np.int64)
    _rack_aware_kernel.for_work(positions.size)(
        rack_at, len(racks), start, shift, spec.first_partition, positions
    )
    return np.asarray(alternated, dtype=np.int64)[positions]


@kernel
def _rack_aware_kernel(
    rack_at: IntArray, num_racks: int, start: int, shift: int, first: int, out: IntArray
) -> None:
    """Fill ``out`` with positions in the alternated list, exactly as AdminUtils walks it."""
    n = rack_at.shape[0]
    rf = out.shape[1]
    racks_used = np.zeros(num_racks, dtype=np.int64)
    brokers_used = np.zeros(n, dtype=np.int64)
    for row in range(out.shape[0]):
        pid = first + row
        if pid > 0 and pid % n == 0:
            shift += 1
        lead = (pid + start) % n
        out[row, 0] = lead
        stamp = row + 1  # racks_used / brokers_used hold the row that used them last
        racks_used[rack_at[lead]] = stamp
        brokers_used[lead] = stamp
        num_racks_used = 1
        num_brokers_used = 1
        k = 0
        for j in range(1, rf):
            while True:
                pos = (lead + 1 + (shift * num_racks + k) % (n - 1)) % n
                k += 1
                rack_free = racks_used[rack_at[pos]] != stamp
                broker_free = brokers_used[pos] != stamp
                if (rack_free or num_racks_used == num_racks) and (
                    broker_free or num_brokers_used == n
                ):
                    out[row, j] = pos
                    if rack_free:
                        racks_used[rack_at[pos]] = stamp
                        num_racks_used += 1
                    if broker_free:
                        brokers_used[pos] = stamp
                        num_brokers_used += 1
                    break
