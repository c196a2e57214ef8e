"""Controller quorum benchmark: real controller processes on 127.0.0.1, spoken to over the wire.

(a) Durable CreateTopics throughput with 3 voters against 1, in the same run on the same machine:
    topics of 100 partitions at replication factor 3 on 100 registered brokers, 8 connections
    to the active controller; with 3 voters a topic is acknowledged once a majority has fsynced
    its records, with 1 once the one controller has.
(b) Failover: ``kill -9`` of the leading controller of 3, then the time until a CreateTopics is
    acknowledged by the new leader (tried on every surviving controller in turn, every 20 ms);
    the killed controller is restarted and caught up before the next round. Median and worst.
(c) A data centre lost: ``rackwise cluster up --controllers 3`` over three data centres of two
    brokers each; every process of the data centre that holds the leading controller is killed
    at once, then the time until a CreateTopics sent to a surviving broker (forwarded to the
    controller) is acknowledged.

The client shares the machine with the processes (the load average is printed), so the figures
are a ceiling on latency and a floor on throughput. Quorum timings are Kafka's defaults
(election timeout 1 s, fetch timeout 2 s): failover time is dominated by the fetch timeout.

    .venv/bin/python bench/controller_quorum.py [--json] [--only a,b,c] [--topics N] [--rounds N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from controller_requests import create_topic, register_brokers
from rackwise.cluster.local import down, up
from rackwise.cluster.processes import free_ports
from rackwise.net import KafkaConnection
from rackwise.node.process import parse_ready_line
from rackwise.protocol import ApiKey

COMMAND = (sys.executable, "-m", "rackwise.cli.main", "controller", "start")
NOT_CONTROLLER = 41
RETRY_S = 0.02
FIRST_CONTROLLER_ID = 3000
UNKNOWN_BROKER_ID = 2999
"""A broker id no one registers: a heartbeat of it tells an active controller from another."""


class Quorum:
    """``count`` controller processes (ids 3000 up, clear of the brokers') in ``directory``."""

    def __init__(self, directory: Path, count: int) -> None:
        ids = range(FIRST_CONTROLLER_ID, FIRST_CONTROLLER_ID + count)
        self.ports = dict(zip(ids, free_ports(count), strict=True))
        voters = ",".join(f"{i}@127.0.0.1:{p}" for i, p in self.ports.items())
        self.configs: dict[int, Path] = {}
        for node_id, port in self.ports.items():
            node_dir = directory / f"c{node_id}"
            node_dir.mkdir(parents=True)
            config = node_dir / "controller.properties"
            config.write_text(
                f"node.id={node_id}\nprocess.roles=controller\n"
                f"listeners=CONTROLLER://127.0.0.1:{port}\ncontroller.listener.names=CONTROLLER\n"
                f"controller.quorum.voters={voters}\nmetadata.log.dir={node_dir / 'meta'}\n"
                "broker.session.timeout.ms=600000\n",
                encoding="utf-8",
            )
            self.configs[node_id] = config
        self.procs: dict[int, subprocess.Popen[str]] = {}

    def start(self, node_id: int) -> None:
        config = self.configs[node_id]
        with (config.parent / "stderr.log").open("a", encoding="utf-8") as err:
            proc = subprocess.Popen(
                [*COMMAND, "--config", str(config)], stdout=subprocess.PIPE, stderr=err, text=True
            )
        assert proc.stdout is not None
        if parse_ready_line(proc.stdout.readline()) is None:
            raise SystemExit(f"controller {node_id} did not start")
        self.procs[node_id] = proc

    def kill(self, node_id: int) -> None:
        proc = self.procs.pop(node_id)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()

    def stop_all(self) -> None:
        for node_id in list(self.procs):
            self.kill(node_id)

    async def connect(self, node_id: int) -> KafkaConnection:
        conn = await KafkaConnection.connect(
            "127.0.0.1", self.ports[node_id], timeout_s=2, request_timeout_s=60
        )
        await conn.negotiate_versions()
        return conn

    async def describe(self, node_id: int) -> Any:
        conn = await self.connect(node_id)
        try:
            response = await conn.request(
                ApiKey.DESCRIBE_QUORUM,
                topics=[
                    {"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}
                ],
            )
            return response.topics[0].partitions[0]
        finally:
            await conn.close()

    async def leader(self, timeout_s: float = 30) -> int:
        if len(self.ports) == 1:
            return FIRST_CONTROLLER_ID
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for node_id in self.procs:
                try:
                    part = await self.describe(node_id)
                except Exception:
                    continue
                if int(part.error_code) == 0:
                    return node_id
            await asyncio.sleep(0.05)
        raise SystemExit("no leader")

    async def active(self, timeout_s: float = 30) -> int:
        """The leader, once its controller answers (it first commits its epoch's mark)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            leader = await self.leader()
            conn = await self.connect(leader)
            try:
                probe = await conn.request(
                    ApiKey.BROKER_HEARTBEAT,
                    broker_id=UNKNOWN_BROKER_ID,
                    broker_epoch=-1,
                    current_metadata_offset=0,
                    want_fence=False,
                    want_shut_down=False,
                    offline_log_dirs=[],
                )
            finally:
                await conn.close()
            if int(probe.error_code) != NOT_CONTROLLER:
                return leader
            await asyncio.sleep(RETRY_S)
        raise SystemExit("the leader never became the active controller")

    async def caught_up(self, timeout_s: float = 60) -> None:
        """Every voter holds the leader's log end."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            part = await self.describe(await self.leader())
            ends = {int(v.log_end_offset) for v in part.current_voters}
            if len(ends) == 1:
                return
            await asyncio.sleep(0.1)
        raise SystemExit("the voters did not catch up")


def load() -> float:
    return os.getloadavg()[0]


# ---- (a) throughput ----------------------------------------------------------------------------


async def _throughput(quorum: Quorum, num_topics: int, connections: int) -> dict[str, Any]:
    leader = await quorum.active()
    admin = await quorum.connect(leader)
    await register_brokers(admin, 100)
    conns = [await quorum.connect(leader) for _ in range(connections)]
    names = iter(range(num_topics))

    async def worker(conn: KafkaConnection) -> None:
        for i in names:
            await create_topic(conn, f"topic-{i:05d}")

    began = time.monotonic()
    await asyncio.gather(*(worker(c) for c in conns))
    elapsed = time.monotonic() - began
    for conn in [admin, *conns]:
        await conn.close()
    return {
        "voters": len(quorum.ports),
        "topics": num_topics,
        "seconds": round(elapsed, 3),
        "partitions_per_s": round(num_topics * 100 / elapsed),
        "load": round(load(), 1),
    }


def bench_throughput(work: Path, num_topics: int) -> list[dict[str, Any]]:
    rows = []
    for voters in (1, 3):
        quorum = Quorum(work / f"throughput-{voters}", voters)
        try:
            for node_id in quorum.ports:
                quorum.start(node_id)
            rows.append(asyncio.run(_throughput(quorum, num_topics, 8)))
        finally:
            quorum.stop_all()
    return rows


# ---- (b) failover ------------------------------------------------------------------------------


async def _first_write(quorum: Quorum, name: str) -> float:
    """Seconds until a CreateTopics of ``name`` is acknowledged by some controller."""
    began = time.monotonic()
    while True:
        for node_id in list(quorum.procs):
            try:
                conn = await quorum.connect(node_id)
            except Exception:
                continue
            try:
                response = await conn.request(
                    ApiKey.CREATE_TOPICS,
                    topics=[
                        {
                            "name": name,
                            "num_partitions": 1,
                            "replication_factor": 3,
                            "assignments": [],
                            "configs": [],
                        }
                    ],
                    timeout=30_000,
                    validate_only=False,
                )
                if int(response.topics[0].error_code) == 0:
                    return time.monotonic() - began
            except Exception:
                pass
            finally:
                await conn.close()
        await asyncio.sleep(RETRY_S)


async def _failover(quorum: Quorum, rounds: int) -> dict[str, Any]:
    conn = await quorum.connect(await quorum.active())
    await register_brokers(conn, 10)
    await conn.close()
    times = []
    for r in range(rounds):
        leader = await quorum.leader()
        quorum.kill(leader)
        times.append(await _first_write(quorum, f"failover-{r}"))
        quorum.start(leader)
        await quorum.caught_up()
    return {
        "rounds": rounds,
        "median_s": round(statistics.median(times), 3),
        "worst_s": round(max(times), 3),
        "load": round(load(), 1),
    }


def bench_failover(work: Path, rounds: int) -> dict[str, Any]:
    quorum = Quorum(work / "failover", 3)
    try:
        for node_id in quorum.ports:
            quorum.start(node_id)
        return asyncio.run(_failover(quorum, rounds))
    finally:
        quorum.stop_all()


# ---- (c) a data centre lost --------------------------------------------------------------------


async def _write_through(broker: tuple[str, int], name: str) -> float:
    began = time.monotonic()
    while True:
        try:
            conn = await KafkaConnection.connect(*broker, timeout_s=2, request_timeout_s=60)
            await conn.negotiate_versions()
            response = await conn.request(
                ApiKey.CREATE_TOPICS,
                topics=[
                    {
                        "name": name,
                        "num_partitions": 3,
                        "replication_factor": 2,
                        "assignments": [],
                        "configs": [],
                    }
                ],
                timeout=30_000,
                validate_only=False,
            )
            await conn.close()
            if int(response.topics[0].error_code) == 0:
                return time.monotonic() - began
        except Exception:
            pass
        await asyncio.sleep(RETRY_S)


def bench_data_centre(work: Path) -> dict[str, Any]:
    racks = ["/dc1/r1", "/dc1/r2", "/dc2/r1", "/dc2/r2", "/dc3/r1", "/dc3/r2"]
    directory = work / "stretch"
    states = up(directory, num_brokers=6, racks=racks, num_controllers=3, timeout_s=120)
    try:
        controllers = {s.spec.id: s for s in states if s.spec.role == "controller"}
        status = subprocess.run(
            [
                sys.executable,
                "-m",
                "rackwise.cli.main",
                "metadata-quorum",
                "--bootstrap-server",
                ",".join(s.spec.address for s in states if s.spec.role == "broker"),
                "describe",
                "--status",
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        leader = int(status.split("LeaderId:")[1].split()[0])
        lost = controllers[leader].spec.rack
        assert lost is not None
        victims = [s for s in states if (s.spec.rack or "").startswith(lost)]
        survivor = next(s for s in states if s.spec.role == "broker" and s not in victims)
        for state in victims:
            os.kill(state.pid or 0, signal.SIGKILL)
        seconds = asyncio.run(
            _write_through((survivor.spec.host, survivor.spec.port), "after-the-loss")
        )
        return {
            "lost": lost,
            "killed": len(victims),
            "seconds": round(seconds, 3),
            "load": round(load(), 1),
        }
    finally:
        down(directory, grace_s=5)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--only", default="a,b,c")
    parser.add_argument("--topics", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    only = set(args.only.split(","))
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="rackwise-quorum-bench-") as tmp:
        work = Path(tmp)
        if "a" in only:
            results["throughput"] = bench_throughput(work, args.topics)
        if "b" in only:
            results["failover"] = bench_failover(work, args.rounds)
        if "c" in only:
            results["data_centre"] = bench_data_centre(work)
    if args.json:
        print(json.dumps(results))
        return 0
    for row in results.get("throughput", []):
        print(
            f"(a) CreateTopics, 100 partitions RF 3, {row['voters']} voter(s), 8 connections: "
            f"{row['partitions_per_s']:,} partitions/s ({row['topics']} topics in "
            f"{row['seconds']} s; load {row['load']})"
        )
    if "failover" in results:
        f = results["failover"]
        print(
            f"(b) kill -9 of the leader to the first write committed by the new one, "
            f"{f['rounds']} rounds: median {f['median_s']} s, worst {f['worst_s']} s "
            f"(load {f['load']})"
        )
    if "data_centre" in results:
        d = results["data_centre"]
        print(
            f"(c) data centre {d['lost']} lost ({d['killed']} processes killed at once): "
            f"new topics accepted through a surviving broker after {d['seconds']} s "
            f"(load {d['load']})"
        )
    return 0


if __name__ == "__main__":
    from _signals import stopping

    raise SystemExit(stopping(main))
