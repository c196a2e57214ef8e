"""Kafka's ``isBalanced`` test of the general sticky builder, kept up to date move by move.

Kafka calls ``isBalanced`` before looking at each partition, and each call walks every
partition of every topic of every member that could take more: quadratic in partitions. The
answer only changes when a partition moves, and it can be read off per topic:

    not balanced  <=>  some topic ``t`` has a holder with more than ``s + 1`` partitions, where
                       ``s`` is the size of the smallest member that subscribes to ``t`` and
                       could still take more (holds fewer than all it could hold).

(Kafka asks whether some such member could take a partition of ``t`` from a member two or more
larger; if the largest holder of ``t`` were that member itself, it would not be two larger.)

Two levels keep this cheap. First a sufficient test: if the smallest member could take more
and the largest member holds a topic the smallest subscribes to, the assignment is not
balanced. Only when that test is inconclusive does the tracker consult, per topic, counts of
holders by size and of open subscribers by size; members that moved since the last such look
are brought up to date then, once each however often they moved.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence


class BalanceTracker:
    """Whether an assignment is balanced in Kafka's sense, as partitions move."""

    def __init__(
        self,
        current: Mapping[str, list[int]],
        topic_of: Sequence[int],
        member_topics: Mapping[str, Sequence[int]],
        max_size: Callable[[str], int],
    ) -> None:
        self._topic_of = topic_of
        self._topics = {m: frozenset(member_topics[m]) for m in current}
        self._max = {m: max_size(m) for m in current}
        self._size = {m: len(parts) for m, parts in current.items()}
        self.held: dict[str, Counter[int]] = {
            m: Counter(topic_of[p] for p in parts) for m, parts in current.items()
        }
        every = {t for ts in self._topics.values() for t in ts} | {
            t for held in self.held.values() for t in held
        }
        self._holders: dict[int, Counter[int]] = {t: Counter() for t in every}
        self._open: dict[int, Counter[int]] = {t: Counter() for t in every}
        self._attached: dict[str, tuple[int, frozenset[int], bool]] = {}
        self._breaking: set[int] = set()
        self._dirty: set[str] = set(current)

    def moved(self, pid: int, old: str, new: str) -> None:
        """Record that partition ``pid`` moved from ``old`` to ``new``."""
        t = self._topic_of[pid]
        self.held[old][t] -= 1
        if not self.held[old][t]:
            del self.held[old][t]
        self.held[new][t] += 1
        self._size[old] -= 1
        self._size[new] += 1
        self._dirty.add(old)
        self._dirty.add(new)

    def balanced(self, smallest: str, largest: str) -> bool:
        """Kafka's ``isBalanced`` given the smallest and the largest member."""
        low, high = self._size[smallest], self._size[largest]
        if low >= high - 1:
            return True
        if low < self._max[smallest] and not self._topics[smallest].isdisjoint(self.held[largest]):
            return False
        touched: set[int] = set()
        for member in self._dirty:
            touched |= self._reattach(member)
        self._dirty.clear()
        for t in touched:
            holders, open_sizes = self._holders[t], self._open[t]
            if holders and open_sizes and max(holders) > min(open_sizes) + 1:
                self._breaking.add(t)
            else:
                self._breaking.discard(t)
        return not self._breaking

    def _reattach(self, member: str) -> set[int]:
        touched: set[int] = set()
        previous = self._attached.get(member)
        if previous is not None:
            touched |= self._count(member, *previous, -1)
        size = self._size[member]
        state = (size, frozenset(self.held[member]), size != self._max[member])
        self._attached[member] = state
        return touched | self._count(member, *state, 1)

    def _count(
        self, member: str, size: int, held: frozenset[int], is_open: bool, delta: int
    ) -> set[int]:
        for t in held:
            _bump(self._holders[t], size, delta)
        if not is_open:
            return set(held)
        for t in self._topics[member]:
            _bump(self._open[t], size, delta)
        return set(held | self._topics[member])


def _bump(counts: Counter[int], size: int, delta: int) -> None:
    counts[size] += delta
    if not counts[size]:
        del counts[size]
