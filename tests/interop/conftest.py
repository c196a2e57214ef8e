"""One cluster for the interoperability tests: ``rackwise cluster up`` starts a controller and
six brokers, three data centres of two racks each, placing with ``multi-level``, once per
session, and ``rackwise cluster down`` stops it at the end."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.command_line import rackwise

RACKS = ("/dc1/r1", "/dc1/r2", "/dc2/r1", "/dc2/r2", "/dc3/r1", "/dc3/r2")
T = TypeVar("T")


@dataclass(frozen=True)
class Cluster:
    """A running cluster: its directory, ``cluster.json``'s nodes, and the brokers' addresses."""

    dir: Path
    nodes: list[dict[str, object]]

    @property
    def brokers(self) -> list[dict[str, object]]:
        return [n for n in self.nodes if n["role"] == "broker"]

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{b['host']}:{b['port']}" for b in self.brokers)

    @property
    def racks(self) -> dict[int, str]:
        return {int(str(b["id"])): str(b["rack"]) for b in self.brokers}


def eventually(probe: Callable[[], T | None], timeout_s: float = 15.0) -> T:
    """``probe()``'s first answer that is not None or False: metadata reaches brokers a
    moment after the controller commits it."""
    deadline = time.monotonic() + timeout_s
    while True:
        answer = probe()
        if answer is not None and answer is not False:
            return answer
        if time.monotonic() > deadline:
            raise AssertionError(f"still {answer!r} after {timeout_s} s")
        time.sleep(0.1)


def create_topic(bootstrap: str, prefix: str, partitions: int, replication_factor: int) -> str:
    """A new topic named ``prefix-<random>``, returned once every partition has a leader."""
    topic = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    created = admin.create_topics([NewTopic(topic, partitions, replication_factor)])
    created[topic].result(30)

    def ready() -> bool:
        described = admin.list_topics(topic, timeout=10).topics[topic]
        return described.error is None and all(p.leader >= 0 for p in described.partitions.values())

    eventually(ready, 30)
    return topic


def produce_spread(bootstrap: str, topic: str, values: list[bytes], partitions: int) -> None:
    """``values`` written at acks=all, the i-th to partition ``i % partitions``."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i, value in enumerate(values):
        producer.produce(topic, value, partition=i % partitions)
    assert producer.flush(30) == 0


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    directory = tmp_path_factory.mktemp("cluster")
    up = rackwise(
        "cluster",
        "up",
        "--brokers",
        str(len(RACKS)),
        "--racks",
        ",".join(RACKS),
        "--placer",
        "multi-level",
        "--override",
        "replica.selector.class=multi-level",
        "--override",
        "log.cleaner.backoff.ms=500",
        "--dir",
        str(directory),
        "--json",
    )
    try:
        assert up.returncode == 0, up.stderr
        document = json.loads(up.stdout)
        assert document == json.loads((directory / "cluster.json").read_text())
        yield Cluster(directory, document["nodes"])
    finally:
        if (directory / "cluster.json").exists():
            down = rackwise("cluster", "down", "--dir", str(directory))
            assert down.returncode == 0, down.stderr
