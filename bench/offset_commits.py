"""Offset-commit benchmark: how long OffsetCommit takes when many groups commit at once on one
``__consumer_offsets`` partition, beside the same number of groups on different partitions
measured in the same run.

A real cluster of broker processes (``rackwise cluster up --brokers 3``, so
``__consumer_offsets`` has replication factor 3, with ``--partitions`` partitions) and a topic
of one partition at RF 3. For each size in ``--groups``, two sets of groups: ``one``, every
group's ``__consumer_offsets`` partition the same; ``spread``, every group's a different one
(their coordinators are the three brokers). Each group has a connection of its own to its
coordinator (rackwise's client, FindCoordinator first); a round sends every group's commit of
one offset at the same moment and times each from send to answer (acks=all: the answer
comes once the in-sync replicas have the record). The two sets alternate, ``--rounds``
rounds each; every answer must be error 0.

Reported per size: p50, p99 and max of each set's commits, and the ratio one/spread of p50 and
p99 (1.0: a group's commit does not wait for the other groups on its partition).

    .venv/bin/python bench/offset_commits.py [--groups 12,100] [--rounds 20]
        [--partitions 100] [--json]

The code before a change runs from a worktree: ``git worktree add /tmp/before <commit>`` then
``PYTHONPATH=/tmp/before/src .venv/bin/python bench/offset_commits.py`` (the processes inherit
it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from data_path import BenchCluster, create_topic, percentiles
from rackwise.groups.offsets import partition_for
from rackwise.net import KafkaConnection
from rackwise.protocol import ApiKey

TOPIC = "bench-commits"
LOAD_IN_PROGRESS = 14
NOT_AVAILABLE = 15
NOT_COORDINATOR = 16


def one_partition(size: int, partitions: int) -> list[str]:
    """``size`` group ids on ``__consumer_offsets`` partition 0."""
    names = (f"one-{i}" for i in range(1_000_000))
    return [n for n in names if partition_for(n, partitions) == 0][:size]


def spread(size: int, partitions: int) -> list[str]:
    """``size`` group ids on as many different ``__consumer_offsets`` partitions."""
    if size > partitions:
        raise SystemExit(f"error: {size} groups cannot each have one of {partitions} partitions")
    chosen: dict[int, str] = {}
    for i in range(1_000_000):
        name = f"spread-{i}"
        chosen.setdefault(partition_for(name, partitions), name)
        if len(chosen) == size:
            break
    return sorted(chosen.values())


def _commit(group: str, offset: int) -> dict[str, Any]:
    return {
        "group_id": group,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "group_instance_id": None,
        "topics": [
            {
                "name": TOPIC,
                "partitions": [
                    {"partition_index": 0, "committed_offset": offset, "committed_metadata": ""}
                ],
            }
        ],
    }


class Groups:
    """A connection per group to its coordinator."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.conns: list[KafkaConnection] = []

    async def connect(self, addresses: dict[int, tuple[str, int]]) -> None:
        any_host, any_port = next(iter(addresses.values()))
        probe = await KafkaConnection.connect(any_host, any_port, timeout_s=10)
        await probe.negotiate_versions()
        try:
            for name in self.names:
                node = await _coordinator(probe, name)
                host, port = addresses[node]
                conn = await KafkaConnection.connect(host, port, timeout_s=10)
                await conn.negotiate_versions()
                self.conns.append(conn)
        finally:
            await probe.close()
        deadline = time.monotonic() + 60
        while any(code != 0 for code, _ in await self.commit(0)):  # loaded, replicated
            if time.monotonic() > deadline:
                raise SystemExit("error: the groups' partitions did not answer commits in 60 s")
            await asyncio.sleep(0.2)

    async def commit(self, offset: int) -> list[tuple[int, float]]:
        """Every group's commit at once: (error code, seconds from send to answer)."""

        async def one(conn: KafkaConnection, group: str) -> tuple[int, float]:
            started = time.perf_counter()
            answer = await conn.request(
                ApiKey.OFFSET_COMMIT, timeout_s=60, **_commit(group, offset)
            )
            return int(answer.topics[0].partitions[0].error_code), time.perf_counter() - started

        pairs = zip(self.conns, self.names, strict=True)
        return list(await asyncio.gather(*(one(c, g) for c, g in pairs)))

    async def close(self) -> None:
        for conn in self.conns:
            await conn.close()


async def _coordinator(conn: KafkaConnection, group: str) -> int:
    deadline = time.monotonic() + 60
    while True:
        answer = await conn.request(
            ApiKey.FIND_COORDINATOR, key=group, key_type=0, coordinator_keys=[group]
        )
        found = answer.coordinators[0]
        if int(found.error_code) == 0:
            return int(found.node_id)
        if time.monotonic() > deadline:
            raise SystemExit(f"error: no coordinator for group {group!r} in 60 s")
        await asyncio.sleep(0.2)


async def measure(cluster: BenchCluster, size: int, partitions: int, rounds: int) -> dict[str, Any]:
    addresses = {int(b["id"]): cluster.address(int(b["id"])) for b in cluster.brokers}
    sets = {
        "one": Groups(one_partition(size, partitions)),
        "spread": Groups(spread(size, partitions)),
    }
    latencies: dict[str, list[float]] = {name: [] for name in sets}
    try:
        for groups in sets.values():
            await groups.connect(addresses)
        for offset in range(1, rounds + 1):
            for name, groups in sets.items():
                answers = await groups.commit(offset)
                failed = [code for code, _ in answers if code != 0]
                if failed:
                    raise SystemExit(f"error: {name} commits answered errors {sorted(set(failed))}")
                latencies[name] += [seconds for _, seconds in answers]
    finally:
        for groups in sets.values():
            await groups.close()
    figures: dict[str, Any] = {
        name: {**percentiles(values), "count": len(values)} for name, values in latencies.items()
    }
    for q in ("p50", "p99"):
        figures[f"ratio_{q}"] = round(figures["one"][f"{q}_ms"] / figures["spread"][f"{q}_ms"], 2)
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", default="12,100", help="group counts, comma-separated")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.groups.split(",")]
    out: dict[str, Any] = {"load_average": os.getloadavg()[0], "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="rackwise-bench-") as tmp:
        cluster = BenchCluster(
            Path(tmp) / "cluster", 3, f"offsets.topic.num.partitions={args.partitions}"
        )
        try:
            create_topic(cluster.bootstrap, TOPIC, 1, 3)
            for size in sizes:
                figures = asyncio.run(measure(cluster, size, args.partitions, args.rounds))
                out[f"{size}_groups"] = figures
                if not args.json:
                    report(size, figures)
        finally:
            cluster.down()
    if args.json:
        print(json.dumps(out, indent=2))
    return 0


def report(size: int, figures: dict[str, Any]) -> None:
    for name in ("one", "spread"):
        f = figures[name]
        where = "one partition" if name == "one" else "different partitions"
        print(
            f"{size:>3} groups, {where:<20} p50 {f['p50_ms']:8.1f} ms  p99 {f['p99_ms']:8.1f} ms"
            f"  max {f['max_ms']:8.1f} ms  ({f['count']} commits)"
        )
    print(
        f"{size:>3} groups, one/different        p50 x{figures['ratio_p50']}"
        f"  p99 x{figures['ratio_p99']}"
    )


if __name__ == "__main__":
    from _signals import stopping

    raise SystemExit(stopping(main))
