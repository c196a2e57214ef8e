"""The audit's ``min.insync.racks`` and ``leaders.preference`` figures: the worked example by
hand, the summary's worst domain, and random fleets with random topic rules against a brute
force written from the definitions alone (rack paths cut by string, every loss tried)."""

from __future__ import annotations

import random
from typing import Any

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackwise.common import IllegalArgumentException
from rackwise.pipeline.audit.local import audit_tables
from rackwise.pipeline.audit.rules import DomainRules
from rackwise.pipeline.audit.summary import summary_from_frames, worst_domain
from rackwise.topology import as_rack_path
from tests.pipeline.audit.cases import local_tables, random_fleet

BROKERS = [("c", 1, "/dc1/r1"), ("c", 2, "/dc1/r2"), ("c", 3, "/dc2/r1"), ("c", 4, None)]
DIRS = [("c", b, "/d", 100, True) for b in (1, 2, 3, 4)]
REPLICAS = [
    ("c", "t", 0, 0, 1, "/d", 1),
    ("c", "t", 0, 1, 2, "/d", 1),
    ("c", "t", 0, 2, 3, "/d", 1),
    ("c", "u", 0, 0, 3, "/d", 1),
    ("c", "u", 0, 1, 4, None, 1),
]
PREFERENCES = ("none", "racks:/dc1", "ordered_racks:/dc2,/dc1", "racks:/a/x,/c", "racks:/b")


def _figures(tables: dict[str, Any]) -> tuple[dict[Any, tuple[int, int]], dict[Any, Any]]:
    exposure = {
        (r["cluster_id"], r["domain"]): (
            r["below_min_insync_racks_if_lost"],
            r["leaders_leave_preference_if_lost"],
        )
        for r in tables["exposure"].to_pylist()
        if r["below_min_insync_racks_if_lost"] or r["leaders_leave_preference_if_lost"]
    }
    clusters = {
        r["cluster_id"]: (r["below_min_insync_racks_now"], r["leaders_outside_preference"])
        for r in tables["clusters"].to_pylist()
    }
    return exposure, clusters


def test_the_worked_example() -> None:
    rules = DomainRules.of({"min.insync.racks": "2", "default.leaders.preference": "racks:/dc1"})
    got = audit_tables(local_tables(BROKERS, DIRS, REPLICAS), 2, rules)
    exposure, clusters = _figures(got)
    # t-0 loses /dc2: two replicas left in /dc1 (not under min ISR), one domain: refused;
    # t-0 loses /dc1: leadership leaves /dc1 (one replica left: under min ISR as well).
    # u-0 on /dc2 and the rack-less broker 4 (a domain of its own) is fine now; its leader
    # (broker 3, in /dc2) sits outside its preference, and it has no replica inside it.
    assert exposure == {
        ("c", "/dc2"): (1, 0),
        ("c", "/dc2/r1"): (1, 0),
        ("c", "3"): (1, 0),
        ("c", "3:/d"): (1, 0),
        ("c", "/dc1"): (0, 1),
    }
    assert clusters == {"c": (0, 1)}
    summary = summary_from_frames(
        got["clusters"].to_pandas(), got["exposure"].to_pandas(), got["skew"].to_pandas(), 2
    )
    worst = summary["clusters"]["c"]["worst_domain"]
    # /dc1 (t-0 under min ISR) and /dc2 (t-0 refused for racks, u-0 under min ISR) both make
    # writes refused; /dc2 refuses two partitions, /dc1 one.
    assert (worst["level"], worst["domain"], worst["refusing_writes_if_lost"]) == ("dc", "/dc2", 2)
    assert summary["clusters"]["c"]["below_min_insync_racks_if_lost"]["dc"] == {"/dc2": 1}


def test_a_topic_config_overrides_the_default() -> None:
    rows = [("c", "t", "min.insync.racks", "1"), ("c", "u", "leaders.preference", "none")]
    rules = DomainRules.of({"min.insync.racks": "2", "leaders.preference": "racks:/dc1"}, rows)
    exposure, clusters = _figures(audit_tables(local_tables(BROKERS, DIRS, REPLICAS), 2, rules))
    assert exposure == {("c", "/dc1"): (0, 1)}
    assert clusters == {"c": (0, 0)}


def test_a_topics_own_min_insync_replicas_replaces_the_option() -> None:
    # t-0 losing /dc2 keeps 2 replicas in /dc1: under t's own min.insync.replicas=3, so it is
    # counted under min ISR and not as refused for its racks.
    rows = [("c", "t", "min.insync.replicas", "3")]
    rules = DomainRules.of(
        {"min.insync.racks": "2", "default.leaders.preference": "racks:/dc1"}, rows
    )
    exposure, _ = _figures(audit_tables(local_tables(BROKERS, DIRS, REPLICAS), 2, rules))
    assert exposure == {("c", "/dc1"): (0, 1)}
    assert rules.rule("c", "t").min_isr(2) == 3 and rules.rule("c", "u").min_isr(2) == 2


def test_bad_values_are_refused_naming_them() -> None:
    with pytest.raises(IllegalArgumentException, match=r"topic t: min\.insync\.replicas must"):
        DomainRules.of({}, [("c", "t", "min.insync.replicas", "x")])
    with pytest.raises(IllegalArgumentException, match=r"topic t: min\.insync\.racks must be"):
        DomainRules.of({}, [("c", "t", "min.insync.racks", "0")])
    with pytest.raises(IllegalArgumentException, match=r"leaders\.preference 'rack:/a'"):
        DomainRules.of({}, [("c", "t", "leaders.preference", "rack:/a")])


def test_the_worst_domain_breaks_ties_by_offline_then_level() -> None:
    columns = (
        "offline_if_lost",
        "under_min_isr_if_lost",
        "below_min_insync_racks_if_lost",
        "leaders_leave_preference_if_lost",
    )
    rows = [
        ("rack", "/a/x", 3, 0, 0, 0),
        ("dc", "/a", 1, 2, 0, 0),
        ("dc", "/b", 3, 0, 0, 5),
        ("broker", "1", 0, 0, 3, 0),
    ]
    frame = pd.DataFrame(rows, columns=["level", "domain", *columns])
    worst = worst_domain({"rack_levels": ["dc", "rack"]}, frame)
    assert worst is not None
    # all refuse 3; /a/x and /b take 3 offline, /a 1 and broker 1 none; /b is the higher level
    assert (worst["level"], worst["domain"]) == ("dc", "/b")
    assert worst_domain({"rack_levels": []}, frame.assign(**dict.fromkeys(columns, 0))) is None


def _prefixes(rack: str | None) -> list[str]:
    parts = rack[1:].split("/") if rack else []
    return ["/" + "/".join(parts[:i]) for i in range(1, len(parts) + 1)]


def _domain(rack: str | None, broker: int, level: int) -> str:
    if rack is None:
        return f"b{broker}"
    return "/" + "/".join(rack[1:].split("/")[:level])


def _inside(spec: str, rack: str | None) -> bool:
    if rack is None or spec == "none":
        return False
    paths = [as_rack_path(p) for p in spec.partition(":")[2].split(",")]
    return any(rack == p or rack.startswith(f"{p}/") for p in paths)


def _refused(racks: list[str | None], ids: list[int], rule: tuple[int, int, str], isr: int) -> bool:
    domains = {_domain(r, b, rule[1]) for r, b in zip(racks, ids, strict=True)}
    return len(ids) >= isr and len(domains) < rule[0]


def _reference(
    fleet: tuple[list, list, list], min_isr: int, rule_of: dict[str, tuple[int, int, str]]
) -> tuple[dict[Any, tuple[int, int]], dict[Any, Any]]:
    brokers, dirs, replicas = fleet
    rack = {(c, b): as_rack_path(r) for c, b, r in brokers}
    dead = {(c, b, d) for c, b, d, _, live in dirs if not live}
    parts: dict[tuple[str, str, int], list[tuple[int, str | None, int]]] = {}
    for c, t, p, i, b, d, _ in replicas:
        parts.setdefault((c, t, p), []).append((b, d, i))
    exposure: dict[Any, list[int]] = {}
    clusters: dict[str, list[int]] = {c: [0, 0] for c, _, _ in brokers}
    for (c, t, _), held in parts.items():
        rule = rule_of[t]
        spec = rule[2]
        live = [(b, d) for b, d, _ in held if (c, b, d) not in dead]
        ids = [b for b, _ in live]
        clusters[c][0] += _refused([rack[(c, b)] for b in ids], ids, rule, min_isr)
        leader = [rack[(c, b)] for b, _, i in held if i == 0]
        clusters[c][1] += spec != "none" and bool(leader) and not _inside(spec, leader[0])
        inside_before = any(_inside(spec, rack[(c, b)]) for b in ids)
        names = set()
        for b, d in live:
            names |= {*_prefixes(rack[(c, b)]), str(b)} | ({f"{b}:{d}"} if d else set())
        for name in names:
            kept = [
                b for b, d in live if name not in {*_prefixes(rack[(c, b)]), str(b), f"{b}:{d}"}
            ]
            inside_after = any(_inside(spec, rack[(c, b)]) for b in kept)
            counts = exposure.setdefault((c, name), [0, 0])
            counts[0] += _refused([rack[(c, b)] for b in kept], kept, rule, min_isr)
            counts[1] += spec != "none" and inside_before and bool(kept) and not inside_after
    hits = {k: (v[0], v[1]) for k, v in exposure.items() if v[0] or v[1]}
    return hits, {c: tuple(v) for c, v in clusters.items()}


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    min_isr=st.integers(1, 3),
    rules=st.lists(
        st.tuples(st.integers(1, 3), st.integers(1, 3), st.sampled_from(PREFERENCES)),
        min_size=2,
        max_size=2,
    ),
)
def test_random_fleets_match_the_brute_force(
    seed: int, min_isr: int, rules: list[tuple[int, int, str]]
) -> None:
    brokers, dirs, replicas = random_fleet(seed, num_clusters=8)
    rng = random.Random(seed)
    topics = {(c, p): rng.choice("tu") for c, _, p, *_ in replicas}
    replicas = [(c, topics[(c, p)], p, *rest) for c, _, p, *rest in replicas]
    fleet = (brokers, dirs, replicas)
    (racks_t, level_t, spec_t), default = rules
    configs = [
        ("k00", "t", "ignored.key", "x"),
        *[(c, "t", "min.insync.racks", str(racks_t)) for c, *_ in brokers],
        *[(c, "t", "min.insync.racks.level", str(level_t)) for c, *_ in brokers],
        *[(c, "t", "leaders.preference", spec_t) for c, *_ in brokers],
    ]
    defaults = {
        "min.insync.racks": str(default[0]),
        "min.insync.racks.level": str(default[1]),
        "default.leaders.preference": default[2],
    }
    got = audit_tables(local_tables(*fleet), min_isr, DomainRules.of(defaults, configs))
    assert _figures(got) == _reference(fleet, min_isr, {"t": rules[0], "u": default})
