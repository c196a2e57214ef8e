"""Replica selectors: Kafka's two, exactly, and the multi-level one's nearest-by-path rule."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rackwise.replica.selector import (
    ClientMetadata,
    LeaderSelector,
    MultiLevelReplicaSelector,
    PartitionView,
    RackAwareReplicaSelector,
    ReplicaView,
    SelectorPluginException,
    load_selector,
    rack_components,
    shared_prefix,
)


def view(broker_id: int, rack: str | None, leo: int = 100, caught_up: int = 0) -> ReplicaView:
    return ReplicaView(broker_id, rack, leo, caught_up, True)


def partition(leader: ReplicaView, *others: ReplicaView) -> PartitionView:
    return PartitionView(leader, (leader, *others))


STRETCH = partition(view(1, "/dc1/r1"), view(3, "/dc2/r1"), view(5, "/dc3/r1"))


def test_worked_example_nearest_data_centre() -> None:
    selector = MultiLevelReplicaSelector()
    assert selector.select(STRETCH, ClientMetadata("/dc2/r2")) == 3
    assert selector.select(STRETCH, ClientMetadata("/dc3/r1")) == 5
    assert selector.select(STRETCH, ClientMetadata("/dc9/r1")) == 1
    assert selector.select(STRETCH, ClientMetadata("")) == 1


def test_multi_level_prefers_same_dc_over_leader_elsewhere() -> None:
    p = partition(view(1, "/dc2/r1"), view(2, "/dc1/r1"), view(3, "/dc1/r2"))
    assert MultiLevelReplicaSelector().select(p, ClientMetadata("/dc1/r2")) == 3
    assert MultiLevelReplicaSelector().select(p, ClientMetadata("/dc1/r9")) in (2, 3)


def test_multi_level_ties_go_to_leader_then_most_caught_up_then_lowest_id() -> None:
    p = partition(view(1, "/dc1/r1"), view(2, "/dc1/r2"))
    assert MultiLevelReplicaSelector().select(p, ClientMetadata("/dc1/r3")) == 1
    p = partition(view(9, "/dc2/r1"), view(4, "/dc1/r1", leo=90), view(2, "/dc1/r2", leo=100))
    assert MultiLevelReplicaSelector().select(p, ClientMetadata("/dc1/r3")) == 2
    p = partition(view(9, "/dc2/r1"), view(4, "/dc1/r1"), view(2, "/dc1/r2"))
    assert MultiLevelReplicaSelector().select(p, ClientMetadata("/dc1/r3")) == 2


def test_multi_level_skips_out_of_sync_followers() -> None:
    lagging = ReplicaView(3, "/dc2/r1", 10, 0, False)
    p = PartitionView(view(1, "/dc1/r1"), (view(1, "/dc1/r1"), lagging))
    assert MultiLevelReplicaSelector().select(p, ClientMetadata("/dc2/r1")) == 1


def test_rack_aware_is_kafkas_exact_match() -> None:
    selector = RackAwareReplicaSelector()
    # No exact match (a same-DC rack is not one): the leader.
    assert selector.select(STRETCH, ClientMetadata("/dc2/r2")) == 1
    assert selector.select(STRETCH, ClientMetadata("/dc2/r1")) == 3
    p = partition(view(1, "a"), view(2, "b", leo=5), view(3, "b", leo=7))
    assert selector.select(p, ClientMetadata("b")) == 3
    assert selector.select(p, ClientMetadata("a")) == 1
    assert selector.select(p, ClientMetadata("")) == 1


def test_leader_selector() -> None:
    assert LeaderSelector().select(STRETCH, ClientMetadata("/dc2/r1")) == 1


def test_plain_rack_names_are_one_component() -> None:
    assert rack_components("rack1") == ("rack1",)
    assert rack_components("/dc1/r2/") == ("dc1", "r2")
    assert rack_components(None) == ()
    assert shared_prefix(("dc1", "r1"), ("dc1", "r2")) == 1


RACKS = st.sampled_from(["/dc1/r1", "/dc1/r2", "/dc2/r1", "/dc2/r2", "/dc3/r1", None])


@given(
    racks=st.lists(RACKS, min_size=1, max_size=6),
    leos=st.lists(st.integers(0, 5), min_size=6, max_size=6),
    client=RACKS,
)
def test_multi_level_picks_a_replica_at_least_as_near_as_any(
    racks: list[str | None], leos: list[int], client: str | None
) -> None:
    views = [view(i + 1, rack, leos[i]) for i, rack in enumerate(racks)]
    p = PartitionView(views[0], tuple(views))
    chosen = MultiLevelReplicaSelector().select(p, ClientMetadata(client or ""))
    assert chosen in {v.broker_id for v in views}
    path = rack_components(client)
    best = max(shared_prefix(rack_components(v.rack), path) for v in views)
    got = next(v for v in views if v.broker_id == chosen)
    assert shared_prefix(rack_components(got.rack), path) == best or (best == 0 and chosen == 1)


def test_load_selector_names_and_plugins() -> None:
    assert isinstance(
        load_selector("org.apache.kafka.common.replica.LeaderSelector"), LeaderSelector
    )
    assert isinstance(load_selector("rack-aware"), RackAwareReplicaSelector)
    assert isinstance(load_selector("multi-level"), MultiLevelReplicaSelector)
    plugin = load_selector("rackwise.replica.selector:MultiLevelReplicaSelector")
    assert isinstance(plugin, MultiLevelReplicaSelector)
    with pytest.raises(SelectorPluginException, match=r"replica\.selector\.class"):
        load_selector("nearest")
    with pytest.raises(SelectorPluginException, match="cannot load it"):
        load_selector("no.such.module:Selector")
