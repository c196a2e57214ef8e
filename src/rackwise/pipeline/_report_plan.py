"""The report's plan section: per cluster, what the plan moves, its goals, load before/after.

The plan summary is read generously (it is the plan job's to shape): headline cards for the
figures Cruise Control users look for first when present (with the lower bound beside the
moves), the lower bound's explanation, ``goals`` (a list of objects) as a table with each
status coloured, every other scalar figure in a table; the ``load_before`` / ``load_after``
frames (per broker and per log dir) as before/after charts (bars side by side, or two sorted
profiles for a large cluster), and ``domains_after`` (the audit's load columns for the target
state, every level) as the heat map after the plan.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import pandas as pd

from rackwise.pipeline import _report_charts as charts
from rackwise.pipeline.report import REPORT_CLUSTERS, cards, esc, table

_GIB: Final = float(2**30)
_HEADLINE: Final = (
    ("replica moves", "replica_moves"),
    ("leader moves", "leader_moves"),
    ("intra-broker moves", "intra_broker_moves"),
    ("partitions changed", "partitions_changed"),
)


def _per_cluster(plan_summary: Mapping[str, Any]) -> Mapping[str, Any]:
    inner = plan_summary.get("clusters")
    return inner if isinstance(inner, Mapping) else plan_summary


def _before_after(entry: Mapping[str, Any], key: str) -> tuple[object, object] | None:
    value = entry.get(key)
    if isinstance(value, Mapping) and "before" in value and "after" in value:
        return value["before"], value["after"]
    return None


def _headline(entry: Mapping[str, Any]) -> str:
    figures: list[tuple[str, object, bool]] = [
        (label, entry[key], False) for label, key in _HEADLINE if key in entry
    ]
    bound = entry.get("lower_bound")
    if isinstance(bound, Mapping) and "replica_moves" in bound:
        figures.append(("lower bound on replica moves", bound["replica_moves"], False))
    if "data_to_move_bytes" in entry and entry["data_to_move_bytes"] is not None:
        figures.append(("GiB to move", round(float(entry["data_to_move_bytes"]) / _GIB, 2), False))
    for label, key in (
        ("balance score", "balancedness_score"),
        ("spread violations", "spread_violations"),
    ):
        pair = _before_after(entry, key)
        if pair is not None:
            figures.append((f"{label} before → after", f"{pair[0]} → {pair[1]}", False))
    seconds = entry.get("move_time", {})
    if isinstance(seconds, Mapping) and seconds.get("seconds") is not None:
        figures.append(
            ("move time at the throttle (s)", round(float(seconds["seconds"]), 1), False)
        )
    return cards(figures)


def _scalars(entry: Mapping[str, Any]) -> list[tuple[str, object]]:
    """Every scalar figure, nested objects flattened one level (``lower_bound.bytes``)."""
    out: list[tuple[str, object]] = []
    for key, value in sorted(entry.items()):
        if isinstance(value, Mapping):
            for sub, inner in sorted(value.items()):
                if not isinstance(inner, Mapping | list):
                    out.append((f"{key}.{sub}", inner))
        elif not isinstance(value, list):
            out.append((key, value))
    return out


_STATUS_COLOUR: Final = {"VIOLATED": "#c0392b", "FIXED": "#27ae60", "NO-ACTION": "#777"}


def _goals(goals: object) -> str:
    """The goals in priority order, Cruise Control's way: status (coloured), violations
    before and after, the moves each made and its time."""
    if not isinstance(goals, list) or not goals or not all(isinstance(g, Mapping) for g in goals):
        return ""
    columns: list[str] = []
    for goal in goals:
        columns += [k for k in goal if k not in columns]
    head = "".join(f"<th>{esc(c)}</th>" for c in columns)
    body = []
    for goal in goals:
        cells = []
        for c in columns:
            value = goal.get(c, "")
            if c == "status":
                colour = _STATUS_COLOUR.get(str(value), "#222")
                cells.append(f'<td class="name" style="color:{colour}"><b>{esc(value)}</b></td>')
            elif isinstance(value, str):
                cells.append(f'<td class="name">{esc(value)}</td>')
            else:
                cells.append(_cell(value))
        body.append(f"<tr>{''.join(cells)}</tr>")
    return f"<h3>Goals, in priority order</h3><table><tr>{head}</tr>{''.join(body)}</table>"


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"<td>{esc(f'{value:,.3f}')}</td>"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"<td>{esc(f'{value:,}')}</td>"
    return f"<td>{esc(value)}</td>"


def _domains(frame: pd.DataFrame) -> pd.DataFrame:
    if "domain" in frame:
        return frame
    broker = frame["broker_id"].astype("Int64").astype(str)
    if "log_dir" in frame:
        domain = broker.where(
            frame["level"] != "log_dir", broker + ":" + frame["log_dir"].astype(str)
        )
    else:
        domain = broker
    return frame.assign(domain=domain)


_LEGEND: Final = (
    '<p class="legend"><span style="color:#999999">&#9632;</span>&nbsp;before '
    f'<span style="color:{charts.PALETTE[2]}">&#9632;</span>&nbsp;after '
    "(dashed: the mean after)</p>"
)


def _heat_after(cluster_id: str, frames: Mapping[str, pd.DataFrame], levels: Sequence[str]) -> str:
    """The heat map of every level after the plan (``domains_after``: the audit's load
    columns for the target state)."""
    domains = frames.get("domains_after")
    if domains is None or domains.empty or "cluster_id" not in domains:
        return ""
    mine = domains[domains["cluster_id"] == cluster_id]
    if mine.empty:
        return ""
    order = [*levels, *sorted(set(mine["level"]) - {*levels, "broker", "log_dir"}), "broker"]
    return "<h3>Heat map after the plan: each domain over its level's mean</h3>" + (
        charts.heat_map(mine, order)
    )


def _load_charts(cluster_id: str, frames: Mapping[str, pd.DataFrame]) -> str:
    before, after = frames.get("load_before"), frames.get("load_after")
    if before is None or after is None or before.empty or "cluster_id" not in before:
        return ""
    before = _domains(before[before["cluster_id"] == cluster_id])
    after = _domains(after[after["cluster_id"] == cluster_id])
    out = [_LEGEND]
    for level, metric, what in (
        ("broker", "replicas", "broker"),
        ("broker", "bytes", "broker"),
        ("log_dir", "bytes", "log directory"),
    ):
        b, a = before[before["level"] == level], after[after["level"] == level]
        if not b.empty and metric in b and metric in a:
            out.append(f"<h3>{esc(metric)} per {esc(what)}, before and after</h3>")
            out.append(charts.before_after_chart(b, a, metric, what))
    return "".join(out)


def _levels(frames: Mapping[str, pd.DataFrame], cluster_id: str) -> list[str]:
    domains = frames.get("domains_after")
    if domains is None or domains.empty or "level" not in domains:
        return []
    mine = domains[domains["cluster_id"] == cluster_id]
    rank = {"dc": 0, "rack": 1}
    names = sorted(set(mine["level"]) - {"broker", "log_dir"}, key=lambda n: (rank.get(n, 2), n))
    return names


def _cluster(cluster_id: str, entry: Mapping[str, Any], frames: Mapping[str, pd.DataFrame]) -> str:
    out = [f'<h2 id="plan-{esc(cluster_id)}">Plan for {esc(cluster_id)}</h2>']
    if entry.get("error"):
        out.append(f"<p>Not planned: {esc(entry['error'])}</p>")
    out.append(_headline(entry))
    bound = entry.get("lower_bound")
    if isinstance(bound, Mapping) and bound.get("explanation"):
        out.append(f'<p class="note">Lower bound: {esc(bound["explanation"])}</p>')
    out.append(_goals(entry.get("goals")))
    out.append(_load_charts(cluster_id, frames))
    out.append(_heat_after(cluster_id, frames, _levels(frames, cluster_id)))
    out.append("<h3>All figures</h3>" + table(_scalars(entry), ("figure", "value"), names=1))
    return "".join(out)


def plan_section(
    plan_summary: Mapping[str, Any], plan_frames: Mapping[str, pd.DataFrame], order: Sequence[str]
) -> str:
    """The plan section, clusters in ``order`` first (the audit's worst first)."""
    clusters = _per_cluster(plan_summary)
    ids = [c for c in order if c in clusters] + sorted(c for c in clusters if c not in set(order))
    ids = [c for c in ids if isinstance(clusters[c], Mapping)]
    parts = ["<h2>Plan</h2>"]
    if not ids:
        parts.append("<p>The plan has no cluster.</p>")
    for cluster_id in ids[:REPORT_CLUSTERS]:
        parts.append(_cluster(cluster_id, clusters[cluster_id], plan_frames))
    if len(ids) > REPORT_CLUSTERS:
        parts.append(
            f'<p class="note">{len(ids) - REPORT_CLUSTERS} more clusters in plan_summary.json.</p>'
        )
    return "".join(parts)
