"""The failure-domain tree's numbering, which the multi-level placer's kernel relies on."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rackwise.topology import RackTree

paths = st.lists(st.sampled_from(["a", "b", "c"]), min_size=0, max_size=3).map(
    lambda parts: "/" + "/".join(parts) if parts else None
)


@settings(max_examples=100, deadline=None)
@given(racks=st.lists(paths, min_size=1, max_size=20))
def test_children_have_consecutive_numbers_after_their_parent(racks: list[str | None]) -> None:
    tree = RackTree.build([(i * 7, rack, i % 3 == 0) for i, rack in enumerate(racks)])
    for node in range(tree.num_nodes):
        start, count = int(tree.child_start[node]), int(tree.child_count[node])
        kids = tree.children[start : start + count]
        if count:
            assert kids.tolist() == list(range(int(kids[0]), int(kids[0]) + count))
            assert kids[0] > node
            assert (tree.parent[kids] == node).all()
    assert np.array_equal(np.sort(tree.children), np.arange(1, tree.num_nodes))
