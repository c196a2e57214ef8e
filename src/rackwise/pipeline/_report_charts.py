"""The report's charts, drawn as inline SVG: bar charts and heat maps.

Hand-written SVG rather than rendered images: a fleet report draws a hundred charts, which
take milliseconds this way (a plotting library took most of a second each), stay sharp at any
zoom, and carry a tooltip (``<title>``) with the exact figures on every bar and cell. No
external reference of any kind (inline SVG in HTML needs no namespace declaration). Every
label from the input is escaped.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import pandas as pd

MAX_BARS: Final = 120
"""Bars per chart at most (the heaviest domains are kept; a note under the chart says so)."""
MAX_HEAT_DOMAINS: Final = 60
HEAT_METRICS: Final = ("replicas", "leaders", "bytes", "utilisation")
PALETTE: Final = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#bcbd22",
    "#7f7f7f",
    "#aec7e8",
)
FAILED: Final = "#c0392b"
_GIB: Final = float(2**30)
_BAR: Final = 12  # px per bar
_PLOT_H: Final = 120
_LEFT: Final = 56
_LABELS: Final = 70  # px under the plot for rotated labels


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _short(text: str, width: int = 16) -> str:
    return text if len(text) <= width else "…" + text[-(width - 1) :]


def _fmt(value: float) -> str:
    if abs(value) >= 100 or float(value).is_integer():
        return f"{value:,.0f}"
    return f"{value:,.2f}"


@dataclass(frozen=True)
class Bar:
    """One bar: its label, height, colour, tooltip, an optional darker inner bar, and whether
    to shade its whole column (a failed log dir shows even when it holds nothing)."""

    label: str
    value: float
    colour: str
    tip: str
    inner: float | None = None
    shaded: bool = False


def bar_chart(bars: Sequence[Bar], unit: str, *, mean: float | None = None) -> str:
    """A bar chart: labels under the bars, the mean dashed, a tooltip on each bar."""
    top = max([b.value for b in bars] + [mean or 0.0, 1e-9])
    width = _LEFT + _BAR * max(len(bars), 10) + 10
    height = _PLOT_H + _LABELS + 10
    parts = [f'<svg role="img" width="{width}" height="{height}" viewBox="0 0 {width} {height}">']
    parts.append(_axis(top, unit))
    for i, bar in enumerate(bars):
        x = _LEFT + i * _BAR
        h = _PLOT_H * bar.value / top
        if bar.shaded:
            parts.append(
                f'<rect x="{x}" y="10" width="{_BAR}" height="{_PLOT_H}" fill="{bar.colour}" '
                f'opacity="0.15"><title>{_e(bar.tip)}</title></rect>'
            )
        parts.append(
            f'<rect x="{x + 1}" y="{10 + _PLOT_H - h:.1f}" width="{_BAR - 2}" height="{h:.1f}" '
            f'fill="{bar.colour}"><title>{_e(bar.tip)}</title></rect>'
        )
        if bar.inner:
            hi = _PLOT_H * bar.inner / top
            parts.append(
                f'<rect x="{x + 3}" y="{10 + _PLOT_H - hi:.1f}" width="{_BAR - 6}" '
                f'height="{hi:.1f}" fill="#000" opacity="0.35"/>'
            )
        parts.append(_label(x + _BAR / 2, bar.label))
    if mean is not None:
        y = 10 + _PLOT_H - _PLOT_H * mean / top
        parts.append(
            f'<line x1="{_LEFT}" x2="{width - 10}" y1="{y:.1f}" y2="{y:.1f}" stroke="#555" '
            f'stroke-dasharray="4 3"><title>mean {_e(_fmt(mean))}</title></line>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _axis(top: float, unit: str) -> str:
    lines = [
        f'<line x1="{_LEFT}" x2="{_LEFT}" y1="10" y2="{10 + _PLOT_H}" stroke="#999"/>',
        f'<text x="4" y="{10 + _PLOT_H / 2}" font-size="10" transform="rotate(-90 8 '
        f'{10 + _PLOT_H / 2})" text-anchor="middle">{_e(unit)}</text>',
    ]
    for fraction in (0.0, 0.5, 1.0):
        y = 10 + _PLOT_H * (1 - fraction)
        lines.append(
            f'<text x="{_LEFT - 3}" y="{y + 3:.1f}" font-size="9" text-anchor="end">'
            f"{_e(_fmt(top * fraction))}</text>"
        )
    return "".join(lines)


def _label(x: float, text: str) -> str:
    y = 10 + _PLOT_H + 4
    return (
        f'<text x="{x:.1f}" y="{y}" font-size="8" text-anchor="end" '
        f'transform="rotate(-90 {x:.1f} {y})" dy="3">{_e(_short(text))}</text>'
    )


def _heaviest(frame: pd.DataFrame, by: str, limit: int) -> tuple[pd.DataFrame, int]:
    if len(frame) <= limit:
        return frame, 0
    return frame.nlargest(limit, by), len(frame) - limit


def broker_load_charts(brokers: pd.DataFrame, racks: dict[int, str | None]) -> tuple[str, int]:
    """Replicas (leaders darker inside) and GiB per broker, coloured by rack, sorted by rack;
    returns the charts and how many brokers were left out."""
    shown, hidden = _heaviest(brokers, "replicas", MAX_BARS)
    shown = shown.assign(rack=[racks.get(int(b)) or "(no rack)" for b in shown["broker_id"]])
    shown = shown.sort_values(["rack", "broker_id"])
    names = sorted(set(shown["rack"]))
    colour = {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(names)}
    replicas, sizes = [], []
    for r in shown.itertuples():
        label, tip = str(int(r.broker_id)), f"broker {int(r.broker_id)} in {r.rack}"
        replicas.append(
            Bar(
                label,
                float(r.replicas),
                colour[r.rack],
                f"{tip}: {r.replicas:,} replicas, {r.leaders:,} leaders",
                inner=float(r.leaders),
            )
        )
        sizes.append(
            Bar(label, r.bytes / _GIB, colour[r.rack], f"{tip}: {r.bytes / _GIB:,.1f} GiB")
        )
    legend = " ".join(
        f'<span style="color:{colour[n]}">&#9632;</span>&nbsp;{_e(n)}' for n in names[:12]
    )
    charts = (
        f'<p class="legend">{legend}</p>'
        + bar_chart(replicas, "replicas", mean=float(brokers["replicas"].mean()))
        + bar_chart(sizes, "GiB", mean=float(brokers["bytes"].mean()) / _GIB)
    )
    return charts, hidden


def log_dir_chart(dirs: pd.DataFrame) -> tuple[str, int]:
    """GiB per log dir, grouped by broker; failed dirs red, the utilisation in the tooltip."""
    shown, hidden = _heaviest(dirs, "bytes", MAX_BARS)
    shown = shown.sort_values(["broker_id", "log_dir"])
    bars = []
    for r in shown.itertuples():
        failed = r.is_live is False or r.is_live == 0
        used = f", {r.utilisation:.0%} used" if pd.notna(r.utilisation) else ""
        state = " (failed)" if failed else ""
        tip = f"{r.domain}{state}: {r.bytes / _GIB:,.1f} GiB{used}"
        colour = FAILED if failed else PALETTE[0]
        bars.append(Bar(str(r.domain), r.bytes / _GIB, colour, tip, shaded=bool(failed)))
    return bar_chart(bars, "GiB", mean=float(dirs["bytes"].mean()) / _GIB), hidden


def _colour(ratio: float) -> str:
    """Blue (0) through pale yellow (1, the mean) to red (2 and above)."""
    if not np.isfinite(ratio):
        return "#eeeeee"
    low, mid, high = (44, 123, 182), (255, 255, 191), (215, 25, 28)
    t = min(max(ratio, 0.0), 2.0)
    a, b, f = (low, mid, t) if t <= 1 else (mid, high, t - 1)
    return "#" + "".join(f"{round(x + (y - x) * f):02x}" for x, y in zip(a, b, strict=True))


def heat_map(load: pd.DataFrame, levels: Sequence[str]) -> str:
    """Per level, every domain's metrics over the level's mean (1.0 is the mean): skew shows
    as red and blue cells; the tooltip gives the value."""
    maps = "".join(
        _heat_level(load[load["level"] == level], level)
        for level in levels
        if (load["level"] == level).any()
    )
    return f'<div class="heat">{maps}</div>'


def _heat_level(rows: pd.DataFrame, level: str) -> str:
    rows, hidden = _heaviest(rows, "replicas", MAX_HEAT_DOMAINS)
    by_broker = rows["broker_id"].notna().all()
    rows = rows.sort_values(["broker_id", "domain"] if by_broker else "domain")
    metrics = [m for m in HEAT_METRICS if rows[m].notna().any()]
    cell, left = 16, 70
    width, height = left + cell * len(rows) + 10, 18 + cell * len(metrics) + _LABELS
    note = f" ({hidden} lighter domains not shown)" if hidden else ""
    parts = [
        f'<svg role="img" width="{width}" height="{height}" viewBox="0 0 {width} {height}">',
        f'<text x="0" y="12" font-size="11">{_e(level)}: value / mean{_e(note)}</text>',
    ]
    for i, metric in enumerate(metrics):
        values = rows[metric].to_numpy(dtype=float)
        mean = float(np.nanmean(values)) if np.isfinite(values).any() else 0.0
        y = 18 + i * cell
        parts.append(
            f'<text x="{left - 4}" y="{y + 11}" font-size="9" text-anchor="end">{metric}</text>'
        )
        for j, (domain, value) in enumerate(zip(rows["domain"], values, strict=True)):
            ratio = value / mean if mean > 0 else float("nan")
            tip = f"{domain} {metric}: {_fmt(value) if np.isfinite(value) else 'unknown'}"
            tip += f" ({ratio:.2f} x mean)" if np.isfinite(ratio) else ""
            parts.append(
                f'<rect x="{left + j * cell}" y="{y}" width="{cell - 1}" height="{cell - 1}" '
                f'fill="{_colour(ratio)}"><title>{_e(tip)}</title></rect>'
            )
    for j, domain in enumerate(rows["domain"]):
        x, y = left + j * cell + cell / 2, 18 + cell * len(metrics) + 2
        parts.append(
            f'<text x="{x}" y="{y}" font-size="8" text-anchor="end" '
            f'transform="rotate(-90 {x} {y})" dy="3">{_e(_short(str(domain)))}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def fleet_chart(clusters: pd.DataFrame) -> str:
    """Per cluster: partitions with spread violations, and partitions offline or under min
    ISR now (red), side by side."""
    bars = []
    for r in clusters.itertuples():
        name = str(r.cluster_id)
        at_risk = float(r.offline_now + r.under_min_isr_now)
        spread = float(r.partitions_with_spread_violations)
        bars.append(Bar(name, spread, PALETTE[0], f"{name}: {spread:,.0f} with spread violations"))
        bars.append(
            Bar("", at_risk, FAILED, f"{name}: {at_risk:,.0f} offline or under min ISR now")
        )
    return bar_chart(bars, "partitions")


def _domain_order(frame: pd.DataFrame) -> pd.DataFrame:
    """Brokers by number, then their log dirs by path (``10`` after ``9``, not after ``1``)."""
    keys = [c for c in ("broker_id", "log_dir", "domain") if c in frame]
    return frame.sort_values(keys, na_position="first")


def before_after_chart(before: pd.DataFrame, after: pd.DataFrame, metric: str, what: str) -> str:
    """``metric`` per domain before (grey) and after (green) a plan, the mean dashed. Up to
    ``MAX_BARS / 2`` domains side by side in domain order; more as two sorted profiles (every
    domain's value, largest first), which show the spread of a large cluster at a glance."""
    keys = [c for c in ("domain", "broker_id", "log_dir") if c in before and c in after]
    merged = before[[*keys, metric]].merge(
        after[["domain", metric]], on="domain", how="outer", suffixes=("_before", "_after")
    )
    merged[[f"{metric}_before", f"{metric}_after"]] = merged[
        [f"{metric}_before", f"{metric}_after"]
    ].fillna(0)
    scale = _GIB if metric == "bytes" else 1.0
    unit = "GiB" if metric == "bytes" else metric
    mean = float(merged[f"{metric}_after"].mean()) / scale if len(merged) else 0.0
    if len(merged) > MAX_BARS // 2:
        return profile_chart(
            merged[f"{metric}_before"].to_numpy(dtype=float) / scale,
            merged[f"{metric}_after"].to_numpy(dtype=float) / scale,
            unit,
            what,
        )
    bars = []
    for r in _domain_order(merged).itertuples():
        old, new = getattr(r, f"{metric}_before") / scale, getattr(r, f"{metric}_after") / scale
        bars.append(
            Bar(str(r.domain), old, "#999999", f"{what} {r.domain} before: {_fmt(old)} {unit}")
        )
        bars.append(Bar("", new, PALETTE[2], f"{what} {r.domain} after: {_fmt(new)} {unit}"))
    return bar_chart(bars, unit, mean=mean)


def _plural(what: str) -> str:
    return what[:-1] + "ies" if what.endswith("y") else what + "s"


def profile_chart(before: np.ndarray, after: np.ndarray, unit: str, what: str) -> str:
    """Two sorted profiles, before (grey) and after (green): the x axis is the rank of a
    domain (heaviest first), so a flat green line is a balanced cluster."""
    width, left, plot_w = 520, _LEFT, 440
    height = _PLOT_H + 40
    top = max(float(before.max(initial=0.0)), float(after.max(initial=0.0)), 1e-9)
    parts = [f'<svg role="img" width="{width}" height="{height}" viewBox="0 0 {width} {height}">']
    parts.append(_axis(top, unit))
    for values, colour, name in ((before, "#999999", "before"), (after, PALETTE[2], "after")):
        ranked = np.sort(values)[::-1]
        step = plot_w / max(len(ranked) - 1, 1)
        points = " ".join(
            f"{left + i * step:.1f},{10 + _PLOT_H - _PLOT_H * v / top:.1f}"
            for i, v in enumerate(ranked)
        )
        tip = (
            f"{name}: max {_fmt(float(ranked.max(initial=0.0)))}, "
            f"min {_fmt(float(ranked.min(initial=0.0)))} {unit}"
        )
        parts.append(
            f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2">'
            f"<title>{_e(tip)}</title></polyline>"
        )
    mean = float(after.mean()) if after.size else 0.0
    y = 10 + _PLOT_H - _PLOT_H * mean / top
    parts.append(
        f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#555" '
        f'stroke-dasharray="4 3"><title>mean after {_e(_fmt(mean))}</title></line>'
    )
    parts.append(
        f'<text x="{left + plot_w / 2}" y="{10 + _PLOT_H + 16}" font-size="9" '
        f'text-anchor="middle">{len(before):,} {_e(_plural(what))}, heaviest first</text>'
    )
    parts.append("</svg>")
    return "".join(parts)
