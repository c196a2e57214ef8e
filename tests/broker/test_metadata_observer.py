"""Brokers follow the metadata log as observers of the controller quorum, with real processes:
the leader lists a broker among DescribeQuorum's observers (and ``rackwise metadata-quorum``
shows it as ``kafka-metadata-quorum.sh`` does); a broker started after the log was cut behind
a snapshot loads the snapshot (FetchSnapshot); and a broker knowing three voters follows the
new leader once the old one is killed, and sees a topic created after."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest

from rackwise.protocol import ApiKey
from tests.broker.test_broker_processes import (
    BrokerProcess,
    broker_properties,
    call,
    eventually,
    free_port,
    topic_metadata,
)
from tests.processes import (
    ControllerProcess,
    controller_properties,
    create_topics,
    fetch_log,
    register_unfenced,
    run,
    topic,
)

BROKER_ID: Final = 1
CONTROLLER_IDS: Final = (3000, 3001, 3002)
METADATA_PARTITION: Final = [
    {"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}
]


def describe(port: int) -> Any:
    """DescribeQuorum's partition, asked of the node at ``port``."""
    answer = call(port, ApiKey.DESCRIBE_QUORUM, topics=METADATA_PARTITION)
    return answer.topics[0].partitions[0]


def rackwise(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rackwise.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


class Single:
    """One controller that snapshots often and cuts its log behind the snapshots, and broker 1."""

    def __init__(self, directory: Path) -> None:
        port = free_port()
        cdir = directory / "controller"
        cdir.mkdir()
        props = controller_properties(
            cdir,
            node_id=CONTROLLER_IDS[0],
            listeners=f"CONTROLLER://127.0.0.1:{port}",
            controller_quorum_voters=f"{CONTROLLER_IDS[0]}@127.0.0.1:{port}",
            metadata_log_max_record_bytes_between_snapshots=2000,
            metadata_log_segment_bytes=4096,
        )
        self.controller = ControllerProcess(cdir, props)
        bdir = directory / "broker"
        bdir.mkdir()
        self.broker = BrokerProcess(bdir, broker_properties(bdir, BROKER_ID, port))

    def close(self) -> None:
        self.broker.close()
        self.controller.close()


@pytest.fixture(scope="module")
def single(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Single]:
    cluster = Single(tmp_path_factory.mktemp("observer"))
    try:
        cluster.controller.start()
        cluster.broker.start()
        yield cluster
    finally:
        cluster.close()


def caught_up_observer(port: int) -> Any:
    """The broker's observer state once its log end offset is the leader's, else None."""
    part = describe(port)
    leader = next(v for v in part.current_voters if v.replica_id == part.leader_id)
    observers = {o.replica_id: o for o in part.observers}
    observer = observers.get(BROKER_ID)
    if observer is None or observer.log_end_offset != leader.log_end_offset:
        return None
    return observer


def test_the_leader_lists_the_broker_as_an_observer(single: Single) -> None:
    observer = eventually(lambda: caught_up_observer(single.controller.port), 30)
    assert observer.log_end_offset > 0
    assert observer.last_fetch_timestamp > 0 and observer.last_caught_up_timestamp > 0
    bootstrap = single.broker.address
    status = rackwise("metadata-quorum", "--bootstrap-server", bootstrap, "describe", "--status")
    assert status.returncode == 0, status.stderr
    assert 'CurrentObservers:       [{"id": 1, "directoryId": null}]' in status.stdout
    table = rackwise(
        "metadata-quorum", "--bootstrap-server", bootstrap, "describe", "--replication"
    )
    assert table.returncode == 0, table.stderr
    (row,) = [line for line in table.stdout.splitlines() if line.startswith("1 ")]
    assert re.match(r"1\s+AAAAAAAAAAAAAAAAAAAAAA\s+\d+\s+0\s+\d+\s+\d+\s+Observer", row), row


def test_a_broker_behind_the_log_start_catches_up_from_the_snapshot(single: Single) -> None:
    single.broker.stop(signal.SIGKILL)

    async def cut_the_log() -> str:
        async with await single.controller.connect() as conn:
            await register_unfenced(conn, range(10, 12))
            for i in range(200):
                created = await create_topics(conn, topic(f"cut-{i}"))
                assert int(created.topics[0].error_code) == 0, created
                if i >= 20 and (await fetch_log(conn, 0)).snapshot_end_offset > 0:
                    return f"cut-{i}"
        raise AssertionError("the log never started after a snapshot")

    last = run(cut_the_log())
    single.broker.start()
    eventually(lambda: int(topic_metadata(single.broker.port, last).error_code) == 0, 30)
    assert "loaded metadata snapshot" in single.broker.stderr()
    eventually(lambda: caught_up_observer(single.controller.port), 30)


class Quorum:
    """Three voters, and broker 1, which knows them by id (``controller.quorum.voters``)."""

    def __init__(self, directory: Path) -> None:
        self.ports = {node_id: free_port() for node_id in CONTROLLER_IDS}
        voters = ",".join(f"{i}@127.0.0.1:{p}" for i, p in self.ports.items())
        self.controllers: dict[int, ControllerProcess] = {}
        for node_id, port in self.ports.items():
            cdir = directory / f"controller-{node_id}"
            cdir.mkdir()
            props = controller_properties(
                cdir,
                node_id=node_id,
                listeners=f"CONTROLLER://127.0.0.1:{port}",
                controller_quorum_voters=voters,
            )
            self.controllers[node_id] = ControllerProcess(cdir, props)
        bdir = directory / "broker"
        bdir.mkdir()
        props = broker_properties(bdir, BROKER_ID, 0)
        del props["controller.quorum.bootstrap.servers"]
        props["controller.quorum.voters"] = voters
        self.broker = BrokerProcess(bdir, props)

    def leader(self) -> int | None:
        for controller in self.controllers.values():
            if controller.proc is None:
                continue
            part = describe(controller.port)
            if int(part.error_code) == 0:
                return int(part.leader_id)
        return None

    def close(self) -> None:
        self.broker.close()
        for controller in self.controllers.values():
            controller.close()


@pytest.fixture(scope="module")
def quorum(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Quorum]:
    cluster = Quorum(tmp_path_factory.mktemp("observer-quorum"))
    try:
        for controller in cluster.controllers.values():
            controller.start()
        cluster.broker.start()
        yield cluster
    finally:
        cluster.close()


def created_on_the_broker(port: int, name: str) -> bool:
    answer = call(port, ApiKey.CREATE_TOPICS, topics=[topic(name)], timeout=10_000)
    error = int(answer.topics[0].error_code)
    return error in (0, 36)  # TOPIC_ALREADY_EXISTS: an earlier try went through


@pytest.mark.slow(reason="three controller processes, a broker and an election, 10-15 s")
def test_a_broker_follows_the_new_leader_after_the_old_one_is_killed(quorum: Quorum) -> None:
    first = eventually(quorum.leader, 30)
    port = quorum.controllers[first].port
    eventually(lambda: caught_up_observer(port), 30)
    quorum.controllers[first].stop(signal.SIGKILL)
    second = eventually(lambda: (leader := quorum.leader()) != first and leader, 30)
    assert second != first
    eventually(lambda: created_on_the_broker(quorum.broker.port, "after-the-kill"), 60)
    eventually(lambda: int(topic_metadata(quorum.broker.port, "after-the-kill").error_code) == 0)
    observer = eventually(lambda: caught_up_observer(quorum.controllers[second].port), 30)
    assert observer.log_end_offset > 0
    assert f"following the metadata log from leader {second}" in quorum.broker.stderr()
