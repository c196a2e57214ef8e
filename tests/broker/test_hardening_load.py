"""Load from clients never fences a broker, with real processes on 127.0.0.1: connections that
pipeline small Metadata requests as fast as a broker answers them leave it unfenced and
answering ApiVersions on a fresh connection within 100 ms (p99); requests that would cost more
than their size allows are refused or answered cheaply (CreateTopics over 10,000 partitions,
DescribeConfigs naming one resource 40,000 times); a controller busy with large requests
keeps every broker's lease; and a broker whose request loop one request holds for seconds
keeps its own (its lifecycle runs on a loop of its own)."""

from __future__ import annotations

import asyncio
import re
import statistics
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from typing import Any, Final

import pytest

from rackwise.net import KafkaConnection
from rackwise.protocol import ApiKey, encode_request, make, request_class
from tests.broker.test_broker_processes import (
    SESSION_TIMEOUT_MS,
    Cluster,
    alive_brokers,
    call,
    eventually,
)
from tests.processes import run

POLICY_VIOLATION: Final = 44
TOPIC_ALREADY_EXISTS: Final = 36
EXCESSIVE: Final = "Excessively large number of partitions per request."
FLOOD_SECONDS: Final = 20.0
PROBE_EVERY_S: Final = 0.05
BUSY_REQUESTS: Final = 64
HELD_TOPICS: Final = 300_000

FLOOD = textwrap.dedent(
    """
    import asyncio, struct, sys, time
    from rackwise.protocol import ApiKey, encode_request, make, request_class

    port, connections, depth, seconds = (int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]),
                                         float(sys.argv[4]))
    body = make(request_class(ApiKey.METADATA, 12), topics=[],
                allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    frame = bytes(encode_request(body, 1, "flood"))

    async def one():
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(frame * depth)
        pending, answered, deadline = b"", 0, time.monotonic() + seconds
        while time.monotonic() < deadline:
            pending += await reader.read(1 << 16)
            count = 0
            while len(pending) >= 4 and len(pending) >= 4 + struct.unpack_from(">i", pending)[0]:
                pending = pending[4 + struct.unpack_from(">i", pending)[0]:]
                count += 1
            answered += count
            writer.write(frame * count)
        writer.close()
        return answered

    async def main():
        print(sum(await asyncio.gather(*(one() for _ in range(connections)))))

    asyncio.run(main())
    """
)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = Cluster(tmp_path_factory.mktemp("load"))
    try:
        running.start()
        yield running
    finally:
        running.close()


def api_versions_frame() -> bytes:
    body = make(
        request_class(ApiKey.API_VERSIONS, 3),
        client_software_name="probe",
        client_software_version="1",
    )
    return bytes(encode_request(body, 7, "probe"))


async def probe_latencies(port: int, seconds: float) -> list[float]:
    """ApiVersions on a fresh connection every PROBE_EVERY_S: each answer's seconds."""
    frame = api_versions_frame()
    latencies = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        began = time.monotonic()
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(frame)
        size = int.from_bytes(await asyncio.wait_for(reader.readexactly(4), 10), "big")
        await reader.readexactly(size)
        latencies.append(time.monotonic() - began)
        writer.close()
        await asyncio.sleep(PROBE_EVERY_S)
    return latencies


@pytest.mark.slow  # 20 s of load, as the finding it checks (a broker fenced twice in 20 s)
def test_pipelined_metadata_neither_fences_a_broker_nor_delays_a_newcomer(
    cluster: Cluster,
) -> None:
    broker = cluster.brokers[2]
    flood = subprocess.Popen(
        [sys.executable, "-c", FLOOD, str(broker.port), "2", "1000", str(FLOOD_SECONDS)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(1.0)  # the flood is under way
        latencies = run(probe_latencies(broker.port, FLOOD_SECONDS - 2), FLOOD_SECONDS + 30)
        assert alive_brokers(cluster.brokers[1].port) == [1, 2, 3]
        out, _ = flood.communicate(timeout=30)
    finally:
        if flood.poll() is None:
            flood.kill()
            flood.wait()
    answered = int(out.strip())
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    print(
        f"{answered / FLOOD_SECONDS:,.0f} Metadata/s; ApiVersions p50 "
        f"{1000 * statistics.median(latencies):.1f} ms p99 {1000 * p99:.1f} ms over "
        f"{len(latencies)} probes"
    )
    assert answered > 1000 * FLOOD_SECONDS  # the flood was served too
    assert len(latencies) > 100
    assert p99 < 0.100, sorted(latencies)[-10:]
    assert "broker 2 fenced by the controller" not in broker.stderr()
    assert not re.search(r"\bfenced broker 2\b", cluster.controller.stderr())


def test_create_topics_over_the_bound_through_a_broker_is_refused_at_once(
    cluster: Cluster,
) -> None:
    began = time.monotonic()
    response = call(
        cluster.brokers[1].port,
        ApiKey.CREATE_TOPICS,
        topics=[
            {
                "name": f"big-{i}",
                "num_partitions": 6000,
                "replication_factor": 1,
                "assignments": [],
                "configs": [],
            }
            for i in range(2)
        ],
        timeout=30000,
        validate_only=False,
    )
    elapsed = time.monotonic() - began
    assert [(t.name, int(t.error_code), t.error_message) for t in response.topics] == [
        ("big-0", POLICY_VIOLATION, EXCESSIVE),
        ("big-1", POLICY_VIOLATION, EXCESSIVE),
    ]
    assert elapsed < 2.0, elapsed
    assert alive_brokers(cluster.brokers[1].port) == [1, 2, 3]


def assert_linear(elapsed: float, tenth: float, seconds: float) -> None:
    """A request ten times larger took at most ``seconds``, or, on a machine too busy for
    that, at most 30 times what the tenth took: the cost grows with the request's size, not
    with its square (which would be 100 times)."""
    assert elapsed < seconds or elapsed < 30 * tenth, (elapsed, tenth)


def describe_configs_of_copies(port: int, copies: int) -> tuple[Any, float]:
    began = time.monotonic()
    response = call(
        port,
        ApiKey.DESCRIBE_CONFIGS,
        resources=[{"resource_type": 2, "resource_name": "copies", "configuration_keys": None}]
        * copies,
        include_synonyms=False,
        include_documentation=False,
    )
    return response, time.monotonic() - began


def ensure_topic(cluster: Cluster, name: str) -> None:
    response = call(
        cluster.brokers[1].port,
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
        timeout=30000,
        validate_only=False,
    )
    assert int(response.topics[0].error_code) in (0, TOPIC_ALREADY_EXISTS), response


def test_describe_configs_of_one_resource_40000_times_is_answered_once_by_the_controller(
    cluster: Cluster,
) -> None:
    ensure_topic(cluster, "copies")

    async def ask(copies: int) -> tuple[Any, float]:
        async with await KafkaConnection.connect("127.0.0.1", cluster.controller.port) as conn:
            await conn.negotiate_versions()
            began = time.monotonic()
            response = await conn.request(
                ApiKey.DESCRIBE_CONFIGS,
                resources=[
                    {"resource_type": 2, "resource_name": "copies", "configuration_keys": None}
                ]
                * copies,
                include_synonyms=False,
                include_documentation=False,
            )
            return response, time.monotonic() - began

    _, tenth = run(ask(4_000))
    response, elapsed = run(ask(40_000))
    (result,) = response.results
    assert (result.resource_name, int(result.error_code)) == ("copies", 0)
    assert_linear(elapsed, tenth, 3.0)


def test_describe_configs_naming_one_resource_many_times_is_answered_once_by_a_broker(
    cluster: Cluster,
) -> None:
    eventually(
        lambda: (
            int(describe_configs_of_copies(cluster.brokers[2].port, 1)[0].results[0].error_code)
            == 0
        )
    )
    _, tenth = describe_configs_of_copies(cluster.brokers[2].port, 4_000)
    response, elapsed = describe_configs_of_copies(cluster.brokers[2].port, 40_000)
    assert len(response.results) == 1
    assert_linear(elapsed, tenth, 1.0)
    assert alive_brokers(cluster.brokers[1].port) == [1, 2, 3]


@pytest.mark.slow  # keeps the controller busy for several seconds, longer than a session
def test_a_controller_busy_with_large_requests_fences_no_broker(cluster: Cluster) -> None:
    """Many validate-only CreateTopics of 9,999 partitions each, at once: the controller
    places them all in one group commit (nothing is written), seconds of work on its loop
    while the brokers' heartbeats wait."""

    async def validate(conn: KafkaConnection, name: str) -> int:
        response = await conn.request(
            ApiKey.CREATE_TOPICS,
            topics=[
                {
                    "name": name,
                    "num_partitions": 9999,
                    "replication_factor": 3,
                    "assignments": [],
                    "configs": [],
                }
            ],
            timeout=60000,
            validate_only=True,
            timeout_s=120,
        )
        return int(response.topics[0].error_code)

    async def scenario() -> list[int]:
        conns = [
            await KafkaConnection.connect("127.0.0.1", cluster.controller.port)
            for _ in range(BUSY_REQUESTS)
        ]
        try:
            for conn in conns:
                await conn.negotiate_versions()
            return list(
                await asyncio.gather(*(validate(c, f"busy-{i}") for i, c in enumerate(conns)))
            )
        finally:
            for conn in conns:
                await conn.close()

    began = time.monotonic()
    assert run(scenario(), 180) == [0] * BUSY_REQUESTS
    busy_s = time.monotonic() - began
    print(f"{BUSY_REQUESTS} x 9,999 partitions placed in {busy_s:.1f} s")
    assert busy_s > SESSION_TIMEOUT_MS / 1000  # the controller was busy for a whole session
    assert "lease expired" not in cluster.controller.stderr()
    for broker in cluster.brokers.values():
        assert f"broker {broker.node_id} fenced by the controller" not in broker.stderr()
    assert alive_brokers(cluster.brokers[1].port) == [1, 2, 3]


@pytest.mark.slow  # one request that holds the broker's request loop for seconds
def test_a_broker_whose_request_loop_is_held_for_seconds_keeps_its_lease(
    cluster: Cluster,
) -> None:
    """A Metadata request naming 300,000 topics that do not exist takes the broker seconds to
    decode and answer, longer than a session: its heartbeats and metadata fetch run on a loop
    of their own, so it stays unfenced meanwhile."""
    broker = cluster.brokers[3]
    body = make(
        request_class(ApiKey.METADATA, 12),
        topics=[{"name": f"held-{i}", "topic_id": None} for i in range(HELD_TOPICS)],
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    frame = bytes(encode_request(body, 1, "held"))

    async def ask() -> tuple[int, float]:
        began = time.monotonic()
        reader, writer = await asyncio.open_connection("127.0.0.1", broker.port)
        writer.write(frame)
        size = int.from_bytes(await asyncio.wait_for(reader.readexactly(4), 120), "big")
        await reader.readexactly(size)
        writer.close()
        return size, time.monotonic() - began

    size, held_s = run(ask(), 180)
    print(f"Metadata of {HELD_TOPICS:,} topics answered in {held_s:.1f} s ({size:,} bytes)")
    assert held_s > SESSION_TIMEOUT_MS / 1000  # longer than a lease
    assert "broker 3 fenced by the controller" not in broker.stderr()
    assert not re.search(r"\bfenced broker 3\b", cluster.controller.stderr())
    assert alive_brokers(cluster.brokers[1].port) == [1, 2, 3]
