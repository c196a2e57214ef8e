"""``rackwise reassign`` against a running cluster (three brokers on three racks, two log
directories each), run as a person runs it: ``--generate``, ``--execute`` with throttles,
``--verify`` until completed, moves between log directories, ``--list`` and ``--cancel`` with a
broker down; the throttles read back independently (confluent-kafka's DescribeConfigs).

KIP-113's first system test is :func:`test_kip113_moves_within_and_across_brokers`: a topic of
three single-replica partitions is moved to the other directory of each broker, then to the
unused directory of the next broker, while a producer writes and a consumer reads; every
acknowledged record is read exactly once. Its second is
:func:`test_kip113_failed_log_dirs_leave_the_good_ones_alone`: one topic's replicas in the
first directory of each broker, another's in the second, and the second directories failing
(replaced by a file) on a follower, the leader, then every broker, while both topics are
written and read; the first topic never loses an in-sync replica or a record."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, ConfigResource

from rackwise.client.reassign_text import throttle_configs
from rackwise.common import TopicPartition
from rackwise.formats.log_dirs import parse_log_dirs
from tests.command_line import rackwise
from tests.interop.conftest import eventually

RACKS = ("/dc1/r1", "/dc1/r2", "/dc2/r1")


@dataclass
class Cluster:
    dir: Path
    bootstrap: str
    pids: dict[int, int]
    controller: str
    _admin: AdminClient | None = None

    def admin(self) -> AdminClient:
        if self._admin is None:
            self._admin = AdminClient({"bootstrap.servers": self.bootstrap})
        return self._admin


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    directory = tmp_path_factory.mktemp("reassign")
    up = rackwise(
        "cluster", "up", "--brokers", "3", "--racks", ",".join(RACKS), "--log-dirs", "2",
        "--placer", "rack-aware", "--dir", str(directory), "--json",
    )  # fmt: skip
    try:
        assert up.returncode == 0, up.stderr
        nodes = json.loads(up.stdout)["nodes"]
        brokers = [n for n in nodes if n["role"] == "broker"]
        yield Cluster(
            directory,
            ",".join(f"{n['host']}:{n['port']}" for n in brokers),
            {int(n["id"]): int(n["pid"]) for n in brokers},
            next(f"{n['host']}:{n['port']}" for n in nodes if n["role"] == "controller"),
        )
    finally:
        if (directory / "cluster.json").exists():
            rackwise("cluster", "down", "--dir", str(directory))


def reassign(cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    return rackwise("reassign", "--bootstrap-server", cluster.bootstrap, *args, timeout=60)


def create(cluster: Cluster, topic: str, assignment: str) -> None:
    done = rackwise(
        "topics", "--bootstrap-server", cluster.bootstrap, "--create", "--topic", topic,
        "--replica-assignment", assignment,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def replicas(cluster: Cluster, topic: str) -> dict[TopicPartition, list[int]]:
    meta = cluster.admin().list_topics(topic, timeout=10).topics[topic]
    return {TopicPartition(topic, p.id): list(p.replicas) for p in meta.partitions.values()}


def plan_json(parts: dict[TopicPartition, list[int]], dirs: dict | None = None) -> str:
    entries = []
    for tp in sorted(parts):
        entry = {"topic": tp.topic, "partition": tp.partition, "replicas": parts[tp]}
        if dirs is not None:
            entry["log_dirs"] = dirs[tp]
        entries.append(entry)
    return json.dumps({"version": 1, "partitions": entries})


def configs(cluster: Cluster, kind: str, name: str) -> dict[str, str]:
    """The keys set on a resource, read by another client."""
    (future,) = cluster.admin().describe_configs([ConfigResource(kind, name)]).values()
    entries = future.result(timeout=10).values()
    return {e.name: e.value for e in entries if not e.is_default and e.value is not None}


def where(cluster: Cluster, topic: str) -> dict[tuple[int, int], str]:
    """(partition, broker) -> the log directory holding it (not a future replica)."""
    done = rackwise(
        "log-dirs", "--describe", "--bootstrap-server", cluster.bootstrap, "--topic-list", topic
    )
    assert done.returncode == 0, done.stderr
    report = parse_log_dirs(done.stdout.splitlines()[-1])
    return {
        (r.partition, b.broker_id): d.path
        for b in report.brokers
        for d in b.log_dirs
        for r in d.replicas
        if not r.is_future
    }


def verified(cluster: Cluster, plan: Path) -> str | None:
    done = reassign(cluster, "--verify", "--reassignment-json-file", str(plan))
    assert done.returncode == 0, done.stdout + done.stderr
    return None if "in progress" in done.stdout else done.stdout


# ---- the tool's lines --------------------------------------------------------------------------


def test_generate_prints_both_sections(cluster: Cluster, tmp_path: Path) -> None:
    create(cluster, "gen", "1:2,2:3,3:1")
    topics = tmp_path / "topics.json"
    topics.write_text('{"version":1,"topics":[{"topic":"gen"}]}')
    done = reassign(
        cluster, "--generate", "--topics-to-move-json-file", str(topics), "--broker-list", "1,2,3"
    )
    assert (done.returncode, done.stderr) == (0, "")
    lines = done.stdout.splitlines()
    assert lines[0] == "Current partition replica assignment"
    assert lines[1] == (
        '{"version":1,"partitions":[{"topic":"gen","partition":0,"replicas":[1,2],'
        '"log_dirs":["any","any"]},{"topic":"gen","partition":1,"replicas":[2,3],'
        '"log_dirs":["any","any"]},{"topic":"gen","partition":2,"replicas":[3,1],'
        '"log_dirs":["any","any"]}]}'
    )
    assert lines[2:4] == ["", "Proposed partition reassignment configuration"]
    proposed = json.loads(lines[4])["partitions"]
    assert [p["partition"] for p in proposed] == [0, 1, 2]
    assert all(len(set(p["replicas"])) == 2 and set(p["replicas"]) <= {1, 2, 3} for p in proposed)
    assert len(lines) == 5

    missing = tmp_path / "missing.json"
    missing.write_text('{"topics":[{"topic":"gen"},{"topic":"quux"}]}')
    done = reassign(
        cluster, "--generate", "--topics-to-move-json-file", str(missing), "--broker-list", "1,2"
    )
    assert done.returncode == 1
    assert done.stdout == (
        "Error: org.apache.kafka.common.errors.UnknownTopicOrPartitionException: Topic quux "
        "not found.\n"
    )


def test_execute_with_a_throttle_then_verify_clears_it(cluster: Cluster, tmp_path: Path) -> None:
    create(cluster, "moves", "1:2,2:3,3:1")
    current = replicas(cluster, "moves")
    target = {tp: [r % 3 + 1 for r in rs] for tp, rs in current.items()}
    plan = tmp_path / "plan.json"
    plan.write_text(plan_json(target))
    done = reassign(cluster, "--execute", "--reassignment-json-file", str(plan),
                    "--throttle", "50000000")  # fmt: skip
    assert (done.returncode, done.stderr) == (0, "")
    rollback = (
        '{"version":1,"partitions":[{"topic":"moves","partition":0,"replicas":[1,2],'
        '"log_dirs":["any","any"]},{"topic":"moves","partition":1,"replicas":[2,3],'
        '"log_dirs":["any","any"]},{"topic":"moves","partition":2,"replicas":[3,1],'
        '"log_dirs":["any","any"]}]}'
    )
    assert done.stdout.splitlines() == [
        "Current partition replica assignment",
        "",
        rollback,
        "",
        "Save this to use as the --reassignment-json-file option during rollback",
        "Warning: You must run --verify periodically, until the reassignment completes, to "
        "ensure the throttle is removed.",
        "The inter-broker throttle limit was set to 50000000 B/s",
        "Successfully started partition reassignments for moves-0,moves-1,moves-2",
    ]
    expected = throttle_configs(current, target)
    assert configs(cluster, "topic", "moves") == {
        "leader.replication.throttled.replicas": expected.leader["moves"],
        "follower.replication.throttled.replicas": expected.follower["moves"],
    }
    assert expected.leader["moves"] == "0:1,0:2,1:2,1:3,2:1,2:3"
    for broker in (1, 2, 3):
        rates = configs(cluster, "broker", str(broker))
        assert rates["leader.replication.throttled.rate"] == "50000000"
        assert rates["follower.replication.throttled.rate"] == "50000000"

    out = eventually(lambda: verified(cluster, plan), timeout_s=30)
    assert out.splitlines() == [
        "Status of partition reassignment:",
        "Reassignment of partition moves-0 is completed.",
        "Reassignment of partition moves-1 is completed.",
        "Reassignment of partition moves-2 is completed.",
        "",
        "Clearing broker-level throttles on brokers 1,2,3",
        "Clearing topic-level throttles on topic moves",
    ]
    assert replicas(cluster, "moves") == target
    assert configs(cluster, "topic", "moves") == {}
    for broker in (1, 2, 3):
        assert "leader.replication.throttled.rate" not in configs(cluster, "broker", str(broker))


def test_execute_refusals(cluster: Cluster, tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(plan_json({TopicPartition("moves", 0): [1, 4]}))
    done = reassign(cluster, "--execute", "--reassignment-json-file", str(plan))
    assert (done.returncode, done.stdout) == (1, "Error: Unknown broker id 4\n")
    plan.write_text(plan_json({TopicPartition("moves", 9): [1, 2]}))
    done = reassign(cluster, "--execute", "--reassignment-json-file", str(plan))
    assert (done.returncode, done.stdout) == (
        1,
        "Error: org.apache.kafka.common.errors.UnknownTopicOrPartitionException: Unable to find "
        "partition: moves-9\n",
    )
    plan.write_text('{"version":1,"partitions":[]}')
    done = reassign(cluster, "--execute", "--reassignment-json-file", str(plan))
    assert (done.returncode, done.stdout) == (
        1,
        "Error: Partition reassignment list cannot be empty\n",
    )


def test_a_log_dir_move_with_its_throttle(cluster: Cluster, tmp_path: Path) -> None:
    create(cluster, "dirs", "1:2:3")
    before = where(cluster, "dirs")
    other = {
        b: next(str(d) for d in (cluster.dir / f"broker-{b}").glob("data-*") if str(d) != path)
        for (_, b), path in before.items()
    }
    tp = TopicPartition("dirs", 0)
    plan = tmp_path / "plan.json"
    plan.write_text(plan_json({tp: [1, 2, 3]}, {tp: [other[1], other[2], other[3]]}))
    done = reassign(cluster, "--execute", "--reassignment-json-file", str(plan),
                    "--replica-alter-log-dirs-throttle", "100000000")  # fmt: skip
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines()[5:] == [
        "Warning: You must run --verify periodically, until the reassignment completes, to "
        "ensure the throttle is removed.",
        "The replica-alter-dir throttle limit was set to 100000000 B/s",
        "Successfully started partition reassignment for dirs-0",
        *(
            f"Successfully started moving log directory to {other[b]} for replica dirs-0 with "
            f"broker {b} "
            for b in (1, 2, 3)
        ),
    ]
    rate = "replica.alter.log.dirs.io.max.bytes.per.second"
    assert configs(cluster, "broker", "2")[rate] == "100000000"
    out = eventually(lambda: verified(cluster, plan), timeout_s=30)
    assert out.splitlines()[2:5] == [
        f"Reassignment of replica dirs-0-{b} completed successfully." for b in (1, 2, 3)
    ]
    assert where(cluster, "dirs") == {(0, b): other[b] for b in (1, 2, 3)}
    assert rate not in configs(cluster, "broker", "2")


# ---- KIP-113's first system test ---------------------------------------------------------------


@dataclass
class Traffic:
    """A producer writing numbered records (idempotent, acks=all) and a consumer reading the
    topic, each in its own thread, until stopped."""

    bootstrap: str
    topic: str
    partitions: int = 3
    acked: list[tuple[int, bytes]] = field(default_factory=list)
    read: list[tuple[int, bytes]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    flushed: threading.Event = field(default_factory=threading.Event)
    errors: list[str] = field(default_factory=list)

    def produce(self) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "acks": "all",
                             "enable.idempotence": True, "linger.ms": 5})  # fmt: skip

        def report(error: object, message: object) -> None:
            if error is not None:
                self.errors.append(str(error))
            else:
                self.acked.append((message.partition(), message.value()))  # type: ignore[attr-defined]

        n = 0
        while not self.stop.is_set():
            producer.produce(
                self.topic,
                value=f"r{n}".encode(),
                partition=n % self.partitions,
                on_delivery=report,
            )
            n += 1
            producer.poll(0.002)
        try:
            assert producer.flush(30) == 0
        finally:
            self.flushed.set()

    def consume(self) -> None:
        consumer = Consumer(
            {"bootstrap.servers": self.bootstrap, "group.id": f"g-{self.topic}",
             "auto.offset.reset": "earliest", "enable.auto.commit": False}
        )  # fmt: skip
        consumer.subscribe([self.topic])
        try:
            while not self.flushed.is_set() or len(self.read) < len(self.acked):
                message = consumer.poll(0.2)
                if message is not None and message.error() is None:
                    self.read.append((message.partition(), message.value()))
                if self.flushed.is_set() and time.monotonic() > self.deadline:
                    break
        finally:
            consumer.close()

    deadline: float = 0.0

    def start(self) -> list[threading.Thread]:
        threads = [threading.Thread(target=self.produce), threading.Thread(target=self.consume)]
        for t in threads:
            t.start()
        return threads

    def finish(self, threads: list[threading.Thread]) -> None:
        self.deadline = time.monotonic() + 30
        self.stop.set()
        for t in threads:
            t.join(60)

    def check(self) -> None:
        assert not self.errors
        assert len(self.read) == len(set(self.read)), "a record was read twice"
        assert set(self.acked) <= set(self.read), "an acknowledged record was lost"


def test_kip113_moves_within_and_across_brokers(cluster: Cluster, tmp_path: Path) -> None:
    topic = "kip113"
    create(cluster, topic, "1,2,3")
    traffic = Traffic(cluster.bootstrap, topic)
    threads = traffic.start()
    try:
        eventually(lambda: len(traffic.acked) > 100, timeout_s=20)
        dirs = {b: sorted(str(d) for d in (cluster.dir / f"broker-{b}").glob("data-*"))
                for b in (1, 2, 3)}  # fmt: skip
        before = where(cluster, topic)
        flip = {(p, b): next(d for d in dirs[b] if d != path) for (p, b), path in before.items()}
        parts = {TopicPartition(topic, p): [b] for p, b in flip}
        plan = tmp_path / "same-broker.json"
        plan.write_text(
            plan_json(parts, {TopicPartition(topic, p): [d] for (p, _), d in flip.items()})
        )
        done = reassign(cluster, "--execute", "--reassignment-json-file", str(plan))
        assert done.returncode == 0, done.stdout
        eventually(lambda: verified(cluster, plan), timeout_s=30)
        assert where(cluster, topic) == flip

        # Each replica to the unused directory of the next broker: its broker has no replica
        # at first, so AlterReplicaLogDirs is retried until the reassignment creates it.
        used = {b: d for (_, b), d in flip.items()}
        following = {
            (p, b % 3 + 1): next(d for d in dirs[b % 3 + 1] if d != used[b % 3 + 1])
            for (p, b) in flip
        }
        parts = {TopicPartition(topic, p): [b] for p, b in following}
        plan = tmp_path / "next-broker.json"
        plan.write_text(
            plan_json(parts, {TopicPartition(topic, p): [d] for (p, _), d in following.items()})
        )
        done = reassign(cluster, "--execute", "--reassignment-json-file", str(plan))
        assert done.returncode == 0, done.stdout
        assert done.stdout.count("Successfully started moving log directory to") == 3
        eventually(lambda: verified(cluster, plan), timeout_s=30)
        assert where(cluster, topic) == following
        count = len(traffic.acked)
        eventually(lambda: len(traffic.acked) > count + 100, timeout_s=20)
    finally:
        traffic.finish(threads)
    traffic.check()


# ---- a reassignment that cannot finish: --list, --verify, --cancel -----------------------------


def test_list_verify_and_cancel_with_a_broker_paused(cluster: Cluster, tmp_path: Path) -> None:
    """Broker 3 paused (SIGSTOP) while it is still registered: a reassignment adding it is
    started and never completes until cancelled."""
    create(cluster, "stuck", "1")
    plan = tmp_path / "plan.json"
    plan.write_text(plan_json({TopicPartition("stuck", 0): [1, 3]}))
    moving = tmp_path / "moving.json"
    moving.write_text(
        plan_json({TopicPartition("stuck", 0): [1, 3]},
                  {TopicPartition("stuck", 0): ["any", str(cluster.dir / "broker-3" / "data-2")]})
    )  # fmt: skip
    os.kill(cluster.pids[3], signal.SIGSTOP)
    try:
        # AlterReplicaLogDirs to the paused broker waits for an answer: SIGTERM ends it.
        execute = subprocess.Popen(
            [sys.executable, "-m", "rackwise.cli.main", "reassign", "--bootstrap-server",
             cluster.bootstrap, "--execute", "--reassignment-json-file", str(moving),
             "--timeout", "60000"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip
        assert execute.stdout is not None
        lines = []
        while not lines or not lines[-1].startswith("Successfully started partition"):
            lines.append(execute.stdout.readline())
            assert lines[-1], "".join(lines)
        assert lines[-1] == "Successfully started partition reassignment for stuck-0\n"
        execute.send_signal(signal.SIGTERM)
        _, err = execute.communicate(timeout=20)
        assert (execute.returncode, err) == (143, "error: terminated\n")
        listed = reassign(cluster, "--list")
        assert (listed.returncode, listed.stdout) == (
            0,
            "Current partition reassignments:\nstuck-0: replicas: 1,3. adding: 3.\n",
        )
        config = tmp_path / "admin.properties"
        config.write_text("client.id=ops\nrequest.timeout.ms=20000\n")
        by_controller = rackwise("reassign", "--bootstrap-controller", cluster.controller,
                                 "--list", "--command-config", str(config))  # fmt: skip
        assert (by_controller.returncode, by_controller.stdout) == (0, listed.stdout)
        done = reassign(cluster, "--verify", "--reassignment-json-file", str(plan))
        assert (done.returncode, done.stdout) == (
            0,
            "Status of partition reassignment:\n"
            "Reassignment of partition stuck-0 is still in progress.\n\n",
        )
        done = reassign(cluster, "--execute", "--reassignment-json-file", str(plan))
        assert done.returncode == 1
        assert done.stdout == (
            "Cannot execute because there is an existing partition assignment.  Use "
            "--additional to override this and create a new partition assignment in addition "
            "to the existing one. The --additional flag can also be used to change the throttle "
            "by resubmitting the current reassignment.\n"
        )
        done = reassign(cluster, "--cancel", "--reassignment-json-file", str(plan),
                        "--preserve-throttles")  # fmt: skip
        assert (done.returncode, done.stdout) == (
            0,
            "Successfully cancelled partition reassignment for: stuck-0\n"
            "None of the specified partition moves are active.",
        )
        listed = reassign(cluster, "--list")
        assert listed.stdout == "No partition reassignments found.\n"
        assert replicas(cluster, "stuck") == {TopicPartition("stuck", 0): [1]}
    finally:
        os.kill(cluster.pids[3], signal.SIGCONT)
    eventually(lambda: 3 in cluster.admin().list_topics(timeout=10).brokers, timeout_s=30)


# ---- KIP-113's second system test (last: it fails the second directory of every broker) ------


def fail_dir(cluster: Cluster, broker: int, name: str = "data-2") -> None:
    """Replace a broker's log directory by a file, as a failed disk."""
    path = cluster.dir / f"broker-{broker}" / name
    gone = path.with_name(f"{name}-gone")
    path.rename(gone)
    path.write_text("failed disk\n")
    shutil.rmtree(gone)


def isr(cluster: Cluster, topic: str) -> list[int]:
    return sorted(cluster.admin().list_topics(topic, timeout=10).topics[topic].partitions[0].isrs)


def progressing(*traffic: Traffic) -> None:
    counts = [len(t.acked) for t in traffic]
    eventually(
        lambda: all(len(t.acked) > c + 50 for t, c in zip(traffic, counts, strict=True)),
        timeout_s=30,
    )


def test_kip113_failed_log_dirs_leave_the_good_ones_alone(cluster: Cluster, tmp_path: Path) -> None:
    parts, dirs = {}, {}
    for topic, name in (("good", "data-1"), ("doomed", "data-2")):
        create(cluster, topic, "1:2:3")
        parts[TopicPartition(topic, 0)] = [1, 2, 3]
        dirs[TopicPartition(topic, 0)] = [
            str(cluster.dir / f"broker-{b}" / name) for b in (1, 2, 3)
        ]
    plan = tmp_path / "plan.json"
    plan.write_text(plan_json(parts, dirs))
    done = reassign(cluster, "--execute", "--reassignment-json-file", str(plan))
    assert done.returncode == 0, done.stdout
    eventually(lambda: verified(cluster, plan), timeout_s=30)
    for tp, paths in dirs.items():
        assert where(cluster, tp.topic) == {
            (0, b): d for b, d in zip((1, 2, 3), paths, strict=True)
        }
    good, doomed = Traffic(cluster.bootstrap, "good", 1), Traffic(cluster.bootstrap, "doomed", 1)
    good_threads, doomed_threads = good.start(), doomed.start()
    try:
        progressing(good, doomed)
        leader = cluster.admin().list_topics("good", timeout=10).topics["good"].partitions[0].leader
        follower = next(b for b in (1, 2, 3) if b != leader)
        third = next(b for b in (1, 2, 3) if b not in (leader, follower))
        fail_dir(cluster, follower)
        eventually(lambda: isr(cluster, "doomed") == sorted([leader, third]), timeout_s=30)
        progressing(good, doomed)
        fail_dir(cluster, leader)
        eventually(lambda: isr(cluster, "doomed") == [third], timeout_s=30)
        progressing(good, doomed)
        doomed.finish(doomed_threads)
        doomed.check()
        fail_dir(cluster, third)
        progressing(good)
        assert isr(cluster, "good") == [1, 2, 3]
        assert all(os.kill(pid, 0) is None for pid in cluster.pids.values())
    finally:
        doomed.finish(doomed_threads)
        good.finish(good_threads)
    good.check()
