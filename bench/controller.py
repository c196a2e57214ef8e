"""Controller benchmark: the real controller process (``rackwise controller start``), spoken to
over the wire on 127.0.0.1 with rackwise's own client.

(a) Durable CreateTopics throughput, in partitions per second: topics of 100 partitions at
    replication factor 3 on 100 registered, unfenced brokers; each topic acknowledged only once
    its records are fsynced. Measured with one connection sending one request at a time, and
    with several connections at once (the controller commits concurrent requests as a group,
    one fsync for all).
(b) Restart time of the controller process over a metadata log holding 1,000,000 partitions
    (10,000 topics of 100, RF 3, on 100 brokers): a snapshot of the first 90% and the log after
    it. Timed from the process' start to its ready line (Python's start-up included), and the
    recovery alone as the process logs it. The log is written beforehand, in this process, by
    the same controller logic over the same FileMetadataLog.
(c) BrokerHeartbeat requests handled per second with 1,000 brokers registered and unfenced:
    several connections, each keeping a window of requests in flight.

The client runs in this process and shares the machine's cores with the controller, so the
figures are a floor; the controller's own CPU time (from /proc) is printed too, as the rate per
CPU-second of the controller, which depends less on what else runs. The load average is
printed beside them (the machine may be shared).

    .venv/bin/python bench/controller.py [--json] [--only a,b,c] [--topics N]
        [--restart-partitions N] [--heartbeat-seconds S] [--keep DIR]

The controller quorum's figures (durable CreateTopics with 3 voters against 1, time from
``kill -9`` of the leader to the first write committed by the new one, time to take writes
after a data centre is lost) are ``bench/controller_quorum.py``, also run as:

    .venv/bin/python bench/controller.py --quorum [--json] [--only a,b,c] [--rounds N]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rackwise.controller import (
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
    Controller,
    ControllerConfig,
    CreatableTopic,
    Listener,
)
from rackwise.metalog import FileMetadataLog
from rackwise.net import KafkaConnection
from rackwise.node.process import parse_ready_line

sys.path.insert(0, str(Path(__file__).parent))
from controller_requests import (
    PARTITIONS_PER_TOPIC,
    REPLICATION_FACTOR,
    create_topic,
    end_offset,
    heartbeat,
    register_brokers,
)

COMMAND = (sys.executable, "-m", "rackwise.cli.main", "controller", "start")


# ---- the controller process ------------------------------------------------------------------


class ControllerProcess:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.config = directory / "controller.properties"
        self.config.write_text(
            "node.id=0\n"
            "process.roles=controller\n"
            "listeners=CONTROLLER://127.0.0.1:0\n"
            "controller.listener.names=CONTROLLER\n"
            "controller.quorum.voters=0@127.0.0.1:0\n"
            f"metadata.log.dir={directory / 'meta'}\n"
            "broker.session.timeout.ms=600000\n",
            encoding="utf-8",
        )
        self.proc: subprocess.Popen[str] | None = None
        self.port = -1
        self.stderr = directory / "stderr.log"

    def start(self) -> float:
        """Start the process; seconds until its ready line."""
        began = time.monotonic()
        with self.stderr.open("a", encoding="utf-8") as err:
            self.proc = subprocess.Popen(
                [*COMMAND, "--config", str(self.config)],
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
            )
        assert self.proc.stdout is not None
        ready = parse_ready_line(self.proc.stdout.readline())
        if ready is None:
            self.proc.wait()
            raise SystemExit(f"the controller did not start:\n{self.stderr.read_text()}")
        self.port = ready.listeners[0].port
        return time.monotonic() - began

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=60)
            if self.proc.stdout is not None:
                self.proc.stdout.close()
            self.proc = None

    def cpu_s(self) -> float:
        """CPU seconds the process has used so far (user + system; Linux' /proc)."""
        assert self.proc is not None
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def last_recovery_s(self) -> float | None:
        found = re.findall(
            r"recovered the metadata log in \S+ in ([\d.]+) s", self.stderr.read_text()
        )
        return float(found[-1]) if found else None

    async def connect(self) -> KafkaConnection:
        conn = await KafkaConnection.connect("127.0.0.1", self.port, request_timeout_s=300)
        await conn.negotiate_versions()
        return conn


@contextmanager
def controller_in(directory: Path) -> Iterator[ControllerProcess]:
    process = ControllerProcess(directory)
    try:
        process.start()
        yield process
    finally:
        process.stop()


# ---- requests --------------------------------------------------------------------------------


# ---- (a) CreateTopics ------------------------------------------------------------------------


def bench_create_topics(
    work: Path, num_topics: int, concurrency: list[int]
) -> list[dict[str, Any]]:
    rows = []
    for connections in concurrency:
        directory = work / f"create-{connections}"
        directory.mkdir()
        with controller_in(directory) as controller:
            rows.append(asyncio.run(_create_topics(controller, num_topics, connections)))
    return rows


async def _create_topics(
    controller: ControllerProcess, num_topics: int, connections: int
) -> dict[str, Any]:
    admin = await controller.connect()
    await register_brokers(admin, 100)
    conns = [await controller.connect() for _ in range(connections)]
    names = iter(range(num_topics))

    async def worker(conn: KafkaConnection) -> None:
        for i in names:
            await create_topic(conn, f"topic-{i:05d}")

    began = time.monotonic()
    cpu = controller.cpu_s()
    await asyncio.gather(*(worker(c) for c in conns))
    elapsed = time.monotonic() - began
    cpu = controller.cpu_s() - cpu
    for conn in [admin, *conns]:
        await conn.close()
    return {
        "connections": connections,
        "topics": num_topics,
        "seconds": round(elapsed, 3),
        "topics_per_s": round(num_topics / elapsed, 1),
        "partitions_per_s": round(num_topics * PARTITIONS_PER_TOPIC / elapsed),
        "controller_cpu_s": round(cpu, 2),
        "partitions_per_controller_cpu_s": round(num_topics * PARTITIONS_PER_TOPIC / cpu),
    }


# ---- (b) restart -----------------------------------------------------------------------------


def write_metadata(directory: Path, num_partitions: int, snapshot_at: float) -> dict[str, Any]:
    """A metadata log of ``num_partitions`` partitions (topics of 100, RF 3, 100 brokers), with
    one snapshot once ``snapshot_at`` of the topics are written and the rest in the log."""
    began = time.monotonic()
    log = FileMetadataLog(directory, max_record_bytes_between_snapshots=1 << 62)
    clock = lambda: time.monotonic_ns() // 1_000_000  # noqa: E731
    controller = Controller(
        log, clock, ControllerConfig(session_timeout_ms=600_000), random=random.Random(7)
    )
    epochs = {}
    for b in range(1, 101):
        reply = controller.register_broker(
            BrokerRegistrationRequest(
                b,
                uuid.UUID(int=b, version=4),
                (Listener("PLAINTEXT", "127.0.0.1", 10_000 + b),),
                rack=f"/dc{b % 2}/r{b % 10}",
                log_dirs=(uuid.UUID(int=10_000 + b, version=4),),
            )
        )
        epochs[b] = reply.broker_epoch
    for b, epoch in epochs.items():
        controller.broker_heartbeat(BrokerHeartbeatRequest(b, epoch, controller.end_offset - 1))
    num_topics = num_partitions // PARTITIONS_PER_TOPIC
    snapshot_topic = int(num_topics * snapshot_at)
    bounds = sorted({*range(0, num_topics, 200), snapshot_topic, num_topics})
    for first, stop in itertools.pairwise(bounds):
        if first == snapshot_topic:
            log.write_snapshot(controller.image.to_records(), controller.end_offset)
        with controller.group_commit():
            for i in range(first, stop):
                controller.create_topics(
                    [CreatableTopic(f"topic-{i:05d}", PARTITIONS_PER_TOPIC, REPLICATION_FACTOR)]
                )
    snapshots = log.snapshot_ids()
    result = {
        "records": log.end_offset,
        "snapshot_end_offset": snapshots[-1].end_offset if snapshots else None,
        "log_bytes": sum(p.stat().st_size for p in directory.glob("*.log")),
        "snapshot_bytes": sum(p.stat().st_size for p in directory.glob("*.checkpoint")),
        "write_seconds": round(time.monotonic() - began, 1),
    }
    log.close()
    return result


def bench_restart(
    work: Path, num_partitions: int, snapshot_at: float, keep: Path | None, runs: int
) -> dict[str, Any]:
    directory = work / "restart"
    directory.mkdir()
    meta = directory / "meta"
    cached = keep / f"meta-{num_partitions}-{snapshot_at}" if keep is not None else None
    if cached is not None and cached.exists():
        shutil.copytree(cached, meta)
        written: dict[str, Any] = {"reused": str(cached)}
    else:
        written = write_metadata(meta, num_partitions, snapshot_at)
        if cached is not None:
            shutil.copytree(meta, cached)
    process = ControllerProcess(directory)
    times = []
    recoveries = []
    for _ in range(runs):
        times.append(process.start())
        process.stop()
        recovery = process.last_recovery_s()
        if recovery is not None:
            recoveries.append(recovery)
    return {
        "partitions": num_partitions,
        **written,
        "runs": runs,
        "start_to_ready_s": round(statistics.median(times), 2),
        "recovery_s": round(statistics.median(recoveries), 2) if recoveries else None,
    }


# ---- (c) heartbeats --------------------------------------------------------------------------


def bench_heartbeats(
    work: Path, num_brokers: int, seconds: float, connections: int, window: int
) -> dict[str, Any]:
    directory = work / "heartbeats"
    directory.mkdir()
    with controller_in(directory) as controller:
        return asyncio.run(_heartbeats(controller, num_brokers, seconds, connections, window))


async def _heartbeats(
    controller: ControllerProcess, num_brokers: int, seconds: float, connections: int, window: int
) -> dict[str, Any]:
    admin = await controller.connect()
    epochs = await register_brokers(admin, num_brokers)
    offset = await end_offset(admin) - 1
    conns = [await controller.connect() for _ in range(connections)]
    brokers = list(epochs.items())
    deadline = time.monotonic() + seconds
    counts = [0] * connections

    async def worker(index: int, conn: KafkaConnection) -> None:
        mine = brokers[index::connections]
        turn = 0

        async def one() -> None:
            nonlocal turn
            while time.monotonic() < deadline:
                broker_id, epoch = mine[turn % len(mine)]
                turn += 1
                reply = await heartbeat(conn, broker_id, epoch, offset)
                if int(reply.error_code) != 0 or reply.is_fenced:
                    raise SystemExit(f"broker {broker_id}: {reply}")
                counts[index] += 1

        await asyncio.gather(*(one() for _ in range(window)))

    began = time.monotonic()
    cpu = controller.cpu_s()
    await asyncio.gather(*(worker(i, c) for i, c in enumerate(conns)))
    elapsed = time.monotonic() - began
    cpu = controller.cpu_s() - cpu
    for conn in [admin, *conns]:
        await conn.close()
    total = sum(counts)
    return {
        "brokers": num_brokers,
        "connections": connections,
        "in_flight_per_connection": window,
        "seconds": round(elapsed, 2),
        "heartbeats": total,
        "heartbeats_per_s": round(total / elapsed),
        "controller_cpu_s": round(cpu, 2),
        "heartbeats_per_controller_cpu_s": round(total / cpu),
    }


# ---- main ------------------------------------------------------------------------------------


def main() -> int:
    if "--quorum" in sys.argv[1:]:
        # The controller quorum's figures (3 voters against 1, failover, a data centre lost).
        sys.argv.remove("--quorum")
        import controller_quorum  # noqa: PLC0415

        return int(controller_quorum.main())
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--only", default="a,b,c", help="which parts to run (a,b,c)")
    parser.add_argument("--topics", type=int, default=300, help="(a) topics to create")
    parser.add_argument(
        "--concurrency", default="1,8", help="(a) connections sending at once, comma-separated"
    )
    parser.add_argument(
        "--restart-partitions", type=int, default=1_000_000, help="(b) partitions in the log"
    )
    parser.add_argument("--restart-runs", type=int, default=2, help="(b) restarts timed")
    parser.add_argument(
        "--snapshot-at",
        type=float,
        default=0.9,
        help="(b) the share of the topics in the snapshot; the rest only in the log",
    )
    parser.add_argument(
        "--keep", type=Path, help="(b) cache the generated log here and reuse it next time"
    )
    parser.add_argument("--heartbeat-brokers", type=int, default=1000, help="(c) brokers")
    parser.add_argument("--heartbeat-seconds", type=float, default=10.0, help="(c) duration")
    parser.add_argument("--heartbeat-connections", type=int, default=4, help="(c) connections")
    parser.add_argument("--heartbeat-window", type=int, default=32, help="(c) in flight each")
    args = parser.parse_args()
    parts = set(args.only.split(","))
    results: dict[str, Any] = {"load_average_before": [round(x, 2) for x in os.getloadavg()]}
    with tempfile.TemporaryDirectory(prefix="rackwise-bench-controller-") as tmp:
        work = Path(tmp)
        if "a" in parts:
            concurrency = [int(c) for c in args.concurrency.split(",")]
            results["create_topics"] = bench_create_topics(work, args.topics, concurrency)
        if "b" in parts:
            results["restart"] = bench_restart(
                work, args.restart_partitions, args.snapshot_at, args.keep, args.restart_runs
            )
        if "c" in parts:
            results["heartbeats"] = bench_heartbeats(
                work,
                args.heartbeat_brokers,
                args.heartbeat_seconds,
                args.heartbeat_connections,
                args.heartbeat_window,
            )
    results["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    results["cpus"] = os.cpu_count()
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print_table(results)
    return 0


def print_table(results: dict[str, Any]) -> None:
    rows: list[tuple[str, str, str]] = []
    for row in results.get("create_topics", []):
        rows.append(
            (
                "(a) CreateTopics, 100 partitions RF 3, 100 brokers",
                f"{row['connections']} connection(s), {row['topics']} topics",
                f"{row['partitions_per_s']:,} partitions/s ({row['topics_per_s']} topics/s; "
                f"{row['partitions_per_controller_cpu_s']:,} per controller CPU-second)",
            )
        )
    restart = results.get("restart")
    if restart:
        rows.append(
            (
                f"(b) restart, {restart['partitions']:,} partitions (snapshot + log)",
                "start to ready line",
                f"{restart['start_to_ready_s']} s (recovery {restart['recovery_s']} s)",
            )
        )
    beats = results.get("heartbeats")
    if beats:
        rows.append(
            (
                f"(c) BrokerHeartbeat, {beats['brokers']:,} brokers registered",
                f"{beats['connections']} connections x {beats['in_flight_per_connection']} "
                "in flight",
                f"{beats['heartbeats_per_s']:,} heartbeats/s "
                f"({beats['heartbeats_per_controller_cpu_s']:,} per controller CPU-second)",
            )
        )
    headers = ("benchmark", "setting", "result")
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    for line in (headers, tuple("-" * w for w in widths), *rows):
        print("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip())
    before = " ".join(str(x) for x in results["load_average_before"])
    after = " ".join(str(x) for x in results["load_average_after"])
    print(f"load average before: {before}; after: {after}; cpus: {results['cpus']}")


if __name__ == "__main__":
    from _signals import stopping

    raise SystemExit(stopping(main))
