"""The audit in process: the five tables of :mod:`rackwise.pipeline.audit.spark`, without Spark.

Goals
    For an input that fits in memory, the audit's tables in about a second: the same rows as
    the Spark transforms (a property test compares both engines on random fleets), written in
    the same Parquet schemas, so that the summary and the report are built by the same code
    whichever engine ran.
Constraints
    The definitions are the audit's (:mod:`rackwise.pipeline.audit.spark`'s notes); the tree
    tables are the ones :mod:`rackwise.pipeline.audit.tree` builds for Spark. Clusters are
    audited one at a time, so memory holds the input and one cluster's work.
Algorithm
    Sort the replicas by cluster once; per cluster (those the brokers name, in id order) key
    the replicas, group the partitions by placement and compute spread, exposure and load
    (:mod:`rackwise.pipeline.audit._local_cluster`); collect the rows and sort the small
    tables as the Spark job writes them.
Worked example
    A fleet of 8 clusters of 24 brokers and 12,000 replicas each: 8 clusters, a few hundred
    distinct placements each, about 0.3 s here.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rackwise.common import IllegalArgumentException
from rackwise.pipeline.audit import DEFAULT_MIN_INSYNC_REPLICAS, RESULT_TABLES, TABLE_ORDER
from rackwise.pipeline.audit._local_cluster import (
    Placements,
    ReplicaKeys,
    Tree,
    Violation,
    placements,
    rack_exposure,
    replica_keys,
    spread_of,
    sums_by,
)
from rackwise.pipeline.audit.domain_loss import RULE_EXPOSURE, RULE_NOW, rule_figures, rule_rows
from rackwise.pipeline.audit.rules import DEFAULT_RULES, DomainRules
from rackwise.pipeline.audit.tree import (
    BROKER_LEVEL,
    LOG_DIR_LEVEL,
    meta_rows,
    numbered_dirs,
    tree_rows,
)
from rackwise.pipeline.ingest.local import LocalTables, cluster_slices

_LIST: Final = pa.list_(pa.string())
SCHEMAS: Final = {
    "clusters": pa.schema(
        [
            ("cluster_id", pa.string()),
            ("rack_levels", _LIST),
            *[
                (name, pa.int64())
                for name in (
                    "brokers",
                    "brokers_without_rack",
                    "log_dirs",
                    "failed_log_dirs",
                    "partitions",
                    "replicas",
                    "offline_now",
                    "under_min_isr_now",
                    "partitions_with_spread_violations",
                    "spread_violations",
                )
            ],
            ("spread_violations_by_level", pa.map_(pa.string(), pa.int64())),
            *[(name, pa.int64()) for name in RULE_NOW],
        ]
    ),
    "spread_violations": pa.schema(
        [
            ("cluster_id", pa.string()),
            ("topic", pa.string()),
            ("partition", pa.int32()),
            ("depth", pa.int32()),
            ("level", pa.string()),
            ("node", pa.string()),
            ("replicas", pa.int64()),
            ("max_child_replicas", pa.int64()),
            ("min_free_child_replicas", pa.int64()),
        ]
    ),
    "exposure": pa.schema(
        [
            ("cluster_id", pa.string()),
            ("level", pa.string()),
            ("domain", pa.string()),
            ("broker_id", pa.int32()),
            ("log_dir", pa.string()),
            ("partitions", pa.int64()),
            ("offline_if_lost", pa.int64()),
            ("under_min_isr_if_lost", pa.int64()),
            *[(name, pa.int64()) for name in RULE_EXPOSURE],
        ]
    ),
    "load": pa.schema(
        [
            ("cluster_id", pa.string()),
            ("level", pa.string()),
            ("domain", pa.string()),
            ("broker_id", pa.int32()),
            ("log_dir", pa.string()),
            ("is_live", pa.bool_()),
            ("replicas", pa.int64()),
            ("leaders", pa.int64()),
            ("bytes", pa.int64()),
            ("total_bytes", pa.int64()),
            ("utilisation", pa.float64()),
        ]
    ),
    "skew": pa.schema(
        [
            ("cluster_id", pa.string()),
            ("level", pa.string()),
            ("metric", pa.string()),
            ("domains", pa.int64()),
            ("min", pa.float64()),
            ("max", pa.float64()),
            ("mean", pa.float64()),
            ("max_over_mean", pa.float64()),
        ]
    ),
}
"""The output tables' schemas, as the Spark job writes them."""
_SKEW_METRICS: Final = ("replicas", "leaders", "bytes", "utilisation")


def audit_tables(
    tables: LocalTables,
    min_insync_replicas: int = DEFAULT_MIN_INSYNC_REPLICAS,
    rules: DomainRules = DEFAULT_RULES,
) -> dict[str, pa.Table]:
    """Audit every cluster of ``tables``: the tables of ``RESULT_TABLES`` by name; ``rules``
    are the topics' ``min.insync.racks`` and ``leaders.preference``
    (:mod:`rackwise.pipeline.audit.domain_loss`)."""
    if min_insync_replicas < 1:
        raise IllegalArgumentException(
            f"min.insync.replicas must be at least 1, got {min_insync_replicas}"
        )
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in RESULT_TABLES}
    per_cluster: dict[str, list[tuple[int, str | None]]] = defaultdict(list)
    for b in tables.brokers.to_pylist():
        per_cluster[b["cluster_id"]].append((b["broker_id"], b["rack"]))
    keys = {cid: n for n, cid in enumerate(sorted(per_cluster), start=1)}
    dirs = numbered_dirs(tables.log_dirs.to_pylist(), keys)
    dirs_of: dict[str, list[tuple[Any, ...]]] = defaultdict(list)
    for row in dirs:
        dirs_of[row[1]].append(row)
    slices = dict(cluster_slices(tables.replicas))
    empty = tables.replicas.slice(0, 0)
    broker_dirs: dict[str, pa.Table] = {}
    if not rules.is_trivial:
        joined = tables.brokers.join(
            tables.log_dirs, keys=["cluster_id", "broker_id"], join_type="left outer"
        )
        broker_dirs = dict(cluster_slices(joined))
    for cid, key in keys.items():
        nodes, leaves = tree_rows(key, cid, per_cluster[cid])
        meta = meta_rows({cid: key}, nodes, leaves, dirs_of[cid])[0]
        cluster = _ClusterAudit(cid, nodes, leaves, dirs_of[cid], min_insync_replicas)
        start = len(rows["exposure"])
        mine = slices.get(cid, empty)
        cluster.run(mine, meta, rows)
        found = (
            {}
            if rules.is_trivial
            else rule_figures(rule_rows(cid, mine, broker_dirs[cid], rules, min_insync_replicas))
        )
        for exposed in rows["exposure"][start:]:
            figures = found.get((exposed["level"], exposed["domain"]), (0, 0))
            exposed.update(zip(RULE_EXPOSURE, figures, strict=True))
        rows["clusters"][-1].update(zip(RULE_NOW, found.get(("cluster", "/"), (0, 0)), strict=True))
    return {name: _table(name, rows[name]) for name in RESULT_TABLES}


def _table(name: str, rows: list[dict[str, Any]]) -> pa.Table:
    table = pa.Table.from_pylist(rows, SCHEMAS[name])
    order = TABLE_ORDER.get(name)
    if order is None or table.num_rows == 0:
        return table
    return table.take(pc.sort_indices(table, [(c, "ascending") for c in order]))


class _ClusterAudit:
    """One cluster's rows of every table."""

    def __init__(
        self,
        cluster_id: str,
        nodes: list[tuple[Any, ...]],
        leaves: list[tuple[Any, ...]],
        dirs: list[tuple[Any, ...]],
        min_isr: int,
    ) -> None:
        self.cid = cluster_id
        self.tree = Tree.of(nodes, leaves)
        self.dirs = dirs
        self.min_isr = min_isr

    def run(self, replicas: pa.Table, meta: tuple[Any, ...], out: dict[str, list[Any]]) -> None:
        keys, partitions, width = replica_keys(replicas, self.tree, self.dirs)
        groups = placements(keys)
        violations = [spread_of(self.tree, tuple(c >> 1 for c in code)) for code in groups.codes]
        out["clusters"].append(self._cluster_row(meta, groups, violations))
        out["spread_violations"] += self._spread_rows(keys, partitions, groups, violations)
        racks: dict[int, list[int]] = {}
        for code, weight in zip(groups.codes, groups.weight.tolist(), strict=True):
            live = tuple(c >> 1 for c in code if not c & 1)
            rack_exposure(self.tree, live, weight, self.min_isr, racks)
        domains = self._domains(keys, width, racks)
        out["exposure"] += [{k: d.get(k, 0) for k in SCHEMAS["exposure"].names} for d in domains]
        load = [{k: d[k] for k in SCHEMAS["load"].names} for d in domains]
        out["load"] += load
        out["skew"] += _skew_rows(self.cid, load)

    def _cluster_row(
        self, meta: tuple[Any, ...], groups: Placements, violations: list[list[Violation]]
    ) -> dict[str, Any]:
        weight = groups.weight
        size = np.array([len(c) for c in groups.codes], np.int64)
        live = np.array([sum(1 for x in c if not x & 1) for c in groups.codes], np.int64)
        hit = np.array([len(v) for v in violations], np.int64)
        by_level: dict[str, int] = defaultdict(int)
        for found, w in zip(violations, weight.tolist(), strict=True):
            for v in found:
                by_level[v[1]] += w
        return {
            "cluster_id": self.cid,
            "rack_levels": list(meta[2]),
            "brokers": meta[3],
            "brokers_without_rack": meta[4],
            "log_dirs": meta[5],
            "failed_log_dirs": meta[6],
            "partitions": int(weight.sum()),
            "replicas": int((weight * size).sum()),
            "offline_now": int(weight[live == 0].sum()),
            "under_min_isr_now": int(weight[(live >= 1) & (live < self.min_isr)].sum()),
            "partitions_with_spread_violations": int(weight[hit > 0].sum()),
            "spread_violations": int((weight * hit).sum()),
            "spread_violations_by_level": sorted(by_level.items()),
        }

    def _spread_rows(
        self,
        keys: ReplicaKeys,
        partitions: np.ndarray,
        groups: Placements,
        violations: list[list[Violation]],
    ) -> list[dict[str, Any]]:
        rows = []
        bad = {i for i, v in enumerate(violations) if v}
        for p in np.flatnonzero(np.isin(groups.of_partition, list(bad))).tolist():
            for depth, level, node, held, most, least in violations[int(groups.of_partition[p])]:
                rows.append(
                    {
                        "cluster_id": self.cid,
                        "topic": keys.topics[p],
                        "partition": int(partitions[p]),
                        "depth": depth,
                        "level": level,
                        "node": node,
                        "replicas": held,
                        "max_child_replicas": most,
                        "min_free_child_replicas": least,
                    }
                )
        return rows

    def _fine(self, keys: ReplicaKeys, width: int) -> dict[str, np.ndarray]:
        """Per (broker row, directory number): load and the fragile partitions' exposure."""
        cells = self.tree.brokers.size * width
        cell = keys.broker_row * width + keys.dir_number
        live_of = np.bincount(keys.partition, weights=keys.is_live, minlength=0).astype(np.int64)
        live = live_of[keys.partition] if keys.partition.size else keys.partition
        fragile = keys.is_live & (live >= 1) & (live <= self.min_isr)
        figures = {
            "replicas": np.bincount(cell, minlength=cells),
            "live_replicas": np.bincount(cell, weights=keys.is_live, minlength=cells),
            "leaders": np.bincount(cell, weights=keys.is_leader, minlength=cells),
            "bytes": sums_by(cell, keys.size, cells),
            "offline_if_lost": np.bincount(cell, weights=fragile & (live == 1), minlength=cells),
            "under_min_isr_if_lost": np.bincount(
                cell, weights=fragile & (live >= 2), minlength=cells
            ),
        }
        return {k: np.asarray(v, np.int64).reshape(-1, width) for k, v in figures.items()}

    def _domains(
        self, keys: ReplicaKeys, width: int, racks: dict[int, list[int]]
    ) -> list[dict[str, Any]]:
        fine = self._fine(keys, width)
        tree = self.tree
        out = []
        totals: dict[int, list[int]] = defaultdict(list)
        for _, _, broker, path, number, total, is_live in self.dirs:
            b = int(np.searchsorted(tree.brokers, broker))
            if total is not None:
                totals[b].append(int(total))
            out.append(
                _domain(
                    self.cid,
                    LOG_DIR_LEVEL,
                    f"{broker}:{path}",
                    broker,
                    path,
                    is_live,
                    total,
                    {k: int(v[b, number]) for k, v in fine.items()},
                )
            )
        per_broker = {k: v.sum(axis=1) for k, v in fine.items()}
        broker_total = {b: sum(t) for b, t in totals.items()}
        for b, broker in enumerate(tree.brokers.tolist()):
            figures = {k: int(v[b]) for k, v in per_broker.items()}
            out.append(
                _domain(
                    self.cid,
                    BROKER_LEVEL,
                    str(broker),
                    broker,
                    None,
                    None,
                    broker_total.get(b),
                    figures,
                )
            )
        for node in sorted(tree.paths):
            if tree.depth[node] < 1:
                continue
            under = [b for b, h in enumerate(tree.homes.tolist()) if node in tree.ancestors[h]]
            figures = {k: int(v[under].sum()) for k, v in per_broker.items()}
            (
                figures["live_replicas"],
                figures["offline_if_lost"],
                figures["under_min_isr_if_lost"],
            ) = racks.get(node, [0, 0, 0])
            known = [broker_total[b] for b in under if b in broker_total]
            out.append(
                _domain(
                    self.cid,
                    tree.level[node],
                    tree.paths[node],
                    None,
                    None,
                    None,
                    sum(known) if known else None,
                    figures,
                )
            )
        return out


def _domain(
    cluster_id: str,
    level: str,
    domain: str,
    broker: int | None,
    log_dir: str | None,
    is_live: bool | None,
    total: int | None,
    figures: dict[str, int],
) -> dict[str, Any]:
    used = figures["bytes"]
    return {
        "cluster_id": cluster_id,
        "level": level,
        "domain": domain,
        "broker_id": broker,
        "log_dir": log_dir,
        "is_live": is_live,
        "replicas": figures["replicas"],
        "leaders": figures["leaders"],
        "bytes": used,
        "total_bytes": total,
        "utilisation": used / total if total is not None and total > 0 else None,
        "partitions": figures["live_replicas"],
        "offline_if_lost": figures["offline_if_lost"],
        "under_min_isr_if_lost": figures["under_min_isr_if_lost"],
    }


def _skew_rows(cluster_id: str, load: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per level and metric over ``load``: domains with a value, min, max, mean, max/mean."""
    values: dict[tuple[str, str], list[float]] = defaultdict(list)
    for row in load:
        for metric in _SKEW_METRICS:
            if row[metric] is not None:
                values[(row["level"], metric)].append(float(row[metric]))
    rows = []
    for (level, metric), found in values.items():
        mean = sum(found) / len(found)
        rows.append(
            {
                "cluster_id": cluster_id,
                "level": level,
                "metric": metric,
                "domains": len(found),
                "min": min(found),
                "max": max(found),
                "mean": mean,
                "max_over_mean": max(found) / mean if mean > 0 else None,
            }
        )
    return rows
