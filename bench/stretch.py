"""Stretch-cluster benchmark: what ``min.insync.racks=2`` costs an acks=all producer, RF 3 over
three data centres, against the same topic without it, measured in the same run.

Three brokers on ``/dc1/r1``, ``/dc2/r1``, ``/dc3/r1`` (one controller), two topics of three
partitions at RF 3 with ``min.insync.replicas=2``: ``plain``, and ``racks`` with
``min.insync.racks=2`` too. The client is the data-path benchmark's (pre-encoded Produce v9
frames, a batch of ``--records-per-batch`` 1 KiB records per partition, acks=all, five
requests in flight to each leader); the two topics alternate ``--rounds`` times, and each
round's throughput ratio racks/plain is reported with the medians of MB/s and latency
p50/p99. The records each leader stored are checked against those sent afterwards.

    .venv/bin/python bench/stretch.py [--seconds S] [--rounds N] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from data_path import (
    create_topic,
    drive,
    end_offsets,
    produce_frames,
    rackwise,
    report,
    summary,
)

RACKS = ("/dc1/r1", "/dc2/r1", "/dc3/r1")
PARTITIONS = 3
TOPICS = {
    "plain": {"min.insync.replicas": "2"},
    "racks": {"min.insync.replicas": "2", "min.insync.racks": "2"},
}


class StretchCluster:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        up = rackwise(
            "cluster", "up", "--dir", str(directory), "--brokers", str(len(RACKS)),
            "--racks", ",".join(RACKS), "--placer", "multi-level", "--json",
        )  # fmt: skip
        if up.returncode != 0:
            raise SystemExit(f"cluster up failed: {up.stderr.strip()}")
        self.brokers = {n["id"]: n for n in json.loads(up.stdout)["nodes"] if n["role"] == "broker"}
        self.bootstrap = ",".join(f"{b['host']}:{b['port']}" for b in self.brokers.values())

    def address(self, broker: int) -> tuple[str, int]:
        node = self.brokers[broker]
        return str(node["host"]), int(node["port"])

    def down(self) -> None:
        rackwise("cluster", "down", "--dir", str(self.directory))


def run_topic(
    cluster: StretchCluster, topic: str, leaders: dict[int, int], seconds: float, records: int
) -> dict[str, Any]:
    """One round on ``topic``: every leader driven at once; figures and the records sent."""
    by_leader: dict[int, list[int]] = {}
    for partition, leader in leaders.items():
        by_leader.setdefault(leader, []).append(partition)
    frames = {b: produce_frames(topic, parts, records, -1) for b, parts in by_leader.items()}

    async def all_leaders() -> list[dict[str, Any]]:
        runs = (drive(cluster.address(b), frame, seconds) for b, frame in frames.items())
        return list(await asyncio.gather(*runs))

    results = asyncio.run(all_leaders())
    sent = sum(
        r["requests"] * records * len(by_leader[b]) for b, r in zip(frames, results, strict=True)
    )
    out = summary(results, records)
    out["records"] = sent
    return out


def _median(runs: list[dict[str, Any]]) -> dict[str, Any]:
    return sorted(runs, key=lambda r: r["mb_per_s"])[len(runs) // 2]


def measure(work: Path, seconds: float, records: int, rounds: int) -> dict[str, Any]:
    cluster = StretchCluster(work / "stretch")
    try:
        leaders = {
            name: create_topic(cluster.bootstrap, name, PARTITIONS, 3, **configs)
            for name, configs in TOPICS.items()
        }
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in TOPICS}
        ratios = []
        for _ in range(rounds):
            for name in TOPICS:
                os.sync()  # neither pays for the other's writeback
                runs[name].append(run_topic(cluster, name, leaders[name], seconds, records))
            ratios.append(runs["racks"][-1]["mb_per_s"] / runs["plain"][-1]["mb_per_s"])
        for name in TOPICS:
            sent = sum(r["records"] for r in runs[name])
            stored = sum(end_offsets(cluster.bootstrap, name, PARTITIONS))
            if stored != sent:
                raise SystemExit(f"sent {sent} records to {name}, the cluster holds {stored}")
        return {
            **{name: _median(runs[name]) for name in TOPICS},
            "ratios_racks_to_plain": ratios,
        }
    finally:
        cluster.down()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--records-per-batch", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    out: dict[str, Any] = {"load_average": os.getloadavg()[0], "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="rackwise-bench-") as tmp:
        figures = measure(Path(tmp), args.seconds, args.records_per_batch, args.rounds)
    out.update(figures)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    for name in TOPICS:
        label = "acks=all, min.insync.racks=2" if name == "racks" else "acks=all, no racks rule"
        report(label, {k: v for k, v in figures[name].items() if k != "latencies"}, False)
    ratios = figures["ratios_racks_to_plain"]
    each = ", ".join(f"{r:.2f}" for r in ratios)
    print(f"{'':28s} throughput racks/plain, round by round: {each}; median "
          f"{sorted(ratios)[len(ratios) // 2]:.2f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    from _signals import stopping

    raise SystemExit(stopping(main))
