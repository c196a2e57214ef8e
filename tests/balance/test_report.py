"""The report's words and the balancedness score, as Cruise Control defines them."""

from __future__ import annotations

import pytest

from rackwise.balance import GOALS, balancedness, goal_costs
from rackwise.balance.report import FIXED, NO_ACTION, VIOLATED, GoalSpec, status


def test_statuses_are_cruise_controls_words() -> None:
    assert (status(0, 0), status(3, 0), status(3, 1)) == (NO_ACTION, FIXED, VIOLATED)
    # A goal that held before and is broken by a higher-priority goal's moves is reported.
    assert status(0, 2) == VIOLATED
    assert (NO_ACTION, FIXED, VIOLATED) == ("NO-ACTION", "FIXED", "VIOLATED")


def test_costs_follow_priority_and_strictness() -> None:
    # Three soft goals: weights 1.21, 1.1, 1 (top first), scaled to 100.
    soft = [GoalSpec("a", False, ""), GoalSpec("b", False, ""), GoalSpec("c", False, "")]
    costs = goal_costs(soft)
    assert costs == pytest.approx({"a": 121 / 3.31, "b": 110 / 3.31, "c": 100 / 3.31})
    hard = [GoalSpec("a", True, ""), GoalSpec("b", False, "")]
    assert goal_costs(hard) == pytest.approx({"a": 165 / 2.65, "b": 100 / 2.65})


def test_the_score_is_100_minus_the_violated_goals_costs() -> None:
    costs = goal_costs()
    assert sum(costs.values()) == pytest.approx(100.0)
    assert GOALS[0].name == "SpreadGoal"
    assert costs["SpreadGoal"] == pytest.approx(24.2, abs=0.05)
    assert balancedness([]) == 100.0
    assert balancedness(["SpreadGoal", "SpreadGoal"]) == pytest.approx(100 - costs["SpreadGoal"])
    assert balancedness([g.name for g in GOALS]) == pytest.approx(0.0, abs=1e-9)
