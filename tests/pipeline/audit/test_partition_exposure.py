"""The per-partition exposure rows: the worked example by hand, and on random fleets with
random topic rules their counts per domain are the audit's exposure table's, column for
column (both engines' tables agree already, so the in-process one stands for both)."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from rackwise.pipeline.audit.local import audit_tables
from rackwise.pipeline.audit.partition_exposure import (
    COUNT_COLUMNS,
    OFFLINE,
    REFUSING_WRITES,
    UNDER_MIN_ISR,
    counts,
    exposure_partitions,
)
from rackwise.pipeline.audit.rules import DomainRules
from tests.pipeline.audit.cases import local_tables, random_fleet

BROKERS = [("c", 1, "/dc1/r1"), ("c", 2, "/dc2/r1"), ("c", 3, "/dc3/r1"), ("c", 4, "/dc3/r2")]
DIRS = [("c", b, "/d", 100, True) for b in (1, 2, 3)] + [("c", 4, "/d", 100, False)]
REPLICAS = [
    ("c", "a", 0, 0, 3, "/d", 1),
    ("c", "a", 0, 1, 4, "/d", 1),  # a failed directory: already lost
    ("c", "b", 0, 0, 1, "/d", 1),
    ("c", "b", 0, 1, 3, "/d", 1),
    ("c", "c", 0, 0, 1, "/d", 1),
    ("c", "c", 0, 1, 2, "/d", 1),
    ("c", "c", 0, 2, 3, "/d", 1),
]


def test_the_worked_example() -> None:
    tables = local_tables(BROKERS, DIRS, REPLICAS)
    rules = DomainRules.of({}, [("c", "c", "min.insync.racks", "3")])
    rows = exposure_partitions("c", tables.brokers, tables.log_dirs, tables.replicas, 2, rules)
    got = {(r["domain"], r["topic"], r["outcome"]) for r in rows.to_pylist()}
    assert got == {
        ("/dc3", "a", OFFLINE),
        ("/dc3/r1", "a", OFFLINE),
        ("/dc3", "b", UNDER_MIN_ISR),
        ("/dc3/r1", "b", UNDER_MIN_ISR),
        ("/dc1", "b", UNDER_MIN_ISR),
        ("/dc1/r1", "b", UNDER_MIN_ISR),
        ("/dc1", "c", REFUSING_WRITES),
        ("/dc1/r1", "c", REFUSING_WRITES),
        ("/dc2", "c", REFUSING_WRITES),
        ("/dc2/r1", "c", REFUSING_WRITES),
        ("/dc3", "c", REFUSING_WRITES),
        ("/dc3/r1", "c", REFUSING_WRITES),
    }
    assert {r["level"] for r in rows.to_pylist() if r["domain"] == "/dc3"} == {"dc"}
    other = exposure_partitions("x", tables.brokers, tables.log_dirs, tables.replicas, 2, rules)
    assert other.num_rows == 0


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    min_isr=st.integers(1, 3),
    racks=st.integers(1, 3),
    level=st.integers(1, 3),
)
def test_the_counts_are_the_exposure_tables(
    seed: int, min_isr: int, racks: int, level: int
) -> None:
    brokers, dirs, replicas = random_fleet(seed, num_clusters=6)
    rng = random.Random(seed)
    topics = {(c, p): rng.choice("tu") for c, _, p, *_ in replicas}
    replicas = [(c, topics[(c, p)], p, *rest) for c, _, p, *rest in replicas]
    configs = [(c, "t", "min.insync.racks", str(racks)) for c, *_ in brokers]
    configs += [(c, "t", "min.insync.racks.level", str(level)) for c, *_ in brokers]
    rules = DomainRules.of({"min.insync.racks": "2"}, configs)
    tables = local_tables(brokers, dirs, replicas)
    audited = audit_tables(tables, min_isr, rules)["exposure"].to_pylist()
    rack_levels = {r["level"] for r in audited if r["broker_id"] is None}
    expected = {
        (r["cluster_id"], r["level"], r["domain"]): {c: r[c] for c in COUNT_COLUMNS.values()}
        for r in audited
        if r["level"] in rack_levels and any(r[c] for c in COUNT_COLUMNS.values())
    }
    got = {}
    for cluster_id in sorted({c for c, *_ in brokers}):
        rows = exposure_partitions(
            cluster_id, tables.brokers, tables.log_dirs, tables.replicas, min_isr, rules
        )
        got.update(counts(rows))
    assert got == expected
