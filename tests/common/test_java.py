"""The Java ports against sequences printed by OpenJDK 17 itself."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rackwise.common import IllegalArgumentException, JavaRandom, MockRandom, TopicPartition
from rackwise.common.java import (
    java_hashmap_order,
    java_string_hash,
    java_string_key,
    topic_partition_hash,
)

JAVA = json.loads((Path(__file__).parent / "java_random_sequences.json").read_text())


@pytest.mark.parametrize("case", JAVA["cases"], ids=lambda c: str(c["seed"]))
def test_next_int_matches_java(case: dict[str, object]) -> None:
    bounds = JAVA["bounds"]
    rng = JavaRandom(case["seed"])  # type: ignore[arg-type]
    got = [rng.next_int(bounds[i % len(bounds)]) for i in range(40)]
    assert got == case["bounded"]
    assert [rng.next_int() for _ in range(5)] == case["unbounded"]


@pytest.mark.parametrize("case", JAVA["cases"], ids=lambda c: str(c["seed"]))
def test_next_ints_vectorised_matches_java(case: dict[str, object]) -> None:
    bounds = JAVA["bounds"]
    rng = JavaRandom(case["seed"])  # type: ignore[arg-type]
    got = rng.next_ints([bounds[i % len(bounds)] for i in range(40)])
    assert got.tolist() == case["bounded"]
    # The generator is left where Java's would be.
    assert [rng.next_int() for _ in range(5)] == case["unbounded"]


@given(
    seed=st.integers(-(2**63), 2**63 - 1),
    bounds=st.lists(st.integers(1, 2**31 - 1), max_size=300),
    mock=st.booleans(),
)
def test_next_ints_equals_scalar_draws(seed: int, bounds: list[int], mock: bool) -> None:
    make = MockRandom if mock else JavaRandom
    fast, slow = make(seed), make(seed)
    assert fast.next_ints(bounds).tolist() == [slow.next_int(b) for b in bounds]
    assert fast.next_int(1000) == slow.next_int(1000)


def test_next_ints_crosses_blocks_and_rejections() -> None:
    bounds = np.full(40_000, 2**30 + 1, dtype=np.int64)  # about half the draws are rejected
    fast, slow = JavaRandom(99), JavaRandom(99)
    assert fast.next_ints(bounds).tolist() == [slow.next_int(2**30 + 1) for _ in range(40_000)]


def test_mock_random_first_draws() -> None:
    # state = 17 * 2862933555777941757 + 3037000493 (mod 2**64); next(31) = state >>> 33.
    state = (17 * 2862933555777941757 + 3037000493) % 2**64
    assert MockRandom().next_bits(31) == state >> 33


def test_bound_must_be_positive() -> None:
    with pytest.raises(IllegalArgumentException, match="bound must be positive"):
        JavaRandom(1).next_int(0)
    with pytest.raises(IllegalArgumentException, match="bound must be positive"):
        JavaRandom(1).next_ints([3, -1])


def test_string_hash_and_order() -> None:
    for text, expected in JAVA["string_hash"].items():
        assert java_string_hash(text) == expected
    assert sorted(["r2", "r10", "R3", "\U0001f600", "\uff21"], key=java_string_key) == [
        "R3",
        "r10",
        "r2",
        "\U0001f600",
        "\uff21",
    ]


def test_hashmap_order_matches_java() -> None:
    assert java_hashmap_order(JAVA["hashmap_keys"], java_string_hash) == JAVA["hashmap_order"]


@given(st.lists(st.integers(min_value=-(2**31), max_value=2**31 - 1), max_size=40, unique=True))
def test_hash_order_agrees_with_the_hashmap_port(keys: list[int]) -> None:
    try:
        expected = java_hashmap_order(keys, lambda k: k)
    except IllegalArgumentException:  # a bucket Java would make a tree: modelled by neither
        return
    assert java_hashmap_order(keys, lambda k: k, exact=False) == expected


def test_a_presized_map_orders_by_its_smaller_table() -> None:
    # Two directories in a HashMap sized for two: a table of 4 buckets, not 16.
    keys = [4, 1]
    assert java_hashmap_order(keys, lambda k: k) == [1, 4]
    assert java_hashmap_order(keys, lambda k: k, initial=2) == [4, 1]


def test_collections_shuffle_draws() -> None:
    # Collections.shuffle: for i from size down to 2, swap(i - 1, nextInt(i)).
    items = list(JAVA["shuffle_in"])
    rng = JavaRandom(JAVA["shuffle_seed"])
    for i, j in zip(range(len(items), 1, -1), rng.next_ints(range(len(items), 1, -1)), strict=True):
        items[i - 1], items[j] = items[j], items[i - 1]
    assert items == JAVA["shuffle_out"]


def test_topic_partition_hash_is_javas() -> None:
    # 31 * (31 + partition) + "t".hashCode()
    assert topic_partition_hash(TopicPartition("t", 0)) == 961 + 116
    # Java's int arithmetic wraps: "orders".hashCode() is -1008770331.
    assert java_string_hash("orders") == -1008770331
    assert topic_partition_hash(TopicPartition("orders", 3)) == 31 * 34 - 1008770331
    big = 2**31 - 100
    wrapped = (31 * (31 + big) + java_string_hash("aaaaaaa") + 2**31) % 2**32 - 2**31
    assert topic_partition_hash(TopicPartition("aaaaaaa", big)) == wrapped
