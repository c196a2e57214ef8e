"""``rackwise log-dirs --describe`` against a running cluster, read back as Kafka's tool
output is read."""

from __future__ import annotations

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from rackwise.formats.log_dirs import format_log_dirs, parse_log_dirs
from tests.interop.conftest import Cluster, eventually, rackwise

TOPIC = "ld-orders"


def describe(cluster: Cluster, *args: str) -> tuple[int, str, str]:
    done = rackwise("log-dirs", "--describe", "--bootstrap-server", cluster.bootstrap, *args)
    return done.returncode, done.stdout, done.stderr


def test_the_tools_output_for_a_topic_with_data(cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    (created,) = admin.create_topics([NewTopic(TOPIC, 3, 2)], operation_timeout=20).values()
    created.result(timeout=30)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(60):
        producer.produce(TOPIC, key=str(i).encode(), value=b"v" * 200)
    assert producer.flush(30) == 0
    replicas = {
        (p.id, r)
        for p in admin.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions.values()
        for r in p.replicas
    }

    def sized() -> tuple[str, object] | None:
        code, out, err = describe(cluster, "--topic-list", TOPIC)
        assert (code, err) == (0, ""), err
        report = parse_log_dirs(out)
        found = {
            (r.partition, b.broker_id): r.size_bytes
            for b in report.brokers
            for d in b.log_dirs
            for r in d.replicas
        }
        return (out, report) if set(found) == replicas and all(found.values()) else None

    out, report = eventually(sized, timeout_s=30)
    lines = out.splitlines()
    assert lines[:2] == [
        "Querying brokers for log directories information",
        "Received log directory information from brokers 1,2,3,4,5,6",
    ]
    assert len(lines) == 3
    assert lines[2] + "\n" == format_log_dirs(report) + "\n"  # Kafka's member order, exactly
    assert all(r.topic == TOPIC for b in report.brokers for d in b.log_dirs for r in d.replicas)
    assert {b.broker_id for b in report.brokers} == {1, 2, 3, 4, 5, 6}


def test_an_unknown_broker_is_kafkas_error(cluster: Cluster) -> None:
    code, out, err = describe(cluster, "--broker-list", "1,99")
    assert (code, out) == (1, "")
    assert err == (
        "ERROR: The given brokers do not exist from --broker-list: 99. "
        "Current existent brokers: 1,2,3,4,5,6\n"
    )


def test_kip113_describes_one_broker(cluster: Cluster) -> None:
    code, out, err = describe(cluster, "--broker-list", "2", "--format", "kip113")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[1] == "Received log directory information from brokers 2"
    (broker,) = parse_log_dirs(lines[2], broker_id=2).brokers
    assert [d.is_live for d in broker.log_dirs] == [True]
    assert broker.log_dirs[0].path.endswith("broker-2/data")
