"""The report's HTML: the page, its contents list, sections, headline cards and tables.

Goals
    One self-contained HTML file that opens the same offline, attached to a ticket or from an
    artefact store: the style sheet inline, the charts inline SVG, no script, no font, no link,
    no image file. Every piece of text that comes from the input (cluster ids, topics, rack
    paths, log directories) is escaped. The page reads at a normal window width: body text
    16 px, tables 14 px, charts as wide as the text.

Constraints
    A section's anchor must be a valid fragment whatever the cluster id holds, and unique in the
    page (:class:`Anchors`).

Algorithm
    Callers build sections (a heading, an anchor, HTML); :func:`page` puts the title, the
    contents list (a link to every section and sub-section) and the sections together.

Worked example
    ``Anchors().of("plan", "eu/1")`` is ``plan-eu_1``; a second ``eu_1`` cluster gets
    ``plan-eu_1-2``. ``page("rackwise plan", [Section("Plan", "plan", "...")])`` starts with
    ``<h1>rackwise plan</h1>`` and a contents list linking ``#plan``.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final

from rackwise.pipeline.report.format import format_value

CSS: Final = """
body{font:16px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#222;
 margin:0 auto;padding:1em 2em 3em;max-width:1200px}
h1{font-size:1.8em;margin:.2em 0}h2{font-size:1.4em;border-bottom:2px solid #ddd;
 margin-top:2em;padding-top:.3em}h3{font-size:1.2em;margin:1.6em 0 .3em}
h4{font-size:1.05em;margin:1.4em 0 .3em}h5{font-size:1em;margin:1.2em 0 .3em}
.lead{color:#555;margin:.2em 0 1em}
nav.contents{background:#f7f7f7;border:1px solid #e2e2e2;border-radius:6px;padding:.5em 1.2em;
 margin:1em 0}
nav.contents ol{margin:.2em 0;padding-left:1.4em}nav.contents li{margin:.1em 0}
nav.contents a{text-decoration:none}nav.contents a:hover{text-decoration:underline}
.cards{display:flex;flex-wrap:wrap;gap:.6em;margin:.6em 0}
.card{border:1px solid #ddd;border-radius:6px;padding:.45em .9em;min-width:9em}
.card b{display:block;font-size:1.35em}.card.bad b{color:#b03a2e}.card.good b{color:#1e8449}
td a{white-space:nowrap}
.card small{display:block;color:#666}
table{border-collapse:collapse;font-size:14px;margin:.5em 0}
td,th{border:1px solid #ddd;padding:.2em .6em;text-align:right;vertical-align:top}
td:not(.name){white-space:nowrap}
th{background:#f4f4f4}td.name,th.name{text-align:left}
tr.bad td{background:#fdecea}td.bad{color:#b03a2e;font-weight:bold}
td.good{color:#1e8449;font-weight:bold}td.quiet{color:#666}
td.good,td.bad,td.quiet{white-space:nowrap}
.note{color:#555;font-size:14px}
figure.chart svg{font-family:'DejaVu Sans',Verdana,sans-serif}
figure.chart{margin:.8em 0 1.2em}figure.chart svg{width:100%;height:auto;display:block}
figure.chart p.title{font-weight:600;margin:.2em 0}
figure.chart figcaption{font-size:14px;color:#555;margin-top:.2em}
details{margin:.5em 0}details summary{cursor:pointer;color:#333}
@media print{nav.contents{break-after:page}section.cluster{break-before:page}}
"""
_UNSAFE_ANCHOR: Final = re.compile(r"[^A-Za-z0-9_.]+")


def esc(value: object) -> str:
    """``value`` as HTML text."""
    return html.escape(str(value), quote=True)


class Anchors:
    """Unique, fragment-safe anchors for the sections of one page."""

    def __init__(self) -> None:
        self._used: set[str] = set()

    def of(self, kind: str, name: str = "") -> str:
        base = kind if not name else f"{kind}-{_UNSAFE_ANCHOR.sub('_', name).strip('_') or '_'}"
        anchor, n = base, 1
        while anchor in self._used:
            n += 1
            anchor = f"{base}-{n}"
        self._used.add(anchor)
        return anchor


@dataclass(frozen=True)
class Section:
    """A part of the page: its heading, anchor and HTML; ``parts`` are its sub-sections, listed
    under it in the contents; ``css_class`` marks cluster sections (a new page when printed)."""

    title: str
    anchor: str
    body: str
    parts: Sequence[Section] = field(default_factory=tuple)
    css_class: str = ""

    def html(self, level: int = 2) -> str:
        heading = f'<h{level} id="{esc(self.anchor)}">{esc(self.title)}</h{level}>'
        inner = "".join(part.html(level + 1) for part in self.parts)
        cls = f' class="{self.css_class}"' if self.css_class else ""
        return f"<section{cls}>{heading}{self.body}{inner}</section>\n"


def _contents(sections: Sequence[Section], depth: int) -> str:
    def items(entries: Sequence[Section], level: int) -> str:
        out = []
        for s in entries:
            sub = f"<ol>{items(s.parts, level + 1)}</ol>" if s.parts and level < depth else ""
            out.append(f'<li><a href="#{esc(s.anchor)}">{esc(s.title)}</a>{sub}</li>')
        return "".join(out)

    return f'<nav class="contents"><b>Contents</b><ol>{items(sections, 1)}</ol></nav>'


def page(title: str, lead: str, sections: Sequence[Section], *, depth: int = 2) -> str:
    """The whole document: title, a lead line (HTML), the contents list (``depth`` levels of
    sections), the sections."""
    body = "".join(s.html() for s in sections)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>\n"
        f'<h1>{esc(title)}</h1><p class="lead">{lead}</p>\n{_contents(sections, depth)}\n{body}'
        "</body></html>\n"
    )


@dataclass(frozen=True)
class Card:
    """A headline figure: its text (already formatted), its label, whether it is bad news (red)
    or good news (green; else neither), and an optional second line (``lower bound 9``)."""

    value: str
    label: str
    is_bad: bool = False
    detail: str = ""
    is_good: bool = False


def cards(items: Iterable[Card]) -> str:
    out = []
    for card in items:
        tone = "bad" if card.is_bad else "good" if card.is_good else "plain"
        detail = f"<small>{esc(card.detail)}</small>" if card.detail else ""
        out.append(
            f'<div class="card {tone}"><b>{esc(card.value)}</b>{esc(card.label)}{detail}</div>'
        )
    return f'<div class="cards">{"".join(out)}</div>'


@dataclass(frozen=True)
class Cell:
    """A table cell already formatted, with an optional class (``bad``, ``good``, ``quiet``)
    and an optional link (``#anchor``)."""

    text: str
    css_class: str = ""
    href: str = ""


def table(
    rows: Iterable[Sequence[object]],
    header: Sequence[str],
    *,
    names: int = 1,
    bad_rows: Sequence[bool] = (),
) -> str:
    """An HTML table: the first ``names`` columns are text (left aligned), the others figures
    (right aligned; a value that is not a :class:`Cell` or a string goes through
    :func:`~rackwise.pipeline.report.format.format_value`). A row whose ``bad_rows`` entry is
    true is shaded."""
    head = "".join(
        f'<th class="name">{esc(h)}</th>' if i < names else f"<th>{esc(h)}</th>"
        for i, h in enumerate(header)
    )
    body = []
    for r, row in enumerate(rows):
        cells = "".join(_cell(value, i < names) for i, value in enumerate(row))
        shade = ' class="bad"' if r < len(bad_rows) and bad_rows[r] else ""
        body.append(f"<tr{shade}>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _cell(value: object, is_name: bool) -> str:
    classes = ["name"] if is_name else []
    inner = esc(value if isinstance(value, str) else format_value(value))
    if isinstance(value, Cell):
        classes += [value.css_class] if value.css_class else []
        inner = esc(value.text)
        if value.href:
            inner = f'<a href="{esc(value.href)}">{inner}</a>'
    cls = f' class="{" ".join(classes)}"' if classes else ""
    return f"<td{cls}>{inner}</td>"


def note(text: str) -> str:
    """A grey note (``text`` is escaped)."""
    return f'<p class="note">{esc(text)}</p>'


def details(summary: str, body: str) -> str:
    """A collapsed block: ``summary`` (escaped) opens ``body`` (HTML)."""
    return f"<details><summary>{esc(summary)}</summary>{body}</details>"
