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
a shuffle, so a list last used in epoch e is *not* restarted on its first visit in the new
epoch e, and may have no broker left to give there: Kafka has this quirk and so does this
port. It can put a fenced broker where an unfenced one of the same rack was free, or a second
replica in a rack where another rack had a broker free (seed 1, racks ``b`` = {1},
``a`` = {2, fenced 3}, ``c`` = {4}: the fifth partition is ``[4, 3]``).

The random draws depend only on list sizes: first one ``nextInt(size)`` per non-empty list
and one ``nextInt(number of racks)``, taken before any validation (as Kafka's ``RackList``
constructor does); then, per reshuffle, ``nextInt(i)`` for i from the size down to 2, first
for the rack order and then for each rack's fenced and unfenced list, racks in the iteration
order of Kafka's ``HashMap`` of racks. All draws are made up front in one vectorised call and
a kernel (compiled with numba for large placements) replays the placement loop.

Existing replicas
-----------------
A partition that already holds replicas (when the replication factor grows) keeps them, in
order, and its empty slots are filled by the same walk: passes over the racks from the rack
offset, pass q taking one broker from each rack that holds fewer than q of the partition's
replicas (unfenced first, each list handing out each broker at most once and never one the
partition holds). With only a leader held this is the walk above (pass 1 skips the leader's
rack), so replicas this placer made are continued exactly: raising the replication factor
from r to r' under the same seed gives what placing at r' would have given. The lists the
leader search and the kept replicas would have been taken from start their epoch as taking
from them would; the epoch, the rack offset and the reshuffles advance by one partition, as
for any other.

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

Raising those four partitions to three replicas under the same seed gives ``[2, 3, 1]``,
``[4, 1, 3]``, ``[2, 3, 1]``, ``[4, 1, 3]``, as placing at three would. Had partition 2 held
only ``[1]`` and partition 3 ``[3, 4]`` (both in ``b``), they would become ``[1, 3, 2]``
(pass 1 passes over ``a``, which holds the leader, and takes 3 from ``b``; pass 2 takes 2
from ``a``) and ``[3, 4, 1]`` (pass 1 passes over ``b``, which holds two, and ``a`` gives 1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, Final

import numpy as np
import numpy.typing as npt

from rackwise.common import (
    IllegalArgumentException,
    InvalidReplicationFactorException,
    InvalidRequestException,
    RandomSource,
    draw_ints,
)
from rackwise.common.java import java_hashmap_order, java_string_hash, java_string_key
from rackwise.common.jit import inline_kernel, kernel
from rackwise.placement.model import (
    ArrayReplicaPlacer,
    Assignment,
    BrokerInfo,
    ClusterView,
    PlacementSpec,
    existing_rows,
)

DRAW_CHUNK: Final = 1 << 22
"""Most reshuffle draws held in memory at once; longer placements run in several kernel calls."""

# Columns of the broker-list table: where the list sits in the id array, its length, and
# Kafka's BrokerList fields offset, index and epoch. Row 2*h is the fenced list of the rack in
# HashMap slot h, row 2*h + 1 its unfenced list.
_START, _SIZE, _OFFSET, _INDEX, _EPOCH = 0, 1, 2, 3, 4

_STUCK: Final = -1
"""Kernel status: Kafka would loop for ever (only possible with negative broker ids)."""

IntArray = npt.NDArray[np.int64]
_Kept = tuple[IntArray, IntArray, IntArray, IntArray]
"""Rows that keep replicas, for the kernel: see :func:`_kept`."""


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
    ids: IntArray,
    lists: IntArray,
    names: IntArray,
    draws: IntArray,
    out: IntArray,
    pos: IntArray,
    kept: _Kept,
) -> int:
    """Place ``out.shape[0]`` partitions of ``out.shape[1]`` replicas, as ``RackList.place``
    called once per partition; the rows named in ``kept`` keep their replicas and get the rest
    from :func:`_stripe_around`. ``pos`` holds the placement's ``[epoch, rack offset, unfenced
    count]`` and is updated for the next call; ``draws`` are the reshuffle draws this call
    needs, in order. Returns 0, or ``_STUCK`` where Kafka would never return."""
    num_racks = names.shape[0]
    spin_limit = (ids.shape[0] + 2) * (num_racks + 2)  # visits of a partition that finishes
    kept_rows, kept_ids, kept_lists, kept_counts = kept
    rack_count = np.zeros(lists.shape[0] // 2, dtype=np.int64)

    def take(row: int, epoch: int) -> int:  # _take as a closure: faster on the hot path
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

    epoch, offset, num_unfenced = pos[0], pos[1], pos[2]
    cursor = 0
    next_kept = 0
    for p in range(out.shape[0]):
        if epoch == num_unfenced and num_unfenced > 1:
            cursor = _reshuffle(draws, ids, lists, names, cursor)
            epoch = 0
        if offset == num_racks:
            offset = 0
        if next_kept < kept_rows.shape[0] and kept_rows[next_kept] == p:
            e = next_kept
            held = (kept_ids[e], kept_lists[e], kept_counts[e], rack_count)
            if _stripe_around(ids, lists, names, epoch, offset, held, spin_limit, out, p) < 0:
                return _STUCK
            next_kept += 1
            epoch += 1
            offset += 1
            continue
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


@inline_kernel
def _take(ids: IntArray, lists: IntArray, row: int, epoch: int) -> int:
    """``BrokerList.next``: the list's next broker in this epoch, or -1 (none left)."""
    size = lists[row, _SIZE]
    if size == 0:
        return -1
    _begin_epoch(lists, row, epoch)
    if lists[row, _INDEX] >= size:
        return -1
    broker: int = ids[lists[row, _START] + (lists[row, _INDEX] + lists[row, _OFFSET]) % size]
    lists[row, _INDEX] += 1
    return broker


@inline_kernel
def _begin_epoch(lists: IntArray, row: int, epoch: int) -> None:
    """A list's first visit in an epoch starts it over, one position further round."""
    if lists[row, _EPOCH] != epoch:
        lists[row, _EPOCH] = epoch
        lists[row, _INDEX] = 0
        lists[row, _OFFSET] = (lists[row, _OFFSET] + 1) % lists[row, _SIZE]


@inline_kernel
def _reshuffle(
    draws: IntArray, ids: IntArray, lists: IntArray, names: IntArray, cursor: int
) -> int:
    """Kafka's reshuffle: the rack order, then each list in table order."""
    cursor = _shuffle(draws, names, 0, names.shape[0], cursor)
    for row in range(lists.shape[0]):
        cursor = _shuffle(draws, ids, lists[row, _START], lists[row, _SIZE], cursor)
    return cursor


@inline_kernel
def _shuffle(draws: IntArray, values: IntArray, start: int, size: int, cursor: int) -> int:
    """``Collections.shuffle`` of ``values[start : start + size]`` with the next draws."""
    for i in range(size, 1, -1):
        j = start + draws[cursor]
        cursor += 1
        values[start + i - 1], values[j] = values[j], values[start + i - 1]
    return cursor


@inline_kernel
def _stripe_around(
    ids: IntArray,
    lists: IntArray,
    names: IntArray,
    epoch: int,
    offset: int,
    held: tuple[IntArray, IntArray, int, IntArray],
    spin_limit: int,
    out: IntArray,
    p: int,
) -> int:
    """Partition ``p`` (row p of ``out``), which keeps its replicas (``held``: their ids, the
    list each sits in, how many, and a scratch count per rack) and gets the rest as Kafka's
    walk would give them: passes over the racks from the rack offset, pass q taking one broker
    (unfenced first) from each rack that holds fewer than q of the partition's replicas, no
    list handing out a kept broker. With only the leader kept this is the walk of
    :func:`_stripe` (pass 1 skips the leader's rack).

    The lists Kafka would have taken the kept replicas from start their epoch: the unfenced
    list the leader search reaches first, then the list of each kept replica; in the end each
    counts at least its kept replicas as handed out. Both matter only through the epoch
    quirk of the module docstring, where a list's position outlives the partition, and make
    replicas this placer made continue exactly."""
    kept_ids, kept_lists, num_kept, rack_count = held
    num_racks = names.shape[0]
    rack = offset
    for _ in range(num_racks):
        row = 2 * names[rack] + 1
        size = lists[row, _SIZE]
        if size > 0 and (lists[row, _EPOCH] != epoch or lists[row, _INDEX] < size):
            _begin_epoch(lists, row, epoch)
            break
        rack = rack + 1 if rack + 1 < num_racks else 0
    rack_count[:] = 0
    for slot in range(num_kept):
        out[p, slot] = kept_ids[slot]
        rack_count[kept_lists[slot] // 2] += 1
        _begin_epoch(lists, kept_lists[slot], epoch)
    rack = offset
    passes = 1
    spins = 1
    for replica in range(num_kept, out.shape[1]):
        found = -1
        while found < 0:
            h = names[rack]
            if rack_count[h] < passes:
                found = _take_new(ids, lists, 2 * h + 1, epoch, kept_ids, num_kept)
                if found < 0:
                    found = _take_new(ids, lists, 2 * h, epoch, kept_ids, num_kept)
                if found >= 0:
                    rack_count[h] += 1
            rack = rack + 1 if rack + 1 < num_racks else 0
            if rack == offset:
                passes += 1
            spins += 1
            if spins > spin_limit:
                return _STUCK
        out[p, replica] = found
    for slot in range(num_kept):  # a list has handed out at least the kept replicas it holds
        num_in_list = 0
        for other in range(num_kept):
            num_in_list += 1 if kept_lists[other] == kept_lists[slot] else 0
        lists[kept_lists[slot], _INDEX] = max(lists[kept_lists[slot], _INDEX], num_in_list)
    return 0


@inline_kernel
def _take_new(
    ids: IntArray, lists: IntArray, row: int, epoch: int, kept_ids: IntArray, num_kept: int
) -> int:
    """The list's next broker that the partition does not already hold, or -1."""
    while True:
        broker: int = _take(ids, lists, row, epoch)
        if broker < 0:
            return broker
        is_kept = False
        for slot in range(num_kept):
            if kept_ids[slot] == broker:
                is_kept = True
        if not is_kept:
            return broker


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
    existing: Mapping[int, Sequence[int]] | None = None,
) -> Assignment:
    """``StripedReplicaPlacer.place`` over ``brokers`` in the given order, drawing from
    ``random``; the rows of ``existing`` (row -> replicas, checked by the caller) keep theirs.
    ``compiled`` forces the compiled (True) or interpreted (False) kernel; None picks by size."""
    racks = _gather(brokers)
    rack_offset = _draw_offsets(racks, random)
    _validate(rf, num_partitions, racks)
    kept = _kept(racks, brokers, existing or {}, rf)
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
        lo, hi = np.searchsorted(kept[0], [begin, end])
        chunk_kept = (kept[0][lo:hi] - begin, kept[1][lo:hi], kept[2][lo:hi], kept[3][lo:hi])
        status = run(racks.ids, racks.lists, racks.names, draws, out[begin:end], pos, chunk_kept)
        if status == _STUCK:
            raise InvalidRequestException(
                "Kafka's striped placer would never finish with these brokers: a broker id "
                "is negative, which its lists read as 'no broker'"
            )
    return out


def _kept(
    racks: _Racks, brokers: Sequence[BrokerInfo], existing: Mapping[int, Sequence[int]], rf: int
) -> _Kept:
    """The kept replicas as the kernel reads them: row numbers (ascending), broker ids, the
    list (table row) each broker sits in, and how many each row keeps."""
    rows = sorted(existing)
    ids = np.zeros((len(rows), rf), dtype=np.int64)
    in_list = np.zeros((len(rows), rf), dtype=np.int64)
    counts = np.zeros(len(rows), dtype=np.int64)
    if rows:
        list_of = _list_of_broker(racks, brokers)
        for i, row in enumerate(rows):
            replicas = existing[row]
            ids[i, : len(replicas)] = replicas
            in_list[i, : len(replicas)] = [list_of[b] for b in replicas]
            counts[i] = len(replicas)
    return np.array(rows, dtype=np.int64), ids, in_list, counts


def _list_of_broker(racks: _Racks, brokers: Sequence[BrokerInfo]) -> dict[int, int]:
    """Each broker's row in the list table (its rack's fenced or unfenced list)."""
    out: dict[int, int] = {}
    for row in range(racks.lists.shape[0]):
        start, size = int(racks.lists[row, _START]), int(racks.lists[row, _SIZE])
        for broker in racks.ids[start : start + size].tolist():
            out[broker] = row
    return out


class StripedReplicaPlacer(ArrayReplicaPlacer):
    """Kafka's ``StripedReplicaPlacer``: the KRaft controller's default placer.

    The generator is kept across calls, as the controller keeps its own, so a second placement
    continues the random stream. ``spec.start_index`` and ``spec.start_partition_id`` play no
    part in the placement (Kafka's striped placer has neither); the result has
    ``spec.num_partitions`` rows, row i being partition ``spec.first_partition + i`` when the
    cluster view says which replicas a partition holds already. Without a generator it draws
    from ``JavaRandom(0)``, like the other built-in placers.
    """

    name: ClassVar[str] = "striped"

    def place_array(
        self,
        spec: PlacementSpec,
        cluster: ClusterView,
        broker_ids: Sequence[int] | None = None,
    ) -> Assignment:
        brokers = cluster.select(broker_ids)
        existing = existing_rows(spec, cluster, [b.id for b in brokers])
        return place_striped(
            brokers, spec.num_partitions, spec.replication_factor, self._random, existing=existing
        )
