"""The audit summary: one small JSON-ready dict per cluster, whatever the size of the fleet.

Only figures that stay small go in: counts per cluster, skew per level and metric, and for
exposure only the domains with a non-zero count, the worst ``max_domains`` per level (the number
of exposed domains per level says how many there are; the Parquet ``exposure`` table has all).
Every level of the cluster (its rack levels, ``broker``, ``log_dir``) is present in
``offline_if_lost``, ``under_min_isr_if_lost`` and ``exposed_domains``, empty (or 0) when
nothing there is exposed: two runs diff level by level, and a level that appears or goes
means the topology changed, not the exposure.
"""

from __future__ import annotations

from typing import Any, Final

import pandas as pd

from rackwise.pipeline.audit.tree import BROKER_LEVEL, LOG_DIR_LEVEL

EXPOSURE_KINDS: Final = (
    "offline_if_lost",
    "under_min_isr_if_lost",
    "below_min_insync_racks_if_lost",
    "leaders_leave_preference_if_lost",
)
REFUSING_KINDS: Final = EXPOSURE_KINDS[:3]
"""The disjoint counts whose sum is a domain's partitions refusing acks=all writes if lost."""
DEFAULT_MAX_DOMAINS: Final = 10
WORST_CLUSTERS: Final = 20
_DIGITS: Final = 4
_COUNTS: Final = (
    "brokers",
    "brokers_without_rack",
    "log_dirs",
    "failed_log_dirs",
    "partitions",
    "replicas",
    "offline_now",
    "under_min_isr_now",
    "partitions_with_spread_violations",
    "spread_violations",
    "below_min_insync_racks_now",
    "leaders_outside_preference",
)


def _exposed(exposure: pd.DataFrame, max_domains: int) -> pd.DataFrame:
    """``cluster_id, level, kind, domain, count, exposed``: the worst ``max_domains`` non-zero
    domains per (cluster, level, kind), by count then name, with the number of non-zero
    domains there are."""
    keys = ["cluster_id", "level", "kind"]
    parts = []
    for kind in EXPOSURE_KINDS:
        hit = exposure.loc[exposure[kind] > 0, ["cluster_id", "level", "domain", kind]]
        parts.append(hit.rename(columns={kind: "count"}).assign(kind=kind))
    rows = pd.concat(parts, ignore_index=True)
    if rows.empty:
        return rows.assign(exposed=pd.Series(dtype="int64"))
    rows = rows.sort_values([*keys, "count", "domain"], ascending=[True, True, True, False, True])
    rows["exposed"] = rows.groupby(keys, sort=False)["count"].transform("size")
    return rows.groupby(keys, sort=False).head(max_domains)


def _number(value: Any) -> Any:
    """Whole floats as ints (counts, bytes), others to ``_DIGITS`` decimals; a missing value
    (``None``, or NaN from pandas) as ``None``."""
    if value is None or pd.isna(value):
        return None
    if isinstance(value, float):
        return int(value) if value.is_integer() else round(value, _DIGITS)
    return value


def risk_key(cluster_id: str, figures: dict[str, Any]) -> tuple[Any, ...]:
    """Sort key putting the clusters most at risk first: partitions offline now, the most
    partitions one failure takes offline, under min ISR now, spread violations, the most
    partitions one failure puts under min ISR; then by id."""
    return (
        -int(figures.get("offline_now", 0)),
        -int(figures.get("max_offline_if_lost", 0)),
        -int(figures.get("under_min_isr_now", 0)),
        -int(figures.get("partitions_with_spread_violations", 0)),
        -int(figures.get("max_under_min_isr_if_lost", 0)),
        cluster_id,
    )


def _cluster_entries(clusters: pd.DataFrame, min_insync_replicas: int) -> dict[str, Any]:
    out: dict[str, dict[str, Any]] = {}
    for row in clusters.to_dict("records"):
        entry: dict[str, Any] = {c: int(row[c]) for c in _COUNTS}
        entry["rack_levels"] = [str(level) for level in row["rack_levels"]]
        entry["min_insync_replicas"] = min_insync_replicas
        # a map column: a dict from Spark, a list of pairs from Parquet
        by_level = dict(row["spread_violations_by_level"] or {})
        entry["spread_violations_by_level"] = {k: int(v) for k, v in sorted(by_level.items())}
        entry["skew"] = {}
        levels = [*entry["rack_levels"], BROKER_LEVEL, LOG_DIR_LEVEL]
        for kind in EXPOSURE_KINDS:
            entry[kind] = {level: {} for level in levels}
            entry[f"max_{kind}"] = 0
        entry["exposed_domains"] = {kind: dict.fromkeys(levels, 0) for kind in EXPOSURE_KINDS}
        out[str(row["cluster_id"])] = entry
    return out


def _add_exposure(out: dict[str, Any], exposure: pd.DataFrame, max_domains: int) -> None:
    for row in _exposed(exposure, max_domains).itertuples(index=False):
        entry = out[row.cluster_id]
        kind, level, count = str(row.kind), str(row.level), int(row.count)
        entry[kind].setdefault(level, {})[str(row.domain)] = count
        entry["exposed_domains"][kind][level] = int(row.exposed)
        entry[f"max_{kind}"] = max(entry[f"max_{kind}"], count)


def worst_domain(entry: dict[str, Any], exposure: pd.DataFrame) -> dict[str, Any] | None:
    """The cluster's worst single domain (``exposure``: its rows): the most partitions that
    would refuse acks=all writes if it were lost (offline, under min ISR or below
    min.insync.racks), then the most offline, then the most under min ISR; a tie goes to the
    higher level (a data centre before its racks), then to the name. ``None`` when no domain's
    loss would refuse a write."""
    if exposure.empty:
        return None
    refusing = sum(exposure[k] for k in REFUSING_KINDS)
    if int(refusing.max()) == 0:
        return None
    levels = [*entry["rack_levels"], BROKER_LEVEL, LOG_DIR_LEVEL]
    ranked = exposure.assign(
        _refusing=refusing, _depth=exposure["level"].map({n: i for i, n in enumerate(levels)})
    ).sort_values(
        ["_refusing", "offline_if_lost", "under_min_isr_if_lost", "_depth", "domain"],
        ascending=[False, False, False, True, True],
    )
    row = ranked.iloc[0]
    out: dict[str, Any] = {"level": str(row["level"]), "domain": str(row["domain"])}
    out["refusing_writes_if_lost"] = int(row["_refusing"])
    out.update({k: int(row[k]) for k in EXPOSURE_KINDS})
    return out


def _add_worst(out: dict[str, Any], exposure: pd.DataFrame) -> None:
    for entry in out.values():
        entry["worst_domain"] = None
    if exposure.empty:
        return
    for cluster_id, rows in exposure.groupby("cluster_id", sort=False):
        entry = out.get(str(cluster_id))
        if entry is not None:
            entry["worst_domain"] = worst_domain(entry, rows)


def _add_skew(out: dict[str, Any], skew: pd.DataFrame) -> None:
    for row in skew.to_dict("records"):
        figures = {k: _number(row[k]) for k in ("min", "max", "mean", "max_over_mean")}
        levels = out[row["cluster_id"]]["skew"]
        levels.setdefault(row["level"], {})[row["metric"]] = figures


def _fleet(clusters: dict[str, dict[str, Any]]) -> dict[str, Any]:
    fleet: dict[str, Any] = {"clusters": len(clusters)}
    for name in (
        "brokers",
        "partitions",
        "replicas",
        "offline_now",
        "under_min_isr_now",
        "below_min_insync_racks_now",
        "leaders_outside_preference",
    ):
        fleet[name] = sum(int(c[name]) for c in clusters.values())
    fleet["partitions_with_spread_violations"] = sum(
        int(c["partitions_with_spread_violations"]) for c in clusters.values()
    )
    fleet["clusters_with_spread_violations"] = sum(
        1 for c in clusters.values() if c["partitions_with_spread_violations"]
    )
    for kind in EXPOSURE_KINDS:
        fleet[f"clusters_exposed_{kind}"] = sum(1 for c in clusters.values() if c[f"max_{kind}"])
    ranked = sorted(clusters, key=lambda cid: risk_key(cid, clusters[cid]))
    fleet["worst_clusters"] = ranked[:WORST_CLUSTERS]
    return fleet


def summary_from_frames(
    clusters: pd.DataFrame,
    exposure: pd.DataFrame,
    skew: pd.DataFrame,
    min_insync_replicas: int,
    max_domains: int = DEFAULT_MAX_DOMAINS,
) -> dict[str, Any]:
    """``{"min_insync_replicas", "fleet", "clusters": {cluster_id: {...}}}`` from the audit's
    ``clusters``, ``exposure`` and ``skew`` tables (as collected, or as read back from their
    Parquet files).

    Per cluster: the ``clusters`` table's counts, ``rack_levels``, ``spread_violations_by_level``
    (``{level: partition-node rows}``), ``offline_if_lost`` and ``under_min_isr_if_lost``
    (``{level: {domain: partitions}}``, every level present, non-zero domains only, the worst
    ``max_domains`` per level), ``exposed_domains`` (``{kind: {level: domains with a non-zero
    count}}``, every level present), ``max_offline_if_lost`` / ``max_under_min_isr_if_lost``
    (the worst single failure) and ``skew`` (``{level: {metric: {min, max, mean,
    max_over_mean}}}``; the number of domains per level is in the Parquet ``skew`` table).

    The size of a cluster's entry does not grow with the cluster (about 3 KB indented): a
    fleet of a thousand clusters gives a summary of a few megabytes.
    ``fleet`` totals the clusters and names the ``worst_clusters`` (see :func:`risk_key`).
    """
    entries = _cluster_entries(clusters, min_insync_replicas)
    _add_exposure(entries, exposure, max_domains)
    _add_worst(entries, exposure)
    _add_skew(entries, skew)
    return {
        "min_insync_replicas": min_insync_replicas,
        "fleet": _fleet(entries),
        "clusters": entries,
    }
