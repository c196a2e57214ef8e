"""``place()``'s lists: the same replicas as ``place_array``, plain Python ints, built with the
cyclic collector paused and one int object per broker where the ids allow."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackwise.common import JavaRandom
from rackwise.placement import BUILT_IN, BrokerInfo, ClusterView, PlacementSpec, create_placer
from rackwise.placement.model import as_lists


@settings(max_examples=100, deadline=None)
@given(
    rows=st.lists(
        st.lists(st.integers(-(2**40), 2**40), min_size=2, max_size=2), min_size=0, max_size=30
    ),
    dense=st.booleans(),
)
def test_as_lists_is_tolist(rows: list[list[int]], dense: bool) -> None:
    array = np.array(rows, dtype=np.int64).reshape(len(rows), 2)
    if dense:
        array = array % 7 - 3  # a few ids, negative ones too
    got = as_lists(array)
    assert got == array.tolist()
    assert all(type(b) is int for row in got for b in row)


def test_dense_ids_share_one_int_object_each_and_the_collector_is_restored() -> None:
    array = np.array([[1000, 1001]] * 50, dtype=np.int64)
    assert gc.isenabled()
    rows = as_lists(array)
    assert gc.isenabled()
    assert len({id(row[0]) for row in rows}) == 1
    assert rows[0] is not rows[1]  # every row its own list


@pytest.mark.parametrize("name", sorted(BUILT_IN))
def test_place_is_place_array_as_lists(name: str) -> None:
    brokers = [BrokerInfo(i * 5, f"/dc{i % 3}/r{i % 2}", fenced=i == 4) for i in range(9)]
    spec = PlacementSpec(40, 3, start_index=0)
    as_array = create_placer(name, random=JavaRandom(3)).place_array(  # type: ignore[attr-defined]
        spec, ClusterView(brokers)
    )
    assert create_placer(name, random=JavaRandom(3)).place(spec, ClusterView(brokers)) == (
        as_array.tolist()
    )
