"""Data-path benchmark: produce and consume through real broker processes on 127.0.0.1, beside
the machine's ceiling measured in the same run.

The ceiling is a minimal asyncio server (this file, ``--ceiling-server``) that reads the same
Produce frames, appends each to a file and answers with a bare response frame: what Python's
event loop, the loopback and the file system allow with no Kafka logic at all. The producer
side is one client, the same for both: pre-encoded Produce requests (v9, one batch of
``--records-per-batch`` 1 KiB records per partition, the correlation id patched in place), a
window of requests in flight per connection, per-request latency from send to answer. The
client decodes nothing while timing; the broker's log end offsets are checked afterwards
(every record sent must be there), so a fast wrong answer cannot pass.

Figures (the ceiling and each produce case alternate --rounds times; medians reported, with
each round's ratio to the ceiling run just before it):
  produce, 1 broker, acks=1  MB/s, latency p50/p99/p99.9/max (send to answer, 5 requests in
                             flight; the max shows a broker that stops answering for a while),
                             and the broker's CPU time per 100 MB of records
  consume                    MB/s of record batches read back from offset 0 by the produce
                             side's counterpart: Fetch v12 over two connections, one request
                             in flight on each, the answers read with kio's general reader and
                             their batches counted (every stored record must come back); the
                             broker's CPU time per 100 MB
  consume_librdkafka         the same records read by two confluent-kafka consumer processes
                             (librdkafka): what a Python application gets, bounded by the
                             clients (they and the broker share the two cores)
  at 10 MB/s                 acks=1, the client paced to 10 MB/s: p50/p99/p99.9 (first, on a
                             fresh log), and the kernel's direct reclaim stalls meanwhile
  produce, RF 3, acks=all    the same frames (4 partitions each) to each of three leaders of 12
                             partitions, one connection to each; the three brokers' CPU time
                             per 100 MB of records
  10,000 partitions          a broker holding 10,000 partitions (3+ files each): restart time
                             (process start to unfenced, as `cluster up` waits for it) and the
                             log loading within it, after a clean and after an unclean
                             shutdown; resident memory and open file descriptors

    .venv/bin/python bench/data_path.py [--seconds S] [--rounds N] [--json]
        [--scale-partitions N] [--only acks1,rf3,scale]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import re
import signal
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from rackwise.protocol import ApiKey, decode_response, encode_request, make, request_class
from rackwise.storage.batch import build_batch

RECORD_BYTES = 1024
TOPIC = "bench"


# ---- the ceiling server ------------------------------------------------------------------------


async def ceiling_server(port: int, path: Path) -> None:
    """Read frames, append each to ``path``, answer each with an 8-byte frame. The file is
    emptied when a connection closes: gigabytes of the ceiling's dirty pages left to the kernel's
    writeback would throttle the writes of the run measured after it."""
    out = path.open("ab", buffering=0)

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readexactly(4)
                (size,) = struct.unpack(">i", head)
                body = await reader.readexactly(size)
                out.write(body)
                writer.write(struct.pack(">ii", 4, struct.unpack_from(">i", body, 4)[0]))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        except OSError as e:  # the file cannot take the frame (a full disk): say so, and close
            print(f"ceiling server: {e}", file=sys.stderr, flush=True)
        finally:
            out.truncate(0)
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", port)
    print(f"PORT {server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


# ---- the producing client ----------------------------------------------------------------------


def produce_frames(topic: str, partitions: Sequence[int], records: int, acks: int) -> bytes:
    """One Produce v9 request frame with a batch of ``records`` 1 KiB records per partition."""
    value = bytes(range(256)) * (RECORD_BYTES // 256)
    batch = build_batch(
        [(None, value, ()) for _ in range(records)], timestamp_ms=int(time.time() * 1000)
    )
    body = make(
        request_class(ApiKey.PRODUCE, 9),
        {
            "transactional_id": None,
            "acks": acks,
            "timeout": 30_000,
            "topic_data": [
                {
                    "name": topic,
                    "partition_data": [{"index": p, "records": batch} for p in partitions],
                }
            ],
        },
    )
    return encode_request(body, 0, "bench")


async def drive(
    address: tuple[str, int],
    frame: bytes,
    seconds: float,
    *,
    window: int = 5,
    rate_bytes_per_s: float | None = None,
) -> dict[str, Any]:
    """Send ``frame`` over one connection for ``seconds`` with ``window`` in flight; bytes/s
    and latencies (seconds)."""
    reader, writer = await asyncio.open_connection(*address)
    frame_template = bytearray(frame)
    sent_at: dict[int, float] = {}
    latencies: list[float] = []
    loop = asyncio.get_running_loop()
    start = loop.time()
    deadline = start + seconds
    in_flight = asyncio.Semaphore(window)
    done = asyncio.Event()
    count = 0

    failed: list[BaseException] = []

    async def read_answers() -> None:
        try:
            while True:
                head = await reader.readexactly(4)
                (size,) = struct.unpack(">i", head)
                body = await reader.readexactly(size)
                (correlation,) = struct.unpack_from(">i", body, 0)
                latencies.append(loop.time() - sent_at.pop(correlation))
                in_flight.release()
                if not sent_at and done.is_set():
                    return
        except Exception as e:  # the sender must not wait for answers that will not come
            failed.append(e)
            for _ in range(window):
                in_flight.release()
            raise

    answers = asyncio.create_task(read_answers())
    correlation = 0
    try:
        while loop.time() < deadline:
            if rate_bytes_per_s is not None:
                due = start + count * len(frame) / rate_bytes_per_s
                if due > loop.time():
                    await asyncio.sleep(due - loop.time())
            await in_flight.acquire()
            if failed:
                raise failed[0]
            correlation += 1
            struct.pack_into(">i", frame_template, 8, correlation)
            sent_at[correlation] = loop.time()
            writer.write(bytes(frame_template))
            await writer.drain()
            count += 1
        done.set()
        if sent_at:
            await asyncio.wait_for(answers, 60)
        else:
            answers.cancel()
    except (ConnectionError, asyncio.IncompleteReadError) as e:
        answers.cancel()
        if answers.done() and not answers.cancelled():
            answers.exception()  # retrieved: it is the cause reported below
        cause = failed[0] if failed else e
        raise SystemExit(f"{address[0]}:{address[1]} stopped answering: {cause!r}") from None
    elapsed = loop.time() - start
    writer.close()
    return {
        "requests": count,
        "bytes": count * len(frame),
        "seconds": elapsed,
        "latencies": latencies,
    }


_BATCH_HEAD = struct.Struct(">qi")
"""A record batch's base offset and length (the 12 bytes before the rest of the batch)."""
BATCH_OVERHEAD = 61
"""Bytes of a v2 batch before its first record; lastOffsetDelta sits at 23, the count at 57."""


def whole_batches(records: bytes) -> tuple[int, int, int]:
    """(next offset, records, bytes) of the whole batches in a partition's fetched records;
    a batch cut at the end (Kafka may send one) is left for the next fetch. (-1 next offset
    when there is none.)"""
    position = count = 0
    next_offset = -1
    while position + BATCH_OVERHEAD <= len(records):
        base, length = _BATCH_HEAD.unpack_from(records, position)
        end = position + 12 + length
        if end > len(records):
            break
        (delta,) = struct.unpack_from(">i", records, position + 23)
        (n,) = struct.unpack_from(">i", records, position + 57)
        next_offset = base + delta + 1
        count += n
        position = end
    return next_offset, count, position


async def fetch_all(
    address: tuple[str, int], topic: str, ends: dict[int, int], max_bytes: int = 52_428_800
) -> dict[str, Any]:
    """Read partitions ``ends`` (partition -> end offset) of ``topic`` from offset 0 over one
    connection with Fetch v12, one request in flight as a consumer has; the answers are read
    with kio's general reader and their batches counted here, so the figure does not rest on
    the broker's own code. Record batch bytes, records and seconds."""
    reader, writer = await asyncio.open_connection(*address)
    offsets = dict.fromkeys(ends, 0)
    records = size = 0
    correlation = 0
    loop = asyncio.get_running_loop()
    start = loop.time()
    while any(offsets[p] < ends[p] for p in ends):
        correlation += 1
        wanted = [p for p in ends if offsets[p] < ends[p]]
        body = make(
            request_class(ApiKey.FETCH, 12),
            {
                "replica_id": -1,
                "max_wait": 500,
                "min_bytes": 1,
                "max_bytes": max_bytes,
                "isolation_level": 0,
                "session_id": 0,
                "session_epoch": -1,
                "topics": [
                    {
                        "topic": topic,
                        "partitions": [
                            {
                                "partition": p,
                                "current_leader_epoch": -1,
                                "fetch_offset": offsets[p],
                                "last_fetched_epoch": -1,
                                "log_start_offset": -1,
                                "partition_max_bytes": 10_485_760,
                            }
                            for p in wanted
                        ],
                    }
                ],
                "forgotten_topics_data": [],
                "rack_id": "",
            },
        )
        writer.write(encode_request(body, correlation, "bench-fetch"))
        (length,) = struct.unpack(">i", await reader.readexactly(4))
        answer = decode_response(await reader.readexactly(length), ApiKey.FETCH, 12, correlation)
        if answer.error_code:
            raise SystemExit(f"fetch failed: error {answer.error_code}")
        for part in answer.responses[0].partitions:
            if part.error_code:
                where = f"{topic}-{part.partition_index}"
                raise SystemExit(f"fetch of {where}: error {part.error_code}")
            next_offset, count, used = whole_batches(part.records or b"")
            if next_offset >= 0:
                offsets[part.partition_index] = next_offset
                records += count
                size += used
    elapsed = loop.time() - start
    writer.close()
    return {"bytes": size, "records": records, "seconds": elapsed}


def percentiles(latencies: list[float]) -> dict[str, float]:
    ordered = sorted(latencies)
    if not ordered:
        nan = float("nan")
        return {"p50_ms": nan, "p99_ms": nan, "p99.9_ms": nan, "max_ms": nan}

    def at(q: float) -> float:
        return ordered[min(int(q * len(ordered)), len(ordered) - 1)] * 1000

    return {
        "p50_ms": at(0.50),
        "p99_ms": at(0.99),
        "p99.9_ms": at(0.999),
        "max_ms": ordered[-1] * 1000,
    }


def summary(results: list[dict[str, Any]], records_per_frame: int) -> dict[str, Any]:
    total = sum(r["bytes"] for r in results)
    seconds = max(r["seconds"] for r in results)
    latencies = [x for r in results for x in r["latencies"]]
    return {
        "mb_per_s": total / seconds / 1e6,
        "records": sum(r["requests"] for r in results) * records_per_frame,
        **percentiles(latencies),
    }


# ---- clusters ----------------------------------------------------------------------------------


def rackwise(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rackwise.cli.main", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )


class BenchCluster:
    def __init__(self, directory: Path, brokers: int, *overrides: str) -> None:
        self.directory = directory
        args = ["cluster", "up", "--brokers", str(brokers), "--dir", str(directory), "--json"]
        for override in overrides:
            args += ["--override", override]
        up = rackwise(*args)
        if up.returncode != 0:
            raise SystemExit(f"cluster up failed: {up.stderr.strip()}")
        self.nodes = json.loads(up.stdout)["nodes"]

    @property
    def brokers(self) -> list[dict[str, Any]]:
        return [n for n in self.nodes if n["role"] == "broker"]

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{b['host']}:{b['port']}" for b in self.brokers)

    def address(self, broker_id: int) -> tuple[str, int]:
        for b in self.brokers:
            if int(b["id"]) == broker_id:
                return str(b["host"]), int(b["port"])
        raise KeyError(broker_id)

    def down(self) -> None:
        rackwise("cluster", "down", "--dir", str(self.directory))


def create_topic(
    bootstrap: str, name: str, partitions: int, rf: int, **configs: str
) -> dict[int, int]:
    """Create a topic; its partitions' leaders."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    future = admin.create_topics(
        [NewTopic(name, num_partitions=partitions, replication_factor=rf, config=configs)],
        operation_timeout=60,
    )[name]
    future.result(timeout=120)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        topic = admin.list_topics(topic=name, timeout=10).topics.get(name)
        if topic is not None and topic.error is None and len(topic.partitions) == partitions:
            leaders = {p: m.leader for p, m in topic.partitions.items()}
            if all(leader >= 0 for leader in leaders.values()) and (
                rf == 1 or all(len(m.isrs) == rf for m in topic.partitions.values())
            ):
                return leaders
        time.sleep(0.2)
    raise SystemExit(f"topic {name} did not get leaders")


def end_offsets(bootstrap: str, name: str, partitions: int) -> list[int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-check"})
    try:
        return [
            consumer.get_watermark_offsets(TopicPartition(name, p), timeout=30)[1]
            for p in range(partitions)
        ]
    finally:
        consumer.close()


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


CONSUMERS = 2
"""Consumer processes reading at once: one librdkafka consumer in Python is slower than one
broker serving it, so the figure would measure the client."""


def consume_rate(
    bootstrap: str, name: str, partitions: int, total: int, broker: int | None = None
) -> dict[str, Any]:
    """:data:`CONSUMERS` processes of librdkafka read the ``total`` records of ``partitions``
    (shared out between them) at once; with ``broker`` (a pid), the CPU it spent."""
    used = cpu_seconds(broker) if broker is not None else 0.0
    shares = [list(range(i, partitions, CONSUMERS)) for i in range(CONSUMERS)]
    with multiprocessing.get_context("spawn").Pool(CONSUMERS) as pool:
        ends = end_offsets(bootstrap, name, partitions)
        jobs = [(bootstrap, name, share, [ends[p] for p in share]) for share in shares]
        started = time.monotonic()
        results = pool.starmap(_consume_share, jobs)
        elapsed = time.monotonic() - started
    got = sum(r[0] for r in results)
    size = sum(r[1] for r in results)
    if got != total:
        raise SystemExit(f"consumed {got} records, {total} were stored")
    out = {"mb_per_s": size / elapsed / 1e6, "records": got, "seconds": elapsed}
    if broker is not None:
        out["broker_cpu_ms_per_100_mb"] = (cpu_seconds(broker) - used) * 1000 / (size / 1e8)
    return out


def fetch_rate(cluster: BenchCluster, name: str, partitions: int, total: int) -> dict[str, Any]:
    """Every stored record read back by :func:`fetch_all` (the produce side's counterpart: a
    client that decodes no record), over two connections of half the partitions each; MB/s
    of record batches and the broker's CPU time per 100 MB."""
    pid = broker_pid(cluster)
    ends = end_offsets(cluster.bootstrap, name, partitions)
    shares = [{p: ends[p] for p in range(i, partitions, 2)} for i in range(2)]
    used = cpu_seconds(pid)

    async def both() -> list[dict[str, Any]]:
        address = cluster.address(1)
        return list(await asyncio.gather(*(fetch_all(address, name, s) for s in shares)))

    results = asyncio.run(both())
    spent = cpu_seconds(pid) - used
    got = sum(r["records"] for r in results)
    if got != total:
        raise SystemExit(f"fetched {got} records, {total} were stored")
    size = sum(r["bytes"] for r in results)
    seconds = max(r["seconds"] for r in results)
    return {
        "mb_per_s": size / seconds / 1e6,
        "records": got,
        "seconds": seconds,
        "broker_cpu_ms_per_100_mb": spent * 1000 / (size / 1e8),
    }


def _consume_share(
    bootstrap: str, name: str, partitions: list[int], ends: list[int]
) -> tuple[int, int]:
    """Read ``partitions`` from offset 0 to ``ends``: (records, value bytes)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-consume",
            "enable.auto.commit": False,
            "fetch.max.bytes": 52_428_800,
            "max.partition.fetch.bytes": 10_485_760,
        }
    )
    consumer.assign([TopicPartition(name, p, 0) for p in partitions])
    got = 0
    size = 0
    total = sum(ends)
    deadline = time.monotonic() + 300
    while got < total and time.monotonic() < deadline:
        for message in consumer.consume(10_000, 0.5):
            if message.error():
                continue
            got += 1
            size += len(message.value() or b"")
    consumer.close()
    return got, size


# ---- sections ----------------------------------------------------------------------------------


class Ceiling:
    """The ceiling server, a process of its own, for the whole run."""

    def __init__(self, work: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--ceiling-server", str(work / "ceiling.bin")],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        self.port = int(self.proc.stdout.readline().split()[1])

    def measure(self, frame: bytes, seconds: float, records: int) -> dict[str, Any]:
        return summary([asyncio.run(drive(("127.0.0.1", self.port), frame, seconds))], records)

    def close(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(10)


def interleaved(
    rounds: int,
    ceiling: Ceiling,
    frame: bytes,
    records: int,
    seconds: float,
    measure: Any,
) -> tuple[dict[str, Any], dict[str, Any], list[float]]:
    """Alternate the ceiling and the system under test ``rounds`` times (the machine is shared:
    a ratio from adjacent runs says more than two absolute figures); the median run of each by
    throughput, and every round's ratio. Every run starts after ``sync``, so neither pays for
    the other's writeback."""
    ceilings, results, ratios = [], [], []
    for _ in range(rounds):
        os.sync()  # each run starts with no writeback left over from the one before
        top = ceiling.measure(frame, seconds, records)
        os.sync()
        got = measure()
        ceilings.append(top)
        results.append(got)
        ratios.append(got["mb_per_s"] / top["mb_per_s"])
    median = _median(results)
    median["max_ms_any_round"] = max(r["max_ms"] for r in results)
    return _median(ceilings), median, ratios


def _median(runs: list[dict[str, Any]]) -> dict[str, Any]:
    return sorted(runs, key=lambda r: r["mb_per_s"])[len(runs) // 2]


def run_acks1(
    seconds: float, records: int, work: Path, ceiling: Ceiling, rounds: int
) -> dict[str, Any]:
    cluster = BenchCluster(work / "one", 1)
    try:
        partitions = 4
        create_topic(cluster.bootstrap, TOPIC, partitions, 1)
        frame = produce_frames(TOPIC, range(partitions), records, 1)
        sent = 0

        pids = broker_pids(cluster)
        # Latency at 10 MB/s first, on a fresh log: after the gigabytes of the rounds below the
        # page cache is full and the kernel reclaims pages inside the broker's writes (direct
        # reclaim stalls, counted here), which measures the machine's memory, not the broker.
        stalls = reclaim_stalls()
        paced = summary(
            [asyncio.run(drive(cluster.address(1), frame, seconds, rate_bytes_per_s=10e6))],
            records * 4,
        )
        paced["direct_reclaim_stalls"] = reclaim_stalls() - stalls
        sent += paced["records"]

        def measure() -> dict[str, Any]:
            nonlocal sent
            result = with_broker_cpu(
                pids,
                lambda: summary(
                    [asyncio.run(drive(cluster.address(1), frame, seconds))], records * 4
                ),
            )
            sent += result["records"]
            return result

        top, out, ratios = interleaved(rounds, ceiling, frame, records * 4, seconds, measure)
        stored = sum(end_offsets(cluster.bootstrap, TOPIC, partitions))
        if stored != sent:
            raise SystemExit(f"sent {sent} records, the broker holds {stored}")
        out["stored_records"] = stored
        out["consume"] = fetch_rate(cluster, TOPIC, partitions, stored)
        out["consume_librdkafka"] = consume_rate(
            cluster.bootstrap, TOPIC, partitions, stored, broker_pid(cluster)
        )
        return {"ceiling": top, "produce": out, "ratios": ratios, "at_10_mb_s": paced}
    finally:
        cluster.down()


def run_rf3(
    seconds: float, records: int, work: Path, ceiling: Ceiling, rounds: int
) -> dict[str, Any]:
    cluster = BenchCluster(work / "three", 3)
    try:
        # Four partitions per leader, so that each leader gets the ceiling's frames.
        leaders = create_topic(cluster.bootstrap, TOPIC, 12, 3, **{"min.insync.replicas": "2"})
        by_leader: dict[int, list[int]] = {}
        for partition, leader in leaders.items():
            by_leader.setdefault(leader, []).append(partition)
        frames = {
            leader: produce_frames(TOPIC, parts, records, -1) for leader, parts in by_leader.items()
        }
        sent = 0

        async def all_leaders() -> list[dict[str, Any]]:
            return list(
                await asyncio.gather(
                    *(drive(cluster.address(leader), frames[leader], seconds) for leader in frames)
                )
            )

        pids = broker_pids(cluster)

        def run_all() -> dict[str, Any]:
            nonlocal sent
            results = asyncio.run(all_leaders())
            total = sum(
                r["requests"] * records * len(by_leader[leader])
                for leader, r in zip(frames, results, strict=True)
            )
            sent += total
            out = summary(results, records)
            out["records"] = total
            return out

        def measure() -> dict[str, Any]:
            return with_broker_cpu(pids, run_all)

        frame = produce_frames(TOPIC, range(4), records, 1)
        top, out, ratios = interleaved(rounds, ceiling, frame, records * 4, seconds, measure)
        stored = sum(end_offsets(cluster.bootstrap, TOPIC, 12))
        if stored != sent:
            raise SystemExit(f"sent {sent} records at RF 3, the cluster holds {stored}")
        out["stored_records"] = stored
        return {"ceiling": top, "produce": out, "ratios": ratios}
    finally:
        cluster.down()


def proc_stats(pid: int) -> dict[str, Any]:
    rss_kb = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss_kb = int(line.split()[1])
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    return {"rss_mib": rss_kb / 1024, "open_fds": fds}


def run_scale(partitions: int, work: Path) -> dict[str, Any]:
    """A broker with ``partitions`` partitions: start-up clean and unclean, memory, fds."""
    cluster = BenchCluster(work / "scale", 1, "log.segment.bytes=1048576")
    try:
        per_topic = 5_000
        topics = [f"scale-{i}" for i in range((partitions + per_topic - 1) // per_topic)]
        for name in topics:
            create_topic(cluster.bootstrap, name, min(per_topic, partitions), 1)
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 50})
        for name in topics:
            for p in range(min(per_topic, partitions)):
                producer.produce(name, value=b"x" * 100, partition=p)
            producer.poll(0)
        if producer.flush(300):
            raise SystemExit("the 10,000-partition broker did not take every record in 300 s")
        del producer  # destroyed now: its reconnects would log through the restarts below
        pid_file = cluster.directory / "broker-1.pid"
        pid = int(pid_file.read_text()) if pid_file.exists() else broker_pid(cluster)
        loaded = proc_stats(pid)
        clean = restart_broker(cluster, pid, signal.SIGTERM)
        clean_load = last_load_seconds(cluster)
        unclean = restart_broker(cluster, broker_pid(cluster), signal.SIGKILL)
        unclean_load = last_load_seconds(cluster)
        return {
            "logs_loaded_clean_s": clean_load,
            "logs_loaded_unclean_s": unclean_load,
            "partitions": partitions,
            **loaded,
            "restart_clean_s": clean,
            "restart_unclean_s": unclean,
        }
    finally:
        cluster.down()


def last_load_seconds(cluster: BenchCluster) -> float:
    """The broker's own figure for loading its logs at its last start (its log says it)."""
    log = (cluster.directory / "broker-1" / "server.log").read_text("utf-8")
    found = re.findall(r"loaded \d+ partition logs in ([0-9.]+) s", log)
    return float(found[-1]) if found else float("nan")


def reclaim_stalls() -> int:
    """Allocations the kernel has stalled for direct page reclaim so far (``/proc/vmstat``)."""
    total = 0
    for line in Path("/proc/vmstat").read_text().splitlines():
        name, value = line.split()
        if name.startswith("allocstall"):
            total += int(value)
    return total


def broker_pids(cluster: BenchCluster) -> list[int]:
    state = json.loads((cluster.directory / "cluster.json").read_text())
    pids = [int(node["pid"]) for node in state["nodes"] if node["role"] == "broker"]
    if not pids:
        raise SystemExit("no broker pid in cluster.json")
    return pids


def broker_pid(cluster: BenchCluster) -> int:
    return broker_pids(cluster)[0]


def with_broker_cpu(pids: list[int], run: Any) -> dict[str, Any]:
    """``run()``'s figures with the CPU time the brokers ``pids`` spent during it per 100 MB
    of records produced: a figure the shared machine's noise moves far less than a rate."""
    before = sum(cpu_seconds(pid) for pid in pids)
    out: dict[str, Any] = run()
    used = sum(cpu_seconds(pid) for pid in pids) - before
    out["broker_cpu_ms_per_100_mb"] = used * 1000 / (out["records"] * RECORD_BYTES / 1e8)
    return out


def restart_broker(cluster: BenchCluster, pid: int, how: signal.Signals) -> float:
    """Stop the broker with ``how`` and start it again; seconds from start to serving."""
    os.kill(pid, how)
    while Path(f"/proc/{pid}").exists():
        time.sleep(0.05)
    started = time.monotonic()
    up = rackwise("cluster", "up", "--dir", str(cluster.directory), "--json")
    if up.returncode != 0:
        raise SystemExit(f"restart failed: {up.stderr.strip()}")
    return time.monotonic() - started


# ---- main --------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ceiling-server", metavar="FILE", help=argparse.SUPPRESS)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--records-per-batch", type=int, default=64)
    parser.add_argument("--only", default="acks1,rf3,scale")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scale-partitions", type=int, default=10_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.ceiling_server:  # a child of this benchmark, which stops it with SIGTERM
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        asyncio.run(ceiling_server(0, Path(args.ceiling_server)))
        return 0
    only = set(args.only.split(","))
    records = args.records_per_batch
    out: dict[str, Any] = {"load_average": os.getloadavg()[0], "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="rackwise-bench-") as tmp:
        work = Path(tmp)
        ceiling = Ceiling(work)
        try:
            if "acks1" in only:
                out["acks1"] = run_acks1(args.seconds, records, work, ceiling, args.rounds)
                report_pair("1 broker, acks=1", out["acks1"], args.json)
            if "rf3" in only:
                out["rf3"] = run_rf3(args.seconds, records, work, ceiling, args.rounds)
                report_pair("RF 3, acks=all", out["rf3"], args.json)
        finally:
            ceiling.close()
        if "scale" in only:
            out["scale"] = run_scale(args.scale_partitions, work)
            report(f"{args.scale_partitions:,} partitions", out["scale"], args.json)
    if args.json:
        print(json.dumps(out, indent=2))
    return 0


def report_pair(name: str, figures: dict[str, Any], quiet: bool) -> None:
    if quiet:
        return
    report(f"ceiling (beside {name})", figures["ceiling"], False)
    report(f"produce {name}", figures["produce"], False)
    ratios = sorted(figures["ratios"])
    each = ", ".join(f"{r:.2f}" for r in figures["ratios"])
    median = ratios[len(ratios) // 2]
    print(f"{'':28s} ratio to the ceiling, round by round: {each}; median {median:.2f}")
    if "at_10_mb_s" in figures:
        report(f"produce {name} at 10 MB/s", figures["at_10_mb_s"], False)


def report(
    name: str, figures: dict[str, Any], quiet: bool, ceiling: dict[str, Any] | None = None
) -> None:
    if quiet:
        return
    parts = []
    for key, value in figures.items():
        if isinstance(value, dict):
            parts.append(f"{key}: " + ", ".join(f"{k}={_fmt(v)}" for k, v in value.items()))
        else:
            parts.append(f"{key}={_fmt(value)}")
    if ceiling is not None and "mb_per_s" in figures:
        parts.append(f"ratio_to_ceiling={figures['mb_per_s'] / ceiling['mb_per_s']:.2f}")
    print(f"{name:28s} " + "  ".join(parts), flush=True)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.2f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


if __name__ == "__main__":
    from _signals import stopping

    raise SystemExit(stopping(main))
