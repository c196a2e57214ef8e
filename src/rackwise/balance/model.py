"""What the planner is given: one cluster's brokers, log directories and replicas as columns.

The tables mirror the pipeline's (``rackwise.pipeline.schema``) one cluster at a time, as NumPy
columns so that millions of replicas cost a few arrays rather than millions of objects. Rows
refer to each other by id (brokers) or by row number (log directories); topic names are stored
once and referred to by number.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final, Literal

import numpy as np
import numpy.typing as npt

from rackwise.common import InvalidRequestException
from rackwise.topology import LeadersPreference

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]

Clock = Callable[[], float]
"""A monotonic clock in seconds, injected by the caller (the job passes ``time.perf_counter``);
the planner only subtracts two readings, to report how long each goal took."""

Strategy = Literal["keep", "rack-aware", "multi-level"]
STRATEGIES: Final[tuple[Strategy, ...]] = ("keep", "rack-aware", "multi-level")

NO_LOG_DIR: Final = -1
"""Log directory sentinel: unknown (on input) or ``"any"`` (in a target: the broker chooses)."""

UNKNOWN_BYTES: Final = -1
"""Size or capacity sentinel: not reported."""


def _int_column(values: object, name: str) -> IntArray:
    column = np.asarray(values, dtype=np.int64)
    if column.ndim != 1:
        raise InvalidRequestException(f"Column {name} must be one-dimensional")
    return column


def _same_length(table: str, columns: dict[str, int]) -> None:
    if len(set(columns.values())) > 1:
        sizes = ", ".join(f"{k}={v}" for k, v in columns.items())
        raise InvalidRequestException(f"The {table} columns differ in length: {sizes}")


@dataclass(frozen=True, eq=False)
class BrokerTable:
    """The brokers: ``ids[i]`` has rack ``racks[i]`` (a path such as ``/dc1/r1``, a one-level
    name, or None for a broker without ``broker.rack``)."""

    ids: IntArray
    racks: tuple[str | None, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "ids", _int_column(self.ids, "broker id"))
        object.__setattr__(self, "racks", tuple(self.racks))
        _same_length("broker", {"ids": self.ids.size, "racks": len(self.racks)})

    def __len__(self) -> int:
        return int(self.ids.size)


@dataclass(frozen=True, eq=False)
class LogDirTable:
    """The log directories: row d is directory ``paths[d]`` of broker ``broker_ids[d]``, with
    capacity ``total_bytes[d]`` (``UNKNOWN_BYTES`` if not reported) and ``is_live[d]`` False for
    a failed (offline) directory. A broker without rows has directories the planner does not
    know: its replicas get ``"any"``."""

    broker_ids: IntArray
    paths: tuple[str, ...]
    total_bytes: IntArray
    is_live: BoolArray
    draining: BoolArray | None = None
    """True for a directory to empty (``--drain-log-dirs``: a cordoned one, KIP-1066): it
    takes no replica and gives up those it holds; none by default."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "broker_ids", _int_column(self.broker_ids, "log dir broker"))
        object.__setattr__(self, "paths", tuple(self.paths))
        object.__setattr__(self, "total_bytes", _int_column(self.total_bytes, "total_bytes"))
        object.__setattr__(self, "is_live", np.asarray(self.is_live, dtype=np.bool_))
        draining = np.zeros(self.is_live.size, np.bool_) if self.draining is None else self.draining
        object.__setattr__(self, "draining", np.asarray(draining, dtype=np.bool_))
        _same_length(
            "log dir",
            {
                "broker_ids": self.broker_ids.size,
                "paths": len(self.paths),
                "total_bytes": self.total_bytes.size,
                "is_live": self.is_live.size,
                "draining": np.asarray(self.draining).size,
            },
        )

    def __len__(self) -> int:
        return int(self.broker_ids.size)

    @classmethod
    def empty(cls) -> LogDirTable:
        return cls(np.zeros(0, np.int64), (), np.zeros(0, np.int64), np.zeros(0, np.bool_))


@dataclass(frozen=True, eq=False)
class ReplicaTable:
    """The replicas: row r is replica ``replica_index[r]`` (0 = preferred leader) of partition
    ``partitions[r]`` of topic ``topic_names[topics[r]]``, on broker ``broker_ids[r]`` in log
    directory row ``log_dirs[r]`` (``NO_LOG_DIR`` if unknown), holding ``size_bytes[r]`` bytes
    (``UNKNOWN_BYTES`` if unknown). Rows may come in any order."""

    topic_names: tuple[str, ...]
    topics: IntArray
    partitions: IntArray
    replica_index: IntArray
    broker_ids: IntArray
    log_dirs: IntArray
    size_bytes: IntArray

    def __post_init__(self) -> None:
        object.__setattr__(self, "topic_names", tuple(self.topic_names))
        for name in ("topics", "partitions", "replica_index", "broker_ids", "log_dirs"):
            object.__setattr__(self, name, _int_column(getattr(self, name), name))
        object.__setattr__(self, "size_bytes", _int_column(self.size_bytes, "size_bytes"))
        _same_length(
            "replica",
            {
                "topics": self.topics.size,
                "partitions": self.partitions.size,
                "replica_index": self.replica_index.size,
                "broker_ids": self.broker_ids.size,
                "log_dirs": self.log_dirs.size,
                "size_bytes": self.size_bytes.size,
            },
        )
        if self.topics.size and (
            self.topics.min() < 0 or self.topics.max() >= len(self.topic_names)
        ):
            raise InvalidRequestException("A replica refers to a topic number out of range")

    def __len__(self) -> int:
        return int(self.topics.size)


@dataclass(frozen=True, slots=True)
class DomainRule:
    """What losing one top-level domain must leave a topic's partitions: ``min_insync_replicas``
    replicas in ``min_insync_racks`` domains at ``level`` (``min.insync.racks.level``)."""

    min_insync_replicas: int
    min_insync_racks: int = 1
    level: int = 1


@dataclass(frozen=True, eq=False)
class ClusterInput:
    """One cluster as the planner sees it; ``leaders_preferences`` is each topic's
    ``leaders.preference`` where it has one (:mod:`rackwise.topology.domains`)."""

    brokers: BrokerTable
    log_dirs: LogDirTable
    replicas: ReplicaTable
    leaders_preferences: Mapping[str, LeadersPreference] = field(
        default_factory=lambda: MappingProxyType({})
    )
    domain_rules: Mapping[str, DomainRule] = field(default_factory=lambda: MappingProxyType({}))
    """Each topic's :class:`DomainRule`, for ``DomainLossGoal``; a topic without one is not
    judged by it."""
