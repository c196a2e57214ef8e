"""The audit's part of a report: the fleet, then a section per cluster, worst first.

Goals
    What an operator asks of a cluster's current state, in the order they ask it: is anything
    down or at risk now (headline cards), where is the load (per broker, per log directory,
    every level's heat map), what one failure would do (the exposure table), which partitions
    are badly spread, how skewed each level is. Every chart from the audit's own ``load``
    table, so the plan's "before" is the same figure.

Constraints
    At most ``REPORT_CLUSTERS`` cluster sections (the worst; the overview table lists up to
    ``OVERVIEW_ROWS``), ``EXPOSURE_ROWS`` exposed domains and ``VIOLATION_ROWS`` sample
    violations per cluster: the rest is in ``summary.json`` and ``audit/``.

Algorithm
    The fleet: headline cards, and with more than one cluster three panels (spread violations;
    offline or under min ISR now; most under min ISR if one domain fails), one measure each,
    and the overview table linking to the cluster sections. A cluster: cards, then one
    sub-section per question above.

Worked example
    A cluster of 24 brokers in six racks with one failed directory: cards (24 brokers, 1 failed
    log directory in red, ...), "Replicas per broker" grouped by rack with the leaders inside
    and the mean dashed, "Data per log directory" with the failed one as a red band, heat maps
    for ``dc``, ``rack`` and ``broker``, then the tables.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import numpy as np
import pandas as pd

from rackwise.pipeline.report import charts, heat, load, tables
from rackwise.pipeline.report.format import (
    NOT_GIVEN,
    TIMES,
    format_bytes,
    format_count,
    format_metric,
    format_percent,
)
from rackwise.pipeline.report.page import (
    Anchors,
    Card,
    Cell,
    Section,
    cards,
    details,
    esc,
    note,
    table,
)

REPORT_CLUSTERS: Final = 20
"""Cluster sections at most (the worst clusters; the overview table lists more)."""
OVERVIEW_ROWS: Final = 50
EXPOSURE_ROWS: Final = tables.EXPOSURE_ROWS
VIOLATION_ROWS: Final = tables.VIOLATION_ROWS
METRIC_NAMES: Final = tables.METRIC_NAMES


def _count(figures: Mapping[str, Any], key: str) -> int:
    value = figures.get(key, 0)
    return int(value) if isinstance(value, int | float) and not pd.isna(value) else 0


def _risk_card(figures: Mapping[str, Any], key: str, label: str) -> Card:
    value = _count(figures, key)
    return Card(format_count(value), label, is_bad=value > 0, is_good=value == 0)


def _worst_card(worst: Mapping[str, Any] | None) -> Card:
    if not worst:
        return Card("none", "worst single domain", is_good=True)
    refusing = int(worst.get("refusing_writes_if_lost", 0))
    detail = f"{refusing:,} partitions would refuse acks=all writes"
    return Card(str(worst.get("domain", "")), "worst single domain", detail=detail, is_bad=True)


def fleet_section(
    summary: Mapping[str, Any],
    order: Sequence[str],
    anchors: Anchors,
    cluster_anchor: Mapping[str, str],
) -> Section:
    """The fleet: cards, with several clusters the panels and the overview table."""
    fleet = summary.get("fleet", {})
    clusters: Mapping[str, Any] = summary.get("clusters", {})
    body = [
        cards(
            [
                Card(format_count(_count(fleet, "clusters")), "clusters"),
                Card(format_count(_count(fleet, "brokers")), "brokers"),
                Card(format_count(_count(fleet, "partitions")), "partitions"),
                Card(format_count(_count(fleet, "replicas")), "replicas"),
                _risk_card(fleet, "offline_now", "partitions offline now"),
                _risk_card(fleet, "under_min_isr_now", "partitions under min ISR now"),
                _risk_card(fleet, "partitions_with_spread_violations", "partitions badly spread"),
            ]
        )
    ]
    if len(clusters) > 1:
        shown = list(order[:OVERVIEW_ROWS])
        body.append(_fleet_panels(clusters, shown[:REPORT_CLUSTERS]))
        body.append(_overview(clusters, shown, cluster_anchor))
        if len(order) > len(shown):
            body.append(note(f"{len(order) - len(shown):,} more clusters in summary.json."))
    return Section("Fleet", anchors.of("fleet"), "".join(body))


def _fleet_panels(clusters: Mapping[str, Any], shown: Sequence[str]) -> str:
    def values(*keys: str) -> np.ndarray:
        return np.array([sum(_count(clusters[c], k) for k in keys) for c in shown], dtype=float)

    return charts.cluster_panels(
        "The worst clusters",
        shown,
        [
            ("badly spread partitions", values("partitions_with_spread_violations"), charts.BAR),
            (
                "offline or under min ISR now",
                values("offline_now", "under_min_isr_now"),
                charts.FAILED,
            ),
            (
                "most under min ISR if one domain fails",
                values("max_under_min_isr_if_lost"),
                charts.WARNING,
            ),
        ],
        "partitions",
    )


_OVERVIEW: Final = (
    ("partitions", "partitions"),
    ("offline now", "offline_now"),
    ("under min ISR now", "under_min_isr_now"),
    ("badly spread", "partitions_with_spread_violations"),
    ("most offline if one domain fails", "max_offline_if_lost"),
    ("most under min ISR if one domain fails", "max_under_min_isr_if_lost"),
)


def _overview(clusters: Mapping[str, Any], shown: Sequence[str], anchor: Mapping[str, str]) -> str:
    rows = []
    for cid in shown:
        link = Cell(cid, href=f"#{anchor[cid]}") if cid in anchor else cid
        rows.append([link, *[_count(clusters[cid], key) for _, key in _OVERVIEW]])
    return table(rows, ["cluster", *[label for label, _ in _OVERVIEW]])


def _cluster_cards(figures: Mapping[str, Any]) -> str:
    brokers = _count(figures, "brokers")
    no_rack = _count(figures, "brokers_without_rack")
    return cards(
        [
            Card(
                format_count(brokers),
                "brokers",
                detail=f"{no_rack:,} without a rack" if no_rack else "",
            ),
            Card(format_count(_count(figures, "partitions")), "partitions"),
            Card(format_count(_count(figures, "replicas")), "replicas"),
            _risk_card(figures, "failed_log_dirs", "failed log directories"),
            _risk_card(figures, "offline_now", "offline now"),
            _risk_card(figures, "under_min_isr_now", "under min ISR now"),
            _risk_card(figures, "partitions_with_spread_violations", "partitions badly spread"),
            _risk_card(figures, "max_offline_if_lost", "most offline if one domain fails"),
            _risk_card(
                figures, "max_under_min_isr_if_lost", "most under min ISR if one domain fails"
            ),
            _worst_card(figures.get("worst_domain")),
            _risk_card(figures, "below_min_insync_racks_now", "below min.insync.racks now"),
            _risk_card(figures, "leaders_outside_preference", "leaders outside their preference"),
        ]
    )


def broker_charts(rows: pd.DataFrame) -> str:
    """Replicas (leaders inside) and data per broker, grouped by rack, means dashed."""
    ids = [str(b) for b in rows["broker_id"]]
    names = [f"broker {b} ({r})" for b, r in zip(ids, rows["rack"], strict=True)]
    replicas, leaders = load.column(rows, "replicas"), load.column(rows, "leaders")
    data = load.column(rows, "bytes")
    common: dict[str, Any] = {
        "domains": names,
        "ticks": ids,
        "axis_label": "broker id, grouped by rack",
        "groups": list(rows["rack"]),
    }
    first = charts.DomainChart(
        title="Replicas per broker",
        metric="replicas",
        series=[charts.Series("replicas", replicas, charts.BAR)],
        overlay=charts.Series("leaders (inside)", leaders, charts.INNER),
        mean=float(np.nanmean(replicas)) if len(rows) else None,
        mean_name="mean replicas per broker",
        **common,
    )
    second = charts.DomainChart(
        title="Data per broker",
        metric="bytes",
        series=[charts.Series("data", data, charts.BAR)],
        mean=float(np.nanmean(data)) if len(rows) else None,
        mean_name="mean data per broker",
        **common,
    )
    return charts.domain_chart(first) + charts.domain_chart(second)


def _broker_table(rows: pd.DataFrame, dirs: pd.DataFrame) -> str:
    failed_dirs = dirs[load.failed(dirs)] if not dirs.empty else dirs
    per_broker = failed_dirs.groupby("broker_id").size().to_dict() if not failed_dirs.empty else {}
    out = []
    for r in rows.itertuples():
        out.append(
            [
                str(r.broker_id),
                str(r.rack),
                format_count(r.replicas),
                format_count(r.leaders),
                format_bytes(getattr(r, "bytes", None)),
                format_bytes(getattr(r, "total_bytes", None)),
                format_percent(getattr(r, "utilisation", None)),
                format_count(per_broker.get(r.broker_id, 0)),
            ]
        )
    header = [
        "broker",
        "rack",
        "replicas",
        "leaders",
        "data",
        "capacity",
        "used",
        "failed log dirs",
    ]
    return details("Figures per broker", table(out, header, names=2))


def dir_chart(rows: pd.DataFrame, *, title: str = "Data per log directory") -> str:
    """Data per log directory grouped by broker, failed ones a red band, the live mean."""
    failed = load.failed(rows)
    data = load.column(rows, "bytes")
    ticks = [f"{b}:{p}" for b, p in zip(rows["broker_id"], rows["log_dir"], strict=True)]
    chart = charts.DomainChart(
        title=title,
        metric="bytes",
        domains=[f"log directory {t}" for t in ticks],
        ticks=ticks,
        axis_label="log directory (broker:path)",
        series=[charts.Series("data", data, charts.BAR)],
        groups=[str(b) for b in rows["broker_id"]],
        group_names=False,
        failed=failed,
        mean=load.live_mean(data, failed),
        mean_name="mean over live directories",
        caption="A failed log directory (red band) serves nothing; the size of what it held "
        "is not known.",
    )
    return charts.domain_chart(chart)


def _dir_table(rows: pd.DataFrame) -> str:
    failed = load.failed(rows)
    out = [
        [
            str(r.broker_id),
            str(r.log_dir),
            Cell("failed", "bad") if failed[i] else "live",
            format_count(r.replicas),
            format_bytes(r.bytes) if not failed[i] else "not known",
            format_bytes(getattr(r, "total_bytes", None)),
            format_percent(getattr(r, "utilisation", None)) if not failed[i] else NOT_GIVEN,
        ]
        for i, r in enumerate(rows.itertuples())
    ]
    header = ["broker", "path", "state", "replicas", "data", "capacity", "used"]
    return details("Figures per log directory", table(out, header, names=3, bad_rows=list(failed)))


def heat_map(
    rows: pd.DataFrame, level: str, states: Sequence[tuple[str, pd.DataFrame]] = ()
) -> str:
    """One level's domains over the level's mean, a row per measure; with ``states`` (name,
    rows in the same order), a block of rows per state (before, after) on one colour scale."""
    blocks = list(states) or [("", rows)]
    labels, ratio_rows, texts = [], [], []
    for state, frame in blocks:
        skip = load.failed(frame) if level == load.LOG_DIR else None
        for metric in load.METRICS:
            values = load.column(frame, metric)
            if np.isnan(values).all():
                continue
            name = METRIC_NAMES[metric]
            labels.append(f"{state}: {name}" if state else name)
            ratio_rows.append(load.ratios(values, skip=skip))
            texts.append([format_metric(metric, v) for v in values])
    ticks = _ticks(rows, level)
    chart = heat.HeatMap(
        title=f"Heat map of the {load.level_name(level)} level",
        domains=[f"{load.level_name(level)} {t}" for t in ticks],
        ticks=ticks,
        rows=labels,
        ratios=np.array(ratio_rows),
        values=texts,
        axis_label=_axis(level),
        split=len(labels) // 2 if len(blocks) == 2 else 0,
    )
    return heat.heat_map(chart)


def _ticks(rows: pd.DataFrame, level: str) -> list[str]:
    if level == load.LOG_DIR:
        return [f"{b}:{p}" for b, p in zip(rows["broker_id"], rows["log_dir"], strict=True)]
    if level == load.BROKER:
        return [str(b) for b in rows["broker_id"]]
    return [str(d) for d in rows["domain"]]


def _axis(level: str) -> str:
    if level == load.BROKER:
        return "broker id, grouped by rack"
    if level == load.LOG_DIR:
        return "log directory (broker:path)"
    return level


HEAT_INTRO: Final = (
    f"<p>Each cell is a domain's figure over its level's mean: 1{TIMES} is the mean, red above, "
    "blue below; hover over a column for the figures.</p>"
)


PLAN_CHARTS: Final = {
    "counts": "replicas and leaders per broker",
    "data": "data per broker",
    "dirs": "data per log directory",
    "heat": "heat maps",
}
"""The plan's chart sections that show the current state as "before" (the keys of a
cluster's ``plan_links``), and their names."""


def _see(links: Mapping[str, str], kinds: Sequence[str]) -> str:
    """A pointer to the plan's charts of ``kinds``, or "" when the plan has not all of them."""
    if not all(k in links for k in kinds):
        return ""
    names = " and ".join(f'<a href="#{esc(links[k])}">{esc(PLAN_CHARTS[k])}</a>' for k in kinds)
    return f'<p>The current state is the "before" of the plan\'s charts: {names}.</p>'


def _load_parts(
    data: pd.DataFrame,
    levels: Sequence[str],
    rack_of: Mapping[int, str],
    anchor: str,
    plan_links: Mapping[str, str],
) -> list[Section]:
    parts = []
    brokers, dirs = load.broker_rows(data, rack_of), load.dir_rows(data)
    if not brokers.empty:
        see = _see(plan_links, ("counts", "data"))
        body = (see or broker_charts(brokers)) + _broker_table(brokers, dirs)
        parts.append(Section("Load per broker", f"{anchor}-brokers", body))
    if not dirs.empty:
        see = _see(plan_links, ("dirs",))
        body = (see or dir_chart(dirs)) + _dir_table(dirs)
        parts.append(Section("Load per log directory", f"{anchor}-dirs", body))
    see = _see(plan_links, ("heat",))
    if see:
        body = see
    else:
        maps = [
            heat_map(load.level_rows(data, lv, rack_of), lv)
            for lv in [*levels, load.BROKER]
            if (data["level"] == lv).any()
        ]
        body = HEAT_INTRO + "".join(maps)
    parts.append(Section("Heat maps: each domain against its level's mean", f"{anchor}-heat", body))
    return parts


def cluster_section(
    cluster_id: str,
    figures: Mapping[str, Any],
    frames: Mapping[str, pd.DataFrame],
    anchor: str,
    title: str,
    *,
    plan_links: Mapping[str, str] | None = None,
) -> Section:
    """One cluster's audit (see the module notes). ``plan_links``: the anchors of the plan's
    chart sections (keys of ``PLAN_CHARTS``), which show this state as "before": links there
    stand in for the same charts here."""
    the = load.of_cluster
    data = the(frames.get("load"), cluster_id)
    levels = load.rack_levels(figures, data)
    rack_of = load.racks(the(frames.get("brokers"), cluster_id))
    links = plan_links or {}
    parts = _load_parts(data, levels, rack_of, anchor, links) if not data.empty else []
    min_isr = figures.get("min_insync_replicas", "")
    exposure = tables.exposure_table(the(frames.get("exposure"), cluster_id))
    spread = tables.spread_tables(
        the(frames.get("spread_by_node"), cluster_id),
        the(frames.get("spread_violations"), cluster_id),
    )
    skew = tables.skew_table(the(frames.get("skew"), cluster_id), levels)
    parts += [
        Section(
            f"If one domain fails (min.insync.replicas = {min_isr})", f"{anchor}-exposure", exposure
        ),
        Section("Badly spread partitions", f"{anchor}-spread", spread),
        Section("Skew per level", f"{anchor}-skew", skew),
    ]
    return Section(title, anchor, _cluster_cards(figures), parts, css_class="cluster")


def worst_first(summary: Mapping[str, Any]) -> list[str]:
    """Every cluster of the summary, the fleet's worst first, then by id."""
    clusters: Mapping[str, Any] = summary.get("clusters", {})
    worst = [c for c in summary.get("fleet", {}).get("worst_clusters", []) if c in clusters]
    return worst + sorted(c for c in clusters if c not in set(worst))
