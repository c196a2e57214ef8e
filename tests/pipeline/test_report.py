"""The HTML report: self-contained, with its charts and tables, and every input name escaped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from rackwise.pipeline.report import REPORT_CLUSTERS, render_report, write_report

HOSTILE = '<script>alert("x")</script>'
RACK = "/dc&1/<r1>"
TOPIC = 'orders"><img src=x onerror=alert(1)>'


def _load(cluster_id: str) -> pd.DataFrame:
    rows: list[dict[str, Any]] = []
    for broker in range(1, 5):
        rows.append(_row(cluster_id, "broker", str(broker), broker, None, None, 10 * broker))
        for disk in ("/d1", "/d2"):
            live = disk != "/d2" or broker != 4  # 4:/d2 has failed
            rows.append(
                _row(cluster_id, "log_dir", f"{broker}:{disk}", broker, disk, live, 5 * broker)
            )
    rows.append(_row(cluster_id, "dc", "/dc&1", None, None, None, 30))
    rows.append(_row(cluster_id, "dc", "/dc2", None, None, None, 70))
    return pd.DataFrame(rows)


def _row(
    cid: str,
    level: str,
    domain: str,
    broker: int | None,
    log_dir: str | None,
    live: bool | None,
    n: int,
) -> dict[str, Any]:
    return {
        "cluster_id": cid,
        "level": level,
        "domain": domain,
        "broker_id": broker,
        "log_dir": log_dir,
        "is_live": live,
        "replicas": n,
        "leaders": n // 3,
        "bytes": n * 2**30,
        "total_bytes": 400 * 2**30,
        "utilisation": n / 400,
    }


def _audit(cluster_ids: list[str]) -> tuple[dict[str, Any], dict[str, pd.DataFrame]]:
    clusters = {}
    for i, cid in enumerate(cluster_ids):
        clusters[cid] = {
            "brokers": 4,
            "partitions": 100,
            "replicas": 300,
            "offline_now": 0,
            "under_min_isr_now": i,
            "partitions_with_spread_violations": 7,
            "max_offline_if_lost": 3,
            "max_under_min_isr_if_lost": 5,
            "min_insync_replicas": 2,
            "rack_levels": ["dc", "rack"],
        }
    summary = {
        "fleet": {"clusters": len(cluster_ids), "worst_clusters": cluster_ids[::-1][:20]},
        "clusters": clusters,
    }
    exposure = pd.DataFrame(
        [
            {
                "cluster_id": c,
                "level": "dc",
                "domain": RACK,
                "broker_id": None,
                "log_dir": None,
                "partitions": 9,
                "offline_if_lost": 3,
                "under_min_isr_if_lost": 5,
            }
            for c in cluster_ids
        ]
    )
    by_node = pd.DataFrame(
        [{"cluster_id": c, "level": "dc", "node": RACK, "partitions": 7} for c in cluster_ids]
    )
    sample = pd.DataFrame(
        [
            {
                "cluster_id": c,
                "topic": TOPIC,
                "partition": 3,
                "depth": 1,
                "level": "dc",
                "node": RACK,
                "replicas": 2,
                "max_child_replicas": 2,
                "min_free_child_replicas": 0,
            }
            for c in cluster_ids
        ]
    )
    skew = pd.DataFrame(
        [
            {
                "cluster_id": c,
                "level": "broker",
                "metric": "replicas",
                "domains": 4,
                "min": 10.0,
                "max": 40.0,
                "mean": 25.0,
                "max_over_mean": 1.6,
            }
            for c in cluster_ids
        ]
    )
    brokers = pd.DataFrame(
        [
            {"cluster_id": c, "broker_id": b, "rack": RACK if b <= 2 else None}
            for c in cluster_ids
            for b in range(1, 5)
        ]
    )
    frames = {
        "load": pd.concat([_load(c) for c in cluster_ids], ignore_index=True),
        "exposure": exposure,
        "spread_by_node": by_node,
        "spread_violations": sample,
        "skew": skew,
        "brokers": brokers,
    }
    return summary, frames


def _charts(text: str) -> int:
    return text.count("<svg ")


@pytest.fixture(scope="module")
def report() -> str:
    summary, frames = _audit([HOSTILE, "c2"])
    return render_report(summary, frames)


def test_report_is_self_contained(report: str) -> None:
    assert "http://" not in report and "https://" not in report
    assert "<script" not in report.lower()
    assert "<link" not in report and "@import" not in report


def test_report_has_the_plots(report: str) -> None:
    # the fleet chart, then per cluster: replicas and GiB per broker, GiB per log dir, and a
    # heat map row per level present (dc, broker)
    assert _charts(report) == 1 + 2 * (2 + 1 + 2)
    assert report.count("</svg>") == _charts(report)
    assert "4:/d2 (failed)" in report  # the failed log dir's tooltip
    assert 'fill="#c0392b"' in report  # drawn red


def test_report_has_the_exposure_table(report: str) -> None:
    assert "domain if lost" in report
    assert "<td>3</td><td>5</td>" in report  # offline, under min ISR of the exposed data centre


def test_report_escapes_hostile_names(report: str) -> None:
    assert HOSTILE not in report
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in report
    assert "/dc&amp;1/&lt;r1&gt;" in report
    assert TOPIC not in report
    assert "orders&quot;&gt;&lt;img src=x onerror=alert(1)&gt;" in report


def test_report_caps_cluster_sections(tmp_path: Path) -> None:
    ids = [f"c{i:02d}" for i in range(REPORT_CLUSTERS + 5)]
    summary, frames = _audit(ids)
    frames = {k: v[v["cluster_id"].isin(ids[:2])] for k, v in frames.items()}  # keep it quick
    path = tmp_path / "report.html"
    write_report(path, summary, frames)
    text = path.read_text(encoding="utf-8")
    assert text.count("<h2 id=") == REPORT_CLUSTERS
    assert "5 healthier clusters have no section here" in text
    # the worst clusters first: the summary names them in reverse order
    assert text.index('id="c24"') < text.index('id="c23"')


def test_report_renders_the_plan_section() -> None:
    summary, frames = _audit(["c1"])
    plan = {
        "clusters": {
            "c1": {
                "replica_moves": 12,
                "data_to_move_bytes": 3 * 2**30,
                "leader_moves": 4,
                "balancedness_score": {"before": 71.5, "after": 98.0},
                "spread_violations": {"before": 7, "after": 0},
                "lower_bound": {"replica_moves": 9, "explanation": "fix 7 violations <first>"},
                "goals": [
                    {"goal": "RackAwareGoal", "status": "FIXED", "time_ms": 3.5},
                    {"goal": "ReplicaDistributionGoal", "status": "NO-ACTION", "time_ms": 1.0},
                ],
            }
        }
    }
    load = frames["load"]
    before = load[load["level"].isin(["broker", "log_dir"])]
    after = before.assign(replicas=25, bytes=25 * 2**30)
    text = render_report(summary, frames, plan, {"load_before": before, "load_after": after})
    assert "Plan for c1" in text
    assert "71.5 → 98.0" in text
    assert "RackAwareGoal" in text and "FIXED" in text
    assert "fix 7 violations &lt;first&gt;" in text
    assert _charts(text) == 5 + 3  # the audit's five, before/after replicas, bytes, dirs


def test_plan_section_has_the_heat_map_after_and_goal_statuses() -> None:
    summary, frames = _audit(["c1"])
    plan = {
        "c1": {
            "replica_moves": 3,
            "lower_bound": {"replica_moves": 2, "explanation": "two must leave"},
            "goals": [{"goal": "SpreadGoal", "status": "VIOLATED", "time_ms": 1.0}],
        }
    }
    load = frames["load"]
    before = load[load["level"].isin(["broker", "log_dir"])]
    after = load.assign(replicas=25)  # every domain, as the plan job's domains_after
    plan_frames = {"load_before": before, "load_after": before, "domains_after": after}
    text = render_report(summary, frames, plan, plan_frames)
    assert "Heat map after the plan" in text
    assert "lower bound on replica moves" in text and "Lower bound: two must leave" in text
    assert 'style="color:#c0392b"><b>VIOLATED</b>' in text
    assert _charts(text) == 5 + 3 + 2  # the audit's, before/after, the heat maps after (dc, broker)


def test_before_after_orders_brokers_by_number_and_profiles_a_large_cluster() -> None:
    from rackwise.pipeline._report_charts import MAX_BARS, before_after_chart

    def frame(n: int, value: int) -> pd.DataFrame:
        ids = list(range(1, n + 1))
        return pd.DataFrame({"domain": [str(i) for i in ids], "broker_id": ids, "replicas": value})

    small = before_after_chart(frame(12, 5), frame(12, 6), "replicas", "broker")
    labels = [p.split("<")[0] for p in small.split('dy="3">')[1:] if not p.startswith("<")]
    assert labels == [str(i) for i in range(1, 13)]  # 10 after 9, not after 1
    large = before_after_chart(frame(MAX_BARS, 5), frame(MAX_BARS, 6), "replicas", "broker")
    assert large.count("<polyline") == 2 and "<rect" not in large
    assert f"{MAX_BARS:,} brokers, heaviest first" in large
