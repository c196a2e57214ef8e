"""A cluster's load before and after its plan, from the same figures, and the goals' targets.

Goals
    "Before" is the audit's ``load`` table of the current state, exactly as the audit section
    shows it (a failed log directory is failed, with the size the audit knows, not a size the
    planner estimated); "after" is the same domains with the target's figures (the plan job's
    ``domains_after``, :func:`rackwise.pipeline.plan.summary.after_load`'s shape). Both are
    drawn in one order. The targets are the ones the goals judge by, per domain, when the plan
    gives them (``targets``).

Constraints
    ``domains_after`` may be absent (an older caller): then "after" is the audit's rows with
    the plan's per-broker and per-directory figures (``load_after``) put in; and without the
    audit's rows for the cluster, both come from the plan's ``load_before``/``load_after``.

    ``targets`` (optional): ``cluster_id, level`` (``broker`` or ``log_dir``), ``broker_id,
    log_dir, metric`` (``replicas``, ``leaders`` or ``bytes``), ``low, target, high``: the
    range a goal accepts after the plan and what it aims at (for the replica goal the floor and
    ceiling of the broker's fair share and the share; for the leader goal one either side of
    the mean; for the data goals the share within the tolerance).

Algorithm
    Select the cluster, name every row's domain as the audit does (``13``, ``13:/data/d1``),
    order the level as the audit section does, and look the other state's row and the targets
    up by domain.

Worked example
    Broker 13's directory ``/data/d2`` has failed: before it has 348 replicas and 0 bytes known
    (the audit's figures), after it has none; broker 13 has 660 replicas before and 571 after,
    its target 500 (500 to 501).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rackwise.pipeline.report import load
from rackwise.pipeline.report.charts import Targets

_FIGURES = ("replicas", "leaders", "bytes")
_KEYS = ["level", "broker_id", "log_dir"]


@dataclass(frozen=True)
class States:
    """One cluster's rows before and after (the audit's ``load`` columns, all levels known)."""

    before: pd.DataFrame
    after: pd.DataFrame
    targets: pd.DataFrame

    def level(self, level: str, rack_of: Mapping[int, str]) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The rows of ``level`` before (in chart order) and after (in the same order)."""
        before = load.level_rows(self.before, level, rack_of)
        mine = self.after[self.after["level"] == level].drop_duplicates("domain")
        after = mine.set_index("domain").reindex(before["domain"]).reset_index()
        return before, after

    def targets_of(self, rows: pd.DataFrame, level: str, metric: str) -> Targets | None:
        """The targets of ``metric`` for ``rows`` (a level's rows in chart order), or None."""
        t = self.targets
        if t.empty:
            return None
        t = t[(t["level"] == level) & (t["metric"] == metric)]
        if t.empty:
            return None
        by_domain = _with_domains(t).drop_duplicates("domain").set_index("domain")
        picked = by_domain.reindex(rows["domain"])
        return Targets(
            low=load.column(picked, "low"),
            target=load.column(picked, "target"),
            high=load.column(picked, "high"),
        )


def _domain(level: object, broker: object, log_dir: object) -> str:
    if pd.isna(broker):
        return ""
    broker_id = str(int(float(str(broker))))
    return f"{broker_id}:{log_dir}" if level == load.LOG_DIR else broker_id


def _with_domains(rows: pd.DataFrame) -> pd.DataFrame:
    if "domain" in rows:
        return rows
    log_dirs = rows["log_dir"] if "log_dir" in rows else [None] * len(rows)
    names = [
        _domain(lv, b, d)
        for lv, b, d in zip(rows["level"], rows["broker_id"], log_dirs, strict=True)
    ]
    return rows.assign(domain=names)


def _put_in(base: pd.DataFrame, figures: pd.DataFrame) -> pd.DataFrame:
    """``base``'s broker and directory rows with ``figures``' counts (matched by domain) and
    the utilisation recomputed; levels above a broker are not known this way and are left out."""
    figures = _with_domains(figures).drop_duplicates("domain").set_index("domain")
    rows = base[base["level"].isin([load.BROKER, load.LOG_DIR])].copy()
    for name in _FIGURES:
        if name in figures:
            rows[name] = figures[name].reindex(rows["domain"]).fillna(0).to_numpy()
    if "total_bytes" in rows:
        capacity = load.column(rows, "total_bytes")
        used = load.column(rows, "bytes")
        rows["utilisation"] = np.where(
            capacity > 0, used / np.where(capacity > 0, capacity, 1), np.nan
        )
    return rows


def cluster_states(
    cluster_id: str,
    audit_frames: Mapping[str, pd.DataFrame],
    plan_frames: Mapping[str, pd.DataFrame],
) -> States | None:
    """The cluster's :class:`States` (see the module notes), or None without any load rows."""
    before = load.of_cluster(audit_frames.get("load"), cluster_id)
    after = load.of_cluster(plan_frames.get("domains_after"), cluster_id)
    plan_before = load.of_cluster(plan_frames.get("load_before"), cluster_id)
    plan_after = load.of_cluster(plan_frames.get("load_after"), cluster_id)
    if before.empty:
        if plan_before.empty or plan_after.empty:
            return None
        before = _with_domains(plan_before)
        after = _with_domains(plan_after)
    elif after.empty:
        if plan_after.empty:
            return None
        after = _put_in(before, plan_after)
    targets = load.of_cluster(plan_frames.get("targets"), cluster_id)
    return States(before=before, after=_with_domains(after), targets=targets)
