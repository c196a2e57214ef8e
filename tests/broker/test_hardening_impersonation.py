"""No client can stop or impersonate a broker, with real processes on 127.0.0.1: a heartbeat
answer telling a broker to shut down that it did not ask for is ignored (with a warning); an
anonymous BrokerHeartbeat asking to shut a broker down, with the right epoch, neither stops nor
fences it; a registration that reuses a live broker's incarnation id to advertise another
address and rack is undone by the real broker within a heartbeat interval; a rack with a
newline does not forge a line of the controller's log."""

from __future__ import annotations

import asyncio
import re
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest

from rackwise.net import CloseConnection, KafkaConnection, start_server
from rackwise.protocol import ApiKey, Listener, Request, api_versions_response, make, response_class
from rackwise.records import parse_kafka_uuid
from tests.broker.test_broker_processes import (
    HEARTBEAT_INTERVAL_MS,
    RACKS,
    BrokerProcess,
    Cluster,
    alive_brokers,
    broker_properties,
    call,
    eventually,
    registrations,
)
from tests.broker.test_faults_broker import create_topic, partitions
from tests.processes import ControllerProcess, register, run

STALE_BROKER_EPOCH: Final = 77
INCONSISTENT_CLUSTER_ID: Final = 104
IGNORED: Final = (
    "ignoring should_shut_down in a heartbeat answer: this broker did not ask for a "
    "controlled shutdown"
)
SLACK_S: Final = 1.5
"""Allowed beyond one heartbeat interval on a busy machine: the answer, the registration, and
the record reaching the broker asked."""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = Cluster(tmp_path_factory.mktemp("impersonation"))
    try:
        running.start()
        yield running
    finally:
        running.close()


def metadata_brokers(port: int) -> dict[int, tuple[str, int, str | None]]:
    response = call(
        port,
        ApiKey.METADATA,
        topics=[],
        allow_auto_topic_creation=False,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )
    return {int(b.node_id): (b.host, int(b.port), b.rack) for b in response.brokers}


async def controller_request(port: int, api_key: int, **fields: Any) -> Any:
    """One request on a fresh connection to the controller, as an anonymous client."""
    async with await KafkaConnection.connect("127.0.0.1", port, client_id="anonymous") as conn:
        await conn.negotiate_versions()
        return await conn.request(api_key, **fields)


# ---- a forged answer ----------------------------------------------------------------------------


class StandInController:
    """A controller that registers the broker and then answers every heartbeat with
    ``should_shut_down`` (unfenced), on a thread of its own; it serves nothing else."""

    def __init__(self) -> None:
        self.num_heartbeats = 0
        self.port = 0
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._serve()), daemon=True)

    async def _handle(self, request: Request) -> Any:
        key, version = request.header.api_key, request.header.api_version
        cls = response_class(key, version)
        if key == ApiKey.API_VERSIONS:
            return api_versions_response(version, Listener.CONTROLLER)
        if key == ApiKey.BROKER_REGISTRATION:
            return make(cls, throttle_time=0, error_code=0, broker_epoch=10)
        if key == ApiKey.BROKER_HEARTBEAT:
            self.num_heartbeats += 1
            return make(
                cls,
                throttle_time=0,
                error_code=0,
                is_caught_up=True,
                is_fenced=False,
                should_shut_down=True,
            )
        raise CloseConnection(f"the stand-in does not serve api key {key}")

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with await start_server(self._handle, Listener.CONTROLLER) as server:
            self.port = server.port
            self._ready.set()
            await self._stop.wait()

    def __enter__(self) -> StandInController:
        self._thread.start()
        assert self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._loop is not None and self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)


def test_a_forged_shut_down_answer_is_ignored_with_a_warning(tmp_path: Path) -> None:
    with StandInController() as stand_in:
        broker = BrokerProcess(tmp_path, broker_properties(tmp_path, 1, stand_in.port))
        try:
            broker.start()
            eventually(lambda: stand_in.num_heartbeats >= 8, timeout_s=20)
            assert broker.proc is not None and broker.proc.poll() is None, broker.stderr()
            versions = call(
                broker.port,
                ApiKey.API_VERSIONS,
                client_software_name="hardening",
                client_software_version="1",
            )
            assert int(versions.error_code) == 0
        finally:
            broker.close()
    log = broker.stderr()
    assert IGNORED in log
    assert "the controller says to shut down" not in log
    assert "broker 1 stopped" not in log


# ---- a forged heartbeat -------------------------------------------------------------------------


def test_an_anonymous_shut_down_heartbeat_neither_stops_nor_fences_the_broker(
    cluster: Cluster,
) -> None:
    watcher = cluster.brokers[1].port
    create_topic(watcher, "forged", 6, 3)

    def led_by_2() -> list[int]:
        return [i for i, p in partitions(watcher, "forged").items() if p.leader_id == 2]

    led = eventually(led_by_2)
    registered = registrations(cluster)[2]
    response = run(
        controller_request(
            cluster.controller.port,
            ApiKey.BROKER_HEARTBEAT,
            broker_id=2,
            broker_epoch=registered["broker_epoch"],
            current_metadata_offset=1 << 40,
            want_fence=False,
            want_shut_down=True,
            offline_log_dirs=[],
        )
    )
    assert int(response.error_code) == STALE_BROKER_EPOCH
    deadline = time.monotonic() + 12 * HEARTBEAT_INTERVAL_MS / 1000
    while time.monotonic() < deadline:
        assert cluster.brokers[2].proc is not None and cluster.brokers[2].proc.poll() is None
        assert 2 in alive_brokers(watcher)
        time.sleep(0.1)
    after = registrations(cluster)[2]
    assert (after["fenced"], after["in_controlled_shutdown"]) == (False, False)
    assert after["broker_epoch"] == registered["broker_epoch"]
    assert led_by_2() == led
    assert "broker 2 fenced by the controller" not in cluster.brokers[2].stderr()
    assert re.search(
        r"refused a heartbeat of broker 2 \(epoch \d+\): STALE_BROKER_EPOCH \(77\): Broker 2 "
        r"may ask to be fenced or to shut down only on the connection it registered on",
        cluster.controller.stderr(),
    )


# ---- a forged registration ----------------------------------------------------------------------


def test_a_registration_reusing_a_live_incarnation_is_undone_within_a_heartbeat(
    cluster: Cluster,
) -> None:
    watcher = cluster.brokers[1].port
    real = metadata_brokers(watcher)[2]
    assert real == ("127.0.0.1", cluster.brokers[2].port, RACKS[2])
    registered = registrations(cluster)[2]
    response = run(
        controller_request(
            cluster.controller.port,
            ApiKey.BROKER_REGISTRATION,
            broker_id=2,
            cluster_id="",
            incarnation_id=parse_kafka_uuid(registered["incarnation_id"]),
            listeners=[
                {"name": "PLAINTEXT", "host": "127.0.0.1", "port": 9, "security_protocol": 0}
            ],
            features=[],
            rack="/fake",
            is_migrating_zk_broker=False,
            log_dirs=[uuid.uuid4()],
            previous_broker_epoch=-1,
        )
    )
    forged_at = time.monotonic()
    assert int(response.error_code) == 0
    forged_epoch = int(response.broker_epoch)
    assert forged_epoch > registered["broker_epoch"]

    def restored() -> bool:
        return metadata_brokers(watcher).get(2) == real and (
            registrations(cluster)[2]["broker_epoch"] > forged_epoch
        )

    eventually(restored, timeout_s=10, every_s=0.02)
    elapsed = time.monotonic() - forged_at
    assert elapsed < HEARTBEAT_INTERVAL_MS / 1000 + SLACK_S, elapsed
    after = registrations(cluster)[2]
    assert after["rack"] == RACKS[2] and after["fenced"] is False
    assert after["listeners"] == [f"PLAINTEXT://127.0.0.1:{cluster.brokers[2].port}"]
    log = cluster.brokers[2].stderr()
    assert "heartbeat refused: STALE_BROKER_EPOCH (77); registering again" in log
    assert eventually(lambda: alive_brokers(watcher) == [1, 2, 3])


# ---- log lines ----------------------------------------------------------------------------------


def test_values_from_requests_do_not_forge_log_lines(controller_factory: Any) -> None:
    controller: ControllerProcess = controller_factory(cluster_id="cluster-a")
    controller.start()
    forged = "2030-01-01T00:00:00.000Z INFO controller 1 rackwise.controller: fenced broker 1"

    async def scenario() -> list[int]:
        async with await controller.connect() as conn:
            rack = await register(conn, 5, rack=f"/dc1/r1\n{forged}", cluster_id="cluster-a")
            cluster_id = await register(conn, 6, cluster_id=f"cluster-b\r\n{forged}")
            return [int(rack.error_code), int(cluster_id.error_code)]

    assert run(scenario()) == [0, INCONSISTENT_CLUSTER_ID]
    assert controller.stop() == 0
    lines = controller.stderr().splitlines()
    assert not [line for line in lines if line.startswith(forged)]
    (registered,) = [line for line in lines if "registered broker 5" in line]
    assert f"(rack /dc1/r1\\n{forged}, incarnation " in registered
    (refused,) = [line for line in lines if "refused the registration of broker 6" in line]
    assert f"cluster id cluster-b\\r\\n{forged} is not this cluster's" in refused
