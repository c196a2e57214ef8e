"""Broker processes for real: a controller and three brokers started from ``.properties`` files
on free ports of 127.0.0.1, used through kafka-python's and librdkafka's admin clients."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Final, TypeVar

import pytest

from rackwise.net import KafkaConnection
from rackwise.node.process import parse_ready_line
from rackwise.node.properties_file import load_properties
from rackwise.protocol import ApiKey
from rackwise.records import parse_kafka_uuid
from tests.processes import ControllerProcess, controller_properties, free_port

T = TypeVar("T")
READY_TIMEOUT_S: Final = 60.0
SESSION_TIMEOUT_MS: Final = 2000
HEARTBEAT_INTERVAL_MS: Final = 250
RACKS: Final = {1: "/dc1/r1", 2: "/dc1/r2", 3: "/dc2/r1"}


def eventually(probe: Callable[[], T | None], timeout_s: float = 20.0, every_s: float = 0.05) -> T:
    deadline = time.monotonic() + timeout_s
    while True:
        answer = probe()
        if answer is not None and answer is not False:
            return answer
        if time.monotonic() > deadline:
            raise AssertionError(f"still {answer!r} after {timeout_s} s")
        time.sleep(every_s)


class BrokerProcess:
    """A broker process over ``directory`` (its config file and its log directories)."""

    def __init__(self, directory: Path, props: Mapping[str, str]) -> None:
        self.directory = directory
        self.node_id = int(props["node.id"])
        self.config_path = directory / "broker.properties"
        self.config_path.write_text("".join(f"{k}={v}\n" for k, v in props.items()), "utf-8")
        self.stderr_path = directory / "stderr.log"
        self.proc: subprocess.Popen[str] | None = None
        self.port = -1

    def launch(self) -> None:
        with self.stderr_path.open("a", encoding="utf-8") as stderr:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "rackwise.cli.main",
                    "broker",
                    "start",
                    "--config",
                    str(self.config_path),
                ],
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )

    def wait_ready(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        line = self.proc.stdout.readline()
        ready = parse_ready_line(line)
        if ready is None:
            code = self.proc.wait(timeout=READY_TIMEOUT_S)
            raise AssertionError(f"broker exited with {code}: {line!r}\n{self.stderr()}")
        assert ready.role == "broker" and ready.node_id == self.node_id
        self.port = ready.listeners[0].port

    def start(self) -> None:
        self.launch()
        self.wait_ready()

    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8")

    def stop(self, signum: int = signal.SIGTERM, timeout_s: float = 20.0) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signum)
        code = self.proc.wait(timeout=timeout_s)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self.proc = None
        return code

    def close(self) -> None:
        if self.proc is not None:
            self.stop(signal.SIGKILL)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"


def broker_properties(
    directory: Path, node_id: int, controller_port: int, **extra: str
) -> dict[str, str]:
    props = {
        "node.id": str(node_id),
        "process.roles": "broker",
        "listeners": f"PLAINTEXT://127.0.0.1:{free_port()}",
        "controller.listener.names": "CONTROLLER",
        "controller.quorum.bootstrap.servers": f"127.0.0.1:{controller_port}",
        "log.dirs": f"{directory / 'data-a'},{directory / 'data-b'}",
        "broker.rack": RACKS[node_id],
        "broker.session.timeout.ms": str(SESSION_TIMEOUT_MS),
        "broker.heartbeat.interval.ms": str(HEARTBEAT_INTERVAL_MS),
    }
    props.update(extra)
    return props


class Cluster:
    """A controller on a fixed port and brokers 1-3; every process is stopped at the end."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.controller_port = free_port()
        cdir = directory / "controller"
        cdir.mkdir(parents=True)
        props = controller_properties(
            cdir,
            node_id=3000,
            listeners=f"CONTROLLER://127.0.0.1:{self.controller_port}",
            controller_quorum_voters=f"3000@127.0.0.1:{self.controller_port}",
            broker_session_timeout_ms=SESSION_TIMEOUT_MS,
            broker_heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
        )
        self.controller = ControllerProcess(cdir, props)
        self.brokers: dict[int, BrokerProcess] = {}
        for node_id in RACKS:
            bdir = directory / f"broker-{node_id}"
            bdir.mkdir()
            self.brokers[node_id] = BrokerProcess(
                bdir, broker_properties(bdir, node_id, self.controller_port)
            )

    def start(self, *, controller_first: bool = True) -> None:
        if controller_first:
            self.controller.start()
        for broker in self.brokers.values():
            broker.launch()
        if not controller_first:
            time.sleep(1.0)  # the brokers retry against a closed port meanwhile
            self.controller.start()
        for broker in self.brokers.values():
            broker.wait_ready()
        # A broker's ready line comes once its listeners are bound, which may be before the
        # controller has registered it: a topic created at once could find too few brokers.
        port = next(iter(self.brokers.values())).port
        everyone = sorted(self.brokers)
        eventually(lambda: sorted(alive_brokers(port)) == everyone or None, timeout_s=30)

    @property
    def bootstrap(self) -> str:
        return ",".join(b.address for b in self.brokers.values() if b.proc is not None)

    def close(self) -> None:
        for broker in self.brokers.values():
            broker.close()
        self.controller.close()


def call(port: int, api_key: int, **fields: Any) -> Any:
    """One request to a broker over a fresh connection, answered within 30 s."""

    async def go() -> Any:
        conn = await KafkaConnection.connect("127.0.0.1", port, timeout_s=10)
        try:
            await conn.negotiate_versions()
            return await conn.request(api_key, timeout_s=30, **fields)
        finally:
            await conn.close()

    return asyncio.run(asyncio.wait_for(go(), 40))


def alive_brokers(port: int) -> list[int]:
    response = call(
        port,
        ApiKey.DESCRIBE_CLUSTER,
        include_cluster_authorized_operations=False,
        endpoint_type=1,
        include_fenced_brokers=False,
    )
    return [int(b.broker_id) for b in response.brokers]


def topic_metadata(port: int, name: str) -> Any:
    response = call(
        port,
        ApiKey.METADATA,
        topics=[{"name": name, "topic_id": None}],
        allow_auto_topic_creation=False,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )
    (topic,) = response.topics
    return topic


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = Cluster(tmp_path_factory.mktemp("brokers"))
    try:
        running.start()
        yield running
    finally:
        running.close()


def test_brokers_register_with_racks_and_are_unfenced(cluster: Cluster) -> None:
    from kafka.admin import KafkaAdminClient

    port = cluster.brokers[2].port
    assert eventually(lambda: alive_brokers(port) == [1, 2, 3])
    admin = KafkaAdminClient(bootstrap_servers=cluster.brokers[1].address, request_timeout_ms=30000)
    try:
        described = admin.describe_cluster()
    finally:
        admin.close()
    assert {b["broker_id"]: b["rack"] for b in described["brokers"]} == RACKS
    assert {b["port"] for b in described["brokers"]} == {b.port for b in cluster.brokers.values()}
    assert described["controller_id"] in RACKS  # brokers name themselves: they forward
    assert described["cluster_id"]  # librdkafka fails on a null one
    ids = {
        call(
            b.port,
            ApiKey.METADATA,
            topics=[],
            allow_auto_topic_creation=False,
            include_cluster_authorized_operations=False,
            include_topic_authorized_operations=False,
        ).cluster_id
        for b in cluster.brokers.values()
    }
    assert len(ids) == 1 and None not in ids
    for broker in cluster.brokers.values():  # logged once, as its heartbeat answers change
        assert broker.stderr().count(f"broker {broker.node_id} unfenced by the controller") == 1


def registrations(cluster: Cluster) -> dict[int, dict[str, Any]]:
    """The brokers as the controller's metadata image holds them, by id (``metadata dump``)."""
    dump = subprocess.run(
        [
            sys.executable,
            "-m",
            "rackwise.cli.main",
            "metadata",
            "dump",
            "--dir",
            str(cluster.controller.metadata_dir),
            "--section",
            "image",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return {b["broker_id"]: b for b in json.loads(dump.stdout)["image"]["brokers"]}


def test_log_directories_carry_meta_properties_as_registered(cluster: Cluster) -> None:
    registered = registrations(cluster)
    for node_id, broker in cluster.brokers.items():
        ids = []
        for name in ("data-a", "data-b"):
            meta = load_properties(broker.directory / name / "meta.properties")
            assert (meta["version"], meta["node.id"]) == ("1", str(node_id))
            ids.append(meta["directory.id"])
        assert len(set(ids)) == 2
        assert sorted(parse_kafka_uuid(i) for i in registered[node_id]["log_dirs"]) == sorted(
            parse_kafka_uuid(i) for i in ids
        )
        assert registered[node_id]["rack"] == RACKS[node_id]


def test_kafka_python_admin_writes_are_forwarded(cluster: Cluster) -> None:
    from kafka.admin import KafkaAdminClient, NewPartitions, NewTopic
    from kafka.errors import TopicAlreadyExistsError

    admin = KafkaAdminClient(bootstrap_servers=cluster.brokers[3].address, request_timeout_ms=30000)

    def partition_count(name: str) -> int:
        return len(admin.describe_topics([name])[0]["partitions"])

    try:
        admin.create_topics(
            [
                NewTopic("orders", 6, 3),
                NewTopic("pinned", replica_assignments={0: [3, 1], 1: [2, 3]}),
            ]
        )
        # kafka-python reads from any broker: the others learn of a write a moment later.
        for broker in cluster.brokers.values():
            eventually(lambda b=broker: int(topic_metadata(b.port, "pinned").error_code) == 0, 5)
        described = {t["name"]: t for t in admin.describe_topics(["orders", "pinned"])}
        orders = described["orders"]["partitions"]
        assert len(orders) == 6
        assert all(sorted(p["replica_nodes"]) == [1, 2, 3] for p in orders)
        assert all(p["leader_id"] == p["replica_nodes"][0] for p in orders)
        pinned = sorted(described["pinned"]["partitions"], key=lambda p: p["partition_index"])
        assert [p["replica_nodes"] for p in pinned] == [[3, 1], [2, 3]]
        with pytest.raises(TopicAlreadyExistsError):
            admin.create_topics([NewTopic("orders", 1, 1)], raise_errors=True)
        admin.create_partitions({"orders": NewPartitions(8)})
        assert eventually(lambda: partition_count("orders") == 8, 5)
        admin.delete_topics(["pinned"])
        assert eventually(lambda: "pinned" not in admin.list_topics(), 5)
    finally:
        admin.close()


def test_a_write_is_visible_at_once_on_the_broker_that_forwarded_it(cluster: Cluster) -> None:
    for node_id, broker in cluster.brokers.items():
        name = f"now-{node_id}"
        created = call(
            broker.port,
            ApiKey.CREATE_TOPICS,
            topics=[
                {
                    "name": name,
                    "num_partitions": 2,
                    "replication_factor": 2,
                    "assignments": [],
                    "configs": [],
                }
            ],
            timeout=30000,
            validate_only=False,
        )
        assert int(created.topics[0].error_code) == 0
        assert len(topic_metadata(broker.port, name).partitions) == 2
        grown = call(
            broker.port,
            ApiKey.CREATE_PARTITIONS,
            topics=[{"name": name, "count": 5, "assignments": None}],
            timeout=30000,
            validate_only=False,
        )
        assert int(grown.results[0].error_code) == 0
        assert len(topic_metadata(broker.port, name).partitions) == 5
        deleted = call(
            broker.port,
            ApiKey.DELETE_TOPICS,
            topics=[{"name": name, "topic_id": None}],
            topic_names=[name],
            timeout=30000,
        )
        assert int(deleted.responses[0].error_code) == 0
        assert int(topic_metadata(broker.port, name).error_code) == 3


def test_describe_configs_from_a_broker(cluster: Cluster) -> None:
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=cluster.brokers[1].address, request_timeout_ms=30000)
    try:
        admin.create_topics(
            [NewTopic("compact", 1, 1, topic_configs={"cleanup.policy": "compact"})]
        )
        topic = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "compact")])
        policy = topic["topic"]["compact"]["cleanup.policy"]
        assert (policy["value"], policy["config_source"]) == ("compact", "DYNAMIC_TOPIC_CONFIG")
    finally:
        admin.close()
    response = call(
        cluster.brokers[2].port,
        ApiKey.DESCRIBE_CONFIGS,
        resources=[
            {"resource_type": 4, "resource_name": "2", "configuration_keys": ["broker.rack"]}
        ],
        include_synonyms=False,
        include_documentation=False,
    )
    (entry,) = response.results[0].configs
    assert (entry.name, entry.value, entry.config_source) == ("broker.rack", "/dc1/r2", 4)


def test_librdkafka_describes_the_cluster(cluster: Cluster) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    described = admin.describe_cluster(request_timeout=30).result()
    assert described.cluster_id
    assert {n.id: n.rack for n in described.nodes} == RACKS


def test_a_restarted_broker_starts_from_the_controllers_snapshot(tmp_path: Path) -> None:
    """The log's first segments are gone once a snapshot covers them: a broker restarting
    (its image is in memory only) loads the snapshot (FetchMetadataSnapshot), then follows
    the log after it."""
    cdir = tmp_path / "controller"
    cdir.mkdir()
    controller = ControllerProcess(
        cdir,
        controller_properties(
            cdir,
            node_id=3000,
            metadata_log_max_record_bytes_between_snapshots=2048,
            metadata_log_segment_bytes=1024,
            broker_session_timeout_ms=SESSION_TIMEOUT_MS,
            broker_heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
        ),
    )
    bdir = tmp_path / "broker-1"
    bdir.mkdir()
    try:
        controller.start()
        broker = BrokerProcess(bdir, broker_properties(bdir, 1, controller.port))
        try:
            broker.start()
            assert alive_brokers(broker.port) == [1]
            for i in range(20):
                response = call(
                    broker.port,
                    ApiKey.CREATE_TOPICS,
                    topics=[
                        {
                            "name": f"early-{i}",
                            "num_partitions": 1,
                            "replication_factor": 1,
                            "assignments": [],
                            "configs": [],
                        }
                    ],
                    timeout=30000,
                    validate_only=False,
                )
                assert int(response.topics[0].error_code) == 0, response
            assert "loaded metadata snapshot" not in broker.stderr()
            assert broker.stop() == 0
            broker.start()
            assert alive_brokers(broker.port) == [1]
            assert "loaded metadata snapshot" in broker.stderr()
            metadata = call(
                broker.port,
                ApiKey.METADATA,
                topics=None,
                allow_auto_topic_creation=False,
                include_cluster_authorized_operations=False,
                include_topic_authorized_operations=False,
            )
            assert {t.name for t in metadata.topics} == {f"early-{i}" for i in range(20)}
        finally:
            broker.close()
    finally:
        controller.close()
