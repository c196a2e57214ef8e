"""The audit's tables: what one failure would do, the badly spread partitions, the skew.

Goals
    The figures an operator acts on, in words and units: the domains whose failure takes
    partitions offline or under min ISR, worst first (offline ones shaded); the nodes where
    partitions are badly spread, with some of the partitions; each level's least, most and mean
    load and how far the most is from the mean.

Constraints
    At most ``EXPOSURE_ROWS`` exposed domains and ``VIOLATION_ROWS`` sample violations per
    cluster: the rest is in ``audit/``. Levels are named as people say them (``log directory``).

Algorithm
    Filter, sort and cut the audit's tables, then format each figure by its measure.

Worked example
    Exposure rows ``dc /dc3 3,991 1 349`` and ``rack /dc3/rack2 1,999 1 120`` come first and
    shaded (one partition goes offline with either), then ``dc /dc1 3,995 0 363``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import pandas as pd

from rackwise.pipeline.report import load
from rackwise.pipeline.report.format import format_count, format_metric, format_ratio
from rackwise.pipeline.report.page import note, table

EXPOSURE_ROWS: Final = 30
VIOLATION_ROWS: Final = 20
METRIC_NAMES: Final = {
    "replicas": "replicas",
    "leaders": "leaders",
    "bytes": "data",
    "utilisation": "used",
}


_EXPOSURE_COUNTS: Final = (
    "offline_if_lost",
    "under_min_isr_if_lost",
    "below_min_insync_racks_if_lost",
    "leaders_leave_preference_if_lost",
)


def exposure_table(exposure: pd.DataFrame) -> str:
    if exposure.empty:
        return "<p>No domain.</p>"
    counts = [c for c in _EXPOSURE_COUNTS if c in exposure.columns]
    hit = exposure[(exposure[counts] > 0).any(axis=1)]
    if hit.empty:
        return (
            "<p>No single failure of a data centre, rack, broker or log directory takes a "
            "partition offline or under min ISR, below min.insync.racks or out of its "
            "leaders.preference.</p>"
        )
    hit = hit.sort_values([*counts, "domain"], ascending=[*[False] * len(counts), True])
    rows = [
        (
            load.level_name(r.level),
            r.domain,
            int(r.partitions),
            *[int(getattr(r, c)) for c in counts],
        )
        for r in hit.head(EXPOSURE_ROWS).itertuples()
    ]
    labels = {
        "offline_if_lost": "go offline",
        "under_min_isr_if_lost": "fall under min ISR",
        "below_min_insync_racks_if_lost": "fall below min.insync.racks",
        "leaders_leave_preference_if_lost": "leaders leave their preference",
    }
    header = ("level", "if this fails", "partitions in it", *[labels[c] for c in counts])
    more = len(hit) - len(rows)
    tail = note(f"{more:,} more exposed domains in audit/exposure.") if more > 0 else ""
    return table(rows, header, names=2, bad_rows=[r[3] > 0 for r in rows]) + tail


def spread_tables(by_node: pd.DataFrame, sample: pd.DataFrame) -> str:
    if by_node.empty:
        return "<p>Every partition is spread as evenly as the topology allows.</p>"
    nodes = by_node.sort_values(["partitions", "node"], ascending=[False, True])
    rows = [
        (load.level_name(r.level), r.node, int(r.partitions))
        for r in nodes.head(EXPOSURE_ROWS).itertuples()
    ]
    out = [table(rows, ("level", "node", "partitions badly spread there"), names=2)]
    if not sample.empty:
        some = [
            (
                r.topic,
                int(r.partition),
                load.level_name(r.level),
                r.node,
                int(r.max_child_replicas),
                int(r.min_free_child_replicas),
            )
            for r in sample.head(VIOLATION_ROWS).itertuples()
        ]
        header = (
            "topic",
            "partition",
            "level",
            "node",
            "most replicas in one child",
            "fewest in a free child",
        )
        out.append("<p>Some of them:</p>" + table(some, header, names=1))
    return "".join(out)


def skew_table(skew: pd.DataFrame, levels: Sequence[str]) -> str:
    if skew.empty:
        return "<p>No figures.</p>"
    order = {lv: i for i, lv in enumerate([*levels, load.BROKER, load.LOG_DIR])}
    ranked = skew.assign(rank=skew["level"].map(order).fillna(len(order))).sort_values(
        ["rank", "metric"]
    )
    rows = [
        (
            load.level_name(r.level),
            METRIC_NAMES.get(r.metric, r.metric),
            format_count(r.domains),
            format_metric(r.metric, r.min),
            format_metric(r.metric, r.max),
            format_metric(r.metric, r.mean),
            format_ratio(r.max_over_mean),
        )
        for r in ranked.itertuples()
    ]
    return table(
        rows, ("level", "measure", "domains", "least", "most", "mean", "most ÷ mean"), names=2
    )
