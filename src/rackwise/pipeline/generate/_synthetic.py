"""One synthetic cluster, drawn with numpy: brokers on uneven racks, topics of Zipf-like sizes,
replicas placed rack-aware with a few misplaced, log directories with one skewed and one failed.

Goals
    Look like a real fleet to the audit and the planner: something to find (spread violations,
    a skewed disk, a failed directory, brokers loaded unevenly because their racks are) and
    something to balance, at any scale.
Constraints
    Deterministic for a seed; no Python loop per replica or per partition; memory bounded by a
    chunk of partitions however large the cluster (topics are found by binary search over
    their first partitions rather than an array per partition).
Algorithm
    Racks are the leaves of the topology (``dc=3,rack=2``: ``/dc1/rack1`` .. ``/dc3/rack2``);
    brokers go to racks one each, then the rest by a Dirichlet-weighted multinomial draw, and
    ids 1..B are shuffled over them. A partition's replicas take consecutive racks in an order
    that alternates the top level first (``/dc1/rack1, /dc2/rack1, /dc3/rack1, /dc1/rack2,
    ...``) from a random start, and a random broker in each rack: no spread violation where
    every data centre has as many racks. Then about one partition in 200 has its second
    replica moved next to its first (same rack), a spread violation. Each replica lands on a
    random log directory of its broker, except on one broker whose first directory takes three
    quarters of them; another broker's last directory has failed, and its replicas' sizes are
    unknown.
Worked example
    ``dc=3,rack=2``, 12 brokers, start rack ``/dc2/rack1`` at RF 3: racks ``/dc2/rack1``,
    ``/dc3/rack1``, ``/dc1/rack2``: one replica per data centre, each in a different rack.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from rackwise.common.errors import IllegalArgumentException

IntArray = npt.NDArray[np.int64]

MISPLACED_FRACTION: Final = 1 / 200
SKEWED_SHARE: Final = 0.75
MAX_PARTITION_BYTES: Final = 50 * 10**9
_TOPIC_PREFIXES: Final = ("orders", "payments", "clicks", "logs", "metrics", "audit", "users")
_PARTITION_COUNTS: Final = np.array([1, 3, 6, 8, 12, 16, 24, 32, 48, 64, 128])
_PARTITION_WEIGHTS: Final = np.array([4, 8, 10, 8, 12, 8, 6, 6, 4, 3, 1], dtype=float)
_LEVEL_NAME: Final = re.compile(r"[a-z][a-z0-9_-]*")


def parse_topology(text: str) -> tuple[tuple[str, int], ...]:
    """``dc=3,rack=2`` as ``(("dc", 3), ("rack", 2))``: levels from the top, each with the
    number of children of every node at the level above."""
    levels: list[tuple[str, int]] = []
    for part in text.split(","):
        name, sep, count = part.strip().partition("=")
        if not sep or not _LEVEL_NAME.fullmatch(name) or not count.isdigit() or int(count) < 1:
            raise IllegalArgumentException(
                f"topology {text!r}: expected levels such as dc=3,rack=2, got {part.strip()!r}"
            )
        if any(name == known for known, _ in levels):
            raise IllegalArgumentException(f"topology {text!r}: level {name!r} appears twice")
        levels.append((name, int(count)))
    return tuple(levels)


@dataclass(frozen=True)
class Layout:
    """A cluster's brokers, racks, directories and topics: everything but the replicas."""

    cluster_id: str
    broker_ids: IntArray  # by slot: slots are grouped by rack
    slot_racks: tuple[str, ...]  # the rack path of each slot
    rack_start: IntArray  # first slot of each rack in striping order
    rack_size: IntArray  # brokers in each rack in striping order
    log_dirs: tuple[str, ...]
    total_bytes: int  # capacity of every log directory
    skewed_broker: int  # broker id whose first directory is skewed; -1 for none
    failed_broker: int  # broker id whose last directory has failed; -1 for none
    topic_names: tuple[str, ...]  # sorted as Kafka sorts them
    topic_first: IntArray  # first global partition index of each topic
    topic_bytes: npt.NDArray[np.float64]  # mean bytes of a partition of each topic
    replication_factor: int
    num_partitions: int


def _racks(levels: tuple[tuple[str, int], ...]) -> tuple[list[str], list[tuple[int, ...]]]:
    """Every leaf path, and its digits for the alternating order (lowest level first)."""
    ranges = [range(count) for _, count in levels]
    paths, keys = [], []
    for digits in itertools.product(*ranges):
        paths.append(
            "".join(f"/{name}{d + 1}" for (name, _), d in zip(levels, digits, strict=True))
        )
        keys.append(tuple(reversed(digits)))
    return paths, keys


def _place_brokers(
    rng: np.random.Generator, levels: tuple[tuple[str, int], ...], num_brokers: int
) -> tuple[IntArray, list[str], IntArray, IntArray]:
    paths, keys = _racks(levels)
    order = sorted(range(len(paths)), key=keys.__getitem__)
    if num_brokers >= len(paths):
        extra = rng.multinomial(num_brokers - len(paths), rng.dirichlet(np.full(len(paths), 3.0)))
        counts = extra + 1
    else:
        counts = np.zeros(len(paths), dtype=np.int64)
        counts[rng.choice(len(paths), size=num_brokers, replace=False)] = 1
    order = [leaf for leaf in order if counts[leaf] > 0]
    sizes = np.array([counts[leaf] for leaf in order], dtype=np.int64)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    slot_racks = [paths[leaf] for leaf in order for _ in range(counts[leaf])]
    ids = rng.permutation(num_brokers).astype(np.int64) + 1
    return ids, slot_racks, starts, sizes


def _topics(
    rng: np.random.Generator, num_partitions: int
) -> tuple[tuple[str, ...], IntArray, npt.NDArray[np.float64]]:
    weights = _PARTITION_WEIGHTS / _PARTITION_WEIGHTS.sum()
    mean = float((_PARTITION_COUNTS * weights).sum())
    draws = rng.choice(_PARTITION_COUNTS, size=int(num_partitions / mean * 1.2) + 8, p=weights)
    ends = np.cumsum(draws)
    while int(ends[-1]) < num_partitions:  # a short draw (likely only for small counts)
        more = rng.choice(_PARTITION_COUNTS, size=len(draws), p=weights)
        draws = np.concatenate((draws, more))
        ends = np.cumsum(draws)
    count = int(np.searchsorted(ends, num_partitions)) + 1
    sizes = draws[:count].astype(np.int64)
    sizes[-1] -= int(ends[count - 1]) - num_partitions
    width = max(5, len(str(count)))
    names = sorted(
        f"{_TOPIC_PREFIXES[i % len(_TOPIC_PREFIXES)]}-{i:0{width}d}" for i in range(count)
    )
    first = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    ranks = rng.permutation(count) + 1
    mean_bytes = MAX_PARTITION_BYTES * ranks.astype(np.float64) ** -1.2
    return tuple(names), first, mean_bytes


def make_layout(
    cluster_id: str,
    seed_sequence: np.random.SeedSequence,
    levels: tuple[tuple[str, int], ...],
    num_brokers: int,
    num_partitions: int,
    replication_factor: int,
    dirs_per_broker: int,
) -> Layout:
    """Draw a cluster's layout (its own random stream, independent of the replicas')."""
    if not 1 <= replication_factor <= num_brokers:
        raise IllegalArgumentException(
            f"replication factor {replication_factor} needs between 1 and {num_brokers} brokers"
        )
    if num_partitions < 1 or dirs_per_broker < 1:
        raise IllegalArgumentException("a cluster needs at least one partition and log dir")
    rng = np.random.default_rng(seed_sequence)
    ids, slot_racks, starts, sizes = _place_brokers(rng, levels, num_brokers)
    names, first, mean_bytes = _topics(rng, num_partitions)
    counts = np.diff(np.append(first, num_partitions))
    per_dir = float((counts * mean_bytes).sum()) * 1.05 * replication_factor
    per_dir /= num_brokers * dirs_per_broker
    unit = 10**11
    total_bytes = max(unit, int(np.ceil(per_dir * 3 / unit)) * unit)
    picks = rng.choice(ids, size=min(2, num_brokers), replace=False)
    skewed = int(picks[0]) if dirs_per_broker >= 2 else -1
    failed = int(picks[-1]) if dirs_per_broker >= 2 and num_brokers >= 2 else -1
    return Layout(
        cluster_id=cluster_id,
        broker_ids=ids,
        slot_racks=tuple(slot_racks),
        rack_start=starts,
        rack_size=sizes,
        log_dirs=tuple(f"/data/d{i + 1}" for i in range(dirs_per_broker)),
        total_bytes=total_bytes,
        skewed_broker=skewed,
        failed_broker=failed,
        topic_names=names,
        topic_first=first,
        topic_bytes=mean_bytes,
        replication_factor=replication_factor,
        num_partitions=num_partitions,
    )


@dataclass(frozen=True)
class Chunk:
    """Replicas of partitions ``[start, start + n)`` as columns, ``n * rf`` rows in
    (topic, partition, replica index) order."""

    topic: IntArray  # index into Layout.topic_names
    partition: IntArray
    replica_index: IntArray
    broker_id: IntArray
    log_dir: IntArray  # index into Layout.log_dirs
    size_bytes: IntArray
    size_known: npt.NDArray[np.bool_]  # false on the failed directory


def _replica_slots(rng: np.random.Generator, layout: Layout, n: int) -> IntArray:
    """Broker slots, ``(n, rf)``: consecutive racks in striping order, a random broker in
    each, distinct brokers in every partition."""
    rf, racks = layout.replication_factor, len(layout.rack_size)
    start = rng.integers(0, racks, n)
    column = np.arange(rf)
    rack = (start[:, None] + column[None, :]) % racks
    repeat = column // racks
    draw = rng.integers(0, 2**31, (n, min(rf, racks)))[:, column % racks]
    slots = layout.rack_start[rack] + (draw + repeat) % layout.rack_size[rack]
    ordered = np.sort(slots, axis=1)
    clash = (ordered[:, 1:] == ordered[:, :-1]).any(axis=1) if rf > 1 else np.zeros(n, bool)
    if clash.any():
        total = len(layout.broker_ids)
        base = rng.integers(0, total, int(clash.sum()))
        slots[clash] = (base[:, None] + column[None, :]) % total
    return np.asarray(slots, dtype=np.int64)


def _misplace(rng: np.random.Generator, layout: Layout, slots: IntArray) -> None:
    """Move the second replica of about one partition in 200 into its first one's rack."""
    if layout.replication_factor < 2 or len(layout.rack_size) < 2:
        return
    chosen = np.flatnonzero(rng.random(len(slots)) < MISPLACED_FRACTION)
    rack_of_slot = np.repeat(np.arange(len(layout.rack_size)), layout.rack_size)
    rack = rack_of_slot[slots[chosen, 0]]
    size = layout.rack_size[rack]
    chosen, rack, size = chosen[size >= 2], rack[size >= 2], size[size >= 2]
    offset = slots[chosen, 0] - layout.rack_start[rack]
    step = 1 + rng.integers(0, 2**31, len(chosen)) % (size - 1)
    moved = layout.rack_start[rack] + (offset + step) % size
    others = slots[chosen][:, 2:]
    clash = (others == moved[:, None]).any(axis=1) if others.size else np.zeros(len(moved), bool)
    slots[chosen[~clash], 1] = moved[~clash]


def make_chunk(rng: np.random.Generator, layout: Layout, start: int, stop: int) -> Chunk:
    """The replicas of partitions ``[start, stop)``; ``rng`` is the cluster's replica stream,
    drawn from in chunk order."""
    n, rf = stop - start, layout.replication_factor
    global_index = np.arange(start, stop, dtype=np.int64)
    topic = np.searchsorted(layout.topic_first, global_index, side="right") - 1
    partition = global_index - layout.topic_first[topic]
    slots = _replica_slots(rng, layout, n)
    _misplace(rng, layout, slots)
    brokers = layout.broker_ids[slots].reshape(-1)
    noise = rng.lognormal(0.0, 0.3, n)
    sizes = np.maximum(layout.topic_bytes[topic] * noise, 0).astype(np.int64)
    dirs = rng.integers(0, len(layout.log_dirs), n * rf)
    skewed = brokers == layout.skewed_broker
    dirs[skewed & (rng.random(n * rf) < SKEWED_SHARE)] = 0
    failed = (brokers == layout.failed_broker) & (dirs == len(layout.log_dirs) - 1)
    return Chunk(
        topic=np.repeat(topic, rf),
        partition=np.repeat(partition, rf),
        replica_index=np.tile(np.arange(rf, dtype=np.int64), n),
        broker_id=brokers,
        log_dir=dirs,
        size_bytes=np.repeat(sizes, rf),
        size_known=~failed,
    )
