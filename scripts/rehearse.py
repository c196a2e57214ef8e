"""A data centre lost for real: what the audit predicted for it against what clients see.

A stretch cluster of real processes (6 brokers on /dc1/r1 .. /dc3/r2, three controllers, one
per data centre, so that losing one leaves the quorum its majority) gets three topics placed
by hand so that losing /dc3 makes partitions go offline, fall under min.insync.replicas, and
refuse acks=all writes because of min.insync.racks, with some untouched. Then:

1. The prediction: the cluster read through its admin APIs as `rackwise pipeline audit
   --bootstrap-server` reads it, its topics' rules from DescribeConfigs, and the audit's
   per-partition exposure (rackwise.pipeline.audit.partition_exposure) for /dc3.
2. Under an acks=all producer and a group consumer, every /dc3 process (two brokers and a
   controller) is killed with SIGKILL: a data centre's power cut, whose sockets close at once,
   so the brokers are fenced after broker.session.timeout.ms; SIGSTOP would leave connections
   hanging and processes to resume at teardown.
3. What clients see, per partition, once no /dc3 broker is a leader or in an ISR: an acks=all
   write without retries (NOT_ENOUGH_REPLICAS or NOT_ENOUGH_REPLICAS_AFTER_APPEND: refusing
   writes when the broker's message names min.insync.racks, else under min ISR; no leader or
   a timeout: offline), and an acks=1 marker each partition with a leader takes, which the
   group consumer must read. The ISR the metadata shows is printed beside them.

The table (or --json) shows both side by side; exit 0 when they agree partition for
partition, 1 when not. The cluster is torn down whatever happens (Ctrl-C: 130, SIGTERM: 143).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaProducer
from kafka.errors import KafkaError

from rackwise.cli.pipeline import read_live
from rackwise.pipeline.audit.partition_exposure import COUNT_COLUMNS, exposure_partitions
from rackwise.pipeline.audit.rules import DomainRules
from rackwise.pipeline.ingest.local import read_source
from rackwise.pipeline.ingest.source import InputSource, live_clusters

RACKS = "/dc1/r1,/dc1/r2,/dc2/r1,/dc2/r2,/dc3/r1,/dc3/r2"
LOST = "/dc3"
MIN_ISR = 2
TOPICS: dict[str, tuple[list[list[int]], dict[str, str]]] = {
    # brokers 1, 2 in /dc1; 3, 4 in /dc2; 5, 6 in /dc3
    "rf2": ([[5, 6], [1, 5], [3, 6], [1, 2], [6, 5], [3, 4]], {}),
    "rf3-racks2": ([[1, 3, 5], [1, 2, 5], [5, 3, 4], [5, 6, 1], [2, 4, 6]],
                   {"min.insync.racks": "2"}),
    "rf3-racks3": ([[1, 3, 5], [4, 2, 6]], {"min.insync.racks": "3"}),
}  # fmt: skip
QUIET = {"log_level": 0}  # librdkafka's lines about the killed brokers' sockets
OUTCOMES = ("offline", "under_min_isr", "refusing_writes")


class Interrupted(Exception):
    def __init__(self, code: int) -> None:
        self.code = code


def _terminated(signum: int, frame: Any) -> None:
    raise Interrupted(143)


def _deadline(what: str, seconds: float, probe: Any) -> Any:
    end = time.monotonic() + seconds
    while True:
        answer = probe()
        if answer:
            return answer
        if time.monotonic() > end:
            raise RuntimeError(f"{what}: not after {seconds:g} s")
        time.sleep(0.2)


def _rackwise(*args: str) -> subprocess.CompletedProcess[str]:
    """``rackwise ARGS`` in a session of its own, so that Ctrl-C reaches this script only:
    interrupted, the script still waits for ``cluster up`` to finish, so that the processes
    it started are in cluster.json for ``cluster down``, then raises."""
    child = subprocess.Popen(
        [sys.executable, "-m", "rackwise", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        out, err = child.communicate()
    except BaseException:
        child.communicate(timeout=120)
        raise
    return subprocess.CompletedProcess(child.args, child.returncode, out, err)


def _note(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class Rehearsal:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.nodes: list[dict[str, Any]] = []
        self.stop = threading.Event()
        self.read: dict[tuple[str, int], set[bytes]] = {}
        self.lock = threading.Lock()

    def up(self) -> None:
        up = _rackwise(
            "cluster", "up", "--dir", str(self.directory), "--brokers", "6", "--racks", RACKS,
            "--controllers", "3", "--placer", "multi-level", "--json",
            "--override", "broker.session.timeout.ms=3000",
            "--override", "replica.lag.time.max.ms=2000",
            "--override", f"min.insync.replicas={MIN_ISR}",
        )  # fmt: skip
        if up.returncode != 0:
            raise RuntimeError(f"cluster up: {up.stderr.strip().splitlines()[-1:]}")
        self.nodes = json.loads(up.stdout)["nodes"]

    def down(self) -> None:
        if (self.directory / "cluster.json").exists():
            _rackwise("cluster", "down", "--dir", str(self.directory))

    def brokers(self, lost: bool | None = None) -> list[dict[str, Any]]:
        return [
            n
            for n in self.nodes
            if n["role"] == "broker" and (lost is None or n["rack"].startswith(LOST) == lost)
        ]

    def bootstrap(self, lost: bool | None = None) -> str:
        return ",".join(f"{n['host']}:{n['port']}" for n in self.brokers(lost))

    def admin(self) -> Any:
        return AdminClient({"bootstrap.servers": self.bootstrap(lost=False), **QUIET})

    def create_topics(self) -> None:
        admin = self.admin()
        new = [NewTopic(t, len(a), replica_assignment=a, config=c) for t, (a, c) in TOPICS.items()]
        for future in admin.create_topics(new).values():
            future.result(30)

        def in_sync() -> bool:
            topics = admin.list_topics(timeout=10).topics
            return all(
                t in topics and all(len(p.isrs) == len(p.replicas) and p.leader >= 0
                                    for p in topics[t].partitions.values())
                for t in TOPICS
            )  # fmt: skip

        _deadline("every replica in sync", 30, in_sync)

    def predict(self) -> dict[str, set[tuple[str, int]]]:
        """The audit's partitions for /dc3, read from the live cluster as the audit reads it
        (its topics' rules among the rows read)."""
        name = "rehearsal"
        source = InputSource.live_clusters(
            live_clusters([f"{name}={self.bootstrap()}"], None), name, None
        )
        columns = read_live(source, _note, None)
        tables = read_source(source, columns)
        rows = exposure_partitions(
            name, tables.brokers, tables.log_dirs, tables.replicas, MIN_ISR,
            DomainRules.of({}, columns.topic_configs),
        ).to_pylist()  # fmt: skip
        out: dict[str, set[tuple[str, int]]] = {o: set() for o in OUTCOMES}
        for r in rows:
            if r["domain"] == LOST:
                out[r["outcome"]].add((r["topic"], r["partition"]))
        return out

    def audit_counts(self, out: Path) -> dict[str, int]:
        """What ``rackwise pipeline audit --bootstrap-server`` counts for /dc3."""
        done = _rackwise("pipeline", "audit", "--bootstrap-server", self.bootstrap(),
                         "--min-insync-replicas", str(MIN_ISR), "--engine", "local",
                         "--out", str(out), "--format", "json")  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"pipeline audit: {done.stderr.strip().splitlines()[-1:]}")
        table = pq.read_table(out / "audit" / "exposure").to_pylist()
        row = next(r for r in table if r["domain"] == LOST)
        return {o: int(row[COUNT_COLUMNS[o]]) for o in OUTCOMES}

    def clients(self) -> list[threading.Thread]:
        """An acks=all producer writing to every partition, and a group consumer recording
        what it reads."""
        producer = Producer({"bootstrap.servers": self.bootstrap(), "acks": "all",
                             "message.timeout.ms": 5000, **QUIET})  # fmt: skip
        consumer = Consumer({"bootstrap.servers": self.bootstrap(), "group.id": "rehearsal",
                             "auto.offset.reset": "earliest", **QUIET})  # fmt: skip
        consumer.subscribe(list(TOPICS))

        def produce() -> None:
            while not self.stop.is_set():
                for topic, (assignment, _) in TOPICS.items():
                    for p in range(len(assignment)):
                        producer.produce(topic, b"load", partition=p)
                producer.poll(0.2)
            producer.purge()  # what the offline partitions will never take
            producer.flush(1)

        def consume() -> None:
            while not self.stop.is_set():
                message = consumer.poll(0.2)
                if message is not None and message.error() is None:
                    with self.lock:
                        key = (message.topic(), message.partition())
                        self.read.setdefault(key, set()).add(message.value())
            consumer.close()

        threads = [threading.Thread(target=f, daemon=True) for f in (produce, consume)]
        for thread in threads:
            thread.start()
        return threads

    def read_all(self) -> bool:
        with self.lock:
            return len(self.read) == len(_partitions())

    def lose(self) -> None:
        for node in self.nodes:
            if node["rack"].startswith(LOST):
                os.kill(int(node["pid"]), signal.SIGKILL)
        lost = {n["id"] for n in self.brokers(lost=True)}
        admin = self.admin()

        def gone() -> bool:
            topics = admin.list_topics(timeout=5).topics
            for t in TOPICS:
                for p in topics[t].partitions.values():
                    if p.leader in lost or (p.leader >= 0 and lost & set(p.isrs)):
                        return False
            return True

        _deadline(f"{LOST} out of every leader and ISR", 40, gone)

    def observe(self) -> tuple[dict[str, set[tuple[str, int]]], dict[tuple[str, int], Any]]:
        metadata = self.admin().list_topics(timeout=10).topics
        probe = KafkaProducer(bootstrap_servers=self.bootstrap(lost=False), acks="all",
                              retries=0, request_timeout_ms=3000, delivery_timeout_ms=4000,
                              max_block_ms=4000)  # fmt: skip
        marker = KafkaProducer(bootstrap_servers=self.bootstrap(lost=False), acks=1,
                               retries=0, request_timeout_ms=3000, delivery_timeout_ms=4000,
                               max_block_ms=4000)  # fmt: skip
        seen: dict[tuple[str, int], Any] = {}
        out: dict[str, set[tuple[str, int]]] = {o: set() for o in OUTCOMES}
        futures = {key: _send(probe, key, b"probe") for key in _partitions()}
        marked = []
        for (t, p), future in futures.items():
            state = metadata[t].partitions[p]
            answer, message = _answer(future)
            seen[(t, p)] = {"write": answer, "message": message, "leader": state.leader,
                            "isr": sorted(state.isrs)}  # fmt: skip
            if answer.startswith("NotEnoughReplicas"):
                racks = "min.insync.racks" in message
                out["refusing_writes" if racks else "under_min_isr"].add((t, p))
            elif answer != "ok":
                out["offline"].add((t, p))
            if state.leader >= 0:
                value = f"marker {t} {p}".encode()
                seen[(t, p)]["marker"] = _answer(_send(marker, (t, p), value))[0]
                marked.append(((t, p), value))
        for producer in (probe, marker):
            _close(producer)

        def all_read() -> bool:
            with self.lock:
                return all(v in self.read.get(k, set()) for k, v in marked)

        with contextlib.suppress(RuntimeError):  # the table says which were not read
            _deadline("the consumer reading every partition with a leader", 20, all_read)
        with self.lock:
            for key, value in marked:
                seen[key]["consumer_read"] = value in self.read.get(key, set())
        for state in seen.values():
            state.setdefault("consumer_read", False)
        return out, seen


def _partitions() -> list[tuple[str, int]]:
    return [(t, p) for t, (a, _) in TOPICS.items() for p in range(len(a))]


def _send(producer: Any, key: tuple[str, int], value: bytes) -> Any:
    """The send's future, or the error ``send`` itself raised (no metadata in time)."""
    try:
        return producer.send(key[0], value, partition=key[1])
    except KafkaError as e:
        return e


def _close(producer: Any) -> None:
    """Close a kafka-python producer whose offline partitions' records cannot be flushed."""
    with contextlib.suppress(KafkaError):
        producer.close(timeout=1)


def _answer(future: Any) -> tuple[str, str]:
    """``ok`` or the name of the client's error, with the broker's message (ProduceResponse's
    ``error_message``, which kafka-python hands its exception) or ``""``."""
    error = future if isinstance(future, Exception) else None
    if error is None:
        try:
            future.get(timeout=10)
            return "ok", ""
        except KafkaError as e:
            error = e
    message = error.args[0] if error.args and isinstance(error.args[0], str) else ""
    return type(error).__name__, message


def _outcome(sets: dict[str, set[tuple[str, int]]], key: tuple[str, int]) -> str:
    return next((o for o in OUTCOMES if key in sets[o]), "-")


def rehearse(directory: Path, scratch: Path) -> dict[str, Any]:
    rehearsal = Rehearsal(directory)
    threads: list[threading.Thread] = []
    seconds: dict[str, float] = {}
    began = time.monotonic()

    def phase(name: str, text: str) -> None:
        seconds[name] = round(time.monotonic() - began - sum(seconds.values()), 1)
        _note(f"rehearsal: {text} ({seconds[name]:.1f} s)")

    try:
        _note("rehearsal: starting 3 controllers (one per data centre) and 6 brokers")
        rehearsal.up()
        rehearsal.create_topics()
        phase("up", "cluster up, topics created and in sync")
        predicted = rehearsal.predict()
        counted = rehearsal.audit_counts(scratch / "audit")
        phase("predict", f"the audit's prediction for {LOST} read from the cluster")
        threads = rehearsal.clients()
        _deadline("the consumer reading every partition", 30, rehearsal.read_all)
        phase("clients", "the producer and the consumer at work on every partition")
        rehearsal.lose()
        phase("lose", f"every {LOST} process killed (SIGKILL), none a leader or in an ISR")
        observed, seen = rehearsal.observe()
        phase("observe", "every partition probed")
    finally:
        rehearsal.stop.set()
        for thread in threads:
            thread.join(8)
        rehearsal.down()
    phase("down", "cluster torn down")
    rows = []
    for key, state in sorted(seen.items()):
        want, got = _outcome(predicted, key), _outcome(observed, key)
        consumer_ok = state["consumer_read"] == (state["leader"] >= 0)
        rows.append({"topic": key[0], "partition": key[1], "predicted": want, "observed": got,
                     **state, "agree": want == got and consumer_ok})  # fmt: skip
    return {
        "domain": LOST,
        "predicted": {o: sorted(map(list, predicted[o])) for o in OUTCOMES},
        "observed": {o: sorted(map(list, observed[o])) for o in OUTCOMES},
        "partitions": rows,
        "audit_counts": counted,
        "agree": all(r["agree"] for r in rows)
        and counted == {o: len(predicted[o]) for o in OUTCOMES},
        "pids": sorted(int(n["pid"]) for n in rehearsal.nodes),
        "seconds": seconds,
    }


def _table(result: dict[str, Any]) -> str:
    headers = ("topic", "partition", "predicted", "observed", "acks=all write", "leader",
               "isr", "consumer read", "agree")  # fmt: skip
    body = [
        (r["topic"], str(r["partition"]), r["predicted"], r["observed"], r["write"],
         str(r["leader"]), ",".join(map(str, r["isr"])), "yes" if r["consumer_read"] else "no",
         "yes" if r["agree"] else "NO")
        for r in result["partitions"]
    ]  # fmt: skip
    widths = [max(len(h), *(len(row[i]) for row in body)) for i, h in enumerate(headers)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
             for row in (headers, *body)]  # fmt: skip
    counts = ", ".join(f"{n} {o}" for o, n in result["audit_counts"].items())
    lines.append(f"rackwise pipeline audit counts for {LOST}: {counts}")
    verdict = "agree" if result["agree"] else "DISAGREE"
    lines.append(f"{LOST} lost: the audit and the clients {verdict}, partition for partition")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", metavar="DIR", help="the cluster's directory (default: a new one)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, _terminated)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with tempfile.TemporaryDirectory(prefix="rehearsal-") as scratch:
            directory = Path(args.dir) if args.dir else Path(scratch) / "cluster"
            result = rehearse(directory, Path(scratch))
    except KeyboardInterrupt:
        _note("error: interrupted")
        return 130
    except Interrupted as e:
        _note("error: terminated")
        return e.code
    except Exception as e:  # one line, naming what failed
        _note(f"error: {type(e).__name__}: {e}".splitlines()[0])
        return 2
    print(json.dumps(result, indent=2) if args.json else _table(result))
    return 0 if result["agree"] else 1


if __name__ == "__main__":
    sys.exit(main())
