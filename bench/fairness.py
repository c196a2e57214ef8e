"""Fairness benchmark: how a broker answers a newcomer, and keeps its heartbeats, while other
connections pipeline small requests as fast as it answers them.

A real controller and one real broker (``rackwise controller start``, ``rackwise broker
start``) on 127.0.0.1; the broker reaches the controller through a small TCP relay in this
process that notes the time of each BrokerHeartbeat request it forwards. A flood process keeps
``--depth`` small Metadata requests (no topics) in flight on each of ``--flood-connections``
connections to the broker: as each response arrives, another request goes out. Meanwhile this
process opens a fresh connection every ``--probe-every-ms``, sends ApiVersions and times the
answer (connect included).

Reported, idle and under the flood: ApiVersions latency on a fresh connection (p50, p99, max),
the longest interval between two heartbeats (and how far it exceeds
``broker.heartbeat.interval.ms``), the flood's rate, and whether the broker was fenced.

    .venv/bin/python bench/fairness.py [--json] [--seconds 20] [--flood-connections 2]
        [--depth 1000] [--probe-every-ms 50]

The code before a change runs from a worktree: ``git worktree add /tmp/before <commit>`` then
``PYTHONPATH=/tmp/before/src .venv/bin/python bench/fairness.py`` (the processes inherit it).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rackwise.cluster.processes import free_ports
from rackwise.node.process import parse_ready_line
from rackwise.protocol import ApiKey, encode_request, make, request_class

HEARTBEAT_INTERVAL_MS = 250
SESSION_TIMEOUT_MS = 2000
BROKER_HEARTBEAT = 63
SIZE = struct.Struct(">i")
READY_TIMEOUT_S = 60


# ---- processes ---------------------------------------------------------------------------------


def free_port() -> int:
    (port,) = free_ports(1)
    return port


class Process:
    """A rackwise process started from a ``.properties`` file, waited for by its ready line."""

    def __init__(self, role: str, directory: Path, props: dict[str, str]) -> None:
        self.role = role
        self.config = directory / f"{role}.properties"
        self.config.write_text("".join(f"{k}={v}\n" for k, v in props.items()), "utf-8")
        self.stderr = directory / f"{role}.log"
        self.proc: subprocess.Popen[str] | None = None
        self.port = -1

    def start(self) -> None:
        with self.stderr.open("a", encoding="utf-8") as err:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "rackwise.cli.main",
                    self.role,
                    "start",
                    "--config",
                    str(self.config),
                ],
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
            )
        assert self.proc.stdout is not None
        ready = parse_ready_line(self.proc.stdout.readline())
        if ready is None:
            self.proc.wait(READY_TIMEOUT_S)
            raise SystemExit(f"the {self.role} did not start:\n{self.stderr.read_text()}")
        self.port = ready.listeners[0].port

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=30)
            if self.proc.stdout is not None:
                self.proc.stdout.close()
            self.proc = None

    def log(self) -> str:
        return self.stderr.read_text(encoding="utf-8")


# ---- the heartbeat relay -----------------------------------------------------------------------


class HeartbeatRelay:
    """Forwards every connection to the controller; notes when each BrokerHeartbeat request
    frame passes (the broker's heartbeats, as the controller would see them arrive)."""

    def __init__(self, controller_port: int) -> None:
        self.controller_port = controller_port
        self.heartbeats: list[float] = []
        self.server: asyncio.Server | None = None

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        return int(self.server.sockets[0].getsockname()[1])

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.controller_port)
        down = asyncio.ensure_future(self._pipe(up_reader, writer, watch=False))
        try:
            with contextlib.suppress(ConnectionError, asyncio.CancelledError):
                await self._pipe(reader, up_writer, watch=True)
        finally:
            down.cancel()
            await asyncio.gather(down, return_exceptions=True)
            up_writer.close()
            writer.close()

    def close(self) -> None:
        if self.server is not None:
            self.server.close()

    async def _pipe(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, watch: bool
    ) -> None:
        pending = b""
        while data := await reader.read(1 << 16):
            writer.write(data)
            if watch:
                pending += data
                while len(pending) >= 6:
                    (size,) = SIZE.unpack_from(pending)
                    if len(pending) < 4 + size:
                        break
                    if struct.unpack_from(">h", pending, 4)[0] == BROKER_HEARTBEAT:
                        self.heartbeats.append(time.monotonic())
                    pending = pending[4 + size :]
            await writer.drain()


# ---- the flood (a process of its own) ----------------------------------------------------------


def metadata_frame() -> bytes:
    body = make(
        request_class(ApiKey.METADATA, 12),
        topics=[],
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    return bytes(encode_request(body, 1, "flood"))


async def flood(port: int, connections: int, depth: int, seconds: float) -> int:
    """Keep ``depth`` Metadata requests in flight on each connection for ``seconds``; the
    number of responses received."""
    frame = metadata_frame()
    deadline = time.monotonic() + seconds
    counts = [0] * connections

    async def one(index: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(frame * depth)
        pending = b""
        while time.monotonic() < deadline:
            data = await reader.read(1 << 16)
            if not data:
                break
            pending += data
            answered = 0
            while len(pending) >= 4:
                (size,) = SIZE.unpack_from(pending)
                if len(pending) < 4 + size:
                    break
                pending = pending[4 + size :]
                answered += 1
            counts[index] += answered
            if answered:
                writer.write(frame * answered)
        writer.close()

    await asyncio.gather(*(one(i) for i in range(connections)))
    return sum(counts)


# ---- probes ------------------------------------------------------------------------------------


def api_versions_frame() -> bytes:
    body = make(
        request_class(ApiKey.API_VERSIONS, 3),
        client_software_name="fairness-probe",
        client_software_version="1",
    )
    return bytes(encode_request(body, 7, "probe"))


async def probe_once(port: int, frame: bytes) -> float:
    began = time.monotonic()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(frame)
    (size,) = SIZE.unpack(await reader.readexactly(4))
    await reader.readexactly(size)
    elapsed = time.monotonic() - began
    writer.close()
    return elapsed


async def probe(port: int, seconds: float, every_s: float) -> list[float]:
    frame = api_versions_frame()
    latencies = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        latencies.append(await asyncio.wait_for(probe_once(port, frame), 30))
        await asyncio.sleep(every_s)
    return latencies


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def summary(latencies: list[float], beats: list[float]) -> dict[str, Any]:
    intervals = [b - a for a, b in itertools.pairwise(beats)]
    longest = max(intervals) if intervals else float("nan")
    return {
        "probes": len(latencies),
        "api_versions_p50_ms": 1000 * statistics.median(latencies),
        "api_versions_p99_ms": 1000 * percentile(latencies, 0.99),
        "api_versions_max_ms": 1000 * max(latencies),
        "heartbeats": len(beats),
        "heartbeat_interval_max_ms": 1000 * longest,
        "heartbeat_jitter_max_ms": 1000 * longest - HEARTBEAT_INTERVAL_MS,
    }


# ---- the run -----------------------------------------------------------------------------------


async def measure(args: argparse.Namespace, directory: Path) -> dict[str, Any]:
    cdir, bdir = directory / "controller", directory / "broker"
    cdir.mkdir()
    bdir.mkdir()
    controller_port = free_port()
    controller = Process(
        "controller",
        cdir,
        {
            "node.id": "3000",
            "process.roles": "controller",
            "listeners": f"CONTROLLER://127.0.0.1:{controller_port}",
            "controller.listener.names": "CONTROLLER",
            "controller.quorum.voters": f"3000@127.0.0.1:{controller_port}",
            "metadata.log.dir": str(cdir / "meta"),
            "broker.heartbeat.interval.ms": str(HEARTBEAT_INTERVAL_MS),
            "broker.session.timeout.ms": str(SESSION_TIMEOUT_MS),
        },
    )
    controller.start()
    relay = HeartbeatRelay(controller.port)
    relay_port = await relay.start()
    broker = Process(
        "broker",
        bdir,
        {
            "node.id": "1",
            "process.roles": "broker",
            "listeners": f"PLAINTEXT://127.0.0.1:{free_port()}",
            "controller.listener.names": "CONTROLLER",
            "controller.quorum.bootstrap.servers": f"127.0.0.1:{relay_port}",
            "log.dirs": str(bdir / "data"),
            "broker.rack": "/dc1/r1",
            "broker.heartbeat.interval.ms": str(HEARTBEAT_INTERVAL_MS),
            "broker.session.timeout.ms": str(SESSION_TIMEOUT_MS),
        },
    )
    try:
        broker.start()
        while "serves clients" not in broker.log():
            await asyncio.sleep(0.1)
        await asyncio.sleep(1.0)
        every_s = args.probe_every_ms / 1000
        began = time.monotonic()
        idle = await probe(broker.port, min(args.seconds, 5.0), every_s)
        idle_beats = [t for t in relay.heartbeats if t >= began]
        flooding = await asyncio.create_subprocess_exec(
            sys.executable,
            __file__,
            "flood",
            str(broker.port),
            str(args.flood_connections),
            str(args.depth),
            str(args.seconds),
            stdout=asyncio.subprocess.PIPE,
        )
        await asyncio.sleep(1.0)  # the flood is under way
        began = time.monotonic()
        loaded = await probe(broker.port, args.seconds - 1.5, every_s)
        loaded_beats = [t for t in relay.heartbeats if t >= began]
        out, _ = await flooding.communicate()
        responses = int(out.decode().strip() or 0)
    finally:
        broker.stop()
        controller.stop()
        relay.close()
    return {
        "idle": summary(idle, idle_beats),
        "flood": {
            **summary(loaded, loaded_beats),
            "flood_connections": args.flood_connections,
            "depth": args.depth,
            "metadata_per_s": responses / args.seconds,
        },
        "broker_fenced_lines": broker.log().count("fenced by the controller")
        - broker.log().count("unfenced by the controller"),
        "controller_fenced_lines": controller.log().count("lease expired"),
        "code": os.environ.get("PYTHONPATH", "this tree"),
        "load_average": os.getloadavg(),
    }


def print_table(result: dict[str, Any]) -> None:
    print(f"code: {result['code']}")
    print(
        f"{'phase':<6} {'probes':>6} {'ApiVersions p50':>16} {'p99':>9} {'max':>9} "
        f"{'heartbeat max interval':>23} {'jitter':>9} {'Metadata/s':>11}"
    )
    for phase in ("idle", "flood"):
        row = result[phase]
        rate = f"{row['metadata_per_s']:,.0f}" if "metadata_per_s" in row else "-"
        print(
            f"{phase:<6} {row['probes']:>6} {row['api_versions_p50_ms']:>13.1f} ms "
            f"{row['api_versions_p99_ms']:>6.1f} ms {row['api_versions_max_ms']:>6.1f} ms "
            f"{row['heartbeat_interval_max_ms']:>20.0f} ms "
            f"{row['heartbeat_jitter_max_ms']:>6.0f} ms {rate:>11}"
        )
    print(
        f"fenced: broker log {result['broker_fenced_lines']} line(s), controller "
        f"{result['controller_fenced_lines']} lease expiry(ies); load average "
        + " ".join(f"{x:.2f}" for x in result["load_average"])
    )


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "flood":
        port, connections, depth, seconds = sys.argv[2:6]
        print(asyncio.run(flood(int(port), int(connections), int(depth), float(seconds))))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--flood-connections", type=int, default=2)
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--probe-every-ms", type=float, default=50.0)
    args = parser.parse_args()
    directory = Path(tempfile.mkdtemp(prefix="rackwise-fairness-"))
    try:
        result = asyncio.run(measure(args, directory))
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_table(result)


if __name__ == "__main__":
    from _signals import stopping

    raise SystemExit(stopping(main))
