"""Reassignment planning (pure): minimal-move rebalancing over brokers and log directories.

``plan_cluster(ClusterInput(brokers, log_dirs, replicas), strategy)`` returns a :class:`Plan`:
the target replica lists and log directories of one cluster, and a :class:`PlanReport` in the
shape of Cruise Control's proposal summary (moves, data to move, goal statuses and timings, a
balancedness score before and after, a lower bound on the moves). ``to_reassignment(plan)`` is
the document ``kafka-reassign-partitions --execute`` takes.
"""

from rackwise.balance._bound import LowerBound
from rackwise.balance._loss import exposed_count as domain_loss_exposed
from rackwise.balance._measure import BrokerTargets, Loads, TargetRange
from rackwise.balance._pinning import leaders_outside as leaders_outside_preference
from rackwise.balance.model import (
    NO_LOG_DIR,
    STRATEGIES,
    UNKNOWN_BYTES,
    BrokerTable,
    Clock,
    ClusterInput,
    DomainRule,
    LogDirTable,
    ReplicaTable,
    Strategy,
)
from rackwise.balance.output import TargetRows, target_rows, to_reassignment
from rackwise.balance.planner import Plan, plan_cluster
from rackwise.balance.report import (
    FIXED,
    GOALS,
    NO_ACTION,
    VIOLATED,
    GoalResult,
    GoalSpec,
    PlanReport,
    Skew,
    balancedness,
    goal_costs,
)

__all__ = [
    "FIXED",
    "GOALS",
    "NO_ACTION",
    "NO_LOG_DIR",
    "STRATEGIES",
    "UNKNOWN_BYTES",
    "VIOLATED",
    "BrokerTable",
    "BrokerTargets",
    "Clock",
    "ClusterInput",
    "DomainRule",
    "GoalResult",
    "GoalSpec",
    "Loads",
    "LogDirTable",
    "LowerBound",
    "Plan",
    "PlanReport",
    "ReplicaTable",
    "Skew",
    "Strategy",
    "TargetRange",
    "TargetRows",
    "balancedness",
    "domain_loss_exposed",
    "goal_costs",
    "leaders_outside_preference",
    "plan_cluster",
    "target_rows",
    "to_reassignment",
]
