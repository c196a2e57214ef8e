"""The values a replica placer sees: the spec of what to place and a read-only cluster view.

Modelled on KIP-879's ``ReplicaPlacer.place(PlacementSpec, ClusterView, brokerIds)``: frozen
values in, replica lists out, no I/O and no hidden randomness (a placer is given its source).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import ClassVar, Final

import numpy as np
import numpy.typing as npt

from rackwise.common import (
    InvalidReplicationFactorException,
    InvalidRequestException,
    JavaRandom,
    RandomSource,
    TopicPartition,
    UnknownBrokerException,
)
from rackwise.common.collector import paused_gc

Assignment = npt.NDArray[np.int64]
"""A placement as an int64 array of shape (partitions, replication factor): row i holds the
replicas of partition ``start_partition_id + i``, the preferred leader first."""

RANDOM_START: Final = -1
"""``PlacementSpec.start_index`` sentinel: draw the start index (and the follower shift) at random,
as Kafka's ``fixedStartIndex = -1`` does."""


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    """A broker as a placer sees it. ``rack`` is None for a broker without ``broker.rack``; a
    fenced broker may hold followers but never leads a new partition."""

    id: int
    rack: str | None = None
    fenced: bool = False


@dataclass(frozen=True, slots=True)
class PlacementSpec:
    """What to place: ``num_partitions`` partitions of ``replication_factor`` replicas, numbered
    from ``start_partition_id`` (a negative id means 0, as in Kafka).

    ``start_index`` is Kafka's ``fixedStartIndex``: the position in the broker list of the first
    leader, which also fixes the initial follower shift; ``RANDOM_START`` (-1) draws both.
    ``topic`` names the topic whose existing partitions (in the cluster view) placement continues
    from; None means the only topic the view holds, if any.
    """

    num_partitions: int
    replication_factor: int
    start_partition_id: int = 0
    start_index: int = RANDOM_START
    topic: str | None = None

    @property
    def first_partition(self) -> int:
        """The id of the first partition placed: ``start_partition_id``, or 0 if negative."""
        return max(0, self.start_partition_id)


@dataclass(frozen=True, slots=True, init=False)
class ClusterView:
    """A read-only view of the cluster: its brokers in the order the caller lists them (Kafka's
    rack-unaware placement depends on that order) and the current assignment of partitions."""

    brokers: tuple[BrokerInfo, ...]
    assignments: Mapping[TopicPartition, tuple[int, ...]] = field(
        default_factory=lambda: MappingProxyType({})
    )

    def __init__(
        self,
        brokers: Sequence[BrokerInfo],
        assignments: Mapping[TopicPartition, Sequence[int]] | None = None,
    ) -> None:
        frozen = {tp: tuple(replicas) for tp, replicas in (assignments or {}).items()}
        object.__setattr__(self, "brokers", tuple(brokers))
        object.__setattr__(self, "assignments", MappingProxyType(frozen))

    def broker_ids(self) -> list[int]:
        return [b.id for b in self.brokers]

    def topic_assignment(self, topic: str | None) -> dict[int, tuple[int, ...]]:
        """The existing replicas of one topic by partition id. With ``topic`` None the view must
        hold at most one topic."""
        topics = sorted({tp.topic for tp in self.assignments})
        if topic is None:
            if len(topics) > 1:
                raise InvalidRequestException(
                    f"The cluster view holds several topics ({', '.join(topics)}); "
                    "name the topic to continue placing"
                )
            topic = topics[0] if topics else None
        return {
            tp.partition: replicas for tp, replicas in self.assignments.items() if tp.topic == topic
        }

    def select(self, broker_ids: Sequence[int] | None) -> list[BrokerInfo]:
        """The candidate brokers: all of them, or those named by ``broker_ids`` in that order
        (KIP-879's ``brokerIds``). An unknown or repeated id is an error."""
        if broker_ids is None:
            return list(self.brokers)
        by_id = {b.id: b for b in self.brokers}
        chosen: list[BrokerInfo] = []
        seen: set[int] = set()
        for broker_id in broker_ids:
            if broker_id in seen:
                raise InvalidRequestException(f"Broker id {broker_id} is repeated in broker_ids")
            if broker_id not in by_id:
                raise UnknownBrokerException(
                    f"Broker id {broker_id} in broker_ids is not a broker of the cluster"
                )
            seen.add(broker_id)
            chosen.append(by_id[broker_id])
        return chosen


class ReplicaPlacer(ABC):
    """KIP-879's pluggable replica placer.

    ``place`` returns the replica list of each partition, in partition order starting at
    ``spec.start_partition_id``, or None to defer to Kafka's rack-unaware default.
    """

    name: ClassVar[str]

    @abstractmethod
    def place(
        self,
        spec: PlacementSpec,
        cluster: ClusterView,
        broker_ids: Sequence[int] | None = None,
    ) -> list[list[int]] | None: ...


class ArrayReplicaPlacer(ReplicaPlacer):
    """A built-in placer whose core produces an :data:`Assignment` array; ``place`` converts it
    to lists. Large placements should call :meth:`place_array` and skip the conversion.

    ``random`` is the placer's source of draws, kept across calls (as Kafka's controller keeps
    its generator); without one it draws from ``JavaRandom(0)``, so placement stays pure.
    """

    def __init__(self, random: RandomSource | None = None) -> None:
        self._random: RandomSource = random if random is not None else JavaRandom(0)

    @abstractmethod
    def place_array(
        self,
        spec: PlacementSpec,
        cluster: ClusterView,
        broker_ids: Sequence[int] | None = None,
    ) -> Assignment: ...

    def place(
        self,
        spec: PlacementSpec,
        cluster: ClusterView,
        broker_ids: Sequence[int] | None = None,
    ) -> list[list[int]]:
        return as_lists(self.place_array(spec, cluster, broker_ids))


def as_lists(assignment: Assignment) -> list[list[int]]:
    """``assignment`` as Python lists, built with the cyclic collector paused (every list lives
    on; counting them again and again as they are made is most of the cost otherwise).

    When the broker ids span fewer values than the assignment has slots, the lists share one
    int object per id (an object-array lookup, no bigger than the ints it saves): a million
    partitions on a thousand brokers allocate a million lists and a thousand ints.
    """
    with paused_gc():
        if assignment.size == 0:
            rows: list[list[int]] = assignment.tolist()
            return rows
        low, high = int(assignment.min()), int(assignment.max())
        if low >= 0 and high < assignment.size:  # index the lookup by id, no shifted copy
            rows = object_lookup(0, high)[assignment].tolist()
        elif high - low < assignment.size:
            rows = object_lookup(low, high)[assignment - low].tolist()
        else:
            rows = assignment.tolist()
        return rows


def object_lookup(low: int, high: int) -> npt.NDArray[np.object_]:
    """An object array whose element i is the Python int ``low + i``, for ``i`` up to ``high``."""
    return np.array(list(range(low, high + 1)), dtype=object)


def existing_rows(
    spec: PlacementSpec, cluster: ClusterView, candidates: Sequence[int]
) -> dict[int, tuple[int, ...]]:
    """The replicas the partitions ``spec`` places hold today, by row (row i is partition
    ``spec.first_partition + i``), from ``cluster``'s assignment of ``spec.topic``; partitions
    without replicas are left out. Each list must fit the replication factor, name candidate
    brokers only, and name each at most once."""
    first = spec.first_partition
    allowed = set(candidates)
    rows: dict[int, tuple[int, ...]] = {}
    for pid, replicas in cluster.topic_assignment(spec.topic).items():
        if not replicas or not first <= pid < first + spec.num_partitions:
            continue
        if len(replicas) > spec.replication_factor:
            raise InvalidReplicationFactorException(
                f"Partition {pid} already has {len(replicas)} replicas, more than the "
                f"replication factor {spec.replication_factor}"
            )
        for broker in replicas:
            if broker not in allowed:
                raise UnknownBrokerException(
                    f"Partition {pid} has a replica on broker {broker}, which is not a "
                    "candidate broker"
                )
        if len(set(replicas)) != len(replicas):
            twice = next(b for b in replicas if replicas.count(b) > 1)
            raise InvalidRequestException(f"Partition {pid} lists broker {twice} twice")
        rows[pid - first] = replicas
    return rows
