"""Where Kafka's assignors iterate a Java ``HashMap`` or ``HashSet`` and the order shows in the
result, these helpers give the same order.

* :func:`hashmap_order` is the iteration order of a ``HashMap`` keyed by strings (member ids,
  topic names), filled in a given order (Kafka keys its subscription map by member id, in the
  order the coordinator lists the members).
* :class:`JavaHashSetHead` keeps the *first* element a ``HashSet<TopicPartition>`` would return
  from ``iterator().next()`` while elements come and go.
* :func:`topic_partition_hash` (from :mod:`rackwise.common.java`) is ``TopicPartition.hashCode()``.

A ``HashMap`` iterates its table bucket by bucket and a bucket in insertion order; a resize
splits each bucket without reordering it, so the order depends only on the final table size.
The table starts at 16 buckets and doubles when the size passes three quarters of it, or when a
ninth entry lands in one bucket while the table is smaller than 64 (Java's ``treeifyBin``).
`hashmap_order` is ``rackwise.common.java.java_hashmap_order`` in its lenient mode. A bucket
that Java turns into a tree (nine entries in a table of 64 or more) orders its entries by the
tree; that needs adversarial member ids, and there :func:`hashmap_order` keeps them in
insertion order.
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable, Sequence
from typing import Final, Generic, TypeVar

from rackwise.common.java import java_hashmap_order, java_string_hash

_INITIAL_CAPACITY: Final = 16
_INT_MASK: Final = 0xFFFFFFFF

K = TypeVar("K", bound=Hashable)


def _spread(hash_code: int) -> int:
    h = hash_code & _INT_MASK
    return h ^ (h >> 16)


def hashmap_order(keys: Sequence[str]) -> list[str]:
    """The iteration order of a ``java.util.HashMap`` after ``put`` of distinct string ``keys``.

    Exact unless a bucket became a tree (nine entries with equal low hash bits in a table of 64
    or more): such a bucket is still placed where Java places it, but its entries keep their
    insertion order, where Java orders them by its red-black tree.
    """
    return java_hashmap_order(keys, java_string_hash, exact=False)


class JavaHashSetHead(Generic[K]):
    """A ``java.util.HashSet`` reduced to what Kafka reads of it: ``add``, ``remove``, size and
    the element ``iterator().next()`` returns.

    The table grows as Java's does (16 buckets, doubling past three quarters full) and never
    shrinks; the head is the lowest bucket's oldest entry. Buckets turned into trees are not
    modelled (they need nine colliding entries in a table of 64 or more).
    """

    __slots__ = ("_capacity", "_hashes", "_heap", "_live", "_seq")

    def __init__(self) -> None:
        self._capacity = _INITIAL_CAPACITY
        self._live: dict[K, int] = {}  # element -> its insertion number
        self._hashes: dict[K, int] = {}  # element -> spread hash
        self._heap: list[tuple[int, int, K]] = []  # (bucket, insertion number, element)
        self._seq = 0

    def __len__(self) -> int:
        return len(self._live)

    def __contains__(self, item: object) -> bool:
        return item in self._live

    def _entry(self, item: K) -> tuple[int, int, K]:
        return (self._hashes[item] & (self._capacity - 1), self._live[item], item)

    def add(self, item: K, hash_code: int) -> None:
        """``HashSet.add`` of ``item`` whose Java ``hashCode()`` is ``hash_code``."""
        if item in self._live:
            return
        self._seq += 1
        self._live[item] = self._seq
        self._hashes[item] = _spread(hash_code)
        if len(self._live) > self._capacity * 3 // 4:
            self._capacity *= 2
            self._heap = [self._entry(k) for k in self._live]
            heapq.heapify(self._heap)
        else:
            heapq.heappush(self._heap, self._entry(item))

    def discard(self, item: K) -> None:
        """``HashSet.remove``."""
        if self._live.pop(item, None) is not None:
            del self._hashes[item]

    def head(self) -> K:
        """``iterator().next()``; the set must not be empty."""
        while True:
            _, seq, item = self._heap[0]
            if self._live.get(item) == seq:
                return item
            heapq.heappop(self._heap)
