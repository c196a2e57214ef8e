"""A stretch cluster loses a whole data centre: 3 data centres x 2 racks, one controller in each
(a quorum of 3), a topic at RF 3 across the data centres with ``min.insync.replicas=2``, an
idempotent acks=all producer and a consumer running. Every process of one data centre is killed
at once (SIGKILL): the cluster keeps accepting topics and records, no acknowledged record is
lost, and when the data centre comes back its brokers and controller catch up and its replicas
rejoin the ISRs."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.broker.test_jbod import Ledger, Writer, read_back
from tests.interop.conftest import eventually, rackwise

pytestmark = pytest.mark.slow  # nine processes, a data centre killed and brought back

RACKS = ("/dc1/r1", "/dc1/r2", "/dc2/r1", "/dc2/r2", "/dc3/r1", "/dc3/r2")
TOPIC = "stretch"


class Reader(threading.Thread):
    """A librdkafka consumer reading the topic all along (it must keep working)."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__(daemon=True)
        self.stop_event = threading.Event()
        self.read = 0
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "stretch-reader",
                "enable.auto.commit": False,
            }
        )
        self.consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(3)])

    def run(self) -> None:
        while not self.stop_event.is_set():
            message = self.consumer.poll(0.2)
            if message is not None and not message.error():
                self.read += 1
        self.consumer.close()


def _isrs(admin: AdminClient) -> dict[int, list[int]]:
    topic = admin.list_topics(TOPIC, timeout=10).topics[TOPIC]
    return {p: sorted(m.isrs) for p, m in topic.partitions.items()}


def test_a_stretch_cluster_survives_the_loss_of_a_data_centre(tmp_path: Path) -> None:
    directory = tmp_path / "stretch"
    up = rackwise(
        "cluster", "up", "--dir", str(directory), "--brokers", "6", "--racks", ",".join(RACKS),
        "--controllers", "3", "--placer", "multi-level", "--json",
    )  # fmt: skip
    assert up.returncode == 0, up.stderr
    nodes: list[dict[str, Any]] = json.loads(up.stdout)["nodes"]
    brokers = [n for n in nodes if n["role"] == "broker"]
    survivors = ",".join(f"{b['host']}:{b['port']}" for b in brokers if b["rack"][:4] != "/dc1")
    everyone = ",".join(f"{b['host']}:{b['port']}" for b in brokers)
    try:
        admin = AdminClient({"bootstrap.servers": everyone})
        admin.create_topics([NewTopic(TOPIC, 3, 3, config={"min.insync.replicas": "2"})])[
            TOPIC
        ].result(30)
        eventually(lambda: all(len(isr) == 3 for isr in _isrs(admin).values()), 30)
        ledger = Ledger()
        writer = Writer(everyone, [(TOPIC, 3)], ledger, timeout_ms=120_000)
        reader = Reader(everyone)
        writer.start()
        reader.start()
        time.sleep(3)
        # Every process of data centre 1 at once: its controller and both its brokers.
        doomed = [n for n in nodes if str(n["rack"]).startswith("/dc1")]
        assert {n["role"] for n in doomed} == {"controller", "broker"}
        for node in doomed:
            os.kill(int(node["pid"]), signal.SIGKILL)
        lost_at = time.monotonic()
        acked_at_loss = len(ledger.acked)
        survivor_admin = AdminClient({"bootstrap.servers": survivors})

        def new_topic_accepted() -> bool:
            futures = survivor_admin.create_topics([NewTopic("after-loss", 1, 2)])
            try:
                futures["after-loss"].result(10)
            except Exception as e:
                return "already exists" in str(e).lower()
            return True

        eventually(new_topic_accepted, 60)
        eventually(lambda: len(ledger.acked) > acked_at_loss + 200, 60)  # records still taken
        took = time.monotonic() - lost_at
        assert took < 60, took
        again = rackwise("cluster", "up", "--dir", str(directory))
        assert again.returncode == 0, again.stderr
        eventually(lambda: all(len(isr) == 3 for isr in _isrs(admin).values()), 90)
        status = rackwise("metadata-quorum", "--bootstrap-server", survivors.split(",")[0],
                          "describe", "--replication")  # fmt: skip
        assert status.returncode == 0, status.stderr
        assert "3000" in status.stdout
        writer.stop_event.set()
        writer.join(150)
        reader.stop_event.set()
        reader.join(30)
        assert reader.read > 0
        assert ledger.errors == []
        got = read_back(everyone, TOPIC, 3)
        acked = ledger.placed(got)
        missing = {k for k in acked if k not in got}
        assert not missing, f"{len(missing)} acknowledged records lost, e.g. {sorted(missing)[:3]}"
        assert {k: got[k] for k in acked} == acked
    finally:
        rackwise("cluster", "down", "--dir", str(directory))
