"""Bit-exact ports of the few Java behaviours that decide Kafka's placements.

* :class:`JavaRandom` is ``java.util.Random``: a 48-bit linear congruential generator,
  ``nextInt(bound)`` with its power-of-two branch and its rejection loop.
* :class:`MockRandom` is the ``MockRandom`` of Kafka's tests (a 64-bit LCG behind the same
  ``nextInt``), so Kafka's own test expectations can be replayed.
* :func:`topic_partition_hash` is ``TopicPartition.hashCode()``.
* :func:`java_string_key` sorts strings as ``String.compareTo`` does (UTF-16 code units).
* :func:`java_hashmap_order` gives the iteration order of a ``java.util.HashMap`` or
  ``HashSet``, of the default size or created for a given capacity.

Drawing many numbers at once (:meth:`JavaRandom.next_ints`) jumps the generator ahead with
precomputed powers of its multiplier, so a million draws cost a few NumPy passes instead of a
million Python calls, and stays exact: a draw that ``nextInt`` would reject is redone the way
Java redoes it.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, ClassVar, Protocol, TypeVar

from rackwise.common.errors import IllegalArgumentException
from rackwise.common.types import TopicPartition

if TYPE_CHECKING:  # numpy is imported where the draws are made: every command imports common
    import numpy as np
    import numpy.typing as npt

    IntArray = npt.NDArray[np.int64]

_INT31: int = 1 << 31
_BLOCK: int = 1 << 14  # draws per vectorised step


class _Lcg:
    """Jump-ahead tables of an LCG ``s -> (a*s + c) mod 2**bits``: row k maps s to s_(k+1)."""

    def __init__(self, multiplier: int, addend: int, bits: int) -> None:
        import numpy as np  # noqa: PLC0415 - see the imports

        self.mask = (1 << bits) - 1
        self.multiplier = multiplier
        self.addend = addend
        mul = np.array([multiplier], dtype=np.uint64)
        add = np.array([addend], dtype=np.uint64)
        np_mask = np.uint64(self.mask)
        while mul.size < _BLOCK:
            last_mul, last_add = mul[-1], add[-1]
            # T_(m+j) = T_j o T_m: multiplier a_j*a_m, addend a_j*c_m + c_j (uint64 wraps).
            mul = np.concatenate([mul, (mul * last_mul) & np_mask])
            add = np.concatenate([add, (mul[: add.size] * last_add + add) & np_mask])
        self.table_mul = mul
        self.table_add = add

    def states(self, state: int, count: int) -> npt.NDArray[np.uint64]:
        """The next ``count`` states after ``state`` (count <= _BLOCK)."""
        import numpy as np  # noqa: PLC0415 - see the imports

        seed = np.uint64(state)
        with np.errstate(over="ignore"):
            out = self.table_mul[:count] * seed + self.table_add[:count]
        return out & np.uint64(self.mask)


class JavaRandom:
    """``java.util.Random``, bit for bit.

    >>> r = JavaRandom(42)
    >>> [r.next_int(10) for _ in range(5)]
    [0, 3, 8, 4, 0]
    """

    _lcg: ClassVar[_Lcg | None] = None
    _STATE_BITS: ClassVar[int] = 48
    _MULTIPLIER: ClassVar[int] = 0x5DEECE66D
    _ADDEND: ClassVar[int] = 0xB

    def __init__(self, seed: int) -> None:
        self._state = self._scramble(seed)

    @classmethod
    def _scramble(cls, seed: int) -> int:
        return (seed ^ cls._MULTIPLIER) & ((1 << 48) - 1)

    @classmethod
    def _tables(cls) -> _Lcg:
        lcg = cls.__dict__.get("_lcg")
        if lcg is None:
            lcg = _Lcg(cls._MULTIPLIER, cls._ADDEND, cls._STATE_BITS)
            cls._lcg = lcg
        return lcg

    def _advance(self) -> int:
        self._state = (self._state * self._MULTIPLIER + self._ADDEND) & (
            (1 << self._STATE_BITS) - 1
        )
        return self._state

    def next_bits(self, bits: int) -> int:
        """``Random.next(bits)``: the top ``bits`` bits of the new state, as a signed int32."""
        value = self._advance() >> (self._STATE_BITS - bits)
        value &= 0xFFFFFFFF
        return value - (1 << 32) if value >= _INT31 else value

    def next_int(self, bound: int | None = None) -> int:
        """``Random.nextInt()`` or ``Random.nextInt(bound)``."""
        if bound is None:
            return self.next_bits(32)
        if bound <= 0:
            raise IllegalArgumentException("bound must be positive")
        r = self.next_bits(31)
        m = bound - 1
        if bound & m == 0:
            return (bound * r) >> 31
        u = r
        r = u % bound
        while u - r + m >= _INT31:  # Java's int overflow test: u - r + m < 0
            u = self.next_bits(31)
            r = u % bound
        return r

    def next_ints(self, bounds: Sequence[int] | IntArray) -> IntArray:
        """``[nextInt(b) for b in bounds]``, vectorised and exact."""
        import numpy as np  # noqa: PLC0415 - see the imports

        want = np.asarray(bounds, dtype=np.int64)
        if want.size and int(want.min()) <= 0:
            raise IllegalArgumentException("bound must be positive")
        out = np.empty(want.size, dtype=np.int64)
        done = 0
        lcg = self._tables()
        shift = np.uint64(self._STATE_BITS - 31)
        while done < want.size:
            count = min(_BLOCK, want.size - done)
            states = lcg.states(self._state, count)
            raw = (states >> shift).astype(np.int64)
            bound = want[done : done + count]
            is_pow2 = (bound & (bound - 1)) == 0
            value = np.where(is_pow2, (bound * raw) >> 31, raw % bound)
            rejected = ~is_pow2 & (raw - value + bound - 1 >= _INT31)
            if rejected.any():
                first = int(np.argmax(rejected))
                out[done : done + first] = value[:first]
                # Consume the rejected draw and redo that bound the way Java does.
                self._state = int(states[first])
                u = int(raw[first])
                b = int(bound[first])
                r = u % b
                while u - r + b - 1 >= _INT31:
                    u = self.next_bits(31)
                    r = u % b
                out[done + first] = r
                done += first + 1
                continue
            out[done : done + count] = value
            self._state = int(states[-1])
            done += count
        return out


class MockRandom(JavaRandom):
    """Kafka's test ``MockRandom``: ``state = state * 2862933555777941757 + 3037000493`` (mod
    2**64) and ``next(bits) = state >>> (64 - bits)``, behind ``java.util.Random``'s ``nextInt``.
    Its default seed is 17, as in Kafka."""

    _STATE_BITS: ClassVar[int] = 64
    _MULTIPLIER: ClassVar[int] = 2862933555777941757
    _ADDEND: ClassVar[int] = 3037000493

    def __init__(self, seed: int = 17) -> None:
        super().__init__(seed)

    @classmethod
    def _scramble(cls, seed: int) -> int:
        return seed & ((1 << 64) - 1)


class SupportsRandrange(Protocol):
    """What rackwise needs of a ``random.Random``."""

    def randrange(self, start: int, stop: int | None = ..., step: int = ...) -> int: ...


RandomSource = JavaRandom | SupportsRandrange
"""A source of draws: a :class:`JavaRandom` (exact Kafka behaviour) or a ``random.Random``."""


def draw_ints(source: RandomSource, bounds: Sequence[int] | IntArray) -> IntArray:
    """One draw in ``[0, b)`` for each bound, in order: ``nextInt(b)`` for a :class:`JavaRandom`,
    ``randrange(b)`` for a ``random.Random``."""
    if isinstance(source, JavaRandom):
        return source.next_ints(bounds)
    import numpy as np  # noqa: PLC0415 - see the imports

    return np.array([source.randrange(int(b)) for b in bounds], dtype=np.int64)


def java_string_key(value: str) -> bytes:
    """A sort key that orders strings as Java's ``String.compareTo`` does (UTF-16 code units):
    case-sensitive, ``"r10" < "r2"``, and characters outside the BMP before U+FF21."""
    return value.encode("utf-16-be", "surrogatepass")


def java_string_hash(value: str) -> int:
    """``String.hashCode()`` as a signed 32-bit int."""
    units = value.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= _INT31 else h


def topic_partition_hash(tp: TopicPartition, topic_hash: int | None = None) -> int:
    """``TopicPartition.hashCode()``: ``31 * (31 + partition) + topic.hashCode()`` as a signed
    32-bit int (``topic_hash`` is ``topic.hashCode()`` when the caller has it already)."""
    if topic_hash is None:
        topic_hash = java_string_hash(tp.topic)
    h = (31 * (31 + tp.partition) + topic_hash) & 0xFFFFFFFF
    return h - (1 << 32) if h >= _INT31 else h


K = TypeVar("K", bound=Hashable)

_INITIAL_CAPACITY = 16
_TREEIFY_THRESHOLD = 8
_MIN_TREEIFY_CAPACITY = 64


def java_hashmap_order(
    keys: Sequence[K],
    hash_code: Callable[[K], int],
    *,
    exact: bool = True,
    initial: int = _INITIAL_CAPACITY,
) -> list[K]:
    """The iteration order of a ``java.util.HashMap`` (or ``HashSet``) after ``put`` of
    ``keys`` in order.

    A HashMap iterates its table bucket by bucket, and a bucket in insertion order (a resize
    splits a bucket without reordering it), so the order depends only on the final table size.
    The table starts at 16 buckets (``new HashMap<>(initial)``: ``tableSizeFor(initial)``, the
    power of two at least ``initial``) and doubles when the size passes three quarters of it,
    or when a ninth entry lands in one bucket while the table is smaller than 64 (``treeifyBin``).
    The bucket of a key is ``(h ^ (h >>> 16)) & (capacity - 1)``. A bucket that Java turns into
    a tree (nine entries in a table of 64 or more) is ordered by the tree, which is not
    modelled: with ``exact`` it raises, so a caller never gets a silently wrong order; without,
    the bucket keeps its place in the table and its entries their insertion order. Linear time.
    """
    distinct = list(dict.fromkeys(keys))
    spread = [_spread(hash_code(k)) for k in distinct]
    capacity = _table_size_for(initial)
    counts: dict[int, int] = {}
    for size, h in enumerate(spread, start=1):
        bucket = h & (capacity - 1)
        counts[bucket] = counts.get(bucket, 0) + 1
        if counts[bucket] > _TREEIFY_THRESHOLD:
            if capacity < _MIN_TREEIFY_CAPACITY:
                capacity *= 2
                counts = _bucket_counts(spread[:size], capacity)
            elif exact:
                raise IllegalArgumentException(
                    "BUG: HashMap bucket would become a tree; iteration order not modelled"
                )
        if size > capacity * 3 // 4:
            capacity *= 2
            counts = _bucket_counts(spread[:size], capacity)
    order = sorted(range(len(distinct)), key=lambda i: spread[i] & (capacity - 1))
    return [distinct[i] for i in order]


def _table_size_for(capacity: int) -> int:
    """Java's ``HashMap.tableSizeFor``: the power of two at least ``capacity`` (1 for 0)."""
    size = 1
    while size < capacity:
        size *= 2
    return size


def _spread(hash_code: int) -> int:
    h = hash_code & 0xFFFFFFFF
    return h ^ (h >> 16)


def _bucket_counts(spread: Sequence[int], capacity: int) -> dict[int, int]:
    counts: dict[int, int] = {}
    for h in spread:
        counts[h & (capacity - 1)] = counts.get(h & (capacity - 1), 0) + 1
    return counts
