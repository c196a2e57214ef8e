"""Offset commits of many groups on one ``__consumer_offsets`` partition wait for the in-sync
replicas together, with real processes: a controller and three brokers whose followers fetch
through relays in this process (the brokers' inter-broker listener is advertised at them) that
deliver each answer a leader sends :data:`ROUND_S` late, or hold the answers back. Ten
concurrent commits then take about one replication round, not ten; held back, every commit is
answered COORDINATOR_NOT_AVAILABLE at ``offsets.commit.timeout.ms``, however many wait, and
enters the coordinator's state once the followers have it, without the partition being loaded
again."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any, Final

import pytest

from rackwise.groups.offsets import partition_for
from rackwise.net import KafkaConnection
from rackwise.protocol import ApiKey
from tests.broker.test_broker_processes import (
    BrokerProcess,
    Cluster,
    broker_properties,
    call,
    eventually,
)
from tests.broker.test_faults_broker import create_topic
from tests.processes import free_ports

pytestmark = pytest.mark.slow

ROUND_S: Final = 0.25
"""How late each answer to a follower's fetch arrives: about one replication round."""
COMMIT_TIMEOUT_MS: Final = 1500
OFFSETS_PARTITIONS: Final = 3
COORDINATOR_NOT_AVAILABLE: Final = 15
TOPIC: Final = "events"
LOADED: Final = "__consumer_offsets-0: loaded the offsets"
"""The coordinator's log line for a load of the partition the groups here share."""


class SlowLinks:
    """TCP relays, on an event loop of their own, in front of each broker's replication
    listener: requests pass at once; answers arrive ``delay_s`` late, in order, and none while
    :meth:`hold` lasts."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s
        self.loop = asyncio.new_event_loop()
        self.flowing = asyncio.Event()
        self.flowing.set()
        self.servers: list[asyncio.Server] = []
        self.writers: list[asyncio.StreamWriter] = []
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def relay_to(self, port: int) -> int:
        """A relay's port, forwarding to ``port``."""

        async def serve() -> int:
            async def connection(
                reader: asyncio.StreamReader, writer: asyncio.StreamWriter
            ) -> None:
                up_reader, up_writer = await asyncio.open_connection("127.0.0.1", port)
                self.writers += [writer, up_writer]
                await asyncio.gather(
                    self._pipe(reader, up_writer, 0.0),
                    self._pipe(up_reader, writer, self.delay_s),
                    return_exceptions=True,
                )
                writer.close()
                up_writer.close()

            server = await asyncio.start_server(connection, "127.0.0.1", 0)
            self.servers.append(server)
            return int(server.sockets[0].getsockname()[1])

        return asyncio.run_coroutine_threadsafe(serve(), self.loop).result(10)

    async def _pipe(
        self, source: asyncio.StreamReader, sink: asyncio.StreamWriter, delay_s: float
    ) -> None:
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def deliver() -> None:
            while True:
                due, chunk = await queue.get()
                if not chunk:
                    sink.close()
                    return
                await asyncio.sleep(max(0.0, due - self.loop.time()))
                if delay_s:
                    await self.flowing.wait()
                sink.write(chunk)
                await sink.drain()

        delivery = asyncio.ensure_future(deliver())
        try:
            while chunk := await source.read(1 << 16):
                queue.put_nowait((self.loop.time() + delay_s, chunk))
        finally:
            queue.put_nowait((0.0, b""))
            await delivery

    def hold(self) -> None:
        self.loop.call_soon_threadsafe(self.flowing.clear)

    def release(self) -> None:
        self.loop.call_soon_threadsafe(self.flowing.set)

    def close(self) -> None:
        async def shut() -> None:
            for server in self.servers:
                server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for writer in self.writers:
                writer.close()
            await asyncio.sleep(0)  # the transports' own closing callbacks

        asyncio.run_coroutine_threadsafe(shut(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@pytest.fixture(scope="module")
def links() -> Iterator[SlowLinks]:
    relays = SlowLinks(ROUND_S)
    try:
        yield relays
    finally:
        relays.release()
        relays.close()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, links: SlowLinks) -> Iterator[Cluster]:
    running = Cluster(tmp_path_factory.mktemp("commit-waits"))
    for node_id, broker in list(running.brokers.items()):
        client, replication = free_ports(2)  # both bound at once: two distinct ports
        relay = links.relay_to(replication)
        extra = {
            "listeners": f"PLAINTEXT://127.0.0.1:{client},REPLICATION://127.0.0.1:{replication}",
            "advertised.listeners": (
                f"PLAINTEXT://127.0.0.1:{client},REPLICATION://127.0.0.1:{relay}"
            ),
            "listener.security.protocol.map": (
                "PLAINTEXT:PLAINTEXT,REPLICATION:PLAINTEXT,CONTROLLER:PLAINTEXT"
            ),
            "inter.broker.listener.name": "REPLICATION",
            "offsets.commit.timeout.ms": str(COMMIT_TIMEOUT_MS),
            "offsets.topic.num.partitions": str(OFFSETS_PARTITIONS),
        }
        props = broker_properties(broker.directory, node_id, running.controller_port, **extra)
        running.brokers[node_id] = BrokerProcess(broker.directory, props)
    try:
        running.start()
        create_topic(running.brokers[1].port, TOPIC, 1, 3)
        yield running
    finally:
        running.close()


def groups_on_one_partition(prefix: str, count: int) -> list[str]:
    """``count`` group ids whose ``__consumer_offsets`` partition is the same."""
    names = (f"{prefix}-{i}" for i in range(1000))
    return [n for n in names if partition_for(n, OFFSETS_PARTITIONS) == 0][:count]


def coordinator_port(cluster: Cluster, group: str) -> int:
    def ask() -> int | None:
        answer = call(
            cluster.brokers[1].port,
            ApiKey.FIND_COORDINATOR,
            key=group,
            key_type=0,
            coordinator_keys=[group],
        )
        found = answer.coordinators[0]
        return int(found.port) if int(found.error_code) == 0 else None

    return eventually(ask, timeout_s=60)


def _commit(group: str, offset: int) -> dict[str, Any]:
    return {
        "group_id": group,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "group_instance_id": None,
        "topics": [
            {
                "name": TOPIC,
                "partitions": [
                    {"partition_index": 0, "committed_offset": offset, "committed_metadata": ""}
                ],
            }
        ],
    }


def commit_together(port: int, groups: list[str], offset: int) -> list[tuple[int, float]]:
    """Each group's commit of ``offset``, sent at once on a connection of its own: (error
    code, seconds until answered)."""

    async def go() -> list[tuple[int, float]]:
        conns = [await KafkaConnection.connect("127.0.0.1", port, timeout_s=10) for _ in groups]
        try:
            for conn in conns:
                await conn.negotiate_versions()

            async def one(conn: KafkaConnection, group: str) -> tuple[int, float]:
                started = time.monotonic()
                answer = await conn.request(
                    ApiKey.OFFSET_COMMIT, timeout_s=30, **_commit(group, offset)
                )
                code = int(answer.topics[0].partitions[0].error_code)
                return code, time.monotonic() - started

            return list(
                await asyncio.gather(*(one(c, g) for c, g in zip(conns, groups, strict=True)))
            )
        finally:
            for conn in conns:
                await conn.close()

    return asyncio.run(asyncio.wait_for(go(), 60))


def loaded(port: int, group: str) -> None:
    """Once ``group``'s partition answers commits (loaded, its replicas fetching)."""
    eventually(lambda: commit_together(port, [group], 0)[0][0] == 0 or None, timeout_s=60)


def committed(port: int, groups: list[str]) -> dict[str, list[int]]:
    fetched = call(
        port,
        ApiKey.OFFSET_FETCH,
        groups=[{"group_id": g, "topics": None} for g in groups],
    )
    return {
        str(g.group_id): [int(p.committed_offset) for t in g.topics for p in t.partitions]
        for g in fetched.groups
    }


def test_commits_on_one_partition_wait_for_one_replication_round(cluster: Cluster) -> None:
    groups = groups_on_one_partition("readers", 10)
    port = coordinator_port(cluster, groups[0])
    loaded(port, groups[0])
    answers = commit_together(port, groups, 7)
    assert [code for code, _ in answers] == [0] * len(groups)
    # One commit at a time would take a round each (2.5 s); together, a round or two.
    slowest = max(seconds for _, seconds in answers)
    assert slowest < 6 * ROUND_S, answers
    assert committed(port, groups) == {g: [7] for g in groups}


def test_commits_are_answered_at_the_commit_timeout(cluster: Cluster, links: SlowLinks) -> None:
    groups = groups_on_one_partition("writers", 4)
    port = coordinator_port(cluster, groups[0])
    loaded(port, groups[0])
    (coordinator,) = [b for b in cluster.brokers.values() if b.port == port]
    loads = coordinator.stderr().count(LOADED)
    links.hold()
    try:
        answers = commit_together(port, groups, 9)
    finally:
        links.release()
    assert [code for code, _ in answers] == [COORDINATOR_NOT_AVAILABLE] * len(groups)
    timeout_s = COMMIT_TIMEOUT_MS / 1000
    # Each is answered at the timeout, not behind the ones before it (1.5 s, 3 s, 4.5 s, 6 s).
    assert all(timeout_s - 0.1 <= seconds < 2 * timeout_s for _, seconds in answers), answers
    # Replicated at last, the commits count: they are in the state the partition kept, as
    # Kafka commits a write whose answer timed out once the high watermark passes it.
    eventually(lambda: committed(port, groups) == {g: [9] for g in groups}, timeout_s=30)
    assert coordinator.stderr().count(LOADED) == loads
    loaded(port, groups[0])
