"""Stale-reads benchmark: the time until every consumer reads from a caught-up replica once the
follower it reads from lags (SIGSTOP) and once a reassignment moves that follower away, with
the bounds that set it measured or named beside it.

Four brokers on ``/dc1/r1``, ``/dc1/r2``, ``/dc2/r1``, ``/dc2/r2`` (one controller), the
multi-level replica selector, a topic of ``--consumers`` partitions, each led from ``/dc2/r1``
with followers on ``/dc1/r1`` (the consumers' rack) and ``/dc1/r2``; one librdkafka consumer
per partition with ``client.rack=/dc1/r1`` and a paced producer on every partition. Which broker
each consumer fetches from is read from its statistics (the partition's ``broker``, every
100 ms, so figures are to a tenth of a second).

* ``lag``: the follower on ``/dc1/r1`` is stopped; the figure is the time until the last
  consumer fetches from another replica. The stopped broker never answers, so what moves a
  consumer is its own fetch timeout, ``socket.timeout.ms`` + ``fetch.wait.max.ms``, noticed
  within the second librdkafka takes between scans for timed-out requests: the bound is that
  sum plus a second.
  It holds when the follower is out of the ISR by then, so that the leader, which stops
  naming it ``replica.lag.time.max.ms`` after it was last caught up, and the other followers,
  which see the ISR written up to half that later (the leader's ISR check), all send the
  consumer elsewhere: when 1.5 x ``replica.lag.time.max.ms`` is longer than the fetch
  timeout, a consumer may be sent back to the stopped follower and wait out another timeout,
  and no bound is shown. Then the follower resumes and the time until every consumer is back
  on it is reported too.
* ``move``: a reassignment replaces the ``/dc1/r1`` follower with ``/dc2/r2``; the figure is
  the time from the AlterPartitionReassignments request until the last consumer has left it.
  Its bound is one fetch round trip (``fetch.wait.max.ms``) after the follower learns of the
  reassignment; the reassignment back is not timed.

    .venv/bin/python bench/stale_reads.py [--rounds N] [--consumers C] [--lag-ms MS]
        [--socket-timeout-ms MS] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient
from kafka.structs import TopicPartition as KafkaTopicPartition

sys.path.insert(0, str(Path(__file__).parent))
from data_path import rackwise

RACKS = ("/dc1/r1", "/dc1/r2", "/dc2/r1", "/dc2/r2")
CONSUMER_RACK = "/dc1/r1"
TOPIC = "stale"
FETCH_WAIT_MAX_MS = 500
TIMEOUT_SCAN_S = 1.0
"""How often librdkafka looks for timed-out requests."""
T = TypeVar("T")


def progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def wait_for(probe: Callable[[], T | None], timeout_s: float, what: str) -> T:
    deadline = time.monotonic() + timeout_s
    while True:
        answer = probe()
        if answer is not None and answer is not False:
            return answer
        if time.monotonic() > deadline:
            raise SystemExit(f"error: {what}: not after {timeout_s:.0f} s")
        time.sleep(0.05)


class Reader(threading.Thread):
    """One consumer on one partition; ``fetching_from`` is the broker its statistics name."""

    def __init__(self, bootstrap: str, partition: int, socket_timeout_ms: int) -> None:
        super().__init__(daemon=True)
        self.partition = partition
        self.fetching_from = -1
        self.moves: list[tuple[float, int]] = []
        self.read = 0
        self.errors: list[str] = []
        self.stop_event = threading.Event()
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"stale-bench-{uuid.uuid4()}",
                "client.rack": CONSUMER_RACK,
                "enable.auto.commit": False,
                "auto.offset.reset": "error",
                "socket.timeout.ms": socket_timeout_ms,
                "fetch.wait.max.ms": FETCH_WAIT_MAX_MS,
                "statistics.interval.ms": 100,
                "stats_cb": self._stats,
            }
        )

    def _stats(self, text: str) -> None:
        partitions = json.loads(text).get("topics", {}).get(TOPIC, {}).get("partitions", {})
        broker = int(partitions.get(str(self.partition), {}).get("broker", -1))
        if broker != self.fetching_from:
            self.fetching_from = broker
            self.moves.append((time.monotonic(), broker))

    def left(self, broker: int, since: float) -> float | None:
        """When, after ``since``, this consumer first fetched from another broker than
        ``broker`` (None: not yet)."""
        for at, now in self.moves:
            if at >= since and now not in (broker, -1):
                return at
        return None

    def run(self) -> None:
        self.consumer.assign([TopicPartition(TOPIC, self.partition, 0)])
        while not self.stop_event.is_set():
            message = self.consumer.poll(0.1)
            if message is None:
                continue
            if message.error():
                self.errors.append(str(message.error()))
            else:
                self.read += 1
        self.consumer.close()


class Feed(threading.Thread):
    """A producer writing one record to every partition every 10 ms."""

    def __init__(self, bootstrap: str, partitions: int) -> None:
        super().__init__(daemon=True)
        self.partitions = partitions
        self.stop_event = threading.Event()
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})

    def run(self) -> None:
        n = 0
        while not self.stop_event.is_set():
            for p in range(self.partitions):
                self.producer.produce(TOPIC, f"{n:09d}".encode() * 20, partition=p)
            n += 1
            self.producer.poll(0.01)
        self.producer.flush(30)


class Bench:
    def __init__(self, directory: Path, consumers: int, lag_ms: int, socket_ms: int) -> None:
        self.directory, self.consumers = directory, consumers
        self.lag_ms, self.socket_ms = lag_ms, socket_ms
        progress(f"starting 4 brokers and a controller in {directory}")
        up = rackwise(
            "cluster", "up", "--dir", str(directory), "--brokers", str(len(RACKS)),
            "--racks", ",".join(RACKS), "--controllers", "1", "--placer", "multi-level",
            "--override", "replica.selector.class=multi-level",
            "--override", f"replica.lag.time.max.ms={lag_ms}", "--json",
        )  # fmt: skip
        if up.returncode != 0:
            raise SystemExit(f"error: cluster up failed: {up.stderr.strip()}")
        nodes = json.loads(up.stdout)["nodes"]
        self.brokers = {n["rack"]: n for n in nodes if n["role"] == "broker"}
        self.ids = {rack: int(n["id"]) for rack, n in self.brokers.items()}
        self.bootstrap = ",".join(f"{n['host']}:{n['port']}" for n in self.brokers.values())
        leader = self.brokers["/dc2/r1"]
        self.admin = AdminClient({"bootstrap.servers": f"{leader['host']}:{leader['port']}"})
        self.readers: list[Reader] = []
        self.feed: Feed | None = None

    def replicas(self, *racks: str) -> list[int]:
        return [self.ids[r] for r in racks]

    def isrs(self) -> dict[int, list[int]]:
        topic = self.admin.list_topics(TOPIC, timeout=10).topics[TOPIC]
        return {p: sorted(m.isrs) for p, m in topic.partitions.items()}

    def start(self) -> None:
        near = self.replicas("/dc2/r1", "/dc1/r1", "/dc1/r2")
        new = NewTopic(TOPIC, self.consumers, replica_assignment=[near] * self.consumers)
        self.admin.create_topics([new])[TOPIC].result(30)
        wait_for(lambda: all(len(i) == 3 for i in self.isrs().values()), 30, "ISRs of 3")
        self.feed = Feed(self.bootstrap, self.consumers)
        self.feed.start()
        for p in range(self.consumers):
            reader = Reader(self.bootstrap, p, self.socket_ms)
            reader.start()
            self.readers.append(reader)
        self.all_on(self.ids["/dc1/r1"], 30, "consumers on the /dc1/r1 follower")

    def all_on(self, broker: int, timeout_s: float, what: str) -> None:
        wait_for(lambda: all(r.fetching_from == broker for r in self.readers), timeout_s, what)

    def last_left(self, broker: int, since: float, timeout_s: float) -> float:
        def last() -> float | None:
            times = [r.left(broker, since) for r in self.readers]
            return None if None in times else max(t for t in times if t is not None)

        return wait_for(last, timeout_s, f"consumers off broker {broker}") - since

    def signal(self, rack: str, signum: int) -> None:
        os.kill(int(self.brokers[rack]["pid"]), signum)

    def lag_round(self) -> tuple[float, float]:
        near = self.ids["/dc1/r1"]
        stopped = time.monotonic()
        self.signal("/dc1/r1", signal.SIGSTOP)
        try:
            left = self.last_left(near, stopped, 120)
        finally:
            self.signal("/dc1/r1", signal.SIGCONT)
        resumed = time.monotonic()
        self.all_on(near, 120, "consumers back on the resumed follower")
        return left, time.monotonic() - resumed

    def move_round(self, kafka: KafkaAdminClient) -> float:
        near = self.ids["/dc1/r1"]
        away = self.replicas("/dc2/r1", "/dc2/r2", "/dc1/r2")
        back = self.replicas("/dc2/r1", "/dc1/r1", "/dc1/r2")
        parts = [KafkaTopicPartition(TOPIC, p) for p in range(self.consumers)]
        asked = time.monotonic()  # a consumer may move before the answer comes back
        answered = kafka.alter_partition_reassignments(dict.fromkeys(parts, away))
        refused = {tp.partition: e for tp, e in answered.items() if e is not None}
        if refused:
            raise SystemExit(f"error: the reassignment was refused: {refused}")
        try:
            left = self.last_left(near, asked, 60)
        except SystemExit as e:
            where = {r.partition: r.fetching_from for r in self.readers}
            raise SystemExit(f"{e} (fetching from {where}; ISRs {self.isrs()})") from None
        wait_for(lambda: dict(kafka.list_partition_reassignments()) == {}, 60, "reassigned")
        kafka.alter_partition_reassignments(dict.fromkeys(parts, back))
        wait_for(lambda: dict(kafka.list_partition_reassignments()) == {}, 60, "moved back")
        wait_for(lambda: all(len(i) == 3 for i in self.isrs().values()), 60, "ISRs of 3")
        self.all_on(near, 60, "consumers back on the /dc1/r1 follower")
        return left

    def stop(self) -> None:
        for thread in [self.feed, *self.readers]:
            if thread is not None:
                thread.stop_event.set()
        for thread in [self.feed, *self.readers]:
            if thread is not None:
                thread.join(30)
        for node in self.brokers.values():
            with contextlib.suppress(OSError):
                os.kill(int(node["pid"]), signal.SIGCONT)
        rackwise("cluster", "down", "--dir", str(self.directory))


def _stats(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"median_s": ordered[len(ordered) // 2], "max_s": ordered[-1], "rounds": len(values)}


def measure(work: Path, rounds: int, consumers: int, lag_ms: int, socket_ms: int) -> dict[str, Any]:
    bench = Bench(work / "stale", consumers, lag_ms, socket_ms)
    try:
        bench.start()
        lag, back = [], []
        for n in range(rounds):
            left, returned = bench.lag_round()
            lag.append(left)
            back.append(returned)
            progress(f"lag round {n + 1}/{rounds}: left in {left:.2f} s, back in {returned:.2f} s")
        kafka = KafkaAdminClient(bootstrap_servers=bench.bootstrap)
        moves = []
        try:
            for n in range(rounds):
                moves.append(bench.move_round(kafka))
                progress(f"move round {n + 1}/{rounds}: left in {moves[-1]:.2f} s")
        finally:
            kafka.close()
        errors = [e for r in bench.readers for e in r.errors]
        if errors:
            raise SystemExit(f"error: a consumer reported {errors[0]}")
    finally:
        bench.stop()
    fetch_timeout_s = (socket_ms + FETCH_WAIT_MAX_MS) / 1000
    in_time = 1.5 * lag_ms / 1000 <= fetch_timeout_s
    lag_bound_s = fetch_timeout_s + TIMEOUT_SCAN_S if in_time else None
    return {
        "consumers": consumers,
        "replica.lag.time.max.ms": lag_ms,
        "socket.timeout.ms": socket_ms,
        "fetch.wait.max.ms": FETCH_WAIT_MAX_MS,
        "lag": {**_stats(lag), "bound_s": lag_bound_s},
        "lag_return": _stats(back),
        "move": {**_stats(moves), "bound_s": FETCH_WAIT_MAX_MS / 1000},
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--consumers", type=int, default=4)
    parser.add_argument("--lag-ms", type=int, default=2000, help="replica.lag.time.max.ms")
    parser.add_argument("--socket-timeout-ms", type=int, default=3000, help="socket.timeout.ms")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    for name in ("rounds", "consumers", "lag_ms", "socket_timeout_ms"):
        if getattr(args, name) < 1:
            print(f"error: --{name.replace('_', '-')} must be positive", file=sys.stderr)
            return 2
    with tempfile.TemporaryDirectory(prefix="rackwise-bench-") as tmp:
        figures = measure(
            Path(tmp), args.rounds, args.consumers, args.lag_ms, args.socket_timeout_ms
        )
    figures["load_average"] = os.getloadavg()[0]
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(
        f"{figures['consumers']} consumers, replica.lag.time.max.ms={args.lag_ms}, "
        f"socket.timeout.ms={args.socket_timeout_ms}, fetch.wait.max.ms={FETCH_WAIT_MAX_MS}"
    )
    print(f"{'':34s} {'median s':>9s} {'max s':>7s} {'bound s':>8s} {'median/bound':>13s}")
    rows = (
        ("left a stopped follower", figures["lag"]),
        ("back on it once in the ISR", {**figures["lag_return"], "bound_s": None}),
        ("left a follower moved away", figures["move"]),
    )
    if figures["lag"]["bound_s"] is None:
        print(
            "(1.5 x replica.lag.time.max.ms is longer than the fetch timeout: a consumer may "
            "go back to the stopped follower once, so its time has no bound here)"
        )
    for label, row in rows:
        bound = row["bound_s"]
        ratio = f"{row['median_s'] / bound:13.2f}" if bound else f"{'':13s}"
        shown = f"{bound:8.2f}" if bound else f"{'':8s}"
        print(f"{label:34s} {row['median_s']:9.2f} {row['max_s']:7.2f} {shown} {ratio}")
    return 0


if __name__ == "__main__":
    from _signals import stopping

    raise SystemExit(stopping(main))
