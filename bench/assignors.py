"""Consumer assignor benchmark: time, balance and leader-rack locality against the optimum.

Two groups, both fresh (no member owns anything yet):

- 10,000 partitions (10 topics x 1,000) read by 1,000 consumers;
- 100,000 partitions (10 topics x 10,000) read by 100 consumers.

The cluster is 12 brokers in three racks of uneven size (5, 4 and 3 brokers), each topic placed
with Kafka's rack-aware placement at replication factor 3, so every partition has a replica in
every rack and the preferred leaders fall on the racks as 5 : 4 : 3. A tenth of the partitions
(seeded) have failed over to their second replica, as after broker restarts. Consumers are
spread evenly over the three racks, which matches the leaders only roughly: the optimum is below
100%.

For each assignor: the median time of a few in-process runs, the balance (most minus fewest
partitions per consumer), and the share of partitions whose leader is in the consumer's rack,
next to the most any balanced assignment reaches, which ``rack-local-optimal`` proves.

    .venv/bin/python bench/assignors.py [--json] [--repeat N] [--topics N] [--small]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Callable

from rackwise.assignors import ASSIGNOR_NAMES, Assignment, GroupSpec, create_assignor
from rackwise.assignors.model import Member, PartitionInfo
from rackwise.assignors.optimal import optimal_locality
from rackwise.common import JavaRandom
from rackwise.placement import BrokerInfo, ClusterView, PlacementSpec, create_placer

RACKS = ("rack-a", "rack-b", "rack-c")
BROKERS = [BrokerInfo(i, RACKS[0 if i < 5 else 1 if i < 9 else 2]) for i in range(12)]
NUM_TOPICS = 10
FAILED_OVER = 0.1
SCENARIOS = ((10_000, 1_000), (100_000, 100))


def build_group(
    num_partitions: int, num_consumers: int, num_topics: int = NUM_TOPICS, seed: int = 1
) -> GroupSpec:
    """The benchmark's group (see the module)."""
    rack_of = {b.id: b.rack for b in BROKERS}
    drift = random.Random(seed)
    placer = create_placer("rack-aware", random=JavaRandom(seed))
    per_topic = num_partitions // num_topics
    partitions: dict[str, list[PartitionInfo]] = {}
    for t in range(num_topics):
        placed = placer.place(PlacementSpec(per_topic, 3), ClusterView(BROKERS))
        infos = []
        for replicas in placed:
            order = list(replicas)
            if drift.random() < FAILED_OVER:
                order[0], order[1] = order[1], order[0]
            infos.append(PartitionInfo(tuple(rack_of[b] for b in order)))
        partitions[f"topic-{t:02d}"] = infos
    topics = tuple(partitions)
    members = tuple(
        Member(f"consumer-{i:04d}", topics, rack=RACKS[i % len(RACKS)])
        for i in range(num_consumers)
    )
    return GroupSpec(partitions, members, prefer_rack_aware_logic=False)


def after_failover(group: GroupSpec, previous: Assignment, seed: int = 2) -> GroupSpec:
    """The next rebalance: the last consumer has left, the others own what they had (generation
    1), and another tenth of the partitions have failed over to their second replica."""
    drift = random.Random(seed)
    partitions = {
        topic: [
            PartitionInfo((p.replica_racks[1], p.replica_racks[0], *p.replica_racks[2:]))
            if drift.random() < FAILED_OVER
            else p
            for p in infos
        ]
        for topic, infos in group.partitions.items()
    }
    members = tuple(
        Member(m.member_id, m.topics, tuple(previous[m.member_id]), m.rack, generation=1)
        for m in group.members[:-1]
    )
    return GroupSpec(partitions, members, prefer_rack_aware_logic=False)


def leader_rack_local(group: GroupSpec, assignment: Assignment) -> int:
    rack = {m.member_id: m.rack for m in group.members}
    return sum(
        1
        for member_id, parts in assignment.items()
        for tp in parts
        if group.partitions[tp.topic][tp.partition].leader_rack == rack[member_id]
    )


def _median_seconds(run: Callable[[], Assignment], repeat: int) -> tuple[float, Assignment]:
    times = []
    result: Assignment = {}
    for _ in range(repeat):
        start = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def _until_complete(group: GroupSpec, assign: Callable[[GroupSpec], Assignment]) -> Assignment:
    """Cooperative assignors withhold partitions that change owner for one round; run the
    rounds a group would, each member owning what the last round gave it."""
    total = sum(len(p) for p in group.partitions.values())
    assignment = assign(group)
    for generation in range(2, 5):
        if sum(len(p) for p in assignment.values()) == total:
            break
        members = tuple(
            Member(
                m.member_id, m.topics, tuple(assignment[m.member_id]), m.rack, generation=generation
            )
            for m in group.members
        )
        assignment = assign(GroupSpec(group.partitions, members, group.prefer_rack_aware_logic))
    return assignment


def measure(group: GroupSpec, name: str, repeat: int) -> tuple[dict[str, object], Assignment]:
    """One assignor on one group: time of the first round, then the group's final state."""
    assignor = create_assignor(name)
    seconds, _ = _median_seconds(lambda: assignor.assign(group), repeat)
    assignment = _until_complete(group, assignor.assign)
    counts = [len(assignment.get(m.member_id, [])) for m in group.members]
    given = [tp for parts in assignment.values() for tp in parts]
    total = sum(len(p) for p in group.partitions.values())
    if len(given) != total or len(set(given)) != total:
        raise AssertionError(f"{name}: {len(set(given))} distinct of {total} partitions assigned")
    owner = {tp: m.member_id for m in group.members for tp in m.owned}
    moved = sum(1 for m, parts in assignment.items() for tp in parts if owner.get(tp, m) != m)
    row = {
        "assignor": name,
        "seconds": round(seconds, 3),
        "balance": max(counts) - min(counts),
        "leader_rack_share": round(leader_rack_local(group, assignment) / total, 4),
        "moved": moved,
    }
    return row, assignment


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--json", action="store_true", help="print the results as one JSON object")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (median)")
    parser.add_argument("--topics", type=int, default=NUM_TOPICS, help="topics per group")
    parser.add_argument("--small", action="store_true", help="small groups, for a quick look")
    args = parser.parse_args()
    as_json, repeat, num_topics = args.json, args.repeat, args.topics
    scenarios = ((1_000, 100), (10_000, 10)) if args.small else SCENARIOS
    results = []
    for scenario, (num_partitions, num_consumers) in enumerate(scenarios):
        fresh = build_group(num_partitions, num_consumers, num_topics)
        optimum = {"fresh": optimal_locality(fresh)}
        for name in ASSIGNOR_NAMES:
            row, first = measure(fresh, name, repeat)
            later = after_failover(fresh, first)
            optimum.setdefault("rebalance", optimal_locality(later))
            again, _ = measure(later, name, repeat)
            for phase, r in (("fresh", row), ("rebalance", again)):
                r.update(
                    partitions=num_partitions,
                    consumers=num_consumers - (phase == "rebalance"),
                    phase=phase,
                    scenario=scenario,
                    optimum_share=round(optimum[phase] / num_partitions, 4),
                )
                results.append(r)
                if not as_json:
                    print(
                        f"{num_partitions:>7,} x {r['consumers']:>5,} {phase:>9} {name}: "
                        f"{r['seconds']} s",
                        file=sys.stderr,
                    )
    if as_json:
        print(json.dumps({"cores": os.cpu_count(), "topics": num_topics, "results": results}))
        return
    print(f"\nmachine: {os.cpu_count()} cores; {num_topics} topics; median of {repeat} runs")
    header = ("partitions", "consumers", "phase", "assignor", "seconds", "balance", "moved")
    print(
        f"{header[0]:>10} {header[1]:>9} {header[2]:>9} {header[3]:>36} {header[4]:>8} "
        f"{header[5]:>7} {header[6]:>6} {'leader rack':>11} {'optimum':>8}"
    )
    for r in sorted(results, key=lambda r: (r["scenario"], r["phase"])):
        print(
            f"{r['partitions']:>10,} {r['consumers']:>9,} {r['phase']:>9} {r['assignor']:>36} "
            f"{r['seconds']:>8.3f} {r['balance']:>7} {r['moved']:>6} "
            f"{r['leader_rack_share']:>11.1%} {r['optimum_share']:>8.1%}"
        )


if __name__ == "__main__":
    from _signals import stopping

    raise SystemExit(stopping(main))
