"""Audit cases both engines are checked against: a hand-worked fleet, random fleets, and the
pure reference (:mod:`rackwise.topology`) computed by brute force."""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa

from rackwise.pipeline import schema
from rackwise.pipeline.ingest.local import (
    BROKERS_ARROW,
    LOG_DIRS_ARROW,
    REJECTED_ARROW,
    REPLICAS_ARROW,
    LocalTables,
)
from rackwise.topology import RackTree, as_rack_path, spread_violations

# Cluster c1: the tree
#   /            children: /dc1, /dc2, /dc3, broker 6 (no rack: its own domain under the root)
#   /dc1         children: /dc1/r1 (brokers 1, 2), /dc1/r2 (broker 3)
#   /dc2         child:    /dc2/r1 (broker 4)
#   /dc3         child:    broker 5 (written "dc3": a one-level path)
# Every broker has /d1 and /d2 (100 bytes each); 4:/d1 has failed.
# Partition t-0 on 1 (/d1), 2 (/d1), 4 (/d2), 10 bytes each, all live.
#   /      : children hold dc1 2, dc2 1, dc3 0, b6 0 -> 2 - 0 >= 2: violation
#   /dc1   : r1 2 (2 brokers: full), r2 0 (free) -> 2 - 0 >= 2: violation
#   /dc1/r1: brokers 1 and 2 hold one each, none free -> fine
#   exposure (3 live, min ISR 2): /dc1 and /dc1/r1 hold 2 -> 1 left: under min ISR;
#   /dc2, /dc2/r1 and each broker hold 1 -> 2 left: fine
# Partition t-1 on 4 (/d1, failed) and 5 (/d1), 5 bytes each: 1 live replica (broker 5)
#   spread: / children dc2 1, dc3 1 -> fine; under min ISR now (1 < 2)
#   exposure: /dc3, broker 5 and 5:/d1 hold the only live replica -> offline if lost;
#   /dc2, /dc2/r1, broker 4 and 4:/d1 hold only the dead one -> untouched
# Cluster c2: brokers 1, 2 without racks (a flat tree: no rack level, nothing to spread);
# u-0 on 1 (/d1, capacity unknown) and 2 (log dir unknown), 7 bytes each:
#   losing either broker leaves 1 live < 2: under min ISR; 1:/d1 likewise.
# Cluster c3: one-level rack names, written both ways: 1 "rack1", 2 "/rack1" (the same rack),
# 3 "rack2", 4 "rack3"; one level, so it is named "rack". One dir /d (100 bytes) each.
# v-0 on 1 and 2, 3 bytes each: both in /rack1.
#   /: /rack1 2 (2 brokers: full), /rack2 0 (free), /rack3 0 -> violation at the root
#   exposure: /rack1 holds both -> offline if lost; brokers 1, 2 and their dirs: 1 left,
#   under min ISR
# Cluster idle: brokers, no partitions: every domain listed, with zeros.
BROKERS = [
    ("c1", 1, "/dc1/r1"),
    ("c1", 2, "/dc1/r1"),
    ("c1", 3, "/dc1/r2"),
    ("c1", 4, "/dc2/r1"),
    ("c1", 5, "dc3"),
    ("c1", 6, None),
    ("c2", 1, None),
    ("c2", 2, None),
    ("c3", 1, "rack1"),
    ("c3", 2, "/rack1"),
    ("c3", 3, "rack2"),
    ("c3", 4, "rack3"),
    ("idle", 1, "/r1"),
    ("idle", 2, "/r2"),
]
LOG_DIRS = [("c1", b, f"/d{k}", 100, not (b == 4 and k == 1)) for b in range(1, 7) for k in (1, 2)]
LOG_DIRS.append(("c2", 1, "/d1", None, True))
LOG_DIRS += [("c3", b, "/d", 100, True) for b in (1, 2, 3, 4)]
LOG_DIRS += [("idle", b, "/d", 100, True) for b in (1, 2)]
REPLICAS = [
    ("c1", "t", 0, 0, 1, "/d1", 10),
    ("c1", "t", 0, 1, 2, "/d1", 10),
    ("c1", "t", 0, 2, 4, "/d2", 10),
    ("c1", "t", 1, 0, 4, "/d1", 5),
    ("c1", "t", 1, 1, 5, "/d1", 5),
    ("c2", "u", 0, 0, 1, "/d1", 7),
    ("c2", "u", 0, 1, 2, None, 7),
    ("c3", "v", 0, 0, 1, "/d", 3),
    ("c3", "v", 0, 1, 2, "/d", 3),
]


RACKS = ("/a", "/a/x", "/a/y", "/b", "b/x", "/b/y/h1", "/b/y/h2", "/c", None)


def random_fleet(seed: int, num_clusters: int) -> tuple[list, list, list]:
    rng = random.Random(seed)
    brokers, dirs, replicas = [], [], []
    for c in range(num_clusters):
        cid = f"k{c:02d}"
        ids = rng.sample(range(1, 40), rng.randint(1, 9))
        racks = RACKS if rng.random() < 0.3 else RACKS[:-1]
        for b in ids:
            brokers.append((cid, b, rng.choice(racks)))
            for d in range(rng.randint(1, 2)):
                dirs.append((cid, b, f"/d{d}", 1000, rng.random() > 0.15))
        for p in range(rng.randint(1, 8)):
            for i, b in enumerate(rng.sample(ids, rng.randint(1, min(5, len(ids))))):
                log_dir = "/d0" if rng.random() > 0.1 else None
                replicas.append((cid, "t", p, i, b, log_dir, rng.randint(0, 100)))
    return brokers, dirs, replicas


def reference_spread(brokers: list, replicas: list) -> set[tuple[Any, ...]]:
    out = set()
    for cid in {b[0] for b in brokers}:
        tree = RackTree.build([(b, as_rack_path(r), False) for c, b, r in brokers if c == cid])
        rows = [r for r in replicas if r[0] == cid]
        parts = sorted({r[2] for r in rows})
        assignment = [[r[4] for r in sorted(rows) if r[2] == p] for p in parts]
        for v in spread_violations(tree, assignment):
            out.add((cid, parts[v.partition], v.level, v.node, max(v.counts)))
    return out


def _domains_of(path: str | None, broker: int, log_dir: str | None) -> list[str]:
    parts = path[1:].split("/") if path else []
    names = ["/" + "/".join(parts[:i]) for i in range(1, len(parts) + 1)] + [str(broker)]
    return [*names, f"{broker}:{log_dir}"] if log_dir else names


def reference_exposure(fleet: tuple[list, list, list], min_isr: int) -> set[tuple[Any, ...]]:
    """(cluster, domain, partitions touched, offline if lost, under min ISR if lost)."""
    brokers, dirs, replicas = fleet
    rack = {(c, b): as_rack_path(r) for c, b, r in brokers}
    dead = {(c, b, d) for c, b, d, _, live in dirs if not live}
    partitions: dict[tuple[str, int], list[tuple[int, str | None]]] = {}
    for c, _, p, _, b, d, _ in replicas:
        held = partitions.setdefault((c, p), [])
        if (c, b, d) not in dead:
            held.append((b, d))
    out: dict[tuple[str, str], list[int]] = {}
    for (c, _), live in partitions.items():
        held_in: dict[str, int] = {}
        for b, d in live:
            for name in _domains_of(rack[(c, b)], b, d):
                held_in[name] = held_in.get(name, 0) + 1
        for name, held in held_in.items():
            left = len(live) - held
            counts = out.setdefault((c, name), [0, 0, 0])
            counts[0] += 1
            counts[1] += left == 0
            counts[2] += 1 <= left < min_isr
    return {(c, name, *v) for (c, name), v in out.items()}


def local_tables(brokers: list, log_dirs: list, replicas: list) -> LocalTables:
    """Rows of the pipeline's tables as the in-process engine's validated tables."""

    def table(rows: list, columns: tuple[str, ...], arrow: pa.Schema) -> pa.Table:
        return pa.Table.from_pylist([dict(zip(columns, r, strict=True)) for r in rows], arrow)

    return LocalTables(
        table(brokers, schema.BROKERS_COLUMNS, BROKERS_ARROW),
        table(log_dirs, schema.LOG_DIRS_COLUMNS, LOG_DIRS_ARROW),
        table(replicas, schema.REPLICAS_COLUMNS, REPLICAS_ARROW),
        table([], schema.REJECTED_COLUMNS, REJECTED_ARROW),
    )
