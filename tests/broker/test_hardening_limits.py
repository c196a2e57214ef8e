"""A listener's limits on a real controller process: a connection that announces a 100 MB
frame, sends most of it and stops is closed once idle and its memory goes back; connections
over ``max.connections.per.ip`` are closed as they arrive, with one log line; and the keys are
read and checked as Kafka's."""

from __future__ import annotations

import asyncio
import re
import socket
import struct
import time
from pathlib import Path
from typing import Any, Final

import pytest

from rackwise.net import ServerLimits
from rackwise.node.config import NodeConfig
from rackwise.node.properties_file import ConfigException
from tests.processes import ControllerProcess, controller_properties, run

IDLE_MS: Final = 1000
FRAME_BYTES: Final = 100_000_000
SENT_BYTES: Final = 90_000_000


def resident_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for process {pid}")


def test_a_stalled_100_mb_frame_is_dropped_once_idle(controller_factory: Any) -> None:
    controller: ControllerProcess = controller_factory(connections_max_idle_ms=IDLE_MS)
    controller.start()
    assert controller.proc is not None
    pid = controller.proc.pid
    before = resident_bytes(pid)
    with socket.create_connection(("127.0.0.1", controller.port)) as sock:
        sock.sendall(struct.pack(">i", FRAME_BYTES) + bytes(SENT_BYTES))
        sent_at = time.monotonic()
        held = resident_bytes(pid)
        sock.settimeout(10)
        assert sock.recv(1) == b""  # closed by the controller, nothing answered
        closed_after_s = time.monotonic() - sent_at
    deadline = time.monotonic() + 5
    while resident_bytes(pid) > before + 30_000_000 and time.monotonic() < deadline:
        time.sleep(0.1)
    after = resident_bytes(pid)
    assert held > before + 60_000_000, (before, held)  # it did hold the bytes received
    assert after < before + 30_000_000, (before, held, after)
    assert IDLE_MS / 1000 <= closed_after_s < IDLE_MS / 1000 + 3
    assert controller.stop() == 0
    assert re.search(
        r"INFO .* closing the connection from 127\.0\.0\.1:\d+: idle for \d+ ms in a frame of "
        r"100000000 bytes \(connections\.max\.idle\.ms=1000\)",
        controller.stderr(),
    )


def test_connections_over_the_per_address_limit_are_closed_with_one_log_line(
    controller_factory: Any,
) -> None:
    controller: ControllerProcess = controller_factory(max_connections_per_ip=3)
    controller.start()

    async def scenario() -> tuple[list[bool], bool]:
        kept = [await asyncio.open_connection("127.0.0.1", controller.port) for _ in range(3)]
        refused = [await asyncio.open_connection("127.0.0.1", controller.port) for _ in range(6)]
        closed = []
        for reader, writer in refused:
            try:
                closed.append(await asyncio.wait_for(reader.read(1), 5) == b"")
            except ConnectionError:
                closed.append(True)
            writer.close()
        kept[0][1].close()
        await asyncio.sleep(0.3)
        conn = await controller.connect()  # a place is free again
        served = conn.api_versions is not None
        await conn.close()
        for _, writer in kept[1:]:
            writer.close()
        return closed, served

    closed, served = run(scenario())
    assert closed == [True] * 6 and served
    assert controller.stop() == 0
    lines = [line for line in controller.stderr().splitlines() if "rejected the connection" in line]
    assert len(lines) == 1, lines
    assert "Too many connections from 127.0.0.1 (maximum = 3)" in lines[0]


def test_the_keys_are_kafkas_with_rackwises_defaults(tmp_path: Path) -> None:
    props = controller_properties(tmp_path)
    assert NodeConfig.from_properties(props).server_limits() == ServerLimits()
    limits = NodeConfig.from_properties(
        {
            **props,
            "connections.max.idle.ms": "-1",
            "queued.max.request.bytes": "-1",
            "max.connections": "100",
            "max.connections.per.ip": "10",
        }
    ).server_limits()
    assert limits == ServerLimits(
        connections_max_idle_ms=-1,
        queued_max_request_bytes=-1,
        max_connections=100,
        max_connections_per_ip=10,
    )
    assert limits.idle_timeout_s is None


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("max.connections.per.ip", "0", "Value must be at least 1"),
        ("max.connections", "-1", "Value must be at least 0"),
        ("connections.max.idle.ms", "soon", "Not a number of type INT"),
        ("queued.max.request.bytes", "-2", "Value must be at least -1"),
    ],
)
def test_bad_values_are_refused_naming_the_key(
    tmp_path: Path, key: str, value: str, reason: str
) -> None:
    with pytest.raises(ConfigException) as caught:
        NodeConfig.from_properties({**controller_properties(tmp_path), key: value})
    assert str(caught.value) == f"Invalid value {value} for configuration {key}: {reason}"
