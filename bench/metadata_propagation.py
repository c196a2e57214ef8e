"""How long a topic takes to reach a broker's metadata: from the active controller's answer to
CreateTopics to the first Metadata answer of a broker that lists the topic with its leader.

A local cluster (``rackwise cluster up``: ``--controllers`` voters, one broker) in a temporary
directory; ``--topics`` topics of one partition are created one at a time on the active
controller, and after each answer a second connection asks the broker for the topic's
metadata until it is there (the broker follows the metadata log on its own, so the figure is
the metadata log's propagation: commit, the broker's fetch, its replay). Prints p50, p99 and
the maximum in ms.

    .venv/bin/python bench/metadata_propagation.py [--topics 200] [--controllers 1] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rackwise.net import KafkaConnection
from rackwise.protocol import ApiKey

METADATA_TOPIC = [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]


def rackwise(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rackwise.cli.main", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


async def connect(node: dict[str, Any]) -> KafkaConnection:
    conn = await KafkaConnection.connect(str(node["host"]), int(node["port"]), timeout_s=10)
    await conn.negotiate_versions()
    return conn


async def active_controller(controllers: list[dict[str, Any]]) -> KafkaConnection:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for node in controllers:
            conn = await connect(node)
            answer = await conn.request(ApiKey.DESCRIBE_QUORUM, version=2, topics=METADATA_TOPIC)
            if int(answer.topics[0].partitions[0].error_code) == 0:
                return conn
            await conn.close()
        await asyncio.sleep(0.2)
    raise SystemExit("no active controller")


async def listed(broker: KafkaConnection, name: str) -> bool:
    answer = await broker.request(
        ApiKey.METADATA,
        topics=[{"name": name, "topic_id": None}],
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    topic = answer.topics[0]
    return int(topic.error_code) == 0 and any(int(p.leader_id) >= 0 for p in topic.partitions)


async def measure(nodes: list[dict[str, Any]], topics: int) -> list[float]:
    controller = await active_controller([n for n in nodes if n["role"] == "controller"])
    broker = await connect(next(n for n in nodes if n["role"] == "broker"))
    latencies: list[float] = []
    try:
        for i in range(topics):
            name = f"propagation-{i}"
            spec = {
                "name": name,
                "num_partitions": 1,
                "replication_factor": 1,
                "assignments": [],
                "configs": [],
            }
            answer = await controller.request(
                ApiKey.CREATE_TOPICS, topics=[spec], timeout=30_000, validate_only=False
            )
            acknowledged = time.perf_counter()
            assert int(answer.topics[0].error_code) == 0, answer
            while not await listed(broker, name):
                if time.perf_counter() - acknowledged > 30:
                    raise SystemExit(f"{name} did not reach the broker in 30 s")
            latencies.append((time.perf_counter() - acknowledged) * 1000)
    finally:
        await controller.close()
        await broker.close()
    return latencies


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topics", type=int, default=200)
    parser.add_argument("--controllers", type=int, default=1, choices=(1, 3, 5))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "cluster"
        up = rackwise(
            "cluster",
            "up",
            "--brokers",
            "1",
            "--controllers",
            str(args.controllers),
            "--dir",
            str(directory),
            "--json",
        )
        if up.returncode != 0:
            raise SystemExit(f"cluster up failed: {up.stderr.strip()}")
        try:
            latencies = asyncio.run(measure(json.loads(up.stdout)["nodes"], args.topics))
        finally:
            rackwise("cluster", "down", "--dir", str(directory))
    result = {
        "controllers": args.controllers,
        "topics": len(latencies),
        "p50_ms": round(percentile(latencies, 0.50), 2),
        "p99_ms": round(percentile(latencies, 0.99), 2),
        "max_ms": round(max(latencies), 2),
        "mean_ms": round(statistics.fmean(latencies), 2),
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(
            f"{result['topics']} topics, {args.controllers} controller(s): CreateTopics answered "
            f"to topic in the broker's Metadata p50 {result['p50_ms']} ms, p99 "
            f"{result['p99_ms']} ms, max {result['max_ms']} ms"
        )
    return 0


if __name__ == "__main__":
    from _signals import stopping

    raise SystemExit(stopping(main))
