"""The fleet planner puts a topic's leaders where its ``leaders.preference`` says: the first
replica of every target is the best-ranked replica the partition has (the controller's rule,
:mod:`rackwise.balance._pinning`), checked on a worked cluster and on random ones against a
ranking computed from the rack paths alone."""

from __future__ import annotations

import json
import random
from typing import Any

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from rackwise.pipeline.audit.rules import DomainRules
from rackwise.pipeline.plan.group import plan_group
from tests.pipeline.plan.test_group import _brokers, _replicas

RACKS = ("/dc1/r1", "/dc1/r2", "/dc2/r1", "/dc2/r2", "/dc3/r1", None)
SPECS = ("none", "racks:/dc2", "ordered_racks:/dc3,/dc1", "ordered_racks:/dc1/r2,/dc2")


def _targets(rows: pa.Table) -> dict[tuple[str, int], list[int]]:
    out: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for r in rows.to_pylist():
        if r["kind"] == "replica":
            out.setdefault((r["topic"], r["partition"]), []).append(
                (r["replica_index"], r["broker_id"])
            )
    return {k: [b for _, b in sorted(v)] for k, v in out.items()}


def _rank(spec: str, rack: str | None) -> int:
    """0 for the first path matching ``rack``, ...; past every path: the number of ranks."""
    if spec == "none":
        return 0
    kind, _, listed = spec.partition(":")
    paths = listed.split(",")
    for i, path in enumerate(paths):
        if rack is not None and (rack == path or rack.startswith(path + "/")):
            return i if kind == "ordered_racks" else 0
    return len(paths) if kind == "ordered_racks" else 1


def _plan(brokers: list[tuple[Any, ...]], replicas: list[tuple[Any, ...]], rules: DomainRules):
    run = plan_group("keep", 0, rules)
    return run((pa.scalar("c"),), _replicas(replicas), _brokers(brokers))


def test_a_preferring_topics_leaders_go_to_their_domain() -> None:
    brokers = [("c", b, RACKS[b - 1], "/d", 100, True) for b in (1, 2, 3, 4)]
    placed = [((1, 3), "t"), ((3, 2), "t"), ((2, 4), "t"), ((4, 1), "t"), ((1, 4), "u")]
    replicas = [
        ("c", topic, p, i, b, "/d", 10) for p, (bs, topic) in enumerate(placed) for i, b in
        enumerate(bs)
    ]  # fmt: skip
    rules = DomainRules.of({}, [("c", "t", "leaders.preference", "racks:/dc2")])
    rows = _plan(brokers, replicas, rules)
    targets = _targets(rows)
    assert all(RACKS[bs[0] - 1].startswith("/dc2") for (t, _), bs in targets.items() if t == "t")
    # without the preference the leader goal spreads the leaders over the four brokers
    plain = _targets(_plan(brokers, replicas, DomainRules()))
    assert {bs[0] for bs in plain.values()} >= {1, 2, 3, 4}
    summary = json.loads(next(r["payload"] for r in rows.to_pylist() if r["kind"] == "summary"))
    assert summary["replica_moves"] == 0


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1), specs=st.tuples(st.sampled_from(SPECS), st.sampled_from(SPECS))
)
def test_random_clusters_lead_from_their_best_ranked_replica(
    seed: int, specs: tuple[str, str]
) -> None:
    rng = random.Random(seed)
    ids = rng.sample(range(1, 30), rng.randint(3, 9))
    rack = {b: rng.choice(RACKS) for b in ids}
    brokers = [("c", b, rack[b], "/d", 1000, True) for b in ids]
    replicas = []
    for p in range(rng.randint(1, 12)):
        topic = rng.choice("tu")
        for i, b in enumerate(rng.sample(ids, rng.randint(1, min(3, len(ids))))):
            replicas.append(("c", topic, p, i, b, "/d", rng.randint(1, 50)))
    configs = [("c", t, "leaders.preference", s) for t, s in zip("tu", specs, strict=True)]
    targets = _targets(_plan(brokers, replicas, DomainRules.of({}, configs)))
    spec_of = dict(zip("tu", specs, strict=True))
    for (topic, _), placed in targets.items():
        ranks = [_rank(spec_of[topic], rack[b]) for b in placed]
        assert ranks[0] == min(ranks), (topic, placed, ranks)
