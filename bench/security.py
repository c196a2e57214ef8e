"""Security benchmark: what TLS and SASL cost a broker, against PLAINTEXT on the same broker in
the same run.

One controller and one broker (real processes on 127.0.0.1) whose broker has four listeners:
PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL (SCRAM-SHA-512 and PLAIN; the key store a PKCS12
one from the cluster's own CA, ECDSA P-256). ``bench`` is given a SCRAM-SHA-512 credential of
4096 iterations (Kafka's default) through AlterUserScramCredentials. Each round's topics are
deleted once it is over (``log.segment.delete.delay.ms=0``), after an untimed warm-up of the
same size, so that every run writes into page-cache pages the one before gave back rather
than into pages the machine has not touched lately, which cost several times as much.

Figures
  produce         MB/s of ``--records`` 1 KiB records from one confluent-kafka producer
                  (librdkafka, acks=1, linger.ms=5) over PLAINTEXT and over SASL_SSL
                  (SCRAM-SHA-512), alternating ``--rounds`` times; medians, and the median
                  of each round's ratio SASL_SSL / PLAINTEXT (goal: at least 0.6); the broker's
                  CPU seconds per 100 MB produced over each
  produce, whole  the same, from a client that writes each Produce request whole (as
  requests        kafka-python and aiokafka do: TLS records of 16 KiB): rackwise's own
                  connection sending one prebuilt Produce v9 request of ``--batch-records``
                  1 KiB records at a time, five in flight, acks=1, the same number of records
                  over each protocol; librdkafka instead writes each 1 KiB message as a TLS
                  record of its own, and the broker decrypts every record separately
  consume         MB/s of reading those records back from offset 0 with one confluent-kafka
                  consumer, the same alternation and ratio
  tls handshakes  completed TLS handshakes per second on the SSL listener from
                  ``--concurrency`` clients at once for ``--seconds``, beside TCP connections
                  per second on the PLAINTEXT listener (each answered an ApiVersions, so the
                  connection was accepted and served)
  scram logins    SaslHandshake and SaslAuthenticate to completion per second on the
                  SASL_PLAINTEXT listener (SCRAM-SHA-512, 4096 iterations: the client's own
                  PBKDF2 is in the figure too, as it is for a real client), beside PLAIN logins

    .venv/bin/python bench/security.py [--records 50000] [--rounds 3] [--seconds 5]
        [--concurrency 4] [--batch-records 256] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import uvloop
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    NewTopic,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from rackwise.cluster.certificates import ensure_ca, save_ca, write_node_keystore
from rackwise.formats.properties import format_properties
from rackwise.net import KafkaConnection, SaslLogin, set_login
from rackwise.net.sasl_client import clear_logins
from rackwise.node.process import parse_ready_line
from rackwise.protocol import ApiKey, make, request_class
from rackwise.storage.batch import build_batch

PASSWORD: Final = "bench-secret"
STORE_PASSWORD: Final = "store-pw"
RECORD: Final = b"x" * 1024
IN_FLIGHT: Final = 5
JAAS: Final = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    f'username="bench" password="{PASSWORD}" user_bench="{PASSWORD}";'
)


class Node:
    """A rackwise node process from a properties mapping, its listeners' ports once ready."""

    def __init__(self, role: str, directory: Path, props: Mapping[str, str]) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{role}.properties"
        path.write_text(format_properties(props), encoding="utf-8")
        self.stderr = (directory / "stderr.log").open("w", encoding="utf-8")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rackwise.cli.main", role, "start", "--config", str(path)],
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        assert self.proc.stdout is not None
        ready = parse_ready_line(self.proc.stdout.readline())
        if ready is None:
            self.proc.wait(timeout=30)
            raise SystemExit(f"{role} did not start: {(directory / 'stderr.log').read_text()}")
        self.ports = {e.listener_name: e.port for e in ready.listeners}
        self.directory = directory

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self.stderr.close()


def start(
    directory: Path, broker_overrides: Mapping[str, str] | None = None
) -> tuple[Node, Node, str]:
    """The controller and the broker (its properties with ``broker_overrides``); the CA's PEM
    path."""
    ca = ensure_ca(directory)
    save_ca(ca)
    keystore = directory / "broker.p12"
    write_node_keystore(ca, keystore, "broker-1", STORE_PASSWORD)
    controller = Node(
        "controller",
        directory / "controller",
        {
            "node.id": "3000",
            "process.roles": "controller",
            "listeners": "CONTROLLER://127.0.0.1:0",
            "controller.listener.names": "CONTROLLER",
            "controller.quorum.voters": "3000@127.0.0.1:0",
            "metadata.log.dir": str(directory / "controller" / "meta"),
        },
    )
    listeners = ",".join(
        f"{p}://127.0.0.1:0" for p in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
    )
    broker = Node(
        "broker",
        directory / "broker",
        {
            "node.id": "1",
            "process.roles": "broker",
            "listeners": listeners,
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,"
            "SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
            "controller.listener.names": "CONTROLLER",
            "controller.quorum.bootstrap.servers": f"127.0.0.1:{controller.ports['CONTROLLER']}",
            "log.dirs": str(directory / "broker" / "data"),
            "offsets.topic.replication.factor": "1",
            # a deleted topic's files go at once, so that the next run writes into the pages
            # they gave back rather than into pages the machine has not touched lately
            "log.segment.delete.delay.ms": "0",
            "sasl.enabled.mechanisms": "SCRAM-SHA-512,PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
            "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": str(keystore),
            "ssl.keystore.password": STORE_PASSWORD,
            "ssl.key.password": STORE_PASSWORD,
        }
        | dict(broker_overrides or {}),
    )
    return controller, broker, str(ca.pem_path)


def client_settings(broker: Node, ca: str, protocol: str) -> dict[str, Any]:
    settings: dict[str, Any] = {"bootstrap.servers": f"127.0.0.1:{broker.ports[protocol]}"}
    if protocol == "SASL_SSL":
        settings |= {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "bench",
            "sasl.password": PASSWORD,
            "ssl.ca.location": ca,
        }
    return settings


def prepare(broker: Node, topics: list[str]) -> None:
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{broker.ports['PLAINTEXT']}"})
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096)
    for future in admin.alter_user_scram_credentials(
        [UserScramCredentialUpsertion("bench", info, PASSWORD.encode())]
    ).values():
        future.result(timeout=30)
    for future in admin.create_topics([NewTopic(t, 1, 1) for t in topics]).values():
        future.result(timeout=30)


def delete(broker: Node, topics: list[str]) -> None:
    """Delete ``topics`` and wait until their files are gone from the broker's log directory."""
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{broker.ports['PLAINTEXT']}"})
    for future in admin.delete_topics(topics).values():
        future.result(timeout=30)
    data = broker.directory / "data"
    deadline = time.monotonic() + 60
    while left := sorted(p.name for t in topics for p in data.glob(f"{t}-*")):
        if time.monotonic() > deadline:
            raise SystemExit(f"{', '.join(left)} still in {data} 60 s after the deletion")
        time.sleep(0.05)


def produce_all(producer: Producer, topic: str, records: int) -> None:
    """``records`` 1 KiB records through ``producer``, waiting while its queue is full, all
    delivered."""
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, RECORD)
                break
            except BufferError:
                producer.poll(0.01)
    if producer.flush(120) != 0:
        raise SystemExit("records left unsent")


def produce_mb_s(settings: dict[str, Any], topic: str, records: int) -> float:
    producer = Producer({**settings, "acks": "1", "linger.ms": 5, "batch.size": 262_144})
    producer.produce(topic, RECORD)  # connected and logged in before the clock starts
    producer.flush(30)
    began = time.perf_counter()
    produce_all(producer, topic, records)
    return records * len(RECORD) / (time.perf_counter() - began) / 1e6


def produce_request(topic: str, records: int) -> Any:
    """A Produce v9 request (acks=1) of one batch of ``records`` 1 KiB records to partition 0."""
    batch = build_batch(
        [(None, RECORD, ()) for _ in range(records)], timestamp_ms=int(time.time() * 1000)
    )
    return make(
        request_class(ApiKey.PRODUCE, 9),
        {
            "transactional_id": None,
            "acks": 1,
            "timeout": 30_000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
        },
    )


async def _send_requests(
    port: int, ca: str, protocol: str, request: Any, requests: int
) -> tuple[float, int]:
    """Send ``request`` ``requests`` times, :data:`IN_FLIGHT` at a time; seconds taken and the
    first partition error code other than NONE (0 if none)."""
    context = None
    if protocol == "SASL_SSL":
        context = ssl.create_default_context(cafile=ca)
        set_login(SaslLogin("SCRAM-SHA-512", "bench", PASSWORD), ("127.0.0.1", port))
    try:
        conn = await KafkaConnection.connect("127.0.0.1", port, tls=context)
    finally:
        clear_logins()
    async with conn:
        await conn.negotiate_versions()
        await conn.send(request)  # connected and logged in before the clock starts
        left, error = requests, 0

        async def sender() -> None:
            nonlocal left, error
            while left > 0 and not error:
                left -= 1
                answer = await conn.send(request)
                error = error or int(answer.responses[0].partition_responses[0].error_code)

        began = time.perf_counter()
        await asyncio.gather(*(sender() for _ in range(IN_FLIGHT)))
        return time.perf_counter() - began, error


def produce_requests_mb_s(
    port: int, ca: str, protocol: str, topic: str, records: int, batch_records: int
) -> float:
    """MB/s of ``records`` 1 KiB records sent as whole Produce requests of ``batch_records``."""
    requests = max(1, records // batch_records)
    seconds, error = uvloop.run(
        _send_requests(port, ca, protocol, produce_request(topic, batch_records), requests)
    )
    if error:
        raise SystemExit(f"produce to {topic} over {protocol} answered error code {error}")
    return requests * batch_records * len(RECORD) / seconds / 1e6


def consume_mb_s(settings: dict[str, Any], topic: str, records: int) -> float:
    consumer = Consumer({**settings, "group.id": "bench", "enable.auto.commit": False,
                         "fetch.max.bytes": 52_428_800})  # fmt: skip
    consumer.assign([TopicPartition(topic, 0, 1)])  # offset 0 is the warm-up record
    seen, began = 0, None
    deadline = time.monotonic() + 120
    while seen < records and time.monotonic() < deadline:
        for message in consumer.consume(10_000, 1.0):
            if message.error() is None:
                began = began or time.perf_counter()
                seen += 1
    consumer.close()
    if seen < records or began is None:
        raise SystemExit(f"read {seen} of {records} records")
    return records * len(RECORD) / (time.perf_counter() - began) / 1e6


async def _per_second(connect: Any, seconds: float, concurrency: int) -> float:
    done = 0
    deadline = time.perf_counter() + seconds

    async def worker() -> None:
        nonlocal done
        while time.perf_counter() < deadline:
            await connect()
            done += 1

    began = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return done / (time.perf_counter() - began)


def handshakes(broker: Node, ca: str, seconds: float, concurrency: int) -> dict[str, float]:
    context = ssl.create_default_context(cafile=ca)

    async def tls() -> None:
        _, writer = await asyncio.open_connection("127.0.0.1", broker.ports["SSL"], ssl=context)
        writer.close()
        await writer.wait_closed()

    async def plaintext() -> None:
        conn = await KafkaConnection.connect("127.0.0.1", broker.ports["PLAINTEXT"], tls=None)
        async with conn:
            await conn.negotiate_versions()

    return {
        "tls_handshakes_per_s": asyncio.run(_per_second(tls, seconds, concurrency)),
        "plaintext_connections_per_s": asyncio.run(_per_second(plaintext, seconds, concurrency)),
    }


def logins(broker: Node, seconds: float, concurrency: int) -> dict[str, float]:
    port = broker.ports["SASL_PLAINTEXT"]

    async def login() -> None:
        async with await KafkaConnection.connect("127.0.0.1", port, tls=None):
            pass

    out = {}
    for mechanism, key in (
        ("SCRAM-SHA-512", "scram_logins_per_s"),
        ("PLAIN", "plain_logins_per_s"),
    ):
        set_login(SaslLogin(mechanism, "bench", PASSWORD), ("127.0.0.1", port))
        try:
            out[key] = asyncio.run(_per_second(login, seconds, concurrency))
        finally:
            clear_logins()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--batch-records", type=int, default=256)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-security-") as tmp:
        controller, broker, ca = start(Path(tmp))
        try:
            figures = run(broker, ca, args)
        finally:
            broker.stop()
            controller.stop()
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    for key, value in figures.items():
        print(f"{key:50} {value:10.2f}")


def cpu_s(pid: int) -> float:
    """User and system CPU seconds of process ``pid`` so far (Linux's /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(broker: Node, ca: str, args: argparse.Namespace) -> dict[str, float]:
    protocols = ("PLAINTEXT", "SASL_SSL")
    kinds = ("librdkafka", "requests")
    topics = {
        (k, p, r): f"bench-{k}-{p.lower()}-{r}"
        for k in kinds
        for p in protocols
        for r in range(args.rounds)
    }
    prepare(broker, [*topics.values(), "bench-warm-up"])
    # Untimed, the bytes of one protocol's round: each run then writes into pages the run
    # before it gave back.
    produce_requests_mb_s(
        broker.ports["PLAINTEXT"], ca, "PLAINTEXT", "bench-warm-up", 2 * args.records,
        args.batch_records,
    )  # fmt: skip
    delete(broker, ["bench-warm-up"])
    megabytes = args.records * len(RECORD) / 1e6
    runs: dict[str, dict[str, list[float]]] = {
        figure: {p: [] for p in protocols}
        for figure in ("produce", "produce_requests", "consume", "cpu", "cpu_requests")
    }
    for r in range(args.rounds):
        for protocol in protocols:
            settings = client_settings(broker, ca, protocol)
            topic = topics[("librdkafka", protocol, r)]
            before = cpu_s(broker.proc.pid)
            runs["produce"][protocol].append(produce_mb_s(settings, topic, args.records))
            runs["cpu"][protocol].append((cpu_s(broker.proc.pid) - before) / megabytes * 100)
            runs["consume"][protocol].append(consume_mb_s(settings, topic, args.records))
            before = cpu_s(broker.proc.pid)
            runs["produce_requests"][protocol].append(
                produce_requests_mb_s(
                    broker.ports[protocol],
                    ca,
                    protocol,
                    topics[("requests", protocol, r)],
                    args.records,
                    args.batch_records,
                )
            )
            runs["cpu_requests"][protocol].append(
                (cpu_s(broker.proc.pid) - before) / megabytes * 100
            )
            delete(broker, [topics[(k, protocol, r)] for k in kinds])
            print(f"round {r + 1}/{args.rounds} {protocol}: produce "
                  f"{runs['produce'][protocol][-1]:.1f} MB/s, consume "
                  f"{runs['consume'][protocol][-1]:.1f} MB/s, produce whole requests "
                  f"{runs['produce_requests'][protocol][-1]:.1f} MB/s",
                  file=sys.stderr, flush=True)  # fmt: skip
    figures = {}
    for name in ("produce", "consume", "produce_requests"):
        plain, secured = runs[name]["PLAINTEXT"], runs[name]["SASL_SSL"]
        figures[f"{name}_plaintext_mb_s"] = statistics.median(plain)
        figures[f"{name}_sasl_ssl_mb_s"] = statistics.median(secured)
        # each round's SASL_SSL run against the PLAINTEXT run just before it
        figures[f"{name}_ratio"] = statistics.median(
            s / p for s, p in zip(secured, plain, strict=True)
        )
    for protocol in protocols:
        figures[f"produce_broker_cpu_s_per_100mb_{protocol.lower()}"] = statistics.median(
            runs["cpu"][protocol]
        )
        figures[f"produce_requests_broker_cpu_s_per_100mb_{protocol.lower()}"] = statistics.median(
            runs["cpu_requests"][protocol]
        )
    figures |= handshakes(broker, ca, args.seconds, args.concurrency)
    figures |= logins(broker, args.seconds, args.concurrency)
    return figures


if __name__ == "__main__":
    main()
