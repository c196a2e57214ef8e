"""The charts: legends, labelled axes with units, colour scales, tooltips, one id space per
chart, names drawn literally and escaped."""

from __future__ import annotations

import re

import numpy as np
import pytest

from rackwise.pipeline.report.charts import (
    DomainChart,
    Series,
    Targets,
    cluster_panels,
    domain_chart,
    measure,
)
from rackwise.pipeline.report.format import TIMES
from rackwise.pipeline.report.heat import HeatMap, heat_map
from tests.pipeline.report.dom import Node, parse

GIB = 2**30
HOSTILE = '<script>alert("x")</script> $x$'


def _replicas_chart(**extra: object) -> DomainChart:
    values: dict[str, object] = {
        "title": "Replicas per broker",
        "metric": "replicas",
        "domains": [f"broker {b}" for b in (1, 2, 3, 4)],
        "ticks": ["1", "2", "3", "4"],
        "axis_label": "broker id, grouped by rack",
        "series": [
            Series("before", np.array([10.0, 20, 30, 40]), "#999999"),
            Series("after", np.array([25.0, 25, 25, 25]), "#1f77b4"),
        ],
        "groups": ["/dc1/r1", "/dc1/r1", "/dc2/r1", "/dc2/r1"],
    }
    values.update(extra)
    return DomainChart(**values)  # type: ignore[arg-type]


def _svg(html: str) -> Node:
    return parse(html).find("svg")


def _legend(svg: Node) -> list[str]:
    return svg.find("g", "legend").texts("text")


def test_a_bar_chart_has_its_title_axes_and_legend() -> None:
    tree = parse(domain_chart(_replicas_chart(mean=25.0, mean_name="mean after")))
    figure = tree.find("figure", "chart")
    assert figure.find("p", "title").text() == "Replicas per broker"
    svg = figure.find("svg")
    assert svg.attrs["aria-label"] == "Replicas per broker"
    assert svg.find("g", "ylabel").text() == "replicas"
    assert svg.find("g", "xlabel").text() == "broker id, grouped by rack"
    assert _legend(svg) == ["before", "after", "mean after"]
    assert svg.find("g", "domains").texts("text") == ["1", "2", "3", "4"]
    assert "/dc1/r1" in svg.text() and "/dc2/r1" in svg.text()  # the racks over their groups
    assert "width" not in svg.attrs and "viewbox" in svg.attrs  # the page sizes it


def test_value_ticks_are_round_numbers_with_separators() -> None:
    big = Series("replicas", np.array([12_000.0, 3_000, 0, 7_500]), "#1f77b4")
    svg = _svg(domain_chart(_replicas_chart(series=[big])))
    numbers = [t for t in svg.texts("text") if re.fullmatch(r"[\d,.]+", t)]
    ticks = [t for t in numbers if t not in ("1", "2", "3", "4")]
    assert ticks[0] == "0" and "10,000" in ticks
    assert all(re.fullmatch(r"\d{1,3}(,\d{3})*", t) for t in ticks), ticks  # counts: whole


def test_a_small_count_gets_whole_ticks() -> None:
    one = Series("leaders", np.array([1.0, 1, 0, 1]), "#1f77b4")
    svg = _svg(domain_chart(_replicas_chart(series=[one], metric="leaders")))
    ticks = {t for t in svg.texts("text") if re.fullmatch(r"[\d.,]+", t)}
    assert "0.5" not in ticks and "0.00" not in ticks and "0.01" not in ticks


def test_data_is_drawn_in_the_unit_its_largest_figure_reads_best_in() -> None:
    data = Series("data", np.array([987.7, 300, 0, 12]) * GIB, "#1f77b4")
    svg = _svg(domain_chart(_replicas_chart(series=[data], metric="bytes")))
    assert svg.find("g", "ylabel").text() == "data (GiB)"
    tips = svg.texts("title")
    assert tips[0] == "broker 1: data 987.7 GiB"
    assert measure("bytes", 3 * 2**40).axis_label == "data (TiB)"
    assert measure("bytes", 100).axis_label == "data (bytes)"


def test_targets_leaders_and_failed_domains_are_drawn_and_named() -> None:
    targets = Targets(
        low=np.array([24.0, 24, 20, np.nan]),
        target=np.array([24.5, 24.5, 20, np.nan]),
        high=np.array([25.0, 25, 20, np.nan]),
    )
    chart = _replicas_chart(
        targets=targets,
        overlay=Series("leaders (inside)", np.array([3.0, 8, 8, 9]), "#0b3c5d"),
        failed=np.array([False, False, False, True]),
        failed_name="failed log directory",
    )
    svg = _svg(domain_chart(chart))
    assert _legend(svg) == [
        "before",
        "after",
        "leaders (inside)",
        "target range (the goal's bounds)",
        "target",
        "failed log directory",
    ]
    tips = svg.texts("title")
    assert tips[0] == ("broker 1: before 10, after 25, leaders (inside) 3, target 24.5 (24 to 25)")
    assert tips[3] == "broker 4: before 40, after 25, leaders (inside) 9, failed log directory"
    assert "failed" in svg.text().split()  # written up the band


def test_every_domain_has_a_tooltip_over_its_slot() -> None:
    svg = _svg(domain_chart(_replicas_chart()))
    tips = svg.find_all("rect", "tip")
    assert len(tips) == 4
    xs = [float(t.attrs["x"]) for t in tips]
    assert xs == sorted(xs) and float(tips[0].attrs["width"]) > 0
    assert tips[2].find("title").text() == "broker 3: before 30, after 25"


def test_names_from_the_input_are_drawn_literally_and_escaped() -> None:
    chart = _replicas_chart(
        domains=[HOSTILE, "b", "c", "d"], ticks=[HOSTILE, "2", "3", "4"], groups=[]
    )
    html = domain_chart(chart)
    assert "<script>" not in html
    assert "&lt;script&gt;" in html
    svg = _svg(html)
    assert HOSTILE in svg.find("g", "domains").texts("text")
    assert svg.texts("title")[0].startswith(HOSTILE)


def test_two_charts_share_no_id_and_reference_only_their_own() -> None:
    first = domain_chart(_replicas_chart(failed=np.array([True, False, False, False])))
    second = domain_chart(_replicas_chart(failed=np.array([False, True, False, False])))
    ids = [re.findall(r'\bid="([^"]+)"', text) for text in (first, second)]
    assert ids[0] and not set(ids[0]) & set(ids[1])
    for text, own in zip((first, second), ids, strict=True):
        refs = re.findall(r'(?:url\(#|href="#)([^)"]+)', text)
        assert refs and set(refs) <= set(own)


def test_a_chart_is_the_same_every_time() -> None:
    assert domain_chart(_replicas_chart()) == domain_chart(_replicas_chart())


def _heat(columns: int) -> HeatMap:
    ratios = np.tile(np.linspace(0.2, 2.6, columns), (2, 1))
    ratios[1, 0] = np.nan
    return HeatMap(
        title="Heat map of the broker level",
        domains=[f"broker {i}" for i in range(columns)],
        ticks=[str(i) for i in range(columns)],
        rows=["replicas", "data"],
        ratios=ratios,
        values=[[f"{i}" for i in range(columns)], [f"{i} GiB" for i in range(columns)]],
        axis_label="broker id, grouped by rack",
    )


def test_a_heat_map_has_its_colour_scale_and_figures() -> None:
    svg = _svg(heat_map(_heat(5)))
    scale = svg.find("g", "colour-scale").texts("text")
    assert f"1{TIMES} mean" in scale and f"2{TIMES}" in scale and "÷ the level's mean" in scale
    assert svg.find("g", "xlabel").text() == "broker id, grouped by rack"
    cells = svg.find("g", "cells").texts("text")
    assert cells == ["0.2", "0.8", "1.4", "2.0", "2.6", "0.8", "1.4", "2.0", "2.6"]  # no NaN
    assert svg.texts("title")[1] == "broker 1: replicas 1; data 1 GiB"


@pytest.mark.parametrize("columns", [40, 200])
def test_a_wide_heat_map_keeps_its_tooltips_but_not_its_cell_text(columns: int) -> None:
    svg = _svg(heat_map(_heat(columns)))
    assert not svg.find_all("g", "cells")
    assert len(svg.find_all("rect", "tip")) == columns
    labels = svg.find("g", "domains").texts("text")
    assert 0 < len(labels) <= 72 and labels[0] == "0"


def test_the_fleet_panels_give_each_measure_its_own_axis() -> None:
    svg = _svg(
        cluster_panels(
            "The worst clusters",
            ["c1", "c2"],
            [
                ("badly spread partitions", np.array([30.0, 2]), "#1f77b4"),
                ("offline or under min ISR now", np.array([0.0, 5]), "#c0392b"),
            ],
            "partitions",
        )
    )
    assert svg.texts("text").count("partitions") == 2
    assert len(svg.find_all("g", "xlabel")) == 2
    assert {"badly spread partitions", "offline or under min ISR now"} <= set(svg.texts("text"))


def test_a_large_cluster_keeps_every_domain_and_thins_its_labels() -> None:
    n = 215
    chart = _replicas_chart(
        domains=[f"broker {b}" for b in range(n)],
        ticks=[str(b) for b in range(n)],
        series=[
            Series("before", np.arange(n, dtype=float), "#999999"),
            Series("after", np.full(n, 100.0), "#1f77b4"),
        ],
        groups=[f"/r{b // 20}" for b in range(n)],
    )
    svg = _svg(domain_chart(chart))
    assert len(svg.find_all("rect", "tip")) == n
    labels = svg.find("g", "domains").texts("text")
    assert labels[:2] == ["0", "3"] and len(labels) <= 72
    assert _legend(svg) == ["before", "after"]
