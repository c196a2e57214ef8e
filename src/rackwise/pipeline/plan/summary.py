"""``plan_summary.json``: the plan's figures per cluster, beside the audit's before and after.

Per cluster (``clusters[cluster_id]``):

``replica_moves``, ``data_to_move_bytes``, ``intra_broker_moves``,
``intra_broker_data_to_move_bytes``, ``leader_moves``, ``partitions_changed``
    What the reassignment does (Cruise Control's proposal summary; replica moves are counted
    per replica).
``lower_bound``
    ``{replica_moves, bytes, explanation, ...}``: what no plan meeting the hard goals and the
    replica goal can go below (:mod:`rackwise.balance._bound`).
``goals``
    Per goal, in priority order: ``status`` (``VIOLATED`` / ``FIXED`` / ``NO-ACTION``),
    violations before and after, the moves it made and how long it took.
``balancedness_score``
    ``{before, after}``: Cruise Control's on-demand balancedness score (100: every goal met).
``spread_violations``
    ``{before, after}``: partitions with a spread violation as the audit counts them, on the
    current and on the target assignment; ``avoidable_after``: those an even spread could still
    fix (0 unless a goal failed).
``skew``
    ``{before, after}``: the audit's skew figures (``{level: {metric: {..., max_over_mean}}}``).

Before is the audit's summary of the current state. After is computed from the plan, exactly as
the audit would find it in the target table (a test checks it): spread violations as the
planner counts them on the whole rack tree, and the skew over
:func:`rackwise.pipeline.plan.after.after_load`, the audit's ``load`` table with every domain's
load replaced by the target's.
``move_time``
    The time the moves take at ``--throttle``. Kafka's throttle is a rate per broker, applied to
    the replication traffic a broker receives as a new follower and sends as the leader that
    followers copy from, so the moves take at least the busiest broker's larger direction
    divided by the throttle: ``seconds = max(in, out) / throttle``, all moves running at once.
    Moves between directories of a broker are throttled separately
    (``--replica-alter-log-dirs-throttle``); ``intra_broker_seconds`` is the busiest broker's
    intra-broker bytes at the same rate.
``sizes_known``
    False when no replica's size is known (a metadata export without ``--log-dirs``): the plan
    then balances counts only, and every byte figure above (the data to move, the lower
    bound's and each goal's bytes, the move time) is null rather than a sum of estimates.
``reassignment_file``
    The cluster's reassignment JSON relative to ``OUT`` (null when the plan changes nothing).
``rejected_rows``, ``planned_on_valid_rows_only``
    Input rows set aside by validation; the plan covers the valid rows only.
``error``
    Present, alone with the figures that need no plan, when the cluster could not be planned.
"""

from __future__ import annotations

from typing import Any

_COPIED = (
    "strategy",
    "num_brokers",
    "num_partitions",
    "num_replicas",
    "num_estimated_sizes",
    "replica_moves",
    "data_to_move_bytes",
    "intra_broker_moves",
    "intra_broker_data_to_move_bytes",
    "leader_moves",
    "partitions_changed",
    "lower_bound",
    "plan_ms",
    "reassignment_file",
)
_FLEET_SUMS = (
    "replica_moves",
    "data_to_move_bytes",
    "intra_broker_moves",
    "intra_broker_data_to_move_bytes",
    "leader_moves",
    "partitions_changed",
)


def move_time(report: dict[str, Any], throttle_bytes_per_s: int | None) -> dict[str, Any]:
    inbound = int(report.get("max_broker_inbound_bytes", 0))
    outbound = int(report.get("max_broker_outbound_bytes", 0))
    intra = int(report.get("max_broker_intra_bytes", 0))
    busiest = max(inbound, outbound)
    return {
        "throttle_bytes_per_s": throttle_bytes_per_s,
        "busiest_broker_inbound_bytes": inbound,
        "busiest_broker_outbound_bytes": outbound,
        "busiest_broker_intra_bytes": intra,
        "seconds": busiest / throttle_bytes_per_s if throttle_bytes_per_s else None,
        "intra_broker_seconds": intra / throttle_bytes_per_s if throttle_bytes_per_s else None,
        "explanation": (
            "max over brokers of the larger of bytes copied in (as a new follower) and out (as "
            "the leader copied from), divided by the per-broker --throttle; all moves at once"
        ),
    }


def _goals(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "goal": g["name"],
            "status": g["status"],
            "hard": g["is_hard"],
            "counts": g["unit"],
            "violations_before": g["violations_before"],
            "violations_after": g["violations_after"],
            "replica_moves": g["replica_moves"],
            "bytes_moved": g["bytes_moved"],
            "time_ms": round(float(g["time_ms"]), 3),
        }
        for g in report["goals"]
    ]


def _cluster(
    cid: str,
    report: dict[str, Any],
    before: dict[str, Any],
    after: dict[str, Any],
    rejected: int,
    throttle_bytes_per_s: int | None,
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "rejected_rows": rejected,
        "planned_on_valid_rows_only": rejected > 0,
        "spread_violations": {
            "before": int(before.get("partitions_with_spread_violations", 0)),
            "after": int(after.get("partitions_with_spread_violations", 0)),
        },
        "skew": {"before": before.get("skew", {}), "after": after.get("skew", {})},
    }
    if "error" in report:
        entry["error"] = report["error"]
        entry["spread_violations"]["after"] = entry["spread_violations"]["before"]
        entry["skew"]["after"] = entry["skew"]["before"]  # its target is its current state
        return entry
    entry.update({k: report[k] for k in _COPIED})
    entry["spread_violations"]["avoidable_after"] = report["avoidable_spread_violations_after"]
    entry["goals"] = _goals(report)
    if report.get("unprotectable_partitions", 0):  # DomainLossGoal: what no placement protects
        entry["unprotectable_partitions"] = report["unprotectable_partitions"]
        entry["unprotectable"] = report["unprotectable"]
    entry["balancedness_score"] = {
        "before": round(float(report["score_before"]), 3) + 0.0,  # never "-0.0"
        "after": round(float(report["score_after"]), 3) + 0.0,
    }
    entry["move_time"] = move_time(report, throttle_bytes_per_s)
    entry["sizes_known"] = not (0 < report["num_replicas"] == report["num_estimated_sizes"])
    if not entry["sizes_known"]:
        _forget_bytes(entry)
    return entry


def _forget_bytes(entry: dict[str, Any]) -> None:
    """Null every byte figure of a cluster of which no replica's size is known: each would be
    a sum of estimates made from nothing (0)."""
    for key in ("data_to_move_bytes", "intra_broker_data_to_move_bytes"):
        entry[key] = None
    entry["lower_bound"] = {**entry["lower_bound"], "bytes": None}
    for goal in entry["goals"]:
        goal["bytes_moved"] = None
    timing = entry["move_time"]
    for key in timing:
        if key.endswith(("_bytes", "seconds")):
            timing[key] = None
    timing["explanation"] = None


def _known_sum(values: list[Any]) -> int | None:
    """The sum of the figures that are known; null when there are some and none is known."""
    known = [int(v) for v in values if v is not None]
    return sum(known) if known or not values else None


def build_summary(
    reports: dict[str, dict[str, Any]],
    before: dict[str, Any],
    after: dict[str, Any],
    rejected: dict[str, int],
    *,
    strategy: str,
    throttle_bytes_per_s: int | None,
    min_insync_replicas: int,
) -> dict[str, Any]:
    """The summary dict from the per-cluster reports and the two audit summaries."""
    clusters = {
        cid: _cluster(
            cid,
            reports[cid],
            before["clusters"].get(cid, {}),
            after["clusters"].get(cid, {}),
            rejected.get(cid, 0),
            throttle_bytes_per_s,
        )
        for cid in sorted(reports)
    }
    planned = [c for c in clusters.values() if "error" not in c]
    fleet: dict[str, Any] = {
        "clusters": len(clusters),
        "clusters_not_planned": len(clusters) - len(planned),
        "clusters_with_rejected_rows": sum(1 for c in clusters.values() if c["rejected_rows"]),
    }
    for name in _FLEET_SUMS:
        fleet[name] = _known_sum([c[name] for c in planned])
    fleet["lower_bound_replica_moves"] = sum(c["lower_bound"]["replica_moves"] for c in planned)
    fleet["lower_bound_bytes"] = _known_sum([c["lower_bound"]["bytes"] for c in planned])
    for when in ("before", "after"):
        fleet[f"spread_violations_{when}"] = sum(
            c["spread_violations"][when] for c in clusters.values()
        )
    seconds = [c["move_time"]["seconds"] for c in planned if c["move_time"]["seconds"] is not None]
    fleet["longest_move_seconds"] = max(seconds) if seconds else None
    return {
        "strategy": strategy,
        "throttle_bytes_per_s": throttle_bytes_per_s,
        "min_insync_replicas": min_insync_replicas,
        "fleet": fleet,
        "clusters": clusters,
    }


def after_state(
    reports: dict[str, dict[str, Any]], skew: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """The target state's figures in the audit summary's shape: spread violations as the
    planner counts them on the whole rack tree (the audit's definition) and the skew."""
    clusters: dict[str, Any] = {}
    for cid, report in reports.items():
        entry: dict[str, Any] = {"skew": skew.get(cid, {})}
        if "spread_violations_after" in report:
            entry["partitions_with_spread_violations"] = int(report["spread_violations_after"])
        clusters[cid] = entry
    return {"clusters": clusters}
