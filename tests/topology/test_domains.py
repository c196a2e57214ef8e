"""Failure domains at a level of the rack tree and leaders.preference: golden cases for the
syntax, properties of the counting and of the preference order."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rackwise.topology import (
    InvalidLeadersPreferenceException,
    count_domains,
    domain_at,
    parse_leaders_preference,
)


@pytest.mark.parametrize(
    ("rack", "level", "domain"),
    [
        ("/dc1/r2", 1, "/dc1"),
        ("/dc1/r2", 2, "/dc1/r2"),
        ("/dc1/r2", 5, "/dc1/r2"),
        ("r7", 1, "/r7"),
        ("r7", 3, "/r7"),
        (None, 1, "broker 4"),
        ("/dc1//r2", 1, "broker 4"),
    ],
)
def test_the_domain_of_a_rack_at_a_level(rack: str | None, level: int, domain: str) -> None:
    assert domain_at(rack, level, broker_id=4) == domain


def test_the_worked_example() -> None:
    racks = {4: "/dc2/a", 1: "/dc1/a", 2: "/dc1/b", 3: "/dc2/b"}
    assert count_domains([4, 1, 2, 3], racks, 1) == 2
    assert count_domains([4, 1, 2, 3], racks, 2) == 4
    preference = parse_leaders_preference("ordered_racks:/dc1/b,/dc2")
    assert [preference.rank(racks[b]) for b in (4, 1, 2, 3)] == [1, 2, 0, 1]
    assert preference.order([4, 1, 2, 3], racks.get) == [2, 4, 3, 1]


def test_brokers_without_racks_are_each_their_own_domain() -> None:
    assert count_domains([1, 2, 3], {1: None, 2: None}, 1) == 3


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("none", "none"),
        (" none ", "none"),
        ("racks:/dc1", "racks:/dc1"),
        ("racks: /dc1 ,/dc2/r1", "racks:/dc1,/dc2/r1"),
        ("ordered_racks:dc1,dc2", "ordered_racks:/dc1,/dc2"),
        ("ordered_racks:/dc1,/dc1", "ordered_racks:/dc1"),
    ],
)
def test_redpandas_syntax_on_rack_paths(value: str, shown: str) -> None:
    assert str(parse_leaders_preference(value)) == shown


@pytest.mark.parametrize(
    "value", ["", "racks", "racks:", "racks:/dc1,", "rack:/dc1", "ordered_racks:/dc1//r", "/dc1"]
)
def test_a_bad_value_is_named(value: str) -> None:
    with pytest.raises(InvalidLeadersPreferenceException, match=r"Expected 'none'|bad rack path"):
        parse_leaders_preference(value)


def test_a_path_matches_by_components_at_any_level() -> None:
    preference = parse_leaders_preference("racks:/dc1")
    assert preference.is_preferred("/dc1/r2/h3")
    assert preference.is_preferred("/dc1")
    assert not preference.is_preferred("/dc10/r1")
    assert not preference.is_preferred(None)
    assert parse_leaders_preference("racks:/dc1/r2").is_preferred("/dc1/r2/h9")
    assert not parse_leaders_preference("racks:/dc1/r2").is_preferred("/dc1/r3")
    assert parse_leaders_preference("racks:r1").is_preferred("r1")  # a flat rack name


NAMES = st.sampled_from(["a", "b", "c"])
RACKS = st.one_of(
    st.none(), st.lists(NAMES, min_size=1, max_size=3).map(lambda c: "/" + "/".join(c))
)
RACK_MAPS = st.dictionaries(st.integers(0, 9), RACKS, max_size=10)


@given(RACK_MAPS, st.integers(1, 4))
def test_counting_is_monotone_in_the_level_and_bounded(
    racks: dict[int, str | None], level: int
) -> None:
    brokers = list(racks)
    coarse, fine = count_domains(brokers, racks, level), count_domains(brokers, racks, level + 1)
    assert coarse <= fine <= len(brokers)
    assert (coarse == 0) == (not brokers)
    for b in brokers:  # a subset spans no more domains
        assert count_domains([x for x in brokers if x != b], racks, level) <= coarse


PATHS = st.lists(
    st.lists(NAMES, min_size=1, max_size=2).map(lambda c: "/" + "/".join(c)),
    min_size=1,
    max_size=3,
)


@given(RACK_MAPS, PATHS, st.sampled_from(["racks", "ordered_racks"]))
def test_the_order_is_a_stable_sort_by_rank(
    racks: dict[int, str | None], paths: list[str], kind: str
) -> None:
    preference = parse_leaders_preference(f"{kind}:{','.join(paths)}")
    replicas = list(racks)
    order = preference.order(replicas, racks.get)
    assert sorted(order) == sorted(replicas)
    ranks = [preference.rank(racks[r]) for r in order]
    assert ranks == sorted(ranks)
    for rank in set(ranks):  # the replicas' own order within a rank
        same = [r for r in order if preference.rank(racks[r]) == rank]
        assert same == [r for r in replicas if preference.rank(racks[r]) == rank]
    for r in replicas:  # preferred exactly when some path is a prefix by components
        rack = racks[r]
        inside = rack is not None and any(rack == p or rack.startswith(p + "/") for p in paths)
        assert preference.is_preferred(rack) == inside
    if kind == "racks":
        assert set(ranks) <= {0, 1}
