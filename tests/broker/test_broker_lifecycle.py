"""A broker's registration and heartbeats against a stand-in controller over a real socket:
what it logs when the controller refuses it (Kafka's error name and code, one line) and when
its heartbeat answers fence or unfence it (one line per transition); and a failed log
directory, named in a heartbeat sent at once rather than at the next interval."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from rackwise.broker.server import Broker, control_error, fencing_transition
from rackwise.net import CloseConnection, start_server
from rackwise.node.config import load_node_config
from rackwise.protocol import ApiKey, Listener, Request, api_versions_response, make, response_class

INVALID_REGISTRATION = 119
STALE_BROKER_EPOCH = 77


def test_control_error_names_kafka_errors() -> None:
    assert control_error(INVALID_REGISTRATION) == "INVALID_REGISTRATION (119)"
    assert control_error(101) == "DUPLICATE_BROKER_REGISTRATION (101)"
    assert control_error(9999) == "UNKNOWN_ERROR_CODE (9999)"


def test_fencing_transition_only_on_a_change() -> None:
    assert fencing_transition(True, True) is None
    assert fencing_transition(False, False) is None
    assert fencing_transition(True, False) == "unfenced by the controller"
    assert fencing_transition(False, True) == "fenced by the controller"


class StandIn:
    """Answers registrations and heartbeats from scripted error codes and fenced flags (once a
    script runs out, the last entry repeats); closes the broker's metadata fetches."""

    def __init__(self, registrations: list[int], heartbeats: list[tuple[int, bool]]) -> None:
        self.registrations = registrations
        self.heartbeats = heartbeats
        self.num_heartbeats = 0
        self.offline_log_dirs: list[tuple[float, list[uuid.UUID]]] = []
        """Each heartbeat's arrival (monotonic seconds) and the directories it names offline."""

    async def handle(self, request: Request) -> Any:
        key, version = request.header.api_key, request.header.api_version
        cls = response_class(key, version)
        if key == ApiKey.API_VERSIONS:
            return api_versions_response(version, Listener.CONTROLLER)
        if key == ApiKey.BROKER_REGISTRATION:
            error = self.registrations.pop(0) if len(self.registrations) > 1 else 0
            return make(cls, throttle_time=0, error_code=error, broker_epoch=10)
        if key == ApiKey.BROKER_HEARTBEAT:
            self.num_heartbeats += 1
            self.offline_log_dirs.append(
                (time.monotonic(), list(request.body.offline_log_dirs or ()))
            )
            error, fenced = (
                self.heartbeats.pop(0) if len(self.heartbeats) > 1 else self.heartbeats[0]
            )
            return make(
                cls,
                throttle_time=0,
                error_code=error,
                is_caught_up=True,
                is_fenced=fenced,
                should_shut_down=False,
            )
        raise CloseConnection(f"the stand-in does not serve api key {key}")


def broker_properties(tmp_path: Path, port: int, log_dirs: str, interval_ms: int) -> Path:
    path = tmp_path / "broker.properties"
    path.write_text(
        "\n".join(
            [
                "node.id=4",
                "process.roles=broker",
                "listeners=PLAINTEXT://127.0.0.1:0",
                "controller.listener.names=CONTROLLER",
                f"controller.quorum.bootstrap.servers=127.0.0.1:{port}",
                f"log.dirs={log_dirs}",
                f"broker.heartbeat.interval.ms={interval_ms}",
            ]
        ),
        encoding="utf-8",
    )
    return path


async def run_lifecycle(tmp_path: Path, stand_in: StandIn, num_heartbeats: int) -> None:
    server = await start_server(stand_in.handle, Listener.CONTROLLER, port=0)
    path = broker_properties(tmp_path, server.port, str(tmp_path / "data"), 20)
    broker = Broker(load_node_config(path))
    await broker.start()
    try:
        while stand_in.num_heartbeats < num_heartbeats:
            await asyncio.sleep(0.01)
    finally:
        await broker.stop()
        await server.close()


def test_refusals_and_fencing_transitions_are_logged_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    stand_in = StandIn(
        registrations=[INVALID_REGISTRATION, 0],
        heartbeats=[
            (0, True),
            (0, True),
            (0, False),
            (0, False),
            (0, True),
            (0, True),
            (STALE_BROKER_EPOCH, True),
            (0, False),
        ],
    )
    with caplog.at_level(logging.INFO, logger="rackwise.broker.server"):
        asyncio.run(asyncio.wait_for(run_lifecycle(tmp_path, stand_in, 12), 15))
    lines = [r.getMessage() for r in caplog.records]
    refused = [line for line in lines if "refused" in line]
    assert refused[0] == "registration refused: INVALID_REGISTRATION (119); retrying"
    assert refused[1] == "heartbeat refused: STALE_BROKER_EPOCH (77); registering again"
    assert len(refused) == 2
    transitions = [line for line in lines if "by the controller" in line]
    assert transitions == [
        "broker 4 unfenced by the controller (broker epoch 10)",
        "broker 4 fenced by the controller (broker epoch 10)",
        "broker 4 unfenced by the controller (broker epoch 10)",
    ]


async def fail_a_directory(tmp_path: Path, stand_in: StandIn) -> tuple[float, uuid.UUID]:
    """Heartbeats a minute apart; once the first is in, the second directory is replaced by a
    file: how long until a heartbeat names it, and the id it has in its meta.properties."""
    server = await start_server(stand_in.handle, Listener.CONTROLLER, port=0)
    dirs = [tmp_path / "data-1", tmp_path / "data-2"]
    path = broker_properties(tmp_path, server.port, ",".join(map(str, dirs)), 60_000)
    broker = Broker(load_node_config(path))
    await broker.start()
    try:
        while stand_in.num_heartbeats < 1:
            await asyncio.sleep(0.01)
        failed_id = broker.data.logs.dir_ids[dirs[1]]
        os.rename(dirs[1], tmp_path / "gone")
        dirs[1].write_text("failed disk\n")
        shutil.rmtree(tmp_path / "gone")
        failed_at = time.monotonic()
        while not any(offline for _, offline in stand_in.offline_log_dirs):
            await asyncio.sleep(0.01)
        return next(at for at, off in stand_in.offline_log_dirs if off) - failed_at, failed_id
    finally:
        await broker.stop()
        await server.close()


def test_a_failed_directory_is_named_in_a_heartbeat_at_once(tmp_path: Path) -> None:
    stand_in = StandIn(registrations=[0], heartbeats=[(0, True)])
    took, failed_id = asyncio.run(asyncio.wait_for(fail_a_directory(tmp_path, stand_in), 15))
    assert took < 3  # noticed within a second (a directory check), then sent at once
    assert next(off for _, off in stand_in.offline_log_dirs if off) == [failed_id]
