"""Reassignment benchmark: partitions moved from broker 1 to broker 2 under the replication
throttle, then back without it, beside the machine's copy ceiling measured in the same run.

Figures:
  throttled      the partitions (``--size-mb`` in all, 4 partitions) reassigned from broker 1
                 to broker 2 with ``leader.replication.throttled.rate`` on broker 1 and
                 ``follower.replication.throttled.rate`` on broker 2 at ``--throttle-mb``
                 MB/s and the topic's throttled-replica lists set as Kafka's tool sets them:
                 wall time from AlterPartitionReassignments to an empty
                 ListPartitionReassignments, against the ideal the throttle allows (bytes /
                 rate); the bytes broker 2 holds at the end against what the partitions held;
                 the rate over every 10 s window from a second after the first bytes
                 (broker 2's DescribeLogDirs every 0.25 s);
                 produce latency p50/p99 of a librdkafka producer (acks=all, one record in
                 flight) writing to another topic on the same two brokers, during the move
                 against before it
  unthrottled    the same partitions moved back to broker 1 with the throttles removed: MB/s
                 against the ceiling, a loopback socket copy of the same segment files
                 (``sendfile`` into a socket, received and written to a file on the same file
                 system), measured just before
  executor       ``rackwise rebalance --execute --throttle`` at the same rate on the cluster
                 left with every partition on broker 1: the bytes the plan said it would
                 move against the bytes broker 2 gained (DescribeLogDirs), the copying time
                 against the ideal the throttle allows, and the executor's own time per batch
                 (the command's wall time less the batches' copying, over the batches)

    .venv/bin/python bench/reassign.py [--size-mb 2048] [--throttle-mb 40] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from rackwise.net import KafkaConnection
from rackwise.protocol import ApiKey

TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4
SET, DELETE = 0, 1
PARTITIONS = 4
VALUE = bytes(range(256)) * 400  # 100 KiB
LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"


def rackwise(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rackwise.cli.main", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )


def progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class Cluster:
    """Two brokers from ``rackwise cluster up``, and kio requests to them."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        up = rackwise("cluster", "up", "--dir", str(directory), "--brokers", "2", "--json")
        if up.returncode != 0:
            raise SystemExit(f"cluster up failed: {up.stderr.strip()}")
        nodes = json.loads(up.stdout)["nodes"]
        self.ports = {int(n["id"]): int(n["port"]) for n in nodes if n["role"] == "broker"}

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{p}" for p in self.ports.values())

    def down(self) -> None:
        rackwise("cluster", "down", "--dir", str(self.directory))

    def request(self, broker: int, api_key: int, **fields: Any) -> Any:
        async def send() -> Any:
            connection = await KafkaConnection.connect("127.0.0.1", self.ports[broker])
            try:
                await connection.negotiate_versions()
                return await connection.request(api_key, fields, timeout_s=60)
            finally:
                await connection.close()

        return asyncio.run(send())

    def alter_configs(
        self, resource_type: int, name: str, op: int, entries: dict[str, str]
    ) -> None:
        """IncrementalAlterConfigs, sent to the broker a per-broker change names (Kafka
        refuses it elsewhere), else to broker 1."""
        response = self.request(
            int(name) if resource_type == BROKER_RESOURCE and name else 1,
            ApiKey.INCREMENTAL_ALTER_CONFIGS,
            resources=[
                {
                    "resource_type": resource_type,
                    "resource_name": name,
                    "configs": [
                        {"name": k, "config_operation": op, "value": v if op == SET else None}
                        for k, v in entries.items()
                    ],
                }
            ],
            validate_only=False,
        )
        for result in response.responses:
            if int(result.error_code) != 0:
                raise SystemExit(f"IncrementalAlterConfigs failed: {result.error_message}")

    def reassign(self, topic: str, replicas: list[int]) -> None:
        partitions = [{"partition_index": p, "replicas": replicas} for p in range(PARTITIONS)]
        response = self.request(
            1,
            ApiKey.ALTER_PARTITION_REASSIGNMENTS,
            timeout_ms=30_000,
            topics=[{"name": topic, "partitions": partitions}],
        )
        errors = [
            f"{t.name}-{p.partition_index}: {p.error_message}"
            for t in response.responses
            for p in t.partitions
            if int(p.error_code) != 0
        ]
        if int(response.error_code) != 0 or errors:
            raise SystemExit(
                f"AlterPartitionReassignments failed: {response.error_message} {errors}"
            )

    def reassigning(self) -> bool:
        response = self.request(
            1, ApiKey.LIST_PARTITION_REASSIGNMENTS, timeout_ms=30_000, topics=None
        )
        return any(t.partitions for t in response.topics)

    def sizes(self, broker: int, topic: str) -> int:
        """The bytes of ``topic``'s replicas on ``broker`` (DescribeLogDirs)."""
        response = self.request(broker, ApiKey.DESCRIBE_LOG_DIRS, topics=None)
        return sum(
            int(p.partition_size)
            for d in response.results
            for t in d.topics
            if t.name == topic
            for p in t.partitions
            if not p.is_future_key
        )


def fill(bootstrap: str, topic: str, megabytes: int) -> None:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 20,
            "batch.size": 1_000_000,
            "acks": "1",
            "log_level": 2,  # its connections closing when the cluster goes down
        }
    )
    count = megabytes * 1_000_000 // len(VALUE)
    started = time.monotonic()
    for i in range(count):
        while True:
            try:
                producer.produce(topic, value=VALUE, partition=i % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.01)
        if i % 2000 == 0 and i:
            progress(f"filling: {i * len(VALUE) / 1e6:,.0f} of {megabytes:,} MB")
    if producer.flush(300):
        raise SystemExit(f"filling {topic} did not finish in 300 s")
    progress(f"filled {megabytes:,} MB in {time.monotonic() - started:.1f} s")


def latency_writer(bootstrap: str, stop: threading.Event, out: list[float]) -> None:
    """One record in flight at a time, every 5 ms: the latency of each, not of a queue that
    an open-loop writer would build on a loaded machine."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    record = b"l" * 1000
    while not stop.is_set():
        sent = time.monotonic()
        producer.produce("latency", value=record)
        if producer.flush(30) == 0:
            out.append(time.monotonic() - sent)
        time.sleep(0.005)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000 if ordered else 0.0


def windows(samples: list[tuple[float, int]], width: float) -> list[float]:
    """Bytes per second over every window of ``width`` seconds between two samples."""
    rates = []
    for i, (t0, b0) in enumerate(samples):
        later = [(t, b) for t, b in samples[i + 1 :] if t - t0 >= width]
        if later:
            t1, b1 = later[0]
            rates.append((b1 - b0) / (t1 - t0))
    return rates


def move(cluster: Cluster, target: int, total: int, label: str) -> tuple[float, list[Any]]:
    """Reassign every partition to ``target``; (seconds until no reassignment is left, the
    target's size every 0.25 s)."""
    started = time.monotonic()
    cluster.reassign("moved", [target])
    samples: list[tuple[float, int]] = []
    shown = started
    while True:
        size = cluster.sizes(target, "moved")
        now = time.monotonic()
        samples.append((now, size))
        if not cluster.reassigning():
            return time.monotonic() - started, samples
        if now - shown >= 5:
            rate = size / (now - started) / 1e6
            left = (total - size) / 1e6 / rate if rate > 0 else float("inf")
            progress(
                f"{label}: {size / 1e6:,.0f} of {total / 1e6:,.0f} MB, "
                f"{rate:,.1f} MB/s, {left:,.0f} s left"
            )
            shown = now
        if now - started > 3600:
            raise SystemExit(f"{label} did not finish in an hour")
        time.sleep(0.25)


def socket_ceiling(files: list[Path], scratch: Path) -> float:
    """Seconds to copy ``files`` through a loopback socket into one file in ``scratch``."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    target = scratch / "ceiling.bin"

    def receive() -> None:
        conn, _ = listener.accept()
        buffer = bytearray(1 << 20)
        view = memoryview(buffer)
        with conn, open(target, "wb") as out:
            while n := conn.recv_into(buffer):
                out.write(view[:n])

    receiver = threading.Thread(target=receive)
    receiver.start()
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port)) as sender:
        for path in files:
            with open(path, "rb") as f:
                sender.sendfile(f)
    receiver.join()
    elapsed = time.monotonic() - started
    listener.close()
    target.unlink()
    return elapsed


def segment_files(directory: Path, broker: int) -> list[Path]:
    return sorted((directory / f"broker-{broker}").glob("**/moved-*/*.log"))


def run(work: Path, size_mb: int, throttle_mb: int) -> dict[str, Any]:
    cluster = Cluster(work / "cluster")
    stop = threading.Event()
    writer: threading.Thread | None = None
    try:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        topics = [
            NewTopic("moved", PARTITIONS, replica_assignment=[[1]] * PARTITIONS),
            NewTopic("latency", 1, replica_assignment=[[1, 2]]),
        ]
        for future in admin.create_topics(topics).values():
            future.result(30)
        fill(cluster.bootstrap, "moved", size_mb)
        subprocess.run(["sync"], check=True)  # the fill's dirty pages are not the move's
        held = cluster.sizes(1, "moved")
        latencies: list[float] = []
        writer = threading.Thread(
            target=latency_writer, args=(cluster.bootstrap, stop, latencies), daemon=True
        )
        writer.start()
        time.sleep(3)
        before = list(latencies)

        rate = throttle_mb * 1_000_000
        cluster.alter_configs(BROKER_RESOURCE, "1", SET, {LEADER_RATE: str(rate)})
        cluster.alter_configs(BROKER_RESOURCE, "2", SET, {FOLLOWER_RATE: str(rate)})
        lists = {
            LEADER_REPLICAS: ",".join(f"{p}:1" for p in range(PARTITIONS)),
            FOLLOWER_REPLICAS: ",".join(f"{p}:2" for p in range(PARTITIONS)),
        }
        cluster.alter_configs(TOPIC_RESOURCE, "moved", SET, lists)
        time.sleep(1)  # the brokers apply the configs from the metadata log
        mark = len(latencies)
        throttled_s, samples = move(cluster, 2, held, "throttled move")
        during = latencies[mark:]
        moved = cluster.sizes(2, "moved")
        # from a second after the first bytes: the reassignment takes a moment to reach the
        # brokers, and Kafka's quota lets the first second's worth go at once
        begun = next(t for t, size in samples if size > 0)
        rates = windows([s for s in samples if s[0] >= begun + 1.0], 10.0)

        cluster.alter_configs(TOPIC_RESOURCE, "moved", DELETE, lists)
        cluster.alter_configs(BROKER_RESOURCE, "1", DELETE, {LEADER_RATE: ""})
        cluster.alter_configs(BROKER_RESOURCE, "2", DELETE, {FOLLOWER_RATE: ""})
        files = segment_files(cluster.directory, 2)
        subprocess.run(["sync"], check=True)
        ceiling_s = socket_ceiling(files, cluster.directory)
        ceiling_bytes = sum(f.stat().st_size for f in files)
        subprocess.run(["sync"], check=True)
        time.sleep(1)
        mark = len(latencies)
        free_s, _ = move(cluster, 1, held, "unthrottled move")
        free_during = latencies[mark:]
        executor = execute_plan(cluster, rate)
        ideal = held / rate
        return {
            "throttled": {
                "bytes_held": held,
                "bytes_moved": moved,
                "moved_over_held": moved / held,
                "throttle_mb_per_s": throttle_mb,
                "wall_s": throttled_s,
                "ideal_s": ideal,
                "wall_over_ideal": throttled_s / ideal,
                "windows": len(rates),
                "window_min_ratio": min(rates) / rate if rates else 0.0,
                "window_max_ratio": max(rates) / rate if rates else 0.0,
                "produce_p50_ms_before": pct(before, 0.5),
                "produce_p99_ms_before": pct(before, 0.99),
                "produce_p50_ms_during": pct(during, 0.5),
                "produce_p99_ms_during": pct(during, 0.99),
            },
            "unthrottled": {
                "wall_s": free_s,
                "mb_per_s": held / free_s / 1e6,
                "ceiling_mb_per_s": ceiling_bytes / ceiling_s / 1e6,
                "over_ceiling": (held / free_s) / (ceiling_bytes / ceiling_s),
                "produce_p99_ms_during": pct(free_during, 0.99),
            },
            "executor": executor,
        }
    finally:
        stop.set()
        if writer is not None:
            writer.join(30)
        cluster.down()


def execute_plan(cluster: Cluster, rate: int) -> dict[str, Any]:
    """``rackwise rebalance --execute`` under ``rate``: its estimate, the bytes moved, the
    copying against the ideal and its own time per batch (see the module docstring)."""
    progress("rebalance --execute")
    gained_from = cluster.sizes(2, "moved")
    started = time.perf_counter()
    done = rackwise(
        "rebalance", "--bootstrap-server", cluster.bootstrap, "--throttle", str(rate),
        "--execute", "--json", timeout=3600,
    )  # fmt: skip
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"rackwise rebalance failed: {done.stderr.strip()}")
    estimate = int(json.loads(done.stdout)["summary"]["data_to_move_bytes"])
    batches = [
        float(seconds)
        for seconds in re.findall(r"batch \d+: done, [\d,]+ bytes in ([\d.]+) s", done.stderr)
    ]
    moved = cluster.sizes(2, "moved") - gained_from
    copying = sum(batches)
    return {
        "estimate_bytes": estimate,
        "bytes_moved": moved,
        "moved_over_estimate": moved / estimate if estimate else 0.0,
        "batches": len(batches),
        "wall_s": wall,
        "copying_s": copying,
        "ideal_s": moved / rate,
        "copying_over_ideal": copying / (moved / rate) if moved else 0.0,
        "overhead_s_per_batch": (wall - copying) / len(batches) if batches else wall,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=int, default=2048)
    parser.add_argument("--throttle-mb", type=int, default=40)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.size_mb < 1 or args.throttle_mb < 1:
        parser.error("--size-mb and --throttle-mb must be at least 1")
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="rackwise-bench-reassign-") as tmp:
        out = run(Path(tmp), args.size_mb, args.throttle_mb)
    out["load_before"] = load
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"machine: {os.cpu_count()} cores, load average {load:.2f} before the run")
    for name in ("throttled", "unthrottled", "executor"):
        parts = [f"{k}={_fmt(v)}" for k, v in out[name].items()]
        print(f"{name:12s} " + "  ".join(parts))
    return 0


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.2f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


if __name__ == "__main__":
    from _signals import stopping

    raise SystemExit(stopping(main))
