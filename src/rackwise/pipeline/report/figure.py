"""What every chart of the report shares: the style, the page-wide figure, the domain labels,
the tooltips, and the SVG made ready to inline.

Goals
    Charts drawn by matplotlib (nice ticks, legends, colour scales, a layout that holds) that
    read at a normal window width: the figure is as wide as the page's text (``WIDTH_IN``), its
    text 12-13 units, which the page draws at about as many pixels. Hovering a domain shows
    its exact figures.

Constraints
    Static, self-contained SVG: no script, text kept as text (``svg.fonttype: none``:
    searchable, selectable, readable by the tests). Several charts share one HTML document, so
    every id a chart defines is made unique to it. Labels from the input are drawn literally
    (a ``$`` never starts mathtext) and escaped in the SVG. No global state is left changed:
    the style is an ``rc_context`` around each chart, and figures are created directly (no
    pyplot). A report draws a hundred charts, so the costly parts of matplotlib are avoided:
    no layout engine (margins are computed from the labels), one collection per series
    rather than a patch per bar, domain labels as plain text rather than tick objects, and
    tooltips added to the SVG afterwards rather than as artists.

Algorithm
    Draw on a fixed-width figure, save it as SVG, then clean it: drop the XML prologue, the
    metadata and the size attributes (CSS sizes it); drop matplotlib's group ids and prefix
    every other id (and every reference to it) with a hash of the chart; turn the groups tagged
    ``rw-<name>`` into ``class="<name>"`` (``legend``, ``ylabel``, ``xlabel``,
    ``colour-scale``); round coordinates to a tenth of a point (matplotlib writes six
    decimals, which triples the page); append the :class:`Marks` (the domains' names, cell
    text, one transparent rectangle per domain carrying its ``<title>``).

Worked example
    A chart of 24 brokers gives ``<svg role="img" aria-label="Replicas per broker"
    viewBox="0 0 1080 306">`` with ``<g class="legend">``, ``<g class="ylabel">`` (``replicas``)
    and 24 ``<rect class="tip">`` each with a ``<title>`` such as ``broker 13 (/dc2/rack1):
    replicas 660, leaders (inside) 200``.
"""

from __future__ import annotations

import hashlib
import io
import re
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Final

import matplotlib as mpl
from matplotlib.figure import Figure

from rackwise.pipeline.report.page import esc

WIDTH_IN: Final = 15.0
"""Figure width in inches: 1,080 SVG units, drawn at the page's text width (about 1,130 px),
so a 13-unit font is about 13 px on screen."""
MAX_LABELLED: Final = 72
"""Domains past this many get every k-th label only."""
CHAR_IN: Final = 12 * 0.62 / 72
"""The width of one 12-unit character, in inches (DejaVu Sans, on average)."""
LINE_IN: Final = 17 / 72
"""The height of one line of 12-13 unit text, in inches."""
_POINTS_PER_INCH: Final = 72
_RC: Final[dict[Any, Any]] = {
    "svg.fonttype": "none",
    "svg.hashsalt": "rackwise",
    "font.family": "DejaVu Sans",
    "font.size": 13,
    "axes.labelsize": 13,
    "axes.titlesize": 13,
    "xtick.labelsize": 12,
    "ytick.labelsize": 12,
    "legend.fontsize": 12,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.edgecolor": "#666666",
    "hatch.linewidth": 1.0,
}
_SVG_METADATA: Final = {"Date": None, "Creator": None, "Format": None, "Type": None}
_CLASS: Final = re.compile(r'<g id="rw-([a-z-]+)">')
_ANY_G_ID: Final = re.compile(r'<g id="[^"]*">')
_ID: Final = re.compile(r'\bid="([^"]+)"')
_REF: Final = re.compile(r'(url\(#|xlink:href="#)([^)"]+)')
_NAMESPACES: Final = re.compile(r' xmlns(:xlink)?="[^"]*"')
"""SVG inline in HTML needs no namespace declaration (the parser knows ``xlink:href``)."""
_FONT: Final = "; font-family: 'DejaVu Sans'"
"""Left to the page's style sheet (``figure.chart svg``), once rather than on every text."""
_NO_ROTATION: Final = re.compile(r' transform="rotate\(-0 [^"]*\)"')
_PATH: Final = re.compile(r'\b(?:d|x|y)="[^"]*"')
_DIGITS: Final = re.compile(r"(\.\d)\d+")
"""Coordinates to a tenth of a point, a tenth of the size they are written with."""
_TEXT: Final = 'font-size="12"'


def style() -> AbstractContextManager[Any]:
    """The report's matplotlib settings, for the duration of one chart."""
    return mpl.rc_context(_RC)


def plain(text: object) -> str:
    """``text`` as matplotlib draws it literally (a ``$`` would start mathtext)."""
    return str(text).replace("$", r"\$")


def tick_text(value: float, _position: object = None) -> str:
    """A value-axis tick: thousands separators, no trailing zeros (``1,500``, ``0.5``)."""
    text = f"{value:,.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def figure(height_in: float) -> Figure:
    """A page-wide figure ``height_in`` inches tall."""
    return Figure(figsize=(WIDTH_IN, height_in), dpi=_POINTS_PER_INCH, facecolor="white")


def is_rotated(labels: Sequence[str]) -> bool:
    """Whether domain labels are drawn upright (rotated 90°) to fit."""
    return len(labels) > 30 or max((len(t) for t in labels), default=0) * len(labels) > 110


def _labels_in(labels: Sequence[str]) -> float:
    longest = max((len(t) for t in labels), default=1)
    return longest * CHAR_IN + 0.1 if is_rotated(labels) else LINE_IN + 0.05


def label_height_in(labels: Sequence[str]) -> float:
    """The height the domain labels take under a plot, with the axis label under them."""
    return _labels_in(labels) + LINE_IN + 0.3


def x_label(ax: Any, text: str, labels: Sequence[str]) -> None:
    """The axis label under the domain labels (drawn as :class:`Marks`, which matplotlib does
    not see when it places the label)."""
    pad = _labels_in(labels) * _POINTS_PER_INCH + 6
    ax.set_xlabel(text, labelpad=pad).set_gid("rw-xlabel")


@dataclass
class Marks:
    """SVG put over a chart once matplotlib has drawn it, where the axes' transforms place it:
    the domains' names under the plot, text in heat-map cells, and a tooltip per domain. A
    report draws thousands of these; as matplotlib artists they cost more than the charts."""

    ax: Any
    labels: Sequence[str] = ()
    label_offset: float = 0.0
    cells: Sequence[tuple[float, float, str, str]] = ()
    spans: Sequence[tuple[float, float]] = ()
    tips: Sequence[str] = ()

    def svg(self, height: float) -> str:
        return self._labels(height) + self._cells(height) + self._tips(height)

    def _point(self, x: float, y: float, height: float) -> tuple[float, float]:
        px, py = self.ax.transData.transform((x, y))
        return float(px), height - float(py)

    def _labels(self, height: float) -> str:
        if not self.labels:
            return ""
        step = max(1, -(-len(self.labels) // MAX_LABELLED))
        rotate = is_rotated(self.labels)
        top = height - self.ax.get_window_extent().y0 + 4
        out = []
        for i in range(0, len(self.labels), step):
            x = self._point(i + self.label_offset, 0, height)[0]
            place = (
                f'x="{x:.1f}" y="{top:.1f}" text-anchor="end" dominant-baseline="central" '
                f'transform="rotate(-90 {x:.1f} {top:.1f})"'
                if rotate
                else f'x="{x:.1f}" y="{top + 12:.1f}" text-anchor="middle"'
            )
            out.append(f"<text {place} {_TEXT}>{esc(self.labels[i])}</text>")
        return f'<g class="domains">{"".join(out)}</g>'

    def _cells(self, height: float) -> str:
        out = []
        for x, y, text, colour in self.cells:
            px, py = self._point(x, y, height)
            out.append(
                f'<text x="{px:.1f}" y="{py:.1f}" text-anchor="middle" '
                f'dominant-baseline="central" fill="{colour}" {_TEXT}>{esc(text)}</text>'
            )
        return f'<g class="cells">{"".join(out)}</g>' if out else ""

    def _tips(self, height: float) -> str:
        box = self.ax.get_window_extent()
        out = []
        for (x0, x1), tip in zip(self.spans, self.tips, strict=True):
            left, right = self._point(x0, 0, height)[0], self._point(x1, 0, height)[0]
            out.append(
                f'<rect class="tip" x="{left:.1f}" y="{height - box.y1:.1f}" '
                f'width="{right - left:.1f}" height="{box.height:.1f}" fill="#ffffff" '
                f'fill-opacity="0"><title>{esc(tip)}</title></rect>'
            )
        return "".join(out)


def svg(fig: Figure, title: str, marks: Marks | None = None) -> str:
    """The figure as an SVG element ready to inline (see the module notes), with ``marks``
    over it."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata=_SVG_METADATA)
    text = buf.getvalue()
    text = text[text.index("<svg") :]
    text = re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.S)
    text = re.sub(r'<style type="text/css">[^<]*</style>', "", text)
    text = re.sub(r'<svg ([^>]*?)width="[^"]*" height="[^"]*" ', r"<svg \1", text, count=1)
    text = _NAMESPACES.sub("", text, count=2)
    text = _CLASS.sub(r'<g class="\1">', text)
    text = _ANY_G_ID.sub("<g>", text)
    prefix = "c" + hashlib.sha1(text.encode()).hexdigest()[:10]
    text = _ID.sub(lambda m: f'id="{prefix}-{m.group(1)}"', text)
    text = _REF.sub(lambda m: f"{m.group(1)}{prefix}-{m.group(2)}", text)
    text = _NO_ROTATION.sub("", text.replace(_FONT, ""))
    text = _PATH.sub(lambda m: _DIGITS.sub(r"\1", m.group(0)), text)
    if marks is not None:
        end = text.rindex("</svg>")
        height = fig.get_figheight() * _POINTS_PER_INCH
        text = text[:end] + marks.svg(height) + text[end:]
    return text.replace("<svg ", f'<svg role="img" aria-label="{esc(title)}" ', 1)


def wrap(svg_text: str, title: str, caption: str, kind: str) -> str:
    """A chart as the page shows it: its title, the SVG, an optional caption."""
    cap = f"<figcaption>{esc(caption)}</figcaption>" if caption else ""
    return f'<figure class="chart {kind}"><p class="title">{esc(title)}</p>{svg_text}{cap}</figure>'
