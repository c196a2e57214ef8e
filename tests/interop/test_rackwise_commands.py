"""``rackwise topics`` and ``rackwise placement`` end to end against a rackwise cluster."""

from __future__ import annotations

import json
import re

from kafka import KafkaAdminClient

from tests.interop.conftest import Cluster, eventually, rackwise


def _topics(cluster: Cluster, *args: str) -> tuple[int, str, str]:
    result = rackwise("topics", "--bootstrap-server", cluster.bootstrap, *args)
    return result.returncode, result.stdout, result.stderr


def test_topics_create_describe_alter_list_delete(cluster: Cluster) -> None:
    assert _topics(
        cluster,
        "--create",
        "--topic",
        "rw-orders",
        "--partitions",
        "3",
        "--replication-factor",
        "3",
        "--config",
        "cleanup.policy=compact",
    ) == (0, "Created topic rw-orders.\n", "")

    def described() -> list[str] | None:
        code, out, _ = _topics(cluster, "--describe", "--topic", "rw-orders")
        lines = out.splitlines()
        return lines if code == 0 and len(lines) == 4 else None

    header, *partitions = eventually(described)
    assert re.fullmatch(
        r"Topic: rw-orders\tTopicId: [A-Za-z0-9_-]{22}\tPartitionCount: 3"
        r"\tReplicationFactor: 3\tConfigs: cleanup\.policy=compact",
        header,
    ), header
    for index, line in enumerate(partitions):
        match = re.fullmatch(
            rf"\tTopic: rw-orders\tPartition: {index}\tLeader: (\d+)\tReplicas: (\d+,\d+,\d+)"
            r"\tIsr: ([\d,]+)\tElr: \tLastKnownElr: ",
            line,
        )
        assert match, line
        assert match.group(1) == match.group(2).split(",")[0]

    assert _topics(cluster, "--alter", "--topic", "rw-orders", "--partitions", "4")[0] == 0
    eventually(lambda: _count(cluster, "rw-orders") == 4)

    code, out, _ = _topics(cluster, "--list")
    assert code == 0 and "rw-orders" in out.splitlines()

    assert _topics(cluster, "--delete", "--topic", "rw-orders") == (0, "", "")
    eventually(lambda: "rw-orders" not in _topics(cluster, "--list")[1].splitlines())


def _count(cluster: Cluster, topic: str) -> int:
    code, out, _ = _topics(cluster, "--describe", "--topic", topic)
    return len(out.splitlines()) - 1 if code == 0 else -1


def test_topics_with_a_replica_assignment_and_errors(cluster: Cluster) -> None:
    assert (
        _topics(cluster, "--create", "--topic", "rw-manual", "--replica-assignment", "1:3,2:4")[0]
        == 0
    )
    lines = eventually(
        lambda: (
            (o := _topics(cluster, "--describe", "--topic", "rw-manual")[1].splitlines())
            and len(o) == 3
            and o
        )
    )
    assert [line.split("\t")[4] for line in lines[1:]] == ["Replicas: 1,3", "Replicas: 2,4"]
    code, out, err = _topics(
        cluster,
        "--create",
        "--topic",
        "rw-manual",
        "--partitions",
        "1",
        "--replication-factor",
        "1",
    )
    assert (code, out) == (1, "")
    assert err.startswith("error: ") and "rw-manual" in err and err.count("\n") == 1
    assert (
        _topics(
            cluster, "--create", "--if-not-exists", "--topic", "rw-manual", "--partitions", "1"
        )[0]
        == 0
    )
    code, _, err = _topics(cluster, "--describe", "--topic", "rw-missing")
    assert (code, err) == (1, "error: Topic 'rw-missing' does not exist as expected\n")


def test_placement_asks_the_clusters_placer(cluster: Cluster) -> None:
    result = rackwise(
        "placement",
        "--bootstrap-server",
        cluster.bootstrap,
        "--partitions",
        "4",
        "--replication-factor",
        "3",
        "--topic",
        "planned",
    )
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["version"] == 1
    assert [p["partition"] for p in document["partitions"]] == [0, 1, 2, 3]
    for entry in document["partitions"]:
        assert entry["topic"] == "planned"
        dcs = {cluster.racks[r].split("/")[1] for r in entry["replicas"]}
        assert dcs == {"dc1", "dc2", "dc3"}  # the cluster's placer is multi-level
    chosen = rackwise(
        "placement",
        "--bootstrap-server",
        cluster.bootstrap,
        "--partitions",
        "2",
        "--replication-factor",
        "2",
        "--broker-ids",
        "1,2",
        "--force-simple-placement",
    )
    assert chosen.returncode == 0, chosen.stderr
    replicas = [sorted(p["replicas"]) for p in json.loads(chosen.stdout)["partitions"]]
    assert replicas == [[1, 2], [1, 2]]
    too_many = rackwise(
        "placement",
        "--bootstrap-server",
        cluster.bootstrap,
        "--partitions",
        "1",
        "--replication-factor",
        "7",
    )
    assert too_many.returncode == 1
    assert too_many.stderr.startswith("error: ") and too_many.stderr.count("\n") == 1


def test_a_single_controller_describes_its_quorum(cluster: Cluster) -> None:
    """One controller is a quorum of one: DescribeQuorum, forwarded by a broker, names it the
    leader and only voter, caught up to the high watermark (kafka-python's admin client and
    ``rackwise metadata-quorum`` both ask)."""
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        quorum = admin.describe_metadata_quorum()
    finally:
        admin.close()
    (topic,) = quorum["topics"]
    (partition,) = topic["partitions"]
    assert topic["topic_name"] == "__cluster_metadata" and partition["error"] is None
    (controller,) = [n for n in cluster.nodes if n["role"] == "controller"]
    assert partition["leader_id"] == controller["id"] and partition["leader_epoch"] >= 0
    (voter,) = partition["current_voters"]
    assert voter["replica_id"] == controller["id"]
    assert voter["log_end_offset"] >= partition["high_watermark"] > 0
    assert [(n["node_id"], n["listeners"][0]["port"]) for n in quorum["nodes"]] == [
        (controller["id"], controller["port"])
    ]
    status = rackwise(
        "metadata-quorum", "--bootstrap-server", cluster.bootstrap, "describe", "--status"
    )
    assert status.returncode == 0, status.stderr
    assert re.search(rf"^LeaderId:\s+{controller['id']}$", status.stdout, re.M), status.stdout
    assert f'CurrentVoters:          [{{"id": {controller["id"]}' in status.stdout, status.stdout
