"""The striped replica placer of Kafka's KRaft controller, reproduced bit for bit.

Goals
-----
In falling priority: put the replicas of each partition on as many different racks as
possible; spread partitions over the brokers of each rack, so that two partitions rarely share
the same replica set and the leaders spread evenly; prefer unfenced brokers to fenced ones.
With a :class:`~rackwise.common.JavaRandom` (or ``MockRandom``) given the seed Kafka's
controller would use, the replica lists are exactly those Kafka produces.

Constraints
-----------
No broker holds two replicas of one partition, and a leader (the first replica) is never a
fenced broker. A request that cannot meet them fails with Kafka's exception and message.

Algorithm
---------
Brokers are grouped by rack (brokers without a rack share one unnamed rack). Each rack keeps
two id-sorted lists, unfenced and fenced, each with a random start offset; the rack names are
sorted (the unnamed rack first) and a random rack offset picks the rack that leads first.

Each partition is one *epoch*. On the first visit of a list in a new epoch the list starts
over, one position further round than last time, and then hands out each of its brokers at
most once in that epoch. The leader comes from the first rack, counting from the rack offset,
that still has an unfenced broker. The followers walk the racks from the rack offset again,
skip the leader's rack on the first pass, and take from each rack an unfenced broker, or else
a fenced one. The rack offset then moves on by one, which gives the striped pattern.

Once as many partitions as there are unfenced brokers have been placed (and there are at
least two), the rack order and every broker list are shuffled with ``Collections.shuffle``
and the epoch count starts again from 0. A list keeps its position and its last epoch through
a shuffle, so a list last used in epoch 0 is *not* restarted in the new epoch 0: Kafka has
this quirk and so does this port.

The random draws depend only on list sizes: first one ``nextInt(size)`` per non-empty list
and one ``nextInt(number of racks)``, taken before any validation (as Kafka's ``RackList``
constructor does); then, per reshuffle, ``nextInt(i)`` for i from the size down to 2, first
for the rack order and then for each rack's fenced and unfenced list, racks in the iteration
order of Kafka's ``HashMap`` of racks. All draws are made up front in one vectorised call and
a kernel (compiled with numba for large placements) replays the placement loop.

Worked example
--------------
Racks ``a`` = {1, 2} and ``b`` = {3, 4}, nobody fenced, two replicas a partition, and draws
that give list offsets 1 (``a``) and 0 (``b``) and rack offset 0 (``JavaRandom(1)`` does).
Lists begin in epoch 0, so partition 0 uses the drawn offsets as they are: the leader comes
from ``a`` at position 1, broker 2; the followers start at ``a`` again, skip it as the
leader's rack, and take broker 3 from ``b``: ``[2, 3]``. Partition 1 (epoch 1) starts at
rack ``b``, whose list moves on to position 1: leader 4; then ``a``, moved on to position 0:
``[4, 1]``. Partition 2 gives ``[2, 3]`` again and partition 3 ``[4, 1]``; with four unfenced
brokers, the reshuffle before partition 4 is what breaks that cycle.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Final

import numpy as np

from rackwise.common import (
    IllegalArgumentException,
    InvalidReplicationFactorException,
    InvalidRequestException,
    RandomSource,
    draw_ints,
)
from rackwise.common.java import IntArray, java_hashmap_order, java_string_hash, java_string_key
from rackwise.placement._jit import kernel
from rackwise.placement.model import (
    ArrayReplicaPlacer,
    Assignment,
    BrokerInfo,
    ClusterView,
    PlacementSpec,
)

DRAW_CHUNK: Final = 1 << 22
"""Most reshuffle draws held in memory at once; longer placements run in several kernel calls."""

# Columns of the broker-list table: where the list sits in the id array, its length, and
# Kafka's BrokerList fields offset, index and epoch. Row 2*h is the fenced list of the rack in
# HashMap slot h, row 2*h + 1 its unfenced list.
_START, _SIZE, _OFFSET, _INDEX, _EPOCH = 0, 1, 2, 3, 4

_STUCK: Final = -1
"""Kernel status: Kafka would loop for ever (only possible with negative broker ids)."""


@dataclass(slots=True)
class _Racks:
    """Kafka's ``RackList`` as flat int64 arrays (see the column constants above)."""

    ids: IntArray  # broker ids, list after list
    lists: IntArray  # shape (2 * racks, 5)
    names: IntArray  # rackNames in order, each as its HashMap slot
    num_total: int
    num_unfenced: int

    @property
    def shuffle_bounds(self) -> IntArray:
        """The ``nextInt`` bounds of one reshuffle: rack order, then each list in row order."""
        sizes = [len(self.names), *self.lists[:, _SIZE].tolist()]
        parts = [np.arange(size, 1, -1, dtype=np.int64) for size in sizes]
        return np.concatenate(parts)


def _rack_hash(rack: str | None) -> int:
    """``Optional<String>.hashCode()``: the string's hash, or 0 for an empty Optional."""
    return 0 if rack is None else java_string_hash(rack)


def _rack_order(rack: str | None) -> tuple[int, bytes]:
    """``OptionalStringComparator``: the empty Optional first, then ``String.compareTo``."""
    return (0, b"") if rack is None else (1, java_string_key(rack))


def _gather(brokers: Sequence[BrokerInfo]) -> _Racks:
    """Group the brokers as Kafka's ``RackList`` constructor does (offsets not yet drawn)."""
    members: dict[str | None, tuple[list[int], list[int]]] = {}
    for broker in brokers:
        fenced, unfenced = members.setdefault(broker.rack, ([], []))
        (fenced if broker.fenced else unfenced).append(broker.id)
    slots = java_hashmap_order(list(members), _rack_hash)
    slot_of = {rack: slot for slot, rack in enumerate(slots)}
    lists = [sorted(part) for rack in slots for part in members[rack]]
    sizes = np.array([len(part) for part in lists], dtype=np.int64)
    table = np.zeros((len(lists), 5), dtype=np.int64)
    table[:, _SIZE] = sizes
    table[:, _START] = np.cumsum(sizes) - sizes
    ids = np.array([b for part in lists for b in part], dtype=np.int64)
    names = np.array([slot_of[r] for r in sorted(members, key=_rack_order)], dtype=np.int64)
    return _Racks(ids, table, names, len(brokers), int(sizes[1::2].sum()))


def _draw_offsets(racks: _Racks, random: RandomSource) -> int:
    """Draw every non-empty list's start offset, then the rack offset (returned)."""
    filled = racks.lists[:, _SIZE] > 0
    bounds = racks.lists[filled, _SIZE]
    if len(racks.names):
        bounds = np.append(bounds, len(racks.names))
    draws = draw_ints(random, bounds)
    racks.lists[filled, _OFFSET] = draws[: int(filled.sum())]
    return int(draws[-1]) if len(racks.names) else 0


def _validate(rf: int, num_partitions: int, racks: _Racks) -> None:
    """Kafka's checks, in Kafka's order (``StripedReplicaPlacer.place``, then the list)."""
    if rf <= 0:
        raise InvalidReplicationFactorException(
            f"Invalid replication factor {rf}: the replication factor must be positive."
        )
    if racks.num_unfenced == 0:
        raise InvalidReplicationFactorException("All brokers are currently fenced.")
    if rf > racks.num_total:
        raise InvalidReplicationFactorException(
            f"The target replication factor of {rf} cannot be reached because only "
            f"{racks.num_total} broker(s) are registered."
        )
    if num_partitions < 0:  # Kafka sizes an ArrayList with the partition count.
        raise IllegalArgumentException(f"Illegal Capacity: {num_partitions}")


@kernel
def _stripe(
    ids: IntArray, lists: IntArray, names: IntArray, draws: IntArray, out: IntArray, pos: IntArray
) -> int:
    """Place ``out.shape[0]`` partitions of ``out.shape[1]`` replicas, as ``RackList.place``
    called once per partition. ``pos`` holds the placement's ``[epoch, rack offset,
    unfenced count]`` and is updated for the next call; ``draws`` are the reshuffle draws this
    call needs, in order. Returns 0, or ``_STUCK`` where Kafka would never return."""
    num_racks = names.shape[0]
    spin_limit = (ids.shape[0] + 2) * (num_racks + 2)  # visits of a partition that finishes

    def take(row: int, epoch: int) -> int:  # BrokerList.next
        size = lists[row, _SIZE]
        if size == 0:
            return -1
        if lists[row, _EPOCH] != epoch:
            lists[row, _EPOCH] = epoch
            lists[row, _INDEX] = 0
            lists[row, _OFFSET] = (lists[row, _OFFSET] + 1) % size
        if lists[row, _INDEX] >= size:
            return -1
        broker: int = ids[lists[row, _START] + (lists[row, _INDEX] + lists[row, _OFFSET]) % size]
        lists[row, _INDEX] += 1
        return broker

    def shuffle(values: IntArray, start: int, size: int, cursor: int) -> int:
        for i in range(size, 1, -1):  # Collections.shuffle on a RandomAccess list
            j = start + draws[cursor]
            cursor += 1
            values[start + i - 1], values[j] = values[j], values[start + i - 1]
        return cursor

    epoch, offset, num_unfenced = pos[0], pos[1], pos[2]
    cursor = 0
    for p in range(out.shape[0]):
        if epoch == num_unfenced and num_unfenced > 1:
            cursor = shuffle(names, 0, num_racks, cursor)
            for row in range(lists.shape[0]):
                cursor = shuffle(ids, lists[row, _START], lists[row, _SIZE], cursor)
            epoch = 0
        if offset == num_racks:
            offset = 0
        first = offset
        spins = 1
        leader = take(2 * names[first] + 1, epoch)
        while leader < 0:
            first = first + 1 if first + 1 < num_racks else 0
            spins += 1
            if spins > spin_limit:
                return _STUCK
            leader = take(2 * names[first] + 1, epoch)
        out[p, 0] = leader
        rack = offset
        for replica in range(1, out.shape[1]):
            found = -1
            while found < 0:
                if rack == first:
                    first = -1
                else:
                    found = take(2 * names[rack] + 1, epoch)
                    if found < 0:
                        found = take(2 * names[rack], epoch)
                rack = rack + 1 if rack + 1 < num_racks else 0
                spins += 1
                if spins > spin_limit:
                    return _STUCK
            out[p, replica] = found
        epoch += 1
        offset += 1
    pos[0], pos[1] = epoch, offset
    return 0


def _reshuffles_before(end: int, num_unfenced: int) -> int:
    """Reshuffles among the first ``end`` partitions: one before each partition whose index is
    a positive multiple of the number of unfenced brokers (if there are at least two)."""
    return max(0, end - 1) // num_unfenced if num_unfenced > 1 else 0


def place_striped(
    brokers: Sequence[BrokerInfo],
    num_partitions: int,
    rf: int,
    random: RandomSource,
    *,
    compiled: bool | None = None,
) -> Assignment:
    """``StripedReplicaPlacer.place`` over ``brokers`` in the given order, drawing from
    ``random``. ``compiled`` forces the compiled (True) or interpreted (False) kernel; None
    picks by size."""
    racks = _gather(brokers)
    rack_offset = _draw_offsets(racks, random)
    _validate(rf, num_partitions, racks)
    out = np.empty((num_partitions, rf), dtype=np.int64)
    per_shuffle = racks.shuffle_bounds
    unfenced = racks.num_unfenced
    total_draws = _reshuffles_before(num_partitions, unfenced) * per_shuffle.size
    if compiled is None:
        run = _stripe.for_work(num_partitions * rf + total_draws)
    else:
        run = _stripe.compiled() if compiled else _stripe.python
    rounds = max(1, DRAW_CHUNK // max(1, per_shuffle.size))
    step = rounds * unfenced if unfenced > 1 else max(1, num_partitions)
    pos = np.array([0, rack_offset, unfenced], dtype=np.int64)
    for begin in range(0, num_partitions, step):
        end = min(begin + step, num_partitions)
        shuffles = _reshuffles_before(end, unfenced) - _reshuffles_before(begin, unfenced)
        draws = draw_ints(random, np.tile(per_shuffle, shuffles))
        if run(racks.ids, racks.lists, racks.names, draws, out[begin:end], pos) == _STUCK:
            raise InvalidRequestException(
                "Kafka's striped placer would never finish with these brokers: a broker id "
                "is negative, which its lists read as 'no broker'"
            )
    return out


class StripedReplicaPlacer(ArrayReplicaPlacer):
    """Kafka's ``StripedReplicaPlacer``: the KRaft controller's default placer.

    The generator is kept across calls, as the controller keeps its own, so a second placement
    continues the random stream. ``spec.start_index`` and ``spec.start_partition_id`` play no
    part (Kafka's striped placer has neither); the result has ``spec.num_partitions`` rows.
    Without a generator it draws from ``JavaRandom(0)``, like the other built-in placers.
    """

    name: ClassVar[str] = "striped"

    def place_array(
        self,
        spec: PlacementSpec,
        cluster: ClusterView,
        broker_ids: Sequence[int] | None = None,
    ) -> Assignment:
        brokers = cluster.select(broker_ids)
        return place_striped(brokers, spec.num_partitions, spec.replication_factor, self._random)
