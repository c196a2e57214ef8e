"""Shared by the process tests: controller processes started for real (``python -m
rackwise.cli.main controller start``), waited for by their ready line, and always stopped."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Coroutine, Iterator, Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Final, TypeVar

import pytest

from rackwise.cluster.processes import free_ports
from rackwise.net import KafkaConnection
from rackwise.node.process import parse_ready_line
from rackwise.node.quorum_wire import encode_batches, parse_response, request_for
from rackwise.protocol import ApiKey
from rackwise.raft.messages import (
    Batch,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    OffsetAndEpoch,
)

T = TypeVar("T")
READY_TIMEOUT_S: Final = 60.0
QUORUM_IDS: Final = (1, 3001, 3002)
"""The voters of :class:`QuorumProcesses`: 1, as a single controller's id, and two ids no
test's broker takes (a broker may not register under a controller's id)."""


def run(coroutine: Coroutine[Any, Any, T], deadline_s: float = 60.0) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(coroutine, deadline_s)

    return asyncio.run(bounded())


def controller_properties(directory: Path, node_id: int = 1, **extra: str | int) -> dict[str, str]:
    props = {
        "node.id": str(node_id),
        "process.roles": "controller",
        "listeners": "CONTROLLER://127.0.0.1:0",
        "controller.listener.names": "CONTROLLER",
        "controller.quorum.voters": f"{node_id}@127.0.0.1:0",
        "metadata.log.dir": str(directory / "meta"),
    }
    props.update({k.replace("_", "."): str(v) for k, v in extra.items()})
    return props


class ControllerProcess:
    """A controller process over ``directory`` (its config file and its metadata log)."""

    def __init__(self, directory: Path, props: Mapping[str, str]) -> None:
        self.directory = directory
        self.config_path = directory / "controller.properties"
        self.config_path.write_text(
            "".join(f"{k}={v}\n" for k, v in props.items()), encoding="utf-8"
        )
        self.proc: subprocess.Popen[str] | None = None
        self.port = -1
        self.stderr_path = directory / "stderr.log"
        self.starts = 0

    @property
    def metadata_dir(self) -> Path:
        return self.directory / "meta"

    def start(self) -> float:
        """Start and wait for the ready line; the seconds it took."""
        self.starts += 1
        began = time.monotonic()
        with self.stderr_path.open("a", encoding="utf-8") as stderr:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "rackwise.cli.main",
                    "controller",
                    "start",
                    "--config",
                    str(self.config_path),
                ],
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        ready = parse_ready_line(line)
        if ready is None:
            code = self.proc.wait(timeout=READY_TIMEOUT_S)
            self._release()
            raise AssertionError(
                f"controller exited with {code} before it was ready: {line!r}\n{self.stderr()}"
            )
        self.port = ready.listeners[0].port
        return time.monotonic() - began

    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8")

    def stop(self, signum: int = signal.SIGTERM, timeout_s: float = 20.0) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signum)
        code = self.proc.wait(timeout=timeout_s)
        self._release()
        return code

    def _release(self) -> None:
        if self.proc is not None and self.proc.stdout is not None:
            self.proc.stdout.close()
        self.proc = None

    def kill(self) -> None:
        self.stop(signal.SIGKILL)

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self._release()

    async def connect(self) -> KafkaConnection:
        conn = await KafkaConnection.connect("127.0.0.1", self.port, timeout_s=10)
        await conn.negotiate_versions()
        return conn


def free_port() -> int:
    """A port of 127.0.0.1 that nothing is bound to, from :func:`free_ports`."""
    (port,) = free_ports(1)
    return port


class QuorumProcesses:
    """Three controller processes of one quorum in ``directory``, standing in for one
    controller: they start and stop together, :meth:`connect` reaches the active controller
    (whose metadata directory :attr:`metadata_dir` then is), and :meth:`stderr` holds all
    three logs."""

    def __init__(self, directory: Path, **extra: str | int) -> None:
        ports = dict(zip(QUORUM_IDS, free_ports(3), strict=True))
        voters = ",".join(f"{i}@127.0.0.1:{p}" for i, p in ports.items())
        self.members: dict[int, ControllerProcess] = {}
        for node_id, port in ports.items():
            member = directory / f"c{node_id}"
            member.mkdir(parents=True, exist_ok=True)
            props = controller_properties(member, node_id, **extra)
            props["listeners"] = f"CONTROLLER://127.0.0.1:{port}"
            props["controller.quorum.voters"] = voters
            self.members[node_id] = ControllerProcess(member, props)
        self.leader = 1

    @property
    def metadata_dir(self) -> Path:
        return self.members[self.leader].metadata_dir

    @property
    def port(self) -> int:
        return self.members[self.leader].port

    def start(self) -> float:
        began = time.monotonic()
        for member in self.members.values():
            member.start()
        return time.monotonic() - began

    def stderr(self) -> str:
        return "".join(member.stderr() for member in self.members.values())

    def stop(self, signum: int = signal.SIGTERM, timeout_s: float = 20.0) -> int:
        codes = [m.stop(signum, timeout_s) for m in self.members.values() if m.proc is not None]
        return next((code for code in codes if code != 0), 0)

    def kill(self) -> None:
        self.stop(signal.SIGKILL)

    def close(self) -> None:
        for member in self.members.values():
            member.close()

    async def connect(self) -> KafkaConnection:
        """A connection to the active controller, once there is one."""
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            for node_id, member in self.members.items():
                try:
                    conn = await member.connect()
                except Exception:
                    continue
                probe = await conn.request(
                    ApiKey.LIST_PARTITION_REASSIGNMENTS, timeout_ms=1000, topics=None
                )
                if int(probe.error_code) == 0:
                    self.leader = node_id
                    return conn
                await conn.close()
            assert time.monotonic() < deadline, "no active controller"
            await asyncio.sleep(0.1)


@pytest.fixture
def controller_factory(tmp_path: Path) -> Iterator[Any]:
    """``make(subdir, voters=1, **properties)``: one controller process, or (``voters=3``) a
    quorum of three that stands in for it (:class:`QuorumProcesses`)."""
    started: list[ControllerProcess | QuorumProcesses] = []

    def make(
        subdir: str = "c1", *, voters: int = 1, **extra: str | int
    ) -> ControllerProcess | QuorumProcesses:
        directory = tmp_path / subdir
        directory.mkdir(parents=True, exist_ok=True)
        process: ControllerProcess | QuorumProcesses
        if voters == 1:
            process = ControllerProcess(directory, controller_properties(directory, **extra))
        else:
            assert voters == 3, voters
            process = QuorumProcesses(directory, **extra)
        started.append(process)
        return process

    yield make
    for process in started:
        process.close()


# ---- requests a broker sends -----------------------------------------------------------------


def listener(port: int) -> dict[str, Any]:
    return {"name": "PLAINTEXT", "host": "127.0.0.1", "port": port, "security_protocol": 0}


async def register(
    conn: KafkaConnection,
    broker_id: int,
    *,
    incarnation: uuid.UUID | None = None,
    rack: str | None = None,
    cluster_id: str = "",
) -> Any:
    return await conn.request(
        ApiKey.BROKER_REGISTRATION,
        broker_id=broker_id,
        cluster_id=cluster_id,
        incarnation_id=incarnation or uuid.uuid4(),
        listeners=[listener(9000 + broker_id)],
        features=[],
        rack=rack,
        is_migrating_zk_broker=False,
        log_dirs=[uuid.uuid4()],
        previous_broker_epoch=-1,
    )


async def heartbeat(
    conn: KafkaConnection, broker_id: int, epoch: int, offset: int, **flags: bool
) -> Any:
    return await conn.request(
        ApiKey.BROKER_HEARTBEAT,
        broker_id=broker_id,
        broker_epoch=epoch,
        current_metadata_offset=offset,
        want_fence=flags.get("want_fence", False),
        want_shut_down=flags.get("want_shut_down", False),
        offline_log_dirs=[],
    )


async def fetch_snapshot(
    conn: KafkaConnection, epoch: int, end_offset: int, snapshot_epoch: int, position: int
) -> FetchSnapshotResponse:
    """FetchSnapshot (v0) of the snapshot ``end_offset``-``snapshot_epoch`` from ``position``,
    as a reader that is no replica."""
    request = FetchSnapshotRequest(-1, epoch, OffsetAndEpoch(snapshot_epoch, end_offset), position)
    api_key, version, fields = request_for(request, None)
    answer = parse_response(request, await conn.request(api_key, fields, version=version))
    assert isinstance(answer, FetchSnapshotResponse)
    return answer


async def fetch_log(
    conn: KafkaConnection, offset: int, max_wait_ms: int = 0, max_bytes: int = 1 << 20
) -> Any:
    """What a reader that is no replica (replica id -1) gets of the metadata log from
    ``offset`` with the voters' Fetch (v13): the committed batches (``records``, encoded as
    the log encodes them; at most about ``max_bytes``), the ``high_watermark``, and the
    snapshot id (``snapshot_end_offset``, ``snapshot_epoch``; -1 when none) when ``offset``
    is before the log's start, and the leader's epoch (``leader_epoch``). A fetch at the
    log's end waits up to ``max_wait_ms`` for more."""
    epoch, position, last_epoch = -1, offset, -1
    batches: list[Batch] = []
    wait_ms = max_wait_ms
    deadline = time.monotonic() + max_wait_ms / 1000
    while True:
        request = FetchRequest(-1, epoch, position, last_epoch, wait_ms)
        api_key, version, fields = request_for(request, None)
        body = await conn.request(api_key, fields, version=version, timeout_s=wait_ms / 1000 + 10)
        answer = parse_response(request, body)
        assert isinstance(answer, FetchResponse)
        if answer.error_code in (74, 75) and answer.leader_epoch != epoch:  # FENCED/UNKNOWN
            epoch = answer.leader_epoch
            if position > 0 and not batches:
                last_epoch = epoch  # the leader's epoch holds every offset up to its log's end
            continue
        assert answer.error_code == 0, answer
        assert answer.diverging_epoch is None, answer
        hw = answer.high_watermark
        if answer.snapshot_id is not None:
            sid = answer.snapshot_id
            return SimpleNamespace(
                records=b"",
                high_watermark=hw,
                snapshot_end_offset=sid.offset,
                snapshot_epoch=sid.epoch,
                leader_epoch=answer.leader_epoch,
            )
        batches.extend(answer.batches)
        remaining_ms = int((deadline - time.monotonic()) * 1000)
        if not batches and position >= hw and remaining_ms > 0:
            wait_ms = remaining_ms  # the leader held it for less than asked: wait on
            continue
        if batches:
            position, last_epoch = batches[-1].end_offset, batches[-1].epoch
        committed = tuple(b for b in batches if b.end_offset <= hw)
        size = sum(len(b.records) for b in committed)
        if len(committed) == len(batches) and (position >= hw or size * 100 > max_bytes):
            return SimpleNamespace(
                records=encode_batches(committed),
                high_watermark=hw,
                snapshot_end_offset=-1,
                snapshot_epoch=-1,
                leader_epoch=answer.leader_epoch,
            )
        wait_ms = max(wait_ms, 500) if position >= hw else 0


def topic(name: str, partitions: int = 1, rf: int = 1) -> dict[str, Any]:
    return {
        "name": name,
        "num_partitions": partitions,
        "replication_factor": rf,
        "assignments": [],
        "configs": [],
    }


async def create_topics(conn: KafkaConnection, *topics: dict[str, Any]) -> Any:
    return await conn.request(
        ApiKey.CREATE_TOPICS, topics=list(topics), timeout=30000, validate_only=False
    )


async def register_unfenced(conn: KafkaConnection, broker_ids: range) -> dict[int, int]:
    """Register brokers and heartbeat each until unfenced; broker id -> epoch. Each broker id
    has one incarnation, so calling it again (after a restart) re-registers the same ones."""
    epochs = {}
    for broker_id in broker_ids:
        incarnation = uuid.UUID(int=broker_id + 1, version=4)
        response = await register(
            conn, broker_id, incarnation=incarnation, rack=f"/r{broker_id % 3}"
        )
        assert int(response.error_code) == 0, response
        epochs[broker_id] = int(response.broker_epoch)
    for _ in range(20):
        hwm = int((await fetch_log(conn, 0, max_bytes=1)).high_watermark)
        states = [await heartbeat(conn, b, e, hwm - 1) for b, e in epochs.items()]
        if not any(s.is_fenced for s in states):
            return epochs
    raise AssertionError("brokers stayed fenced")
