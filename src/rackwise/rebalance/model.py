"""What the executor sees and what it asks for: a cluster's state, targets, moves and limits.

A :class:`ClusterState` is one observation of a live cluster (the brokers that are up with
their racks, every partition's replicas, log directories, ISR, leader, ``min.insync.replicas``
and size, every log directory's capacity and use, and the reassignments in flight as
ListPartitionReassignments reports them). A :class:`Target` is a partition's wanted replica
list, preferred leader first, with a log directory per replica (``"any"``: the broker chooses).
A :class:`Move` pairs the two; its kind says what carrying it out costs:

- ``replica``: a replica is copied onto a broker that does not hold one (a reassignment);
- ``dir``: the same brokers, a replica moved between directories of its broker
  (AlterReplicaLogDirs);
- ``leader``: the same replicas and directories in another order (a new preferred leader).

Example: ``t-0`` on ``(1, 2)`` with target ``(3, 2)``: a ``replica`` move adding 3, removing 1,
involving brokers 1, 2 and 3 while it runs (all three take part in the copy or its end).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Final, Literal

from rackwise.common import NO_BROKER, TopicPartition
from rackwise.topology import RackTree

ANY_DIR: Final = "any"
"""A target directory meaning "whichever the broker picks" (the reassignment JSON's word)."""

UNKNOWN: Final = -1
"""A size or capacity not reported."""

MoveKind = Literal["replica", "dir", "leader"]


@dataclass(frozen=True, slots=True)
class PartitionState:
    """One partition as observed: ``log_dirs[j]`` is the directory of ``replicas[j]`` (None if
    not known), ``leader`` is ``NO_BROKER`` for a partition without one."""

    replicas: tuple[int, ...]
    log_dirs: tuple[str | None, ...]
    isr: tuple[int, ...]
    leader: int
    min_insync: int
    size_bytes: int

    def dir_of(self, broker: int) -> str | None:
        for replica, path in zip(self.replicas, self.log_dirs, strict=True):
            if replica == broker:
                return path
        return None


@dataclass(frozen=True, slots=True)
class LogDir:
    """One log directory: ``capacity`` bytes (``UNKNOWN`` if not reported), ``used`` bytes."""

    capacity: int
    used: int


@dataclass(frozen=True, slots=True)
class InFlight:
    """A reassignment in flight, as ListPartitionReassignments reports it: the full replica
    list (target and original together), the replicas being added and those being removed."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]

    @property
    def target(self) -> tuple[int, ...]:
        return tuple(b for b in self.replicas if b not in self.removing)


@dataclass(frozen=True, eq=False)
class ClusterState:
    """One observation of a cluster. ``racks`` maps every broker that is up to its rack."""

    racks: Mapping[int, str | None]
    partitions: Mapping[TopicPartition, PartitionState]
    log_dirs: Mapping[tuple[int, str], LogDir] = field(default_factory=dict)
    in_flight: Mapping[TopicPartition, InFlight] = field(default_factory=dict)

    @cached_property
    def tree(self) -> RackTree:
        return RackTree.build([(b, rack, False) for b, rack in sorted(self.racks.items())])


@dataclass(frozen=True, slots=True)
class Target:
    """A partition's wanted replicas, preferred leader first, and a directory for each."""

    replicas: tuple[int, ...]
    log_dirs: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.log_dirs:
            object.__setattr__(self, "log_dirs", (ANY_DIR,) * len(self.replicas))

    def dir_of(self, broker: int) -> str:
        for replica, path in zip(self.replicas, self.log_dirs, strict=True):
            if replica == broker:
                return path
        return ANY_DIR


@dataclass(frozen=True, slots=True)
class Limits:
    """How much one batch may do (Cruise Control's defaults) and how full a directory may get."""

    concurrency_per_broker: int = 5
    intra_per_broker: int = 2
    max_leader_moves: int = 1000
    max_disk_use: float = 0.85


@dataclass(frozen=True, slots=True)
class Move:
    """Partition ``partition`` from ``source`` (its replicas now) to ``target``."""

    partition: TopicPartition
    source: PartitionState
    target: Target

    @property
    def adding(self) -> tuple[int, ...]:
        return tuple(b for b in self.target.replicas if b not in self.source.replicas)

    @property
    def removing(self) -> tuple[int, ...]:
        return tuple(b for b in self.source.replicas if b not in self.target.replicas)

    @property
    def dir_moves(self) -> tuple[tuple[int, str], ...]:
        """(broker, directory) for each replica that stays on its broker and changes directory."""
        out = []
        for broker, path in zip(self.target.replicas, self.target.log_dirs, strict=True):
            kept = broker in self.source.replicas and path != ANY_DIR
            if kept and self.source.dir_of(broker) != path:
                out.append((broker, path))
        return tuple(out)

    @property
    def kind(self) -> MoveKind:
        if self.adding or self.removing:
            return "replica"
        return "dir" if self.dir_moves else "leader"

    @property
    def involved(self) -> tuple[int, ...]:
        """The brokers a replica move keeps busy while it runs: old and new replicas."""
        if self.kind != "replica":
            return ()
        return tuple(sorted(set(self.source.replicas) | set(self.target.replicas)))

    @property
    def union(self) -> tuple[int, ...]:
        """The replica list while the move runs: the target first, then the leaving ones."""
        return self.target.replicas + self.removing

    def incoming(self) -> list[tuple[int, str]]:
        """(broker, directory) of every copy the move writes, where the directory is named."""
        out = [(b, self.target.dir_of(b)) for b in self.adding]
        return [(b, d) for b, d in out if d != ANY_DIR] + list(self.dir_moves)

    def landing(self, dirs: Iterable[tuple[int, str]]) -> list[tuple[int, str]]:
        """The directories (of ``dirs``) a copy of the move may land in: each named one, and
        every directory of a broker given ``"any"`` (its broker chooses; any may fill)."""
        anywhere = {b for b in self.adding if self.target.dir_of(b) == ANY_DIR}
        return self.incoming() + [(b, d) for b, d in dirs if b in anywhere]


def is_done(state: PartitionState, target: Target) -> bool:
    """True when ``state`` has the target's replicas in its order and every named directory."""
    if state.replicas != target.replicas:
        return False
    return all(
        path in (ANY_DIR, state.dir_of(broker)) or state.dir_of(broker) is None
        for broker, path in zip(target.replicas, target.log_dirs, strict=True)
    )


def has_leader(state: PartitionState) -> bool:
    return state.leader != NO_BROKER
