"""What losing one domain does to the topics' rules beyond ``min.insync.replicas``: the
partitions that would stop taking acks=all writes because of ``min.insync.racks``, and those
whose leadership would leave their ``leaders.preference``; computed cluster by cluster by one
step both engines call (Spark in a cogrouped ``applyInArrow``, as the plan is; the in-process
engine in a loop), so there is one implementation to agree with.

Definitions (a replica in a failed log directory is already lost, as everywhere in the audit)
    * A partition **refuses acks=all writes because of min.insync.racks** after a loss when it
      still has at least ``min.insync.replicas`` live replicas (so it is neither offline nor
      under min ISR: the three counts are disjoint) but they span fewer than its
      ``min.insync.racks`` domains at its ``min.insync.racks.level``
      (:func:`rackwise.topology.domain_at`: a rack-less broker is a domain of its own).
    * A partition's **leadership leaves its preference** after a loss when its topic has a
      ``leaders.preference`` other than ``none``, some live replica lies inside it before, and
      afterwards live replicas remain, none of them inside (an offline partition has no leader
      to move, and counts as offline only).
    * Now: ``below_min_insync_racks_now`` counts the partitions refusing because of
      ``min.insync.racks`` with nothing lost; ``leaders_outside_preference`` those whose leader
      (replica index 0, the preferred leader, as the audit's ``leaders`` are) sits outside their
      preference, as the planner counts them (:func:`rackwise.balance.leaders_outside_preference`).
Rows (:data:`RULE_ROWS_DDL`)
    ``level, domain`` as in the ``exposure`` table (rack nodes below the root, brokers,
    ``<broker>:<log dir>``), with the two if-lost counts, only where one is non-zero; and one
    row ``level = "cluster", domain = "/"`` carrying the two now-figures.
Algorithm
    Partitions are grouped by (rule, sorted live leaves), a leaf being a broker's rack node (a
    rack-less broker its own), so each distinct placement is judged once per rack node it
    touches and once per leaf (losing a broker or a directory takes one replica); each live
    replica is then charged its placement's verdict for its leaf, vectorised.
Worked example
    RF 3 on ``/dc1/r1``, ``/dc1/r2``, ``/dc2/r1`` with ``min.insync.replicas=2`` and
    ``min.insync.racks=2``: losing ``/dc2`` leaves two live replicas (not under min ISR) in one
    data centre: ``below_min_insync_racks`` 1 at ``/dc2``, at ``/dc2/r1`` and at its broker and
    directory; losing ``/dc1`` leaves one replica: under min ISR, not counted here.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any, Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rackwise.balance import leaders_outside_preference
from rackwise.pipeline.audit._local_cluster import Placements, group_codes
from rackwise.pipeline.audit.rules import DomainRules, TopicRule
from rackwise.pipeline.audit.tree import BROKER_LEVEL, CLUSTER_LEVEL, LOG_DIR_LEVEL, tree_rows
from rackwise.pipeline.ingest.arrays import Encoded, group_ids
from rackwise.topology import domain_at

RULE_ROWS_DDL: Final = (
    "cluster_id string, level string, domain string, below_min_insync_racks long, "
    "leaders_leave_preference long"
)
RULE_ROWS_SCHEMA: Final = pa.schema(
    [
        ("cluster_id", pa.string()),
        ("level", pa.string()),
        ("domain", pa.string()),
        ("below_min_insync_racks", pa.int64()),
        ("leaders_leave_preference", pa.int64()),
    ]
)
RULE_EXPOSURE: Final = ("below_min_insync_racks_if_lost", "leaders_leave_preference_if_lost")
"""The ``exposure`` table's columns these rows fill (0 where there is no row)."""
RULE_NOW: Final = ("below_min_insync_racks_now", "leaders_outside_preference")
"""The ``clusters`` table's columns the ``cluster`` row fills."""
RULE_BROKER_COLUMNS: Final = ("broker_id", "rack", "log_dir", "is_live")
"""The right side of the cogroup (and ``cluster_id``): brokers left-joined to their log dirs."""
_PAD: Final = -1


class _Leaves:
    """A cluster's leaves (rack nodes holding brokers, and each rack-less broker): their rack
    node chains, their domains at a level, whether a preference holds them."""

    def __init__(self, cluster_id: str, brokers: list[tuple[int, str | None]]) -> None:
        nodes, leaves = tree_rows(0, cluster_id, brokers)
        self.level_of = {row[2]: row[4] for row in nodes}
        key_of: dict[Any, int] = {}
        self.of_broker = np.zeros(len(brokers), np.int64)
        self.rack: list[str | None] = []
        self.chain: list[tuple[str, ...]] = []
        self.broker: list[int] = []
        for i, (broker, rack, _home, chain) in enumerate((r[2], r[3], r[4], r[5]) for r in leaves):
            key = rack if rack is not None else ("broker", broker)
            if key not in key_of:
                key_of[key] = len(self.rack)
                self.rack.append(rack)
                self.chain.append(tuple(chain[1:]) if rack is not None else ())
                self.broker.append(broker)
            self.of_broker[i] = key_of[key]
        self._domain: dict[tuple[int, int], str] = {}

    def __len__(self) -> int:
        return len(self.rack)

    def domain(self, leaf: int, level: int) -> str:
        found = self._domain.get((leaf, level))
        if found is None:
            found = domain_at(self.rack[leaf], level, broker_id=self.broker[leaf])
            self._domain[(leaf, level)] = found
        return found


def _verdict(
    leaves: _Leaves, rule: TopicRule, kept: list[int], before_pref: bool, min_isr: int
) -> tuple[bool, bool]:
    """(refuses because of min.insync.racks, leadership leaves the preference) for the live
    leaves ``kept`` after a loss; ``min_isr`` is the default of the topic's own
    min.insync.replicas."""
    if not kept:
        return False, False
    racks = len(kept) >= rule.min_isr(min_isr) and (
        len({leaves.domain(k, rule.level) for k in kept}) < rule.min_insync_racks
    )
    leave = before_pref and not any(rule.preference.is_preferred(leaves.rack[k]) for k in kept)
    return racks, leave


class _Judged:
    """Every placement's verdicts: per rack node (weighted counts), per (placement, leaf)."""

    def __init__(self) -> None:
        self.nodes: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        self.per_leaf: dict[int, tuple[bool, bool]] = {}
        self.racks_now = 0


def _judge(leaves: _Leaves, rules: list[TopicRule], groups: Placements, min_isr: int) -> _Judged:
    width = len(leaves)
    out = _Judged()
    for s, (code, weight) in enumerate(zip(groups.codes, groups.weight.tolist(), strict=True)):
        if not code:
            continue
        rule = rules[code[0] // width]
        live = [c % width for c in code]
        prefers = not rule.preference.is_none
        before = prefers and any(rule.preference.is_preferred(leaves.rack[k]) for k in live)
        racks_now, _ = _verdict(leaves, rule, live, False, min_isr)
        out.racks_now += weight * racks_now
        for node in {n for k in live for n in leaves.chain[k]}:
            kept = [k for k in live if node not in leaves.chain[k]]
            racks, leave = _verdict(leaves, rule, kept, before, min_isr)
            figures = out.nodes[node]
            figures[0] += weight * racks
            figures[1] += weight * leave
        for i, k in enumerate(live):
            if i and live[i - 1] == k:
                continue
            kept = live[:i] + live[i + 1 :]
            out.per_leaf[s * width + k] = _verdict(leaves, rule, kept, before, min_isr)
    return out


def _dir_index(replicas: pa.Table, dirs: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """Each replica's row in ``dirs`` (-1: unknown) and whether its directory is live."""
    rows = replicas.select(["broker_id", "log_dir"]).append_column(
        "_row", pa.array(np.arange(replicas.num_rows, dtype=np.int64))
    )
    table = dirs.append_column("_dir", pa.array(np.arange(dirs.num_rows, dtype=np.int64)))
    joined = rows.join(table, keys=["broker_id", "log_dir"], join_type="left outer")
    joined = joined.sort_by("_row")
    index = np.asarray(pc.fill_null(joined.column("_dir"), _PAD).to_numpy(), np.int64)
    live = pc.fill_null(joined.column("is_live"), True).to_numpy(zero_copy_only=False)
    return index, np.asarray(live, np.bool_)


def rule_rows(
    cluster_id: str,
    replicas: pa.Table,
    brokers: pa.Table,
    rules: DomainRules,
    min_insync_replicas: int,
) -> pa.Table:
    """One cluster's :data:`RULE_ROWS_DDL` rows (module docstring) from its replica rows
    (``topic, partition, replica_index, broker_id, log_dir``) and its brokers left-joined to
    their log directories (:data:`RULE_BROKER_COLUMNS`)."""
    ids = np.asarray(pc.fill_null(brokers.column("broker_id"), _PAD).to_numpy(), np.int64)
    ids, first = np.unique(ids, return_index=True)
    if not ids.size:
        return RULE_ROWS_SCHEMA.empty_table()
    racks = brokers.column("rack").to_pylist()
    leaves = _Leaves(cluster_id, [(int(ids[i]), racks[j]) for i, j in enumerate(first.tolist())])
    has_dir = pc.is_valid(brokers.column("log_dir")).to_numpy(zero_copy_only=False)
    dirs = brokers.filter(pa.array(has_dir)).select(["broker_id", "log_dir", "is_live"])
    replica_brokers = np.asarray(pc.fill_null(replicas.column("broker_id"), _PAD).to_numpy())
    known = np.isin(replica_brokers, ids)
    if not known.all():
        replicas = replicas.filter(pa.array(known))
        replica_brokers = replica_brokers[known]
    at = np.searchsorted(ids, replica_brokers)
    dir_row, live = _dir_index(replicas, dirs)
    topics = Encoded.of(replicas.column("topic"))
    number = np.asarray(replicas.column("partition").to_numpy(), np.int64)
    pid = group_ids(topics.codes, number & 0xFFFFFFFF)
    names = topics.values.to_pylist()
    distinct: dict[TopicRule, int] = {}
    of_topic = np.array(
        [distinct.setdefault(rules.rule(cluster_id, n), len(distinct)) for n in names] or [0],
        np.int64,
    )
    width = len(leaves)
    leaf = leaves.of_broker[at]
    code = of_topic[np.maximum(topics.codes, 0)] * width + leaf
    num_partitions = int(pid.max()) + 1 if pid.size else 0
    groups = group_codes(pid[live], code[live]) if num_partitions else None
    judged = _judge(leaves, list(distinct), groups, min_insync_replicas) if groups else _Judged()
    out = [_now_row(cluster_id, judged, rules, names, topics.codes, pid, at, leaves, ids, replicas)]
    out += [
        (cluster_id, leaves.level_of[node], node, racks_hit, leave_hit)
        for node, (racks_hit, leave_hit) in sorted(judged.nodes.items())
        if racks_hit or leave_hit
    ]
    if groups is not None and judged.per_leaf:
        key = groups.of_partition[pid[live]] * width + leaf[live]
        lookup = np.array(sorted(judged.per_leaf), np.int64)
        flags = np.array([judged.per_leaf[k] for k in lookup.tolist()], np.int64).reshape(-1, 2)
        charged = flags[np.searchsorted(lookup, key)]
        out += _charged_rows(cluster_id, ids, at[live], charged, BROKER_LEVEL, None)
        with_dir = dir_row[live] >= 0
        out += _charged_rows(
            cluster_id,
            dir_row[live][with_dir],
            dir_row[live][with_dir],
            charged[with_dir],
            LOG_DIR_LEVEL,
            dirs,
        )
    return pa.Table.from_pylist(
        [dict(zip(RULE_ROWS_SCHEMA.names, row, strict=True)) for row in out], RULE_ROWS_SCHEMA
    )


def _now_row(
    cluster_id: str,
    judged: _Judged,
    rules: DomainRules,
    names: list[str],
    topic_codes: np.ndarray,
    pid: np.ndarray,
    at: np.ndarray,
    leaves: _Leaves,
    ids: np.ndarray,
    replicas: pa.Table,
) -> tuple[Any, ...]:
    """The ``cluster`` row: partitions below min.insync.racks now, leaders outside."""
    num_partitions = int(pid.max()) + 1 if pid.size else 0
    topic_of = np.zeros(num_partitions, np.int64)
    topic_of[pid] = topic_codes
    leaders = np.full(num_partitions, _PAD, np.int64)
    first = np.asarray(replicas.column("replica_index").to_numpy(), np.int64) == 0
    leaders[pid[first]] = at[first]
    racks = tuple(leaves.rack[k] for k in leaves.of_broker.tolist())
    del ids
    outside = leaders_outside_preference(
        racks, tuple(names), topic_of, leaders, rules.preferences(cluster_id, names)
    )
    return (cluster_id, CLUSTER_LEVEL, "/", judged.racks_now, outside)


def _charged_rows(
    cluster_id: str,
    owners: np.ndarray,
    index: np.ndarray,
    charged: np.ndarray,
    level: str,
    dirs: pa.Table | None,
) -> list[tuple[Any, ...]]:
    """Rows of the brokers (``owners`` broker ids, ``index`` into the sorted ids) or the
    directories (``index`` rows of ``dirs``) with a non-zero charge."""
    if not index.size:
        return []
    size = int(index.max()) + 1
    racks_hit = np.bincount(index, weights=charged[:, 0], minlength=size).astype(np.int64)
    leave_hit = np.bincount(index, weights=charged[:, 1], minlength=size).astype(np.int64)
    rows = []
    for i in np.flatnonzero((racks_hit > 0) | (leave_hit > 0)).tolist():
        if dirs is None:
            domain = str(int(owners[i]))
        else:
            domain = f"{dirs.column('broker_id')[i].as_py()}:{dirs.column('log_dir')[i].as_py()}"
        rows.append((cluster_id, level, domain, int(racks_hit[i]), int(leave_hit[i])))
    return rows


def rule_figures(rows: pa.Table) -> dict[tuple[str, str], tuple[int, int]]:
    """One cluster's rows by ``(level, domain)``."""
    return {
        (r["level"], r["domain"]): (r["below_min_insync_racks"], r["leaders_leave_preference"])
        for r in rows.to_pylist()
    }


def rules_group(
    rules: DomainRules, min_insync_replicas: int
) -> Callable[[tuple[Any, ...], pa.Table, pa.Table], pa.Table]:
    """The cogroup's function: ``(key, replicas, brokers) -> rows`` (``key`` is
    ``(cluster_id,)``)."""

    def run(key: tuple[Any, ...], replicas: pa.Table, brokers: pa.Table) -> pa.Table:
        cluster_id = str(key[0].as_py() if hasattr(key[0], "as_py") else key[0])
        return rule_rows(cluster_id, replicas, brokers, rules, min_insync_replicas)

    return run
