"""The partitions behind the ``exposure`` table's counts: for each rack node below the root
(a data centre, a rack) and each partition that losing it would hurt, which way it would.

Goals
    A rehearsal compares, partition for partition, what the audit predicted for a domain with
    what clients see once that domain is down; the table's counts say how many, these rows say
    which. The counts of the rows per domain are the exposure table's ``offline_if_lost``,
    ``under_min_isr_if_lost`` and ``below_min_insync_racks_if_lost`` (a test checks them on
    random fleets), so the two cannot tell different stories.
Definitions (the audit's: :mod:`rackwise.pipeline.audit.domain_loss`)
    A replica in a failed log directory is already lost. A partition with a live replica in a
    domain, losing it, keeps ``left`` live replicas outside it: ``offline`` when none,
    ``under_min_isr`` when ``1 <= left < min.insync.replicas``, ``refusing_writes`` when
    ``left >= min.insync.replicas`` but they span fewer than the topic's ``min.insync.racks``
    domains at its ``min.insync.racks.level`` (acks=all produce is answered
    NOT_ENOUGH_REPLICAS); no row otherwise. Brokers and directories are not domains here.
Constraints
    Pure, one cluster at a time, partition by partition in Python: meant for one cluster's
    prediction (a few thousand partitions), not a fleet of millions (the engines' tables are).
Worked example
    Racks ``/dc1/r1`` (broker 1), ``/dc2/r1`` (2), ``/dc3/r1`` (3), ``min.insync.replicas=2``:
    ``a-0`` on 3 alone is ``offline`` at ``/dc3`` and ``/dc3/r1``; ``b-0`` on 1 and 3 is
    ``under_min_isr`` there; ``c-0`` on 1, 2, 3 with ``min.insync.racks=3`` is
    ``refusing_writes`` there (two replicas left, in two data centres).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Final

import pyarrow as pa

from rackwise.pipeline.audit.rules import DEFAULT_RULES, DomainRules
from rackwise.pipeline.audit.tree import tree_rows
from rackwise.topology import as_rack_path, domain_at

OFFLINE: Final = "offline"
UNDER_MIN_ISR: Final = "under_min_isr"
REFUSING_WRITES: Final = "refusing_writes"
OUTCOMES: Final = (OFFLINE, UNDER_MIN_ISR, REFUSING_WRITES)
COUNT_COLUMNS: Final = {
    OFFLINE: "offline_if_lost",
    UNDER_MIN_ISR: "under_min_isr_if_lost",
    REFUSING_WRITES: "below_min_insync_racks_if_lost",
}
"""The ``exposure`` table's column that counts each outcome."""
SCHEMA: Final = pa.schema(
    [
        ("cluster_id", pa.string()),
        ("level", pa.string()),
        ("domain", pa.string()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("outcome", pa.string()),
    ]
)


def _prefixes(rack: str | None) -> list[str]:
    """The rack nodes holding a broker of ``rack`` below the root: ``/dc1``, ``/dc1/r1``."""
    if rack is None:
        return []
    parts = rack.strip("/").split("/")
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


def outcome(
    left: list[tuple[int, str | None]], min_insync_replicas: int, racks: int, level: int
) -> str | None:
    """What losing a domain does to a partition whose live replicas outside it are ``left``
    (``(broker, rack)`` pairs); ``None``: nothing (module notes)."""
    if not left:
        return OFFLINE
    if len(left) < min_insync_replicas:
        return UNDER_MIN_ISR
    if len({domain_at(rack, level, broker_id=b) for b, rack in left}) < racks:
        return REFUSING_WRITES
    return None


def exposure_partitions(
    cluster_id: str,
    brokers: pa.Table,
    log_dirs: pa.Table,
    replicas: pa.Table,
    min_insync_replicas: int,
    rules: DomainRules = DEFAULT_RULES,
) -> pa.Table:
    """The :data:`SCHEMA` rows of cluster ``cluster_id`` from the pipeline's tables (any
    other cluster's rows are ignored), sorted by level, domain, topic and partition."""
    rack_of = {
        r["broker_id"]: as_rack_path(r["rack"])
        for r in brokers.to_pylist()
        if r["cluster_id"] == cluster_id
    }
    if not rack_of:
        return SCHEMA.empty_table()
    nodes, _ = tree_rows(0, cluster_id, sorted(rack_of.items()))
    level_of = {row[2]: row[4] for row in nodes}
    dead = {
        (r["broker_id"], r["log_dir"])
        for r in log_dirs.to_pylist()
        if r["cluster_id"] == cluster_id and r["is_live"] is False
    }
    live: dict[tuple[str, int], list[tuple[int, str | None]]] = defaultdict(list)
    for r in replicas.to_pylist():
        broker = r["broker_id"]
        if r["cluster_id"] != cluster_id or broker not in rack_of:
            continue
        key = (r["topic"], r["partition"])
        live.setdefault(key, [])
        if (broker, r["log_dir"]) not in dead:
            live[key].append((broker, rack_of[broker]))
    rows: list[dict[str, Any]] = []
    for (topic, partition), held in live.items():
        rule = rules.rule(cluster_id, topic)
        for node in sorted({n for _, rack in held for n in _prefixes(rack)}):
            left = [(b, rack) for b, rack in held if node not in _prefixes(rack)]
            found = outcome(
                left, rule.min_isr(min_insync_replicas), rule.min_insync_racks, rule.level
            )
            if found is not None:
                rows.append(
                    {
                        "cluster_id": cluster_id,
                        "level": level_of[node],
                        "domain": node,
                        "topic": topic,
                        "partition": partition,
                        "outcome": found,
                    }
                )
    rows.sort(key=lambda r: (r["level"], r["domain"], r["topic"], r["partition"]))
    return pa.Table.from_pylist(rows, SCHEMA)


def counts(rows: pa.Table) -> dict[tuple[str, str, str], dict[str, int]]:
    """The rows counted per ``(cluster_id, level, domain)``: ``{exposure column: count}``,
    every column of :data:`COUNT_COLUMNS` present."""
    out: dict[tuple[str, str, str], dict[str, int]] = {}
    for r in rows.to_pylist():
        key = (r["cluster_id"], r["level"], r["domain"])
        figures = out.setdefault(key, dict.fromkeys(COUNT_COLUMNS.values(), 0))
        figures[COUNT_COLUMNS[r["outcome"]]] += 1
    return out
