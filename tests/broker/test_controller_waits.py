"""How long a client waits on a broker whose controller side is slow, with real processes: three
controllers in a quorum and one broker. A leader paused with SIGSTOP (which keeps its TCP
connections open) holds up forwarded requests only for about the quorum's fetch timeout."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest

from rackwise.net import KafkaConnection
from rackwise.protocol import ApiKey
from tests.broker.test_broker_processes import BrokerProcess, alive_brokers, eventually, free_port
from tests.processes import ControllerProcess, controller_properties, run

CONTROLLER_IDS: Final = (3000, 3001, 3002)
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
