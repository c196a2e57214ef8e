"""Server-side assignor benchmark (KIP-848): how long the coordinator takes to compute a group's
target assignment, and how much of it is read in the leader's rack.

The groups are bench/assignors.py's (12 brokers in three racks, replication factor 3, a tenth
of the leaders failed over; consumers spread over the racks): 10,000 partitions x 1,000
members and 100,000 x 100, fresh. For each server-side assignor: the median time of a few
runs of the whole target computation (:func:`rackwise.groups.consumer_target.new_target`:
the spec in Java's orders, the assignor, the records of every member's target), the time
relative to Kafka's ``uniform`` in the same run (the peer), the balance, and the share of
partitions whose leader is in the member's rack against the optimum ``rack-local-optimal``
proves.

With ``--live``, the figures of live groups instead (bench/groups_live.py): the time for a group
of ``--consumers`` real librdkafka members over ``--partitions`` partitions to become stable
after one member joins, classic eager, classic cooperative-sticky and KIP-848; offset commits
per second on one coordinator; the time to resume after ``kill -9`` of the coordinator.

    .venv/bin/python bench/groups.py [--json] [--repeat N] [--small]
    .venv/bin/python bench/groups.py --live [--consumers 100] [--partitions 1000] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import uuid

from assignors import build_group
from rackwise.assignors.model import GroupSpec
from rackwise.assignors.optimal import optimal_locality
from rackwise.assignors.server_registry import DEFAULT_ASSIGNORS
from rackwise.groups.consumer_group import ConsumerGroup
from rackwise.groups.consumer_member import ConsumerMember
from rackwise.groups.consumer_records import TargetMember
from rackwise.groups.consumer_target import new_target
from rackwise.groups.consumer_types import TopicsView, TopicView

SCENARIOS = ((10_000, 1_000), (100_000, 100))


def as_coordinator_group(spec: GroupSpec) -> tuple[ConsumerGroup, TopicsView]:
    topics = {
        name: TopicView(name, uuid.UUID(int=i + 1), tuple(infos))
        for i, (name, infos) in enumerate(spec.partitions.items())
    }
    group = ConsumerGroup("bench", epoch=1)
    for m in spec.members:
        group.members[m.member_id] = ConsumerMember(
            m.member_id, rack_id=m.rack, topic_names=m.topics
        )
    return group, TopicsView(1, topics)


def measure(spec: GroupSpec, name: str, repeat: int) -> dict[str, object]:
    group, view = as_coordinator_group(spec)
    times, records = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        records = new_target(group, view, name, 1)
        times.append(time.perf_counter() - start)
    targets = [r for r in records if isinstance(r, TargetMember)]
    counts = {r.member_id: sum(len(ps) for ps in r.partitions.values()) for r in targets}
    counts.update({m: 0 for m in group.members if m not in counts})
    name_of = {t.topic_id: t.name for t in view.topics.values()}
    rack = {m.member_id: m.rack_id for m in group.members.values()}
    total = sum(len(t.partitions) for t in view.topics.values())
    given = sum(counts.values())
    if given != total:
        raise AssertionError(f"{name}: {given} of {total} partitions assigned")
    local = sum(
        1
        for r in targets
        for topic_id, ps in r.partitions.items()
        for p in ps
        if view.topics[name_of[topic_id]].partitions[p].leader_rack == rack[r.member_id]
    )
    return {
        "assignor": name,
        "seconds": round(statistics.median(times), 3),
        "balance": max(counts.values()) - min(counts.values()),
        "leader_rack_share": round(local / total, 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--json", action="store_true", help="print the results as one JSON object")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (median)")
    parser.add_argument("--small", action="store_true", help="small groups, for a quick look")
    parser.add_argument("--live", action="store_true", help="live groups (bench/groups_live.py)")
    parser.add_argument("--consumers", type=int, default=100, help="--live: the group's members")
    parser.add_argument("--partitions", type=int, default=1000, help="--live: the topic's")
    parser.add_argument("--committers", type=int, default=8, help="--live: committing groups")
    parser.add_argument("--seconds", type=float, default=5.0, help="--live: commit time")
    args = parser.parse_args()
    if args.live:
        from groups_live import print_live, run_live  # noqa: PLC0415  (librdkafka, clusters)

        live = run_live(args.consumers, args.partitions, args.committers, args.seconds)
        print(json.dumps(live)) if args.json else print_live(live)
        return
    scenarios = ((1_000, 100), (10_000, 10)) if args.small else SCENARIOS
    results = []
    for num_partitions, num_members in scenarios:
        spec = build_group(num_partitions, num_members)
        optimum = optimal_locality(spec) / num_partitions
        rows = []
        for name in DEFAULT_ASSIGNORS:
            print(f"{num_partitions:,} x {num_members:,}: {name}...", file=sys.stderr, flush=True)
            rows.append(measure(spec, name, args.repeat))
        peer = next(r for r in rows if r["assignor"] == "uniform")["seconds"]
        for r in rows:
            r.update(
                partitions=num_partitions,
                members=num_members,
                optimum_share=round(optimum, 4),
                vs_uniform=round(float(r["seconds"]) / max(float(peer), 1e-9), 2),  # type: ignore[arg-type]
            )
        results += rows
    if args.json:
        print(json.dumps({"cores": os.cpu_count(), "repeat": args.repeat, "results": results}))
        return
    print(f"\nmachine: {os.cpu_count()} cores; median of {args.repeat} runs")
    print(
        f"{'partitions':>10} {'members':>7} {'assignor':>36} {'seconds':>8} {'x uniform':>9} "
        f"{'balance':>7} {'leader rack':>11} {'optimum':>8}"
    )
    for r in results:
        print(
            f"{r['partitions']:>10,} {r['members']:>7,} {r['assignor']:>36} {r['seconds']:>8.3f} "
            f"{r['vs_uniform']:>9.2f} {r['balance']:>7} {r['leader_rack_share']:>11.1%} "
            f"{r['optimum_share']:>8.1%}"
        )


if __name__ == "__main__":
    from _signals import stopping

    raise SystemExit(stopping(main))
