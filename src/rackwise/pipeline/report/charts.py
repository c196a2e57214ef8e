"""The report's bar charts: load per domain (before and after, against targets) and the fleet's
worst clusters.

Goals
    A chart an operator reads at a glance: labelled axes with units (``data (GiB)``,
    ``replicas``), ticks at round numbers, a legend for everything drawn (the leaders inside
    the bars, the dashed mean, the target range and the target, the failed-directory band),
    domains grouped by rack with the rack named above its group. One measure per value axis: a
    chart that shows two measures shows them in two panels.

Constraints
    Drawing and SVG as :mod:`~rackwise.pipeline.report.figure` does it (static, text as text,
    no layout engine, one collection per series).

Algorithm
    A :class:`DomainChart` puts its series side by side within each domain's slot (width 0.8
    of it), the overlay inside the last series, the target range behind them as a band as wide
    as the slot with the target a solid line across it, the mean dashed across the plot, a
    failed domain as a hatched red band the height of the plot. The value axis takes the unit
    the largest figure reads best in (:func:`measure`).

Worked example
    Replicas per broker before (grey) and after (blue), 24 brokers in six racks, targets 500
    to 501 for most and 400 for the brokers of the larger racks: each broker's pair of bars
    with a thin green band and line across it; the legend reads ``before``, ``after``,
    ``target range (the goal's bounds)``, ``target``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.colors import to_rgb
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, MaxNLocator

from rackwise.pipeline.report import figure as fig
from rackwise.pipeline.report.format import BYTE_UNITS, byte_unit, format_metric

PLOT_HEIGHT_IN: Final = 3.0
MIN_SLOTS: Final = 10
"""A chart of fewer domains is drawn as wide as this many, its bars centred."""
SIDE_BY_SIDE: Final = 60
"""Series side by side up to this many domains; past it each in front of the one before."""
BEFORE: Final = "#b3b3b3"
AFTER: Final = "#1f77b4"
BAR: Final = "#1f77b4"
INNER: Final = "#0b3c5d"
TARGET: Final = "#1e8449"
FAILED: Final = "#c0392b"
WARNING: Final = "#e67e22"
MEAN: Final = "#333333"
_DASHED: Final = (0, (5, 3))
_BAND_ALPHA: Final = 0.22
_FAILED_ALPHA: Final = 0.18


@dataclass(frozen=True)
class Measure:
    """What a value axis shows: the name, its unit and the divisor from the stored figure."""

    name: str
    unit: str
    scale: float
    is_count: bool

    @property
    def axis_label(self) -> str:
        return f"{self.name} ({self.unit})" if self.unit else self.name


def measure(metric: str, largest: float) -> Measure:
    """The axis of a load metric: ``bytes`` as data in the unit ``largest`` reads best in,
    ``utilisation`` in percent, counts as themselves."""
    if metric == "bytes":
        unit, scale = byte_unit(largest)
        return Measure("data", unit if unit != BYTE_UNITS[0] else "bytes", scale, False)
    if metric == "utilisation":
        return Measure("used", "%", 0.01, False)
    return Measure(metric, "", 1.0, True)


@dataclass(frozen=True)
class Series:
    """Bars for every domain: the legend entry, the stored figures, the colour."""

    name: str
    values: np.ndarray
    colour: str


@dataclass(frozen=True)
class Targets:
    """What a goal aims at per domain, in stored units: the accepted range and the target
    itself (NaN where a domain has none)."""

    low: np.ndarray
    target: np.ndarray
    high: np.ndarray
    name: str = "target"


@dataclass(frozen=True)
class DomainChart:
    """A bar chart over the domains of one level (brokers, log directories).

    ``series`` are drawn side by side (before and after); ``overlay`` inside the last of them
    (the leaders within the replicas); ``groups`` names each domain's group (its rack, its
    broker), drawn as separators with the group's name above (unless not ``group_names``);
    ``failed`` marks domains drawn as a red band; ``targets`` as a green range with the target a
    solid line; ``mean`` dashed. ``tips``: one tooltip per domain (else built from the figures).
    """

    title: str
    metric: str
    domains: Sequence[str]
    ticks: Sequence[str]
    axis_label: str
    series: Sequence[Series]
    groups: Sequence[str] = ()
    group_names: bool = True
    overlay: Series | None = None
    failed: np.ndarray | None = None
    failed_name: str = "failed log directory"
    targets: Targets | None = None
    mean: float | None = None
    mean_name: str = "mean"
    tips: Sequence[str] = ()
    caption: str = ""


def _boxes(x: np.ndarray, width: float, bottom: np.ndarray, top: np.ndarray) -> list[Any]:
    half = width / 2
    return [
        [(a - half, b), (a - half, t), (a + half, t), (a + half, b)]
        for a, b, t in zip(x.tolist(), bottom.tolist(), top.tolist(), strict=True)
        if not (np.isnan(b) or np.isnan(t))
    ]


def _bars(ax: Any, x: np.ndarray, width: float, heights: np.ndarray, **style: Any) -> None:
    ax.add_collection(PolyCollection(_boxes(x, width, np.zeros_like(heights), heights), **style))


def _series(ax: Any, chart: DomainChart, m: Measure, x: np.ndarray) -> list[Any]:
    """Side by side within each slot; past ``SIDE_BY_SIDE`` domains, each series in front of
    the one before it, narrower (bars too thin to see otherwise)."""
    handles: list[Any] = []
    k = len(chart.series)
    stacked = len(x) > SIDE_BY_SIDE
    width = 0.8 / k
    for i, s in enumerate(chart.series):
        offset = 0.0 if stacked else (i - (k - 1) / 2) * width
        size = 0.9 * (1 - i / (k + 1)) if stacked else width * 0.94
        _bars(ax, x + offset, size, s.values / m.scale, facecolors=s.colour, zorder=2 + i / k)
        handles.append(Patch(color=s.colour, label=s.name))
    if stacked:
        width, k = 0.9 / (k + 1), 1
    if chart.overlay is not None:
        offset = ((k - 1) / 2) * width
        _bars(
            ax, x + offset, width * 0.45, chart.overlay.values / m.scale, facecolors=INNER, zorder=3
        )
        handles.append(Patch(color=INNER, label=chart.overlay.name))
    return handles


def _targets(ax: Any, targets: Targets, m: Measure, x: np.ndarray) -> list[Any]:
    have = ~np.isnan(targets.target)
    if not have.any():
        return []
    low, high = targets.low[have] / m.scale, targets.high[have] / m.scale
    band = PolyCollection(
        _boxes(x[have], 0.96, low, high), facecolors=TARGET, alpha=_BAND_ALPHA, zorder=1
    )
    ax.add_collection(band)
    level = targets.target[have] / m.scale
    lines = [
        [(a - 0.48, t), (a + 0.48, t)]
        for a, t in zip(x[have].tolist(), level.tolist(), strict=True)
    ]
    ax.add_collection(LineCollection(lines, colors=TARGET, linewidths=2, zorder=4))
    return [
        Patch(color=TARGET, alpha=_BAND_ALPHA, label=f"{targets.name} range (the goal's bounds)"),
        Line2D([], [], color=TARGET, lw=2, label=targets.name),
    ]


def _failed(ax: Any, failed: np.ndarray, name: str) -> list[Any]:
    """A hatched red band the height of the plot over each failed domain, ``failed`` written
    up it."""
    style: dict[str, Any] = {
        "facecolor": (*to_rgb(FAILED), _FAILED_ALPHA),
        "hatch": "//",
        "edgecolor": FAILED,
    }
    for i in np.flatnonzero(failed).tolist():
        ax.axvspan(i - 0.5, i + 0.5, lw=0, zorder=0, **style)
        ax.text(
            i,
            0.5,
            "failed",
            transform=ax.get_xaxis_transform(),
            rotation=90,
            ha="center",
            va="center",
            fontsize=12,
            color=FAILED,
            fontweight="bold",
            zorder=5,
            bbox={"facecolor": "white", "edgecolor": "none", "pad": 1},
        )
    return [Patch(label=name, linewidth=0, **style)]


def _groups(ax: Any, groups: Sequence[str], top: float, *, names: bool) -> None:
    """Separators between runs of equal group names, each run's name above it if it fits."""
    if not groups:
        return
    starts = [0] + [i for i in range(1, len(groups)) if groups[i] != groups[i - 1]]
    ends = [*starts[1:], len(groups)]
    slot_in = fig.WIDTH_IN * 0.9 / max(len(groups), MIN_SLOTS)
    for start, end in zip(starts, ends, strict=True):
        if start > 0:
            ax.axvline(start - 0.5, color="#999999", linewidth=1, linestyle=":", zorder=1)
        name = groups[start]
        if names and len(name) * fig.CHAR_IN <= (end - start) * slot_in:
            centre = (start + end - 1) / 2
            ax.text(
                centre, top, fig.plain(name), ha="center", va="bottom", fontsize=12, color="#555555"
            )


def _value_axis(ax: Any, m: Measure, ceiling: float) -> None:
    ax.set_ylim(0, ceiling)
    ax.yaxis.set_major_locator(MaxNLocator(nbins=6, integer=m.is_count, min_n_ticks=2))
    ax.yaxis.set_major_formatter(FuncFormatter(fig.tick_text))
    ax.set_ylabel(m.axis_label).set_gid("rw-ylabel")
    ax.yaxis.grid(True, color="#e6e6e6", linewidth=0.8)
    ax.set_axisbelow(True)


def _largest(chart: DomainChart) -> float:
    stacks = [s.values for s in chart.series]
    if chart.targets is not None:
        stacks.append(chart.targets.high)
    known = [float(np.nanmax(v)) for v in stacks if v.size and not np.isnan(v).all()]
    return max([*known, chart.mean or 0.0, 0.0])


def domain_chart(chart: DomainChart) -> str:
    """A bar chart over domains (see :class:`DomainChart`), as a ``<figure>``."""
    with fig.style():
        return _domain_chart(chart)


def _domain_chart(chart: DomainChart) -> str:
    n = len(chart.domains)
    x = np.arange(n, dtype=float)
    largest = _largest(chart)
    m = measure(chart.metric, largest)
    bottom = fig.label_height_in(chart.ticks)
    height = bottom + PLOT_HEIGHT_IN + fig.LINE_IN + 0.2
    figure = fig.figure(height)
    ax = figure.add_axes((0.075, bottom / height, 0.91, PLOT_HEIGHT_IN / height))
    handles = _series(ax, chart, m, x)
    if chart.targets is not None:
        handles += _targets(ax, chart.targets, m, x)
    if chart.mean is not None:
        ax.axhline(chart.mean / m.scale, color=MEAN, lw=1.4, ls=_DASHED, zorder=4)
        handles.append(Line2D([], [], color=MEAN, lw=1.4, ls=_DASHED, label=chart.mean_name))
    if chart.failed is not None and chart.failed.any():
        handles += _failed(ax, chart.failed, chart.failed_name)
    top = max(largest / m.scale, 1e-9)
    _value_axis(ax, m, top * (1.12 if chart.groups and chart.group_names else 1.04))
    pad = max(0.0, (MIN_SLOTS - n) / 2)  # a few domains: bars of a normal width, centred
    ax.set_xlim(-0.6 - pad, n - 0.4 + pad)
    _groups(ax, chart.groups, top * 1.02, names=chart.group_names)
    ax.set_xticks([])
    fig.x_label(ax, chart.axis_label, chart.ticks)
    legend = ax.legend(
        handles=handles,
        loc="lower left",
        bbox_to_anchor=(0.0, 1.0),
        ncol=len(handles),
        frameon=False,
        handlelength=1.8,
        columnspacing=1.4,
        borderaxespad=0.2,
    )
    legend.set_gid("rw-legend")
    marks = fig.Marks(
        ax,
        labels=chart.ticks,
        spans=[(i - 0.5, i + 0.5) for i in range(n)],
        tips=list(chart.tips) or _tips(chart),
    )
    return fig.wrap(fig.svg(figure, chart.title, marks), chart.title, chart.caption, "bars")


def _tips(chart: DomainChart) -> list[str]:
    def text(value: float) -> str:
        return format_metric(chart.metric, value)

    out = []
    for i, domain in enumerate(chart.domains):
        parts = [f"{s.name} {text(float(s.values[i]))}" for s in chart.series]
        if chart.overlay is not None:
            parts.append(f"{chart.overlay.name} {text(float(chart.overlay.values[i]))}")
        t = chart.targets
        if t is not None and not np.isnan(t.target[i]):
            bounds = f"{text(float(t.low[i]))} to {text(float(t.high[i]))}"
            parts.append(f"{t.name} {text(float(t.target[i]))} ({bounds})")
        if chart.failed is not None and chart.failed[i]:
            parts.append(chart.failed_name)
        out.append(f"{domain}: " + ", ".join(parts))
    return out


def cluster_panels(
    title: str, clusters: Sequence[str], panels: Sequence[tuple[str, np.ndarray, str]], axis: str
) -> str:
    """Horizontal bars per cluster (the first on top), one panel per measure side by side, each
    with its own value axis labelled ``axis``: ``panels`` are (title, values, colour)."""
    with fig.style():
        n = len(clusters)
        label_in = max((len(c) for c in clusters), default=4) * fig.CHAR_IN + 0.3
        height = n * 0.32 + 1.3
        figure = fig.figure(height)
        left = label_in / fig.WIDTH_IN
        width = (0.99 - left) / len(panels)
        y = np.arange(n, dtype=float)
        for i, (name, values, colour) in enumerate(panels):
            ax = figure.add_axes(
                (left + i * width + 0.015, 0.75 / height, width - 0.035, (height - 1.25) / height)
            )
            ax.barh(y, values, 0.7, color=colour)
            ax.set_ylim(n - 0.5, -0.5)
            ax.set_yticks(y, [fig.plain(c) for c in clusters] if i == 0 else [])
            ax.set_title(name, fontsize=13, loc="left")
            ax.xaxis.set_major_locator(MaxNLocator(nbins=4, integer=True))
            ax.xaxis.set_major_formatter(FuncFormatter(fig.tick_text))
            ax.set_xlim(0, max(float(values.max(initial=0.0)) * 1.08, 1.0))
            ax.set_xlabel(axis).set_gid("rw-xlabel")
            ax.xaxis.grid(True, color="#e6e6e6")
            ax.set_axisbelow(True)
        return fig.wrap(fig.svg(figure, title), title, "", "panels")
