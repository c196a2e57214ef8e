"""Replica placement for the controller: which brokers a placer sees, and KIP-879's
CreateReplicaPlacement.

Goals
    New replicas go through the configured placer (``broker.replica.placer``); a fenced broker
    gets none unless the unfenced brokers cannot meet the replication factor.

Constraints
    A broker in controlled shutdown gets no new replica (Kafka's ``usableBrokers``). No placer
    may make a fenced broker a leader: fencing-aware placers (striped, multi-level) never do,
    and for the others the controller makes the first in-sync replica the leader anyway.

Algorithm
    The candidates are the usable brokers (registered, not shutting down, by id). If at least
    ``replication_factor`` of them are unfenced, the placer sees only those; otherwise it sees
    them all, each with its fencing, and a fencing-aware placer fills the gap with fenced
    followers. Kafka's striped placer, given every broker, would also place a follower on a
    fenced broker when that broker's rack has no unfenced one; the rule above keeps fenced
    brokers out whenever it can, so with fenced brokers present the draws differ from Kafka's.
    When partitions are added to a topic, the placer also sees the topic's current assignment
    (its replicas on candidate brokers), so placers that continue where they left off do so.

Worked example
    Brokers 1, 2 on rack /a and 3 (fenced) on /b, RF 2: the placer sees 1 and 2 only, so
    every partition is [1, 2] or [2, 1]. At RF 3 it sees all three: 3 becomes a follower of
    every partition, never a leader, and stays out of the ISR until it is unfenced.
"""

from __future__ import annotations

from collections.abc import Sequence

from rackwise.common import (
    InvalidPartitionsException,
    InvalidReplicationFactorException,
    PlacerPluginException,
    RackwiseError,
    TopicPartition,
)
from rackwise.controller.brokers import all_brokers, usable_brokers
from rackwise.controller.domains import RackRule, check_assignment_domains
from rackwise.controller.errors import ApiError
from rackwise.controller.messages import (
    CreateReplicaPlacementRequest,
    CreateReplicaPlacementResponse,
)
from rackwise.controller.topics import check_partitions_per_request
from rackwise.image import MetadataImage
from rackwise.placement import BrokerInfo, ClusterView, PlacementSpec, ReplicaPlacer


def _rows(placer: ReplicaPlacer, rows: list[list[int]] | None) -> list[list[int]]:
    if rows is None:  # create_placer's placers never defer; a bare plug-in might
        raise PlacerPluginException(f"Replica placer {placer.name!r} returned no placement")
    return [list(row) for row in rows]


def placement_candidates(image: MetadataImage, replication_factor: int) -> list[BrokerInfo]:
    """The brokers a placer sees for ``replication_factor`` replicas (module docstring)."""
    usable = usable_brokers(image)
    unfenced = [b for b in usable if not b.fenced]
    return unfenced if len(unfenced) >= replication_factor else usable


def existing_assignment(
    image: MetadataImage, topic: str, candidates: Sequence[BrokerInfo]
) -> dict[TopicPartition, tuple[int, ...]]:
    """The topic's partitions, each with its replicas that are on candidate brokers."""
    current = image.topic(topic)
    if current is None:
        return {}
    allowed = {b.id for b in candidates}
    return {
        TopicPartition(topic, pid): tuple(r for r in p.replicas if r in allowed)
        for pid, p in current.partitions.items()
    }


def place(
    placer: ReplicaPlacer,
    image: MetadataImage,
    topic: str,
    num_partitions: int,
    replication_factor: int,
    start_partition_id: int = 0,
) -> list[list[int]]:
    """Replica lists for partitions ``start_partition_id`` on of ``topic`` (module
    docstring). The placer's errors pass through."""
    candidates = placement_candidates(image, replication_factor)
    view = ClusterView(candidates, existing_assignment(image, topic, candidates))
    spec = PlacementSpec(
        num_partitions=num_partitions,
        replication_factor=replication_factor,
        start_partition_id=start_partition_id,
        topic=topic,
    )
    return _rows(placer, placer.place(spec, view))


def create_replica_placement(
    placer: ReplicaPlacer,
    simple_placer: ReplicaPlacer,
    image: MetadataImage,
    request: CreateReplicaPlacementRequest,
    rule: RackRule | None = None,
) -> CreateReplicaPlacementResponse:
    """KIP-879: place ``num_partitions`` partitions of ``replication_factor`` replicas without
    creating a topic. With ``node_ids`` exactly those brokers are used (a fenced one as a
    follower only, with a fencing-aware placer); without, the candidates of
    :func:`placement_candidates`. ``force_simple_placement`` uses Kafka's rack-unaware
    assignment. More than the partitions bound of a CreateTopics request is refused before
    anything is placed. Rows in fewer failure domains than ``rule`` (the default
    ``min.insync.racks``) asks are refused as CreateTopics would refuse them. With an
    authorizer, the request needs what a CreateTopics naming no topic would: CREATE on the
    cluster (:mod:`rackwise.node.gates`)."""
    try:
        if request.num_partitions <= 0:
            raise InvalidPartitionsException("Number of partitions must be larger than 0.")
        check_partitions_per_request(request.num_partitions)
        chosen = simple_placer if request.force_simple_placement else placer
        if request.node_ids:
            view = ClusterView(all_brokers(image))
            broker_ids: Sequence[int] | None = list(request.node_ids)
        else:
            view = ClusterView(placement_candidates(image, request.replication_factor))
            broker_ids = None
        spec = PlacementSpec(request.num_partitions, request.replication_factor)
        rows = _rows(chosen, chosen.place(spec, view, broker_ids))
        if rule is not None:
            placed = dict(enumerate(rows))
            check_assignment_domains(image, "the placement", placed, rule, manual=False)
    except RackwiseError as e:
        return CreateReplicaPlacementResponse(ApiError.of(e))
    return CreateReplicaPlacementResponse(placements=tuple(tuple(row) for row in rows))


def replication_error(replication_factor: int, error: RackwiseError) -> ApiError:
    """The CreateTopics error for a placer's failure: Kafka prefixes a replication-factor
    error with what could not be done."""
    if isinstance(error, InvalidReplicationFactorException):
        return ApiError(
            error.error_code,
            f"Unable to replicate the partition {replication_factor} time(s): {error.message}",
        )
    return ApiError.of(error)
