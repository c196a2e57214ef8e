"""The server-side assignors by name, and the broker's default ``group.consumer.assignors``:
Kafka's ``uniform`` and ``range`` (the first is a group's default), then rackwise's own.

Example
    ``create_server_assignor("rack-aware-uniform").assign(spec)``; an unknown name raises
    ``IllegalArgumentException`` naming it and the known ones.
"""

from __future__ import annotations

from typing import Final

from rackwise.assignors.server import (
    LeaderRackAwareRangeServerAssignor,
    LeaderRackAwareStickyServerAssignor,
    RackLocalOptimalServerAssignor,
    RangeServerAssignor,
    ServerAssignor,
)
from rackwise.assignors.server_uniform import RackAwareUniformAssignor, UniformAssignor
from rackwise.common import IllegalArgumentException

_BUILT: Final[dict[str, type[ServerAssignor]]] = {
    cls.name: cls
    for cls in (
        UniformAssignor,
        RangeServerAssignor,
        RackAwareUniformAssignor,
        LeaderRackAwareRangeServerAssignor,
        LeaderRackAwareStickyServerAssignor,
        RackLocalOptimalServerAssignor,
    )
}

KAFKA_DEFAULT_ASSIGNORS: Final = ("uniform", "range")
"""Kafka's ``group.consumer.assignors`` default."""
DEFAULT_ASSIGNORS: Final = tuple(_BUILT)
"""rackwise's default for ``group.consumer.assignors``: Kafka's, then its own."""


def create_server_assignor(name: str) -> ServerAssignor:
    """The server-side assignor of ``name`` (one of :data:`DEFAULT_ASSIGNORS`)."""
    cls = _BUILT.get(name)
    if cls is None:
        raise IllegalArgumentException(
            f"Unknown server assignor {name!r}: expected one of {', '.join(DEFAULT_ASSIGNORS)}"
        )
    return cls()


def uses_leader_racks(name: str) -> bool:
    """Whether the assignor of ``name`` reads the leaders' racks (False for an unknown one)."""
    cls = _BUILT.get(name)
    return cls is not None and cls.uses_leader_racks
