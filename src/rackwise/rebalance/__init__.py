"""The rebalance executor's core (pure): safe batches of moves and the state machine that runs
them.

``plan_batches(state, targets, limits)`` is the dry run: the batches that bring a
:class:`ClusterState` to its targets within the :class:`Limits` (replica moves per broker,
directory moves per broker, leader moves per batch) and the moves refused by a safety rule
(:mod:`~rackwise.rebalance.safety`), each naming its partition and rule.
:class:`Execution` carries the same out against a live cluster one observation at a time,
adopting the reassignments already in flight. The driver that talks to a cluster is
``rackwise.cli.rebalance``.
"""

from rackwise.rebalance.batches import Batch, Schedule, finish, moves_for, plan_batches, select
from rackwise.rebalance.execution import (
    Action,
    Cancel,
    ClearThrottles,
    ElectLeaders,
    Execution,
    MoveDir,
    Phase,
    Reassign,
    SetThrottles,
    Step,
)
from rackwise.rebalance.model import (
    ANY_DIR,
    UNKNOWN,
    ClusterState,
    InFlight,
    Limits,
    LogDir,
    Move,
    PartitionState,
    Target,
    is_done,
)
from rackwise.rebalance.safety import RULES, Hold, Rule, check, domains, spread_floor

__all__ = [
    "ANY_DIR",
    "RULES",
    "UNKNOWN",
    "Action",
    "Batch",
    "Cancel",
    "ClearThrottles",
    "ClusterState",
    "ElectLeaders",
    "Execution",
    "Hold",
    "InFlight",
    "Limits",
    "LogDir",
    "Move",
    "MoveDir",
    "PartitionState",
    "Phase",
    "Reassign",
    "Rule",
    "Schedule",
    "SetThrottles",
    "Step",
    "Target",
    "check",
    "domains",
    "finish",
    "is_done",
    "moves_for",
    "plan_batches",
    "select",
    "spread_floor",
]
