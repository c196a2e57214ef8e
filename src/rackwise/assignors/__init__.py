"""Consumer partition assignors (pure): Kafka's range and (cooperative-)sticky assignors with
KIP-881 rack awareness, their leader-rack-aware forms, and a locality-optimal assignor.

``create_assignor(name)`` gives a :class:`PartitionAssignor`; ``assign(group)`` maps each member
of a :class:`GroupSpec` to its partitions.
"""

from rackwise.assignors.model import (
    DEFAULT_GENERATION,
    Assignment,
    GroupSpec,
    Member,
    PartitionAssignor,
    PartitionInfo,
)

__all__ = [
    "DEFAULT_GENERATION",
    "Assignment",
    "GroupSpec",
    "Member",
    "PartitionAssignor",
    "PartitionInfo",
]
