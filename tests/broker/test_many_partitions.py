"""A broker with 10,000 partitions under ``ulimit -n 1024``: started by ``rackwise cluster up``
with that limit, it takes a record in every partition, serves them all back, and does the same
after a ``kill -9`` and a restart under the same limit (recovery of 10,000 logs), never holding
more than 1024 descriptors."""

from __future__ import annotations

import json
import os
import re
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.command_line import rackwise

pytestmark = pytest.mark.slow  # 10,000 partitions created, written, read twice, recovered once

OPEN_FILES = 1024
TOPICS = ("many-a", "many-b")
PER_TOPIC = 5_000


def _up(directory: Path) -> dict[str, Any]:
    up = rackwise("cluster", "up", "--dir", str(directory), "--brokers", "1", "--json",
                  timeout=300, open_files=OPEN_FILES)  # fmt: skip
    assert up.returncode == 0, up.stderr
    (broker,) = [n for n in json.loads(up.stdout)["nodes"] if n["role"] == "broker"]
    return broker


def _descriptors(pid: int) -> tuple[int, int]:
    """The process's open descriptors and its soft limit on them."""
    limits = Path(f"/proc/{pid}/limits").read_text().splitlines()
    (line,) = [row for row in limits if row.startswith("Max open files")]
    return len(os.listdir(f"/proc/{pid}/fd")), int(line.split()[3])


def _read_all(bootstrap: str) -> dict[tuple[str, int], list[tuple[int, bytes | None]]]:
    """Every record of every partition, read from offset 0 by librdkafka."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "many-partitions",
            "enable.auto.commit": False,
            "auto.offset.reset": "error",
        }
    )
    consumer.assign([TopicPartition(t, p, 0) for t in TOPICS for p in range(PER_TOPIC)])
    got: dict[tuple[str, int], list[tuple[int, bytes | None]]] = {}
    deadline = time.monotonic() + 120
    read = 0
    while read < len(TOPICS) * PER_TOPIC and time.monotonic() < deadline:
        for message in consumer.consume(1000, 0.5):
            assert not message.error(), message.error()
            key = (message.topic(), message.partition())
            got.setdefault(key, []).append((message.offset(), message.value()))
            read += 1
    consumer.close()
    return got


def test_ten_thousand_partitions_within_1024_descriptors(tmp_path: Path) -> None:
    directory = tmp_path / "many"
    broker = _up(directory)
    bootstrap = f"{broker['host']}:{broker['port']}"
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for topic in TOPICS:
            admin.create_topics([NewTopic(topic, PER_TOPIC, 1)])[topic].result(120)
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50})
        for topic in TOPICS:
            for p in range(PER_TOPIC):
                producer.produce(topic, value=f"{topic}/{p}".encode(), partition=p)
            producer.poll(0)
        assert producer.flush(120) == 0
        del producer, admin  # closed now: their reconnects would only log through the restart
        expected = {(t, p): [(0, f"{t}/{p}".encode())] for t in TOPICS for p in range(PER_TOPIC)}
        assert _read_all(bootstrap) == expected
        opened, limit = _descriptors(int(broker["pid"]))
        assert limit == OPEN_FILES
        assert opened <= OPEN_FILES

        os.kill(int(broker["pid"]), signal.SIGKILL)
        restarted = _up(directory)
        assert restarted["pid"] != broker["pid"]
        log = (directory / "broker-1" / "server.log").read_text("utf-8")
        (loaded,) = re.findall(r"loaded (\d+) partition logs", log)[-1:]
        assert int(loaded) >= len(TOPICS) * PER_TOPIC  # and __consumer_offsets's
        assert _read_all(bootstrap) == expected
        opened, limit = _descriptors(int(restarted["pid"]))
        assert (limit, opened <= OPEN_FILES) == (OPEN_FILES, True)
    finally:
        rackwise("cluster", "down", "--dir", str(directory))
