"""Kafka's ``ConstrainedAssignmentBuilder``: the sticky assignors' path when every member
subscribes to the same topics.

Goals
-----
Every member gets ``minQuota = total // members`` or ``maxQuota`` (one more) partitions, and
exactly ``total % members`` get ``maxQuota``; members keep as much of what they owned as that
allows; a partition goes to a member in one of its racks where the quotas allow.

Algorithm
---------
1. Members, in Kafka's ``HashMap`` iteration order, keep their owned partitions (in rack-aware
   mode only those in their rack), sorted by partition and then topic: all of them below
   ``minQuota``; ``maxQuota`` of them while members above ``minQuota`` are still wanted;
   ``minQuota`` otherwise. What they give up is remembered as *maybe revoked*.
2. The unassigned partitions, in topic and partition order (rack-aware: stably sorted by how
   many members share a rack with each), go round the members below ``minQuota`` in member-id
   order, each to the next member in its racks; failing that, to the first member at
   ``minQuota`` in its racks that may still take one more. A data-centre pass of the same kind
   follows when rack paths share data centres.
3. What is left goes round the members below ``minQuota``, then to the members that may take
   one more, in the order they became eligible.

A partition given to a member other than the one that gave it up (or one claimed twice in a
generation) is recorded as transferring ownership, which the cooperative assignor withholds.

Each step is linear in partitions plus members, up to logarithmic factors: the round in step 2
finds the next member of a rack by bisection in per-rack lists of member positions, where
Kafka scans the member list.

Worked example
--------------
Six partitions of ``t``, members ``c1`` (owned ``t-0 t-1 t-2``), ``c2`` (owned ``t-3``) and a
new ``c3``: quotas are 2 and 2. ``c1`` keeps ``t-0 t-1`` (``t-2`` maybe revoked), ``c2`` keeps
``t-3`` and, with ``c3``, stays below ``minQuota``. The round gives ``t-2`` to ``c2`` and
``t-4`` to ``c3``, then ``t-5`` to ``c3``. ``t-2`` changes owner, so a cooperative rebalance
withholds it from ``c2`` until ``c1`` has revoked it.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from collections.abc import Iterable, Mapping

from rackwise.assignors._sticky_common import Catalog, Locality, Ownership
from rackwise.common import RackwiseError
from rackwise.common.java import java_string_key


class _Ring:
    """Kafka's ``unfilledMembersWithUnderMinQuotaPartitions``: members in member-id order, with
    a per-key index of their positions for Kafka's ``nextRackConsumer``."""

    def __init__(self, members: list[str]) -> None:
        self.names = sorted(members, key=java_string_key)
        self.ranks = list(range(len(self.names)))
        self.by_key: dict[str, list[int]] = {}
        self.key_of: Mapping[str, str] = {}

    def __len__(self) -> int:
        return len(self.ranks)

    def use_keys(self, key_of: Mapping[str, str]) -> None:
        self.key_of = key_of
        self.by_key = {}
        for rank in self.ranks:
            key = key_of.get(self.names[rank])
            if key is not None:
                self.by_key.setdefault(key, []).append(rank)

    def consumer(self, index: int) -> str:
        return self.names[self.ranks[index]]

    def remove_at(self, index: int) -> None:
        rank = self.ranks.pop(index)
        key = self.key_of.get(self.names[rank])
        ranks = self.by_key.get(key) if key is not None else None
        if ranks:
            i = bisect_left(ranks, rank)
            if i < len(ranks) and ranks[i] == rank:
                ranks.pop(i)

    def next_with_key(self, keys: frozenset[str], first_index: int) -> int:
        """The position of the first member, going round from ``first_index``, whose key is
        one of ``keys``; -1 if there is none."""
        if not keys or not self.ranks:
            return -1
        start = self.ranks[first_index]
        at_or_after: int | None = None
        first: int | None = None
        for key in keys:
            ranks = self.by_key.get(key)
            if not ranks:
                continue
            i = bisect_left(ranks, start)
            if i < len(ranks) and (at_or_after is None or ranks[i] < at_or_after):
                at_or_after = ranks[i]
            if first is None or ranks[0] < first:
                first = ranks[0]
        rank = at_or_after if at_or_after is not None else first
        return -1 if rank is None else bisect_left(self.ranks, rank)


class _Queue:
    """Kafka's ``unfilledMembersWithExactlyMinQuotaPartitions`` (a linked list): append, remove,
    poll the head, and find the first member with one of some keys."""

    def __init__(self, members: Iterable[str]) -> None:
        self._live: dict[str, int] = {}
        self._order: deque[tuple[int, str]] = deque()
        self._by_key: dict[str, deque[tuple[int, str]]] = {}
        self._key_of: Mapping[str, str] = {}
        self._seq = 0
        for m in members:
            self.append(m)

    def __len__(self) -> int:
        return len(self._live)

    def use_keys(self, key_of: Mapping[str, str]) -> None:
        self._key_of = key_of
        self._by_key = {}
        for seq, m in self._order:
            key = key_of.get(m)
            if key is not None and self._live.get(m) == seq:
                self._by_key.setdefault(key, deque()).append((seq, m))

    def append(self, member: str) -> None:
        self._seq += 1
        self._live[member] = self._seq
        self._order.append((self._seq, member))
        key = self._key_of.get(member)
        if key is not None:
            self._by_key.setdefault(key, deque()).append((self._seq, member))

    def discard(self, member: str) -> None:
        self._live.pop(member, None)

    def clear(self) -> None:
        self._live.clear()
        self._order.clear()
        self._by_key.clear()

    def popleft(self) -> str:
        while self._order:
            seq, member = self._order.popleft()
            if self._live.get(member) == seq:
                del self._live[member]
                return member
        raise RackwiseError("BUG: poll of an empty member queue")

    def first_with_keys(self, keys: frozenset[str]) -> str | None:
        best: tuple[int, str] | None = None
        for key in keys:
            entries = self._by_key.get(key)
            while entries and self._live.get(entries[0][1]) != entries[0][0]:
                entries.popleft()
            if entries and (best is None or entries[0][0] < best[0]):
                best = entries[0]
        return None if best is None else best[1]


class ConstrainedAssignmentBuilder:
    """One run of Kafka's constrained builder (see the module documentation)."""

    def __init__(
        self, catalog: Catalog, racks: Locality, dcs: Locality, ownership: Ownership
    ) -> None:
        self.catalog = catalog
        self.racks = racks
        self.dcs = dcs
        self.owned = ownership.owned
        self.claimed_twice = ownership.claimed_twice
        members = len(self.owned)
        self.min_quota = catalog.total // members
        self.max_quota = -(-catalog.total // members)
        self.expected_over_min = catalog.total % members
        self.current_over_min = 0
        self.assignment: dict[str, list[int]] = {m: [] for m in self.owned}
        self.maybe_revoked: dict[int, str] = {}
        self.transferring: dict[int, str] = {}

    def build(self) -> tuple[dict[str, list[int]], dict[int, str]]:
        """The assignment (partition numbers per member) and the partitions changing owner."""
        under, exactly, assigned = self._assign_owned()
        ring = _Ring(under)
        queue = _Queue(sorted(exactly, key=java_string_key))
        unassigned = [p for p in range(self.catalog.total) if p not in assigned]
        left = self._rack_round_robin(
            self.racks.sort_by_consumers(unassigned), self.racks, ring, queue
        )
        if self.dcs.enabled:
            order = self.dcs.sort_by_consumers(left)
            still = set(self._rack_round_robin(order, self.dcs, ring, queue))
            left = [p for p in left if p in still]
        self._round_robin(left, ring, queue)
        self._verify_unfilled(ring)
        return self.assignment, self.transferring

    def _assign_owned(self) -> tuple[list[str], list[str], set[int]]:
        under: list[str] = []
        exactly: list[str] = []
        assigned: set[int] = set()
        topic_key = [java_string_key(t) for t in self.catalog.topics]
        for member, owned in self.owned.items():
            kept = []
            for pid in owned:
                if self.racks.mismatch(member, pid):
                    self.maybe_revoked[pid] = member
                else:
                    kept.append(pid)
            kept.sort(
                key=lambda p: (
                    p - self.catalog.start[self.catalog.topic_of[p]],
                    topic_key[self.catalog.topic_of[p]],
                )
            )
            kept = _without_first(kept, self.claimed_twice)
            if len(kept) < self.min_quota:
                keep = len(kept)
                under.append(member)
            elif len(kept) >= self.max_quota and self.current_over_min < self.expected_over_min:
                keep = self.max_quota
                self.current_over_min += 1
                if self.current_over_min == self.expected_over_min:
                    exactly.clear()
            else:
                keep = self.min_quota
                if self.current_over_min < self.expected_over_min:
                    exactly.append(member)
            self.assignment[member].extend(kept[:keep])
            assigned.update(kept[:keep])
            for pid in kept[keep:]:
                self.maybe_revoked[pid] = member
        return under, exactly, assigned

    def _rack_round_robin(
        self, partitions: list[int], locality: Locality, ring: _Ring, queue: _Queue
    ) -> list[int]:
        """Kafka's ``assignRackAwareRoundRobin``; returns the partitions it could not place."""
        if not locality.enabled:
            return partitions
        ring.use_keys(locality.consumer_key)
        queue.use_keys(locality.consumer_key)
        next_index = 0
        left = []
        for pid in partitions:
            keys = locality.partition_keys[pid]
            member = None
            index = ring.next_with_key(keys, next_index)
            if index >= 0:
                member = ring.consumer(index)
                count = len(self.assignment[member]) + 1
                if count >= self.min_quota:
                    ring.remove_at(index)
                    if count < self.max_quota and self.current_over_min < self.expected_over_min:
                        queue.append(member)
                else:
                    index += 1
                next_index = index % len(ring) if len(ring) else 0
            elif len(queue):
                member = queue.first_with_keys(keys)
                if member is not None and len(self.assignment[member]) + 1 == self.max_quota:
                    queue.discard(member)
                    self.current_over_min += 1
                    if self.current_over_min == self.expected_over_min:
                        queue.clear()
            if member is None:
                left.append(pid)
            else:
                self._assign_new(pid, member)
        return left

    def _round_robin(self, partitions: list[int], ring: _Ring, queue: _Queue) -> None:
        """Kafka's ``assignRoundRobin``."""
        i = 0
        for pid in partitions:
            from_ring = True
            if i < len(ring):
                member = ring.consumer(i)
                i += 1
            elif not len(ring) and not len(queue):
                raise RackwiseError("BUG: No more unfilled consumers to be assigned.")
            elif not len(ring):
                member = queue.popleft()
                from_ring = False
            else:
                member = ring.consumer(0)
                i = 1
            count = self._assign_new(pid, member)
            if count == self.min_quota:
                if not from_ring:
                    raise RackwiseError(f"BUG: member {member} at minQuota came from the queue")
                i -= 1
                ring.remove_at(i)
                queue.append(member)
            elif count == self.max_quota:
                self.current_over_min += 1

    def _assign_new(self, pid: int, member: str) -> int:
        mine = self.assignment[member]
        mine.append(pid)
        previous = self.maybe_revoked.get(pid)
        if (previous is not None and previous != member) or pid in self.claimed_twice:
            self.transferring[pid] = member
        return len(mine)

    def _verify_unfilled(self, ring: _Ring) -> None:
        if not len(ring):
            return
        if self.current_over_min != self.expected_over_min:
            raise RackwiseError(
                "BUG: We haven't reached the expected number of members with more than the "
                "minQuota partitions, but no more partitions to be assigned"
            )
        for i in range(len(ring)):
            member = ring.consumer(i)
            if len(self.assignment[member]) != self.min_quota:
                raise RackwiseError(
                    f"BUG: Consumer: [{member}] doesn't reach minQuota partitions, "
                    "and no more partitions to be assigned"
                )


def _without_first(items: list[int], drop: set[int]) -> list[int]:
    """``items`` without the first occurrence of each element of ``drop``."""
    if not drop:
        return items
    pending = set(drop)
    kept = []
    for item in items:
        if item in pending:
            pending.discard(item)
        else:
            kept.append(item)
    return kept
