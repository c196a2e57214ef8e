"""Consumer partition assignors (pure): Kafka's range and (cooperative-)sticky assignors with
KIP-881 rack awareness, exactly; their leader-rack-aware forms; and a locality-optimal assignor.

``create_assignor(name)`` gives a :class:`PartitionAssignor`; ``assign(group)`` maps each member
of a :class:`GroupSpec` to its partitions. :data:`ASSIGNOR_NAMES` lists the names.

Names
-----
``range``, ``sticky`` and ``cooperative-sticky`` are Kafka's assignors of those names and give
Kafka's answers. ``leader-rack-aware-range`` and ``leader-rack-aware-cooperative-sticky`` are
the assignors of apache/kafka pull request 17571 (KAFKA-17755, never merged): the same code with
each partition local only to its leader's rack. That pull request registered them under Kafka's
names ``range`` and ``cooperative-sticky`` (its classes override only the rack rule); here they
have names of their own, because the group coordinator picks the strategy by name and all
members must agree on it: a member running Kafka's ``range`` and one running the leader-rack
variant under the same name would each believe the group uses its own rules, and the group
leader's choice would silently decide how partitions move.

When a leader moves
-------------------
The leader-rack-aware assignors are deterministic in the leaders' racks: the same group with
the same leader racks always gets the same answer, and a leader moving to another rack changes
the answer only at the next rebalance. Until then nothing breaks (consumers fetch from the
leader wherever it is); only locality is lost. Decision: the group leader should rebalance when
the leader rack of a subscribed partition differs from the rack it assigned with, and the
difference has lasted a full metadata refresh (``metadata.max.age.ms``). The wait matters
because a rolling restart moves leaders away and a preferred-leader election moves them back
within seconds; rebalancing on each move would stop an eager group each time for nothing.

Neither client does this today. Kafka's Java consumer (since KIP-881, when it has a
``client.rack``) rejoins when the set of racks holding a subscribed partition's replicas
changes, which catches reassignments but not a leader election among the same replicas;
kafka-python's consumer rejoins only when the partition ids of a subscribed topic change (its
coordinator snapshots partition ids per topic); pull request 17571 added no trigger. rackwise's
assignors are pure and cannot act on their own: :func:`rackwise.assignors.racks.leader_rack_changes`
compares the partitions an assignment was made with and the current ones and names the
partitions whose leader rack moved, for a client (such as a kafka-python plug-in, which can call
its coordinator's ``request_rejoin()``) to apply the rule above.

Where the other assignors live
------------------------------
``rack-local-optimal`` (:mod:`rackwise.assignors.optimal`) is imported on first use, so that
importing this package stays fast and free of its solver.
"""

from __future__ import annotations

from importlib import import_module
from importlib.util import find_spec
from typing import Final

from rackwise.assignors.group_json import group_from_json
from rackwise.assignors.model import (
    DEFAULT_GENERATION,
    Assignment,
    GroupSpec,
    Member,
    PartitionAssignor,
    PartitionInfo,
)
from rackwise.assignors.range import LeaderRackAwareRangePartitionAssignor, RangePartitionAssignor
from rackwise.assignors.sticky import (
    CooperativeStickyPartitionAssignor,
    LeaderRackAwareCooperativeStickyPartitionAssignor,
    StickyOutcome,
    StickyPartitionAssignor,
)
from rackwise.common import IllegalArgumentException

_BUILT_IN: Final[dict[str, type[PartitionAssignor]]] = {
    cls.name: cls
    for cls in (
        RangePartitionAssignor,
        StickyPartitionAssignor,
        CooperativeStickyPartitionAssignor,
        LeaderRackAwareRangePartitionAssignor,
        LeaderRackAwareCooperativeStickyPartitionAssignor,
    )
}

# Assignors in modules of their own, imported when first created: name -> (module, class).
_ON_DEMAND: Final[dict[str, tuple[str, str]]] = {
    "rack-local-optimal": ("rackwise.assignors.optimal", "RackLocalOptimalPartitionAssignor"),
}

ASSIGNOR_NAMES: Final[tuple[str, ...]] = tuple(_BUILT_IN) + tuple(
    name for name, (module, _) in _ON_DEMAND.items() if find_spec(module) is not None
)
"""Every name :func:`create_assignor` accepts."""


def create_assignor(name: str) -> PartitionAssignor:
    """A new assignor of the given name (one of :data:`ASSIGNOR_NAMES`)."""
    if name in _BUILT_IN:
        return _BUILT_IN[name]()
    if name in ASSIGNOR_NAMES:
        module, cls_name = _ON_DEMAND[name]
        cls: type[PartitionAssignor] = getattr(import_module(module), cls_name)
        return cls()
    raise IllegalArgumentException(
        f"Unknown partition assignor {name!r}: expected one of {', '.join(ASSIGNOR_NAMES)}"
    )


__all__ = [
    "ASSIGNOR_NAMES",
    "DEFAULT_GENERATION",
    "Assignment",
    "CooperativeStickyPartitionAssignor",
    "GroupSpec",
    "LeaderRackAwareCooperativeStickyPartitionAssignor",
    "LeaderRackAwareRangePartitionAssignor",
    "Member",
    "PartitionAssignor",
    "PartitionInfo",
    "RangePartitionAssignor",
    "StickyOutcome",
    "StickyPartitionAssignor",
    "create_assignor",
    "group_from_json",
]
