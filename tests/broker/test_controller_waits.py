"""How long a client waits on a broker, with real processes: three controllers in a quorum and
one broker. A huge CreateTopics leaves the broker's other connections answered within tens of
milliseconds; a leader paused with SIGSTOP (which keeps its TCP connections open) holds up
forwarded requests only for about the quorum's fetch timeout."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest

from rackwise.net import KafkaConnection
from rackwise.protocol import ApiKey, decode_response, encode_request, make, request_class
from tests.broker.test_broker_processes import BrokerProcess, alive_brokers, eventually, free_port
from tests.processes import ControllerProcess, controller_properties, run

CONTROLLER_IDS: Final = (3000, 3001, 3002)
POLICY_VIOLATION: Final = 44
HUGE_TOPICS: Final = 40_000
"""Topics of the huge CreateTopics: about 0.9 MB, seconds of decoding and encoding."""
FETCH_TIMEOUT_MS: Final = 2000
"""``controller.quorum.fetch.timeout.ms`` of every node (Kafka's default)."""
METADATA_PARTITION: Final = [
    {"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}
]


class Quorum:
    """Three controllers on fixed ports and broker 1, which knows them all."""

    def __init__(self, directory: Path) -> None:
        ports = {node_id: free_port() for node_id in CONTROLLER_IDS}
        voters = ",".join(f"{i}@127.0.0.1:{p}" for i, p in ports.items())
        self.controllers: dict[int, ControllerProcess] = {}
        for node_id, port in ports.items():
            cdir = directory / f"controller-{node_id}"
            cdir.mkdir(parents=True)
            props = controller_properties(
                cdir,
                node_id=node_id,
                listeners=f"CONTROLLER://127.0.0.1:{port}",
                controller_quorum_voters=voters,
                controller_quorum_fetch_timeout_ms=FETCH_TIMEOUT_MS,
            )
            self.controllers[node_id] = ControllerProcess(cdir, props)
        bdir = directory / "broker-1"
        bdir.mkdir()
        self.broker = BrokerProcess(
            bdir,
            {
                "node.id": "1",
                "process.roles": "broker",
                "listeners": f"PLAINTEXT://127.0.0.1:{free_port()}",
                "controller.listener.names": "CONTROLLER",
                "controller.quorum.bootstrap.servers": ",".join(
                    f"127.0.0.1:{p}" for p in ports.values()
                ),
                "controller.quorum.fetch.timeout.ms": str(FETCH_TIMEOUT_MS),
                "log.dirs": str(bdir / "data"),
                "broker.session.timeout.ms": "9000",
                "broker.heartbeat.interval.ms": "500",
            },
        )

    def start(self) -> None:
        for controller in self.controllers.values():
            controller.start()
        self.broker.start()
        eventually(lambda: alive_brokers(self.broker.port) == [1] or None, timeout_s=30)

    def close(self) -> None:
        for controller in self.controllers.values():
            if controller.proc is not None:
                controller.proc.send_signal(signal.SIGCONT)
        self.broker.close()
        for controller in self.controllers.values():
            controller.close()


@pytest.fixture(scope="module")
def quorum(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Quorum]:
    cluster = Quorum(tmp_path_factory.mktemp("quorum"))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.close()


async def describe_quorum(conn: KafkaConnection) -> Any:
    response = await conn.request(ApiKey.DESCRIBE_QUORUM, version=2, topics=METADATA_PARTITION)
    return response.topics[0].partitions[0]


async def create_topic(conn: KafkaConnection, name: str, timeout_ms: int = 30_000) -> Any:
    response = await conn.request(
        ApiKey.CREATE_TOPICS,
        topics=[
            {
                "name": name,
                "num_partitions": 1,
                "replication_factor": 1,
                "assignments": [],
                "configs": [],
            }
        ],
        timeout_ms=timeout_ms,
        validate_only=False,
    )
    return response.topics[0]


async def timed(call: Any) -> tuple[float, Any]:
    started = time.monotonic()
    answer = await call
    return time.monotonic() - started, answer


async def api_versions_while(conn: KafkaConnection, busy: asyncio.Future[Any]) -> list[float]:
    """How long each ApiVersions on ``conn`` took until ``busy`` is done."""
    latencies = []
    while not busy.done():
        started = time.monotonic()
        await conn.request(ApiKey.API_VERSIONS, version=0)
        latencies.append(time.monotonic() - started)
        await asyncio.sleep(0.01)
    return latencies


def huge_create_topics_frame() -> bytes:
    """A CreateTopics v5 (the broker converts it to the controller's v7) of
    :data:`HUGE_TOPICS` topics, validate only, as a frame."""
    topics = [
        {"name": f"t{i:06d}", "num_partitions": 1, "replication_factor": 1,
         "assignments": [], "configs": []}
        for i in range(HUGE_TOPICS)
    ]  # fmt: skip
    cls = request_class(ApiKey.CREATE_TOPICS, 5)
    return encode_request(make(cls, topics=topics, timeout_ms=30_000, validate_only=True), 7)


async def huge_request(quorum: Quorum) -> None:
    frame = await asyncio.to_thread(huge_create_topics_frame)
    small = await KafkaConnection.connect("127.0.0.1", quorum.broker.port)
    reader, writer = await asyncio.open_connection("127.0.0.1", quorum.broker.port)
    try:
        await small.negotiate_versions()
        started = time.monotonic()
        writer.write(frame)

        async def answer() -> bytes:
            size = int.from_bytes(await reader.readexactly(4), "big")
            return await reader.readexactly(size)

        answered = asyncio.ensure_future(answer())
        latencies = await api_versions_while(small, answered)
        elapsed = time.monotonic() - started
        data = await answered
    finally:
        writer.close()
        await small.close()
    response = await asyncio.to_thread(decode_response, data, ApiKey.CREATE_TOPICS, 5, 7)
    assert len(response.topics) == HUGE_TOPICS
    # Over 10,000 partitions in one request: Kafka's POLICY_VIOLATION for every topic.
    assert {int(t.error_code) for t in response.topics} == {POLICY_VIOLATION}
    assert elapsed < 30, f"the huge CreateTopics took {elapsed:.1f} s"
    assert len(latencies) > 10
    assert max(latencies) < 0.2, f"ApiVersions took {max(latencies) * 1000:.0f} ms at worst"


@pytest.mark.slow(reason="a CreateTopics of 40,000 topics through a broker: about 10 s")
def test_a_huge_request_leaves_other_connections_answered(quorum: Quorum) -> None:
    run(huge_request(quorum), 60)


async def pause_the_leader(quorum: Quorum) -> None:
    conn = await KafkaConnection.connect("127.0.0.1", quorum.broker.port, request_timeout_s=60)
    await conn.negotiate_versions()
    try:
        part = await describe_quorum(conn)
        assert int(part.error_code) == 0
        leader = int(part.leader_id)
        assert int((await create_topic(conn, "before")).error_code) == 0
        paused = quorum.controllers[leader].proc
        assert paused is not None
        paused.send_signal(signal.SIGSTOP)
        try:
            (created_s, created), (described_s, described) = await asyncio.gather(
                timed(create_topic(conn, "while-paused")), timed(describe_quorum(conn))
            )
            # Still paused, a new leader elected: the broker asks it alone.
            again_s, again = await timed(create_topic(conn, "later"))
            described_again_s, _ = await timed(describe_quorum(conn))
        finally:
            paused.send_signal(signal.SIGCONT)
    finally:
        await conn.close()
    # An election takes the fetch timeout and an election timeout (1 s) or two; the broker
    # notices the paused leader within its fetch timeout and asks the others who leads.
    assert int(created.error_code) == 0, created
    assert created_s < 8.0, f"CreateTopics took {created_s:.1f} s"
    assert int(described.error_code) == 0, described
    assert int(described.leader_id) != leader
    assert described_s < 8.0, f"DescribeQuorum took {described_s:.1f} s"
    assert int(again.error_code) == 0, again
    assert again_s < 2.0 and described_again_s < 2.0, (again_s, described_again_s)


@pytest.mark.slow(reason="three controllers and a broker, a leader paused: about 15 s")
def test_a_paused_leader_holds_forwarded_requests_for_about_the_fetch_timeout(
    quorum: Quorum,
) -> None:
    run(pause_the_leader(quorum), 60)
