"""The audit report and the plan report: one self-contained HTML file each.

Goals
    A report an operator reads top to bottom and acts on. The audit report: the fleet, then one
    section per cluster, worst first (:mod:`~rackwise.pipeline.report.audit`). The plan report,
    titled as a plan: the plan first (:mod:`~rackwise.pipeline.report.plan`), then the audit of
    the current state it starts from; before and after from the same figures, every broker
    against the targets its goals use.

Constraints
    One file that opens the same offline, anywhere: inline CSS, charts as inline SVG drawn by
    matplotlib (static: no script, which mail previews, ticket systems and artefact stores
    with a strict content policy would not run; text kept as text), no link to anything outside
    the page (:mod:`~rackwise.pipeline.report.page`). Figures in units people use
    (:mod:`~rackwise.pipeline.report.format`). At most ``REPORT_CLUSTERS`` cluster sections.

Algorithm
    Order the clusters worst first (the audit's ``worst_clusters``), build the sections, and
    put them in a page with a contents list linking every section. One cluster: its plan and
    its audit are the top sections; a fleet: "Plan" (the fleet's figures, then a section per
    cluster) and "Audit of the current state" (the fleet, then a section per cluster).

Worked example
    ``write_report("out/report.html", summary, frames, plan_summary, plan_frames)`` for one
    cluster ``default`` writes a page titled "rackwise plan" whose contents list starts "Plan
    for default: Before and after, Goals, ..." and goes on "Audit of default: Load per
    broker, ...".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from rackwise.pipeline.report.audit import (
    EXPOSURE_ROWS,
    OVERVIEW_ROWS,
    PLAN_CHARTS,
    REPORT_CLUSTERS,
    VIOLATION_ROWS,
    cluster_section,
    fleet_section,
    worst_first,
)
from rackwise.pipeline.report.format import format_count, format_rate
from rackwise.pipeline.report.page import Anchors, Section, esc, note, page
from rackwise.pipeline.report.plan import fleet_plan_section, per_cluster, plan_cluster_section

__all__ = [
    "EXPOSURE_ROWS",
    "OVERVIEW_ROWS",
    "REPORT_CLUSTERS",
    "VIOLATION_ROWS",
    "render_report",
    "write_report",
]

AUDIT_TITLE = "rackwise audit"
PLAN_TITLE = "rackwise plan"


def _lead(summary: Mapping[str, Any], shown: int) -> str:
    fleet = summary.get("fleet", {})
    clusters = summary.get("clusters", {})
    if len(clusters) == 1:
        (cid,) = clusters
        return f"Cluster <b>{esc(cid)}</b>."
    text = (
        f"{format_count(len(clusters))} clusters, {format_count(fleet.get('brokers', 0))} brokers, "
        f"{format_count(fleet.get('partitions', 0))} partitions; the worst clusters first"
    )
    if len(clusters) > shown:
        text += f" ({shown} of them have a section here)"
    return text + "."


def _audit_sections(
    summary: Mapping[str, Any],
    frames: Mapping[str, pd.DataFrame],
    shown: Sequence[str],
    anchors: Anchors,
    *,
    nested: bool,
    plan_links: Mapping[str, Mapping[str, str]] | None = None,
) -> list[Section]:
    """The fleet (several clusters) and a section per shown cluster; ``plan_links``: per
    cluster, the anchors of the plan's charts that stand in for the audit's."""
    clusters: Mapping[str, Any] = summary.get("clusters", {})
    anchor = {cid: anchors.of("cluster", cid) for cid in shown}
    links = plan_links or {}
    sections = []
    if len(clusters) > 1:
        sections.append(fleet_section(summary, worst_first(summary), anchors, anchor))
    for cid in shown:
        title = f"Cluster {cid}" if nested or len(clusters) > 1 else f"Audit of {cid}"
        section = cluster_section(
            cid, clusters[cid], frames, anchor[cid], title, plan_links=links.get(cid)
        )
        sections.append(section)
    hidden = len(clusters) - len(shown)
    if hidden > 0:
        text = (
            f"{hidden:,} healthier clusters have no section here; their figures are in "
            "summary.json and audit/."
        )
        sections.append(Section("Other clusters", anchors.of("others"), note(text)))
    return sections


def _plan_sections(
    plan_summary: Mapping[str, Any],
    frames: tuple[Mapping[str, pd.DataFrame], Mapping[str, pd.DataFrame]],
    order: Sequence[str],
    anchors: Anchors,
) -> tuple[list[Section], dict[str, dict[str, str]]]:
    """The plan's sections, and per cluster the anchors of its chart sections that show the
    current state as "before" (see :data:`~rackwise.pipeline.report.audit.PLAN_CHARTS`)."""
    clusters = per_cluster(plan_summary)
    ids = [c for c in order if c in clusters] + sorted(c for c in clusters if c not in set(order))
    ids = [c for c in ids if isinstance(clusters[c], Mapping)]
    shown = ids[:REPORT_CLUSTERS]
    anchor = {cid: anchors.of("plan", cid) for cid in shown}
    throttle = plan_summary.get("throttle_bytes_per_s")
    sections = [
        plan_cluster_section(cid, clusters[cid], frames, anchor[cid], f"Plan for {cid}", throttle)
        for cid in shown
    ]
    heat = {
        cid: {
            kind: part.anchor
            for part in section.parts
            for kind in PLAN_CHARTS
            if part.anchor == f"{anchor[cid]}-{kind}"
        }
        for cid, section in zip(shown, sections, strict=True)
    }
    if len(ids) == 1:
        return sections, heat
    if not ids:
        return [Section("Plan", anchors.of("plan"), "<p>The plan has no cluster.</p>")], heat
    if len(ids) > len(shown):
        text = f"{len(ids) - len(shown):,} more clusters in plan_summary.json."
        sections.append(Section("Other clusters", anchors.of("plan-others"), note(text)))
    fleet = fleet_plan_section(plan_summary, ids[:OVERVIEW_ROWS], anchors, anchor)
    return [Section(fleet.title, fleet.anchor, fleet.body, sections)], heat


def render_report(
    audit_summary: Mapping[str, Any],
    audit_frames: Mapping[str, pd.DataFrame],
    plan_summary: Mapping[str, Any] | None = None,
    plan_frames: Mapping[str, pd.DataFrame] | None = None,
) -> str:
    """The report as an HTML string: the audit report, or with ``plan_summary`` the plan
    report (see the module notes and :func:`write_report`)."""
    order = worst_first(audit_summary)
    shown = order[:REPORT_CLUSTERS]
    anchors = Anchors()
    lead = _lead(audit_summary, len(shown))
    if plan_summary is None:
        sections = _audit_sections(audit_summary, audit_frames, shown, anchors, nested=False)
        return page(AUDIT_TITLE, lead, sections, depth=1 if len(order) > 1 else 2)
    frames = (audit_frames, plan_frames or {})
    plan, heat = _plan_sections(plan_summary, frames, order, anchors)
    nested = len(order) > 1
    audit = _audit_sections(
        audit_summary, audit_frames, shown, anchors, nested=nested, plan_links=heat
    )
    if nested:
        plan.append(Section("Audit of the current state", anchors.of("audit"), "", audit))
    else:
        plan += audit
    strategy = plan_summary.get("strategy")
    throttle = plan_summary.get("throttle_bytes_per_s")
    if strategy:
        lead += f" Strategy <b>{esc(strategy)}</b>"
        lead += f", moves timed at {esc(format_rate(throttle))} per broker." if throttle else "."
    lead += " The plan first, then the audit of the current state."
    return page(PLAN_TITLE, lead, plan, depth=2)


def write_report(
    path: str | Path,
    audit_summary: Mapping[str, Any],
    audit_frames: Mapping[str, pd.DataFrame],
    plan_summary: Mapping[str, Any] | None = None,
    plan_frames: Mapping[str, pd.DataFrame] | None = None,
) -> None:
    """Write the report to ``path``.

    ``audit_summary``: the audit's summary, as ``summary.json`` holds it.
    ``audit_frames``: pandas frames of the audit tables, any of ``clusters``, ``load``,
    ``exposure``, ``skew``, ``spread_by_node`` (``cluster_id, level, node, partitions``),
    ``spread_violations`` (a sample), ``brokers`` (``cluster_id, broker_id, rack``).
    ``plan_summary`` (``{"clusters": {id: {...}}}`` or ``{id: {...}}``) and ``plan_frames``:
    the plan. Of ``plan_frames``, ``domains_after`` (the audit's ``load`` columns for the
    target state, every level) is "after"; ``load_before`` / ``load_after`` (per broker and
    per log directory) stand in where it or the audit's ``load`` is missing; ``targets`` (see
    :mod:`rackwise.pipeline.report.states`) draws each domain's target range.
    """
    text = render_report(audit_summary, audit_frames, plan_summary, plan_frames)
    Path(path).write_text(text, encoding="utf-8")
