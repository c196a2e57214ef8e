"""How each Kafka client cuts its produce requests into TLS records.

A TLS listener decrypts every record it receives on its own, so what TLS costs a broker per
megabyte depends on how large the clients' records are (``bench/tls_records.py`` measures
that cost per record). This runs three clients, one after the other, each producing
``--records`` 1 KiB records over a broker's SSL listener, through a relay in this process that
reads the TLS record headers the client sends and counts the application-data records:

  librdkafka     confluent-kafka's Producer, acks=1, linger.ms=5, batch.size=262144 (the
                 settings of ``bench/security.py``)
  kafka-python   KafkaProducer, acks=1, linger_ms=5, batch_size=262144
  aiokafka       AIOKafkaProducer, acks=1, linger_ms=5, max_batch_size=262144

For each: the application-data records, their mean size, the share under 2 KiB, and the
records per 100 MB sent. The broker advertises the relay as its SSL listener, so every
connection a client makes after its bootstrap passes through it too.

    .venv/bin/python bench/tls_client_records.py [--records 20000] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import ssl
import statistics
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from aiokafka import AIOKafkaProducer
from confluent_kafka import Producer
from kafka import KafkaProducer

from rackwise.cluster.processes import free_ports

sys.path.insert(0, str(Path(__file__).resolve().parent))

from security import RECORD, Node, prepare, produce_all, start

APPLICATION_DATA: Final = 23
HEADER: Final = 5
TOPIC: Final = "record-sizes"


class RecordCounter:
    """TLS records read off one direction of a connection, header by header."""

    def __init__(self) -> None:
        self.sizes: list[int] = []
        self._header = bytearray()
        self._left = 0

    def feed(self, chunk: bytes) -> None:
        at = 0
        while at < len(chunk):
            if self._left:
                step = min(self._left, len(chunk) - at)
                self._left -= step
                at += step
                continue
            need = HEADER - len(self._header)
            self._header += chunk[at : at + need]
            at += need
            if len(self._header) == HEADER:
                length = int.from_bytes(self._header[3:5], "big")
                if self._header[0] == APPLICATION_DATA:
                    self.sizes.append(length)
                self._left = length
                self._header.clear()


class Relay:
    """A TCP relay on a loop of its own, from ``listen`` to 127.0.0.1:``target``, counting the
    TLS records clients send through it."""

    def __init__(self, listen: int, target: int) -> None:
        self.counters: list[RecordCounter] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._connection, "127.0.0.1", listen), self._loop
        ).result(10)
        self._target = target

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self._target)
        counter = RecordCounter()
        self.counters.append(counter)

        async def pipe(
            source: asyncio.StreamReader, sink: asyncio.StreamWriter, seen: Callable[[bytes], None]
        ) -> None:
            try:
                while chunk := await source.read(1 << 16):
                    seen(chunk)
                    sink.write(chunk)
                    await sink.drain()
            finally:
                sink.close()

        await asyncio.gather(
            pipe(reader, up_writer, counter.feed),
            pipe(up_reader, writer, lambda _: None),
            return_exceptions=True,
        )

    def take(self) -> list[int]:
        """The record sizes counted since the last call."""
        sizes = [s for c in self.counters for s in c.sizes]
        for counter in self.counters:
            counter.sizes.clear()
        return sizes

    def close(self) -> None:
        async def shut() -> None:
            self._server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shut(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()


def librdkafka(address: str, ca: str, records: int) -> None:
    producer = Producer(
        {
            "bootstrap.servers": address,
            "security.protocol": "SSL",
            "ssl.ca.location": ca,
            "acks": "1",
            "linger.ms": 5,
            "batch.size": 262_144,
        }
    )
    produce_all(producer, TOPIC, records)


def kafka_python(address: str, ca: str, records: int) -> None:
    producer = KafkaProducer(
        bootstrap_servers=address,
        security_protocol="SSL",
        ssl_cafile=ca,
        acks=1,
        linger_ms=5,
        batch_size=262_144,
    )
    futures = [producer.send(TOPIC, RECORD) for _ in range(records)]
    producer.flush(120)
    for future in futures:
        future.get(timeout=60)
    producer.close()


def aiokafka(address: str, ca: str, records: int) -> None:
    async def run() -> None:
        producer = AIOKafkaProducer(
            bootstrap_servers=address,
            security_protocol="SSL",
            ssl_context=ssl.create_default_context(cafile=ca),
            acks=1,
            linger_ms=5,
            max_batch_size=262_144,
        )
        await producer.start()
        try:
            sent = [await producer.send(TOPIC, RECORD) for _ in range(records)]
            await asyncio.gather(*sent)
        finally:
            await producer.stop()

    asyncio.run(run())


CLIENTS: Final = {"librdkafka": librdkafka, "kafka-python": kafka_python, "aiokafka": aiokafka}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    plain, tls, relayed = free_ports(3)
    listeners = {
        "listeners": f"PLAINTEXT://127.0.0.1:{plain},SSL://127.0.0.1:{tls}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{plain},SSL://127.0.0.1:{relayed}",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL",
    }
    figures: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-tls-client-records-") as tmp:
        controller, broker = None, None
        relay = Relay(relayed, tls)
        try:
            controller, broker, ca = start(Path(tmp), listeners)
            prepare(broker, [TOPIC])
            for name, produce in CLIENTS.items():
                produce(f"127.0.0.1:{relayed}", ca, args.records)
                figures[name] = summary(relay.take(), args.records)
                print(f"{name}: {figures[name]['records']} TLS records", file=sys.stderr)
        finally:
            relay.close()
            for node in (broker, controller):
                if isinstance(node, Node):
                    node.stop()
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    print(f"{'client':14} {'TLS records':>12} {'mean bytes':>11} {'under 2 KiB':>12} "
          f"{'per 100 MB':>11}")  # fmt: skip
    for name, f in figures.items():
        print(f"{name:14} {f['records']:>12,} {f['mean_bytes']:>11,.0f} "
              f"{f['under_2kib_share']:>12.0%} {f['records_per_100mb']:>11,.0f}")  # fmt: skip


def summary(sizes: list[int], records: int) -> dict[str, Any]:
    """What the record sizes say, against the ``records`` 1 KiB records produced."""
    sent = sum(sizes)
    if sent < records * len(RECORD):
        raise SystemExit(f"only {sent} bytes went through the relay for {records} records")
    return {
        "records": len(sizes),
        "mean_bytes": statistics.fmean(sizes),
        "under_2kib_share": sum(1 for s in sizes if s < 2048) / len(sizes),
        "records_per_100mb": len(sizes) * 1e8 / sent,
    }


if __name__ == "__main__":
    main()
