"""The audit (and plan) report: one self-contained HTML file.

Everything is inline: the style sheet, and the charts as SVG (``_report_charts``; hover over a
bar or a cell for its figures); the file references nothing (no script, no font, no link, no
image file), so it opens the same offline, attached to a ticket or from an artefact store.
Every piece of text that comes from the input (cluster ids, topics, rack paths, log dirs) is
escaped.

Layout: the fleet first (headline figures; with more than one cluster, the worst clusters in a
chart and a table), then one section per cluster, worst first, at most ``REPORT_CLUSTERS`` of
them: headline figures, load per broker and per log dir, a heat map of every level's load over
its mean, the exposure table (the domains whose failure hurts), the spread violations, the skew
table; then, when a plan is given, its section: per cluster the moves, the goals and the load
before and after.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import pandas as pd

from rackwise.pipeline import _report_charts as charts

REPORT_CLUSTERS: Final = 20
"""Cluster sections at most (the worst clusters; the overview table lists more)."""
OVERVIEW_ROWS: Final = 50
EXPOSURE_ROWS: Final = 30
VIOLATION_ROWS: Final = 20
_CSS: Final = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;max-width:1400px}
h1{font-size:1.5em}h2{font-size:1.2em;border-bottom:2px solid #ddd;padding-top:1em}
h3{font-size:1em;margin-bottom:.3em}
.cards{display:flex;flex-wrap:wrap;gap:.5em;margin:.5em 0}
.card{border:1px solid #ddd;border-radius:6px;padding:.4em .8em;min-width:8em}
.card b{display:block;font-size:1.3em}.card.bad b{color:#c0392b}.card.ok b{color:#27ae60}
table{border-collapse:collapse;font-size:.85em;margin:.4em 0}
td,th{border:1px solid #ddd;padding:.15em .5em;text-align:right}
th{background:#f4f4f4}td.name,th.name{text-align:left}
tr.bad td{background:#fdecea}.note{color:#777;font-size:.8em}
svg{display:block;margin:.2em 0;font-family:system-ui,sans-serif}
.legend{font-size:.8em;margin:.2em 0}
.heat svg{display:inline-block;vertical-align:top;margin-right:1.5em}
"""


def esc(value: object) -> str:
    """``value`` as HTML text."""
    return html.escape(str(value), quote=True)


def _number(value: object) -> str:
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 1000 else f"{value:,.0f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def cards(figures: Iterable[tuple[str, object, bool]]) -> str:
    """Headline figures: (label, value, is_bad)."""
    items = []
    for label, value, bad in figures:
        tone = "bad" if bad else "ok"
        items.append(f'<div class="card {tone}"><b>{esc(_number(value))}</b>{esc(label)}</div>')
    return f'<div class="cards">{"".join(items)}</div>'


def table(rows: Iterable[Sequence[object]], header: Sequence[str], *, names: int = 1) -> str:
    """An HTML table; the first ``names`` columns are text (left aligned), rows whose last
    cell is truthy-and-marked are not special: callers pass plain values."""
    head = "".join(
        f'<th class="name">{esc(h)}</th>' if i < names else f"<th>{esc(h)}</th>"
        for i, h in enumerate(header)
    )
    body = []
    for row in rows:
        cells = "".join(
            f'<td class="name">{esc(v)}</td>' if i < names else f"<td>{esc(_number(v))}</td>"
            for i, v in enumerate(row)
        )
        body.append(f"<tr>{cells}</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def _of(frame: pd.DataFrame | None, cluster_id: str) -> pd.DataFrame:
    if frame is None or frame.empty or "cluster_id" not in frame:
        return pd.DataFrame()
    return frame[frame["cluster_id"] == cluster_id]


def _fleet_section(summary: Mapping[str, Any], frames: Mapping[str, pd.DataFrame]) -> str:
    fleet = summary.get("fleet", {})
    out = ["<h2>Fleet</h2>"]
    out.append(
        cards(
            [
                ("clusters", fleet.get("clusters", 0), False),
                ("brokers", fleet.get("brokers", 0), False),
                ("partitions", fleet.get("partitions", 0), False),
                ("replicas", fleet.get("replicas", 0), False),
                (
                    "partitions offline now",
                    fleet.get("offline_now", 0),
                    bool(fleet.get("offline_now")),
                ),
                (
                    "under min ISR now",
                    fleet.get("under_min_isr_now", 0),
                    bool(fleet.get("under_min_isr_now")),
                ),
                (
                    "partitions with spread violations",
                    fleet.get("partitions_with_spread_violations", 0),
                    bool(fleet.get("partitions_with_spread_violations")),
                ),
            ]
        )
    )
    clusters = summary.get("clusters", {})
    if len(clusters) > 1:
        worst = list(fleet.get("worst_clusters", []))
        order = worst + sorted(c for c in clusters if c not in set(worst))
        shown = order[:OVERVIEW_ROWS]
        rows = [_overview_row(cid, clusters[cid]) for cid in shown]
        frame = pd.DataFrame(rows, columns=_OVERVIEW_HEADER)
        out.append(charts.fleet_chart(frame.head(REPORT_CLUSTERS)))
        out.append(table(rows, _OVERVIEW_HEADER))
        if len(order) > len(shown):
            out.append(
                f'<p class="note">{len(order) - len(shown)} more clusters in summary.json.</p>'
            )
    return "".join(out)


_OVERVIEW_HEADER: Final = (
    "cluster_id",
    "partitions",
    "offline_now",
    "under_min_isr_now",
    "partitions_with_spread_violations",
    "max_offline_if_lost",
    "max_under_min_isr_if_lost",
)


def _overview_row(cluster_id: str, figures: Mapping[str, Any]) -> list[object]:
    return [cluster_id, *[figures.get(k, 0) for k in _OVERVIEW_HEADER[1:]]]


def _cluster_cards(figures: Mapping[str, Any]) -> str:
    return cards(
        [
            ("brokers", figures.get("brokers", 0), False),
            ("partitions", figures.get("partitions", 0), False),
            ("offline now", figures.get("offline_now", 0), bool(figures.get("offline_now"))),
            (
                "under min ISR now",
                figures.get("under_min_isr_now", 0),
                bool(figures.get("under_min_isr_now")),
            ),
            (
                "partitions with spread violations",
                figures.get("partitions_with_spread_violations", 0),
                bool(figures.get("partitions_with_spread_violations")),
            ),
            (
                "most offline by one failure",
                figures.get("max_offline_if_lost", 0),
                bool(figures.get("max_offline_if_lost")),
            ),
            (
                "most under min ISR by one failure",
                figures.get("max_under_min_isr_if_lost", 0),
                bool(figures.get("max_under_min_isr_if_lost")),
            ),
        ]
    )


def _load_charts(load: pd.DataFrame, brokers: pd.DataFrame, levels: Sequence[str]) -> str:
    out = []
    racks = {
        int(b): r
        for b, r in zip(brokers.get("broker_id", []), brokers.get("rack", []), strict=True)
    }
    per_broker = load[load["level"] == "broker"]
    if not per_broker.empty:
        chart, hidden = charts.broker_load_charts(per_broker, racks)
        out.append("<h3>Load per broker</h3>" + chart + _hidden_note(hidden, "brokers"))
    per_dir = load[load["level"] == "log_dir"]
    if not per_dir.empty:
        chart, hidden = charts.log_dir_chart(per_dir)
        out.append("<h3>Load per log directory</h3>" + chart + _hidden_note(hidden, "log dirs"))
    out.append("<h3>Heat map: each domain over its level's mean</h3>")
    out.append(charts.heat_map(load, [*levels, "broker"]))
    return "".join(out)


def _hidden_note(hidden: int, what: str) -> str:
    return f'<p class="note">{hidden} lighter {what} not shown.</p>' if hidden else ""


def _exposure_table(exposure: pd.DataFrame) -> str:
    hit = exposure[(exposure["offline_if_lost"] > 0) | (exposure["under_min_isr_if_lost"] > 0)]
    if hit.empty:
        return (
            "<p>No single failure of a data centre, rack, broker or log directory takes a "
            "partition offline or under min ISR.</p>"
        )
    hit = hit.sort_values(
        ["offline_if_lost", "under_min_isr_if_lost", "domain"], ascending=[False, False, True]
    )
    rows = [
        (r.level, r.domain, r.partitions, r.offline_if_lost, r.under_min_isr_if_lost)
        for r in hit.head(EXPOSURE_ROWS).itertuples()
    ]
    header = ("level", "domain if lost", "partitions in it", "go offline", "fall under min ISR")
    more = len(hit) - len(rows)
    note = f'<p class="note">{more} more exposed domains in audit/exposure.</p>' if more > 0 else ""
    return table(rows, header, names=2) + note


def _spread_tables(by_node: pd.DataFrame, sample: pd.DataFrame) -> str:
    if by_node.empty:
        return "<p>Every partition is spread as evenly as the topology allows.</p>"
    nodes = by_node.sort_values(["partitions", "node"], ascending=[False, True])
    rows = [(r.level, r.node, r.partitions) for r in nodes.head(EXPOSURE_ROWS).itertuples()]
    out = [table(rows, ("level", "node", "partitions violating there"), names=2)]
    if not sample.empty:
        some = [
            (r.topic, r.partition, r.level, r.node, r.max_child_replicas, r.min_free_child_replicas)
            for r in sample.head(VIOLATION_ROWS).itertuples()
        ]
        header = (
            "topic",
            "partition",
            "level",
            "node",
            "most in a child",
            "fewest in a free child",
        )
        out.append("<p>Some of them:</p>" + table(some, header, names=1))
    return "".join(out)


def _skew_table(skew: pd.DataFrame, levels: Sequence[str]) -> str:
    if skew.empty:
        return ""
    order = {lv: i for i, lv in enumerate([*levels, "broker", "log_dir"])}
    ranked = skew.assign(rank=skew["level"].map(order).fillna(99)).sort_values(["rank", "metric"])
    rows = [
        (r.level, r.metric, r.domains, r.min, r.max, r.mean, r.max_over_mean)
        for r in ranked.itertuples()
    ]
    return table(rows, ("level", "metric", "domains", "min", "max", "mean", "max / mean"), names=2)


def _cluster_section(
    cluster_id: str, figures: Mapping[str, Any], frames: Mapping[str, pd.DataFrame]
) -> str:
    levels = list(figures.get("rack_levels", []))
    load = _of(frames.get("load"), cluster_id)
    out = [f'<h2 id="{esc(cluster_id)}">Cluster {esc(cluster_id)}</h2>', _cluster_cards(figures)]
    if not load.empty:
        out.append(_load_charts(load, _of(frames.get("brokers"), cluster_id), levels))
    exposure = _of(frames.get("exposure"), cluster_id)
    min_isr = figures.get("min_insync_replicas", "")
    out.append(f"<h3>Exposure: if one domain fails (min.insync.replicas = {esc(min_isr)})</h3>")
    out.append(_exposure_table(exposure) if not exposure.empty else "<p>No domain.</p>")
    out.append("<h3>Spread violations</h3>")
    out.append(
        _spread_tables(
            _of(frames.get("spread_by_node"), cluster_id),
            _of(frames.get("spread_violations"), cluster_id),
        )
    )
    out.append("<h3>Skew</h3>" + _skew_table(_of(frames.get("skew"), cluster_id), levels))
    return "".join(out)


def render_report(
    audit_summary: Mapping[str, Any],
    audit_frames: Mapping[str, pd.DataFrame],
    plan_summary: Mapping[str, Any] | None = None,
    plan_frames: Mapping[str, pd.DataFrame] | None = None,
) -> str:
    """The report as an HTML string (see the module notes)."""
    from rackwise.pipeline._report_plan import plan_section  # noqa: PLC0415  (cycle-free split)

    clusters: Mapping[str, Any] = audit_summary.get("clusters", {})
    worst = [c for c in audit_summary.get("fleet", {}).get("worst_clusters", []) if c in clusters]
    worst += sorted(c for c in clusters if c not in set(worst))
    parts = ["<h1>rackwise audit</h1>", _fleet_section(audit_summary, audit_frames)]
    shown = worst[:REPORT_CLUSTERS]
    for cluster_id in shown:
        parts.append(_cluster_section(cluster_id, clusters[cluster_id], audit_frames))
    if len(worst) > len(shown):
        parts.append(
            f'<p class="note">{len(worst) - len(shown)} healthier clusters have no section here; '
            "their figures are in summary.json and audit/.</p>"
        )
    if plan_summary is not None:
        parts.append(plan_section(plan_summary, plan_frames or {}, worst))
    body = "\n".join(parts)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>rackwise audit</title><style>{_CSS}</style></head><body>\n{body}\n</body></html>\n"
    )


def write_report(
    path: str | Path,
    audit_summary: Mapping[str, Any],
    audit_frames: Mapping[str, pd.DataFrame],
    plan_summary: Mapping[str, Any] | None = None,
    plan_frames: Mapping[str, pd.DataFrame] | None = None,
) -> None:
    """Write the report to ``path``.

    ``audit_summary``: what :func:`rackwise.pipeline.audit.summarize` returns.
    ``audit_frames``: pandas frames of the audit tables, any of ``clusters``, ``load``,
    ``exposure``, ``skew``, ``spread_by_node`` (``cluster_id, level, node, partitions``),
    ``spread_violations`` (a sample), ``brokers`` (``cluster_id, broker_id, rack``).
    ``plan_summary`` (``{"clusters": {id: {...}}}`` or ``{id: {...}}``) and ``plan_frames``
    (``load_before`` / ``load_after``, the audit's ``load`` columns): the plan section.
    """
    text = render_report(audit_summary, audit_frames, plan_summary, plan_frames)
    Path(path).write_text(text, encoding="utf-8")
