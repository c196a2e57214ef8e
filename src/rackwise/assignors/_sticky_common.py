"""What both of Kafka's sticky assignment builders start from: the partitions as dense
integers, the rack view (Kafka's ``RackInfo`` plus the data-centre tier), and each member's
previously owned partitions after ownership conflicts are settled (Kafka's
``allSubscriptionsEqual``).

Partitions are numbered topic by topic, topics in Java string order, so that sorting the
numbers sorts by topic and then partition, as Kafka's sorted partition lists are.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from rackwise.assignors._java_order import hashmap_order
from rackwise.assignors.model import DEFAULT_GENERATION, GroupSpec, Member, PartitionInfo
from rackwise.assignors.racks import (
    consumer_rack,
    data_centre,
    data_centres,
    partition_racks,
    use_rack_aware_assignment,
)
from rackwise.common import TopicPartition
from rackwise.common.java import java_string_key


class Catalog:
    """The subscribed, existing partitions as integers ``0 .. total - 1``."""

    def __init__(self, partitions: Mapping[str, Sequence[PartitionInfo]]) -> None:
        self.topics = sorted(partitions, key=java_string_key)
        self.topic_index = {t: i for i, t in enumerate(self.topics)}
        self.start: list[int] = []
        self.count: list[int] = []
        self.topic_of: list[int] = []
        self.infos: list[PartitionInfo] = []
        for i, t in enumerate(self.topics):
            self.start.append(len(self.topic_of))
            self.count.append(len(partitions[t]))
            self.topic_of.extend([i] * len(partitions[t]))
            self.infos.extend(partitions[t])
        self.total = len(self.topic_of)

    def tp(self, pid: int) -> TopicPartition:
        t = self.topic_of[pid]
        return TopicPartition(self.topics[t], pid - self.start[t])

    def pid(self, tp: TopicPartition) -> int | None:
        """The number of ``tp``; ``None`` when its topic is not here or it has no such index."""
        t = self.topic_index.get(tp.topic)
        if t is None or not 0 <= tp.partition < self.count[t]:
            return None
        return self.start[t] + tp.partition

    def partitions_of(self, t: int) -> range:
        return range(self.start[t], self.start[t] + self.count[t])


class Locality:
    """One tier of the rack view: exact racks (Kafka's ``RackInfo``) or data centres.

    ``consumer_key`` and ``partition_keys`` are filled only when the tier is in use;
    ``num_consumers`` (how many consumers share a key with each partition) is filled whenever
    some consumer has a key, as Kafka fills it, and orders unassigned partitions.
    """

    __slots__ = ("consumer_key", "num_consumers", "partition_keys")

    def __init__(
        self,
        member_keys: Mapping[str, str],
        all_partition_keys: list[frozenset[str]],
        *,
        prefer: bool,
    ) -> None:
        by_key: dict[str, int] = {}
        for key in member_keys.values():
            by_key[key] = by_key.get(key, 0) + 1
        every: frozenset[str] = frozenset().union(*all_partition_keys) if by_key else frozenset()
        use = use_rack_aware_assignment(
            by_key.keys(),
            every,
            all_partition_keys if by_key else (),
            prefer_rack_aware_logic=prefer,
        )
        self.consumer_key: dict[str, str] = dict(member_keys) if use else {}
        self.partition_keys: list[frozenset[str]] = all_partition_keys if use else []
        self.num_consumers: list[int] | None = (
            [sum(by_key.get(k, 0) for k in keys) for keys in all_partition_keys] if by_key else None
        )

    @property
    def enabled(self) -> bool:
        return bool(self.consumer_key)

    def mismatch(self, consumer: str, pid: int) -> bool:
        """Kafka's ``racksMismatch``: the consumer has a key and the partition lacks it."""
        key = self.consumer_key.get(consumer)
        return key is not None and key not in self.partition_keys[pid]

    def strictly_matches(self, consumer: str, pid: int) -> bool:
        """The consumer has a key and the partition has it too."""
        key = self.consumer_key.get(consumer)
        return key is not None and key in self.partition_keys[pid]

    def sort_by_consumers(self, pids: list[int]) -> list[int]:
        """Kafka's ``sortPartitionsByRackConsumers``: fewest matching consumers first (stable)."""
        counts = self.num_consumers
        if counts is None or not pids:
            return pids
        return sorted(pids, key=counts.__getitem__)


def build_localities(
    catalog: Catalog, members: Iterable[Member], *, leader_only: bool, prefer: bool
) -> tuple[Locality, Locality]:
    """The exact-rack tier and the data-centre tier for ``members`` over ``catalog``."""
    racks = {m.member_id: r for m in members if (r := consumer_rack(m)) is not None}
    p_racks = (
        [partition_racks(info, leader_only=leader_only) for info in catalog.infos] if racks else []
    )
    exact = Locality(racks, p_racks, prefer=prefer)
    dcs = {c: dc for c, r in racks.items() if (dc := data_centre(r)) is not None}
    p_dcs = [data_centres(keys) for keys in p_racks] if dcs else []
    return exact, Locality(dcs, p_dcs, prefer=prefer)


@dataclass(slots=True)
class Ownership:
    """Kafka's ``allSubscriptionsEqual`` outputs: whether every member subscribes to the same
    topics, each member's still-valid owned partitions (members in Kafka's iteration order),
    the partitions claimed by two members of one generation, and the highest generation."""

    all_equal: bool
    owned: dict[str, list[int]]
    claimed_twice: set[int]
    max_generation: int


def resolve_ownership(
    catalog: Catalog,
    members: Sequence[Member],
    owned_of: Mapping[str, Sequence[TopicPartition]],
    *,
    as_kafka: bool = True,
) -> Ownership:
    """Settle who keeps each previously owned partition, as Kafka does.

    ``members`` come in Kafka's iteration order. A partition two members claim goes to the one
    with the higher generation; claimed twice in one generation, it is taken from both. A
    partition of a topic that is no longer subscribed (or that does not exist, or an index the
    topic does not have) is dropped.

    Kafka takes the first member's topics as the reference only once they are non-empty, so a
    first member without topics makes the next one the reference and the group can look uniform
    when it is not (the constrained builder then hands that member partitions of topics it does
    not read). ``as_kafka=False`` takes the first member as the reference, empty or not.
    """
    generation = {m.member_id: m.generation for m in members}
    result = Ownership(True, {}, set(), DEFAULT_GENERATION)
    subscribed: set[str] | None = None
    owner_of: dict[int, str] = {}
    for m in members:
        if subscribed is None or (as_kafka and not subscribed):
            subscribed = set(m.topics)
        elif result.all_equal and not (
            len(m.topics) == len(subscribed) and subscribed.issuperset(m.topics)
        ):
            result.all_equal = False
        result.max_generation = max(result.max_generation, m.generation)
        kept: list[int] = []
        result.owned[m.member_id] = kept
        for tp in owned_of[m.member_id]:
            pid = catalog.pid(tp)
            if pid is None:
                continue
            other = owner_of.get(pid)
            if other is None:
                kept.append(pid)
            elif m.generation == generation[other]:
                result.claimed_twice.add(pid)
                _remove_first(result.owned[other], pid)
            elif m.generation > generation[other]:
                kept.append(pid)
                _remove_first(result.owned[other], pid)
            else:
                continue
            owner_of[pid] = m.member_id
    return result


def _remove_first(items: list[int], value: int) -> None:
    if value in items:
        items.remove(value)


def java_member_order(group: GroupSpec) -> list[Member]:
    """The members in the iteration order of Kafka's subscription ``HashMap``."""
    by_id = {m.member_id: m for m in group.members}
    return [by_id[m] for m in hashmap_order(list(by_id))]
