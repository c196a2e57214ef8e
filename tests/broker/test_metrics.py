"""Every node's Prometheus metrics, scraped over HTTP from a running cluster: two data centres of
two racks (``/dc1/r1`` ... ``/dc2/r2``), the multi-level placer and replica selector, and
``metrics.http.port=0`` on every node. The test writes record batches of sizes it knows, reads
them with consumers in either data centre and in a third domain with no replica, and checks
every figure the nodes report against that traffic; then it scrapes hard, and with a scraper
that never finishes its request, while a broker is loaded, and ApiVersions stays prompt."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import re
import socket
import threading
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from prometheus_client.parser import text_string_to_metric_families

from rackwise.broker.metrics import BROKER
from rackwise.controller_node.metrics import CONTROLLER
from rackwise.net import KafkaConnection
from rackwise.node.metrics import COMMON, COUNTER
from rackwise.protocol import ApiKey
from rackwise.storage.batch import build_batch
from tests.broker.test_data_path_fairness import probe_in_own_process
from tests.command_line import rackwise
from tests.interop.conftest import eventually

pytestmark = pytest.mark.slow  # five processes

RACKS = ("/dc1/r1", "/dc1/r2", "/dc2/r1", "/dc2/r2")
TOPIC = "metered"
BATCHES = 12
SERVED = re.compile(r"metrics served on http://([\d.]+):(\d+)/metrics")

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


@dataclass(frozen=True)
class Node:
    id: int
    role: str
    rack: str | None
    port: int
    metrics_port: int

    def scrape(self) -> Samples:
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            text = response.read().decode()
        return {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
        }

    def families(self) -> set[str]:
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            text = response.read().decode()
        return set(re.findall(r"^# HELP (\S+)", text, re.MULTILINE))


@dataclass(frozen=True)
class Cluster:
    dir: Path
    nodes: list[Node]

    @property
    def brokers(self) -> list[Node]:
        return [n for n in self.nodes if n.role == "broker"]

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{b.port}" for b in self.brokers)

    def broker(self, broker_id: int) -> Node:
        return next(b for b in self.brokers if b.id == broker_id)


def _metrics_port(log: Path) -> int:
    match = SERVED.search(log.read_text("utf-8"))
    assert match, f"no metrics address in {log}"
    return int(match.group(2))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    directory = tmp_path_factory.mktemp("metrics") / "cluster"
    up = rackwise(
        "cluster", "up", "--dir", str(directory), "--brokers", "4", "--racks", ",".join(RACKS),
        "--placer", "multi-level", "--override", "replica.selector.class=multi-level",
        "--override", "metrics.http.port=0", "--json",
    )  # fmt: skip
    try:
        assert up.returncode == 0, up.stderr
        nodes = []
        for node in json.loads(up.stdout)["nodes"]:
            log = directory / f"{node['role']}-{node['id']}" / "server.log"
            nodes.append(
                Node(node["id"], node["role"], node["rack"], node["port"], _metrics_port(log))
            )
        yield Cluster(directory, nodes)
    finally:
        if (directory / "cluster.json").exists():
            down = rackwise("cluster", "down", "--dir", str(directory))
            assert down.returncode == 0, down.stderr


def produce(port: int, batches: list[bytes]) -> None:
    """One acks=all Produce per batch, to partition 0 of :data:`TOPIC`."""

    async def go() -> None:
        connection = await KafkaConnection.connect("127.0.0.1", port, timeout_s=10)
        try:
            await connection.negotiate_versions()
            for batch in batches:
                response = await connection.request(
                    ApiKey.PRODUCE,
                    version=9,
                    timeout_s=30,
                    transactional_id=None,
                    acks=-1,
                    timeout=30_000,
                    topic_data=[
                        {"name": TOPIC, "partition_data": [{"index": 0, "records": batch}]}
                    ],
                )
                code = int(response.responses[0].partition_responses[0].error_code)
                assert code == 0, code
        finally:
            await connection.close()

    asyncio.run(asyncio.wait_for(go(), 60))


def consume_all(bootstrap: str, rack: str, records: int) -> None:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"metered-{uuid.uuid4()}",
            "client.rack": rack,
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([KafkaTopicPartition(TOPIC, 0, 0)])
        got = 0
        deadline = time.monotonic() + 60
        while got < records and time.monotonic() < deadline:
            for message in consumer.consume(1000, 0.5):
                if message.error():
                    raise KafkaException(message.error())
                got += 1
        assert got == records
    finally:
        consumer.close()


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def total(scrapes: list[Samples], name: str, **labels: str) -> float:
    return sum(value(s, name, **labels) for s in scrapes)


def every(scrapes: list[Samples], name: str) -> float:
    """The sum of ``name`` over every label set and every scrape."""
    return sum(n for s in scrapes for (sample, _), n in s.items() if sample == name)


def test_figures_match_the_traffic_the_test_made(cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 2)])[TOPIC].result(30)

    def placed() -> list[int] | None:
        topic = admin.list_topics(topic=TOPIC, timeout=10).topics.get(TOPIC)
        if topic is None or topic.error is not None or not topic.partitions:
            return None
        partition = topic.partitions[0]
        if len(partition.isrs) < 2:
            return None
        return [partition.leader, *[r for r in partition.replicas if r != partition.leader]]

    leader_id, follower_id = eventually(placed, timeout_s=30)
    leader, follower = cluster.broker(leader_id), cluster.broker(follower_id)
    assert leader.rack is not None and follower.rack is not None
    leader_dc, follower_dc = leader.rack[:4], follower.rack[:4]
    assert leader_dc != follower_dc  # one replica in each data centre
    batches = [
        build_batch([(None, bytes([65 + i]) * (50 + i), ()) for _ in range(20)], timestamp_ms=0)
        for i in range(BATCHES)
    ]
    written = sum(len(b) for b in batches)
    produce(leader.port, batches)
    records = 20 * BATCHES
    # A consumer in each data centre (the follower's reads from it, KIP-392) and one in a domain
    # holding no replica, which the selector sends to the leader.
    other_rack = next(r for r in RACKS if r.startswith(follower_dc) and r != follower.rack)
    consume_all(cluster.bootstrap, other_rack, records)
    consume_all(cluster.bootstrap, leader.rack, records)
    consume_all(cluster.bootstrap, "/dc3/r1", records)

    def settled() -> list[Samples] | None:
        scrapes = [b.scrape() for b in cluster.brokers]
        replicated = total(
            scrapes,
            "rackwise_replication_bytes_total",
            source_domain=leader_dc,
            destination_domain=follower_dc,
        )
        return scrapes if replicated >= written else None

    scrapes = eventually(settled, timeout_s=20)
    by_id = {b.id: s for b, s in zip(cluster.brokers, scrapes, strict=True)}
    lead, follow = by_id[leader_id], by_id[follower_id]
    bytes_in = "kafka_server_brokertopicmetrics_bytesin_total"
    assert value(lead, bytes_in, topic=TOPIC) == written
    assert total(scrapes, bytes_in, topic=TOPIC) == written  # followers' appends do not count
    pair = {"source_domain": leader_dc, "destination_domain": follower_dc}
    assert value(lead, "rackwise_replication_bytes_total", **pair) == written
    assert every(scrapes, "rackwise_replication_bytes_total") == written
    assert value(lead, "kafka_server_brokertopicmetrics_replicationbytesout_total") == written
    bytes_out = "kafka_server_brokertopicmetrics_bytesout_total"
    assert value(follow, bytes_out, topic=TOPIC) == written
    assert value(lead, bytes_out, topic=TOPIC) == 2 * written
    consumer_bytes = "rackwise_consumer_bytes_total"
    expected = {
        (follower_id, follower_dc, follower_dc): written,
        (leader_id, leader_dc, leader_dc): written,
        (leader_id, "/dc3", leader_dc): written,
    }
    seen = {
        (b, dict(labels)["consumer_domain"], dict(labels)["replica_domain"]): n
        for b, samples in by_id.items()
        for (name, labels), n in samples.items()
        if name == consumer_bytes and n
    }
    assert seen == expected
    local = total(scrapes, "rackwise_consumer_local_bytes_total")
    assert local / every(scrapes, consumer_bytes) == pytest.approx(2 / 3)
    assert value(follow, "rackwise_consumer_local_bytes_ratio") == 1.0
    assert value(lead, "rackwise_consumer_local_bytes_ratio") == 0.5
    requests = "kafka_network_requestmetrics_requests_total"
    assert (
        sum(
            n
            for (name, labels), n in lead.items()
            if name == requests and ("request", "Produce") in labels
        )
        == BATCHES
    )
    assert (
        value(lead, "kafka_network_requestmetrics_totaltimems_count", request="Produce") == BATCHES
    )
    assert value(lead, "kafka_network_requestmetrics_totaltimems_sum", request="Produce") > 0
    assert value(follow, "kafka_network_requestmetrics_totaltimems_count", request="FetchConsumer")
    assert value(lead, "kafka_network_requestmetrics_totaltimems_count", request="FetchFollower")

    # The consumers' group lookups may have created __consumer_offsets meanwhile.
    def steady() -> tuple[list[Samples], list[Samples]] | None:
        scrapes = [b.scrape() for b in cluster.brokers]
        controllers = [n.scrape() for n in cluster.nodes if n.role == "controller"]
        if every(scrapes, "kafka_server_replicamanager_underreplicatedpartitions"):
            return None
        return scrapes, controllers

    scrapes, controllers = eventually(steady, timeout_s=30)
    partitions = total(controllers, "kafka_controller_kafkacontroller_globalpartitioncount")
    assert partitions >= 1
    assert every(scrapes, "kafka_server_replicamanager_leadercount") == partitions
    assert every(scrapes, "rackwise_partitions_under_min_insync_racks") == 0
    assert every(scrapes, "kafka_server_replicamanager_underminisrpartitioncount") == 0
    assert total(controllers, "kafka_controller_kafkacontroller_activecontrollercount") == 1
    assert total(controllers, "kafka_controller_kafkacontroller_offlinepartitionscount") == 0
    assert total(controllers, "kafka_controller_kafkacontroller_activebrokercount") == 4
    # Every connection to a PLAINTEXT listener is an authentication: the brokers' to the
    # controllers, the clients' and followers' to the brokers; none fails, none renews.
    authenticated = "kafka_server_socket_server_metrics_successful_authentication_total"
    assert every(controllers, authenticated) >= 4
    assert all(every([s], authenticated) >= 1 for s in scrapes)
    for name in ("failed_authentication_total", "successful_reauthentication_total"):
        assert every(scrapes + controllers, f"kafka_server_socket_server_metrics_{name}") == 0


def test_every_listed_family_is_exported(cluster: Cluster) -> None:
    for node in cluster.nodes:
        listed = {**COMMON, **(BROKER if node.role == "broker" else CONTROLLER)}
        # The exposition format heads a counter's family with its _total name.
        expected = {
            f"{name}_total" if spec.type == COUNTER else name for name, spec in listed.items()
        }
        names = node.families()
        assert expected <= names, expected - names


def _scrape_hard(nodes: list[Node], until: float, counts: list[int]) -> None:
    while time.monotonic() < until:
        for node in nodes:
            node.scrape()
            counts[0] += 1


def _leader_of_the_topic(cluster: Cluster) -> Node:
    """The broker leading partition 0 of :data:`TOPIC` (created by the first test, or here)."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 2)])

    def leader() -> int | None:
        topic = admin.list_topics(topic=TOPIC, timeout=10).topics.get(TOPIC)
        if topic is None or topic.error is not None or not topic.partitions:
            return None
        found = int(topic.partitions[0].leader)
        return found if found >= 0 else None

    return cluster.broker(eventually(leader, timeout_s=30))


def test_scraping_under_load_leaves_api_versions_prompt(cluster: Cluster) -> None:
    broker = _leader_of_the_topic(cluster)
    seconds = 5.0
    # A scraper that connects and never finishes its request holds only its own thread.
    stuck = socket.create_connection(("127.0.0.1", broker.metrics_port))
    stuck.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
    until = time.monotonic() + seconds
    counts = [0]
    scrapers = [
        threading.Thread(target=_scrape_hard, args=(cluster.nodes, until, counts), daemon=True)
        for _ in range(3)
    ]
    load = threading.Thread(
        target=produce,
        args=(broker.port, [build_batch([(None, b"x" * 512, ())] * 64, timestamp_ms=0)] * 200),
        daemon=True,
    )
    try:
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            probing = pool.apply_async(probe_in_own_process, (broker.port, seconds))
            for thread in scrapers:
                thread.start()
            load.start()
            latencies = sorted(probing.get(seconds + 30))
            for thread in scrapers:
                thread.join(30)
            load.join(60)
    finally:
        stuck.close()
    assert counts[0] > 20, counts  # the scraping was real
    p99 = latencies[min(int(0.99 * len(latencies)), len(latencies) - 1)]
    assert p99 < 0.100, f"ApiVersions p99 {p99 * 1000:.1f} ms while scraped"
    controllers = [n for n in cluster.nodes if n.role == "controller"]
    scrapes = [n.scrape() for n in controllers]
    assert total(scrapes, "kafka_controller_kafkacontroller_fencedbrokercount") == 0
    for node in controllers:
        log = (cluster.dir / f"controller-{node.id}" / "server.log").read_text("utf-8")
        assert not re.search(r"(?<!un)fenced broker \d", log)
