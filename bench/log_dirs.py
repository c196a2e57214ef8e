"""Log-directory benchmark: moving a replica between a broker's directories, beside the
machine's limit measured in the same run, the throttle's accuracy, and how fast leaderships
leave a failed directory.

Figures:
  move, unthrottled     MB/s of a replica moved from data-1 to data-2 of one broker (the
                        future log's size over time), beside ``cp -r`` of the same partition
                        directory on the same file system just before (the ceiling); produce
                        latency p50/p99 of a librdkafka producer (acks=all) writing to another
                        partition of the same broker during the move
  throttle              with ``replica.alter.log.dirs.io.max.bytes.per.second`` at 10 MB/s (set
                        on broker 1) and 50 MB/s (the cluster default), both through
                        IncrementalAlterConfigs on the running broker: the rate over every 10 s
                        window of the move (min, max) and its ratio to the limit
  failed directory      three brokers with two directories, 30 partitions at RF 3 led from
                        data-2 of broker 1: seconds from replacing that directory by a file to
                        no partition led by broker 1 there (Metadata, polled every 50 ms)

    .venv/bin/python bench/log_dirs.py [--size-mb N] [--json] [--only move,throttle,failure]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
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
from kafka import KafkaAdminClient, TopicPartitionReplica

from rackwise.net import KafkaConnection
from rackwise.protocol import ApiKey

BROKER_RESOURCE = 4

RECORD = b"r" * 1000


def rackwise(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rackwise.cli.main", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )


class Bench:
    def __init__(self, directory: Path, brokers: int, *overrides: str) -> None:
        self.directory = directory
        args = ["cluster", "up", "--dir", str(directory), "--brokers", str(brokers)]
        args += ["--log-dirs", "2", "--json"]
        for override in overrides:
            args += ["--override", override]
        up = rackwise(*args)
        if up.returncode != 0:
            raise SystemExit(f"cluster up failed: {up.stderr.strip()}")
        self.nodes = json.loads(up.stdout)["nodes"]

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{n['host']}:{n['port']}" for n in self.nodes if n["role"] == "broker")

    def log_dirs(self, broker: int) -> list[Path]:
        return [self.directory / f"broker-{broker}" / f"data-{i}" for i in (1, 2)]

    def down(self) -> None:
        rackwise("cluster", "down", "--dir", str(self.directory))


def fill(bootstrap: str, topic: str, partition: int, megabytes: int) -> None:
    producer = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1_000_000, "acks": "1"}
    )
    for i in range(megabytes * 1000):
        while True:
            try:
                producer.produce(topic, value=RECORD, partition=partition)
                break
            except BufferError:
                producer.poll(0.01)
        if i % 1000 == 0:
            producer.poll(0)
    producer.flush(120)


def partition_dir(bench: Bench, broker: int, topic: str, partition: int) -> Path:
    for log_dir in bench.log_dirs(broker):
        candidate = log_dir / f"{topic}-{partition}"
        if candidate.is_dir():
            return candidate
    raise SystemExit(f"{topic}-{partition} not found on broker {broker}")


def future_size(admin: KafkaAdminClient, broker: int, topic: str, partition: int) -> int | None:
    """The future replica's size (None once there is none)."""
    for entry in admin.describe_log_dirs(brokers=[broker]):
        for log_dir in entry["log_dirs"]:
            for t in log_dir["topics"]:
                for p in t["partitions"]:
                    ours = t["name"] == topic and p["partition_index"] == partition
                    if ours and p["is_future_key"]:
                        return int(p["partition_size"])
    return None


def watch_move(
    admin: KafkaAdminClient, topic: str, partition: int, total: int
) -> list[tuple[float, int]]:
    """(seconds, bytes copied) every 0.25 s until the future replica is gone."""
    samples = [(time.monotonic(), 0)]
    seen_future = False
    while True:
        size = future_size(admin, 1, topic, partition)
        now = time.monotonic()
        if size is None and seen_future:
            samples.append((now, total))
            return samples
        if size is not None:
            seen_future = True
            samples.append((now, size))
        if now - samples[0][0] > 900:
            raise SystemExit("the move did not finish in 15 minutes")
        time.sleep(0.25)


def start_move(bench: Bench, admin: KafkaAdminClient, topic: str, partition: int) -> None:
    source = partition_dir(bench, 1, topic, partition).parent
    target = next(d for d in bench.log_dirs(1) if d != source)
    admin.alter_replica_log_dirs({TopicPartitionReplica(topic, partition, 1): str(target)})


def latency_during(bootstrap: str, topic: str, stop: threading.Event, out: list[float]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    while not stop.is_set():
        sent = time.monotonic()
        producer.produce(
            topic,
            value=RECORD,
            partition=1,
            on_delivery=lambda err, msg, sent=sent: out.append(time.monotonic() - sent),
        )
        producer.poll(0.005)
    producer.flush(30)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000 if ordered else 0.0


def run_move(work: Path, size_mb: int) -> dict[str, Any]:
    bench = Bench(work / "move", 1)
    admin = KafkaAdminClient(bootstrap_servers=bench.bootstrap)
    try:
        client = AdminClient({"bootstrap.servers": bench.bootstrap})
        client.create_topics([NewTopic("m", 2, 1)])["m"].result(30)
        fill(bench.bootstrap, "m", 0, size_mb)
        source = partition_dir(bench, 1, "m", 0)
        total = sum(f.stat().st_size for f in source.iterdir() if f.suffix == ".log")
        copy = source.parent / "cp-ceiling"
        subprocess.run(["sync"], check=True)
        started = time.monotonic()
        subprocess.run(["cp", "-r", str(source), str(copy)], check=True)
        subprocess.run(["sync"], check=True)
        cp_s = time.monotonic() - started
        shutil.rmtree(copy)
        stop, latencies = threading.Event(), []
        writer = threading.Thread(
            target=latency_during, args=(bench.bootstrap, "m", stop, latencies), daemon=True
        )
        writer.start()
        time.sleep(2)
        quiet = len(latencies)
        start_move(bench, admin, "m", 0)
        samples = watch_move(admin, "m", 0, total)
        during = latencies[quiet:]
        stop.set()
        writer.join(30)
        move_s = samples[-1][0] - samples[0][0]
        return {
            "bytes": total,
            "cp_mb_per_s": total / cp_s / 1e6,
            "move_mb_per_s": total / move_s / 1e6,
            "ratio": cp_s / move_s,
            "produce_p50_ms_during": pct(during, 0.5),
            "produce_p99_ms_during": pct(during, 0.99),
            "produce_p99_ms_before": pct(latencies[:quiet], 0.99),
        }
    finally:
        admin.close()
        bench.down()


def run_throttle(work: Path, rate_mb: int, seconds: int, resource: str) -> dict[str, Any]:
    """A move under the throttle, set through IncrementalAlterConfigs on a running broker
    (``resource`` "1": broker 1's own value; "": the cluster default)."""
    rate = rate_mb * 1_000_000
    bench = Bench(work / f"throttle-{rate_mb}", 1)
    admin = KafkaAdminClient(bootstrap_servers=bench.bootstrap)
    try:
        client = AdminClient({"bootstrap.servers": bench.bootstrap})
        client.create_topics([NewTopic("t", 1, 1)])["t"].result(30)
        fill(bench.bootstrap, "t", 0, rate_mb * seconds)
        set_broker_config(bench, resource, "replica.alter.log.dirs.io.max.bytes.per.second", rate)
        source = partition_dir(bench, 1, "t", 0)
        total = sum(f.stat().st_size for f in source.iterdir() if f.suffix == ".log")
        start_move(bench, admin, "t", 0)
        samples = watch_move(admin, "t", 0, total)
        rates = windows(samples[1:-1], 10.0)
        return {
            "limit_mb_per_s": rate_mb,
            "set_on": "broker 1" if resource else "cluster default",
            "windows": len(rates),
            "min_mb_per_s": min(rates) / 1e6 if rates else 0.0,
            "max_mb_per_s": max(rates) / 1e6 if rates else 0.0,
            "min_ratio": min(rates) / rate if rates else 0.0,
            "max_ratio": max(rates) / rate if rates else 0.0,
        }
    finally:
        admin.close()
        bench.down()


def set_broker_config(bench: Bench, resource: str, key: str, value: int) -> None:
    """IncrementalAlterConfigs SET on a broker resource ("" is the cluster default, which
    kafka-python's admin refuses to name), sent to the first broker, which forwards it."""
    broker = next(n for n in bench.nodes if n["role"] == "broker")

    async def send() -> None:
        connection = await KafkaConnection.connect(broker["host"], int(broker["port"]))
        try:
            await connection.negotiate_versions()
            response = await connection.request(
                ApiKey.INCREMENTAL_ALTER_CONFIGS,
                {
                    "resources": [
                        {
                            "resource_type": BROKER_RESOURCE,
                            "resource_name": resource,
                            "configs": [{"name": key, "config_operation": 0, "value": str(value)}],
                        }
                    ],
                    "validate_only": False,
                },
                timeout_s=30,
            )
        finally:
            await connection.close()
        for result in response.responses:
            if int(result.error_code) != 0:
                raise SystemExit(f"IncrementalAlterConfigs failed: {result.error_message}")

    asyncio.run(send())


def windows(samples: list[tuple[float, int]], width: float) -> list[float]:
    """Bytes per second over every window of ``width`` seconds between two samples."""
    rates = []
    for i, (t0, b0) in enumerate(samples):
        for t1, b1 in samples[i + 1 :]:
            if t1 - t0 >= width:
                rates.append((b1 - b0) / (t1 - t0))
                break
    return rates


def run_failure(work: Path) -> dict[str, Any]:
    bench = Bench(work / "failure", 3, "replica.high.watermark.checkpoint.interval.ms=5000")
    admin = KafkaAdminClient(bootstrap_servers=bench.bootstrap)
    client = AdminClient({"bootstrap.servers": bench.bootstrap})
    try:
        assignments = [[1, 2, 3]] * 30
        client.create_topics([NewTopic("f", 30, replica_assignment=assignments)])["f"].result(30)
        time.sleep(2)
        second = str(bench.log_dirs(1)[1])
        admin.alter_replica_log_dirs({TopicPartitionReplica("f", p, 1): second for p in range(30)})
        deadline = time.monotonic() + 120
        while any(future_size(admin, 1, "f", p) is not None for p in range(30)):
            if time.monotonic() > deadline:
                raise SystemExit("moves to data-2 did not finish")
            time.sleep(0.5)
        led = leaders(client)
        shutil.rmtree(second)
        Path(second).write_text("failed disk\n")
        failed_at = time.monotonic()
        while True:
            led = leaders(client)
            if all(leader != 1 for leader in led.values()):
                break
            if time.monotonic() - failed_at > 120:
                raise SystemExit("leaders did not move off the failed directory")
            time.sleep(0.05)
        return {"partitions": 30, "seconds_to_leaders_moved": time.monotonic() - failed_at}
    finally:
        admin.close()
        bench.down()


def leaders(client: AdminClient) -> dict[int, int]:
    topic = client.list_topics("f", timeout=10).topics["f"]
    return {p: meta.leader for p, meta in topic.partitions.items()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=int, default=400)
    parser.add_argument("--throttle-seconds", type=int, default=30)
    parser.add_argument("--only", default="move,throttle,failure")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    only = set(args.only.split(","))
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="rackwise-bench-dirs-") as tmp:
        work = Path(tmp)
        if "move" in only:
            out["move"] = run_move(work, args.size_mb)
            report("move, unthrottled", out["move"], args.json)
        if "throttle" in only:
            for rate, resource in ((10, "1"), (50, "")):
                out[f"throttle_{rate}"] = run_throttle(work, rate, args.throttle_seconds, resource)
                report(f"throttle {rate} MB/s", out[f"throttle_{rate}"], args.json)
        if "failure" in only:
            out["failure"] = run_failure(work)
            report("failed directory", out["failure"], args.json)
    if args.json:
        print(json.dumps(out, indent=2))
    return 0


def report(name: str, figures: dict[str, Any], quiet: bool) -> None:
    if quiet:
        return
    parts = [f"{k}={_fmt(v)}" for k, v in figures.items()]
    print(f"{name:20s} " + "  ".join(parts), flush=True)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.2f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


if __name__ == "__main__":
    from _signals import stopping

    raise SystemExit(stopping(main))
