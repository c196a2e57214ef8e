"""The target state's load and skew, and the goals' per-broker targets, from small tables:
whichever engine planned.

Goals
    The figures the audit would find in the target table, without auditing it: every domain of
    the audit's ``load`` table (rack nodes, brokers, log directories, capacities unchanged) with
    the target's replicas, leaders and bytes (a test audits the target and compares).
Constraints
    Only small tables are read: the audit's ``load`` (one row per domain) and the plan's rows of
    ``kind`` ``broker`` and ``log_dir`` (one per broker and directory), never a replica row, so
    that the cost does not grow with the replicas; pandas, on the driver.
Algorithm
    Log directories and brokers take the plan's ``*_after`` figures of the same key; a rack node
    sums the figures of the brokers whose rack path starts with its path (a rack without a
    leading ``/`` is a one-level path, as the audit reads it). ``utilisation`` is bytes over
    capacity where that is positive; the skew is computed as the audit's summary computes it.
    The targets are the ``kind=broker`` rows' ``<metric>_low/_target/_high`` columns turned
    long: one row per broker and metric (:func:`targets_frame`).
Worked example
    Brokers 1 (``/dc1/r1``) and 2 (``/dc1/r2``) with 10 and 30 replicas after the plan: rows
    ``1`` 10, ``2`` 30, ``/dc1/r1`` 10, ``/dc1/r2`` 30, ``/dc1`` 40; the skew of level
    ``broker`` for ``replicas`` is min 10, max 30, mean 20, max/mean 1.5.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
import pandas as pd

from rackwise.pipeline.plan.group import TARGET_BOUNDS

COUNTS: Final = ("replicas", "leaders", "bytes")
METRICS: Final = (*COUNTS, "utilisation")
_DIGITS: Final = 4
_KEYS: Final = ["cluster_id", "level", "broker_id", "log_dir"]
TARGETS_COLUMNS: Final = (
    "cluster_id",
    "level",
    "broker_id",
    "log_dir",
    "metric",
    *TARGET_BOUNDS,
)
LOAD_COLUMNS: Final = (
    "cluster_id",
    "level",
    "domain",
    "broker_id",
    "log_dir",
    "is_live",
    "replicas",
    "leaders",
    "bytes",
    "total_bytes",
    "utilisation",
)


def rack_domains(brokers: pd.DataFrame) -> pd.DataFrame:
    """``cluster_id, broker_id, domain``: every rack node above each broker, named by its path
    as the audit names it."""
    rows = []
    for cluster_id, broker, rack in brokers[["cluster_id", "broker_id", "rack"]].itertuples(
        index=False
    ):
        if not isinstance(rack, str) or not rack:
            continue
        parts = (rack if rack.startswith("/") else "/" + rack)[1:].split("/")
        for depth in range(1, len(parts) + 1):
            rows.append((cluster_id, int(broker), "/" + "/".join(parts[:depth])))
    return pd.DataFrame(rows, columns=["cluster_id", "broker_id", "domain"])


def _after(rows: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    picked = rows[[*keys, "replicas_after", "leaders_after", "bytes_after"]]
    return picked.rename(columns={f"{c}_after": c for c in COUNTS})


def after_load(
    audit_load: pd.DataFrame, plan_loads: pd.DataFrame, brokers: pd.DataFrame
) -> pd.DataFrame:
    """The audit's ``load`` table (:data:`LOAD_COLUMNS`) of the current state with the target
    state's figures. ``plan_loads``: the plan's rows of ``kind`` ``broker`` and ``log_dir``
    (``cluster_id, kind, broker_id, log_dir`` and the ``*_after`` figures); ``brokers``:
    ``cluster_id, broker_id, rack``."""
    base = audit_load[[c for c in LOAD_COLUMNS if c not in (*COUNTS, "utilisation")]]
    is_dir, is_broker = base["level"] == "log_dir", base["level"] == "broker"
    dir_keys = ["cluster_id", "broker_id", "log_dir"]
    dirs = _after(plan_loads[plan_loads["kind"] == "log_dir"], dir_keys)
    per_broker = _after(plan_loads[plan_loads["kind"] == "broker"], ["cluster_id", "broker_id"])
    for frame in (dirs, per_broker):
        frame["broker_id"] = frame["broker_id"].astype(np.int64)
    per_rack = (
        rack_domains(brokers)
        .merge(per_broker, on=["cluster_id", "broker_id"], how="inner")
        .groupby(["cluster_id", "domain"], as_index=False)[list(COUNTS)]
        .sum()
    )
    parts = [
        _with_ids(base[is_dir]).merge(dirs, on=["cluster_id", "broker_id", "log_dir"], how="left"),
        _with_ids(base[is_broker]).merge(per_broker, on=["cluster_id", "broker_id"], how="left"),
        base[~is_dir & ~is_broker].merge(per_rack, on=["cluster_id", "domain"], how="left"),
    ]
    joined = pd.concat([p for p in parts if not p.empty] or parts[:1], ignore_index=True)
    for name in COUNTS:
        # numeric first: a column that only an empty part brought in is of object dtype
        joined[name] = pd.to_numeric(joined[name]).fillna(0).astype(np.int64)
    capacity = joined["total_bytes"].astype("float64")
    joined["utilisation"] = np.where(capacity > 0, joined["bytes"] / capacity, np.nan)
    return joined[list(LOAD_COLUMNS)]


def _with_ids(rows: pd.DataFrame) -> pd.DataFrame:
    out = rows.copy()
    out["broker_id"] = out["broker_id"].astype(np.int64)
    return out


def _number(value: Any) -> Any:
    if value is None or pd.isna(value):
        return None
    value = float(value)
    return int(value) if value.is_integer() else round(value, _DIGITS)


def skew_figures(load: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """``{cluster_id: {level: {metric: {min, max, mean, max_over_mean}}}}`` over ``load`` (the
    audit's load columns), as the audit's summary computes its ``skew``: per level and metric
    over the domains with a value (``utilisation`` is missing where the capacity is)."""
    out: dict[str, dict[str, Any]] = {}
    for (cluster_id, level), rows in load.groupby(["cluster_id", "level"], sort=True):
        for metric in METRICS:
            values = rows[metric].dropna().astype("float64")
            if values.empty:
                continue
            mean = values.sum() / len(values)
            high = values.max()
            figures = {
                "min": _number(values.min()),
                "max": _number(high),
                "mean": _number(mean),
                "max_over_mean": _number(high / mean) if mean > 0 else None,
            }
            out.setdefault(str(cluster_id), {}).setdefault(str(level), {})[metric] = figures
    return out


def targets_frame(plan_loads: pd.DataFrame) -> pd.DataFrame:
    """The balance goals' per-broker targets in the long shape the report draws:
    ``cluster_id, level`` (``broker``), ``broker_id, log_dir`` (null), ``metric`` (one of
    :data:`COUNTS`), ``low, target, high``: one row per broker and metric, from the plan's
    ``kind=broker`` rows; a broker without targets (outside the goals' tree) has none."""
    brokers = plan_loads[plan_loads["kind"] == "broker"]
    parts = []
    for metric in COUNTS:
        names = {f"{metric}_{bound}": bound for bound in TARGET_BOUNDS}
        if not set(names) <= set(brokers.columns):
            continue
        frame = brokers[["cluster_id", "broker_id", *names]].rename(columns=names)
        frame = frame.dropna(subset=list(TARGET_BOUNDS), how="all")
        parts.append(frame.assign(level="broker", log_dir=None, metric=metric))
    if not parts:
        return pd.DataFrame(columns=list(TARGETS_COLUMNS))
    targets = pd.concat(parts, ignore_index=True)[list(TARGETS_COLUMNS)]
    targets["broker_id"] = targets["broker_id"].astype(np.int64)
    for bound in TARGET_BOUNDS:
        targets[bound] = targets[bound].astype("float64")
    order = ["cluster_id", "broker_id", "metric"]
    return targets.sort_values(order, kind="stable").reset_index(drop=True)


def load_frames(plan_loads: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """``load_before`` and ``load_after``: ``cluster_id, level`` (``broker`` or ``log_dir``),
    ``broker_id, log_dir, replicas, leaders, bytes`` from the plan's per-broker and
    per-directory rows; ``targets``: :func:`targets_frame`."""
    loads = plan_loads.rename(columns={"kind": "level"})
    out = {}
    for when in ("before", "after"):
        frame = loads[[*_KEYS, *(f"{c}_{when}" for c in COUNTS)]]
        frame = frame.rename(columns={f"{c}_{when}": c for c in COUNTS})
        out[f"load_{when}"] = frame.sort_values(_KEYS, na_position="first").reset_index(drop=True)
    out["targets"] = targets_frame(plan_loads)
    return out
