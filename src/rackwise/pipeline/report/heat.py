"""The report's heat maps: every domain of a level against the level's mean, with the colour
scale beside it.

Goals
    Skew shows at a glance: a cell per domain and measure, coloured by the domain's figure over
    its level's mean (the mean white, above red, below blue), the scale drawn and labelled
    beside the map, the ratio written in each cell while there is room, the exact figures on
    hover. Before and after a plan share one map and one scale, the after rows under the
    before rows.

Constraints
    Drawing and SVG as :mod:`~rackwise.pipeline.report.figure` does it. Ratios past
    ``HEAT_MAX`` are drawn as ``HEAT_MAX`` (the scale's arrow says so); an unknown figure (a
    failed directory's size) is grey.

Algorithm
    A ``pcolormesh`` of the ratios on a diverging scale centred on 1 (``TwoSlopeNorm``), a row
    label per measure, the domains' names under the map, a white gap between the before and
    after blocks.

Worked example
    Six racks whose replicas are 1,950 to 2,043 around a mean of 2,000: six near-white cells
    reading ``1.0``; their data 1.4 TiB to 2.0 TiB around 1.8 TiB: a pale blue ``0.8`` and
    pale reds up to ``1.1``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import matplotlib as mpl
import numpy as np
from matplotlib.colors import TwoSlopeNorm

from rackwise.pipeline.report import figure as fig
from rackwise.pipeline.report.format import TIMES

HEAT_MAX: Final = 2.0
"""The colour scale's top: twice the mean and above are the deepest red."""
MAX_ANNOTATED: Final = 36
"""Cells carry their ratio as text up to this many columns."""
ROW_IN: Final = 0.3
MIN_SCALE_IN: Final = 1.6
"""The colour scale's least height: a map of few rows has taller rows."""
UNKNOWN: Final = "#dddddd"
COLOURS: Final = 20
"""Steps on the colour scale (a tenth of the mean each): readable, and 20 patches in the
scale's SVG rather than 256."""


@dataclass(frozen=True)
class HeatMap:
    """Figures of every domain of a level over the level's mean, one row per measure.

    ``ratios`` (rows x domains): value / mean, NaN where unknown; ``values``: each figure's
    text, per row and domain, for the tooltips; ``split``: a gap after that many rows (the
    before rows, then the after rows).
    """

    title: str
    domains: Sequence[str]
    ticks: Sequence[str]
    rows: Sequence[str]
    ratios: np.ndarray
    values: Sequence[Sequence[str]]
    axis_label: str
    split: int = 0
    caption: str = ""


def heat_map(chart: HeatMap) -> str:
    """A heat map (see :class:`HeatMap`) with its colour scale, as a ``<figure>``."""
    with fig.style():
        return _heat_map(chart)


def _heat_map(chart: HeatMap) -> str:
    num_rows, n = chart.ratios.shape
    row_in = max(ROW_IN, MIN_SCALE_IN / max(num_rows, 1))
    bottom = fig.label_height_in(chart.ticks)
    height = bottom + num_rows * row_in + 0.15
    figure = fig.figure(height)
    left = (max(len(r) for r in chart.rows) * fig.CHAR_IN + 0.25) / fig.WIDTH_IN
    box = (bottom / height, num_rows * row_in / height)
    ax = figure.add_axes((left, box[0], 0.86 - left, box[1]))
    cax = figure.add_axes((0.885, box[0], 0.012, box[1]))
    cmap = mpl.colormaps["RdBu_r"].resampled(COLOURS).with_extremes(bad=UNKNOWN)
    norm = TwoSlopeNorm(vmin=0.0, vcenter=1.0, vmax=HEAT_MAX)
    mesh = ax.pcolormesh(
        np.ma.masked_invalid(chart.ratios), cmap=cmap, norm=norm, edgecolors="white", linewidth=0.6
    )
    if chart.split:
        ax.axhline(chart.split, color="white", lw=5)
    ax.set_xlim(0, n)
    ax.set_ylim(num_rows, 0)
    ax.set_yticks(np.arange(num_rows) + 0.5, [fig.plain(r) for r in chart.rows])
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    ax.set_xticks([])
    fig.x_label(ax, chart.axis_label, chart.ticks)
    _scale(figure, mesh, cax)
    tips = [
        f"{domain}: " + "; ".join(f"{chart.rows[r]} {chart.values[r][j]}" for r in range(num_rows))
        for j, domain in enumerate(chart.domains)
    ]
    marks = fig.Marks(
        ax,
        labels=chart.ticks,
        label_offset=0.5,
        cells=_cells(chart.ratios) if n <= MAX_ANNOTATED else (),
        spans=[(j, j + 1.0) for j in range(n)],
        tips=tips,
    )
    return fig.wrap(fig.svg(figure, chart.title, marks), chart.title, chart.caption, "heat")


def _scale(figure: Any, mesh: Any, cax: Any) -> None:
    bar = figure.colorbar(mesh, cax=cax, extend="max", ticks=[0, 0.5, 1, 1.5, HEAT_MAX])
    if bar.solids is not None:
        bar.solids.set_rasterized(False)  # vector, as sharp as the map (no embedded image)
    bar.ax.set_yticklabels(
        ["0", f"0.5{TIMES}", f"1{TIMES} mean", f"1.5{TIMES}", f"{HEAT_MAX:g}{TIMES}"]
    )
    bar.set_label("÷ the level's mean", fontsize=12)
    cax.set_gid("rw-colour-scale")


def _cells(ratios: np.ndarray) -> list[tuple[float, float, str, str]]:
    """Each known cell's ratio as text at its centre, white on the deeper colours."""
    out = []
    rows, cols = ratios.shape
    for r in range(rows):
        for c in range(cols):
            value = float(ratios[r, c])
            if not np.isnan(value):
                colour = "#ffffff" if abs(min(value, HEAT_MAX) - 1) > 0.55 else "#222222"
                out.append((c + 0.5, r + 0.5, f"{value:.1f}", colour))
    return out
