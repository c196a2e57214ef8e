"""The planner honours leaders.preference: a worked case, and over random clusters that every
partition of a preferring topic ends up led in its most preferred reachable domain, with its
replica set unchanged."""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rackwise.balance import ClusterInput, plan_cluster
from rackwise.balance._pinning import leaders_outside
from rackwise.topology import parse_leaders_preference
from tests.balance._clusters import Shape, clusters, make, targets


def test_the_worked_example() -> None:
    racks = {5: "/dc3/r", 1: "/dc2/r", 3: "/dc1/r"}
    cluster = make(racks, {("t", 0): [5, 1, 3], ("u", 0): [5, 1, 3]})
    pinned = dataclasses.replace(
        cluster, leaders_preferences={"t": parse_leaders_preference("ordered_racks:/dc1,/dc2")}
    )
    got = targets(plan_cluster(pinned))
    assert got[("t", 0)][0] == 3 and sorted(got[("t", 0)]) == [1, 3, 5]
    assert got[("u", 0)] == targets(plan_cluster(cluster))[("u", 0)]  # no preference


@settings(max_examples=60, deadline=None)
@given(clusters(Shape(failures=False)), st.sampled_from(["racks", "ordered_racks"]), st.data())
def test_every_preferring_partition_is_led_in_its_best_domain(
    cluster: ClusterInput, kind: str, data: st.DataObject
) -> None:
    racks = [r for r in cluster.brokers.racks if r is not None]
    if not racks:
        return
    chosen = data.draw(st.lists(st.sampled_from(racks), min_size=1, max_size=2, unique=True))
    paths = [data.draw(st.sampled_from(["/" + r.split("/")[1], r])) for r in chosen]
    preference = parse_leaders_preference(f"{kind}:{','.join(paths)}")
    pinned = dataclasses.replace(cluster, leaders_preferences={"a": preference})
    plan = plan_cluster(pinned)
    free = plan_cluster(cluster)
    rack_of = dict(zip(cluster.brokers.ids.tolist(), cluster.brokers.racks, strict=True))
    for (topic, part), row in targets(plan).items():
        assert sorted(row) == sorted(targets(free)[(topic, part)])  # leaders only
        if topic == "a":
            ranks = [preference.rank(rack_of[b]) for b in row]
            assert ranks[0] == min(ranks), (row, ranks)
    index = {int(b): i for i, b in enumerate(plan.broker_ids)}
    leaders = np.array([index[int(b)] for b in plan.target[:, 0]], np.int64)
    racks_by_index = tuple(rack_of[int(b)] for b in plan.broker_ids)
    outside = leaders_outside(
        racks_by_index, plan.topic_names, plan.topics, leaders, {"a": preference}
    )
    reachable = sum(
        1
        for (topic, _), row in targets(plan).items()
        if topic == "a" and any(preference.is_preferred(rack_of[b]) for b in row)
    )
    assert outside == sum(1 for (t, _) in targets(plan) if t == "a") - reachable
