"""The audit and plan reports: one self-contained page, titled for what it is, with a contents
list, sections in an operator's order, before and after from the same figures, targets,
legends, axis labels with units, and numbers for people; every input name escaped."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rackwise.pipeline.report import REPORT_CLUSTERS, render_report, write_report
from rackwise.pipeline.report.format import TIMES
from tests.pipeline.report import fixtures
from tests.pipeline.report.dom import Node, parse


@pytest.fixture(scope="module")
def audit_report() -> str:
    summary, frames = fixtures.audit([fixtures.HOSTILE, "c2"])
    return render_report(summary, frames)


@pytest.fixture(scope="module")
def plan_report() -> str:
    summary, frames = fixtures.audit(["c1"])
    return render_report(summary, frames, fixtures.plan(["c1"]), fixtures.plan_frames(["c1"]))


@pytest.fixture(scope="module")
def fleet_plan_report() -> str:
    ids = ["c1", "c2"]
    summary, frames = fixtures.audit(ids)
    return render_report(summary, frames, fixtures.plan(ids), fixtures.plan_frames(ids))


def _headings(tree: Node) -> list[str]:
    return [n.text() for n in tree.iter() if re.fullmatch(r"h[1-5]", n.tag)]


def _section(tree: Node, title: str) -> Node:
    for section in tree.find_all("section"):
        heading = next(c for c in section.children if isinstance(c, Node))
        if heading.text() == title:
            return section
    raise AssertionError(f"no section {title!r} in {_headings(tree)}")


def _visible_text(tree: Node) -> str:
    return tree.find("body").text()


@pytest.mark.parametrize("name", ["audit_report", "plan_report", "fleet_plan_report"])
def test_a_report_is_self_contained(name: str, request: pytest.FixtureRequest) -> None:
    text = request.getfixturevalue(name)
    assert "http" not in text and "@import" not in text and "url(" not in text.split("<body")[0]
    tree = parse(text)  # every element closed
    tags = {n.tag for n in tree.iter()}
    assert not tags & {"script", "link", "img", "iframe", "object", "embed", "image"}
    assert not [n for n in tree.iter() if "src" in n.attrs]
    hrefs = [v for n in tree.iter() for k, v in n.attrs.items() if k.endswith("href")]
    assert hrefs and all(h.startswith("#") for h in hrefs)


@pytest.mark.parametrize("name", ["audit_report", "plan_report", "fleet_plan_report"])
def test_every_contents_link_leads_to_a_section(name: str, request: pytest.FixtureRequest) -> None:
    tree = parse(request.getfixturevalue(name))
    links = [a.attrs["href"] for a in tree.find("nav", "contents").find_all("a")]
    ids = [n.attrs["id"] for n in tree.iter() if "id" in n.attrs and n.tag.startswith("h")]
    assert len(ids) == len(set(ids))
    assert links and all(link.startswith("#") and link[1:] in ids for link in links)
    table_links = [a.attrs["href"] for t in tree.find_all("table") for a in t.find_all("a")]
    assert all(link[1:] in ids for link in table_links)


@pytest.mark.parametrize("name", ["audit_report", "plan_report", "fleet_plan_report"])
def test_numbers_are_for_people(name: str, request: pytest.FixtureRequest) -> None:
    text = _visible_text(parse(request.getfixturevalue(name)))
    for word in ("True", "False", "None", "nan", "NaN"):
        assert not re.search(rf"\b{word}\b", text), word
    assert not re.search(r"\d{5,}", text.replace(",", "")), "a raw number"
    assert not re.search(r"\d\.\d{3}", text), "three decimals"


def test_the_audit_report_is_titled_and_ordered_for_the_fleet(audit_report: str) -> None:
    tree = parse(audit_report)
    assert tree.find("title").text() == "rackwise audit" == tree.find("h1").text()
    contents = tree.find("nav", "contents").texts("a")
    assert contents == ["Fleet", "Cluster c2", f"Cluster {fixtures.HOSTILE}"]  # worst first
    cluster = _section(tree, "Cluster c2")
    parts = [h.text() for h in cluster.find_all("h3")]
    assert parts == [
        "Load per broker",
        "Load per log directory",
        "Heat maps: each domain against its level's mean",
        "If one domain fails (min.insync.replicas = 2)",
        "Badly spread partitions",
        "Skew per level",
    ]


def _charts(section: Node) -> dict[str, Node]:
    return {f.find("p", "title").text(): f.find("svg") for f in section.find_all("figure", "chart")}


def test_audit_charts_have_legends_labelled_axes_and_colour_scales(audit_report: str) -> None:
    tree = parse(audit_report)
    charts = _charts(_section(tree, "Cluster c2"))
    assert list(charts) == [
        "Replicas per broker",
        "Data per broker",
        "Data per log directory",
        "Heat map of the dc level",
        "Heat map of the broker level",
    ]
    replicas, data, dirs = (charts[k] for k in list(charts)[:3])
    assert replicas.find("g", "ylabel").text() == "replicas"
    assert replicas.find("g", "legend").texts("text") == [
        "replicas",
        "leaders (inside)",
        "mean replicas per broker",
    ]
    assert data.find("g", "ylabel").text() == "data (GiB)"
    assert dirs.find("g", "legend").texts("text") == [
        "data",
        "mean over live directories",
        "failed log directory",
    ]
    assert "log directory 4:/d2: data 0 B, failed log directory" in dirs.texts("title")
    for heat in list(charts.values())[3:]:
        assert "÷ the level's mean" in heat.find("g", "colour-scale").texts("text")
    for svg in charts.values():
        assert svg.find("g", "xlabel").text()
    fleet = _charts(_section(tree, "Fleet"))["The worst clusters"]
    assert fleet.texts("text").count("partitions") == 3  # three measures, three axes


def test_audit_tables_read_in_units(audit_report: str) -> None:
    cluster = _section(parse(audit_report), "Cluster c2")
    skew = cluster.find_all("table")[-1]
    assert skew.find_all("tr")[1].texts("td") == [
        "broker",
        "data",
        "4",
        "10.0 GiB",
        "40.0 GiB",
        "25.0 GiB",
        f"1.60{TIMES}",
    ]
    per_dir = next(d for d in cluster.find_all("details") if "log directory" in d.text())
    failed = next(r for r in per_dir.find_all("tr") if "failed" in r.texts("td"))
    assert failed.texts("td")[:5] == ["4", "/d2", "failed", "20", "not known"]
    assert "bad" in failed.classes()


def test_a_report_escapes_every_name_from_the_input(audit_report: str) -> None:
    assert fixtures.HOSTILE not in audit_report and fixtures.TOPIC not in audit_report
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in audit_report
    assert "/dc&amp;1/&lt;r1&gt;" in audit_report
    assert "orders&quot;&gt;&lt;img src=x onerror=alert(1)&gt;" in audit_report


def test_the_report_caps_its_cluster_sections(tmp_path: Path) -> None:
    ids = [f"c{i:02d}" for i in range(REPORT_CLUSTERS + 5)]
    summary, frames = fixtures.audit(ids)
    frames = {k: v[v["cluster_id"].isin(ids[-2:])] for k, v in frames.items()}  # keep it quick
    path = tmp_path / "report.html"
    write_report(path, summary, frames)
    tree = parse(path.read_text(encoding="utf-8"))
    clusters = [t for t in tree.find("nav", "contents").texts("a") if t.startswith("Cluster ")]
    assert len(clusters) == REPORT_CLUSTERS
    assert clusters[:2] == ["Cluster c24", "Cluster c23"]  # the summary's worst first
    assert "5 healthier clusters have no section here" in _visible_text(tree)


def test_the_plan_report_is_titled_as_a_plan_and_puts_the_plan_first(plan_report: str) -> None:
    tree = parse(plan_report)
    assert tree.find("title").text() == "rackwise plan" == tree.find("h1").text()
    assert "rackwise audit" not in plan_report
    nav = tree.find("nav", "contents")
    top = [li.find("a").text() for li in nav.find("ol").children if isinstance(li, Node)]
    assert top == ["Plan for c1", "Audit of c1"]
    plan_parts = [a.text() for a in nav.find("ol").find("li").find("ol").find_all("a")]
    assert plan_parts == [
        "Before and after",
        "Goals, in priority order",
        "Replicas and leaders per broker",
        "Data per broker",
        "Data per log directory",
        "Heat maps, before and after",
        "All figures",
    ]
    h2 = [h.text() for h in tree.find_all("h2")]
    assert h2 == ["Plan for c1", "Audit of c1"]


def test_the_plan_headline_is_in_units(plan_report: str) -> None:
    plan = _section(parse(plan_report), "Plan for c1")
    cards = {c.find("b").text(): c.text() for c in plan.find_all("div", "card")}
    assert cards["860"] == "860 replica moves lower bound 726"
    assert cards["987.7 GiB"] == "987.7 GiB data to move"
    assert cards["30 min 40 s"] == "30 min 40 s move time at the throttle at 95.4 MiB/s per broker"
    assert cards["7 → 0"] == "7 → 0 badly spread partitions"
    assert "fix 7 violations &lt;first&gt;" in plan_report


def test_before_and_after_come_from_the_same_figures(plan_report: str) -> None:
    tree = parse(plan_report)
    plan = _section(tree, "Plan for c1")
    compare = _section(plan, "Before and after").find("table")
    rows = {r.texts("td")[0]: r.texts("td")[1:] for r in compare.find_all("tr")[1:]}
    assert rows["badly spread partitions"] == ["7", "0"]
    assert rows["replicas without a live log directory"] == ["20", "0"]
    assert rows["replicas per broker"][1] == f"25 to 25 (most 1.00{TIMES} mean)"
    dirs = _charts(_section(plan, "Data per log directory"))[
        "Data per log directory, before and after"
    ]
    failed = next(t for t in dirs.texts("title") if t.startswith("log directory 4:/d2"))
    assert failed == "log directory 4:/d2: before 0 B, after 0 B, failed log directory"
    assert "393" not in plan.text() and "393.0 GiB" not in plan_report  # the planner's guess
    audit_dirs = _section(_section(tree, "Audit of c1"), "Load per log directory")
    failed_row = next(r for r in audit_dirs.find_all("tr") if "failed" in r.texts("td"))
    assert failed_row.texts("td")[:5] == ["4", "/d2", "failed", "20", "not known"]


def test_the_plan_draws_the_targets_its_goals_use(plan_report: str) -> None:
    plan = _section(parse(plan_report), "Plan for c1")
    charts = _charts(_section(plan, "Replicas and leaders per broker"))
    replicas = charts["Replicas per broker, before and after"]
    assert replicas.find("g", "legend").texts("text") == [
        "before",
        "after",
        "target range (the goal's bounds)",
        "target",
    ]
    assert "broker 1: before 10, after 25, target 24.5 (24 to 25)" in replicas.texts("title")
    leaders = charts["Leaders per broker, before and after"]  # no targets given for leaders
    assert leaders.find("g", "legend").texts("text") == ["before", "after", "mean after"]


def test_without_targets_the_plan_says_it_draws_the_mean() -> None:
    summary, frames = fixtures.audit(["c1"])
    plan_frames = fixtures.plan_frames(["c1"], with_targets=False)
    del plan_frames["domains_after"]  # an older caller: after from the planner's rows
    tree = parse(render_report(summary, frames, fixtures.plan(["c1"]), plan_frames))
    plan = _section(tree, "Plan for c1")
    figure = _section(plan, "Data per broker").find("figure", "chart")
    assert figure.find("g", "legend").texts("text") == ["before", "after", "mean after"]
    assert "the plan gave no per-domain targets" in figure.find("figcaption").text()
    dirs = _charts(_section(plan, "Data per log directory"))[
        "Data per log directory, before and after"
    ]
    assert "log directory 4:/d2: before 0 B, after 0 B, failed log directory" in dirs.texts("title")


def test_goals_read_as_statuses_and_units(plan_report: str) -> None:
    goals = _section(parse(plan_report), "Goals, in priority order").find("table")
    rows = [r.find_all("td") for r in goals.find_all("tr")[1:]]
    assert [r[0].text() for r in rows] == [
        "SpreadGoal",
        "ReplicaDistributionGoal",
        "OfflineReplicaGoal",
    ]
    assert [r[1].text() for r in rows] == ["yes", "no", "yes"]
    assert "good" in rows[0][2].classes() and "bad" in rows[1][2].classes()
    assert [c.text() for c in rows[0][4:]] == ["7", "0", "9", "3.0 GiB", "6.0 ms"]


def test_the_plans_charts_stand_for_the_audits_in_a_plan_report(plan_report: str) -> None:
    tree = parse(plan_report)
    heat = _section(_section(tree, "Plan for c1"), "Heat maps, before and after")
    rows = _charts(heat)["Heat map of the broker level"].texts("text")
    assert "before: replicas" in rows and "after: replicas" in rows
    audit = _section(tree, "Audit of c1")
    assert not audit.find_all("figure")  # the same figures as the plan's "before"
    ids = {h.attrs.get("id") for h in tree.find_all("h3")}
    links = {a.text(): a.attrs["href"][1:] for a in audit.find_all("a")}
    assert set(links) == {
        "replicas and leaders per broker",
        "data per broker",
        "data per log directory",
        "heat maps",
    }
    assert set(links.values()) <= ids
    assert audit.find_all("details")  # the figures per broker and per directory stay


def test_all_figures_are_named_and_in_units(plan_report: str) -> None:
    figures = _section(parse(plan_report), "All figures").find("table")
    rows = dict(tuple(r.texts("td")) for r in figures.find_all("tr")[1:])
    assert rows["data to move bytes"] == "987.7 GiB"
    assert rows["move time seconds"] == "30 min 40 s"
    assert rows["move time throttle bytes per s"] == "95.4 MiB/s"
    assert rows["planned on valid rows only"] == "no"
    assert rows["plan ms"] == "91 ms"


def test_the_fleet_plan_report_lists_every_cluster_plan_then_the_audit(
    fleet_plan_report: str,
) -> None:
    tree = parse(fleet_plan_report)
    nav = tree.find("nav", "contents")
    top = [li.find("a").text() for li in nav.find("ol").children if isinstance(li, Node)]
    assert top == ["Plan", "Audit of the current state"]
    assert nav.texts("a")[1:3] == ["Plan for c2", "Plan for c1"]  # the audit's worst first
    plan = _section(tree, "Plan")
    rows = [r.texts("td") for r in plan.find("table").find_all("tr")[1:]]
    assert rows[0][:5] == ["c2", "860", "726", "987.7 GiB", "30 min 40 s"]
    assert tree.find("h1").text() == "rackwise plan"


def test_a_cluster_that_could_not_be_planned_says_why() -> None:
    summary, frames = fixtures.audit(["c1"])
    plan = {
        "clusters": {
            "c1": {"error": "no live broker <here>", "spread_violations": {"before": 7, "after": 7}}
        }
    }
    tree = parse(render_report(summary, frames, plan, {}))
    section = _section(tree, "Plan for c1")
    assert "Not planned: no live broker <here>" in section.text()


def test_a_report_is_the_same_every_time() -> None:
    summary, frames = fixtures.audit(["c1"])
    first = render_report(summary, frames, fixtures.plan(["c1"]), fixtures.plan_frames(["c1"]))
    again = render_report(summary, frames, fixtures.plan(["c1"]), fixtures.plan_frames(["c1"]))
    assert first == again
