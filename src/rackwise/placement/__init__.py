"""Replica placement (pure): Kafka's placers, exact, and KIP-879's multi-level placer.

``create_placer(name_or_path, random=...)`` gives a :class:`ReplicaPlacer`; its
``place(spec, cluster, broker_ids=None)`` returns the replica list of each partition.
"""

from rackwise.placement.admin import RackAwareReplicaPlacer, RackUnawareReplicaPlacer
from rackwise.placement.model import (
    RANDOM_START,
    ArrayReplicaPlacer,
    Assignment,
    BrokerInfo,
    ClusterView,
    PlacementSpec,
    ReplicaPlacer,
)
from rackwise.placement.multilevel import MultiLevelReplicaPlacer
from rackwise.placement.plugins import (
    BUILT_IN,
    DEFAULT_REPLICA_PLACER,
    REPLICA_PLACER_CONFIG,
    create_placer,
)
from rackwise.placement.striped import StripedReplicaPlacer

__all__ = [
    "BUILT_IN",
    "DEFAULT_REPLICA_PLACER",
    "RANDOM_START",
    "REPLICA_PLACER_CONFIG",
    "ArrayReplicaPlacer",
    "Assignment",
    "BrokerInfo",
    "ClusterView",
    "MultiLevelReplicaPlacer",
    "PlacementSpec",
    "RackAwareReplicaPlacer",
    "RackUnawareReplicaPlacer",
    "ReplicaPlacer",
    "StripedReplicaPlacer",
    "create_placer",
]
