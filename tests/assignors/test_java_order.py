"""Java hash iteration orders, against orders printed by a JVM (``java_hash_orders.json``: a
``HashMap<String, ...>`` filled in a given order, a ``HashSet`` of topic partitions under adds
and removes, and ``TopicPartition.hashCode()``), and against rackwise's common helper."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackwise.assignors._java_order import JavaHashSetHead, hashmap_order
from rackwise.common import IllegalArgumentException, TopicPartition
from rackwise.common.java import java_hashmap_order, java_string_hash, topic_partition_hash

FIXTURE = json.loads((Path(__file__).parent / "java_hash_orders.json").read_text())


def _tp(text: str) -> TopicPartition:
    topic, _, partition = text.rpartition(":")
    return TopicPartition(topic, int(partition))


def _bucket(key: str, capacity: int) -> int:
    h = java_string_hash(key) & 0xFFFFFFFF
    return (h ^ (h >> 16)) & (capacity - 1)


def _tree_keys(keys: list[str]) -> set[str]:
    """Keys in a bucket Java turns into a tree. In these fixtures that is the bucket of nine or
    more keys with one hash code; the table has 64 buckets by then, or more as it fills."""
    hashes = Counter(java_string_hash(k) for k in keys)
    colliding = [k for k in keys if hashes[java_string_hash(k)] >= 9]
    if not colliding:
        return set()
    capacity = 64
    while len(keys) > capacity * 3 // 4:
        capacity *= 2
    tree_bucket = _bucket(colliding[0], capacity)
    return {k for k in keys if _bucket(k, capacity) == tree_bucket}


@pytest.mark.parametrize("case", FIXTURE["maps"], ids=lambda c: f"{len(c['put_order'])}-keys")
def test_hashmap_order_is_javas(case: dict[str, Any]) -> None:
    mine = hashmap_order(case["put_order"])
    java = case["iteration_order"]
    tree = _tree_keys(case["put_order"])
    if not tree:
        assert mine == java
        return
    # The tree bucket sits where Java puts it; only its inner order is not modelled.
    assert [k for k in mine if k not in tree] == [k for k in java if k not in tree]
    assert {i for i, k in enumerate(mine) if k in tree} == {
        i for i, k in enumerate(java) if k in tree
    }


def test_the_fixture_has_buckets_that_force_resizes_and_trees() -> None:
    # 16 keys with one hash: Java resizes twice (16 -> 32 -> 64) on the 9th and 10th entry,
    # then makes the bucket a tree on the 11th.
    colliding = [c for c in FIXTURE["maps"] if "AaAaAaAa" in c["put_order"]]
    assert len(colliding) >= 4
    assert all(len(_tree_keys(c["put_order"])) >= 16 for c in colliding)


@pytest.mark.parametrize("case", FIXTURE["sets"], ids=lambda c: f"{len(c['ops'])}-ops")
def test_hash_set_head_is_javas(case: dict[str, Any]) -> None:
    heads = []
    s: JavaHashSetHead[TopicPartition] = JavaHashSetHead()
    for op in case["ops"]:
        tp = _tp(op[1:])
        if op[0] == "+":
            s.add(tp, topic_partition_hash(tp))
        else:
            s.discard(tp)
        heads.append(f"{s.head().topic}:{s.head().partition}" if len(s) else "-")
    assert heads == case["heads"]


def test_topic_partition_hash_is_javas() -> None:
    for text, expected in FIXTURE["topic_partition_hashes"]:
        tp = _tp(text)
        assert topic_partition_hash(tp) == expected
        assert topic_partition_hash(tp, java_string_hash(tp.topic)) == expected


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=12), unique=True, max_size=120))
def test_hashmap_order_agrees_with_the_common_helper(keys: list[str]) -> None:
    try:
        expected = java_hashmap_order(keys, java_string_hash)
    except IllegalArgumentException:
        return  # a bucket the common helper does not model
    assert hashmap_order(keys) == expected


def test_head_survives_removal_and_re_adding() -> None:
    s: JavaHashSetHead[int] = JavaHashSetHead()
    s.add(1, 1)
    s.add(17, 17)  # same bucket as 1 in a table of 16, inserted later
    assert s.head() == 1
    s.discard(1)
    assert s.head() == 17
    s.add(1, 1)  # back at the end of its bucket
    assert s.head() == 17
    assert 1 in s and len(s) == 2
