"""Kafka's ``GeneralAssignmentBuilder``: the sticky assignors' path when members subscribe to
different topics.

Goals
-----
As balanced as the subscriptions allow (no partition could move to a member with two or more
fewer partitions), then as sticky as possible (members keep what they owned, and a partition
that must move goes back to its owner of the previous generation when that helps), and where
racks allow, partitions in their members' racks.

Algorithm
---------
1. Members keep their owned partitions of topics they still subscribe to (in rack-aware mode,
   only those in their rack). Partitions owned at an older generation are remembered as the
   *previous* assignment.
2. Unassigned partitions, topics with the fewest possible members first, each go to the member
   with the fewest partitions (then smallest id) that subscribes to the topic: first among
   members in its racks, then (with rack paths) in its data centres, then among all.
3. Topics with a single possible member, and members that hold everything they could and
   nothing movable, are set aside. Then, while the assignment is not balanced, each partition
   in turn moves if its member has two or more partitions more than some other possible
   member: back to its previous owner when that one has two fewer, else to the least loaded
   possible member (a member in its rack is what qualifies the move when the current member
   is in its rack). A chain of moves between the same members is shortened as Kafka's
   ``PartitionMovements`` does, so that no partition moves back and forth.
4. If the moves did not improve Kafka's balance score (the sum of the differences in size over
   all pairs of members), the assignment before the moves is kept.

Kafka rechecks balance and scans every possible member for each partition; here the balance
check is computed once per change of the assignment and the smallest possible member once per
topic and change, which gives the same decisions.

Worked example
--------------
``c1`` subscribes to ``t`` (two partitions), ``c2`` to ``t`` and ``u`` (two partitions), none
owned. Topic ``t`` (two possible members) comes after ``u`` (one): ``u-0``, ``u-1`` go to
``c2``; ``t-0`` to ``c1`` (0 partitions) and ``t-1`` to ``c1`` (1 < 2). Sizes 2 and 2:
balanced, nothing moves.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Callable, Mapping, Sequence

from rackwise.assignors._balance_check import BalanceTracker
from rackwise.assignors._java_order import JavaHashSetHead
from rackwise.assignors._sticky_common import Catalog, Locality, Ownership
from rackwise.assignors.model import Member
from rackwise.common.java import java_string_hash, java_string_key, topic_partition_hash

Pair = tuple[str, str]


class _SortedMembers:
    """Kafka's ``TreeSet`` of members ordered by (number of partitions, member id)."""

    def __init__(self, current: Mapping[str, list[int]]) -> None:
        self._current = current
        self.keys: list[tuple[int, bytes, str]] = []
        self._stored: dict[str, tuple[int, bytes, str]] = {}
        self._id_key: dict[str, bytes] = {}

    def add(self, member: str) -> None:
        if member in self._stored:
            return
        id_key = self._id_key.get(member)
        if id_key is None:
            id_key = self._id_key[member] = java_string_key(member)
        key = (len(self._current[member]), id_key, member)
        self._stored[member] = key
        insort(self.keys, key)

    def remove(self, member: str) -> None:
        key = self._stored.pop(member, None)
        if key is not None:
            del self.keys[bisect_left(self.keys, key)]

    def first(self) -> str:
        return self.keys[0][2]

    def last(self) -> str:
        return self.keys[-1][2]


class _Movements:
    """Kafka's ``PartitionMovements``: the net moves of this rebalance, per topic and pair."""

    def __init__(self, catalog: Catalog) -> None:
        self._catalog = catalog
        self._topic_hash = [java_string_hash(t) for t in catalog.topics]
        self.by_topic: dict[int, dict[Pair, JavaHashSetHead[int]]] = {}
        self.moves: dict[int, Pair] = {}

    def _remove_record(self, pid: int) -> Pair:
        pair = self.moves.pop(pid)
        t = self._catalog.topic_of[pid]
        pairs = self.by_topic[t]
        pairs[pair].discard(pid)
        if not len(pairs[pair]):
            del pairs[pair]
        if not pairs:
            del self.by_topic[t]
        return pair

    def _add_record(self, pid: int, pair: Pair) -> None:
        self.moves[pid] = pair
        pairs = self.by_topic.setdefault(self._catalog.topic_of[pid], {})
        if pair not in pairs:
            pairs[pair] = JavaHashSetHead()
        topic_hash = self._topic_hash[self._catalog.topic_of[pid]]
        pairs[pair].add(pid, topic_partition_hash(self._catalog.tp(pid), topic_hash))

    def move(self, pid: int, old: str, new: str) -> None:
        if pid in self.moves:
            source, _ = self._remove_record(pid)
            if source != new:
                self._add_record(pid, (source, new))
        else:
            self._add_record(pid, (old, new))

    def actual_partition(self, pid: int, old: str, new: str) -> int:
        """Kafka's ``getTheActualPartitionToBeMoved``: move a partition that earlier came the
        other way between the same members instead, when there is one."""
        pairs = self.by_topic.get(self._catalog.topic_of[pid])
        if pairs is None:
            return pid
        if pid in self.moves:
            old = self.moves[pid][0]
        reverse = pairs.get((new, old))
        return pid if reverse is None else reverse.head()


class GeneralAssignmentBuilder:
    """One run of Kafka's general builder (see the module documentation)."""

    def __init__(
        self,
        catalog: Catalog,
        racks: Locality,
        dcs: Locality,
        ownership: Ownership,
        members: Sequence[Member],
        *,
        as_kafka: bool = True,
    ) -> None:
        self.catalog = catalog
        self.as_kafka = as_kafka
        self.racks = racks
        self.dcs = dcs
        self.max_generation = ownership.max_generation
        self.members = {m.member_id: m for m in members}
        self.topic_members: list[list[str]] = [[] for _ in catalog.topics]
        self.member_topics: dict[str, list[int]] = {}
        self.member_topic_set: dict[str, set[int]] = {}
        for m in members:
            topics = [t for name in m.topics if (t := catalog.topic_index.get(name)) is not None]
            self.member_topics[m.member_id] = topics
            self.member_topic_set[m.member_id] = set(topics)
            for t in topics:
                self.topic_members[t].append(m.member_id)
        self.current = ownership.owned
        self.owner = {pid: c for c, pids in self.current.items() for pid in pids}
        topic_order = sorted(
            range(len(catalog.topics)),
            key=lambda t: (len(self.topic_members[t]), java_string_key(catalog.topics[t])),
        )
        self.sorted_all = [p for t in topic_order for p in catalog.partitions_of(t)]
        self.subs = _SortedMembers(self.current)
        self.movements = _Movements(catalog)
        self.revocation_required = False
        self._tracker: BalanceTracker | None = None

    def build(self) -> dict[str, list[int]]:
        prev = self._previous_assignment()
        assigned = set(self._assign_owned())
        unassigned = [p for p in self.sorted_all if p not in assigned]
        for member in self.current:
            self.subs.add(member)
        self._balance(prev, unassigned)
        return self.current

    def _previous_assignment(self) -> dict[int, tuple[str, int]]:
        prev: dict[int, tuple[str, int]] = {}
        for m in self.members.values():
            if m.generation >= self.max_generation:
                continue
            for tp in m.owned:
                pid = self.catalog.pid(tp)
                if pid is not None and (pid not in prev or m.generation > prev[pid][1]):
                    prev[pid] = (m.member_id, m.generation)
        return prev

    def _assign_owned(self) -> list[int]:
        assigned = []
        for member, pids in self.current.items():
            topics = set(self.members[member].topics)
            kept = []
            for pid in pids:
                topic = self.catalog.topics[self.catalog.topic_of[pid]]
                if topic not in topics or self.racks.mismatch(member, pid):
                    self.revocation_required = True  # Kafka leaves its owner entry in place
                else:
                    kept.append(pid)
            pids[:] = kept
            assigned.extend(kept)
        return assigned

    def _balance(self, prev: dict[int, tuple[str, int]], unassigned: list[int]) -> None:
        initializing = not self.current[self.subs.last()]
        to_assign = unassigned
        if self.racks.enabled:
            to_assign = list(unassigned)
            self._maybe_assign(to_assign, lambda c, p: not self.racks.mismatch(c, p), remove=True)
        if self.dcs.enabled:
            to_assign = list(to_assign)
            self._maybe_assign(to_assign, self.dcs.strictly_matches, remove=True)
        self._maybe_assign(to_assign, None, remove=False)
        fixed_topics = {t for t, ms in enumerate(self.topic_members) if len(ms) < 2}
        if fixed_topics:
            self.sorted_all = [
                p for p in self.sorted_all if self.catalog.topic_of[p] not in fixed_topics
            ]
            unassigned = [p for p in unassigned if self.catalog.topic_of[p] not in fixed_topics]
        fixed = {}
        for member in self.member_topics:
            if not self._can_participate(member):
                self.subs.remove(member)
                fixed[member] = self.current.pop(member)
        before = {c: list(pids) for c, pids in self.current.items()}
        owner_before = dict(self.owner)
        self._tracker = BalanceTracker(
            self.current, self.catalog.topic_of, self.member_topics, self._max_size
        )
        if not self.revocation_required:
            self._perform_reassignments(unassigned, prev)
        performed = self._perform_reassignments(self.sorted_all, prev)
        if (
            not initializing
            and performed
            and _balance_score(self.current) >= _balance_score(before)
        ):
            self.current.clear()
            self.current.update(before)
            self.owner = owner_before
        for member, pids in fixed.items():
            self.current[member] = pids
            self.subs.add(member)

    def _maybe_assign(
        self, pids: list[int], matches: Callable[[str, int], bool] | None, *, remove: bool
    ) -> None:
        left = []
        for pid in pids:
            topic_has_members = bool(self.topic_members[self.catalog.topic_of[pid]])
            placed = topic_has_members and self._assign_one(pid, matches)
            if not (placed and remove):
                left.append(pid)
        if remove:
            pids[:] = left

    def _assign_one(self, pid: int, matches: Callable[[str, int], bool] | None) -> bool:
        t = self.catalog.topic_of[pid]
        for _, _, member in self.subs.keys:
            if t in self.member_topic_set[member] and (matches is None or matches(member, pid)):
                self.subs.remove(member)
                self.current[member].append(pid)
                self.owner[pid] = member
                self.subs.add(member)
                return True
        return False

    def _max_size(self, member: str) -> int:
        topics = self.member_topics[member]
        if len(topics) == len(self.catalog.topics):
            return self.catalog.total
        return sum(self.catalog.count[t] for t in topics)

    def _can_participate(self, member: str) -> bool:
        pids = self.current[member]
        if len(pids) < self._max_size(member):
            return True
        return any(len(self.topic_members[self.catalog.topic_of[p]]) >= 2 for p in pids)

    def _perform_reassignments(self, pids: list[int], prev: dict[int, tuple[str, int]]) -> bool:
        performed = False
        modified = True
        while modified:
            modified = False
            for pid in pids:
                if self._is_balanced():
                    break
                if self._maybe_move(pid, prev):
                    performed = modified = True
        return performed

    def _maybe_move(self, pid: int, prev: dict[int, tuple[str, int]]) -> bool:
        t = self.catalog.topic_of[pid]
        member = self.owner.get(pid)
        if member is None:  # unreachable: every movable partition is assigned by now
            return False
        size = len(self.current[member])
        previous = prev.get(pid)
        # Kafka also moves a partition back to a previous owner that was set aside (and then
        # fails: such moves are always skipped) or that no longer reads its topic (an invalid
        # assignment: skipped unless running as Kafka).
        if (
            previous is not None
            and previous[0] in self.current
            and (self.as_kafka or t in self.member_topic_set[previous[0]])
            and size > len(self.current[previous[0]]) + 1
        ):
            self._reassign(pid, previous[0])
            return True
        rack = self.racks.consumer_key.get(member)
        if rack is not None:
            keys = self.racks.partition_keys[pid]
            if keys and rack in keys and self._least_size(t, keys) < size - 1:
                self._reassign(pid, self._least_loaded(t, None))
                return True
        if self._least_size(t, None) < size - 1:
            self._reassign(pid, self._least_loaded(t, None))
            return True
        return False

    def _least_size(self, t: int, keys: frozenset[str] | None) -> int:
        """The fewest partitions a possible member of ``t`` has (one in ``keys`` if given)."""
        member = self._least_loaded(t, keys)
        return len(self.current[member]) if member is not None else 1 << 62

    def _least_loaded(self, t: int, keys: frozenset[str] | None) -> str | None:
        """The first member, fewest partitions first, that may take ``t`` (in ``keys``)."""
        for _, _, member in self.subs.keys:
            if t in self.member_topic_set[member] and (
                keys is None or self.racks.consumer_key.get(member) in keys
            ):
                return member
        return None

    def _reassign(self, pid: int, new: str | None) -> None:
        assert new is not None, "BUG: a topic that may move has no possible member"
        actual = self.movements.actual_partition(pid, self.owner[pid], new)
        old = self.owner[actual]
        self.subs.remove(old)
        self.subs.remove(new)
        self.movements.move(actual, old, new)
        if self._tracker is not None:
            self._tracker.moved(actual, old, new)
        self.current[old].remove(actual)
        self.current[new].append(actual)
        self.owner[actual] = new
        self.subs.add(new)
        self.subs.add(old)

    def _is_balanced(self) -> bool:
        """Kafka's ``isBalanced``: sizes differ by at most one, or no partition could move to
        a member with two fewer (see :mod:`rackwise.assignors._balance_check`)."""
        assert self._tracker is not None
        return self._tracker.balanced(self.subs.first(), self.subs.last())


def _balance_score(assignment: Mapping[str, list[int]]) -> int:
    """Kafka's ``getBalanceScore``: the sum over pairs of members of their size difference."""
    sizes = sorted(len(pids) for pids in assignment.values())
    n = len(sizes)
    return sum(size * (2 * i - n + 1) for i, size in enumerate(sizes))
