"""The plan's report, shaped like Cruise Control's proposal summary.

Cruise Control reports, for an optimisation proposal, the inter-broker replica moves and the data
they move, the intra-broker (disk) moves, the leadership moves, each goal's status, how long each
goal took, and an "on-demand balancedness score" before and after. This module does the same for
a rackwise plan.

Goal status (Cruise Control's words): ``NO-ACTION`` when the goal held before the plan and
holds after, ``FIXED`` when it was violated before and holds after, ``VIOLATED`` when it is
violated after. (Cruise Control, whose goals never undo earlier ones, would say ``NO-ACTION``
for a goal that held before whatever came after; here a higher-priority goal's moves can break
a lower one, and the report says so.)

Balancedness score (Cruise Control's definition, with its default weights): the goals are
weighted by priority, the lowest-priority goal 1 and each goal above it ``PRIORITY_WEIGHT``
(1.1) times the one below, hard goals times ``STRICTNESS_WEIGHT`` (1.5); the weights are scaled
to sum to 100, and the score is 100 minus the weights of the goals violated. 100 means every goal
holds; it says nothing of how far a violated goal is from holding, which the per-goal violation
counts do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Final

from rackwise.balance._bound import LowerBound

VIOLATED: Final = "VIOLATED"
FIXED: Final = "FIXED"
NO_ACTION: Final = "NO-ACTION"

PRIORITY_WEIGHT: Final = 1.1
"""Cruise Control's default ``goal.balancedness.priority.weight``."""
STRICTNESS_WEIGHT: Final = 1.5
"""Cruise Control's default ``goal.balancedness.strictness.weight``."""
MAX_BALANCEDNESS_SCORE: Final = 100.0


@dataclass(frozen=True, slots=True)
class GoalSpec:
    """A goal in priority order: its name, whether it is hard (a plan must meet it), and what
    one violation counts."""

    name: str
    is_hard: bool
    unit: str


GOALS: Final[tuple[GoalSpec, ...]] = (
    GoalSpec("SpreadGoal", True, "partitions badly spread"),
    GoalSpec("DomainLossGoal", False, "partitions exposed to a data centre's loss, protectable"),
    GoalSpec("ReplicaDistributionGoal", False, "brokers outside their replica bounds"),
    GoalSpec("LeaderReplicaDistributionGoal", False, "brokers outside their leader bounds"),
    GoalSpec("OfflineReplicaGoal", True, "replicas without a live log directory"),
    GoalSpec("DiskUsageDistributionGoal", False, "brokers outside 10% of their byte share"),
    GoalSpec(
        "IntraBrokerDiskUsageDistributionGoal", False, "log directories outside 10% of target"
    ),
)
"""The goals in priority order (the issue's): spread; surviving a data centre's loss; replicas
and leaders per broker; replicas off failed directories, bytes across brokers and across each
broker's directories."""


@dataclass(frozen=True, slots=True)
class GoalResult:
    """One goal's outcome: violations (in ``unit``) before and after, the moves it made (the
    inter-broker ones, or for the directory goal the moves between a broker's directories),
    the bytes they copy, and how long it took."""

    name: str
    is_hard: bool
    unit: str
    status: str
    violations_before: int
    violations_after: int
    replica_moves: int
    bytes_moved: int
    time_ms: float


def status(before: int, after: int) -> str:
    """``VIOLATED`` when violated after, else ``FIXED`` when violated before, else
    ``NO-ACTION``."""
    if after > 0:
        return VIOLATED
    return FIXED if before > 0 else NO_ACTION


def goal_costs(goals: Sequence[GoalSpec] = GOALS) -> dict[str, float]:
    """Each goal's share of the score (Cruise Control's ``balancednessCostByGoal``)."""
    costs: dict[str, float] = {}
    weight = 1.0 / PRIORITY_WEIGHT
    for goal in reversed(goals):
        weight *= PRIORITY_WEIGHT
        costs[goal.name] = weight * (STRICTNESS_WEIGHT if goal.is_hard else 1.0)
    total = sum(costs.values())
    return {name: cost * MAX_BALANCEDNESS_SCORE / total for name, cost in costs.items()}


def balancedness(violated: Sequence[str], goals: Sequence[GoalSpec] = GOALS) -> float:
    """100 minus the costs of the goals in ``violated`` (never below 0: the costs sum to 100
    up to rounding)."""
    costs = goal_costs(goals)
    return max(0.0, MAX_BALANCEDNESS_SCORE - sum(costs[name] for name in set(violated)))


@dataclass(frozen=True, slots=True)
class Skew:
    """Max over mean per broker (1.0 is perfectly even) of replicas, leaders and bytes, and the
    largest over brokers of a log directory's bytes over its broker's mean directory."""

    replicas: float
    leaders: float
    bytes: float
    log_dir_bytes: float


@dataclass(frozen=True, slots=True)
class Unprotectable:
    """A partition no placement of its replication factor protects against losing a data
    centre (``DomainLossGoal``), and the smallest factor that would (None: none on these
    brokers)."""

    topic: str
    partition: int
    replication_factor: int
    protecting_replication_factor: int | None


UNPROTECTABLE_LISTED: Final = 1000
"""At most this many unprotectable partitions are listed (all are counted)."""


@dataclass(frozen=True)
class PlanReport:
    """What the plan does and how good it is; :meth:`to_dict` is its JSON form.

    ``replica_moves``: replicas copied onto a broker that did not hold them (inter-broker moves,
    counted per replica; Cruise Control counts per partition) and ``data_to_move_bytes`` their
    bytes; ``intra_broker_moves``: replicas moved between directories of their broker;
    ``leader_moves``: partitions whose preferred leader changes without any replica moving.
    ``spread_violations_before/after``: partitions badly spread as the audit sees them (every
    broker, on the strategy's tree); ``avoidable_spread_violations_after``: those still badly
    spread on the brokers that can hold replicas, a broker holding the partition in a failed
    directory counting as not free for it (the ``SpreadGoal`` counts, before and after, are
    these). ``unprotectable``: up to :data:`UNPROTECTABLE_LISTED` of the
    ``unprotectable_partitions`` partitions no placement of their factor protects against a
    data centre's loss. ``max_broker_*_bytes``: the busiest broker's copy traffic, in (as a new
    follower), out (as the leader a new replica copies from) and between its own directories.
    """

    strategy: str
    num_brokers: int
    num_partitions: int
    num_replicas: int
    num_estimated_sizes: int
    replica_moves: int
    data_to_move_bytes: int
    intra_broker_moves: int
    intra_broker_data_to_move_bytes: int
    leader_moves: int
    partitions_changed: int
    lower_bound: LowerBound
    goals: tuple[GoalResult, ...]
    score_before: float
    score_after: float
    spread_violations_before: int
    spread_violations_after: int
    avoidable_spread_violations_after: int
    spread_by_level_before: dict[int, int] = field(default_factory=dict)
    spread_by_level_after: dict[int, int] = field(default_factory=dict)
    skew_before: Skew | None = None
    skew_after: Skew | None = None
    max_broker_inbound_bytes: int = 0
    max_broker_outbound_bytes: int = 0
    max_broker_intra_bytes: int = 0
    plan_ms: float = 0.0
    unprotectable_partitions: int = 0
    unprotectable: tuple[Unprotectable, ...] = ()

    def to_dict(self) -> dict[str, object]:
        out = asdict(self)
        out["spread_by_level_before"] = {str(k): v for k, v in self.spread_by_level_before.items()}
        out["spread_by_level_after"] = {str(k): v for k, v in self.spread_by_level_after.items()}
        return out
