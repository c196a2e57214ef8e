"""Rack paths: what makes one, and plain names as one-level paths."""

from __future__ import annotations

import pytest

from rackwise.topology import (
    InvalidRackPathException,
    RackTree,
    as_rack_path,
    parse_rack_path,
    rack_path_problem,
)


@pytest.mark.parametrize(
    ("rack", "problem"),
    [
        ("/dc1/r1", ""),
        ("/r1", ""),
        ("dc1/r1", "a rack path must start with '/'"),
        ("/", "the path names no rack"),
        ("/dc1//r1", "empty component (a doubled or trailing '/')"),
        ("/dc1/r1/", "empty component (a doubled or trailing '/')"),
        ("/dc1/ r1", "component ' r1' has leading or trailing blanks"),
    ],
)
def test_what_makes_a_rack_path(rack: str, problem: str) -> None:
    assert rack_path_problem(rack) == problem
    if problem:
        with pytest.raises(InvalidRackPathException, match="Broker 7 has a malformed rack path"):
            parse_rack_path(rack, broker_id=7)


def test_plain_names_are_one_level_paths() -> None:
    assert as_rack_path("rack1") == "/rack1"
    assert as_rack_path("/dc1/rack1") == "/dc1/rack1"
    assert as_rack_path(None) is None


def test_fencing_is_read_per_broker() -> None:
    tree = RackTree.build([(1, "/a", False), (2, "/a", True), (3, "/b", False)])
    fenced = {int(tree.broker_of[n]): int(tree.is_fenced[n]) for n in tree.leaf_of_broker.values()}
    assert fenced == {1: 0, 2: 1, 3: 0}
    assert tree.num_unfenced[0] == 2
