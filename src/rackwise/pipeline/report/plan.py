"""The plan's part of a report: what the plan does, per cluster, before and after.

Goals
    What an operator must know before running ``kafka-reassign-partitions --execute``: how
    much moves and for how long (headline cards: replica moves beside the lower bound, data to
    move, the time at the throttle), what it fixes (before and after side by side: spread,
    failed directories, balance), whether every goal is met, and where each broker lands
    against the target its goals use (bars before and after with the target range).

Constraints
    Before and after come from the same figures (:mod:`~rackwise.pipeline.report.states`): the
    audit's load table and the same domains after. The plan summary is read generously (the
    plan job shapes it): a figure that is absent is not shown. A cluster that could not be
    planned says why.

Algorithm
    The fleet (several clusters): cards summed over the fleet and a table per cluster linking to
    its section. A cluster: cards; the before-and-after table; the goals in priority order; the
    bars per broker (replicas, leaders, data) and per log directory (data); heat maps of every
    level before and after on one colour scale; every figure of the summary, named and in
    units.

Worked example
    ``cluster-002``: 860 replica moves (lower bound 726), 987.7 GiB to move, 30 min 40 s at
    95.4 MiB/s; badly spread partitions 30 → 0; replicas without a live log directory 348 → 0;
    every goal FIXED; broker 13 from 660 replicas to 571 against its target 500 to 501.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import numpy as np
import pandas as pd

from rackwise.pipeline.report import charts, load
from rackwise.pipeline.report.audit import heat_map
from rackwise.pipeline.report.format import (
    NOT_GIVEN,
    TIMES,
    format_bool,
    format_bytes,
    format_count,
    format_decimal,
    format_duration,
    format_figure,
    format_metric,
    format_ms,
    format_rate,
    format_ratio,
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
from rackwise.pipeline.report.states import States, cluster_states

_DATA_METRICS: Final = ("bytes", "utilisation")
_STATUS_CLASS: Final = {"VIOLATED": "bad", "FIXED": "good", "NO-ACTION": "quiet"}
_TARGET_NOTES: Final = {
    "replicas": "the replica goal: floor to ceiling of each broker's fair share (the mean, "
    "except where the spread rule fixes a rack's total)",
    "leaders": "the leader goal: within one of the mean",
    "bytes": "the data goal: each broker's share of the data, within 10% (at least one mean "
    "replica)",
}


def per_cluster(plan_summary: Mapping[str, Any]) -> Mapping[str, Any]:
    """``plan_summary["clusters"]``, or the summary itself when it is already per cluster."""
    inner = plan_summary.get("clusters")
    return inner if isinstance(inner, Mapping) else plan_summary


def _int(entry: Mapping[str, Any], key: str) -> int | None:
    value = entry.get(key)
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _float(value: object) -> float | None:
    """A number from the summary (None when it is not one)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _pair(entry: Mapping[str, Any], key: str) -> tuple[Any, Any] | None:
    value = entry.get(key)
    if isinstance(value, Mapping) and "before" in value and "after" in value:
        return value["before"], value["after"]
    return None


def _move_time(entry: Mapping[str, Any], throttle: object) -> Card:
    timing = entry.get("move_time")
    seconds = timing.get("seconds") if isinstance(timing, Mapping) else None
    rate = timing.get("throttle_bytes_per_s") if isinstance(timing, Mapping) else throttle
    if seconds is None:
        why = "no --throttle given" if rate is None else "no replica's size is known"
        return Card(NOT_GIVEN, "move time", detail=why)
    return Card(
        format_duration(float(seconds)),
        "move time at the throttle",
        detail=f"at {format_rate(_float(rate))} per broker",
    )


def _cards(entry: Mapping[str, Any], throttle: object) -> str:
    out = []
    moves, bound = _int(entry, "replica_moves"), entry.get("lower_bound")
    if moves is not None:
        floor = bound.get("replica_moves") if isinstance(bound, Mapping) else None
        out.append(
            Card(
                format_count(moves),
                "replica moves",
                detail=f"lower bound {floor:,}" if floor is not None else "",
            )
        )
    if "data_to_move_bytes" in entry:
        out.append(Card(format_bytes(entry["data_to_move_bytes"]), "data to move"))
    if "move_time" in entry or throttle is not None:
        out.append(_move_time(entry, throttle))
    intra = _int(entry, "intra_broker_moves")
    if intra is not None:
        size = format_bytes(entry.get("intra_broker_data_to_move_bytes"))
        out.append(Card(format_count(intra), "moves between a broker's directories", detail=size))
    for key, label in (
        ("leader_moves", "leader moves"),
        ("partitions_changed", "partitions changed"),
    ):
        if _int(entry, key) is not None:
            out.append(Card(format_count(_int(entry, key)), label))
    spread = _pair(entry, "spread_violations")
    if spread is not None:
        out.append(
            Card(
                f"{spread[0]:,} → {spread[1]:,}",
                "badly spread partitions",
                is_bad=bool(spread[1]),
                is_good=not spread[1],
            )
        )
    if "reassignment_file" in entry:
        name = entry["reassignment_file"] or "none: nothing to change"
        out.append(Card(str(name), "reassignment file"))
    return cards(out)


def _notes(entry: Mapping[str, Any]) -> str:
    out = []
    if entry.get("error"):
        out.append(f"<p><b>Not planned:</b> {esc(entry['error'])}</p>")
    rejected = _int(entry, "rejected_rows") or 0
    if rejected:
        text = f"{rejected:,} input rows were set aside as invalid; the plan covers the rest."
        out.append(note(text))
    estimated = _int(entry, "num_estimated_sizes") or 0
    if entry.get("sizes_known") is False:
        out.append(
            note(
                "No replica's size is known (a metadata export holds none; give --log-dirs "
                "for them): the plan balances replicas and leaders only, and no data figure "
                "is given."
            )
        )
    elif estimated:
        out.append(
            note(
                f"{estimated:,} replicas have no known size (in a failed log directory, or not "
                "reported): the plan counts each at an estimated size, so the data after "
                "includes bytes the data before does not."
            )
        )
    timing = entry.get("move_time")
    if isinstance(timing, Mapping) and timing.get("explanation"):
        out.append(note(f"Move time: {timing['explanation']}."))
    bound = entry.get("lower_bound")
    if isinstance(bound, Mapping) and bound.get("explanation"):
        out.append(
            details(
                "Why no plan can move fewer replicas (the lower bound)",
                f"<p>{esc(bound['explanation'])}</p>",
            )
        )
    return "".join(out)


def _goal_violations(entry: Mapping[str, Any], goal: str) -> tuple[Any, Any] | None:
    for g in entry.get("goals") or []:
        if isinstance(g, Mapping) and g.get("goal") == goal:
            return g.get("violations_before"), g.get("violations_after")
    return None


def _range(metric: str, values: np.ndarray) -> str:
    known = values[~np.isnan(values)]
    if not known.size:
        return NOT_GIVEN
    mean = float(known.mean())
    spread = f" (most {format_ratio(float(known.max()) / mean)} mean)" if mean > 0 else ""
    least, most = (format_metric(metric, float(v)) for v in (known.min(), known.max()))
    return f"{least} to {most}{spread}"


def _compare(label: str, before: Any, after: Any, *, lower_is_better: bool = True) -> list[object]:
    tone = ""
    if isinstance(before, int | float) and isinstance(after, int | float) and before != after:
        tone = "good" if (after < before) == lower_is_better else "bad"
    text = [format_decimal(v) if isinstance(v, int | float) else str(v) for v in (before, after)]
    return [label, text[0], Cell(text[1], tone)]


def _before_after(
    entry: Mapping[str, Any], states: States | None, rack_of: Mapping[int, str]
) -> str:
    rows: list[list[object]] = []
    for label, pair in (
        ("badly spread partitions", _pair(entry, "spread_violations")),
        ("replicas without a live log directory", _goal_violations(entry, "OfflineReplicaGoal")),
    ):
        if pair is not None:
            rows.append(_compare(label, *pair))
    score = _pair(entry, "balancedness_score")
    if score is not None:
        rows.append(
            _compare("balancedness score (100: every goal met)", *score, lower_is_better=False)
        )
    if states is not None:
        for level, metric, label in (
            (load.BROKER, "replicas", "replicas per broker"),
            (load.BROKER, "leaders", "leaders per broker"),
            (load.BROKER, "bytes", "data per broker"),
            (load.BROKER, "utilisation", "used per broker"),
            (load.LOG_DIR, "bytes", "data per live log directory"),
        ):
            if metric in _DATA_METRICS and entry.get("sizes_known") is False:
                continue
            before, after = states.level(level, rack_of)
            if before.empty:
                continue
            live = ~load.failed(before)
            b, a = load.column(before, metric)[live], load.column(after, metric)[live]
            rows.append([label, _range(metric, b), _range(metric, a)])
    if not rows:
        return "<p>No figures.</p>"
    return table(rows, ("", "before", "after"), names=1)


def _goals(goals: object) -> str:
    if not isinstance(goals, list) or not goals or not all(isinstance(g, Mapping) for g in goals):
        return "<p>No goals in the summary.</p>"
    rows = []
    for g in goals:
        status = str(g.get("status", ""))
        rows.append(
            [
                str(g.get("goal", "")),
                format_bool(g.get("hard")) if "hard" in g else NOT_GIVEN,
                Cell(status, _STATUS_CLASS.get(status, "")),
                str(g.get("counts", "")),
                format_count(g.get("violations_before")),
                format_count(g.get("violations_after")),
                format_count(g.get("replica_moves")),
                format_bytes(g.get("bytes_moved")),
                format_ms(g.get("time_ms")),
            ]
        )
    header = (
        "goal",
        "hard",
        "status",
        "what a violation is",
        "violations before",
        "after",
        "replica moves",
        "data moved",
        "time",
    )
    return table(rows, header, names=4, bad_rows=[g.get("status") == "VIOLATED" for g in goals])


def _metric_chart(states: States, level: str, metric: str, rack_of: Mapping[int, str]) -> str:
    before, after = states.level(level, rack_of)
    if before.empty or metric not in before:
        return ""
    is_broker = level == load.BROKER
    failed = load.failed(before)
    ticks = (
        [str(b) for b in before["broker_id"]]
        if is_broker
        else [f"{b}:{p}" for b, p in zip(before["broker_id"], before["log_dir"], strict=True)]
    )
    targets = states.targets_of(before, level, metric)
    after_values = load.column(after, metric)
    name = charts.measure(metric, 1.0).name
    where = "broker" if is_broker else "log directory"
    caption = (
        f"Targets: {_TARGET_NOTES[metric]}."
        if targets is not None
        else "The dashed line is the mean after the plan; the plan gave no per-domain targets."
    )
    chart = charts.DomainChart(
        title=f"{name.capitalize()} per {where}, before and after",
        metric=metric,
        domains=[f"{where} {t}" for t in ticks],
        ticks=ticks,
        axis_label="broker id, grouped by rack" if is_broker else "log directory (broker:path)",
        series=[
            charts.Series("before", load.column(before, metric), charts.BEFORE),
            charts.Series("after", after_values, charts.AFTER),
        ],
        groups=list(before["rack"]) if is_broker else [str(b) for b in before["broker_id"]],
        group_names=is_broker,
        failed=None if is_broker else failed,
        targets=targets,
        mean=None if targets is not None else load.live_mean(after_values, failed),
        mean_name="mean after",
        caption=caption,
    )
    return charts.domain_chart(chart)


def _charts(
    states: States,
    rack_of: Mapping[int, str],
    anchor: str,
    levels: Sequence[str],
    sizes_known: bool,
) -> list[Section]:
    parts = []
    counts = _metric_chart(states, load.BROKER, "replicas", rack_of) + _metric_chart(
        states, load.BROKER, "leaders", rack_of
    )
    if counts:
        parts.append(Section("Replicas and leaders per broker", f"{anchor}-counts", counts))
    data = _metric_chart(states, load.BROKER, "bytes", rack_of) if sizes_known else ""
    if data:
        parts.append(Section("Data per broker", f"{anchor}-data", data))
    dirs = _metric_chart(states, load.LOG_DIR, "bytes", rack_of) if sizes_known else ""
    if dirs:
        parts.append(Section("Data per log directory", f"{anchor}-dirs", dirs))
    heat = []
    for level in [*levels, load.BROKER]:
        before, after = states.level(level, rack_of)
        if not before.empty and after["level"].notna().any():
            heat.append(heat_map(before, level, [("before", before), ("after", after)]))
    if heat:
        intro = (
            "<p>Each cell is a domain's figure over its level's mean in that state: "
            f"1{TIMES} is the mean; hover over a column for the figures.</p>"
        )
        parts.append(
            Section("Heat maps, before and after", f"{anchor}-heat", intro + "".join(heat))
        )
    return parts


def _scalars(entry: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Every scalar figure, nested objects one level deep, named and in units."""
    out: list[tuple[str, str]] = []
    for key, value in sorted(entry.items()):
        if key in ("skew", "goals"):
            continue
        if isinstance(value, Mapping):
            for sub, inner in sorted(value.items()):
                if not isinstance(inner, Mapping | list) and sub != "explanation":
                    out.append(
                        (f"{key} {sub}".replace("_", " "), format_figure(f"{key}.{sub}", inner))
                    )
        elif not isinstance(value, list):
            out.append((key.replace("_", " "), format_figure(key, value)))
    return out


def plan_cluster_section(
    cluster_id: str,
    entry: Mapping[str, Any],
    frames: tuple[Mapping[str, pd.DataFrame], Mapping[str, pd.DataFrame]],
    anchor: str,
    title: str,
    throttle: object = None,
) -> Section:
    """One cluster's plan (see the module notes); ``frames`` are the audit's and the plan's."""
    audit_frames, plan_frames = frames
    states = cluster_states(cluster_id, audit_frames, plan_frames)
    rack_of = load.racks(load.of_cluster(audit_frames.get("brokers"), cluster_id))
    levels = load.rack_levels({}, states.before) if states is not None else []
    parts = [
        Section("Before and after", f"{anchor}-compare", _before_after(entry, states, rack_of)),
        Section("Goals, in priority order", f"{anchor}-goals", _goals(entry.get("goals"))),
    ]
    if states is not None:
        parts += _charts(states, rack_of, anchor, levels, entry.get("sizes_known") is not False)
    figures = details(
        "Every figure of plan_summary.json", table(_scalars(entry), ("figure", "value"), names=1)
    )
    parts.append(Section("All figures", f"{anchor}-figures", figures))
    return Section(
        title, anchor, _cards(entry, throttle) + _notes(entry), parts, css_class="cluster"
    )


_FLEET_COLUMNS: Final = (
    "replica moves",
    "lower bound",
    "data to move",
    "move time",
    "leader moves",
    "badly spread before → after",
    "balancedness after",
    "reassignment file",
)


def _fleet_row(cid: str, entry: Mapping[str, Any], anchor: str) -> list[object]:
    if entry.get("error"):
        return [
            Cell(cid, href=f"#{anchor}"),
            Cell("not planned", "bad"),
            *[""] * (len(_FLEET_COLUMNS) - 1),
        ]
    bound = entry.get("lower_bound")
    timing = entry.get("move_time")
    spread = _pair(entry, "spread_violations")
    score = _pair(entry, "balancedness_score")
    return [
        Cell(cid, href=f"#{anchor}"),
        format_count(_int(entry, "replica_moves")),
        format_count(bound.get("replica_moves")) if isinstance(bound, Mapping) else NOT_GIVEN,
        format_bytes(entry.get("data_to_move_bytes")),
        format_duration(timing.get("seconds")) if isinstance(timing, Mapping) else NOT_GIVEN,
        format_count(_int(entry, "leader_moves")),
        f"{spread[0]:,} → {spread[1]:,}" if spread else NOT_GIVEN,
        format_decimal(score[1]) if score else NOT_GIVEN,
        str(entry.get("reassignment_file") or "none"),
    ]


def fleet_plan_section(
    plan_summary: Mapping[str, Any],
    ids: Sequence[str],
    anchors: Anchors,
    cluster_anchor: Mapping[str, str],
) -> Section:
    """The plan over the fleet: cards and a row per cluster (linking to its section)."""
    fleet = plan_summary.get("fleet", {}) if isinstance(plan_summary.get("fleet"), Mapping) else {}
    clusters = per_cluster(plan_summary)
    items = [
        Card(
            format_count(len(clusters)),
            "clusters planned",
            is_bad=bool(fleet.get("clusters_not_planned")),
            detail=f"{fleet.get('clusters_not_planned', 0):,} not planned"
            if fleet.get("clusters_not_planned")
            else "",
        )
    ]
    if "replica_moves" in fleet:
        items.append(
            Card(
                format_count(fleet["replica_moves"]),
                "replica moves",
                detail=f"lower bound {fleet.get('lower_bound_replica_moves', 0):,}",
            )
        )
    if "data_to_move_bytes" in fleet:
        items.append(Card(format_bytes(fleet["data_to_move_bytes"]), "data to move"))
    if "leader_moves" in fleet:
        items.append(Card(format_count(fleet["leader_moves"]), "leader moves"))
    if fleet.get("longest_move_seconds") is not None:
        items.append(
            Card(
                format_duration(fleet["longest_move_seconds"]),
                "longest move time",
                detail=f"at {format_rate(plan_summary.get('throttle_bytes_per_s'))} per broker",
            )
        )
    if "spread_violations_before" in fleet:
        after = int(fleet.get("spread_violations_after", 0))
        items.append(
            Card(
                f"{fleet['spread_violations_before']:,} → {after:,}",
                "badly spread partitions",
                is_bad=after > 0,
                is_good=after == 0,
            )
        )
    rows = [_fleet_row(cid, clusters[cid], cluster_anchor.get(cid, "")) for cid in ids]
    body = cards(items) + table(rows, ["cluster", *_FLEET_COLUMNS], names=1)
    return Section("Plan", anchors.of("plan"), body)
