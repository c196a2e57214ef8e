"""The audit's ``load`` table as the report's charts and tables need it.

Goals
    The audit and the plan sections draw the same domains in the same order from the same
    figures: brokers grouped by rack (then by id, ``10`` after ``9``), log directories by
    broker then path, every rack level from the top; a failed log directory is marked failed
    wherever it appears.

Constraints
    ``load`` has the audit's columns: ``cluster_id, level, domain, broker_id, log_dir,
    is_live, replicas, leaders, bytes, total_bytes, utilisation`` (``broker_id`` may come back
    from Parquet as a float, ``is_live`` as an object column with ``None`` for levels above a
    directory). Only ``is_live`` false means failed; unknown is not failed.

Algorithm
    Select a cluster's rows of a level, attach each broker's rack, sort, and hand out the
    columns as arrays.

Worked example
    Brokers 10, 9 and 2 in racks ``/b``, ``/a`` and ``/b`` come out as 9 (``/a``), 2, 10
    (``/b``): the chart's groups are ``/a`` and ``/b``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

import numpy as np
import pandas as pd

BROKER: Final = "broker"
LOG_DIR: Final = "log_dir"
NO_RACK: Final = "(no rack)"
"""The group of brokers without a ``broker.rack``."""
METRICS: Final = ("replicas", "leaders", "bytes", "utilisation")
LEVEL_NAMES: Final = {"broker": "broker", "log_dir": "log directory", "cluster": "cluster"}


def level_name(level: str) -> str:
    """A level as a person says it (``log_dir`` is ``log directory``)."""
    return LEVEL_NAMES.get(level, level)


def of_cluster(frame: pd.DataFrame | None, cluster_id: str) -> pd.DataFrame:
    """The rows of ``cluster_id`` (an empty frame when there are none or no frame)."""
    if frame is None or frame.empty or "cluster_id" not in frame:
        return pd.DataFrame()
    return frame[frame["cluster_id"] == cluster_id]


def racks(brokers: pd.DataFrame) -> dict[int, str]:
    """Broker id to rack (``NO_RACK`` for none) from ``broker_id, rack`` rows."""
    if brokers.empty or "broker_id" not in brokers:
        return {}
    return {
        int(b): (str(r) if isinstance(r, str) and r else NO_RACK)
        for b, r in zip(
            brokers["broker_id"], brokers.get("rack", [None] * len(brokers)), strict=True
        )
    }


def failed(rows: pd.DataFrame) -> np.ndarray:
    """True for the rows whose ``is_live`` is false (a failed log directory)."""
    if "is_live" not in rows:
        return np.zeros(len(rows), dtype=bool)
    return np.array([_is_false(v) for v in rows["is_live"]], dtype=bool)


def _is_false(value: object) -> bool:
    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return False
    return not bool(value)


def _ids(rows: pd.DataFrame) -> pd.Series:
    return pd.to_numeric(rows["broker_id"], errors="coerce").astype("Int64")


def broker_rows(load: pd.DataFrame, rack_of: Mapping[int, str]) -> pd.DataFrame:
    """The broker rows of ``load``, with ``rack``, sorted by rack then broker id."""
    rows = load[load["level"] == BROKER].copy()
    if rows.empty:
        return rows.assign(rack=pd.Series(dtype=str))
    rows["broker_id"] = _ids(rows)
    rows["rack"] = [rack_of.get(int(b), NO_RACK) for b in rows["broker_id"]]
    return rows.sort_values(["rack", "broker_id"], kind="stable").reset_index(drop=True)


def dir_rows(load: pd.DataFrame) -> pd.DataFrame:
    """The log-directory rows of ``load``, sorted by broker id then path."""
    rows = load[load["level"] == LOG_DIR].copy()
    if rows.empty:
        return rows
    rows["broker_id"] = _ids(rows)
    return rows.sort_values(["broker_id", "log_dir"], kind="stable").reset_index(drop=True)


def level_rows(load: pd.DataFrame, level: str, rack_of: Mapping[int, str]) -> pd.DataFrame:
    """The rows of one level in chart order."""
    if level == BROKER:
        return broker_rows(load, rack_of)
    if level == LOG_DIR:
        return dir_rows(load)
    rows = load[load["level"] == level]
    return rows.sort_values("domain", kind="stable").reset_index(drop=True)


def rack_levels(figures: Mapping[str, object], load: pd.DataFrame) -> list[str]:
    """The rack levels from the top: the summary's ``rack_levels``, else those in ``load``."""
    given = figures.get("rack_levels")
    if isinstance(given, Sequence) and not isinstance(given, str) and given:
        return [str(x) for x in given]
    if load.empty:
        return []
    rank = {"dc": 0, "rack": 1}
    names = set(load["level"]) - {BROKER, LOG_DIR, "cluster"}
    return sorted(names, key=lambda n: (rank.get(n, 2), n))


def column(rows: pd.DataFrame, name: str) -> np.ndarray:
    """A figure column as floats (NaN where unknown or absent)."""
    if name not in rows:
        return np.full(len(rows), np.nan)
    values: np.ndarray = pd.to_numeric(rows[name], errors="coerce").to_numpy(dtype=float)
    return values


def ratios(values: np.ndarray, *, skip: np.ndarray | None = None) -> np.ndarray:
    """Each value over the mean of the values (NaN where unknown, ``skip`` left out of the
    mean and NaN itself; NaN everywhere when the mean is 0)."""
    use = ~np.isnan(values) if skip is None else ~np.isnan(values) & ~skip
    mean = float(values[use].mean()) if use.any() else 0.0
    out = values / mean if mean > 0 else np.full(values.shape, np.nan)
    if skip is not None:
        out = np.where(skip, np.nan, out)
    return out


def live_mean(values: np.ndarray, is_failed: np.ndarray) -> float | None:
    """The mean over the domains not failed (None when there are none)."""
    use = ~is_failed & ~np.isnan(values)
    return float(values[use].mean()) if use.any() else None
