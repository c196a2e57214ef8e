"""``cordoned.log.dirs`` (KIP-1066) on a real broker with two log directories: a cordoned
directory takes no new partition and no replica moved into it (AlterReplicaLogDirs answers
INVALID_REPLICA_ASSIGNMENT), keeps serving the replicas it holds, and ``rackwise log-dirs
--describe`` shows it; set and removed with ``rackwise configs`` while the broker runs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaTopicPartition

from rackwise.broker.data_plane import check_cordoned, cordoned_dirs
from rackwise.common.errors import InvalidConfigurationException
from rackwise.protocol import ApiKey
from tests.broker.test_broker_processes import call
from tests.command_line import rackwise, running_cluster
from tests.interop.conftest import eventually

INVALID_REPLICA_ASSIGNMENT = 39


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    directory = tmp_path_factory.mktemp("cordoned")
    with running_cluster(directory, "--brokers", "1", "--log-dirs", "2") as servers:
        yield servers, directory / "broker-1"


def _describe(servers: str) -> dict[str, dict[str, object]]:
    done = rackwise("log-dirs", "--describe", "--bootstrap-server", servers)
    assert done.returncode == 0, done.stderr
    [broker] = json.loads(done.stdout.splitlines()[-1])["brokers"]
    return {d["logDir"]: d for d in broker["logDirs"]}


def _configs(servers: str, *change: str) -> None:
    done = rackwise(
        "configs", "--bootstrap-server", servers, "--alter", "--entity-type", "brokers",
        "--entity-name", "1", *change,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def _create(servers: str, topic: str, partitions: int) -> None:
    done = rackwise(
        "topics", "--bootstrap-server", servers, "--create", "--topic", topic, "--partitions",
        str(partitions), "--replication-factor", "1",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def _dirs_of(data: Path, topic: str) -> set[str]:
    return {p.parent.name for p in data.glob(f"data-*/{topic}-*")}


def test_a_cordoned_directory_takes_no_new_replica_and_keeps_serving(
    broker: tuple[str, Path],
) -> None:
    servers, data = broker
    d1, d2 = (str(data / f"data-{i}") for i in (1, 2))
    _create(servers, "before", 4)
    assert _dirs_of(data, "before") == {"data-1", "data-2"}  # new replicas spread over both
    producer = KafkaProducer(bootstrap_servers=servers)
    for p in range(4):
        producer.send("before", value=b"v%d" % p, partition=p)
    producer.flush()
    assert {d["cordoned"] for d in _describe(servers).values()} == {False}
    _configs(servers, "--add-config", f"cordoned.log.dirs={d2}")
    eventually(lambda: _describe(servers)[d2]["cordoned"] is True)
    assert _describe(servers)[d1]["cordoned"] is False
    _create(servers, "after", 4)
    assert _dirs_of(data, "after") == {"data-1"}
    # A move into the cordoned directory is refused; the replicas already there are served.
    moved = call(
        int(servers.rsplit(":", 1)[1]),
        ApiKey.ALTER_REPLICA_LOG_DIRS,
        dirs=[{"path": d2, "topics": [{"name": "after", "partitions": [0]}]}],
    )
    assert [int(p.error_code) for t in moved.results for p in t.partitions] == [
        INVALID_REPLICA_ASSIGNMENT
    ]
    for p in range(4):
        producer.send("before", value=b"w%d" % p, partition=p)
    producer.flush()
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=servers, consumer_timeout_ms=10_000)
    consumer.assign([KafkaTopicPartition("before", p) for p in range(4)])
    consumer.seek_to_beginning()
    got = sorted(m.value for m in consumer)[:8]
    consumer.close()
    assert got == sorted([b"v%d" % p for p in range(4)] + [b"w%d" % p for p in range(4)])
    # Lifted: the directory takes new replicas again.
    _configs(servers, "--delete-config", "cordoned.log.dirs")
    eventually(lambda: _describe(servers)[d2]["cordoned"] is False)


def test_the_setting_names_log_dirs_or_star() -> None:
    dirs = [Path("/d1"), Path("/d2")]
    assert cordoned_dirs(["*"], dirs) == frozenset(dirs)
    assert cordoned_dirs(["/d2/", "/elsewhere"], dirs) == {Path("/d2")}
    check_cordoned(["/d1", "*"], dirs)
    with pytest.raises(InvalidConfigurationException) as refused:
        check_cordoned(["/d3"], dirs)
    assert str(refused.value) == (
        "Invalid value /d3 for configuration cordoned.log.dirs: /d3 is not one of log.dirs "
        "(/d1,/d2)"
    )
