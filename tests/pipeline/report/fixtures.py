"""Audit and plan inputs for the report tests, shaped as the pipeline writes them."""

from __future__ import annotations

from typing import Any

import pandas as pd

GIB = 2**30
HOSTILE = '<script>alert("x")</script>'
RACK = "/dc&1/<r1>"
TOPIC = 'orders"><img src=x onerror=alert(1)>'
RACKS = {1: RACK, 2: RACK, 3: "/dc2/r1", 4: None}
FAILED_DIR = (4, "/d2")
"""Broker 4's /d2 has failed: the audit knows 0 bytes there, the planner estimated 393 GiB."""


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
        "broker_id": float(broker) if broker is not None else None,
        "log_dir": log_dir,
        "is_live": live,
        "replicas": n,
        "leaders": n // 3,
        "bytes": n * GIB,
        "total_bytes": 400 * GIB,
        "utilisation": n / 400,
    }


def load(cluster_id: str, scale: int = 10) -> pd.DataFrame:
    """Four brokers of two log directories each; 4:/d2 failed; two data centres."""
    rows: list[dict[str, Any]] = []
    for broker in range(1, 5):
        rows.append(_row(cluster_id, "broker", str(broker), broker, None, None, scale * broker))
        for disk in ("/d1", "/d2"):
            live = (broker, disk) != FAILED_DIR
            n = scale * broker // 2
            row = _row(cluster_id, "log_dir", f"{broker}:{disk}", broker, disk, live, n)
            if not live:
                row["bytes"], row["utilisation"] = 0, 0.0  # the audit knows no size there
            rows.append(row)
    rows.append(_row(cluster_id, "dc", "/dc&1", None, None, None, 30))
    rows.append(_row(cluster_id, "dc", "/dc2", None, None, None, 70))
    return pd.DataFrame(rows)


def audit(cluster_ids: list[str]) -> tuple[dict[str, Any], dict[str, pd.DataFrame]]:
    clusters = {
        cid: {
            "brokers": 4,
            "brokers_without_rack": 1,
            "failed_log_dirs": 1,
            "partitions": 100,
            "replicas": 300,
            "offline_now": 0,
            "under_min_isr_now": i,
            "partitions_with_spread_violations": 7,
            "max_offline_if_lost": 3,
            "max_under_min_isr_if_lost": 5,
            "min_insync_replicas": 2,
            "rack_levels": ["dc"],
        }
        for i, cid in enumerate(cluster_ids)
    }
    summary = {
        "fleet": {
            "clusters": len(cluster_ids),
            "brokers": 4 * len(cluster_ids),
            "partitions": 100 * len(cluster_ids),
            "replicas": 300 * len(cluster_ids),
            "worst_clusters": cluster_ids[::-1][:20],
        },
        "clusters": clusters,
    }
    each = [
        (
            "exposure",
            {
                "level": "dc",
                "domain": RACK,
                "broker_id": None,
                "log_dir": None,
                "partitions": 9,
                "offline_if_lost": 3,
                "under_min_isr_if_lost": 5,
            },
        ),
        ("spread_by_node", {"level": "dc", "node": RACK, "partitions": 7}),
        (
            "spread_violations",
            {
                "topic": TOPIC,
                "partition": 3,
                "depth": 1,
                "level": "dc",
                "node": RACK,
                "replicas": 2,
                "max_child_replicas": 2,
                "min_free_child_replicas": 0,
            },
        ),
        (
            "skew",
            {
                "level": "broker",
                "metric": "bytes",
                "domains": 4,
                "min": 10.0 * GIB,
                "max": 40.0 * GIB,
                "mean": 25.0 * GIB,
                "max_over_mean": 1.6,
            },
        ),
    ]
    frames = {
        name: pd.DataFrame([{"cluster_id": c, **row} for c in cluster_ids]) for name, row in each
    }
    frames["load"] = pd.concat([load(c) for c in cluster_ids], ignore_index=True)
    frames["brokers"] = pd.DataFrame(
        [
            {"cluster_id": c, "broker_id": b, "rack": r}
            for c in cluster_ids
            for b, r in RACKS.items()
        ]
    )
    return summary, frames


GOALS = [
    {
        "goal": "SpreadGoal",
        "status": "FIXED",
        "hard": True,
        "counts": "partitions badly spread",
        "violations_before": 7,
        "violations_after": 0,
        "replica_moves": 9,
        "bytes_moved": 3 * GIB,
        "time_ms": 5.981,
    },
    {
        "goal": "ReplicaDistributionGoal",
        "status": "VIOLATED",
        "hard": False,
        "counts": "brokers outside their replica bounds",
        "violations_before": 2,
        "violations_after": 1,
        "replica_moves": 3,
        "bytes_moved": GIB,
        "time_ms": 13.693,
    },
    {
        "goal": "OfflineReplicaGoal",
        "status": "FIXED",
        "hard": True,
        "counts": "replicas without a live log directory",
        "violations_before": 20,
        "violations_after": 0,
        "replica_moves": 20,
        "bytes_moved": 20 * GIB,
        "time_ms": 50.3,
    },
]


def plan_entry() -> dict[str, Any]:
    """A cluster's ``plan_summary.json`` entry, as the plan job writes it."""
    return {
        "strategy": "keep",
        "rejected_rows": 0,
        "planned_on_valid_rows_only": False,
        "num_estimated_sizes": 20,
        "replica_moves": 860,
        "data_to_move_bytes": 1_060_504_238_428,
        "intra_broker_moves": 23,
        "intra_broker_data_to_move_bytes": 430_959_762_735,
        "leader_moves": 408,
        "partitions_changed": 1150,
        "lower_bound": {
            "replica_moves": 726,
            "bytes": 453_597_889_723,
            "explanation": "fix 7 violations <first>",
        },
        "plan_ms": 91.36,
        "reassignment_file": "c1/reassignment.json",
        "spread_violations": {"before": 7, "after": 0, "avoidable_after": 0},
        "balancedness_score": {"before": 0.0, "after": 71.5},
        "skew": {"before": {}, "after": {}},
        "goals": GOALS,
        "move_time": {
            "throttle_bytes_per_s": 100_000_000,
            "busiest_broker_inbound_bytes": 160_991_078_990,
            "busiest_broker_outbound_bytes": 183_965_011_751,
            "busiest_broker_intra_bytes": 226_303_670_478,
            "seconds": 1839.65011751,
            "intra_broker_seconds": 2263.03670478,
            "explanation": "the busiest broker's larger direction over the throttle",
        },
    }


def plan(cluster_ids: list[str]) -> dict[str, Any]:
    return {
        "strategy": "keep",
        "throttle_bytes_per_s": 100_000_000,
        "min_insync_replicas": 2,
        "fleet": {
            "clusters": len(cluster_ids),
            "clusters_not_planned": 0,
            "replica_moves": 860 * len(cluster_ids),
            "lower_bound_replica_moves": 726 * len(cluster_ids),
            "data_to_move_bytes": 1_060_504_238_428 * len(cluster_ids),
            "leader_moves": 408 * len(cluster_ids),
            "spread_violations_before": 7 * len(cluster_ids),
            "spread_violations_after": 0,
            "longest_move_seconds": 1839.65,
        },
        "clusters": {cid: plan_entry() for cid in cluster_ids},
    }


def plan_frames(cluster_ids: list[str], *, with_targets: bool = True) -> dict[str, pd.DataFrame]:
    """``load_before``/``load_after`` (the planner's rows: the failed directory with its
    estimated 393 GiB before), ``domains_after`` (every broker at 25 replicas, nothing in the
    failed directory) and, unless not ``with_targets``, each broker's targets."""
    audit_load = pd.concat([load(c) for c in cluster_ids], ignore_index=True)
    per = audit_load[audit_load["level"].isin(["broker", "log_dir"])]
    keys = ["cluster_id", "level", "broker_id", "log_dir", "replicas", "leaders", "bytes"]
    before = per[keys].copy()
    failed = (
        (before["level"] == "log_dir")
        & (before["broker_id"] == FAILED_DIR[0])
        & (before["log_dir"] == FAILED_DIR[1])
    )
    before.loc[failed, "bytes"] = 393 * GIB
    after = per[keys].assign(replicas=25, leaders=8, bytes=25 * GIB)
    after.loc[failed, ["replicas", "leaders", "bytes"]] = 0
    domains_after = audit_load.assign(replicas=25, leaders=8, bytes=25 * GIB)
    dead = (domains_after["level"] == "log_dir") & (domains_after["is_live"] == False)  # noqa: E712
    domains_after.loc[dead, ["replicas", "leaders", "bytes"]] = 0
    frames = {"load_before": before, "load_after": after, "domains_after": domains_after}
    if with_targets:
        frames["targets"] = pd.DataFrame(
            [
                {
                    "cluster_id": c,
                    "level": "broker",
                    "broker_id": b,
                    "log_dir": None,
                    "metric": "replicas",
                    "low": 24,
                    "target": 24.5,
                    "high": 25,
                }
                for c in cluster_ids
                for b in range(1, 5)
            ]
        )
    return frames
