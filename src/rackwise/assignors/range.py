"""Kafka's range assignor (``RangeAssignor``, with KIP-881 rack awareness), exactly, and its
leader-rack-aware form.

Goals
-----
Each topic on its own: give every consumer of the topic a contiguous share of its partitions,
the first ``n % c`` consumers one more than the rest, so that topics with the same number of
partitions and the same consumers are co-partitioned (partition ``i`` of each goes to the same
consumer). Where racks allow, give a consumer partitions with a replica in its rack (KIP-881),
or with the leader in its rack (the leader-rack-aware form), without changing how many
partitions of each topic each consumer gets.

Constraints
-----------
Balance per topic comes first: a consumer never gets more than its share. Consumers are ordered
as Kafka's ``MemberInfo`` orders them: static members (with a ``group.instance.id``) first, by
instance id, then the others by member id, both compared as Java compares strings.

Algorithm
---------
Per topic, the share is ``n // c`` partitions, plus one for each of the first ``n % c``
consumers to reach it. Rack awareness is decided per topic (see :mod:`rackwise.assignors.racks`).
If any topic uses it, a rack-matching pass runs first: topics with the same consumers and the
same number of partitions are matched together, partition index by partition index, each index
going to the first consumer (in order) whose rack holds that index of every topic and that
still has room in all of them; any other topic that uses rack awareness gives each consumer in
turn the lowest-numbered partitions in its rack, up to its share. A consumer without a rack
matches every partition here, as in Kafka. A data-centre pass of the same shape follows where
rack paths share data centres (a consumer without a data centre matches nothing there). Last,
each consumer in turn takes the lowest-numbered unassigned partitions up to its share. When a
rack pass ran, each consumer's list is sorted by topic and partition.

Each pass costs O(partitions x racks per partition + consumers): partitions are kept per rack
in index order and consumers per rack in member order, with pointers that only move forward.

Worked example
--------------
Topic ``t`` has four partitions whose single replicas sit in racks ``a, b, a, b``; consumers
``c0`` (rack ``a``) and ``c1`` (rack ``b``) get two each. Without racks ``c0`` takes ``t-0,
t-1`` and ``c1`` takes ``t-2, t-3``. With racks the matching pass gives ``c0`` the partitions
in ``a``, ``t-0, t-2``, and ``c1`` those in ``b``, ``t-1, t-3``; nothing is left for the last
pass. A second topic ``u`` with four partitions and the same consumers is matched with ``t``
index by index, so ``u-i`` always goes where ``t-i`` goes.

The leader-rack-aware form (``leader-rack-aware-range``) is this code with each partition's
racks reduced to its leader's (apache/kafka pull request 17571, ``LeaderRackAwareRangeAssignor``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import ClassVar

from rackwise.assignors._java_order import hashmap_order
from rackwise.assignors.model import Assignment, GroupSpec, Member, PartitionAssignor, PartitionInfo
from rackwise.assignors.racks import (
    consumer_rack,
    data_centre,
    data_centres,
    partition_racks,
    use_rack_aware_assignment,
)
from rackwise.common import TopicPartition
from rackwise.common.java import java_string_key


def member_sort_key(member: Member) -> tuple[int, bytes]:
    """Kafka's ``MemberInfo`` order: static members by instance id, then dynamic by member id."""
    if member.group_instance_id is not None:
        return (0, java_string_key(member.group_instance_id))
    return (1, java_string_key(member.member_id))


class _Level:
    """One tier of locality for a topic: exact racks, or data centres.

    ``consumer_key`` maps the consumers that have a key (rack or data centre) to it;
    ``partition_keys`` holds each partition's keys, or is ``None`` when no consumer of the
    topic has a key (Kafka then leaves its rack map empty). At the rack tier a consumer without
    a rack matches every partition (Kafka's ``racksMatch``); at the data-centre tier it matches
    none.
    """

    __slots__ = ("by_key", "consumer_key", "keyless_matches", "needs", "partition_keys", "pointer")

    def __init__(
        self,
        consumer_key: dict[str, str],
        partition_keys: list[frozenset[str]] | None,
        *,
        keyless_matches: bool,
        prefer: bool,
    ) -> None:
        self.consumer_key = consumer_key
        self.partition_keys = partition_keys
        self.keyless_matches = keyless_matches
        every = frozenset().union(*partition_keys) if partition_keys else frozenset()
        self.needs = use_rack_aware_assignment(
            set(consumer_key.values()),
            every,
            partition_keys or (),
            prefer_rack_aware_logic=prefer,
        )
        self.by_key: dict[str, list[int]] = {}
        self.pointer: dict[str, int] = {}
        for p, keys in enumerate(partition_keys or ()):
            for key in keys:
                self.by_key.setdefault(key, []).append(p)

    def matches(self, consumer: str, p: int) -> bool:
        key = self.consumer_key.get(consumer)
        if key is None:
            return self.keyless_matches
        return self.partition_keys is not None and key in self.partition_keys[p]

    @property
    def group_size(self) -> int:
        """Kafka groups topics by the size of their rack map (0 when it is empty)."""
        return 0 if self.partition_keys is None else len(self.partition_keys)


class _TopicState:
    """Kafka's ``TopicAssignmentState``: one topic's consumers, shares and unassigned partitions."""

    def __init__(
        self,
        topic: str,
        infos: Sequence[PartitionInfo],
        consumers: list[str],
        racks: Mapping[str, str],
        *,
        leader_only: bool,
        prefer: bool,
    ) -> None:
        self.topic = topic
        self.consumers = consumers
        self.size = len(infos)
        self.is_assigned = bytearray(self.size)
        self.first_unassigned = 0
        self.remaining = self.size
        self.num_assigned = dict.fromkeys(consumers, 0)
        self.per_consumer = self.size // len(consumers) if consumers else 0
        self.with_extra = self.size % len(consumers) if consumers else 0
        self.group_key = tuple((c, racks.get(c)) for c in consumers)
        rack_of = {c: racks[c] for c in consumers if c in racks}
        keys = [partition_racks(i, leader_only=leader_only) for i in infos] if rack_of else None
        self.racks = _Level(rack_of, keys, keyless_matches=True, prefer=prefer)
        dc_of = {c: dc for c, r in rack_of.items() if (dc := data_centre(r)) is not None}
        dc_keys = [data_centres(k) for k in keys] if dc_of and keys is not None else None
        self.dcs = _Level(dc_of, dc_keys, keyless_matches=False, prefer=prefer)

    def level(self, use_dcs: bool) -> _Level:
        return self.dcs if use_dcs else self.racks

    def max_assignable(self, consumer: str) -> int:
        extra = 1 if self.with_extra > 0 else 0
        return max(0, self.per_consumer + extra - self.num_assigned[consumer])

    def on_assigned(self, consumer: str, parts: list[int]) -> None:
        count = self.num_assigned[consumer] + len(parts)
        self.num_assigned[consumer] = count
        if count > self.per_consumer:
            self.with_extra -= 1
        for p in parts:
            self.is_assigned[p] = 1
        self.remaining -= len(parts)

    def take_first(self, limit: int, level: _Level | None, consumer: str) -> list[int]:
        """The lowest-numbered unassigned partitions (at most ``limit``) that ``level`` lets
        ``consumer`` take (any of them when ``level`` is ``None``)."""
        key = None if level is None else level.consumer_key.get(consumer)
        if level is not None and key is None and not level.keyless_matches:
            return []
        if level is None or key is None:
            while self.first_unassigned < self.size and self.is_assigned[self.first_unassigned]:
                self.first_unassigned += 1
            candidates: Sequence[int] = range(self.first_unassigned, self.size)
            start = 0
        else:
            candidates = level.by_key.get(key, [])
            start = level.pointer.get(key, 0)
        taken: list[int] = []
        i = start
        while i < len(candidates) and len(taken) < limit:
            if not self.is_assigned[candidates[i]]:
                taken.append(candidates[i])
            i += 1
        if level is not None and key is not None:
            level.pointer[key] = i
        return taken


def _assign(
    state: _TopicState, consumer: str, parts: list[int], assignment: dict[str, list[TopicPartition]]
) -> None:
    assignment[consumer].extend(TopicPartition(state.topic, p) for p in parts)
    state.on_assigned(consumer, parts)


def _assign_ranges(
    state: _TopicState, level: _Level | None, assignment: dict[str, list[TopicPartition]]
) -> None:
    for consumer in state.consumers:
        if state.remaining == 0:
            break
        limit = state.max_assignable(consumer)
        if limit == 0:
            continue
        parts = state.take_first(limit, level, consumer)
        if parts:
            _assign(state, consumer, parts, assignment)


def _assign_co_partitioned(
    states: list[_TopicState], use_dcs: bool, assignment: dict[str, list[TopicPartition]]
) -> None:
    """Index ``i`` of every topic goes to the first consumer that matches all of them and has
    room in all of them (Kafka's ``assignCoPartitionedWithRackMatching``)."""
    levels = [s.level(use_dcs) for s in states]
    order = {c: i for i, c in enumerate(states[0].consumers)}
    queues: dict[str | None, list[str]] = {}
    for c in states[0].consumers:
        key = levels[0].consumer_key.get(c)
        if key is not None or levels[0].keyless_matches:
            queues.setdefault(key, []).append(c)
    heads = dict.fromkeys(queues, 0)

    def head(key: str | None) -> str | None:
        queue, i = queues.get(key), heads.get(key, 0)
        while queue is not None and i < len(queue):
            if all(s.max_assignable(queue[i]) > 0 for s in states):
                heads[key] = i
                return queue[i]
            i += 1  # room never grows back, so a consumer without room is passed for good
        heads[key] = i
        return None

    for p in range(levels[0].group_size):
        if any(s.is_assigned[p] for s in states):
            continue  # taken in an earlier pass (the rack pass, before the data-centre pass)
        keys: set[str | None] = {None} if levels[0].keyless_matches else set()
        if all(lv.partition_keys is not None for lv in levels):
            keys |= frozenset.intersection(*(lv.partition_keys[p] for lv in levels))  # type: ignore[index]
        found = [c for c in map(head, keys) if c is not None]
        if found:
            consumer = min(found, key=order.__getitem__)
            for s in states:
                _assign(s, consumer, [p], assignment)


def _assign_with_matching(
    states: list[_TopicState], use_dcs: bool, assignment: dict[str, list[TopicPartition]]
) -> None:
    groups: dict[tuple[tuple[tuple[str, str | None], ...], int], list[_TopicState]] = {}
    for s in states:
        groups.setdefault((s.group_key, s.level(use_dcs).group_size), []).append(s)
    for members in groups.values():
        if len(members) > 1:
            _assign_co_partitioned(members, use_dcs, assignment)
        elif members[0].level(use_dcs).needs:
            _assign_ranges(members[0], members[0].level(use_dcs), assignment)


def _topic_order(
    members: Iterable[Member], existing: Mapping[str, Sequence[PartitionInfo]]
) -> list[str]:
    seen: dict[str, None] = {}
    for m in members:
        for t in m.topics:
            if existing.get(t):
                seen.setdefault(t)
    return hashmap_order(list(seen))


class RangePartitionAssignor(PartitionAssignor):
    """Kafka's ``range`` assignor (see the module documentation)."""

    name: ClassVar[str] = "range"
    leader_only: ClassVar[bool] = False

    def assign(self, group: GroupSpec) -> Assignment:
        members = [group.members[i] for i in _java_member_positions(group)]
        racks = {m.member_id: r for m in members if (r := consumer_rack(m)) is not None}
        by_topic: dict[str, list[Member]] = {}
        for m in members:
            for t in dict.fromkeys(m.topics):
                by_topic.setdefault(t, []).append(m)
        states = [
            _TopicState(
                t,
                group.partitions[t],
                [m.member_id for m in sorted(by_topic[t], key=member_sort_key)],
                racks,
                leader_only=self.leader_only,
                prefer=group.prefer_rack_aware_logic,
            )
            for t in _topic_order(members, group.partitions)
        ]
        assignment: dict[str, list[TopicPartition]] = {m.member_id: [] for m in group.members}
        use_racks = any(s.racks.needs for s in states)
        use_dcs = any(s.dcs.needs for s in states)
        if use_racks:
            _assign_with_matching(states, False, assignment)
        if use_dcs:
            _assign_with_matching(states, True, assignment)
        for s in states:
            _assign_ranges(s, None, assignment)
        if use_racks or use_dcs:
            for parts in assignment.values():
                parts.sort(key=_tp_key)
        return assignment


class LeaderRackAwareRangePartitionAssignor(RangePartitionAssignor):
    """``range`` with each partition local only to its leader's rack (pull request 17571)."""

    name: ClassVar[str] = "leader-rack-aware-range"
    leader_only: ClassVar[bool] = True


def _tp_key(tp: TopicPartition) -> tuple[bytes, int]:
    return (java_string_key(tp.topic), tp.partition)


def _java_member_positions(group: GroupSpec) -> list[int]:
    """Positions of the members in the iteration order of Kafka's subscription ``HashMap``."""
    ids = [m.member_id for m in group.members]
    position = {m: i for i, m in enumerate(ids)}
    return [position[m] for m in hashmap_order(ids)]
