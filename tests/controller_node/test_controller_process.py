"""The controller process, started for real and spoken to over the wire: brokers register,
heartbeat, get unfenced once caught up and fenced when their lease runs out; topics survive a
restart; brokers follow the log with long polls and snapshots; bad input and bad configs do
not take it down, SIGTERM stops it cleanly."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from rackwise.net import NetworkException
from rackwise.protocol import ApiKey, Listener, apis_for
from rackwise.records import iter_batches, kafka_uuid
from rackwise.records.metadata import RegisterBrokerRecord, TopicRecord
from tests.processes import (
    ControllerProcess,
    create_topics,
    fetch_log,
    fetch_snapshot,
    heartbeat,
    register,
    register_unfenced,
    run,
    topic,
)

DUPLICATE_BROKER_REGISTRATION = 101
STALE_BROKER_EPOCH = 77
INVALID_REGISTRATION = 119
TOPIC_ALREADY_EXISTS = 36


def records_of(data: bytes) -> list[Any]:
    return [r for batch in iter_batches(data) for r in batch.records]


def test_api_versions_lists_the_controller_listeners_apis(controller_factory: Any) -> None:
    controller: ControllerProcess = controller_factory()
    controller.start()

    async def scenario() -> dict[int, tuple[int, int]]:
        async with await controller.connect() as conn:
            return dict(conn.api_versions)

    served = {k: (s.min_version, s.max_version) for k, s in apis_for(Listener.CONTROLLER).items()}
    assert run(scenario()) == served
    assert controller.stop() == 0
    assert "stopped" in controller.stderr()


def test_the_acl_apis_say_security_is_disabled(controller_factory: Any) -> None:
    """As Kafka's controller without an authorizer (``kafka-acls.sh --bootstrap-controller``)."""
    controller: ControllerProcess = controller_factory()
    controller.start()
    acl = {"resource_type": 2, "resource_name": "t", "resource_pattern_type": 3,
           "principal": "User:a", "host": "*", "operation": 3, "permission_type": 3}  # fmt: skip
    anything = {"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
                "principal_filter": None, "host_filter": None, "operation": 1,
                "permission_type": 1}  # fmt: skip

    async def scenario() -> tuple[Any, Any, Any]:
        async with await controller.connect() as conn:
            return (
                await conn.request(ApiKey.CREATE_ACLS, creations=[acl, acl]),
                await conn.request(ApiKey.DELETE_ACLS, filters=[anything]),
                await conn.request(ApiKey.DESCRIBE_ACLS, **anything),
            )

    created, deleted, described = run(scenario())
    disabled = (54, "No Authorizer is configured.")
    assert [(int(r.error_code), r.error_message) for r in created.results] == [disabled] * 2
    assert [(int(r.error_code), r.error_message) for r in deleted.filter_results] == [disabled]
    assert (int(described.error_code), described.error_message) == (
        54,
        "No Authorizer is configured on the broker",
    )
    assert controller.stop() == 0


@pytest.mark.parametrize("voters", [1, 3])
def test_registration_heartbeats_and_fencing(controller_factory: Any, voters: int) -> None:
    controller: ControllerProcess = controller_factory(
        voters=voters, broker_session_timeout_ms=1500, broker_heartbeat_interval_ms=300
    )
    controller.start()

    async def scenario() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with await controller.connect() as conn:
            seen["incarnation"] = incarnation = uuid.uuid4()
            first = await register(conn, 2, incarnation=incarnation, rack="/dc1/r1")
            seen["epoch"] = epoch = int(first.broker_epoch)
            seen["first_error"] = int(first.error_code)
            behind = await heartbeat(conn, 2, epoch, epoch - 1)
            seen["behind"] = (behind.is_caught_up, behind.is_fenced)
            caught_up = await heartbeat(conn, 2, epoch, epoch)
            seen["caught_up"] = (caught_up.is_caught_up, caught_up.is_fenced)
            # unfenced, its lease alive: another incarnation is refused, the same one is not
            other = await register(conn, 2, incarnation=uuid.uuid4())
            seen["duplicate"] = int(other.error_code)
            again = await register(conn, 2, incarnation=incarnation)
            seen["same_incarnation"] = (int(again.error_code), int(again.broker_epoch))
            controller_id = await register(conn, 1)
            seen["controller_id"] = int(controller_id.error_code)
            stale = await heartbeat(conn, 2, epoch + 100, epoch)
            seen["stale"] = int(stale.error_code)
            records = records_of((await fetch_log(conn, 0)).records)
            seen["registered"] = [
                (r.broker_id, r.rack) for r in records if isinstance(r, RegisterBrokerRecord)
            ]
            began = time.monotonic()
            while time.monotonic() - began < 10:  # no more heartbeats: the lease runs out
                await asyncio.sleep(0.2)
                state = await conn.request(
                    ApiKey.CREATE_REPLICA_PLACEMENT,
                    num_partitions=1,
                    replication_factor=1,
                    force_simple_placement=False,
                    node_id=[],
                    timeout_ms=1000,
                )
                if int(state.error_code) != 0:
                    break
            seen["fenced_after_s"] = time.monotonic() - began
            seen["placement_error"] = int(state.error_code)
            # Once fenced, a new incarnation may register: the lease is gone.
            seen["after_lease"] = int((await register(conn, 2)).error_code)
        return seen

    seen = run(scenario())
    assert seen["first_error"] == 0
    assert seen["duplicate"] == DUPLICATE_BROKER_REGISTRATION
    # Every accepted registration gets a new broker epoch (so a hijacked one is noticed).
    assert seen["same_incarnation"][0] == 0 and seen["same_incarnation"][1] > seen["epoch"]
    assert seen["controller_id"] == INVALID_REGISTRATION
    assert seen["behind"] == (False, True)
    assert seen["caught_up"] == (True, False)
    assert seen["stale"] == STALE_BROKER_EPOCH
    assert seen["registered"][0] == (2, "/dc1/r1")
    assert 0.5 < seen["fenced_after_s"] < 8
    assert seen["placement_error"] != 0
    assert seen["after_lease"] == 0
    assert controller.stop() == 0
    log = controller.stderr()
    assert re.search(r"INFO .* unfenced broker 2 \(epoch \d+\): caught up", log)
    assert re.search(r"INFO .* fenced broker 2: lease expired \(no heartbeat for 1500 ms\)", log)
    assert re.search(
        r"WARNING .* refused the registration of broker 2 \(incarnation [\w-]{22}\): "
        r"DUPLICATE_BROKER_REGISTRATION \(101\): ",
        log,
    )
    assert re.search(r"refused the registration of broker 1 .*: INVALID_REGISTRATION \(119\)", log)
    assert re.search(r"refused a heartbeat of broker 2 .*: STALE_BROKER_EPOCH \(77\)", log)
    # Incarnation ids in Kafka's base64 form, as brokers print them.
    assert f"incarnation {kafka_uuid(seen['incarnation'])})" in log
    assert str(seen["incarnation"]) not in log


@pytest.mark.parametrize("voters", [1, 3])
def test_topics_are_durable_across_a_restart(controller_factory: Any, voters: int) -> None:
    controller: ControllerProcess = controller_factory(voters=voters)
    controller.start()

    async def create() -> list[tuple[str, int, int]]:
        async with await controller.connect() as conn:
            await register_unfenced(conn, range(2, 5))
            response = await create_topics(conn, topic("a", 3, 2), topic("b", 2, 3))
            again = await create_topics(conn, topic("a", 1, 1))
            assert [int(t.error_code) for t in again.topics] == [TOPIC_ALREADY_EXISTS]
            return [(t.name, int(t.error_code), int(t.num_partitions)) for t in response.topics]

    assert run(create()) == [("a", 0, 3), ("b", 0, 2)]
    controller.stop()
    controller.start()

    async def read_back() -> tuple[list[str], int]:
        async with await controller.connect() as conn:
            records = records_of((await fetch_log(conn, 0, max_bytes=1 << 24)).records)
            again = await create_topics(conn, topic("a", 1, 1))
            return [r.name for r in records if isinstance(r, TopicRecord)], int(
                again.topics[0].error_code
            )

    names, error = run(read_back())
    assert names == ["a", "b"]
    assert error == TOPIC_ALREADY_EXISTS
    assert controller.stop() == 0


@pytest.mark.parametrize("voters", [1, 3])
def test_a_long_poll_returns_at_the_next_commit(controller_factory: Any, voters: int) -> None:
    controller: ControllerProcess = controller_factory(voters=voters)
    controller.start()

    async def scenario() -> tuple[float, list[str], float]:
        async with await controller.connect() as poller, await controller.connect() as writer:
            await register_unfenced(writer, range(2, 3))
            end = int((await fetch_log(poller, 0, max_bytes=1)).high_watermark)
            began = time.monotonic()
            poll = asyncio.ensure_future(fetch_log(poller, end, max_wait_ms=10_000))
            await asyncio.sleep(0.3)
            await create_topics(writer, topic("t"))
            response = await poll
            waited = time.monotonic() - began
            names = [r.name for r in records_of(response.records) if isinstance(r, TopicRecord)]
            began = time.monotonic()
            idle = await fetch_log(poller, int(response.high_watermark), max_wait_ms=300)
            assert idle.records == b""
            return waited, names, time.monotonic() - began

    waited, names, idle_s = run(scenario())
    assert 0.25 < waited < 5
    assert names == ["t"]
    assert 0.25 < idle_s < 3


@pytest.mark.parametrize("voters", [1, 3])
def test_a_fetch_below_the_log_start_is_handed_a_snapshot(
    controller_factory: Any, voters: int
) -> None:
    controller: ControllerProcess = controller_factory(
        voters=voters,
        metadata_log_max_record_bytes_between_snapshots=2000,
        metadata_log_segment_bytes=4096,
    )
    controller.start()

    async def scenario() -> tuple[Any, Any, bytes]:
        async with await controller.connect() as conn:
            await register_unfenced(conn, range(2, 4))
            for i in range(60):
                await create_topics(conn, topic(f"t{i}", 2, 2))
            response = await fetch_log(conn, 0)
            chunks = b""
            size = None
            end, epoch = int(response.snapshot_end_offset), int(response.snapshot_epoch)
            while size is None or len(chunks) < size:
                part = await fetch_snapshot(conn, response.leader_epoch, end, epoch, len(chunks))
                assert part.error_code == 0, part
                size = part.size
                chunks += part.chunk
            missing = await fetch_snapshot(conn, response.leader_epoch, 1, 7, 0)
            return response, missing, chunks

    response, missing, snapshot = run(scenario())
    assert int(response.snapshot_end_offset) > 0
    assert response.records == b""
    on_disk = (
        controller.metadata_dir
        / f"{int(response.snapshot_end_offset):020d}-{int(response.snapshot_epoch):010d}.checkpoint"
    )
    assert snapshot == on_disk.read_bytes()
    assert int(missing.error_code) == 98  # SNAPSHOT_NOT_FOUND


def test_malformed_frames_do_not_stop_the_controller(controller_factory: Any) -> None:
    controller: ControllerProcess = controller_factory()
    controller.start()

    async def scenario() -> bool:
        frames = (
            b"\xff\xff\xff\xff",  # a negative size
            b"\x00\x00\x00\x04\x00\x03\x00\x0c",  # Metadata: not served here
            b"\x00\x00\x00\x02ab",  # too short for a header
            b"\x00\x00\x00\x0a\x03\xe7\x00\x00\x00\x00\x00\x01\xff\xff",  # api key 999
        )
        for data in frames:
            reader, writer = await asyncio.open_connection("127.0.0.1", controller.port)
            try:
                writer.write(data)
                await writer.drain()
                assert await asyncio.wait_for(reader.read(100), 5) == b""
            finally:
                writer.close()
        async with await controller.connect() as conn:
            return int((await register(conn, 5)).error_code) == 0

    assert run(scenario())
    assert controller.stop() == 0


def test_a_single_controller_closes_a_raft_request_and_goes_on(controller_factory: Any) -> None:
    """A Vote meant for a quorum's voters reaches a controller that is its own only voter: the
    connection closes with one log line, and the controller serves the next client."""
    controller: ControllerProcess = controller_factory()
    controller.start()

    async def scenario() -> bool:
        async with await controller.connect() as conn:
            with pytest.raises(NetworkException, match="closed"):
                await conn.request(
                    ApiKey.VOTE,
                    version=0,
                    timeout_s=5,
                    cluster_id=None,
                    topics=[],
                )
        async with await controller.connect() as conn:
            return int((await register(conn, 5)).error_code) == 0

    assert run(scenario())
    assert controller.stop() == 0
    assert re.search(r"after Vote v0: Vote is between the voters of a quorum", controller.stderr())


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "node.id=1\nprocess.roles=controller\nbogus=1\n",
            "error: Unknown configuration bogus for a controller\n",
        ),
        (
            "node.id=2\nprocess.roles=broker\nlisteners=PLAINTEXT://:0\n"
            "controller.listener.names=CONTROLLER\n"
            "controller.quorum.bootstrap.servers=127.0.0.1:1\nlog.dirs=/tmp/x\n",
            "process.roles=broker; start it with rackwise broker start\n",
        ),
    ],
)
def test_a_bad_config_is_one_line_and_status_1(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.properties"
    path.write_text(text, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "rackwise.cli.main", "controller", "start", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.startswith("error: ")
    assert done.stderr.endswith(message)
    assert done.stderr.count("\n") == 1
    assert done.stdout == ""


def test_topic_configs_are_altered_and_described(controller_factory: Any) -> None:
    controller: ControllerProcess = controller_factory()
    controller.start()

    async def scenario() -> tuple[list[int], list[int], dict[str, tuple[str | None, int]]]:
        async with await controller.connect() as conn:
            await register_unfenced(conn, range(2, 3))
            await create_topics(conn, topic("t"))
            altered = await conn.request(
                ApiKey.INCREMENTAL_ALTER_CONFIGS,
                resources=[
                    {
                        "resource_type": 2,
                        "resource_name": "t",
                        "configs": [
                            {"name": "retention.ms", "config_operation": 0, "value": "1000"}
                        ],
                    }
                ],
                validate_only=False,
            )
            bad = await conn.request(
                ApiKey.INCREMENTAL_ALTER_CONFIGS,
                resources=[
                    {
                        "resource_type": 2,
                        "resource_name": "t",
                        "configs": [{"name": "retention.ms", "config_operation": 9, "value": "1"}],
                    }
                ],
                validate_only=False,
            )
            described = await conn.request(
                ApiKey.DESCRIBE_CONFIGS,
                resources=[{"resource_type": 2, "resource_name": "t", "configuration_keys": None}],
                include_synonyms=False,
                include_documentation=False,
            )
            entries = {
                c.name: (c.value, int(c.config_source)) for c in described.results[0].configs
            }
            return (
                [int(r.error_code) for r in altered.responses],
                [int(r.error_code) for r in bad.responses],
                entries,
            )

    altered, bad, entries = run(scenario())
    assert altered == [0]
    assert bad == [42]  # INVALID_REQUEST
    assert entries["retention.ms"] == ("1000", 1)  # TOPIC_CONFIG
