"""KIP-879's CreateReplicaPlacement: an assignment from the configured placer, nothing written."""

from __future__ import annotations

import random

from rackwise.common import JavaRandom
from rackwise.controller import ApiError, CreateReplicaPlacementRequest
from rackwise.placement import BrokerInfo, ClusterView, PlacementSpec, create_placer
from tests.controller.helpers import new_controller, registration, start_brokers

RACKS = {1: "/dc1/r1", 2: "/dc1/r2", 3: "/dc2/r1", 4: "/dc2/r2", 5: "/dc3/r1", 6: "/dc3/r2"}


def test_places_with_the_configured_placer_and_writes_nothing() -> None:
    controller = new_controller(replica_placer="multi-level")
    start_brokers(controller, RACKS)
    before = controller.end_offset
    reply = controller.create_replica_placement(CreateReplicaPlacementRequest(6, 3))
    assert reply.error.is_success and len(reply.placements) == 6
    for replicas in reply.placements:
        assert len({RACKS[b].split("/")[1] for b in replicas}) == 3
    assert controller.end_offset == before


def test_force_simple_placement_is_kafkas_rack_unaware_assignment() -> None:
    controller = new_controller(replica_placer="multi-level", seed=5)
    start_brokers(controller, RACKS)
    reply = controller.create_replica_placement(
        CreateReplicaPlacementRequest(4, 2, force_simple_placement=True, node_ids=(6, 2, 4))
    )
    simple = create_placer("rack-unaware", random=JavaRandom(random.Random(5).getrandbits(48)))
    view = ClusterView([BrokerInfo(b, RACKS[b]) for b in sorted(RACKS)])
    expected = simple.place(PlacementSpec(4, 2), view, [6, 2, 4])
    assert [list(p) for p in reply.placements] == expected
    assert all(set(p) <= {2, 4, 6} for p in reply.placements)


def test_errors_come_back_in_the_response() -> None:
    controller = new_controller()
    start_brokers(controller, [1, 2])
    unknown = controller.create_replica_placement(
        CreateReplicaPlacementRequest(1, 1, node_ids=(9,))
    )
    assert unknown.error == ApiError(42, "Broker id 9 in broker_ids is not a broker of the cluster")
    too_many = controller.create_replica_placement(CreateReplicaPlacementRequest(1, 3))
    assert too_many.error.error_code == 38 and too_many.placements == ()
    none = controller.create_replica_placement(CreateReplicaPlacementRequest(0, 1))
    assert none.error == ApiError(37, "Number of partitions must be larger than 0.")


def test_fenced_brokers_only_when_needed() -> None:
    controller = new_controller()
    start_brokers(controller, {1: "/a", 2: "/b"})
    controller.register_broker(registration(3, "/c"))  # fenced
    two = controller.create_replica_placement(CreateReplicaPlacementRequest(8, 2))
    assert all(3 not in p for p in two.placements)
    three = controller.create_replica_placement(CreateReplicaPlacementRequest(8, 3))
    assert all(3 in p and p[0] != 3 for p in three.placements)
